"""One partition's log (Kafka's ``UnifiedLog``): segments, offsets, append, read, retention, recovery.

``PartitionLog`` owns the directory ``<data_dir>/<topic>-<partition>``:

* ``<base:020d>.log/.index/.timeindex`` — the segments (see ``segment``);
* ``partition.checkpoint`` — JSON ``{log_start_offset, recovery_point, high_watermark, cleaner_offset}``
  (``cleaner_offset``: where the log cleaner's next pass starts, see ``cleaner``);
* ``leader-epoch-checkpoint`` — the leader-epoch cache (see ``epoch_cache``);
* ``<offset:020d>.snapshot`` — producer-id state (see ``producer_state``);
* ``<base:020d>.txnindex`` — aborted transactions per segment (see ``txn_index``).

Transactions: transactional batches open a producer's transaction in the
partition; a COMMIT/ABORT control batch written by :meth:`PartitionLog.append_marker`
(or copied by a follower) closes it, and an aborted one is indexed in the segment
holding its marker.  The *last stable offset* (LSO) is the high watermark, or the
first offset of the oldest open transaction if that is lower: ``read_committed``
consumers read below it, with the aborted transactions of that range
(:meth:`PartitionLog.aborted_transactions`).  Recovery rebuilds the open
transactions and the index entries of the range it replays from the newest
producer snapshot, so both survive a kill -9; a truncation replays the same way.

Replication: the *high watermark* (HW) is the offset below which every in-sync
replica has the data; consumers read only below it.  The partition's leader
moves it (``broker.replication.partition``); a follower sets it from the leader's.  A leader
appends client batches with :meth:`PartitionLog.append` (stamping its leader
epoch); a follower copies the leader's batches verbatim with
:meth:`PartitionLog.append_as_follower` and cuts a diverged tail with
:meth:`PartitionLog.truncate_to`.  Nothing moves the log start past the high
watermark — retention deletes only segments the high watermark has passed, and
DeleteRecords and a follower's log start stop at it — so no record a follower may
still need is deleted, and the high watermark is never dragged past it.

It is synchronous and single-threaded: the asyncio edge calls it from the
event loop and may run ``FlushTicket.run()`` (the fsyncs, and the checkpoint
and producer snapshot they make durable) in a thread.

Durability reasoning
--------------------
Every append is handed to the kernel with ``os.pwrite`` *before* ``append``
returns, i.e. before the produce is acknowledged; there is no user-space
buffer.  A process crash (even ``kill -9``) therefore cannot lose an
acknowledged record: the bytes are in the page cache, which belongs to the
kernel and is written back regardless of the process.  Only a kernel crash or
power loss can lose unsynced data, and that is bounded by the flush policy:
``flush.ms`` (default 250 ms, driven by ``maintenance``/the edge's timer) and
``flush.messages`` (default off; ``flush.messages=1`` fsyncs on every append).
After each *successful* fsync the *recovery point* (the offset below which data
is known to be on disk) is checkpointed; on open every batch from the recovery
point to the end is CRC-checked, so whatever a power loss tore or zero-filled is
cut off, and the segments holding that range count as unflushed until the next
fsync.  Indexes are caches of the log and are rebuilt when missing or inconsistent.

A flush captures what it covers (``prepare_flush``: the dirty segments, their
sizes and the log end offset, and the checkpoint and producer snapshot naming
that offset), fsyncs private duplicates of the descriptors and, only if every
fsync succeeded, writes that checkpoint and snapshot (``FlushTicket.run``,
possibly in a thread, so no fsync of a flush round runs on the event loop);
then ``complete_flush`` marks exactly the captured data clean and advances the
recovery point in memory.  A checkpoint written on the loop meanwhile (a
truncation, retention, DeleteRecords) supersedes the captured one: the
ticket's writes are dropped (``_CheckpointGuard``) and the loop writes the
checkpoint itself.  A failed fsync is never
retried ("fsyncgate": the kernel may have dropped the pages and cleared the
error): it is reported to the directory's ``LogDirFailureChannel``, which takes
the whole directory offline (see ``dir_failure``); from then on appends, reads
and flushes raise ``KafkaStorageError`` and nothing advances.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
import time
import zlib
from bisect import bisect_right
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import NamedTuple

from broker.log._fs import atomic_write
from broker.log.cleaner import recover_interrupted_swaps
from broker.log.config import LogConfig
from broker.log.dir_failure import LogDirFailureChannel
from broker.log.epoch_cache import LeaderEpochCache
from broker.log.errors import (
    CorruptMessageError,
    InvalidRecordError,
    InvalidTimestampError,
    InvalidTxnStateError,
    KafkaStorageError,
    MessageTooLargeError,
    OffsetOutOfRangeError,
)
from broker.log.producer_state import CompletedTxn, ProducerStateManager, VerificationGuard
from broker.log.reaper import FileReaper
from broker.log.segment import DELETED_SUFFIX, FileSlice, Segment, SegmentRecovery, TornBatch
from broker.log.txn_index import AbortedTxn
from protocol.records import (
    BATCH_HEADER_SIZE,
    TIMESTAMP_TYPE_MASK,
    BatchHeader,
    CorruptRecordError,
    crc_ok,
    decode_batch,
    decode_control_marker,
    encode_control_marker,
    parse_batch_header,
    stamp_base_offset,
    stamp_leader_epoch,
    stamp_log_append_time,
)

logger = logging.getLogger("kbroker.log")

Clock = Callable[[], int]
CHECKPOINT_FILE = "partition.checkpoint"
PRODUCER_ID_EXPIRATION_MS = 86_400_000  # Kafka's producer.id.expiration.ms default
_INT32_MAX = 2147483647


def wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


class AppendResult(NamedTuple):
    """What Produce answers: ``log_append_time`` is -1 unless the topic uses LogAppendTime.

    ``duplicate`` is True when the batch was a retry of an already-appended
    idempotent batch: the offsets are the original ones and nothing was written.
    (A named tuple: one is made per append.)
    """

    base_offset: int
    last_offset: int
    log_append_time: int
    log_start_offset: int
    duplicate: bool = False


@dataclass(frozen=True, slots=True)
class ReadResult:
    """A Fetch read: file slices (whole batches, the first containing the fetch offset) + watermarks."""

    slices: list[FileSlice]
    high_watermark: int
    log_start_offset: int
    log_end_offset: int

    @property
    def size(self) -> int:
        return sum(s.length for s in self.slices)

    def to_bytes(self) -> bytes:
        return b"".join(s.read() for s in self.slices)


@dataclass(slots=True)
class RecoveryReport:
    """What opening the log found and repaired (also logged at WARNING when anything was)."""

    name: str
    segments: list[SegmentRecovery] = field(default_factory=list)
    deleted_segments: list[int] = field(default_factory=list)
    producer_snapshot: int | None = None
    producer_batches_replayed: int = 0
    interrupted_swaps: list[int] = field(default_factory=list)  # compaction swaps finished on open

    @property
    def repaired(self) -> bool:
        return (bool(self.deleted_segments) or bool(self.interrupted_swaps)
                or any(s.repaired for s in self.segments))

    def describe(self) -> str:
        parts = []
        for s in self.segments:
            if s.index_rebuilt:
                parts.append(f"segment {s.base_offset}: index {s.index_rebuilt}, rebuilt")
            if s.truncated_at is not None:
                parts.append(f"segment {s.base_offset}: truncated {s.truncated_bytes} bytes at position "
                             f"{s.truncated_at} ({s.reason})")
        if self.deleted_segments:
            parts.append(f"deleted segments after a torn one: {self.deleted_segments}")
        if self.interrupted_swaps:
            parts.append(f"finished interrupted compaction swaps of segments {self.interrupted_swaps}")
        return f"{self.name}: " + ("; ".join(parts) if parts else "clean")


class _CheckpointGuard:
    """Orders the writes of one log's checkpoint and producer snapshots between the event loop and
    a flush thread: the loop bumps ``generation`` whenever it writes, and a ticket writes only if
    the generation is still the one it captured (both under ``lock``)."""

    __slots__ = ("generation", "lock")

    def __init__(self) -> None:
        self.generation = 0
        self.lock = threading.Lock()


@dataclass(slots=True)
class FlushTicket:
    """An fsync job captured by ``PartitionLog.prepare_flush``.

    ``files`` are private duplicates of the segment descriptors (with the path
    each names), so ``run()`` may execute off the event loop.  ``run()`` never
    raises an OS error: the first failed fsync is kept in ``error`` /
    ``failed_path``.  The ticket closes its descriptors whatever happens (at
    the end of ``run``, or in ``close`` for a ticket that will not run).  Hand
    it back to ``PartitionLog.complete_flush`` on the loop afterwards.
    """

    files: list[tuple[int, str]]
    offset: int  # the log end offset when captured: what a successful run makes durable
    segments: list[tuple[Segment, int]] = field(default_factory=list)  # (segment, size when captured)
    messages: int = 0  # appended messages covered (for flush.messages)
    truncations: int = 0  # the log's truncation count when captured (a truncation voids the capture)
    done: bool = False
    error: OSError | None = None
    failed_path: str | None = None
    #: files a successful run writes after its fsyncs (producer snapshot, then checkpoint): (path, bytes)
    writes: list[tuple[str, bytes]] = field(default_factory=list)
    #: the (log start, recovery point, high watermark) the checkpoint in ``writes`` records, if any
    checkpoint: tuple[int, int, int, int] | None = None
    snapshot: bool = False  # whether ``writes`` holds a producer snapshot
    guard: _CheckpointGuard | None = None
    generation: int = 0
    dir_failure: LogDirFailureChannel | None = None
    written: bool = False  # ``writes`` are on disk
    failed_operation: str = "fsync"

    def run(self, *, write: bool = True) -> FlushTicket:
        """fsync; then, if every fsync succeeded (and ``write``), write the checkpoint and snapshot."""
        try:
            for fd, path in self.files:
                try:
                    os.fsync(fd)
                except OSError as exc:
                    self.error, self.failed_path = exc, path
                    break
        finally:
            self.close()
        if self.error is None and write:
            self._write()
        self.done = True
        return self

    def _write(self) -> None:
        if not self.writes:
            self.written = True
            return
        guard = self.guard
        if guard is None:
            return
        with guard.lock:
            if guard.generation != self.generation or (self.dir_failure is not None and self.dir_failure.offline):
                return  # superseded by a write on the loop, or the directory went offline
            for path, data in self.writes:
                try:
                    atomic_write(path, data)
                except OSError as exc:
                    self.error, self.failed_path, self.failed_operation = exc, path, "checkpoint write"
                    return
            self.written = True

    def close(self) -> None:
        """Close the descriptors not closed yet (idempotent)."""
        files, self.files = self.files, []
        for fd, _ in files:
            try:
                os.close(fd)
            except OSError:
                pass

    @staticmethod
    def run_all(tickets: list[FlushTicket]) -> None:
        """Run every ticket (one failing does not stop the others' fsyncs, but after a failure no
        checkpoint is written: the directory is going offline); every descriptor ends closed."""
        try:
            failed = False
            for ticket in tickets:
                ticket.run(write=not failed)
                failed = failed or ticket.error is not None
        finally:
            for ticket in tickets:
                ticket.close()


class PartitionLog:
    """The log of one topic-partition.  Not thread-safe: call it from one thread (the event loop)."""

    def __init__(self, directory: str, topic: str, partition: int, config: LogConfig,
                 clock: Clock | None = None, *, dir_failure: LogDirFailureChannel | None = None,
                 on_dirty: Callable[[PartitionLog], None] | None = None,
                 reaper: FileReaper | None = None) -> None:
        """``dir_failure``: the data directory's failure channel (a private one by default);
        ``on_dirty(log)``: called when a clean segment receives data (the owner's flush scheduling);
        ``reaper``: unlinks the files of removed segments (renamed aside at once) and closes their
        ``.log`` files once released, off the event loop (default: both here, on the caller's thread)."""
        self.directory = directory
        self.topic = topic
        self.partition = partition
        self.config = config
        self.clock: Clock = clock or wall_clock_ms
        self._dir_failure = dir_failure or LogDirFailureChannel(directory)
        self._on_dirty = on_dirty
        self._file_closer = reaper.close_file if reaper is not None else None
        self._remove_later = reaper.remove_files if reaper is not None else None
        os.makedirs(directory, exist_ok=True)
        self.producer_state = ProducerStateManager(directory)
        self._segments: list[Segment] = []
        self._bases: list[int] = []
        # Segments removed from the log (retention, DeleteRecords, compaction swaps): their own
        # reference to the .log file is dropped after file.delete.delay.ms.  Queued responses
        # hold references of their own, so what they send never depends on that delay.
        self._retired: list[tuple[int, Segment]] = []
        self._unflushed_messages = 0
        self._last_flush_ms = self.clock()
        self._checkpointed: tuple[int, int, int, int] | None = None
        self._guard = _CheckpointGuard()
        self._hw = 0
        self._cleaner_offset = 0
        self._truncations = 0
        self.epoch_cache = LeaderEpochCache(directory)
        self.recovery_report = self._open()

    @property
    def name(self) -> str:
        return f"{self.topic}-{self.partition}"

    # ================================================================== open
    def _open(self) -> RecoveryReport:
        report = RecoveryReport(self.name)
        log_start, recovery_point, hw, self._cleaner_offset = self._read_checkpoint()
        report.interrupted_swaps = recover_interrupted_swaps(self.directory)
        bases = sorted(int(n[:-4]) for n in os.listdir(self.directory)
                       if n.endswith(".log") and n[:-4].isdigit())
        # Leftovers of an interrupted write of a metadata file, and removed segments' files a crash left.
        for n in os.listdir(self.directory):
            if n.endswith(".tmp") or n.endswith(DELETED_SUFFIX):
                os.unlink(os.path.join(self.directory, n))
        if not bases:
            bases = [log_start]
        for i, base in enumerate(bases):
            seg = Segment(self.directory, base, index_interval_bytes=self.config.index_interval_bytes)
            is_last = i == len(bases) - 1
            next_base = bases[i + 1] if not is_last else None
            needs_verify = next_base is None or next_base > recovery_point
            seg_report = seg.recover(max(recovery_point, base) if needs_verify else None)
            report.segments.append(seg_report)
            self._segments.append(seg)
            self._bases.append(base)
            if seg_report.truncated_at is not None and not is_last:
                # Everything after a torn batch is suspect: drop the following segments.
                for later in bases[i + 1:]:
                    s = Segment(self.directory, later)
                    s.delete()
                    s.close_file()
                    report.deleted_segments.append(later)
                break
            if not is_last:
                seg.seal()
        self._log_start = max(log_start, self._segments[0].base_offset)
        leo = self.log_end_offset
        if self._log_start > leo:
            self._log_start = leo
        self._recovery_point = min(recovery_point, leo)
        self._hw = leo if hw < 0 else max(self._log_start, min(hw, leo))
        if not self.epoch_cache.exists_on_disk and leo > self._log_start:
            # A log written before leader epochs were tracked: all of it is epoch 0.
            self.epoch_cache.assign(0, self._log_start)
        self.epoch_cache.truncate_from_end(leo)
        for seg in self._segments:
            # Verified above the recovery point, but maybe only in the page cache (a process
            # crash): not durable until fsynced, so the next flush must sync these segments.
            if seg.size and seg.next_offset > self._recovery_point:
                seg.dirty = True
        self._rebuild_producer_state(report)
        self._write_checkpoint()
        if report.repaired:
            logger.warning("recovered log %s", report.describe())
        else:
            logger.debug("opened log %s: log_start=%d leo=%d", self.name, self._log_start, leo)
        return report

    def _read_checkpoint(self) -> tuple[int, int, int, int]:
        """(log start, recovery point, high watermark, cleaner offset); HW -1 when the checkpoint predates it."""
        path = os.path.join(self.directory, CHECKPOINT_FILE)
        try:
            with open(path, "rb") as f:
                doc = json.load(f)
            return (int(doc["log_start_offset"]), int(doc["recovery_point"]), int(doc.get("high_watermark", -1)),
                    int(doc.get("cleaner_offset", 0)))
        except FileNotFoundError:
            return 0, 0, 0, 0
        except (OSError, ValueError, KeyError, TypeError):
            logger.warning("%s: unreadable %s, verifying the whole log", self.directory, CHECKPOINT_FILE)
            return 0, 0, 0, 0

    def _write_checkpoint(self) -> None:
        state = (self._log_start, self._recovery_point, self._hw, self._cleaner_offset)
        if state == self._checkpointed:
            return
        self._dir_failure.check()  # an offline directory's checkpoint stays as it was
        path, data = self._checkpoint_file(state)
        with self._loop_write():
            try:
                atomic_write(path, data)
            except OSError as exc:
                raise self._dir_failure.report("checkpoint write", path, exc) from exc
        self._checkpointed = state

    @contextlib.contextmanager
    def _loop_write(self) -> Iterator[None]:
        """Write (or remove) checkpoint or snapshot files on the loop: flush tickets captured
        before this do not write theirs over it."""
        with self._guard.lock:
            self._guard.generation += 1
            yield

    def _checkpoint_file(self, state: tuple[int, int, int, int]) -> tuple[str, bytes]:
        doc = {"version": 2, "log_start_offset": state[0], "recovery_point": state[1], "high_watermark": state[2],
               "cleaner_offset": state[3]}
        return os.path.join(self.directory, CHECKPOINT_FILE), json.dumps(doc).encode()

    def _rebuild_producer_state(self, report: RecoveryReport | None = None) -> None:
        """Producer state (and open transactions) from the newest snapshot at or below the log end,
        plus the batches after it; the aborted-transaction index entries of that range are rebuilt
        on the way (they are dropped first, so a replay never indexes a transaction twice)."""
        leo = self.log_end_offset
        snap = self.producer_state.load_latest(leo)
        start = self._log_start if snap is None else max(snap, self._log_start)
        for seg in self._segments:
            entries = seg.txn_index.entries
            if entries and entries[-1].last_offset >= start:
                seg.txn_index.truncate_to(start)
        n = 0
        for seg, pos, hdr in self._iter_headers_from(start):
            if hdr.producer_id < 0 or hdr.last_offset < start:
                continue
            if hdr.is_control:
                try:
                    marker = decode_control_marker(os.pread(seg.fd, hdr.size, pos))
                except CorruptRecordError as exc:
                    logger.warning("%s: unreadable control batch at offset %d: %s", self.name, hdr.base_offset, exc)
                    continue
                self._complete_txn(seg, hdr.producer_id, hdr.producer_epoch, marker.coordinator_epoch,
                                   not marker.commit, hdr.base_offset, hdr.max_timestamp)
            else:
                self.producer_state.update(hdr, hdr.base_offset, hdr.max_timestamp)
            n += 1
        if report is not None:
            report.producer_snapshot = snap
            report.producer_batches_replayed = n

    def _complete_txn(self, seg: Segment, producer_id: int, producer_epoch: int, coordinator_epoch: int,
                      aborted: bool, marker_offset: int, timestamp: int) -> CompletedTxn | None:
        """A marker at ``marker_offset`` (in ``seg``) closes a transaction; index it if aborted."""
        done = self.producer_state.complete_txn(producer_id, producer_epoch, coordinator_epoch, aborted,
                                                marker_offset, timestamp)
        if done is not None and done.aborted:
            first_unstable = self.producer_state.first_unstable_offset()
            lso = marker_offset + 1 if first_unstable is None else min(first_unstable, marker_offset + 1)
            try:
                seg.txn_index.append(AbortedTxn(producer_id, done.first_offset, marker_offset, lso))
            except OSError as exc:
                raise self._dir_failure.report("transaction index write", seg.txn_index.path, exc) from exc
        return done

    # ============================================================ properties
    @property
    def log_end_offset(self) -> int:
        return self._segments[-1].next_offset

    @property
    def high_watermark(self) -> int:
        return self._hw

    @high_watermark.setter
    def high_watermark(self, offset: int) -> None:
        """Set by the partition's replication state; kept within [log start, log end]."""
        self._hw = max(self._log_start, min(offset, self.log_end_offset))

    @property
    def last_stable_offset(self) -> int:
        """What ``read_committed`` consumers may read below: the high watermark, or the first offset of
        the oldest open transaction if lower (never below the log start)."""
        first_unstable = self.producer_state.first_unstable_offset()
        hw = self._hw
        if first_unstable is None or first_unstable >= hw:
            return hw
        return max(first_unstable, self._log_start)

    def aborted_transactions(self, fetch_offset: int, upper_bound: int) -> list[AbortedTxn]:
        """The aborted transactions with records in ``[fetch_offset, upper_bound)`` (a read_committed Fetch)."""
        out: list[AbortedTxn] = []
        for seg in self._segments[self._segment_index_for(fetch_offset):]:
            found, complete = seg.txn_index.collect(fetch_offset, upper_bound)
            out += found
            if complete or seg.base_offset >= upper_bound:
                break
        return out

    @property
    def log_start_offset(self) -> int:
        return self._log_start

    @property
    def recovery_point(self) -> int:
        return self._recovery_point

    @property
    def cleaner_offset(self) -> int:
        """Where the next compaction pass starts: the data below was cleaned (kept within the log)."""
        return max(self._log_start, min(self._cleaner_offset, self.log_end_offset))

    def set_cleaner_offset(self, offset: int) -> None:
        """A compaction pass cleaned everything below ``offset``; checkpointed with the log's state."""
        if offset != self._cleaner_offset:
            self._cleaner_offset = offset
            self._write_checkpoint()

    @property
    def size_bytes(self) -> int:
        return sum(s.size for s in self._segments)

    @property
    def segments(self) -> list[Segment]:
        return list(self._segments)

    @property
    def active_segment(self) -> Segment:
        return self._segments[-1]

    @property
    def dir_failure(self) -> LogDirFailureChannel:
        """The failure channel of the directory this log lives in."""
        return self._dir_failure

    # ================================================================ append
    def append(self, batch: bytes | bytearray | memoryview, *, coordinator: bool = False,
               verification: VerificationGuard | None = None, header: BatchHeader | None = None) -> AppendResult:
        """Validate, stamp and write one client (or, with ``coordinator``, coordinator) record batch.

        A transactional batch that would open its producer's transaction here needs ``verification``,
        the guard of a successful check with the transaction coordinator (coordinator writes are
        checked by their coordinator and carry no sequence numbers).  ``header``: the batch's header
        when the caller has parsed it already (of these very bytes).
        Raises ``CorruptMessageError``, ``InvalidRecordError``, ``MessageTooLargeError``,
        ``InvalidTimestampError``, ``OutOfOrderSequenceError``, ``InvalidProducerEpochError``,
        ``InvalidTxnStateError``; nothing is written when it raises.  A bytearray or writable
        memoryview (the batch in the received request) is stamped in place and written from there;
        anything else is copied first.  ``KafkaStorageError`` when the log directory is offline or
        goes offline (a failed write, or a failed fsync of a ``flush.messages`` flush).
        """
        self._dir_failure.check()
        kind = type(batch)
        in_place = kind is bytearray or (kind is memoryview and not batch.readonly)  # type: ignore[union-attr]
        buf = batch if in_place else bytearray(batch)
        n = len(buf)
        if n < BATCH_HEADER_SIZE:
            raise CorruptMessageError(f"batch of {n} bytes is shorter than a batch header")
        if buf[16] != 2:
            raise InvalidRecordError(f"record batch magic {buf[16]} is not 2")
        if header is None:
            try:
                header = parse_batch_header(buf, 0)
            except CorruptRecordError as e:
                raise CorruptMessageError(str(e)) from None
        h = header
        size = h.size
        config = self.config
        if size > config.max_message_bytes:
            raise MessageTooLargeError(f"batch of {size} bytes exceeds max.message.bytes="
                                       f"{config.max_message_bytes}")
        if n != size:
            if n < size:
                raise CorruptMessageError(f"batch claims {size} bytes but {n} were sent")
            raise InvalidRecordError("exactly one record batch per partition is allowed")
        if not crc_ok(buf, 0, h):
            raise CorruptMessageError("record batch CRC mismatch")
        if h.base_offset != 0:
            raise InvalidRecordError(f"base offset must be 0, got {h.base_offset}")
        if h.records_count <= 0 or h.last_offset_delta + 1 != h.records_count:
            raise InvalidRecordError(f"lastOffsetDelta {h.last_offset_delta} does not match "
                                     f"recordsCount {h.records_count}")
        if h.is_control:
            raise InvalidRecordError("clients may not write control batches")
        if h.producer_id >= 0 and h.base_sequence < 0 and not coordinator:
            raise InvalidRecordError(f"producer id {h.producer_id} with base sequence {h.base_sequence}")
        now = self.clock()
        if config.log_append_time:
            max_ts = now
        else:
            if h.attributes & TIMESTAMP_TYPE_MASK:
                raise InvalidTimestampError("producer may not set timestamp type LogAppendTime")
            max_ts = h.max_timestamp
            if max_ts >= 0 and (max_ts - now > config.timestamp_after_max_ms
                                or now - h.base_timestamp > config.timestamp_before_max_ms):
                raise InvalidTimestampError(f"timestamp {max_ts} out of range at broker time {now}")
        if h.producer_id >= 0:
            dup = self.producer_state.check(h, sequenced=not coordinator)
            if dup is not None:
                return AppendResult(dup.base_offset, dup.last_offset,
                                    now if config.log_append_time else -1, self._log_start, True)
            if h.is_transactional and not coordinator and not self.producer_state.verified(h, verification):
                raise InvalidTxnStateError(f"producer {h.producer_id}: {self.name} is not part of its transaction")
        elif h.is_transactional:
            raise InvalidRecordError("a transactional batch needs a producer id")

        base = self._segments[-1].next_offset
        last = base + h.last_offset_delta
        self._write_batch(buf, base, last, max_ts, now, stamp=True)
        if h.producer_id >= 0:
            self.producer_state.update(h, base, max_ts, now)
        self._unflushed_messages += h.records_count
        if self._unflushed_messages >= config.flush_messages:
            self.flush()
        return AppendResult(base, last, now if config.log_append_time else -1, self._log_start)

    def append_marker(self, producer_id: int, producer_epoch: int, commit: bool,
                      coordinator_epoch: int) -> AppendResult:
        """Write a COMMIT or ABORT marker for ``producer_id`` (a leader handling WriteTxnMarkers, or a
        coordinator ending a transaction in its own partition); closes its transaction here.

        Raises ``InvalidProducerEpochError`` for an epoch older than the producer's and
        ``TransactionCoordinatorFencedError`` for a coordinator older than the last marker's.
        """
        self._dir_failure.check()
        self.producer_state.check_marker(producer_id, producer_epoch, coordinator_epoch)
        now = self.clock()
        buf = bytearray(encode_control_marker(producer_id, producer_epoch, commit, coordinator_epoch, now))
        base = self._segments[-1].next_offset
        self._write_batch(buf, base, base, now, now, stamp=True)
        self._complete_txn(self._segments[-1], producer_id, producer_epoch, coordinator_epoch, not commit, base, now)
        self._unflushed_messages += 1
        if self._unflushed_messages >= self.config.flush_messages:
            self.flush()
        return AppendResult(base, base, now if self.config.log_append_time else -1, self._log_start)

    def _write_batch(self, buf: bytearray | memoryview, base: int, last: int, max_ts: int, now: int, *,
                     stamp: bool) -> None:
        """Write one batch at the log end (rolling first if due); ``stamp``: a leader's append
        (set the base offset, this leader's epoch and, for LogAppendTime topics, the time)."""
        seg = self._segments[-1]
        try:
            if seg.size and (seg.size + len(buf) > self.config.segment_bytes or self._roll_due(seg, now, max_ts)
                             or last - seg.base_offset > _INT32_MAX):
                seg = self.roll()
            if stamp:
                stamp_base_offset(buf, 0, base)
                epoch = self.epoch_cache.latest_epoch
                if epoch >= 0:
                    stamp_leader_epoch(buf, 0, epoch)
                if self.config.log_append_time:
                    stamp_log_append_time(buf, 0, now)  # type: ignore[arg-type]
            was_dirty = seg.dirty
            seg.append(buf, base, last + 1, max_ts, now)
        except OSError as exc:
            raise self._dir_failure.report("write", seg.log_path, exc) from exc
        if not was_dirty and self._on_dirty is not None:
            self._on_dirty(self)

    # ====================================================== replication
    def assign_leader_epoch(self, epoch: int) -> None:
        """This replica leads from now on in ``epoch``: batches appended from here on carry it.

        A log that knows no epoch though it holds batches (its checkpoint was unreadable) first
        rebuilds the cache from the leader epochs its batches carry, so the divergence checks it
        answers describe its own history."""
        if self.epoch_cache.latest_epoch < 0 and self.log_end_offset > self._log_start:
            for _, _, hdr in self._iter_headers_from(self._log_start):
                if hdr.partition_leader_epoch > self.epoch_cache.latest_epoch:
                    self.epoch_cache.assign(hdr.partition_leader_epoch, max(hdr.base_offset, self._log_start))
            if self.epoch_cache.entries:
                logger.warning("%s: leader-epoch cache rebuilt from the log: %s", self.name, self.epoch_cache.entries)
        self.epoch_cache.assign(epoch, self.log_end_offset)

    def prepare_to_follow(self) -> bool:
        """This replica is about to fetch from a leader.  A log that knows no leader epoch (its
        checkpoint was unreadable) cannot have its tail checked against the leader's — the
        divergence check needs the epoch of its last batch — so, as Kafka truncates a follower
        without epochs, it keeps only what is committed: its tail above the high watermark is cut.
        True if it was."""
        if self.epoch_cache.latest_epoch >= 0 or self.log_end_offset <= self._hw or self._dir_failure.offline:
            return False
        logger.warning("%s: no leader epoch known; truncating from %d to the high watermark %d before following",
                       self.name, self.log_end_offset, self._hw)
        self.truncate_to(self._hw)
        return True

    def append_as_follower(self, data: bytes | bytearray | memoryview) -> int:
        """Append the leader's batches verbatim (offsets and leader epochs kept); returns how many.

        Batches wholly below the log end are skipped (already here); a trailing
        partial batch is ignored (the next fetch gets it whole).  Raises
        ``CorruptMessageError`` for a batch that fails its CRC or overlaps the log end,
        leaving everything before it appended.
        """
        view = memoryview(data)
        pos, end, n = 0, len(view), 0
        now = self.clock()
        while pos + BATCH_HEADER_SIZE <= end:
            try:
                h = parse_batch_header(view, pos)
            except CorruptRecordError as e:
                raise CorruptMessageError(f"{self.name}: bad batch from the leader: {e}") from None
            size = h.size
            if pos + size > end:
                break
            last = h.base_offset + h.last_offset_delta
            leo = self.log_end_offset
            if last < leo:
                pos += size
                continue
            if h.base_offset < leo:
                raise CorruptMessageError(f"{self.name}: leader batch {h.base_offset}..{last} overlaps the log "
                                          f"end {leo}")
            if h.magic != 2 or not crc_ok(view, pos, h):
                raise CorruptMessageError(f"{self.name}: leader batch at offset {h.base_offset} fails its CRC")
            if h.partition_leader_epoch > self.epoch_cache.latest_epoch:
                self.epoch_cache.assign(h.partition_leader_epoch, h.base_offset)
            self._write_batch(view[pos:pos + size], h.base_offset, last, h.max_timestamp, now, stamp=False)
            if h.producer_id >= 0 and h.is_control:
                try:
                    marker = decode_control_marker(view[pos:pos + size])
                except CorruptRecordError as exc:
                    logger.warning("%s: unreadable control batch from the leader at offset %d: %s", self.name,
                                   h.base_offset, exc)
                else:
                    self._complete_txn(self._segments[-1], h.producer_id, h.producer_epoch,
                                       marker.coordinator_epoch, not marker.commit, h.base_offset, now)
            elif h.producer_id >= 0:
                self.producer_state.update(h, h.base_offset, h.max_timestamp, now)
            self._unflushed_messages += h.records_count
            n += 1
            pos += size
        if n and self._unflushed_messages >= self.config.flush_messages:
            self.flush()
        return n

    def truncate_to(self, offset: int) -> None:
        """Cut the log back to ``offset`` (a follower dropping a tail its leader does not have)."""
        if offset >= self.log_end_offset:
            return
        self._dir_failure.check()
        self._truncations += 1
        offset = max(offset, self._log_start)
        while len(self._segments) > 1 and self._segments[-1].base_offset >= offset:
            seg = self._segments.pop()
            self._bases.pop()
            seg.delete(self._remove_later)
            self._retired.append((self.clock(), seg))
        seg = self._segments[-1]
        position = seg.size
        for pos, hdr in seg.iter_headers(0):
            if hdr.base_offset + hdr.last_offset_delta >= offset:
                position = pos
                break
        seg.truncate_to(position)
        self.epoch_cache.truncate_from_end(self.log_end_offset)
        with self._loop_write():  # a flush ticket captured before must not write a snapshot above the new end
            self._rebuild_producer_state()  # drops the snapshots above the new end, replays up to it
        self._recovery_point = min(self._recovery_point, self.log_end_offset)
        self._hw = min(self._hw, self.log_end_offset)
        self._cleaner_offset = min(self._cleaner_offset, self.log_end_offset)  # what follows is not cleaned
        self._write_checkpoint()
        logger.info("%s: truncated to offset %d", self.name, self.log_end_offset)

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Throw the whole log away and start empty at ``offset`` (below the leader's log start)."""
        self._dir_failure.check()
        self._truncations += 1
        for seg in self._segments:
            seg.delete(self._remove_later)
            self._retired.append((self.clock(), seg))
        seg = Segment(self.directory, offset, index_interval_bytes=self.config.index_interval_bytes)
        self._segments = [seg]
        self._bases = [offset]
        self._log_start = self._recovery_point = self._hw = self._cleaner_offset = offset
        self.epoch_cache.clear()
        self.producer_state.clear()
        with self._loop_write():
            for snap in self.producer_state.snapshot_offsets():
                self.producer_state._remove(snap)
        self._write_checkpoint()
        logger.info("%s: emptied, starting at offset %d", self.name, offset)

    def follow_log_start_offset(self, offset: int) -> None:
        """A follower moves its log start up to the leader's (never past its own high watermark)."""
        target = min(offset, self._hw)
        if target > self._log_start:
            self._log_start = target
            self.epoch_cache.truncate_from_start(target)
            self._write_checkpoint()
            self._delete_below_log_start()

    def _roll_due(self, seg: Segment, now: int, incoming_ts: int | None = None) -> bool:
        """The active segment is old enough to roll (``segment.ms`` less this segment's share of
        ``segment.jitter.ms``; a compacted topic at most ``max.compaction.lag.ms``) or its indexes are
        full (``segment.index.bytes``).  On append, age is measured as Kafka does: from the segment's
        first timestamp to the incoming batch's (``incoming_ts``), so a producer whose timestamps lag the
        broker's clock does not roll a segment per batch; else by the broker's clock."""
        cfg = self.config
        if seg.indexes_full(cfg.segment_index_bytes):
            return True
        if seg.roll_base_ms is None:
            return False
        jitter = zlib.crc32(f"{self.name}@{seg.base_offset}".encode()) % cfg.segment_jitter_ms \
            if cfg.segment_jitter_ms > 0 else 0
        reference = incoming_ts if incoming_ts is not None and incoming_ts >= 0 else now
        return reference - seg.roll_base_ms >= cfg.max_segment_ms - jitter

    def roll(self) -> Segment:
        """Seal the active segment and start a new one at the log end offset."""
        old = self._segments[-1]
        if old.size == 0:
            return old
        old.seal()
        seg = Segment(self.directory, old.next_offset, index_interval_bytes=self.config.index_interval_bytes)
        self._segments.append(seg)
        self._bases.append(seg.base_offset)
        return seg

    # ================================================================== read
    def _check_offset(self, offset: int) -> None:
        if offset < self._log_start or offset > self.log_end_offset:
            raise OffsetOutOfRangeError(
                f"offset {offset} not in [{self._log_start}, {self.log_end_offset}] of {self.name}")

    def _segment_index_for(self, offset: int) -> int:
        return max(bisect_right(self._bases, offset) - 1, 0)

    def read(self, fetch_offset: int, max_bytes: int, min_one_message: bool = True,
             max_offset: int | None = None) -> ReadResult:
        """Whole batches starting with the one containing ``fetch_offset``, within ``max_bytes``.

        Reads from one segment (the next fetch continues in the next one), never
        past ``max_offset`` (default: the high watermark; followers read up to the log end).  The first batch is
        returned whole even when larger than ``max_bytes`` if ``min_one_message``.
        Raises ``OffsetOutOfRangeError`` if ``fetch_offset`` is outside [log start, LEO],
        ``KafkaStorageError`` if the log directory is offline.
        """
        self._dir_failure.check()
        self._check_offset(fetch_offset)
        hw = self.high_watermark
        limit_offset = hw if max_offset is None else min(max_offset, self.log_end_offset)
        try:
            slices = self._read_slices(fetch_offset, max_bytes, min_one_message, limit_offset)
        except TornBatch as t:
            raise KafkaStorageError(f"{self.name}: unreadable batch {t}") from None
        return ReadResult(slices, hw, self._log_start, self.log_end_offset)

    def _read_slices(self, fetch_offset: int, max_bytes: int, min_one_message: bool,
                     limit_offset: int) -> list[FileSlice]:
        slices: list[FileSlice] = []
        if fetch_offset < limit_offset:
            i = self._segment_index_for(fetch_offset)
            while i < len(self._segments):
                seg = self._segments[i]
                pos = seg.lookup(fetch_offset)
                if pos is not None:
                    end = seg.slice_end(pos, max_bytes, min_one_message)
                    if limit_offset < seg.next_offset:
                        end = min(end, self._position_of_offset_end(seg, pos, limit_offset))
                    if end > pos:
                        slices.append(FileSlice(seg.handle, pos, end - pos))
                    break
                i += 1  # offset falls in a gap (e.g. after compaction): continue in the next segment
        return slices

    @staticmethod
    def _position_of_offset_end(seg: Segment, start: int, offset: int) -> int:
        """Position where the first batch at or after ``offset`` starts (for max_offset caps)."""
        for pos, hdr in seg.iter_headers(start):
            if hdr.base_offset >= offset:
                return pos
        return seg.size

    def read_bytes(self, fetch_offset: int, max_bytes: int = 1 << 20, min_one_message: bool = True) -> bytes:
        """``read`` copied into memory — for small internal readers (group coordinator replay)."""
        return self.read(fetch_offset, max_bytes, min_one_message).to_bytes()

    def iter_batches(self, start_offset: int) -> Iterator[tuple[BatchHeader, bytes]]:
        """Every batch from the one containing ``start_offset`` to the end, as (header, bytes)."""
        for seg, pos, hdr in self._iter_headers_from(max(start_offset, self._log_start)):
            yield hdr, os.pread(seg.fd, hdr.size, pos)

    def _iter_headers_from(self, offset: int) -> Iterator[tuple[Segment, int, BatchHeader]]:
        for seg in self._segments[self._segment_index_for(offset):]:
            pos = seg.lookup(offset) if seg.base_offset <= offset else 0
            if pos is None:
                continue
            for p, hdr in seg.iter_headers(pos):
                yield seg, p, hdr

    # ========================================================== timestamps
    def offset_for_timestamp(self, timestamp: int) -> tuple[int, int]:
        """(offset, timestamp) of the first record with timestamp >= ``timestamp``; (-1, -1) if none."""
        start = self._segment_index_for(self._log_start)
        for seg in self._segments[start:]:
            found = seg.find_by_timestamp(timestamp)
            if found is None:
                continue
            pos, hdr = found
            exact = self._record_at_or_after(seg, pos, hdr, lambda r: r.timestamp >= timestamp)
            if exact is not None and exact[0] >= self._log_start:
                return exact
            return max(hdr.base_offset, self._log_start), hdr.max_timestamp
        return -1, -1

    def max_timestamp_offset(self) -> tuple[int, int]:
        """(offset, timestamp) of the record with the largest timestamp (ListOffsets MAX_TIMESTAMP)."""
        best: Segment | None = None
        for seg in self._segments[self._segment_index_for(self._log_start):]:
            if seg.max_timestamp >= 0 and (best is None or seg.max_timestamp > best.max_timestamp):
                best = seg
        if best is None:
            return -1, -1
        pos = best.lookup(best.offset_of_max_timestamp)
        if pos is not None:
            hdr = best.read_header(pos)
            ts = hdr.max_timestamp
            exact = self._record_at_or_after(best, pos, hdr, lambda r: r.timestamp == ts)
            if exact is not None:
                return exact
        return best.offset_of_max_timestamp, best.max_timestamp

    @staticmethod
    def _record_at_or_after(seg: Segment, pos: int, hdr: BatchHeader,
                            pred: Callable[..., bool]) -> tuple[int, int] | None:
        """Refine a batch-level answer to the record level (rare admin path; decodes one batch)."""
        if hdr.timestamp_type == 1:
            return hdr.base_offset, hdr.max_timestamp  # every record carries the append time
        try:
            _, records = decode_batch(os.pread(seg.fd, hdr.size, pos))
        except (CorruptRecordError, ValueError):
            return None
        for r in records:
            if pred(r):
                return r.offset, r.timestamp
        return None

    def list_offset(self, timestamp: int) -> tuple[int, int]:
        """ListOffsets: -1 LATEST (HW), -2 EARLIEST, -3 MAX_TIMESTAMP, -4 EARLIEST_LOCAL, else by time."""
        self._dir_failure.check()
        if timestamp == -1:
            return self.high_watermark, -1
        if timestamp in (-2, -4):
            return self._log_start, -1
        if timestamp == -3:
            return self.max_timestamp_offset()
        return self.offset_for_timestamp(timestamp)

    # ===================================================== deletion / retention
    def delete_records_before(self, offset: int) -> int:
        """DeleteRecords: move the log start offset up to ``offset`` (-1 = high watermark).

        Returns the new log start offset (the "low watermark").  Whole segments
        entirely below it are deleted.
        """
        self._dir_failure.check()
        hw = self.high_watermark
        if offset == -1:
            offset = hw
        if offset < 0 or offset > hw:
            raise OffsetOutOfRangeError(f"cannot delete records before {offset}: high watermark is {hw}")
        if offset > self._log_start:
            self._log_start = offset
            self._write_checkpoint()
            self._delete_below_log_start()
        return self._log_start

    def _delete_below_log_start(self) -> int:
        n = 0
        while len(self._segments) > 1 and self._segments[1].base_offset <= self._log_start:
            self._delete_oldest()
            n += 1
        return n

    def _delete_oldest(self) -> None:
        seg = self._segments.pop(0)
        self._bases.pop(0)
        seg.delete(self._remove_later)
        self._retired.append((self.clock(), seg))
        if self._segments[0].base_offset > self._log_start:
            self._log_start = self._segments[0].base_offset
        logger.info("%s: deleted segment %d (%d bytes)", self.name, seg.base_offset, seg.size)

    def apply_retention(self, now_ms: int | None = None) -> int:
        """Delete the oldest segments past ``retention.ms`` / ``retention.bytes``; return how many.

        Only what the high watermark has passed goes (Kafka's ``deletableSegments``): a segment is
        deletable when the high watermark is at or past its end (the next segment's base offset, or
        the log end for the active segment), so the log start never overtakes the high watermark and
        no record a follower may still need is deleted; the high watermark is never moved.  When
        every segment goes, the active one is rolled first so an empty one stays at the log end.
        """
        cfg = self.config
        if not cfg.delete:
            return 0
        now = self.clock() if now_ms is None else now_ms
        deleted = 0
        if cfg.retention_ms >= 0:
            def expired(s: Segment) -> bool:
                if s.size == 0:
                    return True  # emptied by compaction: nothing to keep (an empty active one stays)
                newest = s.max_timestamp if s.max_timestamp >= 0 else s.roll_base_ms
                return newest is not None and now - newest > cfg.retention_ms

            deleted += self._delete_oldest_while(expired)
        if cfg.retention_bytes >= 0:
            excess = [self.size_bytes - cfg.retention_bytes]

            def oversize(s: Segment) -> bool:
                if excess[0] - s.size < 0:
                    return False
                excess[0] -= s.size
                return True

            deleted += self._delete_oldest_while(oversize)
        if deleted:
            # The new log start is checkpointed by the next flush, off the event loop (a checkpoint
            # written here fsyncs the directory on the loop, and on ext4 that commits the journal after
            # the dirty data of every file: a second at 150 MB/s).  Nothing depends on it being durable
            # now: a start read back lower after a crash is raised to the first segment's base when the
            # log opens, and a segment whose unlink did not survive the crash is deleted again.
            self.producer_state.delete_snapshots_below(self._log_start)
        return deleted

    def _delete_oldest_while(self, deletable: Callable[[Segment], bool]) -> int:
        """Delete segments from the oldest while ``deletable`` holds and the high watermark is at or
        past the segment's end (an empty active segment is never deleted); how many went."""
        segments = self._segments
        n = 0
        while n < len(segments):
            seg = segments[n]
            last = n == len(segments) - 1
            end = seg.next_offset if last else segments[n + 1].base_offset
            if (last and seg.size == 0) or self._hw < end or not deletable(seg):
                break
            n += 1
        if n == len(segments):
            self.roll()  # the active segment goes too: keep an empty one at the log end
        for _ in range(n):
            self._delete_oldest()
        return n

    def maintenance(self, now_ms: int | None = None, *, flush: bool = True) -> None:
        """Periodic work: roll by age, retention, flush by ``flush.ms`` (unless ``flush=False``:
        the owner flushes off its thread), close retired files.  Nothing once the directory is
        offline.  Compaction is the ``LogCleaner``'s (scheduled by the ``LogManager``)."""
        if self._dir_failure.offline:
            return
        now = self.clock() if now_ms is None else now_ms
        seg = self._segments[-1]
        if seg.size and self._roll_due(seg, now):
            self.roll()
        self.apply_retention(now)
        if flush and self.flush_due(now):
            self.flush()
        self.producer_state.expire(now, PRODUCER_ID_EXPIRATION_MS)
        self.close_retired(now)

    @property
    def retired(self) -> int:
        """Segments removed from the log whose files are still open (see ``close_retired``)."""
        return len(self._retired)

    def close_retired(self, now_ms: int, force: bool = False) -> None:
        """Drop the segment references of retired segments older than ``file.delete.delay.ms``
        (all with ``force``); each file closes once no queued response refers to it."""
        keep = []
        for t, seg in self._retired:
            if force or now_ms - t >= self.config.file_delete_delay_ms:
                # its file is unlinked or renamed over: the last close frees its space, off the loop
                seg.handle.closer = self._file_closer
                seg.close_file()
            else:
                keep.append((t, seg))
        self._retired = keep

    def replace_segments(self, groups: list[tuple[list[Segment], Segment]]) -> None:
        """Use compacted copies instead of sealed segments: each new segment (files already in place,
        the base offset of the first) replaces a run of consecutive old ones.  The old ones are
        retired: their ``.log`` file stays open for in-flight reads, and they must never unlink
        anything (their names now belong to the new files, or were unlinked by the cleaner)."""
        now = self.clock()
        for olds, new in groups:
            i = next(n for n, seg in enumerate(self._segments) if seg is olds[0])
            if [id(s) for s in self._segments[i:i + len(olds)]] != [id(s) for s in olds]:
                raise ValueError(f"{self.name}: replaced segments are not consecutive")
            self._segments[i:i + len(olds)] = [new]
            self._bases[i:i + len(olds)] = [new.base_offset]
            self._retired.extend((now, old) for old in olds)

    # ================================================================= flush
    @property
    def dirty(self) -> bool:
        return self._recovery_point < self.log_end_offset or any(s.dirty for s in self._segments)

    def flush_due(self, now_ms: int) -> bool:
        """True when ``flush.ms`` has passed since the last flush and there is unflushed data."""
        return self.dirty and now_ms - self._last_flush_ms >= self.config.flush_ms

    def prepare_flush(self) -> FlushTicket:
        """Write pending index entries and capture what to fsync (dup'd fds) up to the current LEO.

        Nothing is marked clean here: that happens in ``complete_flush`` after the fsync succeeded.
        """
        self._dir_failure.check()
        files: list[tuple[int, str]] = []
        segments: list[tuple[Segment, int]] = []
        try:
            for seg in self._segments:
                if not seg.dirty:
                    continue
                try:
                    seg.flush_pending_indexes()
                except OSError as exc:
                    raise self._dir_failure.report("index write", seg.offset_index.path, exc) from exc
                for fd, path in ((seg.fd, seg.log_path), (seg.offset_index._fd, seg.offset_index.path),
                                 (seg.time_index._fd, seg.time_index.path)):
                    files.append((os.dup(fd), path))
                if seg.txn_index.exists:
                    files.append((os.dup(seg.txn_index.fd), seg.txn_index.path))
                segments.append((seg, seg.size))
        except BaseException:
            FlushTicket(files, -1).close()
            raise
        offset = self.log_end_offset
        ticket = FlushTicket(files, offset, segments, self._unflushed_messages, self._truncations,
                             guard=self._guard, generation=self._guard.generation, dir_failure=self._dir_failure)
        if self.producer_state.changed and offset > self._log_start:
            # the state as of this offset, durable once the fsync covered it; changed again if not written
            ticket.writes.append(self.producer_state.snapshot(offset))
            ticket.snapshot = True
            self.producer_state.changed = False
        state = (self._log_start, max(offset, self._recovery_point), self._hw, self._cleaner_offset)
        if state != self._checkpointed:
            ticket.writes.append(self._checkpoint_file(state))
            ticket.checkpoint = state
        return ticket

    def complete_flush(self, ticket: FlushTicket) -> None:
        """After ``ticket.run()``: mark the captured data clean, advance the recovery point,
        checkpoint, snapshot producer state.

        A ticket whose fsync failed advances nothing: the failure takes the log directory offline
        and ``KafkaStorageError`` is raised.  So does completing any ticket once offline.
        """
        if not ticket.done:
            ticket.close()
            raise KafkaStorageError("flush ticket was not run")
        if ticket.snapshot and not ticket.written:
            self.producer_state.changed = True  # the captured snapshot was not written: the next flush's job
        if ticket.error is not None:
            raise self._dir_failure.report(ticket.failed_operation, ticket.failed_path or self.directory,
                                           ticket.error)
        self._dir_failure.check()
        if ticket.truncations != self._truncations:
            # The tail was cut (and maybe rewritten to the same sizes) after the capture: what the
            # fsync covered is not what the log holds now.  Leave it all to the next flush.
            self._last_flush_ms = self.clock()
            return
        for seg, size in ticket.segments:
            if seg.size == size:  # nothing appended since the capture: all of it is on disk now
                seg.dirty = False
        self._unflushed_messages = max(0, self._unflushed_messages - ticket.messages)
        if ticket.offset > self._recovery_point:
            self._recovery_point = min(ticket.offset, self.log_end_offset)
        if ticket.written:
            if ticket.checkpoint is not None:
                self._checkpointed = ticket.checkpoint
            if ticket.snapshot:
                self.producer_state.prune_snapshots()
        else:
            self._write_checkpoint()  # superseded meanwhile (rare): the current state, from the loop
        self._last_flush_ms = self.clock()

    def flush(self) -> None:
        """fsync everything appended so far (synchronously) and checkpoint.

        Raises ``KafkaStorageError`` if the directory is (or, by a failed fsync, goes) offline.
        """
        self.complete_flush(self.prepare_flush().run())

    # ============================================================= lifecycle
    def close(self) -> None:
        """Flush, snapshot and close the files.  An offline directory is not flushed or
        checkpointed (its recovery point stays where the last successful fsync left it)."""
        if not self._dir_failure.offline:
            try:
                self.flush()
                if self.producer_state.changed:
                    with self._loop_write():
                        self.producer_state.write_snapshot(self.log_end_offset)
            except KafkaStorageError:
                pass  # reported to the failure channel; close the files all the same
            except OSError as exc:
                self._dir_failure.report("producer snapshot write", self.directory, exc)
        for seg in self._segments:
            seg.close()
        self.close_retired(0, force=True)
        self._segments = []
        self._bases = []

    def delete(self) -> None:
        """Close and remove every file of this partition (topic deletion).

        Responses still queued keep reading the (unlinked) ``.log`` files they retained.
        """
        for seg in self._segments:
            seg.close()
        self.close_retired(0, force=True)
        self._segments = []
        self._bases = []

    def __repr__(self) -> str:
        return f"PartitionLog({self.name}, start={self._log_start}, leo={self.log_end_offset})"

