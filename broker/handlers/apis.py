"""KafkaApis: the single dispatch point from API key to handler.

Each handler takes the decoded request body and returns the response body
(or an awaitable of it).  Handlers translate between wire shapes and the
components that own the work: :class:`~broker.replication.replica_manager.ReplicaManager`
(produce, fetch, offsets), the log manager (topics), the group
coordinator service, and the security admin (users, ACLs).  Encoding, ordering
and transmission belong to :mod:`broker.network.server`.

With ``authorizer.enabled`` every connection carries an authorization session
and each request passes :class:`~broker.handlers.authorization.RequestAuthorizer`
before its handler; answers that name brokers (Metadata, FindCoordinator,
DescribeCluster) give the address of the listener the client came in on.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from broker.admin.topics import TopicAdmin, TopicError
from broker.cluster.internal_topics import (
    OFFSETS_TOPIC,
    TRANSACTION_STATE_TOPIC,
    internal_topic_spec,
    is_internal_topic,
)
from broker.cluster.kv import KVError
from broker.config.describe import ConfigView, describe_resource
from broker.handlers.authorization import Deny, RequestAuthorizer
from broker.log.errors import InvalidTopicError
from broker.log.manager import validate_topic_name
from broker.network.server import is_awaitable
from broker.security.acl import (
    AclBinding,
    AclBindingFilter,
    ResourceType,
    describe_acls_resources,
)
from protocol.api import (
    APIS,
    ApiKey,
    RequestHeaderData,
    ServerCodec,
    decode_request_body,
    decode_request_header,
    decode_response,
    encode_request,
    encode_response_frame,
    encode_response_parts,
    peek_header,
    response_parts,
    server_codec,
)
from protocol.error_codes import ErrorCode
from protocol.error_response import error_response
from protocol.errors import ProtocolError
from protocol.primitives import Obj

if TYPE_CHECKING:
    from broker.admin.configs import ConfigAdmin
    from broker.admin.security import SecurityAdmin
    from broker.cluster.metadata import MetadataService
    from broker.cluster.producer_ids import ProducerIdManager
    from broker.config.dynamic import DynamicBrokerConfig
    from broker.config.settings import BrokerConfig
    from broker.coordinator.group.service import GroupService
    from broker.coordinator.txn.service import TransactionService
    from broker.log.manager import LogManager
    from broker.network.server import KafkaConnection
    from broker.observability.metrics import BrokerMetrics
    from broker.replication.replica_manager import ReplicaManager
    from broker.testing.faults import FaultInjector

log = logging.getLogger("kbroker.apis")

E = ErrorCode
_CLIENT_SOFTWARE = re.compile(r"^[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?$")

#: APIs whose codecs exist but which this broker does not advertise or serve.
NOT_SERVED: set[ApiKey] = set()
#: KAFKA-18659: librdkafka disables compression unless Produce advertises min version 0.
ADVERTISED_MIN = {ApiKey.PRODUCE: 0}
_API_VERSIONS = int(ApiKey.API_VERSIONS)
#: How long Metadata waits for auto-created topics, and FindCoordinator for the offsets topic, to get leaders.
AUTO_CREATE_WAIT_S = 5.0
COORDINATOR_WAIT_S = 5.0
#: ``*_authorized_operations`` when they were not asked for (or no authorizer runs)
NO_OPERATIONS = -2147483648


def valid_topic_name(name: Any) -> bool:
    """Kafka's topic-name rule, as the log manager enforces it."""
    try:
        validate_topic_name(name)
    except InvalidTopicError:
        return False
    return True


class RequestContext:
    __slots__ = ("codec", "conn", "header", "received")

    def __init__(self, conn: KafkaConnection, header: RequestHeaderData, codec: ServerCodec | None = None) -> None:
        self.conn = conn
        self.header = header
        #: the request's API and version, resolved (None only for a request answered without parsing it)
        self.codec = codec
        self.received = time.perf_counter()

    @property
    def version(self) -> int:
        return self.header.api_version

    @property
    def client_id(self) -> str:
        return self.header.client_id or ""

    @property
    def client_host(self) -> str:
        return self.conn.client_host


Handler = Callable[[RequestContext, Obj], "Obj | Awaitable[Obj] | None"]


class _InProcessPeer:
    """The connection-shaped peer of :meth:`KafkaApis.handle_in_process`: the broker itself."""

    client_id = "kbroker-in-process"
    client_host = "in-process"
    session = None


_IN_PROCESS: Any = _InProcessPeer()


class KafkaApis:
    """Decodes requests, dispatches them, and translates between wire shapes and the broker's parts.

    It is given exactly the collaborators it uses: the replica manager (produce, fetch, offsets,
    markers), the group and transaction services, topic administration, the metadata image
    (Metadata, FindCoordinator, DescribeCluster), producer ids, the log manager (config validation
    and description, log directories), the dynamic broker configuration and the config admin (the
    config APIs), the security admin (users and ACLs) and the request authorizer.
    """

    def __init__(self, *, config: BrokerConfig, metrics: BrokerMetrics, faults: FaultInjector,
                 replica: ReplicaManager, groups: GroupService, txns: TransactionService, topics: TopicAdmin,
                 metadata: MetadataService, producer_ids: ProducerIdManager, logs: LogManager,
                 dynamic: DynamicBrokerConfig, configs: ConfigAdmin, security: SecurityAdmin,
                 authz: RequestAuthorizer) -> None:
        self.config = config
        self.metrics = metrics
        self.faults = faults
        self.replica = replica
        self.groups = groups
        self.txns = txns
        self.topics = topics
        self.metadata = metadata
        self.image = metadata.image
        self.producer_ids = producer_ids
        self.logs = logs
        self.dynamic = dynamic
        self.configs = configs
        self.security = security
        self.authz = authz
        self.handlers: dict[int, Handler] = {
            ApiKey.API_VERSIONS: self.api_versions,
            ApiKey.METADATA: self.metadata_request,
            ApiKey.PRODUCE: replica.handle_produce,
            ApiKey.FETCH: replica.handle_fetch,
            ApiKey.LIST_OFFSETS: replica.handle_list_offsets,
            ApiKey.OFFSET_FOR_LEADER_EPOCH: replica.handle_offset_for_leader_epoch,
            ApiKey.DELETE_RECORDS: replica.handle_delete_records,
            ApiKey.CREATE_TOPICS: self.create_topics,
            ApiKey.DELETE_TOPICS: self.delete_topics,
            ApiKey.CREATE_PARTITIONS: self.create_partitions,
            ApiKey.DESCRIBE_CONFIGS: self.describe_configs,
            ApiKey.ALTER_CONFIGS: self.alter_configs,
            ApiKey.INCREMENTAL_ALTER_CONFIGS: self.incremental_alter_configs,
            ApiKey.DESCRIBE_LOG_DIRS: self.describe_log_dirs,
            ApiKey.DESCRIBE_CLUSTER: self.describe_cluster,
            ApiKey.ELECT_LEADERS: self.elect_leaders,
            ApiKey.INIT_PRODUCER_ID: self.init_producer_id,
            ApiKey.FIND_COORDINATOR: self.find_coordinator,
            ApiKey.SASL_HANDSHAKE: self.sasl_handshake,
            ApiKey.SASL_AUTHENTICATE: self.sasl_authenticate,
            ApiKey.CREATE_ACLS: self.create_acls,
            ApiKey.DESCRIBE_ACLS: self.describe_acls,
            ApiKey.DELETE_ACLS: self.delete_acls,
            ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: self.describe_user_scram_credentials,
            ApiKey.ALTER_USER_SCRAM_CREDENTIALS: self.alter_user_scram_credentials,
            ApiKey.JOIN_GROUP: groups.handle,
            ApiKey.SYNC_GROUP: groups.handle,
            ApiKey.HEARTBEAT: groups.handle,
            ApiKey.LEAVE_GROUP: groups.handle,
            ApiKey.OFFSET_COMMIT: groups.handle,
            ApiKey.OFFSET_FETCH: groups.handle,
            ApiKey.DESCRIBE_GROUPS: groups.handle,
            ApiKey.LIST_GROUPS: groups.handle,
            ApiKey.DELETE_GROUPS: groups.handle,
            ApiKey.OFFSET_DELETE: groups.handle,
            ApiKey.CONSUMER_GROUP_HEARTBEAT: self.consumer_group_heartbeat,
            ApiKey.CONSUMER_GROUP_DESCRIBE: groups.handle,
            ApiKey.TXN_OFFSET_COMMIT: groups.handle,
            ApiKey.ADD_PARTITIONS_TO_TXN: txns.handle,
            ApiKey.ADD_OFFSETS_TO_TXN: txns.handle,
            ApiKey.END_TXN: txns.handle,
            ApiKey.DESCRIBE_TRANSACTIONS: txns.handle,
            ApiKey.LIST_TRANSACTIONS: txns.handle,
            ApiKey.WRITE_TXN_MARKERS: self.write_txn_markers,
            ApiKey.DESCRIBE_PRODUCERS: replica.handle_describe_producers,
        }
        #: (API key, version) -> its codec and handler, for every version of every API served
        self._routes: dict[tuple[int, int], tuple[ServerCodec, Handler]] = {}
        for key, handler in self.handlers.items():
            api = APIS[key]
            for version in range(api.min_version, api.max_version + 1):
                codec = server_codec(key, version)
                assert codec is not None
                self._routes[(key, version)] = (codec, handler)
        self._api_versions_entries = [
            {"api_key": int(key), "min_version": ADVERTISED_MIN.get(key, api.min_version),
             "max_version": api.max_version}
            for key, api in sorted(APIS.items())
            if key not in NOT_SERVED and key in self.handlers
        ]

    # -- dispatch ----------------------------------------------------------------------

    def handle(self, conn: KafkaConnection, frame: bytes) -> Any:
        """Decode one request frame and run its handler; returns response parts or an awaitable."""
        key, version, correlation_id = peek_header(frame)
        route = self._routes.get((key, version))
        if route is None:
            return self._unroutable(conn, frame, key, version, correlation_id)
        codec, handler = route
        header = codec.header(frame, correlation_id)
        ctx = RequestContext(conn, header, codec)
        request = codec.decode(frame, header.body_offset)
        session = conn.session
        if session is not None:
            verdict = self.authz.check(session, key, version, request)
            if verdict is not None:
                if isinstance(verdict, Deny):
                    return self._respond(ctx, verdict.body)
                request = verdict.request
                handler = _merged(handler, verdict.merge)
        if self.faults.active:
            fault = self.faults.intercept(key)
            if fault is not None:
                return self._run_fault(ctx, request, handler, fault)
        result = handler(ctx, request)
        if is_awaitable(result):
            return self._finish_async(ctx, result)
        return self._respond(ctx, result)

    def _unroutable(self, conn: KafkaConnection, frame: bytes, key: int, version: int, correlation_id: int) -> Any:
        """A request of an API key we do not serve, or of a version we cannot parse."""
        api = APIS.get(key)
        if key == _API_VERSIONS and (api is None or version > api.max_version):
            # KIP-511: answer an ApiVersions we cannot parse with a v0 body naming our range.  Nothing
            # after the correlation id is read: a client may encode a newer version's header either
            # way (with or without tagged fields), and the answer needs neither it nor the body.
            ctx = RequestContext(conn, RequestHeaderData(key, version, correlation_id, None, len(frame)))
            body = Obj(error_code=E.UNSUPPORTED_VERSION, api_keys=[
                e for e in self._api_versions_entries if e["api_key"] == ApiKey.API_VERSIONS])
            return self._respond(ctx, body, version_override=0)
        header = decode_request_header(frame)
        if api is None or key not in self.handlers:
            self.metrics.request_error(f"Unknown{key}", E.UNSUPPORTED_VERSION)
            raise ProtocolError(f"unsupported api key {key}")
        # The body cannot be parsed; answer in the nearest version we can encode.
        nearest = min(max(version, api.min_version), api.max_version)
        body = error_response(key, nearest, api.request.default(nearest), E.UNSUPPORTED_VERSION)
        return self._respond(RequestContext(conn, header), body, version_override=nearest)

    async def handle_in_process(self, api_key: int, version: int, body: dict[str, Any]) -> Obj:
        """A request this broker makes of itself (its transaction coordinator's markers for its own
        partitions, its partitions' checks with its own coordinator): encoded and decoded as on the
        wire and handled at once — no connection, no login, no authorization (it is the broker's own
        request).  Returns the response body as a client would read it."""
        frame = memoryview(encode_request(api_key, version, 0, _IN_PROCESS.client_id, body))[4:]
        header = decode_request_header(frame)
        result = self.handlers[api_key](RequestContext(_IN_PROCESS, header), decode_request_body(header, frame))
        if is_awaitable(result):
            result = await result
        response = b"".join(bytes(part) for part in encode_response_parts(api_key, version, 0, result))
        return decode_response(api_key, version, memoryview(response)[4:])[1]

    async def _finish_async(self, ctx: RequestContext, pending: Awaitable[Obj | None]) -> Any:
        return self._respond(ctx, await pending)

    async def _run_fault(self, ctx: RequestContext, request: Obj, handler: Handler, fault: Any) -> Any:
        if fault.latency_ms:
            import asyncio

            await asyncio.sleep(fault.latency_ms / 1000)
        if fault.drop_connection:
            ctx.conn.fail("fault injection: drop connection")
            return None
        if fault.error_code is not None:
            return self._respond(ctx, error_response(ctx.header.api_key, ctx.version, request, fault.error_code))
        result = handler(ctx, request)
        if is_awaitable(result):
            result = await result
        return self._respond(ctx, result)

    def _respond(self, ctx: RequestContext, body: Obj | None, version_override: int | None = None) -> Any:
        header = ctx.header
        codec = ctx.codec
        name = codec.name if codec is not None else APIS[header.api_key].name
        if body is None:
            self.metrics.observe_request(name, header.api_version, time.perf_counter() - ctx.received)
            return None
        if codec is not None and version_override is None:
            frame = codec.encode_response(header.correlation_id, body)
        else:
            version = header.api_version if version_override is None else version_override
            frame = encode_response_frame(header.api_key, version, header.correlation_id, body)
        self.metrics.observe_request(name, header.api_version, time.perf_counter() - ctx.received, frame.errors)
        return response_parts(frame)

    # -- cluster and metadata --------------------------------------------------------------------

    def _endpoint(self, node: int, listener: str) -> tuple[str, int, str | None] | None:
        """A broker's address on ``listener`` (the one the client came in on)."""
        reg = self.image.brokers.get(node)
        if reg is None:
            return None
        ep = reg.endpoint(listener) or reg.endpoint()
        return None if ep is None else (ep.host, ep.port, reg.rack)

    def _brokers(self, listener: str) -> list[dict[str, Any]]:
        out = []
        for node in sorted(self.image.brokers):
            ep = self._endpoint(node, listener)
            if ep is not None:
                out.append({"node_id": node, "host": ep[0], "port": ep[1], "rack": ep[2]})
        return out

    def api_versions(self, ctx: RequestContext, req: Obj) -> Obj:
        if ctx.version >= 3 and not (
            _CLIENT_SOFTWARE.match(req.client_software_name or "") and _CLIENT_SOFTWARE.match(req.client_software_version or "")
        ):
            return Obj(error_code=E.INVALID_REQUEST, api_keys=self._api_versions_entries)
        return Obj(error_code=0, api_keys=self._api_versions_entries, throttle_time_ms=0)

    def metadata_request(self, ctx: RequestContext, req: Obj) -> Obj | Awaitable[Obj]:
        version = ctx.version
        requested = req.topics
        image = self.image
        session = ctx.conn.session
        denied: set[str] = set()
        #: v12+: the topics asked for by id (name -> id), and the ids that name no topic
        by_id: dict[str, Any] = {}
        unknown_ids: list[Any] = []
        if requested is None or (version == 0 and not requested):
            names = sorted(image.topics)
            if session is not None:  # listing all: leave out what the principal may not describe
                names = [n for n in names if self.authz.visible_topic(session, n)]
            auto_create = False
        else:
            names = []
            for t in requested:
                name = t.get("name")
                if name is None and t.get("topic_id") is not None:
                    name = image.topic_name(t["topic_id"])
                    if name is None:
                        unknown_ids.append(t["topic_id"])
                        continue
                    by_id[name] = t["topic_id"]
                names.append(name)
            if session is not None:
                denied = {n for n in dict.fromkeys(names) if valid_topic_name(n)
                          and not self.authz.named_topic(session, n)}
            auto_create = self.config.auto_create_topics_enable and (version < 4 or req.allow_auto_topic_creation)
        missing = [n for n in dict.fromkeys(names) if auto_create and n not in denied and image.topic(n) is None
                   and valid_topic_name(n) and not is_internal_topic(n)]
        if session is not None and missing:
            refused = {n for n in missing if not self.authz.may_create_topic(session, n)}
            denied |= refused
            missing = [n for n in missing if n not in refused]
        errors = dict.fromkeys(denied, int(E.TOPIC_AUTHORIZATION_FAILED))
        # asked for by id: an unknown id is said so, and a topic the principal may not describe keeps
        # its name (Kafka answers the id it was asked for, with a null name)
        first = [{"error_code": E.UNKNOWN_TOPIC_ID, "name": None, "topic_id": topic_id, "partitions": [],
                  "is_internal": False} for topic_id in unknown_ids]
        for name in [n for n in dict.fromkeys(names) if n in by_id and n in denied]:
            first.append({"error_code": E.TOPIC_AUTHORIZATION_FAILED, "name": None, "topic_id": by_id[name],
                          "partitions": [], "is_internal": False})
            names = [n for n in names if n != name]
        if not missing:
            return self._metadata_body(ctx, req, names, errors, first)
        return self._metadata_after_create(ctx, req, names, missing, errors)

    async def _metadata_after_create(self, ctx: RequestContext, req: Obj, names: list[str], missing: list[str],
                                     errors: dict[str, int]) -> Obj:
        for name in missing:
            try:
                record = self.topics.plan(name, self.config.num_partitions, self.config.default_replication_factor,
                                          None, {})
                await self.topics.create(record, AUTO_CREATE_WAIT_S)
            except TopicError as exc:
                if exc.code != E.TOPIC_ALREADY_EXISTS:
                    errors[name] = exc.code
        return self._metadata_body(ctx, req, names, errors)

    def _metadata_body(self, ctx: RequestContext, req: Obj, names: list[str], errors: dict[str, int],
                       first: list[dict[str, Any]] | None = None) -> Obj:
        """The answer: ``first`` (entries already made), then each of ``names``."""
        session = ctx.conn.session
        cluster_ops = NO_OPERATIONS
        if session is not None and req.get("include_cluster_authorized_operations"):
            cluster_ops = self.authz.authorized_operations(session, ResourceType.CLUSTER, "kafka-cluster")
        topic_ops = session is not None and bool(req.get("include_topic_authorized_operations"))
        topics = list(first or ())
        for name in names:
            entry = self._topic_metadata(name, errors.get(name))
            if topic_ops and not entry["error_code"] and session is not None:
                entry["topic_authorized_operations"] = self.authz.authorized_operations(
                    session, ResourceType.TOPIC, name)
            topics.append(entry)
        return Obj(
            throttle_time_ms=0,
            brokers=self._brokers(ctx.conn.listener.name),
            cluster_id=self.image.cluster_id or "",
            controller_id=self.image.controller_id,
            topics=topics,
            cluster_authorized_operations=cluster_ops,
            error_code=0,
        )

    def _topic_metadata(self, name: str, error: int | None) -> dict[str, Any]:
        if error == E.TOPIC_AUTHORIZATION_FAILED:  # nothing about a topic it may not see, not even whether it exists
            return {"error_code": error, "name": name, "partitions": [], "is_internal": False}
        if not valid_topic_name(name):
            return {"error_code": E.INVALID_TOPIC_EXCEPTION, "name": name, "partitions": [], "is_internal": False}
        t = self.image.topic(name)
        if t is None:
            return {"error_code": error or E.UNKNOWN_TOPIC_OR_PARTITION, "name": name, "partitions": [],
                    "is_internal": False}
        alive = self.image.is_alive
        partitions = []
        for p, replicas in enumerate(t.record.assignment):
            part = t.partitions.get(p)
            if part is None:
                partitions.append({"error_code": E.LEADER_NOT_AVAILABLE, "partition_index": p, "leader_id": -1,
                                   "leader_epoch": -1, "replica_nodes": list(replicas), "isr_nodes": [],
                                   "offline_replicas": [r for r in replicas if not alive(r)]})
                continue
            leader = part.leader if part.leader >= 0 and alive(part.leader) else -1
            partitions.append({
                "error_code": 0 if leader >= 0 else E.LEADER_NOT_AVAILABLE, "partition_index": p,
                "leader_id": leader, "leader_epoch": part.leader_epoch, "replica_nodes": list(replicas),
                "isr_nodes": list(part.isr), "offline_replicas": [r for r in replicas if not alive(r)]})
        return {"error_code": 0, "name": name, "topic_id": t.topic_id, "is_internal": is_internal_topic(name),
                "partitions": partitions, "topic_authorized_operations": NO_OPERATIONS}

    def describe_cluster(self, ctx: RequestContext, req: Obj) -> Obj:
        brokers = [{"broker_id": b["node_id"], "host": b["host"], "port": b["port"], "rack": b["rack"],
                    "is_fenced": False} for b in self._brokers(ctx.conn.listener.name)]
        session = ctx.conn.session
        cluster_ops = NO_OPERATIONS
        if session is not None and req.get("include_cluster_authorized_operations"):
            cluster_ops = self.authz.authorized_operations(session, ResourceType.CLUSTER, "kafka-cluster")
        return Obj(throttle_time_ms=0, error_code=0, error_message=None, endpoint_type=1,
                   cluster_id=self.image.cluster_id or "", controller_id=self.image.controller_id,
                   brokers=brokers, cluster_authorized_operations=cluster_ops)

    def find_coordinator(self, ctx: RequestContext, req: Obj) -> Awaitable[Obj]:
        return self._find_coordinator(ctx, req)

    async def _find_coordinator(self, ctx: RequestContext, req: Obj) -> Obj:
        keys = list(req.coordinator_keys) if ctx.version >= 4 else [req.key]
        entries = []
        for key in keys:
            entries.append(await self._coordinator_entry(req.key_type, key, ctx.conn.listener.name))
        if ctx.version >= 4:
            return Obj(throttle_time_ms=0, coordinators=entries)
        one = entries[0]
        return Obj(throttle_time_ms=0, error_code=one["error_code"], error_message=one["error_message"],
                   node_id=one["node_id"], host=one["host"], port=one["port"])

    async def _coordinator_entry(self, key_type: int, key: str, listener: str) -> dict[str, Any]:
        def fail(code: int, message: str) -> dict[str, Any]:
            return {"key": key, "node_id": -1, "host": "", "port": -1, "error_code": code, "error_message": message}

        if key_type == 0:
            topic, partition = OFFSETS_TOPIC, self.groups.partition_for
        elif key_type == 1:
            topic, partition = TRANSACTION_STATE_TOPIC, self.txns.partition_for
            if not key:
                return fail(E.INVALID_REQUEST, "empty transactional id")
        else:
            return fail(E.INVALID_REQUEST, f"unsupported coordinator key type {key_type}")
        spec = internal_topic_spec(topic, self.config)
        code = await self.topics.ensure_internal_topic(spec, COORDINATOR_WAIT_S)
        if code != E.NONE:
            return fail(code, f"{topic} needs {spec.replication_factor} live brokers")
        index = partition(key)
        part = self.image.partition(topic, index)
        ep = self._endpoint(part.leader, listener) if part is not None and part.leader >= 0 else None
        if part is None or ep is None:
            return fail(E.COORDINATOR_NOT_AVAILABLE, f"{topic}-{index} has no leader")
        return {"key": key, "node_id": part.leader, "host": ep[0], "port": ep[1], "error_code": 0,
                "error_message": None}

    def elect_leaders(self, ctx: RequestContext, req: Obj) -> Awaitable[Obj]:
        return self._elect_leaders(ctx, req)

    async def _elect_leaders(self, ctx: RequestContext, req: Obj) -> Obj:
        from broker.cluster.controller import elect_preferred, elect_unclean

        unclean = ctx.version >= 1 and req.election_type == 1
        wanted: list[tuple[str, int]] = []
        if req.topic_partitions is None:
            wanted = [(p.topic, p.partition) for p in self.image.partitions()]
        else:
            wanted = [(t.topic, p) for t in req.topic_partitions for p in t.partitions]
        results: dict[str, list[dict[str, Any]]] = {}
        changes = []
        for topic, p in wanted:
            part = self.image.partition(topic, p)
            entry = {"partition_id": p, "error_code": 0, "error_message": None}
            results.setdefault(topic, []).append(entry)
            if part is None:
                entry.update(error_code=E.UNKNOWN_TOPIC_OR_PARTITION, error_message="unknown partition")
                continue
            change = elect_unclean(self.image, part) if unclean else elect_preferred(self.image, part)
            if change is None:
                if unclean or part.leader == part.replicas[0]:
                    entry.update(error_code=E.ELECTION_NOT_NEEDED, error_message="leader is already elected")
                else:
                    entry.update(error_code=E.PREFERRED_LEADER_NOT_AVAILABLE,
                                 error_message="the preferred replica is not alive or not in sync")
                continue
            changes.append((entry, change))
        if changes:
            written = await self.metadata.elect([c for _, c in changes])
            for entry, change in changes:
                if (change.topic, change.partition) not in written:
                    entry.update(error_code=E.ELIGIBLE_LEADERS_NOT_AVAILABLE if unclean else
                                 E.PREFERRED_LEADER_NOT_AVAILABLE, error_message="the partition changed meanwhile")
        return Obj(throttle_time_ms=0, error_code=0, replica_election_results=[
            {"topic": t, "partition_result": parts} for t, parts in results.items()])

    # -- SASL (the state lives on the connection) ------------------------------------------------

    def sasl_handshake(self, ctx: RequestContext, req: Obj) -> Obj | Awaitable[Obj]:
        conn = ctx.conn
        if conn.sasl is None:  # not a SASL listener (Kafka's answer)
            return Obj(error_code=E.ILLEGAL_SASL_STATE, mechanisms=[])
        version, mechanism = ctx.version, req.mechanism
        return conn.sasl_step(lambda sasl: Obj(sasl.handshake(version, mechanism)))

    def sasl_authenticate(self, ctx: RequestContext, req: Obj) -> Obj | Awaitable[Obj]:
        conn = ctx.conn
        if conn.sasl is None:
            return Obj(error_code=E.ILLEGAL_SASL_STATE, error_message="SASL is not enabled on this listener",
                       auth_bytes=b"", session_lifetime_ms=0)
        version, token = ctx.version, req.auth_bytes
        return conn.sasl_step(lambda sasl: Obj(sasl.authenticate(version, token)))

    # -- users (KIP-554) and ACLs -------------------------------------------------------------------

    def describe_user_scram_credentials(self, ctx: RequestContext, req: Obj) -> Obj:
        return Obj(throttle_time_ms=0, error_code=0, error_message=None,
                   results=self.security.describe_user_scram_credentials(req.users))

    def alter_user_scram_credentials(self, ctx: RequestContext, req: Obj) -> Awaitable[Obj]:
        return self._alter_user_scram_credentials(req)

    async def _alter_user_scram_credentials(self, req: Obj) -> Obj:
        results = await self.security.alter_user_scram_credentials(req.deletions, req.upsertions)
        return Obj(throttle_time_ms=0, results=results)

    def _security_disabled(self) -> str | None:
        """Kafka answers the ACL APIs with SECURITY_DISABLED when no authorizer is configured."""
        return None if self.config.authorizer_enabled else "No Authorizer is configured (authorizer.enabled=false)."

    def create_acls(self, ctx: RequestContext, req: Obj) -> Obj | Awaitable[Obj]:
        disabled = self._security_disabled()
        if disabled is not None:
            return Obj(throttle_time_ms=0, results=[{"error_code": E.SECURITY_DISABLED, "error_message": disabled}
                                                    for _ in req.creations])
        return self._create_acls(req)

    async def _create_acls(self, req: Obj) -> Obj:
        bindings = [AclBinding.from_creation(c) for c in req.creations]
        results = await self.security.create_acls(bindings)
        return Obj(throttle_time_ms=0, results=[{"error_code": int(code), "error_message": message}
                                                for code, message in results])

    def describe_acls(self, ctx: RequestContext, req: Obj) -> Obj:
        disabled = self._security_disabled()
        if disabled is not None:
            return Obj(throttle_time_ms=0, error_code=E.SECURITY_DISABLED, error_message=disabled, resources=[])
        acl_filter = AclBindingFilter.from_request(req)
        invalid = acl_filter.validation_error()
        if invalid is not None:
            return Obj(throttle_time_ms=0, error_code=E.INVALID_REQUEST, error_message=invalid, resources=[])
        return Obj(throttle_time_ms=0, error_code=0, error_message=None,
                   resources=describe_acls_resources(self.security.describe_acls(acl_filter)))

    def delete_acls(self, ctx: RequestContext, req: Obj) -> Obj | Awaitable[Obj]:
        disabled = self._security_disabled()
        if disabled is not None:
            return Obj(throttle_time_ms=0, filter_results=[
                {"error_code": E.SECURITY_DISABLED, "error_message": disabled, "matching_acls": []}
                for _ in req.filters])
        return self._delete_acls(req)

    async def _delete_acls(self, req: Obj) -> Obj:
        results = await self.security.delete_acls([AclBindingFilter.from_request(f) for f in req.filters])
        return Obj(throttle_time_ms=0, filter_results=[
            {"error_code": int(code), "error_message": message, "matching_acls": [b.deleted_entry() for b in matched]}
            for code, message, matched in results])

    def consumer_group_heartbeat(self, ctx: RequestContext, req: Obj) -> Any:
        """The group coordinator resolves the member's regex over what its principal may DESCRIBE."""
        return self.groups.handle(ctx, req, topic_view=self.authz.describable_topics(ctx.conn.session))

    def init_producer_id(self, ctx: RequestContext, req: Obj) -> Obj | Awaitable[Obj]:
        if req.transactional_id is not None:
            return self.txns.handle(ctx, req)
        # As Kafka's TransactionCoordinator: a non-transactional producer always gets a fresh producer id
        # at epoch 0, whatever id/epoch it names (bumping a named id would let any client fence another's).
        pid = self.producer_ids.try_next()
        if pid is not None:
            return Obj(throttle_time_ms=0, error_code=0, producer_id=pid, producer_epoch=0)
        return self._init_producer_id_later()

    async def _init_producer_id_later(self) -> Obj:
        try:
            pid = await self.producer_ids.next_id()
        except KVError:
            return Obj(throttle_time_ms=0, error_code=E.COORDINATOR_NOT_AVAILABLE, producer_id=-1, producer_epoch=-1)
        return Obj(throttle_time_ms=0, error_code=0, producer_id=pid, producer_epoch=0)

    def write_txn_markers(self, ctx: RequestContext, req: Obj) -> Awaitable[Obj]:
        return self._write_txn_markers(req)

    async def _write_txn_markers(self, req: Obj) -> Obj:
        """WriteTxnMarkers (from a transaction coordinator): a COMMIT/ABORT marker in each named partition
        this broker leads, answered once replicated; on an offsets partition the marker goes through
        that partition's group coordinator shard, which applies or drops the transaction's offsets."""
        timeout = self.config.transaction_marker_request_timeout_ms
        writes: list[tuple[dict[str, Any], Awaitable[Any]]] = []
        markers = []
        for m in req.markers:
            topics = []
            for t in m.topics:
                parts = []
                for index in t.partition_indexes:
                    entry: dict[str, Any] = {"partition_index": index, "error_code": 0}
                    parts.append(entry)
                    if t.name == OFFSETS_TOPIC:
                        pending: Awaitable[Any] = self.groups.complete_transaction(
                            index, m.producer_id, m.producer_epoch, m.transaction_result, m.coordinator_epoch)
                    else:
                        pending = self.replica.write_marker(t.name, index, m.producer_id, m.producer_epoch,
                                                            m.transaction_result, m.coordinator_epoch, timeout)
                    writes.append((entry, pending))
                topics.append({"name": t.name, "partitions": parts})
            markers.append({"producer_id": m.producer_id, "topics": topics})
        for entry, pending in writes:
            result = await pending
            entry["error_code"] = result[0] if isinstance(result, tuple) else result
        return Obj(markers=markers)

    # -- topic admin --------------------------------------------------------------------------

    def create_topics(self, ctx: RequestContext, req: Obj) -> Awaitable[Obj]:
        return self._create_topics(ctx, req)

    async def _create_topics(self, ctx: RequestContext, req: Obj) -> Obj:
        results = []
        timeout_s = max(0, req.timeout_ms) / 1000
        for t in req.topics:
            results.append(await self._create_one(t, req.validate_only, timeout_s))
        return Obj(throttle_time_ms=0, topics=results)

    async def _create_one(self, t: Obj, validate_only: bool, timeout_s: float) -> dict[str, Any]:
        name = t.name
        base = {"name": name, "num_partitions": -1, "replication_factor": -1, "configs": None}
        if is_internal_topic(name):
            # only the broker creates its internal topics (an admin-made one could never be written to
            # nor deleted); Kafka's answer to creating its own internal metadata topic
            return {**base, "error_code": E.INVALID_REQUEST,
                    "error_message": f"Creation of internal topic {name} is prohibited."}
        if t.assignments and (t.num_partitions != -1 or t.replication_factor != -1):
            return {**base, "error_code": E.INVALID_REQUEST,
                    "error_message": "Both assignments and numPartitions/replicationFactor were set"}
        assignment = None
        if t.assignments:
            ordered = sorted(t.assignments, key=lambda a: a.partition_index)
            if [a.partition_index for a in ordered] != list(range(len(ordered))):
                return {**base, "error_code": E.INVALID_REPLICA_ASSIGNMENT,
                        "error_message": "Partitions must be numbered 0..n-1"}
            assignment = [list(a.broker_ids) for a in ordered]
        partitions = self.config.num_partitions if t.num_partitions == -1 else t.num_partitions
        rf = self.config.default_replication_factor if t.replication_factor == -1 else t.replication_factor
        try:
            record = self.topics.plan(name, partitions, rf, assignment, {c.name: c.value for c in t.configs})
            if not validate_only:
                await self.topics.create(record, timeout_s)
        except TopicError as exc:
            return {**base, "error_code": exc.code, "error_message": exc.message}
        result = {**base, "error_code": 0, "error_message": None, "num_partitions": record.partitions,
                  "replication_factor": len(record.assignment[0]),
                  "configs": self._config_entries_for_create(record.configs)}
        if not validate_only:
            result["topic_id"] = record.topic_id
        return result

    def _config_entries_for_create(self, configs: dict[str, str]) -> list[dict[str, Any]]:
        out = []
        for name, (value, is_default) in self.logs.effective_configs(configs).items():
            out.append({"name": name, "value": value, "read_only": False,
                        "config_source": 5 if is_default else 1, "is_sensitive": False})
        return out

    def delete_topics(self, ctx: RequestContext, req: Obj) -> Awaitable[Obj]:
        return self._delete_topics(ctx, req)

    async def _delete_topics(self, ctx: RequestContext, req: Obj) -> Obj:
        results = []
        if ctx.version >= 6:
            wanted = [(t.name, t.topic_id) for t in req.topics]
        else:
            wanted = [(name, None) for name in req.topic_names]
        for name, topic_id in wanted:
            if name is None and topic_id is not None:
                name = self.image.topic_name(topic_id)
                if name is None:
                    results.append({"name": None, "topic_id": topic_id, "error_code": E.UNKNOWN_TOPIC_ID,
                                    "error_message": "unknown topic id"})
                    continue
            entry: dict[str, Any] = {"name": name, "error_code": 0, "error_message": None}
            t = self.image.topic(name) if name else None
            if t is not None and not self.config.delete_topic_enable:
                entry["error_code"] = E.TOPIC_DELETION_DISABLED
                results.append(entry)
                continue
            try:
                if t is not None:
                    entry["topic_id"] = t.topic_id
                await self.topics.delete(name or "")
            except TopicError as exc:
                entry.update(error_code=exc.code, error_message=exc.message)
            results.append(entry)
        return Obj(throttle_time_ms=0, responses=results)

    def create_partitions(self, ctx: RequestContext, req: Obj) -> Awaitable[Obj]:
        return self._create_partitions(ctx, req)

    async def _create_partitions(self, ctx: RequestContext, req: Obj) -> Obj:
        results = []
        for t in req.topics:
            entry: dict[str, Any] = {"name": t.name, "error_code": 0, "error_message": None}
            try:
                assignment = None if t.assignments is None else [list(a.broker_ids) for a in t.assignments]
                record = self.topics.plan_partitions(t.name, t.count, assignment)
                if not req.validate_only:
                    await self.topics.add_partitions(record, max(0, req.timeout_ms) / 1000)
            except TopicError as exc:
                entry.update(error_code=exc.code, error_message=exc.message)
            results.append(entry)
        return Obj(throttle_time_ms=0, results=results)

    def describe_configs(self, ctx: RequestContext, req: Obj) -> Obj:
        view = ConfigView(self.config, self.dynamic, self.logs, self.image, ctx.conn.listener.name)
        results = [describe_resource(view, r, req.include_synonyms, req.include_documentation)
                   for r in req.resources]
        return Obj(throttle_time_ms=0, results=results)

    def alter_configs(self, ctx: RequestContext, req: Obj) -> Awaitable[Obj]:
        return self._alter_configs(req, incremental=False)

    def incremental_alter_configs(self, ctx: RequestContext, req: Obj) -> Awaitable[Obj]:
        return self._alter_configs(req, incremental=True)

    async def _alter_configs(self, req: Obj, *, incremental: bool) -> Obj:
        responses = await self.configs.alter(list(req.resources), req.validate_only, incremental=incremental)
        return Obj(throttle_time_ms=0, responses=responses)

    def describe_log_dirs(self, ctx: RequestContext, req: Obj) -> Obj:
        """DescribeLogDirs: the one data directory, its partitions' sizes, and (v4) its disk space."""
        logs = self.logs
        wanted = None if req.topics is None else {(t.topic, p) for t in req.topics for p in t.partitions}
        topics: dict[str, list[dict[str, Any]]] = {}
        if not logs.offline:
            for (topic, partition), plog in sorted(logs.hosted().items()):
                if wanted is not None and (topic, partition) not in wanted:
                    continue
                topics.setdefault(topic, []).append({
                    "partition_index": partition, "partition_size": plog.size_bytes,
                    "offset_lag": max(0, plog.high_watermark - plog.log_end_offset), "is_future_key": False})
        try:
            usage = shutil.disk_usage(logs.data_dir)
            total, usable = usage.total, usage.free
        except OSError:
            total = usable = -1
        result = {"error_code": E.KAFKA_STORAGE_ERROR if logs.offline else 0,
                  "log_dir": os.path.abspath(logs.data_dir),
                  "topics": [{"name": name, "partitions": parts} for name, parts in topics.items()],
                  "total_bytes": total, "usable_bytes": usable}
        return Obj(throttle_time_ms=0, error_code=0, results=[result])


def _merged(handler: Handler, merge: Callable[[Any], Any]) -> Handler:
    """``handler`` with its response (now or later) passed through ``merge`` (authorization)."""

    def run(ctx: RequestContext, req: Obj) -> Any:
        result = handler(ctx, req)
        if isinstance(result, Awaitable):
            return _merge_later(result, merge)
        return merge(result)

    return run


async def _merge_later(pending: Awaitable[Any], merge: Callable[[Any], Any]) -> Any:
    return merge(await pending)
