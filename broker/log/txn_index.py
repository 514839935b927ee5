"""The aborted-transaction index of one segment (Kafka's ``TransactionIndex``): ``<base>.txnindex``.

Every transaction that ends with an ABORT marker in a segment gets one entry in
that segment's index: the producer id, the offset of the transaction's first
record in this partition, the offset of the marker, and the partition's last
stable offset once the transaction was complete.  A ``read_committed`` Fetch
collects the entries overlapping what it returns (``aborted_transactions``), so
the consumer can drop the aborted records; the markers themselves it skips as
control batches.

The file is Kafka's layout: 34-byte entries ``int16 version (0), int64 producer
id, int64 first offset, int64 last offset, int64 last stable offset``.  It exists
only once a segment has an entry, is kept in memory (aborts are rare next to
records), and is a cache of the log: recovery rebuilds the entries of the range it
replays (see ``PartitionLog``).  A torn trailing entry is dropped.  It is written
with ``pwrite`` on the event loop and fsynced with its segment.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass

from broker.log._fs import unlink_if_present

__all__ = ["AbortedTxn", "TransactionIndex"]

_ENTRY = struct.Struct(">hqqqq")
ENTRY_SIZE = _ENTRY.size  # 34
_VERSION = 0


@dataclass(frozen=True, slots=True)
class AbortedTxn:
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int


class TransactionIndex:
    """The aborted transactions whose ABORT marker lies in one segment, in marker order."""

    __slots__ = ("_fd", "entries", "path")

    def __init__(self, path: str) -> None:
        self.path = path
        self.entries: list[AbortedTxn] = []
        self._fd = -1
        try:
            with open(path, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            return
        usable = len(data) - len(data) % ENTRY_SIZE
        for pos in range(0, usable, ENTRY_SIZE):
            version, pid, first, last, lso = _ENTRY.unpack_from(data, pos)
            if version != _VERSION or first > last:
                break  # garbage from a torn write: the rest is rebuilt by recovery if needed
            self.entries.append(AbortedTxn(pid, first, last, lso))
        if usable != len(data) or len(self.entries) * ENTRY_SIZE != usable:
            self._rewrite()

    def __len__(self) -> int:
        return len(self.entries)

    @property
    def fd(self) -> int:
        """The open descriptor (opening the file if needed); for the owner's fsync."""
        if self._fd < 0:
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        return self._fd

    @property
    def exists(self) -> bool:
        return bool(self.entries) or self._fd >= 0

    def append(self, txn: AbortedTxn) -> None:
        """Record an aborted transaction (its marker is at ``txn.last_offset``)."""
        if self.entries and txn.last_offset <= self.entries[-1].last_offset:
            raise ValueError(f"{self.path}: aborted transaction at {txn.last_offset} does not follow "
                             f"{self.entries[-1].last_offset}")
        data = _ENTRY.pack(_VERSION, txn.producer_id, txn.first_offset, txn.last_offset, txn.last_stable_offset)
        os.pwrite(self.fd, data, len(self.entries) * ENTRY_SIZE)
        self.entries.append(txn)

    def collect(self, fetch_offset: int, upper_bound: int) -> tuple[list[AbortedTxn], bool]:
        """Aborted transactions overlapping ``[fetch_offset, upper_bound)``; the flag says whether later
        segments can hold no more of them (an entry's last stable offset reached ``upper_bound``)."""
        out: list[AbortedTxn] = []
        for txn in self.entries:
            if txn.last_offset >= fetch_offset and txn.first_offset < upper_bound:
                out.append(txn)
            if txn.last_stable_offset >= upper_bound:
                return out, True
        return out, False

    def truncate_to(self, offset: int) -> None:
        """Drop the entries whose marker is at or after ``offset``."""
        keep = [t for t in self.entries if t.last_offset < offset]
        if len(keep) != len(self.entries):
            self.entries = keep
            self._rewrite()

    def _rewrite(self) -> None:
        if not self.entries:
            self.close()
            unlink_if_present(self.path)
            return
        os.ftruncate(self.fd, len(self.entries) * ENTRY_SIZE)

    @classmethod
    def write_new(cls, path: str, entries: list[AbortedTxn]) -> TransactionIndex:
        """A fresh, fsynced index at ``path`` holding ``entries`` (a compacted copy keeps its segment's)."""
        index = cls(path)
        index.truncate_to(-1)
        for txn in entries:
            index.append(txn)
        index.fsync()
        return index

    def rename(self, path: str) -> None:
        os.replace(self.path, path)
        self.path = path

    def fsync(self) -> None:
        if self._fd >= 0:
            os.fsync(self._fd)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
