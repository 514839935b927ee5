"""GroupService: the asyncio edge around the pure group coordinator.

The coordinator (:mod:`broker.group.coordinator`) is a state machine that
takes ``(now, request)`` and returns effects: replies (possibly for other,
parked requests), writes to ``__consumer_offsets``, and timer changes.  This
edge turns each request into a future, appends each write as one batch and
reports its outcome to the coordinator (which then releases the replies that
waited on it, or answers them with the mapped error), keeps one wheel timer
armed at the coordinator's next deadline, and replays the offsets topic at
startup.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from broker.group.config import GroupConfig
from broker.group.coordinator import Effects, GroupCoordinator, Write
from broker.internal_topics import OFFSETS_TOPIC
from broker.log.errors import LogError
from protocol.error_codes import ErrorCode
from protocol.errors import ProtocolError
from protocol.primitives import Obj
from protocol.records import CorruptRecordError, decode_batch, encode_batch
from protocol.timing_wheel import TimerTask

if TYPE_CHECKING:
    from broker.apis import RequestContext
    from broker.core import BrokerCore

log = logging.getLogger("kbroker.group")


def _now_ms() -> int:
    return int(time.time() * 1000)


class GroupService:
    def __init__(self, core: BrokerCore) -> None:
        self.core = core
        c = core.config
        self.config = GroupConfig(
            min_session_timeout_ms=c.group_min_session_timeout_ms,
            max_session_timeout_ms=c.group_max_session_timeout_ms,
            initial_rebalance_delay_ms=c.group_initial_rebalance_delay_ms,
            max_size=c.group_max_size,
            offsets_retention_ms=c.offsets_retention_minutes * 60_000,
            offset_metadata_max_bytes=c.offset_metadata_max_bytes,
            offsets_topic_num_partitions=self._offsets_partitions(),
            offsets_retention_check_interval_ms=c.offsets_retention_check_interval_ms,
        )
        self.coordinator = GroupCoordinator(self.config, now_ms=_now_ms(), partition_count=self._partition_count)
        self._tokens = itertools.count(1)
        self._pending: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._timer: TimerTask | None = None
        self._timer_deadline: int | None = None
        self._closed = False
        self._generations: dict[str, tuple[int, str, float]] = {}

    def _partition_count(self, topic: str) -> int | None:
        info = self.core.logs.topic(topic)
        return None if info is None else info.partitions

    # -- startup ---------------------------------------------------------------------

    def _offsets_partitions(self) -> int:
        """The partition count group placement uses: the existing topic's, as in Kafka.

        ``offsets.topic.num.partitions`` only sizes the topic when it is created; once it exists
        its real count governs ``partitionFor`` and loading, whatever the setting says now.
        """
        configured = self.core.config.offsets_topic_num_partitions
        info = self.core.logs.topic(OFFSETS_TOPIC)
        if info is None:
            return configured
        if info.partitions != configured:
            log.warning("%s has %d partitions; offsets.topic.num.partitions=%d applies only when the "
                        "topic is created, so groups stay placed over %d partitions",
                        OFFSETS_TOPIC, info.partitions, configured, info.partitions)
        return info.partitions

    def load(self) -> None:
        """Replay ``__consumer_offsets`` into the coordinator.

        A record that does not decode (a batch with a bad CRC or bad records, a key or value of
        no known shape) is logged with its partition and offset, counted in
        ``kbroker_offsets_load_errors_total`` and skipped: one bad record never stops startup.
        """
        logs = self.core.logs
        started = time.perf_counter()
        records = errors = 0
        for partition in range(self.config.offsets_topic_num_partitions):
            plog = logs.get_log(OFFSETS_TOPIC, partition)
            start = plog.log_start_offset
            for header, data in plog.iter_batches(start):
                if header.is_control:
                    continue
                try:
                    _, batch = decode_batch(data)
                except CorruptRecordError as exc:
                    errors += self._load_error(partition, header.base_offset, exc, "batch")
                    continue
                for rec in batch:
                    if rec.offset < start:
                        continue
                    try:
                        if rec.key is None:
                            raise ProtocolError("record without a key")
                        self.coordinator.load(partition, rec.key, rec.value)
                    except Exception as exc:  # any undecodable record: skip it, never stop startup
                        errors += self._load_error(partition, rec.offset, exc, "record")
                        continue
                    records += 1
        self._apply(self.coordinator.complete_load(_now_ms()))
        log.info("loaded %d __consumer_offsets records in %.3fs%s", records, time.perf_counter() - started,
                 f" ({errors} unreadable, skipped)" if errors else "")

    def _load_error(self, partition: int, offset: int, exc: Exception, what: str) -> int:
        log.error("skipping unreadable %s at %s-%d offset %d: %s: %s", what, OFFSETS_TOPIC, partition, offset,
                  type(exc).__name__, exc)
        self.core.metrics.offsets_load_errors.inc()
        return 1

    # -- request entry points -----------------------------------------------------------

    def handle(self, ctx: RequestContext, req: Obj) -> dict[str, Any] | asyncio.Future[dict[str, Any]]:
        """Any group API request: the response now, or a future when the coordinator parks it."""
        token = next(self._tokens)
        self._current, self._own = token, None
        try:
            effects = self.coordinator.handle(ctx.header.api_key, _now_ms(), ctx.version, req, token,
                                              client_id=ctx.client_id, client_host=ctx.client_host)
            if ctx.header.api_key in (11, 13, 14):
                self._track_rebalances(req.get("group_id"))
            self._apply(effects)
            own = self._own
        finally:
            self._current, self._own = None, None
        if own is not None:
            return own
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[token] = future
        return future

    # -- effects --------------------------------------------------------------------

    #: the token of the request being handled, and its reply once released (it has no future yet)
    _current: int | None = None
    _own: dict[str, Any] | None = None

    def _apply(self, effects: Effects) -> None:
        """Release the replies, then start the writes (whose completion may release more)."""
        if self._closed:
            return
        for token, body in effects.replies:
            if token == self._current:
                self._own = body
                continue
            future = self._pending.pop(token, None)
            if future is not None and not future.done():
                future.set_result(body)
        if effects.removed_groups:
            self._forget_groups(effects.removed_groups)
        for write in effects.writes:
            self._start_write(write)
        self._rearm()

    def _start_write(self, write: Write) -> None:
        """Append one coordinator write and report its outcome.

        A single broker's write is durable once appended, so it completes at once; the
        coordinator's contract also allows completing it later (``complete_write`` from a
        replication callback), with several writes in flight, in order per partition.
        """
        try:
            self._append(write.partition, write.records)
        except LogError as exc:
            error: int | None = exc.error_code
        except OSError as exc:
            log.error("appending to %s-%d failed: %s", OFFSETS_TOPIC, write.partition, exc)
            error = ErrorCode.KAFKA_STORAGE_ERROR
        except Exception:
            log.exception("appending to %s-%d failed", OFFSETS_TOPIC, write.partition)
            error = ErrorCode.UNKNOWN_SERVER_ERROR
        else:
            error = None
        self.complete_write(write.write_id, error)

    def complete_write(self, write_id: int, error: int | None) -> None:
        """Report a write's outcome (``error``: the append's Kafka error code, None = durable)."""
        now = _now_ms()
        if error is None:
            effects = self.coordinator.write_committed(now, write_id)
        else:
            effects = self.coordinator.write_failed(now, write_id, error)
        self._apply(effects)

    def _append(self, partition: int, records: list[tuple[bytes, bytes | None]]) -> None:
        now = _now_ms()
        batch = encode_batch([(key, value, [], now) for key, value in records])
        plog = self.core.logs.get_log(OFFSETS_TOPIC, partition)
        plog.append(bytearray(batch))
        self.core.replica_manager.on_internal_append(OFFSETS_TOPIC, partition)

    def _forget_groups(self, group_ids: Iterable[str]) -> None:
        """Groups that no longer exist (deleted, or expired Empty): drop their rebalance tracking."""
        for group_id in group_ids:
            self._generations.pop(group_id, None)

    def _track_rebalances(self, only: str | None = None) -> None:
        """Count generations that completed since the last look (for the rebalance metrics).

        ``only``: look at that one group (a Join/Sync/Leave changes only its own group; scanning
        every group on each of those requests made them O(groups)).  Timers and the periodic
        maintenance still scan all groups.
        """
        metrics = self.core.metrics
        now = time.monotonic()
        seen = self._generations
        groups = self.coordinator.groups
        if only is not None:
            group = groups.get(only)
            if group is None:
                seen.pop(only, None)
            items: Any = () if group is None else ((only, group),)
        else:
            items = groups.items()
        for group_id, group in items:
            state = group.state.value
            previous = seen.get(group_id)
            if state == "PreparingRebalance" and (previous is None or previous[1] != "PreparingRebalance"):
                seen[group_id] = (group.generation_id, state, now)
            elif previous is not None and group.generation_id != previous[0] and state != "PreparingRebalance":
                metrics.rebalances.inc()
                if previous[1] == "PreparingRebalance":
                    metrics.rebalance_seconds.observe(now - previous[2])
                seen[group_id] = (group.generation_id, state, now)
            elif previous is None:
                seen[group_id] = (group.generation_id, state, now)

    def _rearm(self) -> None:
        if self._closed:
            return
        deadline = self.coordinator.next_deadline()
        if deadline == self._timer_deadline and self._timer is not None and not self._timer.cancelled:
            return
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._timer_deadline = deadline
        if deadline is not None:
            timer = self.core.timer
            # the wheel runs on monotonic time; the coordinator on wall-clock time
            delay = max(0, deadline - _now_ms())
            self._timer = timer.call_at_ms(timer.now_ms() + delay, self._on_timer)

    def _on_timer(self) -> None:
        self._timer = None
        self._timer_deadline = None
        effects = self.coordinator.poll(_now_ms())
        self._track_rebalances()
        self._apply(effects)

    def close(self) -> None:
        self._closed = True
        if self._timer is not None:
            self._timer.cancel()
        for future in self._pending.values():
            if not future.done():
                future.cancel()
        self._pending.clear()

    # -- metrics ----------------------------------------------------------------------

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
        coordinator = self.coordinator
        group_ids = list(dict.fromkeys([*coordinator.groups, *coordinator.offsets]))
        for n, group_id in enumerate(group_ids):
            group = coordinator.groups.get(group_id)
            state = "Empty" if group is None else getattr(group.state, "value", str(group.state))
            counts[state] = counts.get(state, 0) + 1
            if n >= max_groups:
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
