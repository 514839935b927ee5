"""Idempotent-producer state of one partition: epoch and the last five batches per producer id.

``ProducerStateManager.check(header)`` runs before an append and decides:

* ``None``            → in sequence, append it (then call ``update``);
* ``BatchMetadata``   → a retry of one of the last 5 batches: answer success with
  the original offsets and append nothing;
* ``OutOfOrderSequenceError`` / ``InvalidProducerEpochError``.

The rules follow Kafka's ``ProducerAppendInfo``: a lower epoch is fenced; a new
epoch must start at sequence 0 (unless we have never seen the producer, e.g.
its state expired); within an epoch the first sequence must follow the last one,
wrapping from int32 max to 0.

Persistence: ``write_snapshot(offset)`` stores the state as of ``offset`` in
``<offset:020d>.snapshot`` (JSON) in the partition directory; on open the
newest snapshot at or below the log end is loaded and the batch headers after
it are replayed (``update`` again) to rebuild the rest.
"""

from __future__ import annotations

import json
import os
from collections import deque
from dataclasses import dataclass, field

from broker.log._fs import atomic_write
from broker.log.errors import InvalidProducerEpochError, OutOfOrderSequenceError
from protocol.records import BatchHeader

INT32_MAX = 2147483647
MAX_CACHED_BATCHES = 5
SNAPSHOT_SUFFIX = ".snapshot"


def last_sequence(base_sequence: int, last_offset_delta: int) -> int:
    """Sequence of the batch's last record, wrapping past int32 max to 0."""
    s = base_sequence + last_offset_delta
    return s - INT32_MAX - 1 if s > INT32_MAX else s


def _in_sequence(last_seq: int, next_seq: int) -> bool:
    return next_seq == last_seq + 1 or (last_seq == INT32_MAX and next_seq == 0)


@dataclass(frozen=True, slots=True)
class BatchMetadata:
    first_seq: int
    last_seq: int
    base_offset: int
    last_offset: int
    timestamp: int


@dataclass(slots=True)
class ProducerEntry:
    epoch: int
    last_timestamp: int = -1
    batches: deque[BatchMetadata] = field(default_factory=lambda: deque(maxlen=MAX_CACHED_BATCHES))

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else -1


class ProducerStateManager:
    """Per-partition producer-id → ``ProducerEntry`` map with snapshot persistence."""

    def __init__(self, directory: str) -> None:
        self.directory = directory
        self.producers: dict[int, ProducerEntry] = {}
        self.changed = False

    def check(self, h: BatchHeader) -> BatchMetadata | None:
        entry = self.producers.get(h.producer_id)
        if entry is None:
            return None  # unknown producer: accept any sequence (Kafka does the same since KIP-360)
        if h.producer_epoch < entry.epoch:
            raise InvalidProducerEpochError(
                f"producer {h.producer_id} epoch {h.producer_epoch} is older than {entry.epoch}")
        first = h.base_sequence
        if h.producer_epoch != entry.epoch:
            if first != 0:
                raise OutOfOrderSequenceError(
                    f"producer {h.producer_id} new epoch {h.producer_epoch} must start at 0, got {first}")
            return None
        last = last_sequence(first, h.last_offset_delta)
        for b in entry.batches:
            if b.first_seq == first and b.last_seq == last:
                return b
        if entry.batches and not _in_sequence(entry.last_seq, first):
            raise OutOfOrderSequenceError(
                f"producer {h.producer_id} epoch {h.producer_epoch}: expected sequence "
                f"{0 if entry.last_seq == INT32_MAX else entry.last_seq + 1}, got {first}")
        return None

    def update(self, h: BatchHeader, base_offset: int, timestamp: int, now_ms: int | None = None) -> None:
        """Record an appended batch (also used when replaying the log).

        ``now_ms`` (broker time) drives producer expiry; on replay the batch timestamp stands in.
        """
        entry = self.producers.get(h.producer_id)
        if entry is None or h.producer_epoch > entry.epoch:
            entry = ProducerEntry(h.producer_epoch)
            self.producers[h.producer_id] = entry
        elif h.producer_epoch < entry.epoch:
            return  # only reachable on replay of an old fenced batch
        entry.batches.append(BatchMetadata(
            h.base_sequence, last_sequence(h.base_sequence, h.last_offset_delta),
            base_offset, base_offset + h.last_offset_delta, timestamp))
        entry.last_timestamp = max(entry.last_timestamp, timestamp if now_ms is None else now_ms)
        self.changed = True

    def expire(self, now_ms: int, expiration_ms: int) -> int:
        """Forget producers idle for longer than ``expiration_ms``; return how many."""
        dead = [pid for pid, e in self.producers.items() if now_ms - e.last_timestamp > expiration_ms]
        for pid in dead:
            del self.producers[pid]
        if dead:
            self.changed = True
        return len(dead)

    def truncate_above(self, offset: int) -> None:
        """Drop knowledge of batches at or above ``offset`` (log truncation)."""
        for pid in list(self.producers):
            e = self.producers[pid]
            kept = [b for b in e.batches if b.last_offset < offset]
            if len(kept) != len(e.batches):
                self.changed = True
                if not kept:
                    del self.producers[pid]
                else:
                    e.batches = deque(kept, maxlen=MAX_CACHED_BATCHES)

    # ------------------------------------------------------------ persistence
    def snapshot_offsets(self) -> list[int]:
        out = []
        for name in os.listdir(self.directory):
            if name.endswith(SNAPSHOT_SUFFIX):
                try:
                    out.append(int(name[: -len(SNAPSHOT_SUFFIX)]))
                except ValueError:
                    pass
        return sorted(out)

    def _path(self, offset: int) -> str:
        return os.path.join(self.directory, f"{offset:020d}{SNAPSHOT_SUFFIX}")

    def snapshot(self, offset: int) -> tuple[str, bytes]:
        """The snapshot file of the state as of log end ``offset``: (path, contents), not written."""
        doc = {
            "version": 1,
            "offset": offset,
            "producers": [
                {"producer_id": pid, "epoch": e.epoch, "last_timestamp": e.last_timestamp,
                 "batches": [[b.first_seq, b.last_seq, b.base_offset, b.last_offset, b.timestamp]
                             for b in e.batches]}
                for pid, e in self.producers.items()
            ],
        }
        return self._path(offset), json.dumps(doc, separators=(",", ":")).encode()

    def write_snapshot(self, offset: int, *, keep: int = 2) -> None:
        """Persist the state as of log end ``offset``; keep the newest ``keep`` snapshots."""
        atomic_write(*self.snapshot(offset))
        self.changed = False
        self.prune_snapshots(keep)

    def prune_snapshots(self, keep: int = 2) -> None:
        """Delete all but the newest ``keep`` snapshot files."""
        for old in self.snapshot_offsets()[:-keep]:
            self._remove(old)

    def _remove(self, offset: int) -> None:
        try:
            os.unlink(self._path(offset))
        except FileNotFoundError:
            pass

    def load_latest(self, max_offset: int) -> int | None:
        """Load the newest readable snapshot at or below ``max_offset``; return its offset.

        Snapshots above ``max_offset`` (the log was truncated below them) are deleted.
        """
        for off in reversed(self.snapshot_offsets()):
            if off > max_offset:
                self._remove(off)
                continue
            try:
                with open(self._path(off), "rb") as f:
                    doc = json.load(f)
                producers: dict[int, ProducerEntry] = {}
                for p in doc["producers"]:
                    e = ProducerEntry(int(p["epoch"]), int(p["last_timestamp"]))
                    e.batches.extend(BatchMetadata(*map(int, b)) for b in p["batches"])
                    producers[int(p["producer_id"])] = e
            except (OSError, ValueError, KeyError, TypeError):
                self._remove(off)
                continue
            self.producers = producers
            self.changed = False
            return off
        self.producers = {}
        return None

    def delete_snapshots_below(self, offset: int) -> None:
        """Drop snapshots older than the newest one at or below ``offset`` (retention)."""
        offs = [o for o in self.snapshot_offsets() if o <= offset]
        for o in offs[:-1]:
            self._remove(o)
