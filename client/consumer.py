"""The asyncio Consumer: subscription or manual assignment, positions, polling, commits.

Owns application positions (next offset handed to the caller), the subscription state,
offset resets (``auto_offset_reset``), commits (explicit, on revoke, periodic auto-commit on
the timing wheel) and the rebalance listener.  Fetching is :mod:`client.fetcher`, group
membership :mod:`client.coordinator` — the classic protocol (``group_protocol="classic"``, the
default) or KIP-848 (``group_protocol="consumer"``: the broker assigns, ``pattern`` is a regular
expression the broker evaluates) —, the wire :mod:`client.net`.  :meth:`Consumer.group_metadata`
is what a transactional producer sends with the consumer's offsets.

A consumer belongs to one task at a time: using it from another thread, or from a second task
while a call is in progress, raises :class:`~client.errors.ConcurrentAccessError`.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import re
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from typing import Any

from client.cluster import ClusterMetadata
from client.config import ConsumerConfig, build_config
from client.coordinator import ConsumerGroupCoordinator, GroupCoordinator, find_coordinator, is_group_error
from client.errors import (
    CommitFailedError,
    IllegalStateError,
    KafkaConnectionError,
    KafkaError,
    KafkaTimeoutError,
    NoOffsetForPartitionError,
)
from client.fetcher import Fetcher, RecordSet
from client.net import NetworkClient
from client.offsets import EARLIEST, LATEST, commit, fetch_committed, list_offsets, normalize_offsets
from client.ownership import Ownership
from client.types import (
    ConsumerGroupMetadata,
    ConsumerRebalanceListener,
    OffsetAndMetadata,
    OffsetAndTimestamp,
    Record,
    TopicPartition,
)
from protocol.error_codes import ErrorCode
from protocol.records import next_offset_after
from protocol.timer_service import WheelTimer

log = logging.getLogger(__name__)


class Consumer:
    """``Consumer(*topics, bootstrap_servers=..., group_id=..., **config)``; use ``async with``."""

    def __init__(self, *topics: str, pattern: str | None = None,
                 listener: ConsumerRebalanceListener | None = None, **config: Any) -> None:
        self.config: ConsumerConfig = build_config(ConsumerConfig, config)
        self._initial_topics = list(topics)
        self._initial_pattern = pattern
        self._listener = listener or ConsumerRebalanceListener()
        self._subscription: set[str] = set()
        self._pattern: re.Pattern[str] | None = None
        #: group_protocol="consumer": the subscription's regular expression, evaluated by the broker
        self._regex: str | None = None
        self._user_assignment: set[TopicPartition] | None = None
        self._assignment: set[TopicPartition] = set()
        self._positions: dict[TopicPartition, int | None] = {}
        self._net: NetworkClient | None = None
        self._timers: WheelTimer | None = None
        self._fetcher: Fetcher | None = None
        self._coordinator: GroupCoordinator | ConsumerGroupCoordinator | None = None
        self._auto_commit_timer: Any = None
        #: ``with self._owned():`` around every call: one thread and task at a time
        self._owned = Ownership("Consumer")
        self._started = False
        self._closed = False

    # -- lifecycle -------------------------------------------------------------------------------

    async def __aenter__(self) -> Consumer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def start(self) -> None:
        if self._started:
            return
        self._owned.bind()
        self._timers = WheelTimer()
        self._net = NetworkClient(self.config, self._timers, allow_auto_topic_creation=False)
        await self._net.start()
        self._fetcher = Fetcher(self._net, self.config, self._on_out_of_range)
        self._fetcher.start()
        self._net.add_listener(self._on_metadata)
        self._started = True
        if self.config.group_id is not None:
            edge = ConsumerGroupCoordinator if self.config.group_protocol == "consumer" else GroupCoordinator
            self._coordinator = edge(self._net, self.config, on_revoke=self._revoke, on_assign=self._assign)
            self._coordinator.start()
            if self.config.enable_auto_commit:
                self._schedule_auto_commit()
        if self._initial_topics or self._initial_pattern:
            self.subscribe(self._initial_topics, pattern=self._initial_pattern)

    async def close(self) -> None:
        if self._closed or not self._started:
            self._closed = True
            return
        self._closed = True
        if self._auto_commit_timer is not None:
            self._auto_commit_timer.cancel()
        if self._coordinator is not None:
            if self.config.enable_auto_commit and self._assignment:
                with contextlib.suppress(KafkaError):
                    await self._commit_positions(self._assignment)
            await self._coordinator.close()
        if self._fetcher is not None:
            await self._fetcher.close()
        if self._net is not None:
            await self._net.close()
        if self._timers is not None:
            self._timers.close()

    def _check(self) -> tuple[NetworkClient, Fetcher]:
        if self._closed:
            raise IllegalStateError("consumer is closed")
        if not self._started or self._net is None or self._fetcher is None:
            raise IllegalStateError("consumer is not started (use 'async with' or await start())")
        return self._net, self._fetcher

    # -- subscription ----------------------------------------------------------------------------

    def subscribe(self, topics: Iterable[str] = (), pattern: str | None = None,
                  listener: ConsumerRebalanceListener | None = None) -> None:
        with self._owned():
            net, _ = self._check()
            if self.config.group_id is None:
                raise IllegalStateError("subscribe() needs group_id; use assign() without a group")
            if self._user_assignment is not None:
                raise IllegalStateError("already using assign(); call unsubscribe() first")
            if listener is not None:
                self._listener = listener
            assert self._coordinator is not None
            if isinstance(self._coordinator, ConsumerGroupCoordinator):
                # KIP-848: topic names, or a regular expression (RE2/J, as Kafka) the broker evaluates
                self._pattern = None
                self._regex = pattern
                self._subscription = set() if pattern is not None else set(topics)
                if pattern is not None:
                    net.set_topics(None)
                else:
                    net.add_topics(self._subscription)
                net.spawn(self._refresh_quietly())
                self._coordinator.subscribe(self._subscription, pattern)
                return
            if pattern is not None:
                self._pattern = re.compile(pattern)
                net.set_topics(None)
                self._subscription = set(net.metadata.matching(self._pattern))
                net.spawn(self._refresh_quietly())
            else:
                self._pattern = None
                self._subscription = set(topics)
                net.add_topics(self._subscription)
                net.spawn(self._refresh_quietly())
            assert self._coordinator is not None
            self._coordinator.subscribe(self._subscription)

    def unsubscribe(self) -> None:
        with self._owned():
            self._check()
            for tp in list(self._assignment):
                self._drop(tp)
            self._assignment = set()
            self._subscription = set()
            self._pattern = None
            self._regex = None
            self._user_assignment = None
            if self._coordinator is not None:
                self._coordinator.subscribe(set())

    def subscription(self) -> set[str]:
        """The subscribed topics (with a broker-side regular expression: the topics assigned)."""
        if self._regex is not None:
            return {tp.topic for tp in self._assignment}
        return set(self._subscription)

    def assign(self, partitions: Iterable[TopicPartition | tuple[str, int]]) -> None:
        with self._owned():
            net, fetcher = self._check()
            if self._subscription:
                raise IllegalStateError("already subscribed; call unsubscribe() first")
            new = {TopicPartition(t, p) for t, p in partitions}
            for tp in self._assignment - new:
                self._drop(tp)
            for tp in new - self._assignment:
                self._positions[tp] = None
            self._assignment = set(new)
            self._user_assignment = set(new)
            net.add_topics({tp.topic for tp in new})
            net.spawn(self._refresh_quietly())
            fetcher.wake()

    def assignment(self) -> set[TopicPartition]:
        return set(self._assignment)

    async def _refresh_quietly(self) -> None:
        assert self._net is not None
        with contextlib.suppress(KafkaError):
            await self._net.refresh_metadata()

    def _drop(self, tp: TopicPartition) -> None:
        self._positions.pop(tp, None)
        if self._fetcher is not None:
            self._fetcher.remove(tp)

    def _on_metadata(self, old: ClusterMetadata, new: ClusterMetadata) -> None:
        if self._fetcher is not None:
            # Leaders may have become known or moved: partitions the fetcher skipped for want of a
            # leader are fetchable now (manual assignment too, not only group members).
            self._fetcher.wake()
        coord = self._coordinator
        if coord is None or self._user_assignment is not None:
            return
        if isinstance(coord, ConsumerGroupCoordinator):
            coord.on_metadata()  # the broker follows topics and partitions; ids may be nameable now
            return
        if self._pattern is not None:
            matched = new.matching(self._pattern)
            if matched != self._subscription:
                self._subscription = set(matched)
                coord.subscribe(self._subscription)
                return
        watched = self._subscription | (coord.group_topics if coord.machine.is_leader else set())
        diff = old.diff(new, subscribed=watched)
        if old.topics and diff.partition_changes:
            coord.request_rejoin(f"partition count changed: {dict(diff.partition_changes)}")

    # -- rebalance callbacks ---------------------------------------------------------------------

    async def _revoke(self, partitions: set[TopicPartition], lost: bool) -> None:
        if self._user_assignment is not None:
            return  # assign() is in force: nothing of it came from the group
        if not lost and self.config.enable_auto_commit and not self._closed:  # close() committed already
            try:
                await self._commit_positions(partitions & self._assignment)
            except KafkaError as exc:
                log.warning("commit on revoke failed: %s", exc)
        cb = self._listener.on_partitions_lost if lost else self._listener.on_partitions_revoked
        await _maybe_await(cb(set(partitions)))
        for tp in partitions:
            self._drop(tp)
        self._assignment -= partitions

    async def _assign(self, added: set[TopicPartition], assignment: set[TopicPartition]) -> None:
        if self._user_assignment is not None:
            return  # assign() is in force: the group's (empty) assignment does not replace it
        for tp in self._assignment - assignment:
            self._drop(tp)
        self._assignment = set(assignment)
        for tp in added:
            self._positions[tp] = None
        assert self._net is not None
        self._net.add_topics({tp.topic for tp in assignment})
        await _maybe_await(self._listener.on_partitions_assigned(set(added)))
        if self._fetcher is not None:
            self._fetcher.wake()

    # -- positions -------------------------------------------------------------------------------

    def _on_out_of_range(self, tp: TopicPartition) -> None:
        if tp in self._positions:
            self._positions[tp] = None

    async def _update_positions(self) -> None:
        net, _ = self._check()
        missing = [tp for tp, pos in self._positions.items() if pos is None]
        if not missing:
            return
        committed: dict[TopicPartition, OffsetAndMetadata | None] = {}
        if self.config.group_id is not None and self._coordinator is not None:
            try:
                node = await self._coordinator.coordinator_node()
                # require_stable (KIP-447, as Kafka's consumer always asks): offsets of a transaction still
                # being decided are not answered with the offset before them — starting there would consume
                # again what that transaction, once committed, already did (duplicates in exactly-once
                # consume-transform-produce after a restart)
                committed = await fetch_committed(net, node, self.config.group_id, missing, require_stable=True)
            except (KafkaConnectionError, KafkaTimeoutError):
                return
            except KafkaError as exc:
                if exc.code in (ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE,
                                ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.UNSTABLE_OFFSET_COMMIT):
                    return  # asked again on the next poll
                raise
        reset: dict[TopicPartition, int] = {}
        for tp in missing:
            om = committed.get(tp)
            if om is not None and tp in self._positions and self._positions[tp] is None:
                self._set_position(tp, om.offset)
            else:
                if self.config.auto_offset_reset == "none":
                    raise NoOffsetForPartitionError(f"no committed offset for {tp} and auto_offset_reset='none'")
                reset[tp] = EARLIEST if self.config.auto_offset_reset == "earliest" else LATEST
        if reset:
            offsets = await list_offsets(net, reset, isolation_level=self.config.isolation)
            for tp, (offset, _) in offsets.items():
                if tp in self._positions and self._positions[tp] is None:
                    self._set_position(tp, offset)

    def _set_position(self, tp: TopicPartition, offset: int) -> None:
        self._positions[tp] = offset
        assert self._fetcher is not None
        self._fetcher.set_position(tp, offset)

    # -- polling ---------------------------------------------------------------------------------

    async def getmany(self, *partitions: TopicPartition, timeout_ms: int = 0,
                      max_records: int | None = None) -> dict[TopicPartition, list[Record]]:
        max_records = max_records if max_records is not None else self.config.max_poll_records
        only = set(partitions) if partitions else None
        return await self._poll(timeout_ms, lambda: self._drain(only, max_records))

    async def getmany_record_sets(self, *partitions: TopicPartition,
                                  timeout_ms: int = 0) -> dict[TopicPartition, list[RecordSet]]:
        """Like :meth:`getmany`, but the fetched record sets undecoded: per partition a list of
        ``(record_set, min_offset, aborted)`` (:data:`client.fetcher.RecordSet`) — the broker's record
        batches as received (a bytes-like view), the first offset the consumer has not returned yet
        (records below it are to be skipped) and, under ``read_committed``, the aborted transactions
        to drop (else None).  For readers that decode batches themselves, e.g. into columns with
        ``protocol.records.RecordColumns.add(record_set, min_offset, aborted=aborted)``;
        deserializers do not apply.  The positions move past the last whole batch of each set."""
        only = set(partitions) if partitions else None
        return await self._poll(timeout_ms, lambda: self._drain_record_sets(only))

    async def _poll(self, timeout_ms: int, drain: Callable[[], dict[TopicPartition, Any]]) -> dict[TopicPartition, Any]:
        with self._owned():
            net, fetcher = self._check()
            deadline = net.timers.now_ms() + timeout_ms
            while True:
                if self._coordinator is not None:
                    self._coordinator.poll()
                err = fetcher.take_error()
                if err is not None:
                    raise err
                await self._update_positions()
                data = drain()
                if data:
                    return data
                remaining = deadline - net.timers.now_ms()
                if remaining <= 0:
                    return {}
                waits = [asyncio.ensure_future(fetcher.data_ready.wait())]
                if self._coordinator is not None:
                    self._coordinator.changed.clear()
                    waits.append(asyncio.ensure_future(self._coordinator.changed.wait()))
                try:
                    await asyncio.wait(waits, timeout=min(remaining, self.config.retry_backoff_ms * 5) / 1000,
                                       return_when=asyncio.FIRST_COMPLETED)
                finally:
                    for w in waits:
                        w.cancel()

    def _drain(self, only: set[TopicPartition] | None, max_records: int | None) -> dict[TopicPartition, list[Record]]:
        assert self._fetcher is not None
        raw = self._fetcher.drain(only, max_records)
        out: dict[TopicPartition, list[Record]] = {}
        kd, vd = self.config.key_deserializer, self.config.value_deserializer
        for tp, recs in raw.items():
            pos = self._positions.get(tp)
            if pos is None or tp not in self._assignment:
                continue
            if recs[0].offset < pos:
                recs = [r for r in recs if r.offset >= pos]
                if not recs:
                    continue
            self._positions[tp] = recs[-1].offset + 1
            if kd is not None or vd is not None:
                recs = [r._replace(key=kd(r.key) if kd else r.key, value=vd(r.value) if vd else r.value)
                        for r in recs]
            out[tp] = recs
        self._follow_skipped(only)
        return out

    def _follow_skipped(self, only: set[TopicPartition] | None) -> None:
        """The fetcher stepped past batches with nothing to hand out (transaction markers, aborted
        transactions): once everything buffered before them is handed out, the position follows."""
        assert self._fetcher is not None
        for tp, end in list(self._fetcher.skipped.items()):
            if (only is not None and tp not in only) or self._fetcher.buffers.get(tp):
                continue
            del self._fetcher.skipped[tp]
            pos = self._positions.get(tp)
            if pos is not None and tp in self._assignment and pos < end:
                self._positions[tp] = end

    def _drain_record_sets(self, only: set[TopicPartition] | None) -> dict[TopicPartition, list[RecordSet]]:
        assert self._fetcher is not None
        out: dict[TopicPartition, list[RecordSet]] = {}
        for tp, sets in self._fetcher.drain_record_sets(only).items():
            pos = self._positions.get(tp)
            if pos is None or tp not in self._assignment:
                continue
            kept: list[RecordSet] = []
            for data, offset, aborted in sets:
                end = next_offset_after(data)
                if end > pos:
                    kept.append((data, max(offset, pos), aborted))
                    pos = end
            if kept:
                self._positions[tp] = pos
                out[tp] = kept
        self._follow_skipped(only)
        return out

    async def getone(self, *partitions: TopicPartition) -> Record:
        while True:
            data = await self.getmany(*partitions, timeout_ms=1000, max_records=1)
            for recs in data.values():
                return recs[0]

    def __aiter__(self) -> AsyncIterator[Record]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[Record]:
        while not self._closed:
            data = await self.getmany(timeout_ms=1000)
            for recs in data.values():
                for r in recs:
                    yield r

    # -- commits ---------------------------------------------------------------------------------

    async def commit(self, offsets: Mapping[TopicPartition, int | OffsetAndMetadata | tuple[int, str]] | None = None) -> None:
        """Commit ``offsets`` (default: current positions of all assigned partitions) and wait."""
        with self._owned():
            self._check()
            if self.config.group_id is None:
                raise IllegalStateError("commit() needs group_id")
            if offsets is None:
                await self._commit_positions(self._assignment)
            else:
                await self._commit(normalize_offsets(offsets))

    def commit_async(self, offsets: Mapping[TopicPartition, int | OffsetAndMetadata] | None = None) -> asyncio.Task[None]:
        """Start a commit and return its task (errors surface when the task is awaited)."""
        self._check()
        snapshot = (normalize_offsets(offsets) if offsets is not None
                    else {tp: OffsetAndMetadata(p, "") for tp, p in self._positions.items()
                          if p is not None and tp in self._assignment})
        return asyncio.get_running_loop().create_task(self._commit(snapshot))

    async def _commit_positions(self, tps: Iterable[TopicPartition]) -> None:
        offsets = {tp: OffsetAndMetadata(p, "") for tp in tps if (p := self._positions.get(tp)) is not None}
        if offsets:
            await self._commit(offsets)

    async def _commit(self, offsets: dict[TopicPartition, OffsetAndMetadata]) -> None:
        if not offsets:
            return
        net, _ = self._check()
        coord = self._coordinator
        assert coord is not None and self.config.group_id is not None
        last: KafkaError | None = None
        for _ in range(5):
            generation, member_id = coord.commit_identity()
            try:
                node = await coord.coordinator_node()
                codes = await commit(net, node, self.config.group_id, offsets, generation=generation,
                                     member_id=member_id, group_instance_id=self.config.group_instance_id)
            except (KafkaConnectionError, KafkaTimeoutError) as exc:
                last = exc
                await asyncio.sleep(self.config.retry_backoff_ms / 1000)
                continue
            bad = {tp: c for tp, c in codes.items() if c}
            if not bad:
                return
            code = next(iter(bad.values()))
            if code == ErrorCode.STALE_MEMBER_EPOCH:  # KIP-848: the member epoch moved on; retry with the new one
                last = KafkaError(code, "OffsetCommit")
                await asyncio.sleep(self.config.retry_backoff_ms / 1000)
                continue
            if is_group_error(code):
                coord.on_commit_error(code)
                if code in (ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE):
                    last = KafkaError(code, "OffsetCommit")
                    await asyncio.sleep(self.config.retry_backoff_ms / 1000)
                    continue
                raise CommitFailedError(f"commit failed: {ErrorCode.from_code(code).name}; the group rebalanced",
                                        code=code)
            if ErrorCode.from_code(code).retriable:
                last = KafkaError(code, "OffsetCommit")
                await asyncio.sleep(self.config.retry_backoff_ms / 1000)
                continue
            raise KafkaError(code, f"OffsetCommit {sorted(bad)}")
        assert last is not None
        raise last

    def _schedule_auto_commit(self) -> None:
        assert self._timers is not None and self._net is not None
        self._auto_commit_timer = self._timers.call_later_ms(self.config.auto_commit_interval_ms, self._auto_commit)

    def _auto_commit(self) -> None:
        if self._closed or self._net is None:
            return
        self._net.spawn(self._auto_commit_now())
        self._schedule_auto_commit()

    async def _auto_commit_now(self) -> None:
        coord = self._coordinator
        if coord is None or not coord.machine.stable:
            return
        try:
            await self._commit_positions(self._assignment)
        except KafkaError as exc:
            log.debug("auto-commit failed: %s", exc)

    def group_metadata(self) -> ConsumerGroupMetadata:
        """This member's identity in its group, for ``Producer.send_offsets_to_transaction``: the group
        id, the generation (the member epoch with ``group_protocol="consumer"``), the member id and the
        ``group_instance_id`` (KIP-447: the group refuses offsets of a member that is no longer in it)."""
        if self.config.group_id is None:
            raise IllegalStateError("group_metadata() needs group_id")
        generation, member_id = (self._coordinator.commit_identity() if self._coordinator is not None
                                 else (-1, ""))
        return ConsumerGroupMetadata(self.config.group_id, generation, member_id, self.config.group_instance_id)

    async def committed(self, tp: TopicPartition) -> int | None:
        om = (await self.committed_offsets([tp])).get(tp)
        return om.offset if om is not None else None

    async def committed_offsets(self, tps: Iterable[TopicPartition]) -> dict[TopicPartition, OffsetAndMetadata | None]:
        net, _ = self._check()
        if self.config.group_id is None:
            raise IllegalStateError("committed() needs group_id")
        node = (await self._coordinator.coordinator_node() if self._coordinator is not None
                else await find_coordinator(net, self.config.group_id))
        return await fetch_committed(net, node, self.config.group_id, list(tps))

    # -- positions API ---------------------------------------------------------------------------

    async def position(self, tp: TopicPartition) -> int:
        with self._owned():
            self._check()
            if tp not in self._assignment:
                raise IllegalStateError(f"{tp} is not assigned")
            await self._update_positions()
            pos = self._positions.get(tp)
            if pos is None:
                raise KafkaTimeoutError(f"position of {tp} is not known yet")
            return pos

    def seek(self, tp: TopicPartition, offset: int) -> None:
        with self._owned():
            self._check()
            if tp not in self._assignment:
                raise IllegalStateError(f"{tp} is not assigned")
            if offset < 0:
                raise ValueError("offset must be >= 0")
            self._set_position(tp, offset)

    async def seek_to_beginning(self, *partitions: TopicPartition) -> None:
        await self._seek_to(partitions, EARLIEST)

    async def seek_to_end(self, *partitions: TopicPartition) -> None:
        await self._seek_to(partitions, LATEST)

    async def _seek_to(self, partitions: tuple[TopicPartition, ...], ts: int) -> None:
        with self._owned():
            net, _ = self._check()
            tps = set(partitions) or set(self._assignment)
            if not tps <= self._assignment:
                raise IllegalStateError(f"not assigned: {sorted(tps - self._assignment)}")
            offsets = await list_offsets(net, dict.fromkeys(tps, ts), isolation_level=self.config.isolation)
            for tp, (offset, _) in offsets.items():
                if tp in self._assignment:
                    self._set_position(tp, offset)

    def pause(self, *partitions: TopicPartition) -> None:
        with self._owned():
            _, fetcher = self._check()
            fetcher.paused |= set(partitions) & self._assignment

    def resume(self, *partitions: TopicPartition) -> None:
        with self._owned():
            _, fetcher = self._check()
            fetcher.paused -= set(partitions)
            fetcher.wake()

    def paused(self) -> set[TopicPartition]:
        return set(self._fetcher.paused) if self._fetcher is not None else set()

    def highwater(self, tp: TopicPartition) -> int | None:
        return self._fetcher.high_watermarks.get(tp) if self._fetcher is not None else None

    # -- offsets helpers -------------------------------------------------------------------------

    async def beginning_offsets(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        net, _ = self._check()
        res = await list_offsets(net, dict.fromkeys(partitions, EARLIEST), isolation_level=self.config.isolation)
        return {tp: off for tp, (off, _) in res.items()}

    async def end_offsets(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        net, _ = self._check()
        res = await list_offsets(net, dict.fromkeys(partitions, LATEST), isolation_level=self.config.isolation)
        return {tp: off for tp, (off, _) in res.items()}

    async def offsets_for_times(self, timestamps: Mapping[TopicPartition, int]) -> dict[TopicPartition, OffsetAndTimestamp | None]:
        net, _ = self._check()
        for ts in timestamps.values():
            if ts < 0:
                raise ValueError("timestamps must be >= 0")
        res = await list_offsets(net, dict(timestamps), isolation_level=self.config.isolation)
        return {tp: (OffsetAndTimestamp(off, ts) if off >= 0 else None) for tp, (off, ts) in res.items()}

    async def topics(self) -> set[str]:
        net, _ = self._check()
        net.set_topics(None)
        md = await net.refresh_metadata()
        if self._pattern is None and self._regex is None:
            net.set_topics(self._subscription | {tp.topic for tp in self._assignment})
        return {t for t, i in md.topics.items() if not (i.is_internal and self.config.exclude_internal_topics)}

    async def partitions_for_topic(self, topic: str) -> set[int] | None:
        net, _ = self._check()
        try:
            return set(await net.wait_for_partitions(topic, self.config.request_timeout_ms))
        except KafkaError:
            return None


async def _maybe_await(value: Any) -> None:
    if inspect.isawaitable(value):
        await value
