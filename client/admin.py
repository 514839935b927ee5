"""The asyncio Admin client: topics, partitions, groups, offsets with lag, cluster, configs, ACLs,
users' SCRAM credentials (KIP-554: the password is salted and iterated here, only the salted
password travels), partition reassignments (KIP-455) with their replication throttles, and leader
elections."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Container, Iterable, Mapping, Sequence
from typing import Any

from client.assignors import decode_assignment
from client.config import AdminConfig, build_config
from client.coordinator import TRANSACTION_KEY, find_coordinator
from client.errors import IllegalStateError, KafkaConnectionError, KafkaError, UnsupportedVersionError
from client.net import NetworkClient
from client.offsets import LATEST, fetch_committed, list_offsets
from client.types import (
    Acl,
    AclFilter,
    BrokerNode,
    ClusterDescription,
    ConfigEntry,
    GroupDescription,
    GroupListing,
    MemberDescription,
    NewTopic,
    PartitionOffsetInfo,
    PartitionReassignment,
    ScramCredentialInfo,
    TopicPartition,
    TransactionDescription,
    TransactionListing,
)
from protocol.api import ApiKey
from protocol.error_codes import ErrorCode
from protocol.primitives import Obj
from protocol.security_types import (
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
    ScramMechanism,
    salted_password,
)
from protocol.timer_service import WheelTimer

RESOURCE_TOPIC = 2
RESOURCE_BROKER = 4
#: resource kinds of the config APIs, by name
RESOURCE_TYPES = {"topic": RESOURCE_TOPIC, "broker": RESOURCE_BROKER, "broker-logger": 8, "group": 32}
#: Kafka's ConfigSource ids, by name
CONFIG_SOURCES = {0: "UNKNOWN", 1: "DYNAMIC_TOPIC_CONFIG", 2: "DYNAMIC_BROKER_CONFIG",
                  3: "DYNAMIC_DEFAULT_BROKER_CONFIG", 4: "STATIC_BROKER_CONFIG", 5: "DEFAULT_CONFIG",
                  6: "DYNAMIC_BROKER_LOGGER_CONFIG", 7: "CLIENT_METRICS_CONFIG", 8: "GROUP_CONFIG"}
#: IncrementalAlterConfigs operations, by name
CONFIG_OPS = {"set": 0, "delete": 1, "append": 2, "subtract": 3}
#: ElectLeaders election types, by name
ELECTION_TYPES = {"preferred": 0, "unclean": 1}
#: the dynamic broker configs of the replication throttle (bytes/s), as Kafka names them
THROTTLE_RATES = ("leader.replication.throttled.rate", "follower.replication.throttled.rate")
#: the topic configs naming the throttled replicas (``*`` or ``partition:broker,...``)
THROTTLED_REPLICAS = ("leader.replication.throttled.replicas", "follower.replication.throttled.replicas")
#: a config change: (resource kind, resource name) -> [(operation, config, value)]
ConfigChanges = Mapping[tuple[str, str], Iterable[tuple[str, str, str | None]]]


class Admin:
    """``Admin(bootstrap_servers=..., **config)``; use ``async with``."""

    def __init__(self, **config: Any) -> None:
        self.config: AdminConfig = build_config(AdminConfig, config)
        self._net: NetworkClient | None = None
        self._timers: WheelTimer | None = None

    async def __aenter__(self) -> Admin:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def start(self) -> None:
        self._timers = WheelTimer()
        self._net = NetworkClient(self.config, self._timers)
        self._net.set_topics(None)
        await self._net.start()

    async def close(self) -> None:
        if self._net is not None:
            await self._net.close()
            self._net = None
        if self._timers is not None:
            self._timers.close()

    @property
    def net(self) -> NetworkClient:
        if self._net is None:
            raise IllegalStateError("admin client is not started")
        return self._net

    async def _controller(self, avoid: Container[int] = ()) -> int:
        md = await self.net.refresh_metadata()
        if md.controller_id >= 0 and md.controller_id in md.brokers and md.controller_id not in avoid:
            return md.controller_id
        node = self.net.least_loaded_node()
        if node is None:
            raise KafkaError(ErrorCode.BROKER_NOT_AVAILABLE, "no broker")
        return node

    async def _to_controller(self, api_key: int, body: Mapping[str, Any], **kw: Any) -> Obj:
        """Send to the controller.  When it cannot be reached — a broker killed a moment ago is still
        listed until its session ends — send to another broker (each takes these requests), as Kafka's
        admin client retries on another node, until ``request_timeout_ms`` has passed."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.config.request_timeout_ms / 1000
        unreachable: set[int] = set()
        while True:
            node = await self._controller(avoid=unreachable)
            try:
                return await self.net.send(node, api_key, body, **kw)
            except KafkaConnectionError:
                unreachable.add(node)
                if loop.time() >= deadline:
                    raise
                await asyncio.sleep(self.config.retry_backoff_ms / 1000)

    # -- topics ----------------------------------------------------------------------------------

    async def create_topics(self, topics: Mapping[str, int] | Iterable[NewTopic | str], *,
                            timeout_ms: int = 30000, validate_only: bool = False,
                            ignore_existing: bool = False) -> None:
        """Create topics (``{name: partitions}`` or :class:`NewTopic` s); raises on the first failure."""
        items: list[NewTopic]
        if isinstance(topics, Mapping):
            items = [NewTopic(n, p) for n, p in topics.items()]
        else:
            items = [NewTopic(t) if isinstance(t, str) else t for t in topics]
        body = {"topics": [{"name": t.name, "num_partitions": t.num_partitions,
                            "replication_factor": t.replication_factor, "assignments": [],
                            "configs": [{"name": k, "value": v} for k, v in t.configs.items()]} for t in items],
                "timeout_ms": timeout_ms, "validate_only": validate_only}
        resp = await self._to_controller(ApiKey.CREATE_TOPICS, body,
                                   timeout_ms=timeout_ms + self.config.request_timeout_ms)
        for t in resp.topics:
            if t.error_code == ErrorCode.TOPIC_ALREADY_EXISTS and ignore_existing:
                continue
            if t.error_code:
                raise KafkaError(t.error_code, f"create topic {t.name!r}: {t.error_message or ''}")
        await self.net.refresh_metadata()

    async def delete_topics(self, topics: Iterable[str], *, timeout_ms: int = 30000) -> None:
        names = list(topics)

        def build(version: int) -> dict[str, Any]:
            if version >= 6:
                return {"topics": [{"name": n} for n in names], "timeout_ms": timeout_ms}
            return {"topic_names": names, "timeout_ms": timeout_ms}

        resp = await self._to_controller(ApiKey.DELETE_TOPICS, {}, build=build,
                                   timeout_ms=timeout_ms + self.config.request_timeout_ms)
        for r in resp.responses:
            if r.error_code:
                raise KafkaError(r.error_code, f"delete topic {r.name!r}")
        await self.net.refresh_metadata()

    async def create_partitions(self, new_totals: Mapping[str, int], *, timeout_ms: int = 30000,
                                validate_only: bool = False) -> None:
        """Grow each topic to the given total partition count."""
        body = {"topics": [{"name": t, "count": n, "assignments": None} for t, n in new_totals.items()],
                "timeout_ms": timeout_ms, "validate_only": validate_only}
        resp = await self._to_controller(ApiKey.CREATE_PARTITIONS, body,
                                   timeout_ms=timeout_ms + self.config.request_timeout_ms)
        for r in resp.results:
            if r.error_code:
                raise KafkaError(r.error_code, f"create partitions {r.name!r}: {r.error_message or ''}")
        await self.net.refresh_metadata()

    async def list_topics(self, include_internal: bool = False) -> dict[str, int]:
        md = await self.net.refresh_metadata()
        return {n: len(t.partitions) for n, t in md.topics.items() if include_internal or not t.is_internal}

    # -- cluster ---------------------------------------------------------------------------------

    async def describe_cluster(self) -> ClusterDescription:
        node = self.net.least_loaded_node()
        conn = await self.net.connection(node) if node is not None else None
        if conn is not None and conn.supports(ApiKey.DESCRIBE_CLUSTER):
            resp = await conn.request(ApiKey.DESCRIBE_CLUSTER, {"include_cluster_authorized_operations": False})
            if resp.error_code:
                raise KafkaError(resp.error_code, "DescribeCluster")
            brokers = [BrokerNode(b.broker_id, b.host, b.port, b.rack) for b in resp.brokers]
            return ClusterDescription(resp.cluster_id, resp.controller_id, brokers)
        md = await self.net.refresh_metadata()
        return ClusterDescription(md.cluster_id, md.controller_id,
                                  [BrokerNode(b.node_id, b.host, b.port, b.rack) for b in md.brokers.values()])

    async def describe_configs(self, topics: Iterable[str] = (), brokers: Iterable[int] = (),
                               keys: Iterable[str] | None = None) -> dict[tuple[str, str], dict[str, str | None]]:
        """``{("topic"|"broker", name): {config: value}}``."""
        wanted = list(keys) if keys is not None else None
        resources = [{"resource_type": RESOURCE_TOPIC, "resource_name": t, "configuration_keys": wanted}
                     for t in topics]
        resources += [{"resource_type": RESOURCE_BROKER, "resource_name": str(b), "configuration_keys": wanted}
                      for b in brokers]
        _, resp = await self.net.send_any(ApiKey.DESCRIBE_CONFIGS, {"resources": resources})
        out: dict[tuple[str, str], dict[str, str | None]] = {}
        for r in resp.results:
            if r.error_code:
                raise KafkaError(r.error_code, f"describe configs {r.resource_name!r}")
            kind = "topic" if r.resource_type == RESOURCE_TOPIC else "broker"
            out[(kind, r.resource_name)] = {c.name: c.value for c in r.configs}
        return out

    @staticmethod
    def _config_node(kind: str, name: str) -> int | None:
        """Who answers a config request about a resource: a broker about its own configs, else any (None)."""
        return int(name) if kind in ("broker", "broker-logger") and name else None

    async def _config_request(self, node: int | None, api_key: int, body: dict[str, Any]) -> Any:
        """A config request to ``node`` (see :meth:`_config_node`), or to any broker for None."""
        if node is not None:
            await self.net.refresh_metadata()
            return await self.net.send(node, api_key, body)
        _, resp = await self.net.send_any(api_key, body)
        return resp

    async def describe_config_entries(self, kind: str, name: str,
                                      keys: Iterable[str] | None = None) -> list[ConfigEntry]:
        """Every config of one resource (``kind``: ``topic``, ``broker`` — ``name`` a broker id, or
        ``""`` for the cluster-wide defaults — or ``broker-logger``), with sources and synonyms."""
        body = {"resources": [{"resource_type": RESOURCE_TYPES[kind], "resource_name": name,
                               "configuration_keys": list(keys) if keys is not None else None}],
                "include_synonyms": True, "include_documentation": False}
        r = (await self._config_request(self._config_node(kind, name), ApiKey.DESCRIBE_CONFIGS, body)).results[0]
        if r.error_code:
            raise KafkaError(r.error_code, r.error_message or f"describe configs of {kind} {name!r}")
        return [ConfigEntry(c.name, c.value, CONFIG_SOURCES.get(c.get("config_source", 0), "UNKNOWN"),
                            bool(c.read_only),
                            [(s.name, s.value, CONFIG_SOURCES.get(s.source, "UNKNOWN")) for s in c.get("synonyms", [])])
                for c in r.configs]

    async def incremental_alter_configs(self, kind: str, name: str, ops: Iterable[tuple[str, str, str | None]], *,
                                        validate_only: bool = False) -> None:
        """Change one resource's configs: ``ops`` are ``(operation, config, value)`` with operation
        ``set``, ``delete``, ``append`` or ``subtract`` (IncrementalAlterConfigs)."""
        await self.alter_configs({(kind, name): ops}, validate_only=validate_only)

    async def alter_configs(self, changes: ConfigChanges, *, validate_only: bool = False) -> None:
        """Change the configs of several resources (``{(kind, name): ops}``, ops as for
        :meth:`incremental_alter_configs`): each broker's own configs in a request to that broker, the
        other resources in one request; raises on the first refusal."""
        bodies: dict[int | None, list[dict[str, Any]]] = {}
        for (kind, name), ops in changes.items():
            resource = {"resource_type": RESOURCE_TYPES[kind], "resource_name": name,
                        "configs": [{"name": key, "config_operation": CONFIG_OPS[op], "value": value}
                                    for op, key, value in ops]}
            bodies.setdefault(self._config_node(kind, name), []).append(resource)
        answers = await asyncio.gather(*(
            self._config_request(node, ApiKey.INCREMENTAL_ALTER_CONFIGS, {"resources": resources,
                                                                          "validate_only": validate_only})
            for node, resources in bodies.items()))
        for resp in answers:
            for r in resp.responses:
                if r.error_code:
                    kind = next((k for k, v in RESOURCE_TYPES.items() if v == r.resource_type), "resource")
                    raise KafkaError(r.error_code, r.error_message or f"alter configs of {kind} {r.resource_name!r}")

    # -- partition reassignments and leader elections ------------------------------------------

    async def alter_partition_reassignments(self, reassignments: Mapping[TopicPartition, Sequence[int] | None], *,
                                            allow_replication_factor_change: bool = True,
                                            timeout_ms: int = 60000) -> dict[TopicPartition, KafkaError]:
        """Start moving partitions (AlterPartitionReassignments, KIP-455): each partition's complete
        target replica list, preferred leader first, or ``None`` to cancel its reassignment (its
        original replicas are restored).  ``allow_replication_factor_change=False`` makes the
        controller refuse a target of another size (INVALID_REPLICATION_FACTOR; needs v1).

        Returns the partitions the controller refused, each with its error (Kafka's per-partition
        errors: UNKNOWN_TOPIC_OR_PARTITION, INVALID_REPLICA_ASSIGNMENT, INVALID_REPLICATION_FACTOR,
        NO_REASSIGNMENT_IN_PROGRESS); empty when every reassignment was accepted.  A refusal of the
        whole request (e.g. CLUSTER_AUTHORIZATION_FAILED) raises."""
        topics: dict[str, list[dict[str, Any]]] = {}
        for tp, replicas in reassignments.items():
            topics.setdefault(tp.topic, []).append(
                {"partition_index": tp.partition, "replicas": None if replicas is None else list(replicas)})

        def build(version: int) -> dict[str, Any]:
            if version < 1 and not allow_replication_factor_change:
                raise UnsupportedVersionError("the broker cannot refuse replication factor changes "
                                              "(AlterPartitionReassignments v1)")
            return {"timeout_ms": timeout_ms, "allow_replication_factor_change": allow_replication_factor_change,
                    "topics": [{"name": t, "partitions": parts} for t, parts in topics.items()]}

        resp = await self._to_controller(ApiKey.ALTER_PARTITION_REASSIGNMENTS, {}, build=build,
                                   timeout_ms=timeout_ms + self.config.request_timeout_ms)
        if resp.error_code:
            raise KafkaError(resp.error_code, resp.error_message or "AlterPartitionReassignments")
        return {TopicPartition(t.name, p.partition_index): KafkaError(p.error_code, p.error_message)
                for t in resp.responses for p in t.partitions if p.error_code}

    async def list_partition_reassignments(self, partitions: Iterable[TopicPartition] | None = None, *,
                                           timeout_ms: int = 60000) -> dict[TopicPartition, PartitionReassignment]:
        """The reassignments in progress (ListPartitionReassignments), of every partition or of the
        given ones; a partition not being reassigned is absent."""
        wanted = None if partitions is None else _by_topic(partitions)
        body = {"timeout_ms": timeout_ms, "topics": None if wanted is None else
                [{"name": t, "partition_indexes": sorted(ps)} for t, ps in wanted.items()]}
        resp = await self._to_controller(ApiKey.LIST_PARTITION_REASSIGNMENTS, body,
                                   timeout_ms=timeout_ms + self.config.request_timeout_ms)
        if resp.error_code:
            raise KafkaError(resp.error_code, resp.error_message or "ListPartitionReassignments")
        return {TopicPartition(t.name, p.partition_index):
                PartitionReassignment(list(p.replicas), list(p.adding_replicas), list(p.removing_replicas))
                for t in resp.topics for p in t.partitions}

    async def elect_leaders(self, partitions: Iterable[TopicPartition] | None = None, *,
                            election_type: str = "preferred", timeout_ms: int = 60000) -> dict[TopicPartition, KafkaError]:
        """Elect leaders (ElectLeaders): ``preferred`` gives each partition back to its first replica when
        that one is alive and in sync; ``unclean`` elects any live replica of an offline partition.
        ``partitions=None``: every partition.  Returns the partitions not elected with their error
        (ELECTION_NOT_NEEDED when the leader already is the one, PREFERRED_LEADER_NOT_AVAILABLE, ...)."""
        kind = ELECTION_TYPES[election_type]
        wanted = None if partitions is None else _by_topic(partitions)

        def build(version: int) -> dict[str, Any]:
            if version < 1 and kind:
                raise UnsupportedVersionError("the broker elects preferred leaders only (ElectLeaders v0)")
            return {"election_type": kind, "timeout_ms": timeout_ms, "topic_partitions": None if wanted is None else
                    [{"topic": t, "partitions": sorted(ps)} for t, ps in wanted.items()]}

        resp = await self._to_controller(ApiKey.ELECT_LEADERS, {}, build=build,
                                   timeout_ms=timeout_ms + self.config.request_timeout_ms)
        if resp.get("error_code", 0):
            raise KafkaError(resp.error_code, "ElectLeaders")
        return {TopicPartition(r.topic, p.partition_id): KafkaError(p.error_code, p.error_message)
                for r in resp.replica_election_results for p in r.partition_result if p.error_code}

    async def set_replication_throttles(self, rate: int, brokers: Iterable[int],
                                        replicas: Mapping[str, tuple[str, str]]) -> None:
        """Throttle replication as Kafka's reassignment tool does: ``rate`` bytes/s as the
        ``leader.`` and ``follower.replication.throttled.rate`` of each of ``brokers``, and for each
        topic its ``(leader, follower)`` throttled replica lists (``partition:broker,...`` or ``*``) as
        ``leader.`` / ``follower.replication.throttled.replicas``."""
        changes: dict[tuple[str, str], list[tuple[str, str, str | None]]] = {
            ("broker", str(b)): [("set", key, str(rate)) for key in THROTTLE_RATES] for b in sorted(set(brokers))}
        for topic, lists in replicas.items():
            changes[("topic", topic)] = [("set", key, value) for key, value in zip(THROTTLED_REPLICAS, lists, strict=True)]
        await self.alter_configs(changes)

    async def clear_replication_throttles(self, brokers: Iterable[int], topics: Iterable[str]) -> None:
        """Remove the throttle rates from ``brokers`` and the throttled replica lists from ``topics``."""
        changes: dict[tuple[str, str], list[tuple[str, str, str | None]]] = {
            ("broker", str(b)): [("delete", key, None) for key in THROTTLE_RATES] for b in sorted(set(brokers))}
        changes.update({("topic", t): [("delete", key, None) for key in THROTTLED_REPLICAS] for t in sorted(set(topics))})
        await self.alter_configs(changes)

    # -- groups ----------------------------------------------------------------------------------

    async def list_groups(self) -> list[GroupListing]:
        md = await self.net.refresh_metadata()
        nodes = list(md.brokers) or [self.net.least_loaded_node()]
        out: list[GroupListing] = []
        for resp in await asyncio.gather(*(self.net.send(n, ApiKey.LIST_GROUPS, {}) for n in nodes if n is not None)):
            if resp.error_code:
                raise KafkaError(resp.error_code, "ListGroups")
            out += [GroupListing(g.group_id, g.protocol_type, g.get("group_state") or "", g.get("group_type") or "")
                    for g in resp.groups]
        return out

    async def describe_groups(self, group_ids: Iterable[str]) -> dict[str, GroupDescription]:
        out: dict[str, GroupDescription] = {}
        for gid in group_ids:
            node = await find_coordinator(self.net, gid)
            resp = await self.net.send(node, ApiKey.DESCRIBE_GROUPS, {"groups": [gid]})
            for g in resp.groups:
                if g.error_code == ErrorCode.GROUP_ID_NOT_FOUND or (not g.error_code and g.group_state == "Dead"):
                    consumer_group = await self._describe_consumer_group(node, gid)
                    if consumer_group is not None:
                        out[gid] = consumer_group
                        continue
                if g.error_code:
                    raise KafkaError(g.error_code, f"describe group {g.group_id!r}")
                members = []
                for m in g.members:
                    assigned: set[TopicPartition] = set()
                    if g.protocol_type == "consumer" and m.member_assignment:
                        try:
                            assigned = {TopicPartition(t, p) for t, p in decode_assignment(m.member_assignment).partitions}
                        except Exception:
                            assigned = set()
                    members.append(MemberDescription(m.member_id, m.group_instance_id, m.client_id,
                                                     m.client_host, assigned))
                out[g.group_id] = GroupDescription(g.group_id, g.group_state, g.protocol_type, g.protocol_data,
                                                   members)
        return out

    async def _describe_consumer_group(self, node: Any, group_id: str) -> GroupDescription | None:
        """A KIP-848 consumer group (ConsumerGroupDescribe), or None when ``group_id`` is not one."""
        try:
            resp = await self.net.send(node, ApiKey.CONSUMER_GROUP_DESCRIBE, {"group_ids": [group_id]})
        except KafkaError:
            return None  # a broker without KIP-848
        g = resp.groups[0] if resp.groups else None
        if g is None or g.error_code:
            return None

        def parts(assignment: Any) -> set[TopicPartition]:
            return {TopicPartition(t.topic_name, p) for t in assignment.topic_partitions for p in t.partitions}

        members = [MemberDescription(m.member_id, m.instance_id, m.client_id, m.client_host, parts(m.assignment),
                                     m.member_epoch, parts(m.target_assignment)) for m in g.members]
        return GroupDescription(g.group_id, g.group_state, "consumer", g.assignor_name, members, "consumer",
                                g.group_epoch, g.assignment_epoch)

    # -- share groups (KIP-932) --------------------------------------------------------------------

    async def describe_share_groups(self, group_ids: Iterable[str]) -> dict[str, GroupDescription]:
        """Share groups (ShareGroupDescribe): state, epochs, assignor and each member's assignment (partitions
        several members may share); GROUP_ID_NOT_FOUND for an id that is not a share group's."""
        out: dict[str, GroupDescription] = {}
        for gid in group_ids:
            node = await find_coordinator(self.net, gid)
            resp = await self.net.send(node, ApiKey.SHARE_GROUP_DESCRIBE,
                                       {"group_ids": [gid], "include_authorized_operations": False})
            for g in resp.groups:
                if g.error_code:
                    raise KafkaError(g.error_code, g.error_message or f"describe share group {g.group_id!r}")
                members = [MemberDescription(m.member_id, None, m.client_id, m.client_host,
                                             {TopicPartition(t.topic_name, p) for t in m.assignment.topic_partitions
                                              for p in t.partitions}, m.member_epoch) for m in g.members]
                out[g.group_id] = GroupDescription(g.group_id, g.group_state, "share", g.assignor_name, members,
                                                   "share", g.group_epoch, g.assignment_epoch)
        return out

    async def list_share_group_offsets(self, group_id: str) -> dict[TopicPartition, PartitionOffsetInfo]:
        """A share group's start offset of every partition it has state for (DescribeShareGroupOffsets), with
        the partition's end offset and the lag the broker counts (records not yet delivered and acknowledged;
        -1 when it cannot tell)."""
        node = await find_coordinator(self.net, group_id)
        resp = await self.net.send(node, ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS,
                                   {"groups": [{"group_id": group_id, "topics": None}]})
        [g] = resp.groups
        if g.error_code:
            raise KafkaError(g.error_code, g.error_message or f"describe offsets of share group {group_id!r}")
        starts: dict[TopicPartition, tuple[int, int]] = {}
        for t in g.topics:
            for p in t.partitions:
                if p.error_code:
                    raise KafkaError(p.error_code, p.error_message or f"offsets of {t.topic_name}-{p.partition_index}")
                if p.start_offset >= 0:
                    starts[TopicPartition(t.topic_name, p.partition_index)] = (p.start_offset, p.get("lag", -1))
        ends = await list_offsets(self.net, dict.fromkeys(starts, LATEST)) if starts else {}
        return {tp: PartitionOffsetInfo(start, "", ends[tp][0], lag) for tp, (start, lag) in starts.items()}

    async def alter_share_group_offsets(self, group_id: str, offsets: Mapping[TopicPartition, int]) -> None:
        """Set the start offset of partitions of an Empty share group (AlterShareGroupOffsets; the group is made
        if it does not exist): its members read from there."""
        by_topic: dict[str, list[dict[str, int]]] = {}
        for tp, offset in sorted(offsets.items()):
            by_topic.setdefault(tp.topic, []).append({"partition_index": tp.partition, "start_offset": offset})
        node = await find_coordinator(self.net, group_id)
        resp = await self.net.send(node, ApiKey.ALTER_SHARE_GROUP_OFFSETS, {
            "group_id": group_id, "topics": [{"topic_name": t, "partitions": ps} for t, ps in by_topic.items()]})
        if resp.error_code:
            raise KafkaError(resp.error_code, resp.error_message or f"alter offsets of share group {group_id!r}")
        for t in resp.responses:
            for p in t.partitions:
                if p.error_code:
                    raise KafkaError(p.error_code,
                                     p.error_message or f"alter offset of {t.topic_name}-{p.partition_index}")

    async def list_transactions(self, states: Iterable[str] = (), producer_ids: Iterable[int] = ()
                                ) -> list[TransactionListing]:
        """Transactional ids of every broker's transaction coordinator (ListTransactions to each)."""
        md = await self.net.refresh_metadata()
        nodes = [n for n in (list(md.brokers) or [self.net.least_loaded_node()]) if n is not None]
        body = {"state_filters": list(states), "producer_id_filters": list(producer_ids), "duration_filter": -1}
        out: list[TransactionListing] = []
        for resp in await asyncio.gather(*(self.net.send(n, ApiKey.LIST_TRANSACTIONS, body) for n in nodes)):
            if resp.error_code:
                raise KafkaError(resp.error_code, "ListTransactions")
            out += [TransactionListing(t.transactional_id, t.producer_id, t.transaction_state)
                    for t in resp.transaction_states]
        return out

    async def describe_transactions(self, transactional_ids: Iterable[str]) -> dict[str, TransactionDescription]:
        """State, producer and partitions of each transactional id (DescribeTransactions to its coordinator)."""
        out: dict[str, TransactionDescription] = {}
        for tid in transactional_ids:
            node = await find_coordinator(self.net, tid, TRANSACTION_KEY)
            resp = await self.net.send(node, ApiKey.DESCRIBE_TRANSACTIONS, {"transactional_ids": [tid]})
            for t in resp.transaction_states:
                if t.error_code:
                    raise KafkaError(t.error_code, f"describe transaction {t.transactional_id!r}")
                out[t.transactional_id] = TransactionDescription(
                    t.transactional_id, t.transaction_state, t.producer_id, t.producer_epoch,
                    t.transaction_timeout_ms, t.transaction_start_time_ms,
                    [TopicPartition(x.topic, p) for x in t.topics for p in x.partitions])
        return out

    async def delete_groups(self, group_ids: Iterable[str]) -> None:
        for gid in group_ids:
            node = await find_coordinator(self.net, gid)
            resp = await self.net.send(node, ApiKey.DELETE_GROUPS, {"groups_names": [gid]})
            for r in resp.results:
                if r.error_code:
                    raise KafkaError(r.error_code, f"delete group {r.group_id!r}")

    async def list_group_offsets(self, group_id: str, partitions: Iterable[TopicPartition] | None = None
                                 ) -> dict[TopicPartition, PartitionOffsetInfo]:
        """Committed offsets of a group with the log end offset and lag of each partition."""
        node = await find_coordinator(self.net, group_id)
        committed = await fetch_committed(self.net, node, group_id, list(partitions) if partitions else None)
        present = {tp: om for tp, om in committed.items() if om is not None}
        ends = await list_offsets(self.net, dict.fromkeys(present, LATEST)) if present else {}
        return {tp: PartitionOffsetInfo(om.offset, om.metadata, ends[tp][0], max(0, ends[tp][0] - om.offset))
                for tp, om in present.items()}

    # -- ACLs --------------------------------------------------------------------------------------

    async def create_acls(self, acls: Iterable[Acl]) -> None:
        """Create ACLs (creating one that exists is no error); raises on the first refusal."""
        items = list(acls)
        body = {"creations": [_acl_body(a) for a in items]}
        _, resp = await self.net.send_any(ApiKey.CREATE_ACLS, body)
        for acl, r in zip(items, resp.results, strict=True):
            if r.error_code:
                raise KafkaError(r.error_code, f"create ACL {acl}: {r.error_message or ''}")

    async def describe_acls(self, acl_filter: AclFilter | None = None) -> list[Acl]:
        _, resp = await self.net.send_any(ApiKey.DESCRIBE_ACLS, _filter_body(acl_filter or AclFilter()))
        if resp.error_code:
            raise KafkaError(resp.error_code, f"describe ACLs: {resp.error_message or ''}")
        return [Acl(ResourceType.from_code(r.resource_type).name, r.resource_name, a.principal,
                    AclOperation.from_code(a.operation).name, AclPermissionType.from_code(a.permission_type).name,
                    PatternType.from_code(r.pattern_type).name, a.host)
                for r in resp.resources for a in r.acls]

    async def delete_acls(self, filters: Iterable[AclFilter]) -> list[Acl]:
        """Delete every ACL a filter matches; returns those deleted."""
        _, resp = await self.net.send_any(ApiKey.DELETE_ACLS, {"filters": [_filter_body(f) for f in filters]})
        deleted: list[Acl] = []
        for r in resp.filter_results:
            if r.error_code:
                raise KafkaError(r.error_code, f"delete ACLs: {r.error_message or ''}")
            deleted += [Acl(ResourceType.from_code(m.resource_type).name, m.resource_name, m.principal,
                            AclOperation.from_code(m.operation).name,
                            AclPermissionType.from_code(m.permission_type).name,
                            PatternType.from_code(m.pattern_type).name, m.host) for m in r.matching_acls]
        return deleted

    # -- users (SCRAM credentials) -----------------------------------------------------------------

    async def describe_user_scram_credentials(self, users: Iterable[str] | None = None
                                              ) -> dict[str, list[ScramCredentialInfo]]:
        """Every user's credentials (or the named users'; an unknown one raises RESOURCE_NOT_FOUND)."""
        names = list(users) if users is not None else None
        body = {"users": None if not names else [{"name": n} for n in names]}
        _, resp = await self.net.send_any(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, body)
        if resp.error_code:
            raise KafkaError(resp.error_code, f"describe users: {resp.error_message or ''}")
        out: dict[str, list[ScramCredentialInfo]] = {}
        for r in resp.results:
            if r.error_code:
                raise KafkaError(r.error_code, f"describe user {r.user!r}: {r.error_message or ''}")
            out[r.user] = [ScramCredentialInfo(_mechanism(c.mechanism), c.iterations) for c in r.credential_infos]
        return out

    async def alter_user_scram_credentials(self, *, upsertions: Iterable[tuple[str, str, str]] = (),
                                           deletions: Iterable[tuple[str, str]] = (),
                                           iterations: int = 4096) -> None:
        """Set ``(user, mechanism, password)`` credentials and delete ``(user, mechanism)`` ones;
        raises on the first refusal.  Mechanisms are SCRAM-SHA-256 and SCRAM-SHA-512.

        A request may change each user once (KIP-554), so several mechanisms of one user take
        several requests, sent one after the other.
        """
        pending: list[tuple[str, str, dict[str, Any]]] = []
        for user, mechanism, password in upsertions:
            m = _scram(mechanism)
            salt = secrets.token_bytes(32)
            pending.append((user, "upsertions", {"name": user, "mechanism": int(m), "iterations": iterations,
                                                 "salt": salt,
                                                 "salted_password": salted_password(m, password, salt, iterations)}))
        pending += [(user, "deletions", {"name": user, "mechanism": int(_scram(mechanism))})
                    for user, mechanism in deletions]
        while pending:
            body: dict[str, list[dict[str, Any]]] = {"deletions": [], "upsertions": []}
            named: set[str] = set()
            later = []
            for user, kind, entry in pending:
                if user in named:
                    later.append((user, kind, entry))
                else:
                    named.add(user)
                    body[kind].append(entry)
            _, resp = await self.net.send_any(ApiKey.ALTER_USER_SCRAM_CREDENTIALS, body)
            for r in resp.results:
                if r.error_code:
                    raise KafkaError(r.error_code, f"alter user {r.user!r}: {r.error_message or ''}")
            pending = later


def _by_topic(partitions: Iterable[TopicPartition]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for tp in partitions:
        out.setdefault(tp.topic, []).append(tp.partition)
    return out


def _named(enum: Any, name: str, what: str) -> int:
    try:
        return int(enum.from_name(name))
    except ValueError:
        raise ValueError(f"unknown {what} {name!r}") from None


def _acl_body(a: Acl) -> dict[str, Any]:
    return {"resource_type": _named(ResourceType, a.resource_type, "resource type"), "resource_name": a.resource_name,
            "resource_pattern_type": _named(PatternType, a.pattern_type, "pattern type"), "principal": a.principal,
            "host": a.host, "operation": _named(AclOperation, a.operation, "operation"),
            "permission_type": _named(AclPermissionType, a.permission, "permission")}


def _filter_body(f: AclFilter) -> dict[str, Any]:
    return {"resource_type_filter": _named(ResourceType, f.resource_type, "resource type"),
            "resource_name_filter": f.resource_name,
            "pattern_type_filter": _named(PatternType, f.pattern_type, "pattern type"),
            "principal_filter": f.principal, "host_filter": f.host,
            "operation": _named(AclOperation, f.operation, "operation"),
            "permission_type": _named(AclPermissionType, f.permission, "permission")}


def _scram(mechanism: str) -> ScramMechanism:
    m = ScramMechanism.from_sasl_name(mechanism.strip().upper())
    if m is None:
        raise ValueError(f"unknown SCRAM mechanism {mechanism!r} (SCRAM-SHA-256 or SCRAM-SHA-512)")
    return m


def _mechanism(code: int) -> str:
    m = ScramMechanism.from_code(code)
    return m.sasl_name if m is not None else f"UNKNOWN({code})"
