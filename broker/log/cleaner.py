"""Log compaction (``cleanup.policy=compact`` or ``compact,delete``, any topic), off the event loop.

``LogCleaner`` (one per ``LogManager``) works in three steps, like Kafka's cleaner:

1. **plan** — ``request(log)``, on the thread that owns the logs (the event
   loop): if the log needs cleaning (see *Policy*), queue it; when the worker is
   free, capture its *cleanable* segments as private duplicates of their
   descriptors, with what the pass needs to know (the producers' last offsets, the
   time, the topic's settings), and hand the pass to the worker.  No decoding, no
   reads.  One pass at a time.  Cleanable segments are sealed (never the active
   segment), wholly on disk (below the recovery point: the cleaned copies are
   fsynced, so a record must never be dropped for a newer one that a power loss
   could still take away), wholly below the high watermark (a follower may still
   truncate above it) and, with ``min.compaction.lag.ms``, old enough.
2. **clean** — on one background worker thread: read the captured byte ranges
   with ``pread`` (thread-safe on private descriptors) and build the key → latest
   offset map over the *dirty* part (from the log's ``cleaner_offset`` on).  The
   map is bounded: ``log.cleaner.dedupe.buffer.size`` bytes at
   :data:`MAP_ENTRY_BYTES` per distinct key; when it is full the pass cleans up to
   the last offset it mapped and the next pass continues from there (Kafka's
   semantics).  Then every cleanable segment below that point is filtered record by
   record.  A segment is rewritten only once a batch in it changes (*lazily*: the
   batches kept as they were up to then are copied over at that moment), into the
   pass's work directory (``<partition dir>/cleaning.<n>/``), with its indexes, and
   fsynced; a segment that loses nothing is not written at all.
3. **swap** — ``apply_completed()``, back on the owner thread, short: if the log
   changed under the pass (a captured segment deleted by retention or
   DeleteRecords, its size changed, the topic deleted, the log closed, the
   directory offline) the pass is abandoned and its work directory removed.
   Otherwise each cleaned segment's files are moved next to the log as
   ``<name>.swap`` (indexes first, ``.log.swap`` last: the commit point of that
   segment), the directory is fsynced, each ``.swap`` is renamed over its final
   name (indexes first, the ``.log`` last) and the directory fsynced again; the
   ``PartitionLog`` then uses the new ``Segment`` objects and retires the old
   ones (their ``.log`` stays open for in-flight reads), and its
   ``cleaner_offset`` (checkpointed) moves to where the pass stopped.

Segments are cleaned in groups (Kafka's ``groupSegmentsBySize``): consecutive
segments that fit together in ``segment.bytes`` (and ``segment.index.bytes``)
are written as one, so a compacted log with many small segments (a short
``segment.ms`` or ``max.compaction.lag.ms``) does not keep accumulating them and
their open files.  A group's cleaned segment has the base offset of its first
segment; its other segments' files are unlinked before the ``.swap`` is
renamed into place.

Crash safety (``recover_interrupted_swaps``, run when a partition log opens):
work directories are an unfinished pass and are removed; a ``<base>.log.swap``
is a committed replacement and is finished: the segments whose base offsets it
covers (the rest of its group) are removed, then its index ``.swap`` files, if
still there, and the log are renamed into place; index ``.swap`` files without
a ``.log.swap`` belong to an uncommitted segment and are removed.  A cleaned
segment keeps the offsets of what it replaces (gaps where records were
dropped), so every prefix of a swap is a consistent log.

What a pass keeps (Kafka's ``LogCleaner.shouldRetainRecord``, record by record):
a record is dropped when a later record with the same key is in the map, when it
has no key (a compacted topic refuses those on produce), or when it is a
tombstone whose batch's *delete horizon* has passed.  The first pass that keeps a
tombstone in the cleaned range stamps its batch with a delete horizon of now +
``delete.retention.ms`` (KIP-534: the batch's attribute bit 6, the horizon in its
base timestamp), so consumers have that long to see the deletion.  A batch that
loses records is built again with the rest — same codec, base offset, last offset
delta, producer id, epoch and base sequence, leader epoch — so offsets never
change; an idempotent producer's batch that loses all its records is kept as an
empty batch when it is that producer's last one (its sequence survives a restart),
else dropped.  Control and transactional batches are kept as they are, and so are
batches that do not decode; so a cleaned segment carries the aborted-transaction
index entries of the segments it replaces.

Policy (``needs_cleaning``): a compacted log is cleaned when the dirty share of its
cleanable bytes exceeds ``min.cleanable.dirty.ratio``, or its oldest dirty data is
older than ``max.compaction.lag.ms``, or a delete horizon it stamped has passed.
The owner asks every ``log.cleaner.backoff.ms`` and after each flush.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import threading
import weakref
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from broker.log._fs import fsync_dir
from broker.log.segment import Segment, segment_file_name
from broker.log.txn_index import AbortedTxn, TransactionIndex
from protocol.records import (
    BATCH_HEADER_SIZE,
    DELETE_HORIZON_MASK,
    BatchHeader,
    CorruptRecordError,
    Record,
    decode_batch,
    encode_batch,
    encode_empty_batch,
    parse_batch_header,
)

if TYPE_CHECKING:
    from broker.log.partition_log import PartitionLog

logger = logging.getLogger("kbroker.log")

WORK_DIR_PREFIX = "cleaning"  # cleaning.<n>/ per pass ("cleaning/" in older data directories)
SWAP_SUFFIX = ".swap"
_READ_CHUNK = 1024 * 1024
_INT32_MAX = 2147483647
_FILE_SUFFIXES = (".index", ".timeindex", ".txnindex", ".log")  # rename order: the .log last

#: Memory one distinct key costs in a pass's key map (a 16-byte digest, its offset and the dict slot,
#: measured on CPython 3.11); ``log.cleaner.dedupe.buffer.size`` / this = the keys a pass can map.
MAP_ENTRY_BYTES = 160
DEFAULT_DEDUPE_BUFFER_SIZE = 128 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class CleanerSettings:
    """The broker-level cleaner settings (``log.cleaner.*``); topic-level ones come with each log."""

    dedupe_buffer_size: int = DEFAULT_DEDUPE_BUFFER_SIZE

    @property
    def map_capacity(self) -> int:
        return max(1, self.dedupe_buffer_size // MAP_ENTRY_BYTES)


class OffsetMap:
    """Key → latest offset for one pass, holding at most ``capacity`` distinct keys (keys are kept as
    16-byte digests, as Kafka's ``SkimpyOffsetMap`` does, so a key's size does not matter)."""

    __slots__ = ("_map", "capacity")

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._map: dict[bytes, int] = {}

    @staticmethod
    def _digest(key: bytes) -> bytes:
        return hashlib.md5(key, usedforsecurity=False).digest()

    def put(self, key: bytes, offset: int) -> bool:
        """Record ``offset`` as the latest of ``key``; False (nothing recorded) when the map is full."""
        d = self._digest(key)
        if d not in self._map and len(self._map) >= self.capacity:
            return False
        self._map[d] = offset
        return True

    def get(self, key: bytes) -> int:
        return self._map.get(self._digest(key), -1)

    def __len__(self) -> int:
        return len(self._map)


class _Cancelled(Exception):
    """The cleaner is closing: stop the pass."""


@dataclass(slots=True)
class _Source:
    """A cleanable segment as captured when the pass was planned."""

    segment: Segment
    size: int
    next_offset: int
    fd: int  # a private duplicate, closed by the worker
    index_bytes: int = 0  # the larger of its two indexes
    aborted: list[AbortedTxn] = field(default_factory=list)  # its transaction index, as captured


Group = list[_Source]  # consecutive segments cleaned into one


@dataclass(slots=True)
class CleaningPass:
    """One compaction pass over one log: planned on the owner thread, run on the worker."""

    pass_id: int
    log: PartitionLog
    directory: str
    sources: list[_Source]
    now_ms: int
    first_dirty: int
    delete_retention_ms: int
    index_interval_bytes: int
    map_capacity: int
    segment_bytes: int = 1 << 30
    segment_index_bytes: int = 10 << 20
    #: producer id -> offset of the last record of its last batch (an emptied last batch is kept)
    producer_last_offsets: dict[int, int] = field(default_factory=dict)
    cancelled: threading.Event = field(default_factory=threading.Event)
    cleaned: list[tuple[Group, Segment]] = field(default_factory=list)
    error: BaseException | None = None
    upto: int = -1  # the pass cleaned the log below this offset (set by the worker)
    next_horizon: int | None = None  # the earliest delete horizon of a tombstone batch it kept
    decoded_batches: int = 0
    mapped_keys: int = 0
    reclaimed_bytes: int = 0
    done: bool = False

    @property
    def work_dir(self) -> str:
        return os.path.join(self.directory, f"{WORK_DIR_PREFIX}.{self.pass_id}")

    def close_fds(self) -> None:
        for src in self.sources:
            if src.fd >= 0:
                os.close(src.fd)
                src.fd = -1


class LogCleaner:
    """Compacts logs on one worker thread; plans and swaps on the owner thread (see module doc).

    Logs are queued by ``request`` and cleaned one pass at a time, in request order, so at
    most one log's segments are held open by the cleaner.  ``clock`` gives the time a pass is
    planned at (compaction lags, delete horizons).  ``settings``: the broker-level settings, which
    the owner may replace at any time (the next pass uses them).  ``executor``: where passes run
    (default: a private single-thread pool, created on first use).  ``on_done``: called from the
    worker after each pass, e.g. to wake the owner so it calls ``apply_completed()`` soon (the
    owner may also just call it periodically).  ``on_swapped(log)``: called on the owner thread after
    a swap retired some of ``log``'s segments (their files close after ``file.delete.delay.ms``).
    """

    def __init__(self, clock: Callable[[], int], *, settings: CleanerSettings | None = None,
                 executor: Executor | None = None, on_done: Callable[[], None] | None = None,
                 on_swapped: Callable[[PartitionLog], None] | None = None) -> None:
        self.clock = clock
        self.on_swapped = on_swapped
        self.settings = settings or CleanerSettings()
        self._executor = executor
        self._own_executor = executor is None
        self.on_done = on_done
        self._queue: dict[PartitionLog, None] = {}  # insertion-ordered set of logs to clean
        self._current: CleaningPass | None = None  # planned, being cleaned, or waiting for its swap
        self._done: deque[CleaningPass] = deque()
        #: the earliest delete horizon each log's kept tombstones wait for (a pass is due then)
        self._horizons: weakref.WeakKeyDictionary[PartitionLog, int] = weakref.WeakKeyDictionary()
        self._next_id = 0
        self._closed = False
        self._idle = threading.Condition()
        self._in_flight = 0
        self.passes_applied = 0
        self.passes_abandoned = 0

    # ------------------------------------------------------------ owner thread
    def needs_cleaning(self, log: PartitionLog, now_ms: int | None = None) -> bool:
        """The policy (see module doc): a compacted log whose cleanable dirty data is due."""
        cfg = log.config
        if not cfg.compact or log.dir_failure.offline:
            return False
        now = self.clock() if now_ms is None else now_ms
        segments = cleanable_segments(log, now)
        if not segments:
            return False
        first_dirty = log.cleaner_offset
        horizon = self._horizons.get(log)
        if horizon is not None and now >= horizon:
            return True
        clean = dirty = 0
        oldest_dirty: int | None = None
        for seg in segments:
            if seg.next_offset <= first_dirty:
                clean += seg.size
            else:
                dirty += seg.size
                if oldest_dirty is None and seg.roll_base_ms is not None:
                    oldest_dirty = seg.roll_base_ms
        if not dirty:
            return False
        if dirty / (clean + dirty) > cfg.min_cleanable_dirty_ratio:
            return True
        return oldest_dirty is not None and now - oldest_dirty > cfg.max_compaction_lag_ms

    def request(self, log: PartitionLog) -> bool:
        """Queue ``log`` for a pass if it needs one (and none is queued or running for it);
        start a pass at once if the worker is idle.  Cheap: no reads, no decoding."""
        if self._closed or log in self._queue or self.running(log) or not self.needs_cleaning(log):
            return False
        self._queue[log] = None
        self._start_next()
        return True

    def running(self, log: PartitionLog) -> bool:
        return self._current is not None and self._current.log is log

    @property
    def current(self) -> CleaningPass | None:
        return self._current

    def _start_next(self) -> None:
        while self._current is None and self._queue and not self._closed:
            log = next(iter(self._queue))
            del self._queue[log]
            if self.needs_cleaning(log):  # still (its topic may be gone, or it was cleaned)
                self._plan(log)

    def _plan(self, log: PartitionLog) -> None:
        """Capture the cleanable segments of ``log`` (private descriptors) and submit the pass."""
        now = self.clock()
        sources: list[_Source] = []
        try:
            for seg in cleanable_segments(log, now):
                sources.append(_Source(seg, seg.size, seg.next_offset, os.dup(seg.fd), seg.index_bytes,
                                       list(seg.txn_index.entries)))
        except OSError:
            for src in sources:
                os.close(src.fd)
            raise
        self._next_id += 1
        cfg = log.config
        producers = {pid: entry.batches[-1].last_offset
                     for pid, entry in log.producer_state.producers.items() if entry.batches}
        job = CleaningPass(self._next_id, log, log.directory, sources, now, log.cleaner_offset,
                           cfg.delete_retention_ms, cfg.index_interval_bytes, self.settings.map_capacity,
                           cfg.segment_bytes, cfg.segment_index_bytes, producers)
        self._current = job
        with self._idle:
            self._in_flight += 1
        try:
            self._executor_for_submit().submit(self._work, job)
        except BaseException:
            self._current = None
            with self._idle:
                self._in_flight -= 1
            job.close_fds()
            raise

    def apply_completed(self) -> int:
        """Swap in (or abandon) the finished pass, then start the next queued one; returns how
        many passes were handled."""
        n = 0
        while self._done:
            job = self._done.popleft()
            if self._current is job:
                self._current = None
            self._finish(job)
            n += 1
        self._start_next()
        return n

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Block until no pass is being cleaned (tests, shutdown); False on timeout."""
        with self._idle:
            return self._idle.wait_for(lambda: self._in_flight == 0, timeout)

    def close(self) -> None:
        """Stop: cancel running passes, wait for the worker, discard unfinished work."""
        self._closed = True
        self._queue.clear()
        if self._current is not None:
            self._current.cancelled.set()
        if self._own_executor and self._executor is not None:
            self._executor.shutdown(wait=True)
        while self._done:
            job = self._done.popleft()
            if self._current is job:
                self._current = None
            self._discard(job)

    def _executor_for_submit(self) -> Executor:
        if self._executor is None:
            self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kbroker-cleaner")
        return self._executor

    def _finish(self, job: CleaningPass) -> None:
        log = job.log
        current = self._still_current(job)
        if job.error is not None:
            if isinstance(job.error, OSError) and current:
                log.dir_failure.report("compaction", job.work_dir, job.error)
            elif not isinstance(job.error, _Cancelled) and current:
                logger.error("%s: compaction pass failed", log.name, exc_info=job.error)
            self._discard(job)
            return
        if not current:
            logger.info("%s: compaction pass abandoned (the log changed while it was cleaned)", log.name)
            self._discard(job)
            return
        if job.cleaned:
            try:
                self._swap(job)
            except OSError as exc:
                # The directory is left for recover_interrupted_swaps; stop trusting it now.
                self._discard(job)
                log.dir_failure.report("compaction swap", job.directory, exc)
                return
            logger.info("%s: compaction reclaimed %d bytes in %d segments (cleaned below offset %d)", log.name,
                        job.reclaimed_bytes, len(job.cleaned), job.upto)
            if self.on_swapped is not None:
                self.on_swapped(log)
        shutil.rmtree(job.work_dir, ignore_errors=True)
        if job.upto > log.cleaner_offset:
            log.set_cleaner_offset(job.upto)
        if job.next_horizon is None:
            self._horizons.pop(log, None)
        else:
            self._horizons[log] = job.next_horizon
        self.passes_applied += 1

    @staticmethod
    def _still_current(job: CleaningPass) -> bool:
        log = job.log
        if log.dir_failure.offline:
            return False
        live = {id(seg): seg for seg in log.segments}
        return all(live.get(id(src.segment)) is src.segment and src.segment.size == src.size
                   for src in job.sources)

    def _discard(self, job: CleaningPass) -> None:
        for _, new in job.cleaned:
            new.close()
        job.cleaned = []
        shutil.rmtree(job.work_dir, ignore_errors=True)
        self.passes_abandoned += 1

    @staticmethod
    def _swap(job: CleaningPass) -> None:
        directory = job.directory
        # Commit: move the cleaned files next to the log as .swap (a segment's .log.swap last).
        for _, new in job.cleaned:
            for suffix in _FILE_SUFFIXES:
                _move(new, suffix, os.path.join(directory, segment_file_name(new.base_offset, suffix) + SWAP_SUFFIX))
        fsync_dir(directory)
        # Install: the other segments of each merged group go, then each .swap is renamed over the
        # name of its group's first segment (the .log last), then the objects are switched.
        for group, new in job.cleaned:
            for src in group[1:]:
                src.segment.delete()  # unlinks its files; its .log stays open for in-flight reads
            first = group[0].segment
            first.offset_index.close()
            first.time_index.close()
            first.txn_index.close()
            for suffix in _FILE_SUFFIXES:
                _move(new, suffix, os.path.join(directory, segment_file_name(new.base_offset, suffix)))
            new.directory = directory
        fsync_dir(directory)
        job.log.replace_segments([([src.segment for src in group], new) for group, new in job.cleaned])

    # ----------------------------------------------------------------- worker
    def _work(self, job: CleaningPass) -> None:
        try:
            if job.cancelled.is_set():
                raise _Cancelled
            clean(job)
        except BaseException as exc:
            job.error = exc
        finally:
            job.close_fds()
            job.done = True
            self._done.append(job)
            with self._idle:
                self._in_flight -= 1
                self._idle.notify_all()
            if self.on_done is not None:
                try:
                    self.on_done()
                except Exception:
                    logger.debug("cleaner wake-up failed", exc_info=True)


def sealed_on_disk(log: PartitionLog) -> list[Segment]:
    """The sealed segments of ``log`` wholly below its recovery point (fsynced)."""
    segments = log.segments
    rp = log.recovery_point
    n = 0
    while n < len(segments) - 1 and segments[n].next_offset <= rp:
        n += 1
    return segments[:n]


def cleanable_segments(log: PartitionLog, now_ms: int) -> list[Segment]:
    """What a pass may read: the sealed segments on disk, wholly below the high watermark and, with
    ``min.compaction.lag.ms``, whose newest record is at least that old (the first too-new one ends
    the range, as Kafka's first uncleanable offset)."""
    hw = log.high_watermark
    lag = log.config.min_compaction_lag_ms
    out = []
    for seg in sealed_on_disk(log):
        if seg.next_offset > hw or (lag > 0 and seg.max_timestamp > now_ms - lag):
            break
        out.append(seg)
    return out


def _move(seg: Segment, suffix: str, target: str) -> None:
    """Rename one of ``seg``'s files (it keeps its descriptors) and update the path it knows."""
    if suffix == ".log":
        os.replace(seg.log_path, target)
        seg.log_path = target
    elif suffix == ".txnindex":
        if seg.txn_index.exists:
            seg.txn_index.rename(target)
        else:
            seg.txn_index.path = target
    else:
        index = seg.offset_index if suffix == ".index" else seg.time_index
        os.replace(index.path, target)
        index.path = target


# --------------------------------------------------------------------- the cleaning itself
def build_offset_map(job: CleaningPass) -> OffsetMap:
    """The key map over the dirty records (from ``job.first_dirty``); sets ``job.upto``: the map covers
    every record below it (the end of the captured data, or where the map filled up)."""
    offsets = OffsetMap(job.map_capacity)
    job.upto = job.sources[-1].next_offset if job.sources else job.first_dirty
    for src in job.sources:
        if src.next_offset <= job.first_dirty:
            continue
        for hdr, data in read_batches(src.fd, src.size, job.cancelled):
            if hdr.is_control or hdr.last_offset < job.first_dirty:
                continue
            job.decoded_batches += 1
            try:
                _, records = decode_batch(data)
            except CorruptRecordError:
                continue
            for r in records:
                if r.key is not None and r.offset >= job.first_dirty and not offsets.put(r.key, r.offset):
                    job.upto = r.offset
                    job.mapped_keys = len(offsets)
                    return offsets
    job.mapped_keys = len(offsets)
    return offsets


def group_sources(sources: list[_Source], upto: int, max_bytes: int, max_index_bytes: int) -> list[Group]:
    """The segments below ``upto`` in groups that are cleaned into one segment each (Kafka's
    ``groupSegmentsBySize``): consecutive, together within ``segment.bytes`` and
    ``segment.index.bytes``, their offsets within an int32 of the first."""
    groups: list[Group] = []
    current: Group = []
    size = index = 0
    for src in sources:
        if src.segment.base_offset >= upto:
            break
        if current and (size + src.size > max_bytes or index + src.index_bytes > max_index_bytes
                        or src.next_offset - 1 - current[0].segment.base_offset > _INT32_MAX):
            groups.append(current)
            current, size, index = [], 0, 0
        current.append(src)
        size += src.size
        index += src.index_bytes
    if current:
        groups.append(current)
    return groups


def clean(job: CleaningPass) -> None:
    """Build the key map, then filter every captured segment below ``job.upto`` group by group,
    writing a cleaned copy of each group that changes or merges several segments (see module doc).

    Runs on the worker thread; touches only the job's private descriptors and its work directory.
    """
    if not job.sources:
        return
    offsets = build_offset_map(job)  # empty when nothing is dirty (a pass for expired tombstones)
    os.mkdir(job.work_dir)  # not makedirs: never recreate the directory of a deleted partition
    for group in group_sources(job.sources, job.upto, job.segment_bytes, job.segment_index_bytes):
        new = _clean_group(job, group, offsets)
        if new is None:
            continue
        new.next_offset = group[-1].next_offset  # offsets stay: the range ends where the old one did
        aborted = [txn for src in group for txn in src.aborted]
        if aborted:  # markers and transactional batches are all kept: so is the index
            new.txn_index = TransactionIndex.write_new(new.txn_index.path, aborted)
        job.cleaned.append((group, new))
        new.seal()
        new.fsync()
        job.reclaimed_bytes += sum(src.size for src in group) - new.size


def _clean_group(job: CleaningPass, group: Group, offsets: OffsetMap) -> Segment | None:
    """The cleaned copy of a group of segments, or None for a single segment whose every batch
    stays as it is (nothing is written then; several segments are always merged)."""
    new: Segment | None = None
    if len(group) > 1:
        new = Segment(job.work_dir, group[0].segment.base_offset, index_interval_bytes=job.index_interval_bytes)
    unchanged: list[tuple[BatchHeader, int]] = []  # batches kept as they are, before the first change
    src = group[0]
    try:
        for src in group:
            pos = 0
            for hdr, data in read_batches(src.fd, src.size, job.cancelled):
                outcome = filter_batch(job, hdr, data, offsets)
                if outcome is None:  # kept as it is
                    if new is None:
                        unchanged.append((hdr, pos))
                    else:
                        new.append(data, hdr.base_offset, hdr.next_offset, hdr.max_timestamp, job.now_ms)
                else:
                    if new is None:
                        new = Segment(job.work_dir, src.segment.base_offset,
                                      index_interval_bytes=job.index_interval_bytes)
                        for kept, at in unchanged:  # copy what came before the first change
                            new.append(os.pread(src.fd, kept.size, at), kept.base_offset, kept.next_offset,
                                       kept.max_timestamp, job.now_ms)
                        unchanged = []
                    if outcome:
                        out_hdr = parse_batch_header(outcome, 0)
                        new.append(outcome, out_hdr.base_offset, out_hdr.next_offset, out_hdr.max_timestamp,
                                   job.now_ms)
                pos += hdr.size
    except BaseException:
        if new is not None:
            new.close()
        raise
    return new


def filter_batch(job: CleaningPass, hdr: BatchHeader, data: bytes, offsets: OffsetMap) -> bytes | None:
    """What becomes of one batch: None — kept as it is; ``b""`` — dropped; else the batch built again
    with the records that stay (and a delete horizon once it keeps a tombstone in the cleaned range)."""
    if hdr.is_control or hdr.is_transactional or hdr.base_offset >= job.upto:
        return None
    job.decoded_batches += 1
    try:
        _, records = decode_batch(data)
    except CorruptRecordError:
        return None
    horizon = hdr.base_timestamp if hdr.attributes & DELETE_HORIZON_MASK else None
    kept: list[Record] = []
    tombstones = False
    for r in records:
        if r.offset < job.upto:
            if r.key is None or offsets.get(r.key) > r.offset:
                continue  # keyless, or superseded by a later record of its key
            if r.value is None and horizon is not None and job.now_ms >= horizon:
                continue  # a tombstone past its delete horizon
        kept.append(r)
        tombstones = tombstones or r.value is None
    stamp = tombstones and horizon is None and hdr.last_offset < job.upto
    if stamp:
        horizon = job.now_ms + job.delete_retention_ms
    if tombstones and horizon is not None:
        job.next_horizon = horizon if job.next_horizon is None else min(job.next_horizon, horizon)
    if len(kept) == len(records) and not stamp:
        return None
    if not kept:
        if hdr.producer_id >= 0 and job.producer_last_offsets.get(hdr.producer_id) == hdr.last_offset:
            return encode_empty_batch(hdr)  # the producer's last batch: its sequence must survive
        return b""
    return encode_batch([r.as_tuple() for r in kept], base_offset=hdr.base_offset, compression=hdr.compression,
                        timestamp_type=hdr.timestamp_type, producer_id=hdr.producer_id,
                        producer_epoch=hdr.producer_epoch, base_sequence=hdr.base_sequence,
                        partition_leader_epoch=hdr.partition_leader_epoch,
                        offset_deltas=[r.offset - hdr.base_offset for r in kept],
                        last_offset_delta=hdr.last_offset_delta, delete_horizon_ms=horizon)


def read_batches(fd: int, size: int, cancelled: threading.Event | None = None
                 ) -> Iterator[tuple[BatchHeader, bytes]]:
    """Every batch in ``[0, size)`` of the file ``fd``, read in chunks with ``pread``."""
    buf = b""
    bstart = pos = 0
    while pos < size:
        if cancelled is not None and cancelled.is_set():
            raise _Cancelled
        off = pos - bstart
        if off + BATCH_HEADER_SIZE > len(buf):
            buf = os.pread(fd, min(_READ_CHUNK, size - pos), pos)
            bstart, off = pos, 0
            if len(buf) < BATCH_HEADER_SIZE:
                raise CorruptRecordError(f"partial batch header at position {pos}")
        hdr = parse_batch_header(buf, off)
        n = hdr.size
        if pos + n > size:
            raise CorruptRecordError(f"batch at position {pos} extends past {size}")
        if off + n > len(buf):
            buf = os.pread(fd, max(n, min(_READ_CHUNK, size - pos)), pos)
            bstart, off = pos, 0
            if len(buf) < n:
                raise CorruptRecordError(f"short read of the batch at position {pos}")
        yield hdr, buf[off:off + n]
        pos += n


# ------------------------------------------------------------------------------ recovery
def _end_offset(path: str) -> int:
    """The offset after the last batch of a (complete, fsynced) cleaned segment file."""
    fd = os.open(path, os.O_RDONLY)
    try:
        end = -1
        for hdr, _ in read_batches(fd, os.fstat(fd).st_size):
            end = hdr.next_offset
        return end
    finally:
        os.close(fd)


def recover_interrupted_swaps(directory: str) -> list[int]:
    """Finish or discard what a crash left of a pass in ``directory``; returns the base offsets
    of the segments whose committed swap was finished here.  Called when the log opens."""
    names = os.listdir(directory)
    changed = False
    for name in names:
        path = os.path.join(directory, name)
        if name.startswith(WORK_DIR_PREFIX) and os.path.isdir(path):
            shutil.rmtree(path, ignore_errors=True)
    finished: list[int] = []
    for name in sorted(names):
        if not name.endswith(".log" + SWAP_SUFFIX):
            continue
        stem = name[: -len(".log" + SWAP_SUFFIX)]
        if not stem.isdigit():
            continue
        # a merged segment replaces the segments whose offsets it covers: any still here go first
        base, end = int(stem), _end_offset(os.path.join(directory, name))
        for other in names:
            other_stem, _, suffix = other.partition(".")
            if other_stem.isdigit() and base < int(other_stem) < end and "." + suffix in _FILE_SUFFIXES:
                os.unlink(os.path.join(directory, other))
        for suffix in _FILE_SUFFIXES:
            swap = os.path.join(directory, stem + suffix + SWAP_SUFFIX)
            if os.path.exists(swap):  # a missing index .swap was already renamed into place
                os.replace(swap, os.path.join(directory, stem + suffix))
        finished.append(int(stem))
        changed = True
    for name in os.listdir(directory):
        if name.endswith(SWAP_SUFFIX):  # index .swap files of a segment whose swap was not committed
            os.unlink(os.path.join(directory, name))
            changed = True
    if changed:
        fsync_dir(directory)
    if finished:
        logger.warning("%s: finished interrupted compaction swaps of segments %s", directory, finished)
    return finished
