"""Log compaction (``cleanup.policy=compact``, today ``__consumer_offsets``), off the event loop.

``LogCleaner`` (one per ``LogManager``) works in three steps, like Kafka's cleaner:

1. **plan** — ``request(log)``, on the thread that owns the logs (the event
   loop): if the log has sealed data not cleaned yet, queue it; when the worker is
   free, capture its sealed segments that are wholly on disk (below the recovery
   point; immutable files), as private duplicates of their descriptors, and hand
   the pass to the worker.  No decoding, no reads.  One pass at a time.  Nothing
   above the recovery point is read, not even for the key map: the cleaned copies
   are fsynced, so a record must never be dropped for a newer one that a power
   loss could still take away (the key would vanish instead of falling back to
   its last durable value).
2. **clean** — on one background worker thread: read the captured byte ranges
   with ``pread`` (thread-safe on private descriptors), build the key → latest
   offset map once for the pass, then write a cleaned copy of every sealed
   segment that loses something into the pass's work directory
   (``<partition dir>/cleaning.<n>/``), with its indexes, and fsync it.
3. **swap** — ``apply_completed()``, back on the owner thread, short: if the log
   changed under the pass (a captured segment deleted by retention or
   DeleteRecords, its size changed, the topic deleted, the log closed, the
   directory offline) the pass is abandoned and its work directory removed.
   Otherwise each cleaned segment's files are moved next to the log as
   ``<name>.swap`` (indexes first, ``.log.swap`` last: the commit point of that
   segment), the directory is fsynced, each ``.swap`` is renamed over its final
   name (indexes first, the ``.log`` last) and the directory fsynced again; the
   ``PartitionLog`` then uses the new ``Segment`` objects and retires the old
   ones (their ``.log`` stays open for in-flight reads).

Crash safety (``recover_interrupted_swaps``, run when a partition log opens):
work directories are an unfinished pass and are removed; a ``<base>.log.swap``
is a committed replacement and is finished (its index ``.swap`` files, if still
there, and then the log are renamed into place); index ``.swap`` files without
a ``.log.swap`` belong to an uncommitted segment and are removed.  Each
cleaned segment replaces exactly one segment with the same base offset and the
same offsets (gaps where batches were dropped), so every prefix of a swap is a
consistent log.

What is dropped: the granularity is the *batch* — a batch goes when every one
of its records is superseded by a later record with the same key, or is a
tombstone older than ``delete.retention.ms`` with nothing newer.  Batches are
copied byte for byte with their offsets; batches of idempotent producers,
control batches, keyless records and undecodable batches are always kept (so a
cleaned segment keeps its aborted-transaction index as it was).
The group coordinator writes one or a few records per batch, so batch
granularity reclaims nearly everything there.  ``needs_cleaning`` is where
user-topic policies (``min.cleanable.dirty.ratio``, ``min.compaction.lag.ms``)
will plug in.
"""

from __future__ import annotations

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
    BatchHeader,
    CorruptRecordError,
    decode_batch,
    parse_batch_header,
)

if TYPE_CHECKING:
    from broker.log.partition_log import PartitionLog

logger = logging.getLogger("kbroker.log")

WORK_DIR_PREFIX = "cleaning"  # cleaning.<n>/ per pass ("cleaning/" in older data directories)
SWAP_SUFFIX = ".swap"
_READ_CHUNK = 1024 * 1024
_FILE_SUFFIXES = (".index", ".timeindex", ".txnindex", ".log")  # rename order: the .log last


class _Cancelled(Exception):
    """The cleaner is closing: stop the pass."""


@dataclass(slots=True)
class _Source:
    """A sealed segment as captured when the pass was planned."""

    segment: Segment
    size: int
    next_offset: int
    fd: int  # a private duplicate, closed by the worker
    aborted: list[AbortedTxn] = field(default_factory=list)  # its transaction index, as captured


@dataclass(slots=True)
class CleaningPass:
    """One compaction pass over one log: planned on the owner thread, run on the worker."""

    pass_id: int
    log: PartitionLog
    directory: str
    sources: list[_Source]
    now_ms: int
    delete_retention_ms: int
    index_interval_bytes: int
    cancelled: threading.Event = field(default_factory=threading.Event)
    cleaned: list[tuple[_Source, Segment]] = field(default_factory=list)
    error: BaseException | None = None
    decoded_batches: int = 0
    reclaimed_bytes: int = 0
    done: bool = False

    @property
    def work_dir(self) -> str:
        return os.path.join(self.directory, f"{WORK_DIR_PREFIX}.{self.pass_id}")

    @property
    def upto(self) -> int:
        return self.sources[-1].next_offset

    def close_fds(self) -> None:
        for src in self.sources:
            if src.fd >= 0:
                os.close(src.fd)
                src.fd = -1


class LogCleaner:
    """Compacts logs on one worker thread; plans and swaps on the owner thread (see module doc).

    Logs are queued by ``request`` and cleaned one pass at a time, in request order, so at
    most one log's sealed segments are held open by the cleaner.  ``clock`` gives the time a
    pass is planned at (the tombstone horizon).  ``executor``: where passes run (default: a
    private single-thread pool, created on first use).  ``on_done``: called from the worker
    after each pass, e.g. to wake the owner so it calls ``apply_completed()`` soon (the owner
    may also just call it periodically).
    """

    def __init__(self, clock: Callable[[], int], *, executor: Executor | None = None,
                 on_done: Callable[[], None] | None = None) -> None:
        self.clock = clock
        self._executor = executor
        self._own_executor = executor is None
        self.on_done = on_done
        self._queue: dict[PartitionLog, None] = {}  # insertion-ordered set of logs to clean
        self._current: CleaningPass | None = None  # planned, being cleaned, or waiting for its swap
        self._done: deque[CleaningPass] = deque()
        self._cleaned_upto: weakref.WeakKeyDictionary[PartitionLog, int] = weakref.WeakKeyDictionary()
        self._next_id = 0
        self._closed = False
        self._idle = threading.Condition()
        self._in_flight = 0
        self.passes_applied = 0
        self.passes_abandoned = 0

    # ------------------------------------------------------------ owner thread
    def needs_cleaning(self, log: PartitionLog) -> bool:
        """The policy: a compacted log with sealed data on disk newer than what the last pass covered."""
        if not log.config.compact or log.dir_failure.offline:
            return False
        sealed = sealed_on_disk(log)
        return bool(sealed) and sealed[-1].next_offset > self._cleaned_upto.get(log, -1)

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
        """Capture the sealed segments of ``log`` (private descriptors) and submit the pass."""
        sources: list[_Source] = []
        try:
            for seg in sealed_on_disk(log):
                sources.append(_Source(seg, seg.size, seg.next_offset, os.dup(seg.fd), list(seg.txn_index.entries)))
        except OSError:
            for src in sources:
                os.close(src.fd)
            raise
        self._next_id += 1
        cfg = log.config
        job = CleaningPass(self._next_id, log, log.directory, sources, self.clock(),
                           cfg.delete_retention_ms, cfg.index_interval_bytes)
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
            logger.info("%s: compaction reclaimed %d bytes in %d segments", log.name, job.reclaimed_bytes,
                        len(job.cleaned))
        shutil.rmtree(job.work_dir, ignore_errors=True)
        self._cleaned_upto[log] = job.upto
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
        # Install: rename each .swap over its final name (the .log last), then switch the objects.
        for src, new in job.cleaned:
            old = src.segment
            old.offset_index.close()
            old.time_index.close()
            old.txn_index.close()
            for suffix in _FILE_SUFFIXES:
                _move(new, suffix, os.path.join(directory, segment_file_name(new.base_offset, suffix)))
            new.directory = directory
        fsync_dir(directory)
        job.log.replace_segments([(src.segment, new) for src, new in job.cleaned])

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
    """The sealed segments of ``log`` wholly below its recovery point (fsynced): what a pass reads."""
    segments = log.segments
    rp = log.recovery_point
    n = 0
    while n < len(segments) - 1 and segments[n].next_offset <= rp:
        n += 1
    return segments[:n]


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
def clean(job: CleaningPass) -> None:
    """Build the key map over the captured data, then write cleaned copies of the sealed segments.

    Runs on the worker thread; touches only the job's private descriptors and its work directory.
    """
    latest: dict[bytes, int] = {}
    for src in job.sources:
        for hdr, data in read_batches(src.fd, src.size, job.cancelled):
            if hdr.is_control:
                continue
            job.decoded_batches += 1
            try:
                _, records = decode_batch(data)
            except CorruptRecordError:
                continue
            for r in records:
                if r.key is not None:
                    latest[r.key] = r.offset
    horizon = job.now_ms - job.delete_retention_ms
    os.mkdir(job.work_dir)  # not makedirs: never recreate the directory of a deleted partition
    for src in job.sources:
        old = src.segment
        new = Segment(job.work_dir, old.base_offset, index_interval_bytes=job.index_interval_bytes)
        try:
            for hdr, data in read_batches(src.fd, src.size, job.cancelled):
                if keep_batch(hdr, data, latest, horizon):
                    new.append(data, hdr.base_offset, hdr.next_offset, hdr.max_timestamp, job.now_ms)
        except BaseException:
            new.close()
            raise
        if new.size == src.size:  # nothing to drop: no swap (the work directory goes at the end)
            new.close()
            continue
        new.next_offset = src.next_offset  # offsets stay: the range ends where the old one did
        if src.aborted:  # markers and transactional batches are all kept: so is the index
            new.txn_index = TransactionIndex.write_new(new.txn_index.path, src.aborted)
        job.cleaned.append((src, new))
        new.seal()
        new.fsync()
        job.reclaimed_bytes += src.size - new.size


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


def keep_batch(hdr: BatchHeader, data: bytes, latest: dict[bytes, int], horizon: int) -> bool:
    """Whether a batch survives compaction given the key map and the tombstone horizon."""
    if hdr.is_control or hdr.producer_id >= 0:
        return True
    try:
        _, records = decode_batch(data)
    except CorruptRecordError:
        return True
    for r in records:
        if r.key is None:
            return True  # keyless records cannot be compacted away
        if latest.get(r.key, -1) > r.offset:
            continue  # superseded
        if r.value is None and hdr.max_timestamp < horizon:
            continue  # old tombstone, nothing newer
        return True
    return False


# ------------------------------------------------------------------------------ recovery
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
