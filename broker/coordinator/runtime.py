"""CoordinatorRuntime: a coordinator as shards, one per partition of an internal topic this broker leads.

Kafka places a group's coordinator, and a transactional id's, on the leader of one
partition of an internal topic (``__consumer_offsets``, ``__transaction_state``).
This module is the asyncio edge both coordinators share (Kafka's
``CoordinatorRuntime``); the coordinators themselves are pure state machines
(:mod:`broker.coordinator.group.coordinator`, :mod:`broker.coordinator.txn.coordinator`).  It owns:

* **placement** — on becoming leader of partition p (a leadership listener of the
  replica manager) it replays p's log into a fresh coordinator *shard*; requests
  for that shard answer COORDINATOR_LOAD_IN_PROGRESS meanwhile.  On losing p the
  shard is dropped and the requests parked on it answer NOT_COORDINATOR; the
  services answer NOT_COORDINATOR for partitions with no shard, so clients look
  the coordinator up again.  A record that does not decode is logged, counted and
  skipped: one bad record never stops a load.
* **only what is committed** — a shard serves committed state only, as Kafka's
  coordinator runtime does: the load (:class:`CommittedReplay`) replays the batches
  below the high watermark; those above it (written by an earlier leader and not
  yet replicated to the ISR) are replayed when the high watermark passes them, and
  are never applied if the log is truncated below them.  The shard starts serving
  once everything its log held at takeover is committed (the new leader's ISR has
  it) or gone.
* **requests** — :meth:`CoordinatorRuntime.run` hands a request to a shard with a
  reply token and returns the answer, or an awaitable when the answer waits
  (parked, or held back until a write commits).
* **ordered writes** — a shard's :class:`~broker.coordinator.write.Write` s are
  appended to its partition through the replica manager (records, a producer's
  transactional batch, or a COMMIT/ABORT marker) and reported back once
  replicated (acks=all), in the order they were handed out: ``write_committed`` /
  ``write_failed``.  The writes of records one loop iteration hands out are appended
  as one batch per partition (a burst of requests costs a few appends), each still
  reported on its own.  A write's failure changes nothing stored; the coordinator
  answers what waited on it with its mapped error.
* **timers** — one wheel timer per shard at the coordinator's ``next_deadline()``;
  when it fires, ``poll(now)``.

Services add what is theirs through hooks: ``on_effects`` (effects beyond replies
and writes, e.g. transaction markers to send), ``after_poll``, ``on_unload``.
The coordinators run on wall-clock milliseconds; the wheel on monotonic time.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from collections.abc import Awaitable, Callable, Hashable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from broker.coordinator.write import Write
from broker.replication.purgatory import DelayedOperation
from protocol.error_codes import ErrorCode, error_name
from protocol.errors import ProtocolError
from protocol.records import (
    BatchHeader,
    CorruptRecordError,
    decode_batch,
    decode_control_marker,
    encode_batch,
)
from protocol.timing_wheel import TimerTask

if TYPE_CHECKING:
    from broker.log.partition_log import PartitionLog
    from broker.replication.partition import Partition
    from broker.replication.replica_manager import ReplicaManager
    from protocol.timer_service import WheelTimer

log = logging.getLogger("kbroker.coordinator")

__all__ = ["CommittedReplay", "Coordinator", "CoordinatorEffects", "CoordinatorRuntime", "Shard"]

E = ErrorCode
#: How long a coordinator write may wait for replication before its requests fail.
WRITE_TIMEOUT_MS = 30_000
#: Batches replayed between two yields to the event loop while a shard loads.
_LOAD_BATCHES_PER_STEP = 200
#: Record bytes above which the writes of one loop iteration are appended as more than one batch (at most
#: half the partition's ``max.message.bytes``, so a merged batch never fails where its writes alone would not).
_MERGED_BYTES = 256 * 1024
#: What a record adds to its key and value in a batch, at most (length, attributes, deltas, header count).
_RECORD_OVERHEAD = 24


def now_ms() -> int:
    """The coordinators' clock: wall-clock milliseconds."""
    return int(time.time() * 1000)


class CoordinatorEffects(Protocol):
    replies: list[tuple[Hashable, Any]]
    writes: list[Write]


class Coordinator(Protocol):
    """What the runtime needs of a pure coordinator (one per shard).

    ``load`` / ``load_marker`` replay the committed records and markers of the log; a coordinator
    applies the records of its own writes through the same replay when ``write_committed`` reports
    them durable, so a shard that loaded the log holds what the shard that wrote it held.
    """

    def load(self, partition: int, key: bytes, value: bytes | None, producer_id: int = -1) -> None: ...

    def load_marker(self, partition: int, producer_id: int, commit: bool) -> None: ...

    def complete_load(self, now_ms: int) -> Any: ...

    def write_committed(self, now_ms: int, write_id: int) -> Any: ...

    def write_failed(self, now_ms: int, write_id: int, error_code: int) -> Any: ...

    def next_deadline(self) -> int | None: ...

    def poll(self, now_ms: int) -> Any: ...


C = TypeVar("C", bound=Coordinator)


class CommittedReplay(Generic[C]):
    """Replays the committed part of a coordinator partition's log into its coordinator, in log order.

    Sans-IO (the log and the coordinator are plain objects).  :meth:`step` applies the batches that
    lie wholly below the log's high watermark, from where the last step stopped; batches above it
    stay in the log until a later step finds the high watermark past them.  ``end`` is the log end
    when the replay began: the leader's whole log at takeover, which must be committed before the
    shard may serve (:attr:`caught_up`) — or truncated away, in which case what was cut is never
    applied.  A record or marker that does not decode is reported to ``on_error(offset, exc, what)``
    and skipped.
    """

    def __init__(self, coordinator: C, partition: int, log: PartitionLog,
                 on_error: Callable[[int, Exception, str], None]) -> None:
        self.coordinator = coordinator
        self.partition = partition
        self.log = log
        self.next_offset = log.log_start_offset
        self.end = log.log_end_offset
        #: the last offset of the first batch not replayed because the high watermark has not passed it
        self.blocked_at: int | None = None
        self.records = 0
        self.errors = 0
        self._on_error = on_error

    @property
    def caught_up(self) -> bool:
        """Everything the log held at the start is replayed (or was truncated away)."""
        return self.next_offset >= self._end()

    @property
    def uncommitted(self) -> int:
        """How many offsets of the log at the start are above the high watermark."""
        return max(0, self._end() - max(self.next_offset, self.log.high_watermark))

    def _end(self) -> int:
        self.end = min(self.end, self.log.log_end_offset)  # a truncation shortens what must commit
        return self.end

    def step(self, max_batches: int) -> int:
        """Replay up to ``max_batches`` committed batches; how many were replayed."""
        log = self.log
        hw = log.high_watermark
        end = self._end()
        self.blocked_at = None
        n = 0
        start = max(self.next_offset, log.log_start_offset)
        for header, data in log.iter_batches(start):
            if n >= max_batches or header.base_offset >= end:
                break
            if header.last_offset >= hw:
                self.blocked_at = header.last_offset
                break
            self._replay_batch(header, data, start)
            self.next_offset = start = header.last_offset + 1
            n += 1
        return n

    def _replay_batch(self, header: BatchHeader, data: bytes, start: int) -> None:
        coordinator, partition = self.coordinator, self.partition
        if header.is_control:
            if header.producer_id >= 0:
                try:
                    marker = decode_control_marker(data)
                except CorruptRecordError as exc:
                    self._error(header.base_offset, exc, "marker")
                    return
                coordinator.load_marker(partition, header.producer_id, marker.commit)
            return
        try:
            _, batch = decode_batch(data)
        except CorruptRecordError as exc:
            self._error(header.base_offset, exc, "batch")
            return
        producer_id = header.producer_id if header.is_transactional else -1
        for rec in batch:
            if rec.offset < start:
                continue
            try:
                if rec.key is None:
                    raise ProtocolError("record without a key")
                coordinator.load(partition, rec.key, rec.value, producer_id)
            except Exception as exc:  # any undecodable record: skip it, never stop the load
                self._error(rec.offset, exc, "record")
                continue
            self.records += 1

    def _error(self, offset: int, exc: Exception, what: str) -> None:
        self.errors += 1
        self._on_error(offset, exc, what)


class _LeadershipMoved(Exception):
    """A shard's partition is no longer led in the shard's epoch while it loads."""


class _HighWatermarkPast(DelayedOperation):
    """Parked in the replica manager's produce purgatory (where everything waiting on a partition's high
    watermark parks, checked whenever it moves) until the high watermark passes ``offset``, or the
    partition is no longer led in ``epoch``, or ``delay_ms`` passed."""

    def __init__(self, partition: Partition, offset: int, epoch: int, delay_ms: int) -> None:
        super().__init__(delay_ms)
        self.partition = partition
        self.offset = offset
        self.epoch = epoch
        self.future: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def try_complete(self) -> bool:
        p = self.partition
        if p.log.high_watermark > self.offset or not p.is_leader or p.leader_epoch != self.epoch:
            return self.force_complete()
        return False

    def on_complete(self) -> None:
        if not self.future.done():
            self.future.set_result(None)


@dataclass(slots=True)
class Shard(Generic[C]):
    """The coordinator of one partition, on the broker that leads it in ``epoch``."""

    partition: int
    epoch: int
    coordinator: C | None = None
    loading: bool = True
    timer: TimerTask | None = None
    deadline: int | None = None
    tokens: set[int] = field(default_factory=set)
    load_task: asyncio.Task[None] | None = None
    write_tail: asyncio.Future[Any] | None = None
    #: writes handed out by this loop iteration's calls, appended together when it ends
    queued: list[Write] = field(default_factory=list)


#: a running call's reply slot before the reply comes
_NO_REPLY: Any = object()


class CoordinatorRuntime(Generic[C]):
    """Shards of one coordinator over ``topic`` (see the module doc)."""

    def __init__(self, *, topic: str, replica: ReplicaManager, timer: WheelTimer,
                 new_coordinator: Callable[[int, int], C],
                 on_effects: Callable[[Shard[C], Any], None] | None = None,
                 after_poll: Callable[[Shard[C]], None] | None = None,
                 on_unload: Callable[[Shard[C]], None] | None = None,
                 on_load_error: Callable[[], None] | None = None,
                 write_timeout_ms: int = WRITE_TIMEOUT_MS, compression: int = 0) -> None:
        """``new_coordinator(partition, leader_epoch)`` makes the empty coordinator a load fills;
        ``compression``: the codec of the batches it writes (``protocol.records``: 0 none ... 4 zstd)."""
        self.topic = topic
        self.replica = replica
        self.timer = timer
        self.shards: dict[int, Shard[C]] = {}
        self._new = new_coordinator
        self._on_effects = on_effects
        self._after_poll = after_poll
        self._on_unload = on_unload
        self._on_load_error = on_load_error
        self._write_timeout_ms = write_timeout_ms
        self._compression = compression
        self._tokens = itertools.count(1)
        #: parked requests' tokens -> their future and what answers them if the shard goes away first
        self._pending: dict[int, tuple[asyncio.Future[Any], Callable[[int], Any]]] = {}
        #: tokens of the calls running now (see run) -> their reply once the effects carry it
        self._direct: dict[int, Any] = {}
        self._closed = False
        replica.add_leadership_listener(self._on_leadership)

    # -- placement -------------------------------------------------------------------
    def shard(self, partition: int) -> tuple[Shard[C] | None, int]:
        """The loaded shard of ``partition``, or None with NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS."""
        shard = self.shards.get(partition)
        if shard is None:
            return None, E.NOT_COORDINATOR
        if shard.loading or shard.coordinator is None:
            return None, E.COORDINATOR_LOAD_IN_PROGRESS
        return shard, E.NONE

    @property
    def loading(self) -> bool:
        return any(s.loading for s in self.shards.values())

    def coordinators(self) -> Iterator[C]:
        for shard in list(self.shards.values()):
            if shard.coordinator is not None:
                yield shard.coordinator

    def _on_leadership(self, topic: str, partition: int, is_leader: bool, epoch: int) -> None:
        if topic != self.topic or self._closed:
            return
        current = self.shards.get(partition)
        if is_leader:
            if current is not None and current.epoch == epoch:
                return
            if current is not None:
                self._unload(current)
            shard: Shard[C] = Shard(partition, epoch)
            self.shards[partition] = shard
            shard.load_task = asyncio.ensure_future(self._load(shard))
        elif current is not None:
            self._unload(current)

    async def _load(self, shard: Shard[C]) -> None:
        """Replay the committed part of the partition into a new shard, some batches at a time (the loop
        keeps serving meanwhile), waiting for the high watermark to pass what the leader's log holds
        above it; then the shard serves (see :class:`CommittedReplay`)."""
        started = time.perf_counter()
        coordinator = self._new(shard.partition, shard.epoch)
        try:
            partition = self.replica.partitions[(self.topic, shard.partition)]
            replay = CommittedReplay(coordinator, shard.partition, partition.log,
                                     lambda offset, exc, what: self._load_error(shard.partition, offset, exc, what))
            waited = False
            while True:
                if replay.step(_LOAD_BATCHES_PER_STEP) == _LOAD_BATCHES_PER_STEP:
                    await asyncio.sleep(0)
                elif replay.caught_up or replay.blocked_at is None:
                    break
                else:
                    if not waited:
                        waited = True
                        log.info("coordinator for %s-%d (epoch %d): waiting for %d offsets above the high watermark "
                                 "%d to commit before serving", self.topic, shard.partition, shard.epoch,
                                 replay.uncommitted, partition.log.high_watermark)
                    if not await self._high_watermark_past(partition, replay.blocked_at, shard.epoch):
                        raise _LeadershipMoved
                if self.shards.get(shard.partition) is not shard:
                    return  # leadership moved on while loading
        except Exception as exc:
            if not isinstance(exc, _LeadershipMoved):
                log.exception("loading %s-%d failed", self.topic, shard.partition)
            if self.shards.get(shard.partition) is shard:
                del self.shards[shard.partition]
            return
        if self.shards.get(shard.partition) is not shard:
            return
        shard.coordinator = coordinator
        shard.loading = False
        self.apply(shard, coordinator.complete_load(now_ms()))
        records, errors = replay.records, replay.errors
        log.log(logging.INFO if records or errors else logging.DEBUG,
                "coordinator for %s-%d (epoch %d): loaded %d records in %.3fs%s", self.topic, shard.partition,
                shard.epoch, records, time.perf_counter() - started,
                f" ({errors} unreadable, skipped)" if errors else "")

    async def _high_watermark_past(self, partition: Partition, offset: int, epoch: int) -> bool:
        """Until ``partition``'s high watermark passes ``offset``, or the write timeout passed (the caller
        looks again); False if the partition is no longer led in ``epoch``."""
        wait = _HighWatermarkPast(partition, offset, epoch, self._write_timeout_ms)
        try:
            self.replica.produce_purgatory.try_complete_else_watch(wait, [(self.topic, partition.partition)])
            await wait.future
        finally:
            wait.force_complete()  # cancelled (the shard unloaded): leave the purgatory now
        return partition.is_leader and partition.leader_epoch == epoch

    def _load_error(self, partition: int, offset: int, exc: Exception, what: str) -> None:
        log.error("skipping unreadable %s at %s-%d offset %d: %s: %s", what, self.topic, partition, offset,
                  type(exc).__name__, exc)
        if self._on_load_error is not None:
            self._on_load_error()

    def _unload(self, shard: Shard[C]) -> None:
        if self.shards.get(shard.partition) is shard:
            del self.shards[shard.partition]
        if shard.load_task is not None and not shard.load_task.done():
            shard.load_task.cancel()
        if shard.timer is not None:
            shard.timer.cancel()
        for token in shard.tokens:
            entry = self._pending.pop(token, None)
            if entry is not None and not entry[0].done():
                entry[0].set_result(entry[1](E.NOT_COORDINATOR))
        if shard.coordinator is not None:
            if self._on_unload is not None:
                self._on_unload(shard)
            log.info("no longer the coordinator for %s-%d", self.topic, shard.partition)

    # -- requests --------------------------------------------------------------------
    def run(self, shard: Shard[C], call: Callable[[C, Hashable], Any], on_error: Callable[[int], Any]) -> Any:
        """Run ``call(coordinator, token)`` on a loaded shard: the reply for ``token`` now, or a future
        of it when it waits (parked or writing).  A shard that goes away first answers
        ``on_error(NOT_COORDINATOR)``.

        Most replies come in the call's own effects: those are taken straight from them, and a future
        (registered so an unload can answer it) is made only for a request that waits; it is handed out
        as it is (the dispatcher answers from its done callback: no coroutine or task per request)."""
        assert shard.coordinator is not None
        token = next(self._tokens)
        direct = self._direct
        direct[token] = _NO_REPLY
        try:
            self.apply(shard, call(shard.coordinator, token))
        finally:
            body = direct.pop(token)
        if body is not _NO_REPLY:
            return body
        if self.shards.get(shard.partition) is not shard or self._closed:
            return on_error(E.NOT_COORDINATOR)  # unloaded while the call ran
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[token] = (future, on_error)
        shard.tokens.add(token)
        return future

    def run_on_partition(self, partition: int, call: Callable[[C, Hashable], Any],
                         on_error: Callable[[int], Any]) -> Any:
        """:meth:`run` on the shard of ``partition``, or ``on_error(code)`` when it has none loaded."""
        shard, code = self.shard(partition)
        if shard is None:
            return on_error(code)
        return self.run(shard, call, on_error)

    # -- effects ---------------------------------------------------------------------
    def apply(self, shard: Shard[C], effects: Any) -> None:
        """Release the replies, let the service see the rest, then start the writes."""
        if self._closed:
            return
        pending = self._pending
        for token, body in effects.replies:
            entry = pending.pop(token, None)
            if entry is None:
                if token in self._direct:
                    self._direct[token] = body  # the reply of a call still running (see run)
                continue
            shard.tokens.discard(token)
            future = entry[0]
            if not future.done():
                future.set_result(body)
        if self._on_effects is not None:
            self._on_effects(shard, effects)
        if effects.writes:
            if not shard.queued:
                asyncio.get_running_loop().call_soon(self._append_queued, shard)
            shard.queued.extend(effects.writes)
        self._rearm(shard)

    def _append_queued(self, shard: Shard[C]) -> None:
        """Append the writes this loop iteration's calls handed out, in the order they were handed out:
        consecutive writes of plain records to one partition go out as one batch (up to ``_MERGED_BYTES``),
        so a burst of requests that each write a few records — a thousand members joining at once — costs a
        few appends, not one each; markers and transactional writes go alone.  The log holds the records
        in hand-out order (a load replays them as before), and each write completes on its own, in order:
        a failed append fails exactly the writes it carried."""
        writes, shard.queued = shard.queued, []
        if self._closed or self.shards.get(shard.partition) is not shard:
            return  # the shard is gone (its requests were answered NOT_COORDINATOR)
        run: list[Write] = []
        size = 0
        limit = self._merge_limit(shard.partition)
        for write in writes:
            if write.marker is not None or write.producer_id >= 0:
                if run:
                    self._start_write(shard, run)
                    run, size = [], 0
                self._start_write(shard, [write])
                continue
            nbytes = sum(_RECORD_OVERHEAD + len(key) + len(value or b"") for key, value in write.records)
            if run and (run[0].partition != write.partition or size + nbytes > limit):
                self._start_write(shard, run)
                run, size = [], 0
            run.append(write)
            size += nbytes
        if run:
            self._start_write(shard, run)

    def _merge_limit(self, partition: int) -> int:
        """The record bytes one merged batch of ``partition`` may carry."""
        p = self.replica.partitions.get((self.topic, partition))
        if p is None:
            return _MERGED_BYTES
        return min(_MERGED_BYTES, p.log.config.max_message_bytes // 2)

    def _start_write(self, shard: Shard[C], writes: list[Write]) -> None:
        """Append ``writes`` (of one partition; several only when all are plain records) as one batch; report
        each once replicated, in order."""
        topic, first = self.topic, writes[0]
        partition = first.partition
        pending: Awaitable[tuple[int, int]]
        try:
            if first.marker is not None:
                pending = self.replica.write_marker(topic, partition, first.producer_id, first.producer_epoch,
                                                    first.marker.commit, first.marker.coordinator_epoch,
                                                    self._write_timeout_ms)
            else:
                timestamp = now_ms()
                batch = encode_batch([(key, value, [], timestamp) for write in writes for key, value in write.records],
                                     producer_id=first.producer_id, producer_epoch=first.producer_epoch,
                                     is_transactional=first.producer_id >= 0, compression=self._compression)
                pending = self.replica.append_to_leader(topic, partition, batch, self._write_timeout_ms)
        except Exception:
            log.exception("appending to %s-%d failed", topic, partition)
            done: asyncio.Future[tuple[int, int]] = asyncio.get_running_loop().create_future()
            done.set_result((E.UNKNOWN_SERVER_ERROR, -1))
            pending = done
        previous = shard.write_tail

        async def complete() -> None:
            code, _ = await pending
            if previous is not None and not previous.done():
                await asyncio.shield(previous)  # writes complete in the order they were made
            if code != E.NONE:
                log.warning("write to %s-%d failed: %s", topic, partition, error_name(code))
            for write in writes:
                if self.shards.get(shard.partition) is not shard or shard.coordinator is None:
                    return  # the shard is gone (its requests were answered NOT_COORDINATOR)
                if code == E.NONE:
                    effects = shard.coordinator.write_committed(now_ms(), write.write_id)
                else:
                    effects = shard.coordinator.write_failed(now_ms(), write.write_id, code)
                self.apply(shard, effects)

        task = asyncio.ensure_future(complete())
        shard.write_tail = task

    def _rearm(self, shard: Shard[C]) -> None:
        if self._closed or shard.coordinator is None or self.shards.get(shard.partition) is not shard:
            return
        deadline = shard.coordinator.next_deadline()
        armed = shard.deadline
        if shard.timer is not None and armed is not None and (deadline is None or armed <= deadline) \
                and not shard.timer.cancelled:
            return  # the armed timer fires first; its poll re-arms at the deadline of then
        if shard.timer is not None:
            shard.timer.cancel()
            shard.timer = None
        shard.deadline = deadline
        if deadline is not None:
            # the wheel runs on monotonic time; the coordinator on wall-clock time
            delay = max(0, deadline - now_ms())
            shard.timer = self.timer.call_at_ms(self.timer.now_ms() + delay, lambda: self._on_timer(shard))

    def _on_timer(self, shard: Shard[C]) -> None:
        shard.timer = None
        shard.deadline = None
        if shard.coordinator is None or self.shards.get(shard.partition) is not shard:
            return
        effects = shard.coordinator.poll(now_ms())
        if self._after_poll is not None:
            self._after_poll(shard)
        self.apply(shard, effects)

    def close(self) -> None:
        self._closed = True
        for shard in list(self.shards.values()):
            if shard.timer is not None:
                shard.timer.cancel()
            if shard.load_task is not None:
                shard.load_task.cancel()
        for future, _ in self._pending.values():
            if not future.done():
                future.cancel()
        self._pending.clear()
