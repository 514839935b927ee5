"""Sparse per-segment indexes: ``.index`` (offset → file position) and ``.timeindex``.

Both are append-only files of fixed-size big-endian entries, mirrored in memory
as ``array`` columns so lookups are a ``bisect`` with no I/O:

* ``.index``     entry = relative offset (int32) + file position (int32); the
  offset is the **base offset of the batch** starting at that position.
* ``.timeindex`` entry = timestamp (int64) + relative offset (int32): the
  segment's largest timestamp so far, and the base offset of the batch that
  first reached it.  Timestamps strictly increase.

Indexes are a cache of the ``.log`` file: new entries are buffered and written
on ``flush_pending()`` (called on flush, roll and close); a missing tail is
re-indexed by recovery's scan, and a missing or inconsistent file is rebuilt
from the log.  They therefore never need an fsync of their own before an ack.
"""

from __future__ import annotations

import os
import struct
from array import array
from bisect import bisect_right

_OFFSET_ENTRY = struct.Struct(">ii")
_TIME_ENTRY = struct.Struct(">qi")


class _IndexFile:
    entry: struct.Struct

    def __init__(self, path: str, base_offset: int) -> None:
        self.path = path
        self.base_offset = base_offset
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        self._written = 0  # entries persisted to the file (page cache)

    # -- persistence ---------------------------------------------------------
    def _entry_count(self) -> int:
        raise NotImplementedError

    def _pack(self, i: int) -> bytes:
        raise NotImplementedError

    def _raw_entries(self) -> list[tuple[int, int]] | None:
        """Parse the file; ``None`` if its size is not a whole number of entries."""
        size = os.fstat(self._fd).st_size
        if size % self.entry.size:
            return None
        data = os.pread(self._fd, size, 0)
        if len(data) != size:
            return None
        return [e for e in self.entry.iter_unpack(data)]  # type: ignore[misc]

    @property
    def size_bytes(self) -> int:
        return self._entry_count() * self.entry.size

    def full(self, max_bytes: int) -> bool:
        """No room for another entry within ``max_bytes`` (Kafka's ``segment.index.bytes``)."""
        return (self._entry_count() + 1) * self.entry.size > max_bytes

    def flush_pending(self) -> None:
        n = self._entry_count()
        if self._written >= n:
            return
        buf = b"".join(self._pack(i) for i in range(self._written, n))
        os.pwrite(self._fd, buf, self._written * self.entry.size)
        self._written = n

    def _truncate_entries(self, keep: int) -> None:
        if self._written > keep:
            os.ftruncate(self._fd, keep * self.entry.size)
            self._written = keep

    def reset(self) -> None:
        self._truncate_entries(0)
        os.ftruncate(self._fd, 0)

    def fsync(self) -> None:
        os.fsync(self._fd)

    def close(self) -> None:
        if self._fd >= 0:
            self.flush_pending()
            os.close(self._fd)
            self._fd = -1

    def rename_base(self, path: str) -> None:
        os.rename(self.path, path)
        self.path = path


class OffsetIndex(_IndexFile):
    entry = _OFFSET_ENTRY

    def __init__(self, path: str, base_offset: int) -> None:
        super().__init__(path, base_offset)
        self.offsets = array("q")  # absolute offsets
        self.positions = array("q")

    def _entry_count(self) -> int:
        return len(self.offsets)

    def _pack(self, i: int) -> bytes:
        return _OFFSET_ENTRY.pack(self.offsets[i] - self.base_offset, self.positions[i])

    def load(self, log_size: int) -> bool:
        """Read the file; ``False`` (and empty) if it is structurally inconsistent."""
        entries = self._raw_entries()
        self.offsets = array("q")
        self.positions = array("q")
        if entries is None:
            return False
        last_rel, last_pos = -1, 0
        for rel, pos in entries:
            if rel <= last_rel or pos <= last_pos or pos >= log_size:
                self.offsets = array("q")
                self.positions = array("q")
                return False
            last_rel, last_pos = rel, pos
            self.offsets.append(self.base_offset + rel)
            self.positions.append(pos)
        self._written = len(entries)
        return True

    def append(self, offset: int, position: int) -> None:
        self.offsets.append(offset)
        self.positions.append(position)

    @property
    def last(self) -> tuple[int, int]:
        """Last entry, or the implicit (base_offset, 0) entry."""
        if self.offsets:
            return self.offsets[-1], self.positions[-1]
        return self.base_offset, 0

    def lookup(self, offset: int) -> tuple[int, int]:
        """Largest entry with offset <= ``offset``, or (base_offset, 0)."""
        i = bisect_right(self.offsets, offset)
        if i == 0:
            return self.base_offset, 0
        return self.offsets[i - 1], self.positions[i - 1]

    def floor_position(self, position: int) -> int:
        """Largest indexed batch position <= ``position`` (0 if none)."""
        i = bisect_right(self.positions, position)
        return self.positions[i - 1] if i else 0

    def truncate_to_position(self, position: int) -> None:
        """Drop entries pointing at or after ``position``."""
        i = bisect_right(self.positions, position - 1)
        del self.offsets[i:]
        del self.positions[i:]
        self._truncate_entries(i)

    def clear(self) -> None:
        self.offsets = array("q")
        self.positions = array("q")
        self.reset()


class TimeIndex(_IndexFile):
    entry = _TIME_ENTRY

    def __init__(self, path: str, base_offset: int) -> None:
        super().__init__(path, base_offset)
        self.timestamps = array("q")
        self.offsets = array("q")

    def _entry_count(self) -> int:
        return len(self.timestamps)

    def _pack(self, i: int) -> bytes:
        return _TIME_ENTRY.pack(self.timestamps[i], self.offsets[i] - self.base_offset)

    def load(self) -> bool:
        entries = self._raw_entries()
        self.timestamps = array("q")
        self.offsets = array("q")
        if entries is None:
            return False
        last_ts, last_rel = -(2**63), -1
        for ts, rel in entries:
            if ts <= last_ts or rel < last_rel or rel < 0:
                self.timestamps = array("q")
                self.offsets = array("q")
                return False
            last_ts, last_rel = ts, rel
            self.timestamps.append(ts)
            self.offsets.append(self.base_offset + rel)
        self._written = len(entries)
        return True

    @property
    def last(self) -> tuple[int, int] | None:
        if self.timestamps:
            return self.timestamps[-1], self.offsets[-1]
        return None

    def maybe_append(self, timestamp: int, offset: int) -> None:
        """Append if ``timestamp`` is larger than the last entry's."""
        if not self.timestamps or timestamp > self.timestamps[-1]:
            self.timestamps.append(timestamp)
            self.offsets.append(offset)

    def lookup(self, timestamp: int) -> int:
        """Offset to start scanning from for the first batch with max timestamp >= ``timestamp``.

        That is the offset of the last entry whose timestamp is < ``timestamp``
        (all batches before it have smaller timestamps), or the base offset.
        """
        i = bisect_right(self.timestamps, timestamp - 1)
        return self.offsets[i - 1] if i else self.base_offset

    def truncate_to_offset(self, offset: int) -> None:
        """Drop entries at or after ``offset``."""
        i = bisect_right(self.offsets, offset - 1)
        del self.timestamps[i:]
        del self.offsets[i:]
        self._truncate_entries(i)

    def clear(self) -> None:
        self.timestamps = array("q")
        self.offsets = array("q")
        self.reset()
