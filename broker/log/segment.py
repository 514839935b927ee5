"""One log segment: a ``.log`` file of record batches plus its ``.index``, ``.timeindex`` and ``.txnindex``.

A segment owns its three files and its slice of the offset space
``[base_offset, next_offset)``.  It never decodes records: it reads batch
*headers* (``protocol.records.parse_batch_header``) to find boundaries,
offsets and timestamps, and checks CRCs only during recovery.

Writes go through ``os.pwrite`` at the tracked end of file and reads through
``os.pread`` / ``FileSlice`` (for ``sendfile``), so nothing depends on the file
object's seek position — ``loop.sendfile`` is free to move it.

The ``.log`` descriptor is shared through a reference-counted
:class:`SegmentFile`: the segment holds one reference, and a response that
will send bytes of the file later (a queued Fetch response) takes its own.
The descriptor is closed when the last reference goes, so deleting a segment
or a whole topic never closes a descriptor a queued response still refers to
(its number could otherwise be reused by another file before the response is
written).
"""

from __future__ import annotations

import os
import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import BinaryIO

from broker.log._fs import unlink_if_present
from broker.log.index import OffsetIndex, TimeIndex
from broker.log.txn_index import TransactionIndex
from protocol.records import (
    BATCH_HEADER_SIZE,
    LOG_OVERHEAD,
    BatchHeader,
    CorruptRecordError,
    crc_ok,
    parse_batch_header,
)

_HEADER_SCAN_CHUNK = 16 * 1024
_VERIFY_SCAN_CHUNK = 1024 * 1024
_MIN_BATCH_LENGTH = BATCH_HEADER_SIZE - LOG_OVERHEAD


# The files of a removed segment waiting to be unlinked (see ``Segment.delete``).
DELETED_SUFFIX = ".deleted"


def segment_file_name(base_offset: int, suffix: str) -> str:
    return f"{base_offset:020d}{suffix}"


class SegmentFile:
    """A segment's open ``.log`` file, closed when its last reference is released.

    The segment owns one reference from creation; :meth:`retain` takes another
    for whoever must read the file later than the current call (a response
    queued on a connection), and every reference is given back exactly once
    with :meth:`release`.  Not thread-safe: retain and release on the event loop
    (a reference retained there may be used from another thread until it is
    released).

    ``closer``, when set, is handed the file instead of closing it: the last close of
    a deleted segment's file frees its page cache and blocks in the kernel (tens of
    milliseconds for 128 MiB), which its owner does off the event loop
    (:class:`broker.log.reaper.FileReaper`).
    """

    __slots__ = ("_refs", "closer", "file", "path")

    def __init__(self, file: BinaryIO, path: str) -> None:
        self.file = file
        self.path = path
        self._refs = 1
        self.closer: Callable[[BinaryIO], None] | None = None

    @property
    def refs(self) -> int:
        return self._refs

    @property
    def closed(self) -> bool:
        return self._refs <= 0 or self.file.closed

    def fileno(self) -> int:
        """The descriptor; only meaningful while the caller holds a reference."""
        return self.file.fileno()

    def retain(self) -> SegmentFile:
        """Take a reference (the file stays open until it is released)."""
        if self._refs <= 0:
            raise ValueError(f"{self.path} is already closed")
        self._refs += 1
        return self

    def release(self) -> None:
        """Give a reference back; the last one closes the file."""
        if self._refs <= 0:
            raise ValueError(f"{self.path}: reference released twice")
        self._refs -= 1
        if self._refs == 0:
            if self.closer is not None:
                self.closer(self.file)
            else:
                self.file.close()

    def __repr__(self) -> str:
        return f"SegmentFile({self.path!r}, refs={self._refs})"


@dataclass(frozen=True, slots=True)
class FileSlice:
    """A byte range of a segment file, ready for zero-copy transmission.

    The slice does not hold a reference of its own: it is valid while the
    segment is (within the current event-loop step).  Whoever keeps it for
    later — a Fetch response waiting to be written — takes one with
    ``s.handle.retain()`` and releases it once done, so the edge can call
    ``os.sendfile(sock_fd, s.fileno(), s.position, s.length)`` whatever
    happened to the segment meanwhile.
    """

    handle: SegmentFile
    position: int
    length: int

    @property
    def file(self) -> BinaryIO:
        return self.handle.file

    def fileno(self) -> int:
        return self.handle.fileno()

    def read(self) -> bytes:
        """Copy the bytes out (tests, small internal reads)."""
        return os.pread(self.handle.fileno(), self.length, self.position)


class TornBatch(Exception):
    """Recovery found an invalid batch at ``position``; everything from there on is discarded."""

    def __init__(self, position: int, reason: str) -> None:
        super().__init__(f"at position {position}: {reason}")
        self.position = position
        self.reason = reason


@dataclass(slots=True)
class SegmentRecovery:
    """What ``Segment.recover`` found and repaired."""

    base_offset: int
    index_rebuilt: str | None = None  # why: "missing", "corrupt", "stale"
    truncated_bytes: int = 0
    truncated_at: int | None = None
    reason: str | None = None
    verified_bytes: int = 0

    @property
    def repaired(self) -> bool:
        return self.index_rebuilt is not None or self.truncated_at is not None


class Segment:
    """A ``.log`` file and its sparse indexes, covering offsets ``[base_offset, next_offset)``."""

    def __init__(self, directory: str, base_offset: int, *, index_interval_bytes: int = 4096) -> None:
        self.directory = directory
        self.base_offset = base_offset
        self.index_interval_bytes = index_interval_bytes
        self.log_path = os.path.join(directory, segment_file_name(base_offset, ".log"))
        index_path = os.path.join(directory, segment_file_name(base_offset, ".index"))
        time_path = os.path.join(directory, segment_file_name(base_offset, ".timeindex"))
        self._indexes_existed = os.path.exists(index_path) and os.path.exists(time_path)
        fd = os.open(self.log_path, os.O_RDWR | os.O_CREAT, 0o644)
        self.file: BinaryIO = os.fdopen(fd, "r+b", buffering=0)
        self.fd = fd
        #: the ``.log`` file shared with queued responses; this segment's own reference
        #: is dropped by ``close``/``delete``/``close_file`` (``_owns_file`` tells whether it still holds it)
        self.handle = SegmentFile(self.file, self.log_path)
        self._owns_file = True
        self.size = os.fstat(fd).st_size
        self.offset_index = OffsetIndex(index_path, base_offset)
        self.time_index = TimeIndex(time_path, base_offset)
        #: aborted transactions whose ABORT marker is in this segment (maintained by the PartitionLog)
        self.txn_index = TransactionIndex(os.path.join(directory, segment_file_name(base_offset, ".txnindex")))
        self.next_offset = base_offset
        self.max_timestamp = -1
        self.offset_of_max_timestamp = -1
        #: Time the roll-by-age clock counts from: the first batch's max timestamp
        #: (Kafka's rule) or the broker clock at the first append if that is -1.
        self.roll_base_ms: int | None = None
        self.dirty = False
        self._bytes_since_index = 0

    # ------------------------------------------------------------------ writes
    def append(self, buf: bytes | bytearray, base_offset: int, next_offset: int, max_timestamp: int,
               now_ms: int) -> int:
        """Write one stamped batch at the end; return its file position."""
        pos = self.size
        n = len(buf)
        written = os.pwrite(self.fd, buf, pos)
        while written < n:  # regular files practically never short-write; be correct anyway
            written += os.pwrite(self.fd, memoryview(buf)[written:], pos + written)
        self.size = pos + n
        self.dirty = True
        if max_timestamp > self.max_timestamp:
            self.max_timestamp = max_timestamp
            self.offset_of_max_timestamp = base_offset
        if pos == 0:
            self.roll_base_ms = max_timestamp if max_timestamp >= 0 else now_ms
        elif self._bytes_since_index >= self.index_interval_bytes:
            self.offset_index.append(base_offset, pos)
            self.time_index.maybe_append(self.max_timestamp, self.offset_of_max_timestamp)
            self._bytes_since_index = 0
        self._bytes_since_index += n
        self.next_offset = next_offset
        return pos

    @property
    def index_bytes(self) -> int:
        """Bytes of the larger of its two indexes."""
        return max(self.offset_index.size_bytes, self.time_index.size_bytes)

    def indexes_full(self, max_index_bytes: int) -> bool:
        """An index has no room for another entry: the segment must roll (``segment.index.bytes``)."""
        return self.offset_index.full(max_index_bytes) or self.time_index.full(max_index_bytes)

    def seal(self) -> None:
        """Record the final max timestamp in the time index and write pending index entries."""
        if self.max_timestamp >= 0:
            self.time_index.maybe_append(self.max_timestamp, self.offset_of_max_timestamp)
        self.flush_pending_indexes()

    def flush_pending_indexes(self) -> None:
        # Time index first: if a crash lands between the two writes, the offset
        # index is never ahead of the time index.
        self.time_index.flush_pending()
        self.offset_index.flush_pending()

    def fsync(self) -> None:
        self.flush_pending_indexes()
        if self.dirty:
            os.fsync(self.fd)
            self.dirty = False
        self.offset_index.fsync()
        self.time_index.fsync()
        self.txn_index.fsync()

    def truncate_to(self, position: int) -> None:
        """Drop everything from ``position`` (a batch boundary) on and rescan the new tail."""
        if position >= self.size:
            return
        os.ftruncate(self.fd, position)
        self.size = position
        self.dirty = True
        self.offset_index.truncate_to_position(position)
        self._scan_tail(self.offset_index.last[1], verify_crc=False)

    # ------------------------------------------------------------------- reads
    def read_header(self, position: int) -> BatchHeader:
        return parse_batch_header(os.pread(self.fd, BATCH_HEADER_SIZE, position), 0)

    def iter_headers(self, start: int = 0, *, verify_crc: bool = False) -> Iterator[tuple[int, BatchHeader]]:
        """Yield ``(position, header)`` of each batch from ``start``; raise ``TornBatch`` on a bad one."""
        end = self.size
        chunk = _VERIFY_SCAN_CHUNK if verify_crc else _HEADER_SCAN_CHUNK
        buf = b""
        bstart = pos = start
        while pos < end:
            off = pos - bstart
            if off + BATCH_HEADER_SIZE > len(buf):
                buf = os.pread(self.fd, min(chunk, end - pos), pos)
                bstart, off = pos, 0
                if len(buf) < BATCH_HEADER_SIZE:
                    raise TornBatch(pos, f"partial batch header ({len(buf)} bytes)")
            try:
                hdr = parse_batch_header(buf, off)
            except (CorruptRecordError, ValueError, struct.error) as e:
                raise TornBatch(pos, f"unparsable batch header: {e}") from None
            if hdr.magic != 2 or hdr.batch_length < _MIN_BATCH_LENGTH:
                raise TornBatch(pos, f"bad batch header (magic={hdr.magic}, length={hdr.batch_length})")
            size = hdr.size
            if pos + size > end:
                raise TornBatch(pos, f"batch of {size} bytes extends past end of file ({end - pos} left)")
            if verify_crc:
                if off + size > len(buf):
                    buf = os.pread(self.fd, min(max(chunk, size), end - pos), pos)
                    bstart, off = pos, 0
                if not crc_ok(buf, off, hdr):
                    raise TornBatch(pos, "CRC mismatch")
            yield pos, hdr
            pos += size

    def lookup(self, offset: int) -> int | None:
        """File position of the batch containing ``offset`` (or the first one after it)."""
        if offset >= self.next_offset:
            return None
        _, pos = self.offset_index.lookup(offset)
        for p, hdr in self.iter_headers(pos):
            if hdr.base_offset + hdr.last_offset_delta >= offset:
                return p
        return None

    def slice_end(self, start: int, max_bytes: int, min_one_message: bool) -> int:
        """End position of the whole batches from ``start`` fitting in ``max_bytes``.

        The first batch is included whole even if larger when ``min_one_message``.
        """
        limit = start + max_bytes
        if limit >= self.size and start < self.size:
            return self.size  # common case: everything up to the end fits
        first = self.read_header(start)
        end = start + first.size
        if end > limit:
            return end if min_one_message else start
        jump = self.offset_index.floor_position(limit)
        if jump > end:
            end = jump  # batches between two index entries are whole by construction
        for pos, hdr in self.iter_headers(end):
            if pos + hdr.size > limit:
                break
            end = pos + hdr.size
        return end

    def find_by_timestamp(self, timestamp: int) -> tuple[int, BatchHeader] | None:
        """First batch whose max timestamp is >= ``timestamp``."""
        if self.max_timestamp < timestamp or self.size == 0:
            return None
        start_offset = self.time_index.lookup(timestamp)
        _, pos = self.offset_index.lookup(start_offset)
        for p, hdr in self.iter_headers(pos):
            if hdr.max_timestamp >= timestamp:
                return p, hdr
        return None

    # ---------------------------------------------------------------- recovery
    def recover(self, verify_from_offset: int | None = None) -> SegmentRecovery:
        """Load indexes, validate the tail (and from ``verify_from_offset`` on), repair.

        * indexes missing, structurally corrupt, or whose last entry does not
          point at the batch it names → rebuilt from a full scan of the log;
        * batches are CRC-checked from the last index entry (or from the batch
          holding ``verify_from_offset`` if earlier, or from 0 when rebuilding);
        * the first invalid batch and everything after it are truncated away.
        """
        report = SegmentRecovery(self.base_offset)
        if self.size == 0:
            self.offset_index.clear()
            self.time_index.clear()
            return report
        if not self._indexes_existed:
            report.index_rebuilt = "missing"
        elif not self.offset_index.load(self.size) or not self.time_index.load():
            report.index_rebuilt = "corrupt"
        elif not self._entry_matches(*self.offset_index.last):
            report.index_rebuilt = "stale"
        if report.index_rebuilt:
            self.offset_index.clear()
            self.time_index.clear()
            start = 0
        else:
            start = self.offset_index.last[1]
            if verify_from_offset is not None:
                start = min(start, self.offset_index.lookup(verify_from_offset)[1])
        try:
            header0 = self.read_header(0)
            self.roll_base_ms = header0.max_timestamp if header0.max_timestamp >= 0 else None
        except (CorruptRecordError, ValueError, struct.error):
            self.roll_base_ms = None
        size_before = self.size
        torn = self._scan_tail(start, verify_crc=True)
        report.verified_bytes = size_before - start
        if torn is not None:
            report.truncated_at = torn.position
            report.truncated_bytes = size_before - torn.position
            report.reason = torn.reason
        if self.roll_base_ms is None and self.size > 0:
            self.roll_base_ms = int(os.fstat(self.fd).st_mtime * 1000)
        if report.index_rebuilt:
            self.flush_pending_indexes()
        return report

    def _entry_matches(self, offset: int, position: int) -> bool:
        if position == 0:
            return True
        try:
            return self.read_header(position).base_offset == offset
        except (CorruptRecordError, ValueError, struct.error):
            return False

    def _scan_tail(self, start: int, *, verify_crc: bool) -> TornBatch | None:
        """Re-derive tail state (next offset, max timestamp, index entries) from index position ``start``.

        Truncates the file at the first invalid batch and returns what was found there.
        """
        self.offset_index.truncate_to_position(start + 1)
        idx_offset, idx_pos = self.offset_index.last
        self.time_index.truncate_to_offset(idx_offset + 1 if idx_pos else self.base_offset)
        last = self.time_index.last
        self.max_timestamp, self.offset_of_max_timestamp = last if last else (-1, -1)
        self.next_offset = self.base_offset
        self._bytes_since_index = 0
        torn: TornBatch | None = None
        try:
            for pos, hdr in self.iter_headers(idx_pos, verify_crc=verify_crc):
                if pos == idx_pos and idx_pos > 0:
                    if hdr.base_offset != idx_offset:
                        raise TornBatch(pos, "index entry does not match batch")
                elif hdr.base_offset < self.next_offset:
                    raise TornBatch(pos, f"offset {hdr.base_offset} goes backwards (expected >= "
                                         f"{self.next_offset})")
                if hdr.max_timestamp > self.max_timestamp:
                    self.max_timestamp = hdr.max_timestamp
                    self.offset_of_max_timestamp = hdr.base_offset
                if pos > idx_pos and self._bytes_since_index >= self.index_interval_bytes:
                    self.offset_index.append(hdr.base_offset, pos)
                    self.time_index.maybe_append(self.max_timestamp, self.offset_of_max_timestamp)
                    self._bytes_since_index = 0
                self._bytes_since_index += hdr.size
                self.next_offset = hdr.base_offset + hdr.last_offset_delta + 1
        except TornBatch as t:
            torn = t
        if torn is None:
            return None
        os.ftruncate(self.fd, torn.position)
        self.size = torn.position
        self.dirty = True
        if torn.position == idx_pos and idx_pos > 0:
            # The indexed batch itself is bad: drop that entry and rescan from the previous one.
            self.offset_index.truncate_to_position(idx_pos)
            again = self._scan_tail(self.offset_index.last[1], verify_crc=verify_crc)
            return again or torn
        return torn

    # --------------------------------------------------------------- lifecycle
    def close(self) -> None:
        if self.offset_index._fd >= 0:
            self.seal()
        self.offset_index.close()
        self.time_index.close()
        self.txn_index.close()
        self.close_file()

    def delete(self, remove_later: Callable[[list[str]], None] | None = None) -> None:
        """Remove the files from the segment's names.  The ``.log`` file stays open for ``FileSlice``s
        taken in the current step; the owner drops the segment's reference later (``close_file``), and
        responses that retained the file keep reading it until they release it.

        Without ``remove_later`` the files are unlinked here.  With it they are renamed aside
        (``<name>.deleted``, names no new segment takes) and ``remove_later`` is handed the new paths
        to unlink off the caller's thread: unlinking a closed index frees its blocks, and a retention
        check's unlinks held the event loop for up to 205 ms under heavy writes on this project's test
        machine.  A crash before that leaves ``.deleted`` files, which the log removes when it opens."""
        self.offset_index.close()
        self.time_index.close()
        self.txn_index.close()
        paths = (self.log_path, self.offset_index.path, self.time_index.path, self.txn_index.path)
        if remove_later is None:
            for path in paths:
                unlink_if_present(path)
            return
        renamed = []
        for path in paths:
            try:
                os.replace(path, path + DELETED_SUFFIX)
            except FileNotFoundError:
                continue
            renamed.append(path + DELETED_SUFFIX)
        if renamed:
            remove_later(renamed)

    def close_file(self) -> None:
        """Drop the segment's reference to the ``.log`` file (idempotent); it closes once
        no queued response refers to it any more."""
        if self._owns_file:
            self._owns_file = False
            self.handle.release()

    def __repr__(self) -> str:
        return f"Segment(base={self.base_offset}, next={self.next_offset}, size={self.size})"
