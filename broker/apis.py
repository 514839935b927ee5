"""KafkaApis: the single dispatch point from API key to handler.

Each handler takes the decoded request body and returns the response body
(or an awaitable of it).  Handlers translate between wire shapes and the
components that own the work: :class:`~broker.replica_manager.ReplicaManager`
(produce, fetch, offsets), the log manager (topics), and the group
coordinator service.  Encoding, ordering and transmission belong to
:mod:`broker.server`.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from broker.internal_topics import is_internal_topic
from broker.log.errors import InvalidTopicError, LogError
from broker.log.manager import validate_topic_name
from protocol.api import (
    APIS,
    ApiKey,
    RequestHeaderData,
    decode_request_body,
    decode_request_header,
    encode_response_parts,
)
from protocol.error_codes import ErrorCode
from protocol.errors import ProtocolError
from protocol.primitives import Obj

if TYPE_CHECKING:
    from broker.core import BrokerCore
    from broker.server import KafkaConnection

log = logging.getLogger("kbroker.apis")

E = ErrorCode
_CLIENT_SOFTWARE = re.compile(r"^[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?$")

#: APIs whose codecs exist but which this broker does not advertise or serve.
NOT_SERVED = {ApiKey.CONSUMER_GROUP_HEARTBEAT, ApiKey.CONSUMER_GROUP_DESCRIBE}
#: KAFKA-18659: librdkafka disables compression unless Produce advertises min version 0.
ADVERTISED_MIN = {ApiKey.PRODUCE: 0}


def valid_topic_name(name: Any) -> bool:
    """Kafka's topic-name rule, as the log manager enforces it."""
    try:
        validate_topic_name(name)
    except InvalidTopicError:
        return False
    return True


class RequestContext:
    __slots__ = ("conn", "header", "received")

    def __init__(self, conn: KafkaConnection, header: RequestHeaderData) -> None:
        self.conn = conn
        self.header = header
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


class KafkaApis:
    def __init__(self, core: BrokerCore) -> None:
        self.core = core
        self.config = core.config
        self.metrics = core.metrics
        self.replica = core.replica_manager
        self.groups = core.group_service
        self.faults = core.faults
        self.handlers: dict[int, Handler] = {
            ApiKey.API_VERSIONS: self.api_versions,
            ApiKey.METADATA: self.metadata,
            ApiKey.PRODUCE: self.produce,
            ApiKey.FETCH: self.fetch,
            ApiKey.LIST_OFFSETS: self.list_offsets,
            ApiKey.CREATE_TOPICS: self.create_topics,
            ApiKey.DELETE_TOPICS: self.delete_topics,
            ApiKey.CREATE_PARTITIONS: self.create_partitions,
            ApiKey.DELETE_RECORDS: self.delete_records,
            ApiKey.DESCRIBE_CONFIGS: self.describe_configs,
            ApiKey.DESCRIBE_CLUSTER: self.describe_cluster,
            ApiKey.INIT_PRODUCER_ID: self.init_producer_id,
            ApiKey.FIND_COORDINATOR: self.find_coordinator,
            ApiKey.SASL_HANDSHAKE: self.sasl_handshake,
            ApiKey.SASL_AUTHENTICATE: self.sasl_authenticate,
            ApiKey.JOIN_GROUP: self.groups.handle,
            ApiKey.SYNC_GROUP: self.groups.handle,
            ApiKey.HEARTBEAT: self.groups.handle,
            ApiKey.LEAVE_GROUP: self.groups.handle,
            ApiKey.OFFSET_COMMIT: self.groups.handle,
            ApiKey.OFFSET_FETCH: self.groups.handle,
            ApiKey.DESCRIBE_GROUPS: self.groups.handle,
            ApiKey.LIST_GROUPS: self.groups.handle,
            ApiKey.DELETE_GROUPS: self.groups.handle,
            ApiKey.OFFSET_DELETE: self.groups.handle,
        }
        self._api_versions_entries = [
            {"api_key": int(key), "min_version": ADVERTISED_MIN.get(key, api.min_version),
             "max_version": api.max_version}
            for key, api in sorted(APIS.items())
            if key not in NOT_SERVED and key in self.handlers
        ]

    # -- dispatch ----------------------------------------------------------------------

    def handle(self, conn: KafkaConnection, frame: bytes) -> Any:
        """Decode one request frame and run its handler; returns response parts or an awaitable."""
        header = decode_request_header(frame)
        ctx = RequestContext(conn, header)
        key, version = header.api_key, header.api_version
        api = APIS.get(key)
        if key == ApiKey.API_VERSIONS and (api is None or version > api.max_version):
            # KIP-511: answer an ApiVersions we cannot parse with a v0 body naming our range.
            body = Obj(error_code=E.UNSUPPORTED_VERSION, api_keys=[
                e for e in self._api_versions_entries if e["api_key"] == ApiKey.API_VERSIONS])
            return self._respond(ctx, body, version_override=0)
        handler = self.handlers.get(key)
        if api is None or handler is None:
            self.metrics.request_error(f"Unknown{key}", E.UNSUPPORTED_VERSION)
            raise ProtocolError(f"unsupported api key {key}")
        if not api.min_version <= version <= api.max_version:
            # The body cannot be parsed; answer in the nearest version we can encode.
            nearest = min(max(version, api.min_version), api.max_version)
            body = error_response(key, nearest, api.request.default(nearest), E.UNSUPPORTED_VERSION)
            return self._respond(ctx, body, version_override=nearest)
        request = decode_request_body(header, frame)
        fault = self.faults.intercept(key) if self.faults.active else None
        if fault is not None:
            return self._run_fault(ctx, request, handler, fault)
        result = handler(ctx, request)
        if isinstance(result, Awaitable):
            return self._finish_async(ctx, result)
        return self._respond(ctx, result)

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
        if isinstance(result, Awaitable):
            result = await result
        return self._respond(ctx, result)

    def _respond(self, ctx: RequestContext, body: Obj | None, version_override: int | None = None) -> Any:
        header = ctx.header
        api = APIS[header.api_key]
        self.metrics.observe_request(api.name, header.api_version, time.perf_counter() - ctx.received, body)
        if body is None:
            return None
        version = header.api_version if version_override is None else version_override
        return encode_response_parts(header.api_key, version, header.correlation_id, body)

    # -- cluster and metadata --------------------------------------------------------------------

    def _broker_entry(self) -> dict[str, Any]:
        host, port = self.core.advertised
        return {"node_id": self.config.node_id, "host": host, "port": port, "rack": self.config.rack}

    def api_versions(self, ctx: RequestContext, req: Obj) -> Obj:
        if ctx.version >= 3 and not (
            _CLIENT_SOFTWARE.match(req.client_software_name or "") and _CLIENT_SOFTWARE.match(req.client_software_version or "")
        ):
            return Obj(error_code=E.INVALID_REQUEST, api_keys=self._api_versions_entries)
        return Obj(error_code=0, api_keys=self._api_versions_entries, throttle_time_ms=0)

    def metadata(self, ctx: RequestContext, req: Obj) -> Obj:
        logs = self.core.logs
        version = ctx.version
        requested = req.topics
        if requested is None or (version == 0 and not requested):
            names = logs.topic_names()
            auto_create = False
        else:
            names = []
            for t in requested:
                name = t.get("name")
                if name is None and t.get("topic_id") is not None:
                    name = logs.topic_name_for_id(t["topic_id"]) or ""
                names.append(name)
            auto_create = self.config.auto_create_topics_enable and (version < 4 or req.allow_auto_topic_creation)
        topics = [self._topic_metadata(name, auto_create) for name in names]
        return Obj(
            throttle_time_ms=0,
            brokers=[self._broker_entry()],
            cluster_id=self.core.cluster_id,
            controller_id=self.config.node_id,
            topics=topics,
            cluster_authorized_operations=-2147483648,
            error_code=0,
        )

    def _topic_metadata(self, name: str, auto_create: bool) -> dict[str, Any]:
        logs = self.core.logs
        if not valid_topic_name(name):
            return {"error_code": E.INVALID_TOPIC_EXCEPTION, "name": name, "partitions": [], "is_internal": False}
        info = logs.topic(name)
        if info is None and auto_create and not is_internal_topic(name):
            try:
                self.core.create_topic(name, self.config.num_partitions, {})
            except LogError as exc:
                return {"error_code": exc.error_code, "name": name, "partitions": []}
            info = logs.topic(name)
        if info is None:
            return {"error_code": E.UNKNOWN_TOPIC_OR_PARTITION, "name": name, "partitions": [], "is_internal": False}
        node = self.config.node_id
        partitions = [
            {"error_code": 0, "partition_index": p, "leader_id": node, "leader_epoch": 0,
             "replica_nodes": [node], "isr_nodes": [node], "offline_replicas": []}
            for p in range(info.partitions)
        ]
        return {"error_code": 0, "name": name, "topic_id": info.topic_id, "is_internal": is_internal_topic(name),
                "partitions": partitions, "topic_authorized_operations": -2147483648}

    def describe_cluster(self, ctx: RequestContext, req: Obj) -> Obj:
        host, port = self.core.advertised
        return Obj(throttle_time_ms=0, error_code=0, error_message=None, endpoint_type=1,
                   cluster_id=self.core.cluster_id, controller_id=self.config.node_id,
                   brokers=[{"broker_id": self.config.node_id, "host": host, "port": port,
                             "rack": self.config.rack, "is_fenced": False}],
                   cluster_authorized_operations=-2147483648)

    def find_coordinator(self, ctx: RequestContext, req: Obj) -> Obj:
        host, port = self.core.advertised
        node = self.config.node_id

        def entry(key: str) -> dict[str, Any]:
            if req.key_type != 0:
                return {"key": key, "node_id": -1, "host": "", "port": -1,
                        "error_code": E.COORDINATOR_NOT_AVAILABLE, "error_message": "transactions are not supported"}
            return {"key": key, "node_id": node, "host": host, "port": port, "error_code": 0, "error_message": None}

        if ctx.version >= 4:
            return Obj(throttle_time_ms=0, coordinators=[entry(k) for k in req.coordinator_keys])
        one = entry(req.key)
        return Obj(throttle_time_ms=0, error_code=one["error_code"], error_message=one["error_message"],
                   node_id=one["node_id"], host=one["host"], port=one["port"])

    def sasl_handshake(self, ctx: RequestContext, req: Obj) -> Obj:
        return Obj(error_code=E.UNSUPPORTED_SASL_MECHANISM, mechanisms=[])

    def sasl_authenticate(self, ctx: RequestContext, req: Obj) -> Obj:
        return Obj(error_code=E.ILLEGAL_SASL_STATE, error_message="SASL is not enabled on this listener",
                   auth_bytes=b"", session_lifetime_ms=0)

    # -- data plane ----------------------------------------------------------------------------

    def produce(self, ctx: RequestContext, req: Obj) -> Obj | Awaitable[Obj | None] | None:
        return self.replica.handle_produce(ctx, req)

    def fetch(self, ctx: RequestContext, req: Obj) -> Obj | Awaitable[Obj]:
        return self.replica.handle_fetch(ctx, req)

    def list_offsets(self, ctx: RequestContext, req: Obj) -> Obj:
        return self.replica.handle_list_offsets(ctx, req)

    def delete_records(self, ctx: RequestContext, req: Obj) -> Obj:
        return self.replica.handle_delete_records(ctx, req)

    def init_producer_id(self, ctx: RequestContext, req: Obj) -> Obj:
        if req.transactional_id is not None:
            return Obj(throttle_time_ms=0, error_code=E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                       producer_id=-1, producer_epoch=-1)
        # As Kafka's TransactionCoordinator: a non-transactional producer always gets a fresh
        # producer id at epoch 0, whatever id/epoch it names (bumping a named id would let any
        # client fence another producer's id).
        return Obj(throttle_time_ms=0, error_code=0, producer_id=self.core.allocate_producer_id(), producer_epoch=0)

    # -- topic admin --------------------------------------------------------------------------

    def create_topics(self, ctx: RequestContext, req: Obj) -> Obj:
        results = []
        for t in req.topics:
            results.append(self._create_one(t, req.validate_only))
        return Obj(throttle_time_ms=0, topics=results)

    def _create_one(self, t: Obj, validate_only: bool) -> dict[str, Any]:
        name = t.name
        base = {"name": name, "num_partitions": -1, "replication_factor": -1, "configs": None}

        def fail(code: int, message: str) -> dict[str, Any]:
            return {**base, "error_code": code, "error_message": message}

        if not valid_topic_name(name):
            return fail(E.INVALID_TOPIC_EXCEPTION, f"Topic name {name!r} is illegal")
        if self.core.logs.topic(name) is not None:
            return fail(E.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.")
        if is_internal_topic(name):
            # only the broker creates its internal topics (an admin-made one could never be
            # written to nor deleted: produce and delete refuse internal topics); Kafka's answer
            # to creating its own internal metadata topic
            return fail(E.INVALID_REQUEST, f"Creation of internal topic {name} is prohibited.")
        if t.assignments:
            partitions = len(t.assignments)
            if t.num_partitions != -1 or t.replication_factor != -1:
                return fail(E.INVALID_REQUEST, "Both assignments and numPartitions/replicationFactor were set")
            for a in t.assignments:
                if any(b != self.config.node_id for b in a.broker_ids) or len(a.broker_ids) != 1:
                    return fail(E.INVALID_REPLICA_ASSIGNMENT, "Replica assignment names unknown brokers")
            if sorted(a.partition_index for a in t.assignments) != list(range(partitions)):
                return fail(E.INVALID_REPLICA_ASSIGNMENT, "Partitions must be numbered 0..n-1")
        else:
            partitions = self.config.num_partitions if t.num_partitions == -1 else t.num_partitions
        rf = self.config.default_replication_factor if t.replication_factor == -1 else t.replication_factor
        if partitions <= 0:
            return fail(E.INVALID_PARTITIONS, "Number of partitions must be larger than 0.")
        if rf <= 0:
            return fail(E.INVALID_REPLICATION_FACTOR, "Replication factor must be larger than 0.")
        if rf > 1:
            return fail(E.INVALID_REPLICATION_FACTOR,
                        f"Unable to replicate the partition {rf} time(s): The target replication factor of {rf} "
                        "cannot be reached because only 1 broker(s) are registered.")
        configs = {c.name: c.value for c in t.configs}
        try:
            described = self.core.logs.validate_configs(configs)
            topic_id = None if validate_only else self.core.create_topic(name, partitions, configs)
        except LogError as exc:
            return fail(exc.error_code, exc.detail or str(exc))
        result = {**base, "error_code": 0, "error_message": None, "num_partitions": partitions,
                  "replication_factor": 1, "configs": self._config_entries_for_create(described)}
        if topic_id is not None:
            result["topic_id"] = topic_id
        return result

    def _config_entries_for_create(self, configs: dict[str, str]) -> list[dict[str, Any]]:
        from broker.log.config import TOPIC_CONFIG_DEFAULTS

        out = []
        for name, default in sorted(TOPIC_CONFIG_DEFAULTS.items()):
            value = configs.get(name, default)
            out.append({"name": name, "value": value, "read_only": False,
                        "config_source": 1 if name in configs else 5, "is_sensitive": False})
        return out

    def delete_topics(self, ctx: RequestContext, req: Obj) -> Obj:
        results = []
        if ctx.version >= 6:
            wanted = [(t.name, t.topic_id) for t in req.topics]
        else:
            wanted = [(name, None) for name in req.topic_names]
        for name, topic_id in wanted:
            logs = self.core.logs
            if name is None and topic_id is not None:
                name = logs.topic_name_for_id(topic_id)
                if name is None:
                    results.append({"name": None, "topic_id": topic_id, "error_code": E.UNKNOWN_TOPIC_ID,
                                    "error_message": "unknown topic id"})
                    continue
            info = logs.topic(name) if name else None
            entry: dict[str, Any] = {"name": name, "error_code": 0, "error_message": None}
            if info is None:
                entry["error_code"] = E.UNKNOWN_TOPIC_OR_PARTITION
                entry["error_message"] = "This server does not host this topic-partition."
            elif not self.config.delete_topic_enable:
                entry["error_code"] = E.TOPIC_DELETION_DISABLED
            elif is_internal_topic(name):
                entry["error_code"] = E.INVALID_TOPIC_EXCEPTION
                entry["error_message"] = "Internal topics cannot be deleted"
            else:
                entry["topic_id"] = info.topic_id
                self.core.delete_topic(name)
            results.append(entry)
        return Obj(throttle_time_ms=0, responses=results)

    def create_partitions(self, ctx: RequestContext, req: Obj) -> Obj:
        results = []
        for t in req.topics:
            info = self.core.logs.topic(t.name)
            entry: dict[str, Any] = {"name": t.name, "error_code": 0, "error_message": None}
            if info is None:
                entry.update(error_code=E.UNKNOWN_TOPIC_OR_PARTITION, error_message="unknown topic")
            elif is_internal_topic(t.name):
                entry.update(error_code=E.INVALID_TOPIC_EXCEPTION, error_message="internal topic")
            elif t.count <= info.partitions:
                entry.update(error_code=E.INVALID_PARTITIONS,
                             error_message=f"Topic currently has {info.partitions} partitions, which is higher "
                                           f"than or equal to the requested {t.count}.")
            elif t.assignments is not None and len(t.assignments) != t.count - info.partitions:
                entry.update(error_code=E.INVALID_REPLICA_ASSIGNMENT, error_message="assignment count mismatch")
            elif not req.validate_only:
                try:
                    self.core.add_partitions(t.name, t.count)
                except LogError as exc:
                    entry.update(error_code=exc.error_code, error_message=str(exc))
            results.append(entry)
        return Obj(throttle_time_ms=0, results=results)

    def describe_configs(self, ctx: RequestContext, req: Obj) -> Obj:
        from broker.describe_configs import describe_resource

        results = [describe_resource(self.core, r, req.include_synonyms, req.include_documentation)
                   for r in req.resources]
        return Obj(throttle_time_ms=0, results=results)


def error_response(api_key: int, version: int, request: Obj, code: int) -> Obj:
    """A response of the request's API that carries ``code`` everywhere an error can go."""
    api = APIS[api_key]
    body = api.response.default(version)
    _fill_errors(body, code)
    if api_key == ApiKey.PRODUCE:
        body["responses"] = [
            {"name": t.name, "partition_responses": [
                {"index": p.index, "error_code": code, "base_offset": -1} for p in t.partition_data]}
            for t in request.topic_data
        ]
    elif api_key == ApiKey.FETCH:
        body["responses"] = [
            {"topic": t.get("topic", ""), "topic_id": t.get("topic_id"), "partitions": [
                {"partition_index": p.partition, "error_code": code, "high_watermark": -1, "records": b""}
                for p in t.partitions]}
            for t in request.topics
        ]
        body["error_code"] = 0
    elif api_key == ApiKey.FIND_COORDINATOR and version >= 4:
        body["coordinators"] = [{"key": k, "node_id": -1, "host": "", "port": -1, "error_code": code}
                                for k in request.coordinator_keys]
    elif api_key == ApiKey.OFFSET_COMMIT or api_key == ApiKey.LIST_OFFSETS:
        body["topics"] = [{"name": t.name, "partitions": [
            {"partition_index": p.partition_index, "error_code": code} for p in t.partitions]} for t in request.topics]
    return body


def _fill_errors(node: Any, code: int) -> None:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "error_code":
                node[key] = code
            else:
                _fill_errors(value, code)
    elif isinstance(node, list):
        for item in node:
            _fill_errors(item, code)
