"""GroupService: the group coordinator's service — group APIs over one coordinator shard per offsets partition.

Group G belongs to partition ``abs(hashCode(G)) % partitions`` of
``__consumer_offsets`` and is coordinated by that partition's leader.  The shards
(one pure :class:`~broker.coordinator.group.coordinator.GroupCoordinator` per partition this
broker leads: loading, NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS, ordered
writes, timers) are the shared :class:`~broker.coordinator.runtime.CoordinatorRuntime`'s;
this module adds what is the group coordinator's own:

* routing: a request names a group, the group names the shard; requests naming
  several groups (DescribeGroups, DeleteGroups, OffsetFetch v8+) are split by
  shard and their answers merged; ListGroups asks every shard;
* transactional offset commits (TxnOffsetCommit) and the COMMIT/ABORT markers that
  end them on an offsets partition (WriteTxnMarkers reaches this broker as that
  partition's leader: the marker is written through the shard, so the offsets it
  makes visible change in order with the shard's other writes);
* rebalance metrics and the per-group metric families.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Awaitable, Callable, Hashable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from broker.cluster.internal_topics import OFFSETS_TOPIC
from broker.coordinator.group.config import GroupConfig
from broker.coordinator.group.consumer_group import TopicCatalog, TopicView
from broker.coordinator.group.coordinator import Effects, GroupCoordinator
from broker.coordinator.group.partitioning import coordinator_partition
from broker.coordinator.runtime import CoordinatorRuntime, Shard, now_ms
from protocol.api import ApiKey
from protocol.error_codes import ErrorCode
from protocol.error_response import error_response
from protocol.primitives import Obj

if TYPE_CHECKING:
    from broker.coordinator.group.share_service import ShareGroupService
    from broker.coordinator.txn.verifier import TxnVerifier
    from broker.observability.metrics import BrokerMetrics
    from broker.replication.replica_manager import ReplicaManager
    from protocol.timer_service import WheelTimer

log = logging.getLogger("kbroker.group")

E = ErrorCode
GroupShard = Shard[GroupCoordinator]

#: group placements remembered at most (a broker with more groups than this works some out again)
_PLACEMENTS_REMEMBERED = 65_536
_MEMBERSHIP = frozenset({int(ApiKey.JOIN_GROUP), int(ApiKey.SYNC_GROUP), int(ApiKey.LEAVE_GROUP)})


class ImageTopics:
    """The topics of the metadata image, as consumer groups see them (a :class:`TopicCatalog`)."""

    def __init__(self, image: Any) -> None:
        self._image = image

    def topic_id(self, name: str) -> Any:
        t = self._image.topic(name)
        return None if t is None else t.topic_id

    def partition_count(self, name: str) -> int | None:
        t = self._image.topic(name)
        return None if t is None else t.partition_count

    def topic_names(self) -> list[str]:
        return list(self._image.topics)


class GroupService:
    def __init__(self, *, settings: GroupConfig, replica: ReplicaManager, metrics: BrokerMetrics, timer: WheelTimer,
                 partition_count: Callable[[str], int | None], topics: TopicCatalog | None = None,
                 group_configs: Callable[[str], Mapping[str, str]] = lambda _gid: {}) -> None:
        #: the shards' settings, ``offsets_topic_num_partitions`` being the configured count
        self.settings = settings
        #: a group's group configs (KIP-848 overrides), read when consumer groups need them
        self._group_configs_of = group_configs
        self.metrics = metrics
        self._topic_partitions = partition_count
        self._topics = topics
        self._generations: dict[str, tuple[int, str, float]] = {}
        self._warned_partitions = False
        #: group id -> its partition over ``_placed_over`` partitions; both forgotten when topics change
        self._placement: dict[str, int] = {}
        self._placed_over: int | None = None
        #: checks transactional offset commits with their transaction coordinator (set by the composition root)
        self.txn_verifier: TxnVerifier | None = None
        #: share groups' flows with the share coordinator (set by the composition root)
        self.share: ShareGroupService | None = None
        self.runtime: CoordinatorRuntime[GroupCoordinator] = CoordinatorRuntime(
            topic=OFFSETS_TOPIC, replica=replica, timer=timer, new_coordinator=self._new_coordinator,
            on_effects=self._on_effects, after_poll=self._track_rebalances, on_unload=self._forget_generations,
            on_load_error=metrics.offsets_load_errors.inc, compression=settings.offsets_compression)

    @property
    def shards(self) -> dict[int, GroupShard]:
        return self.runtime.shards

    # -- placement -------------------------------------------------------------------
    @property
    def num_partitions(self) -> int:
        """The partition count group placement uses: the existing topic's, as in Kafka.

        ``offsets.topic.num.partitions`` only sizes the topic when it is created; once it exists
        its real count governs ``partitionFor`` and loading, whatever the setting says now.
        """
        configured = self.settings.offsets_topic_num_partitions
        count = self._topic_partitions(OFFSETS_TOPIC)
        if not count:
            return configured
        if count != configured and not self._warned_partitions:
            self._warned_partitions = True
            log.warning("%s has %d partitions; offsets.topic.num.partitions=%d applies only when the topic is "
                        "created, so groups stay placed over %d partitions", OFFSETS_TOPIC, count, configured,
                        count)
        return count

    def partition_for(self, group_id: str) -> int:
        """The ``__consumer_offsets`` partition of ``group_id`` (remembered: every group request asks)."""
        partition = self._placement.get(group_id)
        if partition is not None:
            return partition
        count = self._placed_over
        if count is None:
            count = self._placed_over = self.num_partitions
        if len(self._placement) >= _PLACEMENTS_REMEMBERED:
            self._placement.clear()
        partition = self._placement[group_id] = coordinator_partition(group_id, count)
        return partition

    def _group_config(self) -> GroupConfig:
        return dataclasses.replace(self.settings, offsets_topic_num_partitions=self.num_partitions)

    def _new_coordinator(self, partition: int, epoch: int) -> GroupCoordinator:
        return GroupCoordinator(self._group_config(), now_ms=now_ms(), partition_count=self._topic_partitions,
                                topics=self._topics, group_configs=self._group_configs_of)

    def _forget_generations(self, shard: GroupShard) -> None:
        if shard.coordinator is not None:
            for group_id in shard.coordinator.groups:
                self._generations.pop(group_id, None)

    # -- requests (each group API's handler calls one of these) -----------------------
    def request(self, key: int, version: int, req: Obj, *, client_id: str = "", client_host: str = "",
                topic_view: TopicView = None) -> Obj | Awaitable[Obj]:
        """A request naming one group (``group_id``), run on that group's shard: the response now, or
        an awaitable when it waits (parked, or writing).  ``client_id``/``client_host`` name the member
        joining; ``topic_view`` (ConsumerGroupHeartbeat): which topics the member's principal may
        DESCRIBE (None: all), what its regular expression resolves over."""
        shard, code = self._shard_for(req["group_id"])
        if shard is None:
            return error_response(key, version, req, code)
        return self._run(shard, key, version, req, client_id, client_host, topic_view)

    def heartbeat(self, version: int, req: Obj) -> Obj | Awaitable[Obj]:
        """Heartbeat: the common case (a member of a settled classic group in its generation) is answered
        by the shard's coordinator at once — it writes nothing and releases nothing, so the runtime's
        tokens and effects are skipped; anything else takes :meth:`request`'s path."""
        shard, _ = self._shard_for(req["group_id"])
        if shard is not None:
            assert shard.coordinator is not None
            body = shard.coordinator.heartbeat_now(now_ms(), version, req)
            if body is not None:
                return body
        return self.request(ApiKey.HEARTBEAT, version, req)

    def describe_groups(self, version: int, req: Obj) -> Obj | Awaitable[Obj]:
        return self._scatter(ApiKey.DESCRIBE_GROUPS, version, req, "groups", "groups", _describe_error)

    def delete_groups(self, version: int, req: Obj) -> Obj | Awaitable[Obj]:
        def delete(r: Obj) -> Any:
            return self._scatter(ApiKey.DELETE_GROUPS, version, r, "groups_names", "results", _delete_error)

        return delete(req) if self.share is None else self.share.delete_groups(version, req, delete)

    def share_group_describe(self, version: int, req: Obj) -> Obj | Awaitable[Obj]:
        return self._scatter(ApiKey.SHARE_GROUP_DESCRIBE, version, req, "group_ids", "groups", _share_describe_error)

    def consumer_group_describe(self, version: int, req: Obj) -> Obj | Awaitable[Obj]:
        return self._scatter(ApiKey.CONSUMER_GROUP_DESCRIBE, version, req, "group_ids", "groups",
                             _consumer_describe_error)

    def offset_fetch(self, version: int, req: Obj) -> Obj | Awaitable[Obj]:
        if version >= 8:  # several groups
            return self._scatter(ApiKey.OFFSET_FETCH, version, req, "groups", "groups", _offset_fetch_error,
                                 field="group_id")
        return self.request(ApiKey.OFFSET_FETCH, version, req)

    def txn_offset_commit(self, version: int, req: Obj) -> Obj | Awaitable[Obj]:
        shard, code = self._shard_for(req["group_id"])
        if shard is None:
            return error_response(ApiKey.TXN_OFFSET_COMMIT, version, req, code)
        if self.txn_verifier is None:
            return self._run(shard, ApiKey.TXN_OFFSET_COMMIT, version, req)
        return self._txn_offset_commit(shard, version, req)

    async def _txn_offset_commit(self, shard: GroupShard, version: int, req: Obj) -> Obj:
        """TxnOffsetCommit: first check with the producer's transaction coordinator that this offsets
        partition belongs to its ongoing transaction (KIP-890; v5+, transaction version 2: add it), so
        offsets can never wait for a marker nobody will write."""
        from broker.replication.replica_manager import produce_verification_error

        assert self.txn_verifier is not None
        tp = (OFFSETS_TOPIC, shard.partition)
        codes = await self.txn_verifier.verify(req.transactional_id, req.producer_id, req.producer_epoch, [tp],
                                               add=version >= 5)
        code = codes.get(tp, E.UNKNOWN_SERVER_ERROR)
        if code != E.NONE:
            code = produce_verification_error(code, 11 if version >= 5 else 0)
            if code == E.NOT_ENOUGH_REPLICAS:
                code = E.COORDINATOR_LOAD_IN_PROGRESS  # the transaction coordinator is busy: retry
            return Obj(throttle_time_ms=0, topics=[
                {"name": t.name, "partitions": [{"partition_index": p.partition_index, "error_code": code}
                                                for p in t.partitions]} for t in req.topics])
        current, _ = self._shard_for(req.group_id)
        if current is None:
            return error_response(ApiKey.TXN_OFFSET_COMMIT, version, req, E.NOT_COORDINATOR)
        result = self._run(current, ApiKey.TXN_OFFSET_COMMIT, version, req)
        return result if isinstance(result, dict) else await result

    def _shard_for(self, group_id: str) -> tuple[GroupShard | None, int]:
        return self.runtime.shard(self.partition_for(group_id))

    def _run(self, shard: GroupShard, key: int, version: int, req: Any, client_id: str = "",
             client_host: str = "", topic_view: TopicView = None) -> Any:
        """Run one request on a shard: the response now, or a future when it waits (parked or writing)."""
        now = now_ms()

        def call(coordinator: GroupCoordinator, token: Hashable) -> Effects:
            return coordinator.handle(key, now, version, req, token, client_id=client_id,
                                      client_host=client_host, topic_view=topic_view)

        result = self.runtime.run(shard, call, lambda code: error_response(key, version, req, code))
        if key in _MEMBERSHIP:
            self._track_rebalances(shard, req.get("group_id"))
        return result

    def _scatter(self, key: int, version: int, req: Obj, request_field: str, response_field: str,
                 error_entry: Callable[[str, int], dict[str, Any]], field: str | None = None) -> Any:
        """A request naming several groups: one sub-request per shard, answers merged in request order."""
        items = list(req[request_field] or [])
        by_shard: dict[int, list[Any]] = {}
        answers: dict[int, Any] = {}
        for i, item in enumerate(items):
            group_id = item[field] if field else item
            shard, code = self._shard_for(group_id)
            if shard is None:
                answers[i] = error_entry(group_id, code)
            else:
                by_shard.setdefault(shard.partition, []).append((i, item))
        subs: list[tuple[list[tuple[int, str]], Any]] = []
        for partition, entries in by_shard.items():
            sub = Obj(req)
            sub[request_field] = [item for _, item in entries]
            keys = [(i, item[field] if field else item) for i, item in entries]
            subs.append((keys, self._run(self.shards[partition], key, version, sub)))

        def merge(results: list[Any]) -> Any:
            template: Any = None
            for (keys, _), result in zip(subs, results, strict=True):
                entries = list(result.get(response_field) or [])
                if len(entries) != len(keys):  # the shard went away meanwhile
                    code = result.get("error_code") or E.NOT_COORDINATOR
                    entries = [error_entry(group_id, code) for _, group_id in keys]
                else:
                    template = result
                for (i, _), entry in zip(keys, entries, strict=True):
                    answers[i] = entry
            body = dict(template) if template is not None else {"throttle_time_ms": 0}  # none of them has an error_code
            body[response_field] = [answers[i] for i in range(len(items))]
            return Obj(body)

        if all(isinstance(r, dict) for _, r in subs):
            return merge([r for _, r in subs])

        async def gather() -> Any:
            return merge([r if isinstance(r, dict) else await r for _, r in subs])

        return gather()

    async def complete_transaction(self, partition: int, producer_id: int, producer_epoch: int, commit: bool,
                                   coordinator_epoch: int) -> int:
        """WriteTxnMarkers for offsets partition ``partition`` (this broker leads it): the marker is written
        through its shard, which then applies or drops the producer's pending offsets.  Returns the
        partition's error code."""
        shard, code = self.runtime.shard(partition)
        if shard is None:
            return E.NOT_LEADER_OR_FOLLOWER if code == E.NOT_COORDINATOR else code
        now = now_ms()

        def call(coordinator: GroupCoordinator, token: Hashable) -> Effects:
            return coordinator.complete_transaction(now, partition, producer_id, producer_epoch, commit,
                                                    coordinator_epoch, token)

        result = self.runtime.run(shard, call, lambda code: {"error_code": E.NOT_LEADER_OR_FOLLOWER})
        if not isinstance(result, dict):
            result = await result
        return int(result["error_code"])

    def on_metadata(self, delta: Any, image: Any) -> None:
        """Topics created, deleted or grown: consumer groups refresh their subscriptions (new targets)."""
        if not (delta.full or delta.topics_created or delta.topics_deleted or delta.topics_changed):
            return
        self._placement.clear()  # the offsets topic may have come, gone or grown
        self._placed_over = None
        for shard in list(self.shards.values()):
            if shard.coordinator is not None and not shard.loading:
                self.runtime.apply(shard, shard.coordinator.metadata_changed(now_ms()))

    def list_groups(self, version: int, req: Obj) -> Obj:
        """ListGroups: every shard's groups (COORDINATOR_LOAD_IN_PROGRESS while one is loading)."""
        groups: list[Any] = []
        error = E.NONE
        for shard in list(self.shards.values()):
            if shard.loading or shard.coordinator is None:
                error = E.COORDINATOR_LOAD_IN_PROGRESS
                continue
            result = self._run(shard, ApiKey.LIST_GROUPS, version, req)
            if isinstance(result, dict):
                groups.extend(result["groups"])
        return Obj(throttle_time_ms=0, error_code=error, groups=groups)

    # -- effects ---------------------------------------------------------------------
    def _on_effects(self, shard: GroupShard, effects: Effects) -> None:
        if self.share is not None:
            self.share.after_effects(shard)
        if shard.coordinator is not None:
            bumps = shard.coordinator.consumer.take_epoch_bumps()
            if bumps:
                self.metrics.rebalances.inc(bumps)  # a consumer group's new epoch is its rebalance
        for group_id in effects.removed_groups:
            self._generations.pop(group_id, None)

    def _track_rebalances(self, shard: GroupShard, group_id: str | None = None) -> None:
        """Count generations that completed since the last look (for the rebalance metrics)."""
        coordinator = shard.coordinator
        if coordinator is None:
            return
        metrics = self.metrics
        now = time.monotonic()
        seen = self._generations
        groups = coordinator.groups
        if group_id is not None:
            group = groups.get(group_id)
            items: Any = () if group is None else ((group_id, group),)
        else:
            items = list(groups.items())
            for gone in [g for g in seen if g not in groups and self.partition_for(g) == shard.partition]:
                del seen[gone]
        for gid, group in items:
            state = group.state.value
            previous = seen.get(gid)
            if state == "PreparingRebalance" and (previous is None or previous[1] != "PreparingRebalance"):
                seen[gid] = (group.generation_id, state, now)
            elif previous is not None and group.generation_id != previous[0] and state != "PreparingRebalance":
                metrics.rebalances.inc()
                if previous[1] == "PreparingRebalance":
                    metrics.rebalance_seconds.observe(now - previous[2])
                seen[gid] = (group.generation_id, state, now)
            elif previous is None:
                seen[gid] = (group.generation_id, state, now)

    def close(self) -> None:
        self.runtime.close()

    # -- inspection ------------------------------------------------------------------
    def coordinators(self) -> Iterator[GroupCoordinator]:
        return self.runtime.coordinators()

    def collect_metrics(self, end_offsets: dict[tuple[str, int], int], max_groups: int) -> Iterator[Any]:
        """Groups of both kinds (``type`` classic or consumer) by state, their members and generation (a
        consumer group's: its group epoch), committed offsets and lag."""
        from prometheus_client.core import GaugeMetricFamily

        by_state = GaugeMetricFamily("kbroker_groups", "Consumer groups by state", labels=["state", "type"])
        members = GaugeMetricFamily("kbroker_group_members", "Members per group", labels=["group", "type"])
        generation = GaugeMetricFamily("kbroker_group_generation", "Current generation id (consumer groups: group "
                                       "epoch) per group", labels=["group"])
        committed = GaugeMetricFamily("kbroker_group_committed_offset", "Committed offset",
                                      labels=["group", "topic", "partition"])
        lag = GaugeMetricFamily("kbroker_group_lag", "Consumer lag: log end offset minus committed offset",
                                labels=["group", "topic", "partition"])
        counts: dict[tuple[str, str], int] = {}
        n = 0
        for coordinator in self.coordinators():
            consumer_groups = coordinator.consumer.groups
            for group_id in list(dict.fromkeys([*coordinator.groups, *consumer_groups, *coordinator.offsets])):
                consumer_group = consumer_groups.get(group_id)
                group = coordinator.groups.get(group_id)
                if consumer_group is not None:
                    kind, state = "consumer", consumer_group.state
                    size, epoch = len(consumer_group.members), consumer_group.group_epoch
                else:
                    kind = "classic"
                    state = "Empty" if group is None else getattr(group.state, "value", str(group.state))
                    size, epoch = (0, 0) if group is None else (len(group.members), group.generation_id)
                counts[(state, kind)] = counts.get((state, kind), 0) + 1
                n += 1
                if n > max_groups:
                    continue
                members.add_metric([group_id, kind], size)
                generation.add_metric([group_id], epoch)
                for (topic, partition), entry in coordinator.offsets.get(group_id, {}).items():
                    offset = entry.offset
                    labels = [group_id, topic, str(partition)]
                    committed.add_metric(labels, offset)
                    end = end_offsets.get((topic, partition))
                    if end is not None:
                        lag.add_metric(labels, max(0, end - offset))
        for state in ("Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead"):
            by_state.add_metric([state, "classic"], counts.get((state, "classic"), 0))
        for state in ("Empty", "Assigning", "Reconciling", "Stable"):
            by_state.add_metric([state, "consumer"], counts.get((state, "consumer"), 0))
        yield by_state
        yield members
        yield generation
        yield committed
        yield lag


    def total_lags(self, end_offsets: Mapping[tuple[str, int], int], max_groups: int) -> dict[str, int]:
        """Each group's lag summed over its committed partitions whose end is in ``end_offsets`` (the
        groups this broker coordinates, at most ``max_groups``): what the console charts over time."""
        lags: dict[str, int] = {}
        for coordinator in self.coordinators():
            for group_id, offsets in coordinator.offsets.items():
                if len(lags) >= max_groups:
                    return lags
                total = 0
                for tp, entry in offsets.items():
                    end = end_offsets.get(tp)
                    if end is not None:
                        total += max(0, end - entry.offset)
                lags[group_id] = total
        return lags


def _describe_error(group_id: str, code: int) -> dict[str, Any]:
    return {"error_code": code, "error_message": None, "group_id": group_id, "group_state": "",
            "protocol_type": "", "protocol_data": "", "members": [], "authorized_operations": -2147483648}


def _consumer_describe_error(group_id: str, code: int) -> dict[str, Any]:
    return {"error_code": code, "error_message": None, "group_id": group_id, "group_state": "", "group_epoch": -1,
            "assignment_epoch": -1, "assignor_name": "", "members": [], "authorized_operations": -2147483648}


def _share_describe_error(group_id: str, code: int) -> dict[str, Any]:
    return {"error_code": code, "error_message": None, "group_id": group_id, "group_state": "", "group_epoch": -1,
            "assignment_epoch": -1, "assignor_name": "", "members": [], "authorized_operations": -2147483648}


def _delete_error(group_id: str, code: int) -> dict[str, Any]:
    return {"group_id": group_id, "error_code": code}


def _offset_fetch_error(group_id: str, code: int) -> dict[str, Any]:
    return {"group_id": group_id, "topics": [], "error_code": code}
