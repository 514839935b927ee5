"""GroupService: the asyncio edge around the pure group coordinator, one shard per offsets partition.

Group G belongs to partition ``abs(hashCode(G)) % partitions`` of
``__consumer_offsets`` and is coordinated by that partition's leader.  This
broker keeps one :class:`~broker.group.coordinator.GroupCoordinator` *shard*
per partition it leads (Kafka's ``GroupCoordinatorShard``):

* on becoming leader of partition p it replays p's log into a new shard
  (requests for its groups answer COORDINATOR_LOAD_IN_PROGRESS meanwhile);
* on losing it, the shard is dropped and its parked requests answer
  NOT_COORDINATOR; requests for groups of partitions it does not lead answer
  NOT_COORDINATOR, so clients look the coordinator up again;
* a shard's records are appended to its partition through the replica manager
  and the replies that depend on them are held until the records are
  replicated (acks=all) — Kafka's CoordinatorRuntime: a write yields records
  and a response, and the response waits for the records to commit.  A failed
  write answers its requests with the mapped coordinator error.

Requests naming several groups (DescribeGroups, DeleteGroups, OffsetFetch v8+)
are split by shard and their answers merged; ListGroups asks every shard.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from broker.group.config import GroupConfig
from broker.group.coordinator import GroupCoordinator
from broker.group.partitioning import coordinator_partition
from protocol.api import ApiKey
from protocol.error_codes import ErrorCode
from protocol.primitives import Obj
from protocol.records import decode_record_set, encode_batch
from protocol.timing_wheel import TimerTask

if TYPE_CHECKING:
    from broker.apis import RequestContext
    from broker.config import BrokerConfig
    from broker.metrics import BrokerMetrics
    from broker.replica_manager import ReplicaManager
    from protocol.timer_service import WheelTimer

log = logging.getLogger("kbroker.group")

E = ErrorCode
OFFSETS_TOPIC = "__consumer_offsets"
#: How long a coordinator write may wait for replication before its requests fail.
WRITE_TIMEOUT_MS = 30_000
_LOAD_CHUNK = 4 << 20

#: Append error -> what a coordinator write answers (Kafka's GroupMetadataManager mapping).
_WRITE_ERRORS = {
    E.UNKNOWN_TOPIC_OR_PARTITION: E.COORDINATOR_NOT_AVAILABLE,
    E.NOT_ENOUGH_REPLICAS: E.COORDINATOR_NOT_AVAILABLE,
    E.NOT_ENOUGH_REPLICAS_AFTER_APPEND: E.COORDINATOR_NOT_AVAILABLE,
    E.REQUEST_TIMED_OUT: E.COORDINATOR_NOT_AVAILABLE,
    E.NOT_LEADER_OR_FOLLOWER: E.NOT_COORDINATOR,
    E.KAFKA_STORAGE_ERROR: E.NOT_COORDINATOR,
    E.MESSAGE_TOO_LARGE: E.INVALID_COMMIT_OFFSET_SIZE,
    E.RECORD_LIST_TOO_LARGE: E.INVALID_COMMIT_OFFSET_SIZE,
}


def _now_ms() -> int:
    return int(time.time() * 1000)


@dataclass(slots=True)
class _Shard:
    partition: int
    epoch: int
    coordinator: GroupCoordinator | None = None
    loading: bool = True
    timer: TimerTask | None = None
    deadline: int | None = None
    tokens: set[int] = field(default_factory=set)
    load_task: asyncio.Task[None] | None = None


class GroupService:
    def __init__(self, *, config: BrokerConfig, replica: ReplicaManager, metrics: BrokerMetrics, timer: WheelTimer,
                 partition_count: Callable[[str], int | None]) -> None:
        self.broker_config = config
        self.replica = replica
        self.metrics = metrics
        self.timer = timer
        self._topic_partitions = partition_count
        self.shards: dict[int, _Shard] = {}
        self._tokens = itertools.count(1)
        self._pending: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._closed = False
        self._generations: dict[str, tuple[int, str, float]] = {}
        self._write_tail: dict[int, asyncio.Future[Any]] = {}
        replica.add_leadership_listener(self._on_leadership)

    # -- placement -------------------------------------------------------------------
    @property
    def num_partitions(self) -> int:
        """The offsets topic's real partition count once it exists (the setting only creates it)."""
        count = self._topic_partitions(OFFSETS_TOPIC)
        return count if count else self.broker_config.offsets_topic_num_partitions

    def partition_for(self, group_id: str) -> int:
        return coordinator_partition(group_id, self.num_partitions)

    def _group_config(self) -> GroupConfig:
        c = self.broker_config
        return GroupConfig(
            min_session_timeout_ms=c.group_min_session_timeout_ms,
            max_session_timeout_ms=c.group_max_session_timeout_ms,
            initial_rebalance_delay_ms=c.group_initial_rebalance_delay_ms,
            max_size=c.group_max_size,
            offsets_retention_ms=c.offsets_retention_minutes * 60_000,
            offset_metadata_max_bytes=c.offset_metadata_max_bytes,
            offsets_topic_num_partitions=self.num_partitions,
            offsets_retention_check_interval_ms=c.offsets_retention_check_interval_ms,
        )

    # -- leadership ------------------------------------------------------------------
    def _on_leadership(self, topic: str, partition: int, is_leader: bool, epoch: int) -> None:
        if topic != OFFSETS_TOPIC or self._closed:
            return
        current = self.shards.get(partition)
        if is_leader:
            if current is not None and current.epoch == epoch:
                return
            if current is not None:
                self._unload(current)
            shard = _Shard(partition, epoch)
            self.shards[partition] = shard
            shard.load_task = asyncio.ensure_future(self._load(shard))
        elif current is not None:
            self._unload(current)

    async def _load(self, shard: _Shard) -> None:
        """Replay the partition into a new shard, a chunk at a time (the loop keeps serving meanwhile)."""
        started = time.perf_counter()
        coordinator = GroupCoordinator(self._group_config(), now_ms=_now_ms(),
                                       partition_count=self._topic_partitions)
        records = 0
        try:
            plog = self.replica.partitions[(OFFSETS_TOPIC, shard.partition)].log
            offset, end = plog.log_start_offset, plog.log_end_offset
            while offset < end:
                data = plog.read(offset, _LOAD_CHUNK, True, max_offset=end).to_bytes()
                if not data:
                    break
                last = offset
                for rec in decode_record_set(data):
                    if rec.offset < offset:
                        continue
                    if rec.key is not None:
                        coordinator.load(shard.partition, rec.key, rec.value)
                        records += 1
                    last = rec.offset
                if last + 1 <= offset:
                    break
                offset = last + 1
                await asyncio.sleep(0)
                if self.shards.get(shard.partition) is not shard:
                    return  # leadership moved on while loading
        except Exception:
            log.exception("loading %s-%d failed", OFFSETS_TOPIC, shard.partition)
            if self.shards.get(shard.partition) is shard:
                del self.shards[shard.partition]
            return
        if self.shards.get(shard.partition) is not shard:
            return
        shard.coordinator = coordinator
        shard.loading = False
        self._apply(shard, coordinator.complete_load(_now_ms()))
        log.log(logging.INFO if records else logging.DEBUG, "coordinator for %s-%d (epoch %d): loaded %d records "
                "in %.3fs", OFFSETS_TOPIC, shard.partition, shard.epoch, records, time.perf_counter() - started)

    def _unload(self, shard: _Shard) -> None:
        if self.shards.get(shard.partition) is shard:
            del self.shards[shard.partition]
        if shard.load_task is not None and not shard.load_task.done():
            shard.load_task.cancel()
        if shard.timer is not None:
            shard.timer.cancel()
        for token in shard.tokens:
            future = self._pending.pop(token, None)
            if future is not None and not future.done():
                future.set_result({"__error__": E.NOT_COORDINATOR})
        if shard.coordinator is not None:
            for group_id in shard.coordinator.groups:
                self._generations.pop(group_id, None)
            log.info("no longer the coordinator for %s-%d", OFFSETS_TOPIC, shard.partition)

    # -- requests --------------------------------------------------------------------
    def handle(self, ctx: RequestContext, req: Obj) -> Any:
        key, version = ctx.header.api_key, ctx.version
        if key == ApiKey.LIST_GROUPS:
            return self._list_groups(ctx, req)
        if key == ApiKey.DESCRIBE_GROUPS:
            return self._scatter(ctx, req, "groups", "groups", _describe_error)
        if key == ApiKey.DELETE_GROUPS:
            return self._scatter(ctx, req, "groups_names", "results", _delete_error)
        if key == ApiKey.OFFSET_FETCH and version >= 8:
            return self._scatter(ctx, req, "groups", "groups", _offset_fetch_error, field="group_id")
        shard, code = self._shard_for(req.group_id)
        if shard is None:
            from broker.apis import error_response

            return error_response(key, version, req, code)
        return self._run(shard, ctx, req)

    def _shard_for(self, group_id: str) -> tuple[_Shard | None, int]:
        shard = self.shards.get(self.partition_for(group_id))
        if shard is None:
            return None, E.NOT_COORDINATOR
        if shard.loading or shard.coordinator is None:
            return None, E.COORDINATOR_LOAD_IN_PROGRESS
        return shard, E.NONE

    def _run(self, shard: _Shard, ctx: RequestContext, req: Any) -> Any:
        """Run one request on a shard: the response now, or a future when it waits (parked or writing)."""
        assert shard.coordinator is not None
        token = next(self._tokens)
        key = ctx.header.api_key
        effects = shard.coordinator.handle(key, _now_ms(), ctx.version, req, token,
                                           client_id=ctx.client_id, client_host=ctx.client_host)
        if key in (ApiKey.JOIN_GROUP, ApiKey.SYNC_GROUP, ApiKey.LEAVE_GROUP):
            self._track_rebalances(shard, req.get("group_id"))
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[token] = future
        shard.tokens.add(token)
        self._apply(shard, effects)
        if future.done() and not future.cancelled():
            body = future.result()
            if "__error__" not in body:
                return body
        return self._finish(ctx, req, future)

    async def _finish(self, ctx: RequestContext, req: Any, future: asyncio.Future[dict[str, Any]]) -> Any:
        body = await future
        code = body.get("__error__") if isinstance(body, dict) else None
        if code is not None:
            from broker.apis import error_response

            return error_response(ctx.header.api_key, ctx.version, req, code)
        return body

    def _scatter(self, ctx: RequestContext, req: Obj, request_field: str, response_field: str,
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
            subs.append((keys, self._run(self.shards[partition], ctx, sub)))

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
            body = dict(template) if template is not None else {"throttle_time_ms": 0, "error_code": 0}
            body[response_field] = [answers[i] for i in range(len(items))]
            return Obj(body)

        if all(not isinstance(r, asyncio.Future) and not asyncio.iscoroutine(r) for _, r in subs):
            return merge([r for _, r in subs])

        async def gather() -> Any:
            return merge([await r if asyncio.iscoroutine(r) or isinstance(r, asyncio.Future) else r
                          for _, r in subs])

        return gather()

    def _list_groups(self, ctx: RequestContext, req: Obj) -> Any:
        groups: list[Any] = []
        error = E.NONE
        for shard in list(self.shards.values()):
            if shard.loading or shard.coordinator is None:
                error = E.COORDINATOR_LOAD_IN_PROGRESS
                continue
            result = self._run(shard, ctx, req)
            if isinstance(result, dict):
                groups.extend(result["groups"])
        return Obj(throttle_time_ms=0, error_code=error, groups=groups)

    # -- effects ---------------------------------------------------------------------
    def _apply(self, shard: _Shard, effects: Any) -> None:
        """Release replies at once, or after the effects' records are replicated."""
        replies = list(effects.replies)
        if effects.records:
            self._write(shard, effects.records, replies)
        else:
            self._release(shard, replies, E.NONE)
        self._rearm(shard)

    def _release(self, shard: _Shard, replies: list[tuple[Any, dict[str, Any]]], write_error: int) -> None:
        for token, body in replies:
            shard.tokens.discard(token)
            future = self._pending.pop(token, None)
            if future is None or future.done():
                continue
            if write_error != E.NONE:
                body = _with_error(body, write_error)
            future.set_result(body)

    def _write(self, shard: _Shard, records: list[tuple[int, bytes, bytes | None]],
               replies: list[tuple[Any, dict[str, Any]]]) -> None:
        now = _now_ms()
        batch = encode_batch([(key, value, [], now) for _, key, value in records])
        pending = self.replica.append_to_leader(OFFSETS_TOPIC, shard.partition, batch, WRITE_TIMEOUT_MS)
        previous = self._write_tail.get(shard.partition)

        async def complete() -> None:
            code, _ = await pending
            if previous is not None and not previous.done():
                await asyncio.shield(previous)  # answers leave in the order the writes were made
            mapped = E.NONE if code == E.NONE else _WRITE_ERRORS.get(code, E.COORDINATOR_NOT_AVAILABLE)
            if mapped != E.NONE:
                log.warning("write to %s-%d failed (%s): answering %s", OFFSETS_TOPIC, shard.partition,
                            _name(code), _name(mapped))
            self._release(shard, replies, mapped)

        task = asyncio.ensure_future(complete())
        self._write_tail[shard.partition] = task

    def _track_rebalances(self, shard: _Shard, group_id: str | None = None) -> None:
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

    def _rearm(self, shard: _Shard) -> None:
        if self._closed or shard.coordinator is None or self.shards.get(shard.partition) is not shard:
            return
        deadline = shard.coordinator.next_deadline()
        if deadline == shard.deadline and shard.timer is not None and not shard.timer.cancelled:
            return
        if shard.timer is not None:
            shard.timer.cancel()
            shard.timer = None
        shard.deadline = deadline
        if deadline is not None:
            # the wheel runs on monotonic time; the coordinator on wall-clock time
            delay = max(0, deadline - _now_ms())
            shard.timer = self.timer.call_at_ms(self.timer.now_ms() + delay, lambda: self._on_timer(shard))

    def _on_timer(self, shard: _Shard) -> None:
        shard.timer = None
        shard.deadline = None
        if shard.coordinator is None or self.shards.get(shard.partition) is not shard:
            return
        effects = shard.coordinator.poll(_now_ms())
        self._track_rebalances(shard)
        self._apply(shard, effects)

    def close(self) -> None:
        self._closed = True
        for shard in list(self.shards.values()):
            if shard.timer is not None:
                shard.timer.cancel()
            if shard.load_task is not None:
                shard.load_task.cancel()
        for future in self._pending.values():
            if not future.done():
                future.cancel()
        self._pending.clear()

    # -- inspection ------------------------------------------------------------------
    def coordinators(self) -> Iterator[GroupCoordinator]:
        for shard in self.shards.values():
            if shard.coordinator is not None:
                yield shard.coordinator

    def collect_metrics(self, end_offsets: dict[tuple[str, int], int], max_groups: int) -> Iterator[Any]:
        from prometheus_client.core import GaugeMetricFamily

        by_state = GaugeMetricFamily("kbroker_groups", "Consumer groups by state", labels=["state"])
        members = GaugeMetricFamily("kbroker_group_members", "Members per group", labels=["group"])
        generation = GaugeMetricFamily("kbroker_group_generation", "Current generation id per group",
                                       labels=["group"])
        committed = GaugeMetricFamily("kbroker_group_committed_offset", "Committed offset",
                                      labels=["group", "topic", "partition"])
        lag = GaugeMetricFamily("kbroker_group_lag", "Consumer lag: log end offset minus committed offset",
                                labels=["group", "topic", "partition"])
        counts: dict[str, int] = {}
        n = 0
        for coordinator in self.coordinators():
            for group_id in list(dict.fromkeys([*coordinator.groups, *coordinator.offsets])):
                group = coordinator.groups.get(group_id)
                state = "Empty" if group is None else getattr(group.state, "value", str(group.state))
                counts[state] = counts.get(state, 0) + 1
                n += 1
                if n > max_groups:
                    continue
                members.add_metric([group_id], 0 if group is None else len(group.members))
                generation.add_metric([group_id], 0 if group is None else group.generation_id)
                for (topic, partition), entry in coordinator.offsets.get(group_id, {}).items():
                    offset = entry.offset
                    labels = [group_id, topic, str(partition)]
                    committed.add_metric(labels, offset)
                    end = end_offsets.get((topic, partition))
                    if end is not None:
                        lag.add_metric(labels, max(0, end - offset))
        for state in ("Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead"):
            by_state.add_metric([state], counts.get(state, 0))
        yield by_state
        yield members
        yield generation
        yield committed
        yield lag


def _name(code: int) -> str:
    try:
        return ErrorCode(code).name
    except ValueError:
        return str(code)


def _with_error(body: dict[str, Any], code: int) -> dict[str, Any]:
    """A reply whose every error field says ``code`` (its write did not make it)."""
    from broker.apis import _fill_errors

    out = Obj(body)
    _fill_errors(out, code)
    return out


def _describe_error(group_id: str, code: int) -> dict[str, Any]:
    return {"error_code": code, "error_message": None, "group_id": group_id, "group_state": "",
            "protocol_type": "", "protocol_data": "", "members": [], "authorized_operations": -2147483648}


def _delete_error(group_id: str, code: int) -> dict[str, Any]:
    return {"group_id": group_id, "error_code": code}


def _offset_fetch_error(group_id: str, code: int) -> dict[str, Any]:
    return {"group_id": group_id, "topics": [], "error_code": code}
