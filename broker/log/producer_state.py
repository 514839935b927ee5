"""Producer state of one partition: epoch, last five batches and ongoing transaction per producer id.

``ProducerStateManager.check(header)`` runs before an append and decides:

* ``None``            → in sequence, append it (then call ``update``);
* ``BatchMetadata``   → a retry of one of the last 5 batches: answer success with
  the original offsets and append nothing;
* ``OutOfOrderSequenceError`` / ``InvalidProducerEpochError`` /
  ``InvalidTxnStateError`` (a non-transactional batch from a producer whose
  transaction is open here).

The rules follow Kafka's ``ProducerAppendInfo``: a lower epoch is fenced; a new
epoch must start at sequence 0 (unless we have never seen the producer, e.g.
its state expired); within an epoch the first sequence must follow the last one,
wrapping from int32 max to 0.

Transactions: the first transactional batch of a producer opens its transaction
in this partition (``ProducerEntry.txn_first_offset``); the COMMIT or ABORT
marker closes it (:meth:`ProducerStateManager.complete_txn`, returning a
:class:`CompletedTxn` for the aborted-transaction index).  The smallest first
offset of the open transactions is the partition's first unstable offset, which
bounds the last stable offset.  A batch that would open a transaction is only
appended with the *verification guard* handed out when the leader started
checking with the transaction coordinator that the partition belongs to the
transaction (KIP-890); a marker or the transaction starting discards the guard, so
a verification that raced with the transaction's end can never open a hanging one.
Markers are checked against the producer's epoch and the coordinator epoch that
wrote the previous one (a deposed coordinator is fenced).

Persistence: ``write_snapshot(offset)`` stores the state as of ``offset`` in
``<offset:020d>.snapshot`` (JSON) in the partition directory; on open the
newest snapshot at or below the log end is loaded and the batch headers after
it are replayed (``update`` / ``complete_txn`` again) to rebuild the rest.
"""

from __future__ import annotations

import json
import os
from collections import deque
from dataclasses import dataclass, field

from broker.log._fs import atomic_write, unlink_if_present
from broker.log.errors import (
    InvalidProducerEpochError,
    InvalidTxnStateError,
    OutOfOrderSequenceError,
    TransactionCoordinatorFencedError,
)
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
    #: first offset of this producer's open transaction in the partition (-1: none open)
    txn_first_offset: int = -1
    #: epoch of the transaction coordinator that wrote this producer's last marker here
    coordinator_epoch: int = -1

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else -1


@dataclass(frozen=True, slots=True)
class CompletedTxn:
    """A transaction a marker closed: its records span ``[first_offset, last_offset]`` (the marker)."""

    producer_id: int
    first_offset: int
    last_offset: int
    aborted: bool


class VerificationGuard:
    """Identity token of one verification with the transaction coordinator (see the module doc)."""

    __slots__ = ("producer_id",)

    def __init__(self, producer_id: int) -> None:
        self.producer_id = producer_id


class ProducerStateManager:
    """Per-partition producer-id → ``ProducerEntry`` map with snapshot persistence."""

    def __init__(self, directory: str) -> None:
        self.directory = directory
        self.producers: dict[int, ProducerEntry] = {}
        #: producer id → first offset of its open transaction (the same as the entries say)
        self.ongoing: dict[int, int] = {}
        self._guards: dict[int, VerificationGuard] = {}
        self.changed = False

    def check(self, h: BatchHeader, *, sequenced: bool = True) -> BatchMetadata | None:
        """Validate a data batch before a leader appends it (``sequenced=False``: a coordinator's
        write, which carries no sequence numbers; only the epoch is checked)."""
        entry = self.producers.get(h.producer_id)
        if entry is None:
            return None  # unknown producer: accept any sequence (Kafka does the same since KIP-360)
        if h.producer_epoch < entry.epoch:
            raise InvalidProducerEpochError(
                f"producer {h.producer_id} epoch {h.producer_epoch} is older than {entry.epoch}")
        if entry.txn_first_offset >= 0 and not h.is_transactional:
            raise InvalidTxnStateError(f"producer {h.producer_id} sent a non-transactional batch while its "
                                       f"transaction is open")
        if not sequenced:
            return None
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
        """Record an appended data batch (also used when replaying the log).

        ``now_ms`` (broker time) drives producer expiry; on replay the batch timestamp stands in.
        A transactional batch opens the producer's transaction here if none is open.
        """
        pid = h.producer_id
        entry = self.producers.get(pid)
        if entry is None or h.producer_epoch > entry.epoch:
            fresh = ProducerEntry(h.producer_epoch)
            if entry is not None:  # a bumped epoch keeps the transaction the old one opened
                fresh.txn_first_offset, fresh.coordinator_epoch = entry.txn_first_offset, entry.coordinator_epoch
            entry = self.producers[pid] = fresh
        elif h.producer_epoch < entry.epoch:
            return  # only reachable on replay of an old fenced batch
        if h.base_sequence >= 0:
            entry.batches.append(BatchMetadata(
                h.base_sequence, last_sequence(h.base_sequence, h.last_offset_delta),
                base_offset, base_offset + h.last_offset_delta, timestamp))
        entry.last_timestamp = max(entry.last_timestamp, timestamp if now_ms is None else now_ms)
        if h.is_transactional and entry.txn_first_offset < 0:
            entry.txn_first_offset = base_offset
            self.ongoing[pid] = base_offset
            self._guards.pop(pid, None)
        self.changed = True

    # ------------------------------------------------------------ transactions
    def first_unstable_offset(self) -> int | None:
        """The first offset of the oldest open transaction (None: none is open)."""
        return min(self.ongoing.values()) if self.ongoing else None

    def start_verification(self, producer_id: int) -> VerificationGuard:
        """The guard for a verification of ``producer_id``'s transaction (the current one if any)."""
        guard = self._guards.get(producer_id)
        if guard is None:
            guard = self._guards[producer_id] = VerificationGuard(producer_id)
        return guard

    def in_transaction(self, producer_id: int, producer_epoch: int) -> bool:
        """The producer's transaction is open here, at this epoch (its batches need no verification)."""
        entry = self.producers.get(producer_id)
        return producer_id in self.ongoing and entry is not None and entry.epoch == producer_epoch

    def verified(self, h: BatchHeader, guard: VerificationGuard | None) -> bool:
        """May transactional batch ``h`` be appended: its transaction is already open here at its epoch,
        or ``guard`` is the one still current for its producer."""
        pid = h.producer_id
        if self.in_transaction(pid, h.producer_epoch):
            return True
        return guard is not None and self._guards.get(pid) is guard

    def check_marker(self, producer_id: int, producer_epoch: int, coordinator_epoch: int) -> None:
        """Validate a COMMIT/ABORT marker before appending it (Kafka's ``checkProducerEpoch`` and
        ``checkCoordinatorEpoch``)."""
        entry = self.producers.get(producer_id)
        if entry is None:
            return
        if producer_epoch < entry.epoch:
            raise InvalidProducerEpochError(f"marker for producer {producer_id} has epoch {producer_epoch}, "
                                            f"older than {entry.epoch}")
        if coordinator_epoch < entry.coordinator_epoch:
            raise TransactionCoordinatorFencedError(
                f"marker for producer {producer_id} from coordinator epoch {coordinator_epoch}; the last was "
                f"written by epoch {entry.coordinator_epoch}")

    def complete_txn(self, producer_id: int, producer_epoch: int, coordinator_epoch: int, aborted: bool,
                     marker_offset: int, timestamp: int) -> CompletedTxn | None:
        """A marker at ``marker_offset`` ends ``producer_id``'s transaction (also on replay); returns it,
        or None when the producer had no open transaction here (nothing to index)."""
        entry = self.producers.get(producer_id)
        if entry is None or producer_epoch > entry.epoch:
            fresh = ProducerEntry(producer_epoch)
            if entry is not None:
                fresh.txn_first_offset = entry.txn_first_offset
            entry = self.producers[producer_id] = fresh
        entry.coordinator_epoch = max(entry.coordinator_epoch, coordinator_epoch)
        entry.last_timestamp = max(entry.last_timestamp, timestamp)
        self._guards.pop(producer_id, None)
        self.changed = True
        first = entry.txn_first_offset
        if first < 0:
            return None
        entry.txn_first_offset = -1
        self.ongoing.pop(producer_id, None)
        return CompletedTxn(producer_id, first, marker_offset, aborted)

    def expire(self, now_ms: int, expiration_ms: int) -> int:
        """Forget producers idle for longer than ``expiration_ms`` (never one with an open
        transaction); return how many."""
        dead = [pid for pid, e in self.producers.items()
                if now_ms - e.last_timestamp > expiration_ms and e.txn_first_offset < 0]
        for pid in dead:
            del self.producers[pid]
            self._guards.pop(pid, None)
        if dead:
            self.changed = True
        return len(dead)

    def clear(self) -> None:
        """Forget everything (the log is being rebuilt or emptied)."""
        self.producers = {}
        self.ongoing = {}
        self._guards = {}
        self.changed = True

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
            "version": 2,
            "offset": offset,
            "producers": [
                {"producer_id": pid, "epoch": e.epoch, "last_timestamp": e.last_timestamp,
                 "batches": [[b.first_seq, b.last_seq, b.base_offset, b.last_offset, b.timestamp]
                             for b in e.batches],
                 "txn_first_offset": e.txn_first_offset, "coordinator_epoch": e.coordinator_epoch}
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
        unlink_if_present(self._path(offset))

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
                    e.txn_first_offset = int(p.get("txn_first_offset", -1))
                    e.coordinator_epoch = int(p.get("coordinator_epoch", -1))
                    producers[int(p["producer_id"])] = e
            except (OSError, ValueError, KeyError, TypeError):
                self._remove(off)
                continue
            self.clear()
            self.producers = producers
            self.ongoing = {pid: e.txn_first_offset for pid, e in producers.items() if e.txn_first_offset >= 0}
            self.changed = False
            return off
        self.clear()
        self.changed = False
        return None

    def delete_snapshots_below(self, offset: int) -> None:
        """Drop snapshots older than the newest one at or below ``offset`` (retention)."""
        offs = [o for o in self.snapshot_offsets() if o <= offset]
        for o in offs[:-1]:
            self._remove(o)
