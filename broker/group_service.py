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
* a shard's writes are appended to its partition through the replica manager
  and reported back to the coordinator once replicated (acks=all), in order —
  Kafka's CoordinatorRuntime: a write yields records and a response, and the
  response waits for the records to commit; a failed write changes nothing and
  the coordinator answers the requests that waited with the mapped error.

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
from broker.group.coordinator import Effects, GroupCoordinator, Write
from broker.group.partitioning import coordinator_partition
from broker.internal_topics import OFFSETS_TOPIC
from protocol.api import ApiKey
from protocol.error_codes import ErrorCode
from protocol.errors import ProtocolError
from protocol.primitives import Obj
from protocol.records import CorruptRecordError, decode_batch, encode_batch
from protocol.timing_wheel import TimerTask

if TYPE_CHECKING:
    from broker.apis import RequestContext
    from broker.config import BrokerConfig
    from broker.metrics import BrokerMetrics
    from broker.replica_manager import ReplicaManager
    from protocol.timer_service import WheelTimer

log = logging.getLogger("kbroker.group")

E = ErrorCode
#: How long a coordinator write may wait for replication before its requests fail.
WRITE_TIMEOUT_MS = 30_000
#: Batches replayed between two yields to the event loop while a shard loads.
_LOAD_BATCHES_PER_STEP = 200


#: API keys as plain ints for the request path (an IntEnum member lookup costs ~10 int compares)
_LIST_GROUPS, _DESCRIBE_GROUPS, _DELETE_GROUPS = int(ApiKey.LIST_GROUPS), int(ApiKey.DESCRIBE_GROUPS), \
    int(ApiKey.DELETE_GROUPS)
_MULTI_GROUP = frozenset({_LIST_GROUPS, _DESCRIBE_GROUPS, _DELETE_GROUPS, int(ApiKey.OFFSET_FETCH)})
_MEMBERSHIP = frozenset({int(ApiKey.JOIN_GROUP), int(ApiKey.SYNC_GROUP), int(ApiKey.LEAVE_GROUP)})


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
        self._warned_partitions = False
        replica.add_leadership_listener(self._on_leadership)

    # -- placement -------------------------------------------------------------------
    @property
    def num_partitions(self) -> int:
        """The partition count group placement uses: the existing topic's, as in Kafka.

        ``offsets.topic.num.partitions`` only sizes the topic when it is created; once it exists
        its real count governs ``partitionFor`` and loading, whatever the setting says now.
        """
        configured = self.broker_config.offsets_topic_num_partitions
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
        """Replay the partition into a new shard, some batches at a time (the loop keeps serving meanwhile).

        A record that does not decode (a batch with a bad CRC or bad records, a key or value of no
        known shape) is logged with its partition and offset, counted in
        ``kbroker_offsets_load_errors_total`` and skipped: one bad record never stops a load.
        """
        started = time.perf_counter()
        coordinator = GroupCoordinator(self._group_config(), now_ms=_now_ms(),
                                       partition_count=self._topic_partitions)
        records = errors = 0
        try:
            plog = self.replica.partitions[(OFFSETS_TOPIC, shard.partition)].log
            start, end = plog.log_start_offset, plog.log_end_offset
            for n, (header, data) in enumerate(plog.iter_batches(start)):
                if header.base_offset >= end:
                    break
                if n % _LOAD_BATCHES_PER_STEP == _LOAD_BATCHES_PER_STEP - 1:
                    await asyncio.sleep(0)
                    if self.shards.get(shard.partition) is not shard:
                        return  # leadership moved on while loading
                if header.is_control:
                    continue
                try:
                    _, batch = decode_batch(data)
                except CorruptRecordError as exc:
                    errors += self._load_error(shard.partition, header.base_offset, exc, "batch")
                    continue
                for rec in batch:
                    if rec.offset < start:
                        continue
                    try:
                        if rec.key is None:
                            raise ProtocolError("record without a key")
                        coordinator.load(shard.partition, rec.key, rec.value)
                    except Exception as exc:  # any undecodable record: skip it, never stop the load
                        errors += self._load_error(shard.partition, rec.offset, exc, "record")
                        continue
                    records += 1
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
        log.log(logging.INFO if records or errors else logging.DEBUG,
                "coordinator for %s-%d (epoch %d): loaded %d records in %.3fs%s", OFFSETS_TOPIC, shard.partition,
                shard.epoch, records, time.perf_counter() - started,
                f" ({errors} unreadable, skipped)" if errors else "")

    def _load_error(self, partition: int, offset: int, exc: Exception, what: str) -> int:
        log.error("skipping unreadable %s at %s-%d offset %d: %s: %s", what, OFFSETS_TOPIC, partition, offset,
                  type(exc).__name__, exc)
        self.metrics.offsets_load_errors.inc()
        return 1

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
        header = ctx.header
        key, version = header.api_key, header.api_version
        if key in _MULTI_GROUP:
            if key == _LIST_GROUPS:
                return self._list_groups(ctx, req)
            if key == _DESCRIBE_GROUPS:
                return self._scatter(ctx, req, "groups", "groups", _describe_error)
            if key == _DELETE_GROUPS:
                return self._scatter(ctx, req, "groups_names", "results", _delete_error)
            if version >= 8:  # OffsetFetch for several groups
                return self._scatter(ctx, req, "groups", "groups", _offset_fetch_error, field="group_id")
        shard, code = self._shard_for(req["group_id"])
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
        header = ctx.header
        key = header.api_key
        effects = shard.coordinator.handle(key, _now_ms(), header.api_version, req, token,
                                           client_id=header.client_id or "", client_host=ctx.client_host)
        if key in _MEMBERSHIP:
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
    def _apply(self, shard: _Shard, effects: Effects) -> None:
        """Release the replies, then start the writes (whose completion may release more)."""
        if self._closed:
            return
        for token, body in effects.replies:
            shard.tokens.discard(token)
            future = self._pending.pop(token, None)
            if future is not None and not future.done():
                future.set_result(body)
        if effects.removed_groups:
            for group_id in effects.removed_groups:
                self._generations.pop(group_id, None)
        for write in effects.writes:
            self._start_write(shard, write)
        self._rearm(shard)

    def _start_write(self, shard: _Shard, write: Write) -> None:
        """Append one coordinator write to the shard's partition; report it once replicated, in order."""
        now = _now_ms()
        try:
            batch = encode_batch([(key, value, [], now) for key, value in write.records])
            pending = self.replica.append_to_leader(OFFSETS_TOPIC, write.partition, batch, WRITE_TIMEOUT_MS)
        except Exception:
            log.exception("appending to %s-%d failed", OFFSETS_TOPIC, write.partition)
            done: asyncio.Future[tuple[int, int]] = asyncio.get_running_loop().create_future()
            done.set_result((E.UNKNOWN_SERVER_ERROR, -1))
            pending = done
        previous = self._write_tail.get(write.partition)

        async def complete() -> None:
            code, _ = await pending
            if previous is not None and not previous.done():
                await asyncio.shield(previous)  # writes complete in the order they were made
            if self.shards.get(shard.partition) is not shard or shard.coordinator is None:
                return  # the shard is gone (its requests were answered NOT_COORDINATOR)
            now = _now_ms()
            if code == E.NONE:
                effects = shard.coordinator.write_committed(now, write.write_id)
            else:
                log.warning("write to %s-%d failed: %s", OFFSETS_TOPIC, write.partition, _name(code))
                effects = shard.coordinator.write_failed(now, write.write_id, code)
            self._apply(shard, effects)

        task = asyncio.ensure_future(complete())
        self._write_tail[write.partition] = task
        task.add_done_callback(lambda t: self._write_tail.pop(write.partition, None)
                               if self._write_tail.get(write.partition) is t else None)

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


def _describe_error(group_id: str, code: int) -> dict[str, Any]:
    return {"error_code": code, "error_message": None, "group_id": group_id, "group_state": "",
            "protocol_type": "", "protocol_data": "", "members": [], "authorized_operations": -2147483648}


def _delete_error(group_id: str, code: int) -> dict[str, Any]:
    return {"group_id": group_id, "error_code": code}


def _offset_fetch_error(group_id: str, code: int) -> dict[str, Any]:
    return {"group_id": group_id, "topics": [], "error_code": code}
