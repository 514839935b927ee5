"""SharePartition: one share group's view of one topic-partition on its leader (KIP-932), pure and
clock-free (every call takes ``now_ms``; the caller runs the lock timers).

The *in-flight window* runs from the share-partition start offset (SPSO, :attr:`start`: every offset
below it is done) to the last offset fetched into it (SPEO, ``next - 1``).  It is held as contiguous
:class:`Run` s — offset ranges of one state: one per log batch while its records share a state, split
(down to single records) where they differ.  Record states are Kafka's: AVAILABLE (0), ACQUIRED (1),
ACKNOWLEDGED (2), ARCHIVED (4); the last two are terminal.

* :meth:`acquire` hands a member records: AVAILABLE ones inside the window (released, expired,
  never delivered after a failover) and new ones from the log after SPEO, up to ``max_records``
  (``batch_optimized``: whole log batches, the limit is soft; ``record_limit``: strict), at most
  ``max_record_locks`` records in flight.  Each acquisition raises the records' delivery count and
  starts one acquisition :class:`Lock` (``lock_ms``).  Control batches, records of aborted
  transactions (read_committed) and offsets the log no longer has are archived, never delivered.
  Records already delivered ``ceil(limit/2)`` times are handed out in ever smaller acquisitions, the
  last attempt alone, so one poison record does not take a batch with it.
* :meth:`acknowledge`: ACCEPT → ACKNOWLEDGED, REJECT and GAP → ARCHIVED, RELEASE → AVAILABLE (ARCHIVED
  at the delivery-count limit), RENEW → a fresh lock.  Only the member that holds a record may
  acknowledge it (INVALID_RECORD_STATE), offsets past the window are INVALID_REQUEST, offsets below
  SPSO are skipped; all of a call's acknowledgements apply or none.
* :meth:`expire` (a lock's deadline) and :meth:`release_member` (a session closed) make ACQUIRED
  records AVAILABLE again (ARCHIVED at the limit), keeping their delivery count.

Durability: every change but an acquisition must reach the share coordinator.  Changes queue up;
:meth:`next_write` takes them all as one WriteShareGroupState (its start offset is SPSO once they are
done), only one write is in flight at a time, and :meth:`write_done` finishes it: records waiting on it
become settled (SPSO may move), or — for acknowledgements — go back to ACQUIRED when it failed.  Records
whose change is being written are neither acquired nor acknowledged meanwhile.
"""

from __future__ import annotations

import bisect
import itertools
import uuid
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from protocol.error_codes import ErrorCode

__all__ = ["ACKNOWLEDGED", "ACQUIRED", "ARCHIVED", "AVAILABLE", "AckBatch", "Acquired", "Lock", "LogBatch",
           "Run", "ShareLimits", "SharePartition", "StateWrite", "expand"]

E = ErrorCode
AVAILABLE, ACQUIRED, ACKNOWLEDGED, ARCHIVED = 0, 1, 2, 4
TERMINAL = (ACKNOWLEDGED, ARCHIVED)
GAP, ACCEPT, RELEASE, REJECT, RENEW = 0, 1, 2, 3, 4
BATCH_OPTIMIZED, RECORD_LIMIT = 0, 1

_lock_ids = itertools.count(1)


class Lock:
    """An acquisition lock: the records of one acquisition by ``member``, until ``deadline``."""

    __slots__ = ("deadline", "id", "member", "timer")

    def __init__(self, member: str, deadline: int) -> None:
        self.id = next(_lock_ids)
        self.member = member
        self.deadline = deadline
        #: the caller's timer for the deadline (cancelled when the lock no longer matters)
        self.timer: object | None = None


@dataclass(slots=True)
class Run:
    """Offsets ``first``..``last`` in one state with one delivery count (and, ACQUIRED, one lock).
    ``write`` is the id of the state write carrying its change (0: settled)."""

    first: int
    last: int
    state: int
    count: int
    lock: Lock | None = None
    write: int = 0
    #: the run before an acknowledgement now being written (restored if the write fails)
    undo: tuple[int, int, Lock | None] | None = None

    def same(self, other: Run) -> bool:
        return (self.state, self.count, self.lock, self.write, self.undo) == (other.state, other.count, other.lock,
                                                                              other.write, other.undo)


class LogBatch(NamedTuple):
    """What acquisition needs of a log batch: its offsets, whether it is a control batch, and whether its
    records belong to an aborted transaction (read_committed)."""

    base: int
    last: int
    control: bool = False
    aborted: bool = False


class Acquired(NamedTuple):
    first: int
    last: int
    delivery_count: int


class AckBatch(NamedTuple):
    """An acknowledgement batch: one type for the whole range, or one per offset."""

    first: int
    last: int
    types: Sequence[int]


@dataclass(frozen=True, slots=True)
class ShareLimits:
    """The group's settings for this call (group configs over the broker's)."""

    delivery_count_limit: int = 5
    max_record_locks: int = 2000
    lock_ms: int = 30_000


@dataclass(slots=True)
class StateWrite:
    """One WriteShareGroupState: the start offset and the changed offsets' persisted states."""

    id: int
    start_offset: int
    batches: list[tuple[int, int, int, int]]
    #: who waits for it (the caller's tokens)
    waiters: list[Hashable] = field(default_factory=list)


class SharePartition:
    """See the module doc.  ``start``/``next`` come from the share coordinator's state (:meth:`load`)."""

    def __init__(self, group_id: str, topic: str, partition: int, *, topic_id: uuid.UUID | None = None,
                 leader_epoch: int = 0, state_epoch: int = 0) -> None:
        self.group_id = group_id
        self.topic = topic
        self.partition = partition
        self.topic_id = topic_id
        self.leader_epoch = leader_epoch
        self.state_epoch = state_epoch
        self.start = 0
        self.next = 0
        self.runs: list[Run] = []
        self._write_ids = itertools.count(1)
        #: changes not yet handed to a write: (first, last, state, count) and their waiters
        self._queued: list[tuple[int, int, int, int]] = []
        self._queued_waiters: list[Hashable] = []
        self._queued_ids: set[int] = set()
        self._must_write = False
        self.writing: StateWrite | None = None
        #: the lock the last acknowledgement's RENEW gave its records (for the caller's timer)
        self.renewed: Lock | None = None
        #: counters for metrics
        self.acquired_records = 0
        self.acknowledged = {ACCEPT: 0, RELEASE: 0, REJECT: 0, RENEW: 0, GAP: 0}
        self.archived_records = 0
        self.lock_expiries = 0

    # ---------------------------------------------------------------- loading
    def load(self, start_offset: int, batches: Iterable[tuple[int, int, int, int]], *, reset_offset: int,
             log_start: int) -> None:
        """The window from the coordinator's state: ``start_offset`` (-1: ``reset_offset``, by the group's
        ``share.auto.offset.reset``, which is then written so a failover keeps it) and its state
        batches; offsets between them never delivered are AVAILABLE."""
        if start_offset < 0:
            start_offset = reset_offset
            self._must_write = True
        self.start = self.next = max(start_offset, 0)
        self.runs = []
        for first, last, state, count in sorted(batches):
            if last < self.start:
                continue
            first = max(first, self.start)
            if first > self.next:
                self.runs.append(Run(self.next, first - 1, AVAILABLE, 0))
            elif first < self.next:
                continue  # overlapping batches: the first one wins
            self.runs.append(Run(first, last, state if state in (AVAILABLE, *TERMINAL) else AVAILABLE, count))
            self.next = last + 1
        self.advance_to_log_start(log_start)
        self._advance()

    # ---------------------------------------------------------------- queries
    @property
    def in_flight(self) -> int:
        """Records in the window (SPEO - SPSO + 1)."""
        return self.next - self.start

    def acquire_position(self) -> int:
        """Where acquisition reads the log from: the first AVAILABLE offset of the window, else SPEO + 1."""
        for run in self.runs:
            if run.state == AVAILABLE and not run.write:
                return run.first
        return self.next

    def has_available(self) -> bool:
        return any(run.state == AVAILABLE and not run.write for run in self.runs)

    def acquired_by(self, member: str) -> int:
        return sum(r.last - r.first + 1 for r in self.runs if r.state == ACQUIRED and r.lock and r.lock.member == member)

    def holds_records(self) -> bool:
        """Records are acquired, or changes wait to be written: the partition must stay cached."""
        return bool(self.writing or self._queued or self._must_write
                    or any(r.state == ACQUIRED or r.write for r in self.runs))

    def state_counts(self) -> dict[int, int]:
        counts = dict.fromkeys((AVAILABLE, ACQUIRED, ACKNOWLEDGED, ARCHIVED), 0)
        for run in self.runs:
            counts[run.state] += run.last - run.first + 1
        return counts

    # ---------------------------------------------------------------- the window
    def _index(self, offset: int) -> int:
        """The index of the run containing ``offset`` (the first run for offsets before the window)."""
        return max(0, bisect.bisect_right(self.runs, offset, key=lambda r: r.first) - 1)

    def _split(self, first: int, last: int) -> tuple[int, int]:
        """Split runs so that ``first``..``last`` (within the window) is covered by whole runs; returns
        the index range [i, j) of those runs."""
        i = self._index(first)
        run = self.runs[i]
        if run.first < first:
            head = Run(run.first, first - 1, run.state, run.count, run.lock, run.write, run.undo)
            run.first = first
            self.runs.insert(i, head)
            i += 1
        j = self._index(last)
        run = self.runs[j]
        if run.last > last:
            tail = Run(last + 1, run.last, run.state, run.count, run.lock, run.write, run.undo)
            run.last = last
            self.runs.insert(j + 1, tail)
        return i, j + 1

    def _coalesce(self) -> None:
        out: list[Run] = []
        for run in self.runs:
            if out and out[-1].same(run) and out[-1].last + 1 == run.first:
                out[-1].last = run.last
            else:
                out.append(run)
        self.runs = out

    def _advance(self) -> None:
        """Drop the settled terminal runs at the front: SPSO moves past them."""
        drop = 0
        for run in self.runs:
            if run.state in TERMINAL and not run.write:
                drop += 1
            else:
                break
        if drop:
            del self.runs[:drop]
        self.start = self.runs[0].first if self.runs else self.next
        self._coalesce()

    def advance_to_log_start(self, log_start: int) -> None:
        """The log no longer has offsets below ``log_start`` (retention, DeleteRecords): what is AVAILABLE
        below it is archived and SPSO moves up (acquired records stay until acknowledged or expired)."""
        if log_start <= self.start:
            return
        if self.next <= log_start and not any(r.state == ACQUIRED or r.write for r in self.runs):
            self.runs = []
            self.start = self.next = log_start
            self._must_write = True
            return
        for first, last, count in self._available_ranges(self.start, min(log_start, self.next) - 1):
            self._set(first, last, ARCHIVED, count, None)
        self._advance()
        if not self.runs and self.next < log_start:
            self.start = self.next = log_start
        self._must_write = True

    # ---------------------------------------------------------------- acquiring
    def acquire(self, member: str, batches: Iterable[LogBatch], max_records: int, now_ms: int, limits: ShareLimits,
                *, mode: int = BATCH_OPTIMIZED) -> tuple[list[Acquired], Lock | None]:
        """Acquire records of ``batches`` (the log batches read from :meth:`acquire_position`, in order, up to
        the fetch limit) for ``member``: the acquired ranges, and their lock (None when nothing was)."""
        max_records = max(1, max_records)
        lock = Lock(member, now_ms + limits.lock_ms)
        out: list[Acquired] = []
        taken = 0
        throttled = False
        cursor = self.acquire_position()
        threshold = max(2, -(-limits.delivery_count_limit // 2))
        for b in batches:
            if throttled or taken >= max_records or b.last < cursor:
                if throttled or taken >= max_records:
                    break
                continue
            if b.base > cursor and cursor < self.next:  # offsets the log no longer has
                self._archive_missing(cursor, min(b.base, self.next) - 1)
            cursor = max(cursor, b.last + 1)
            skip = b.control or b.aborted
            # the part of the batch inside the window
            lo, hi = max(b.base, self.start), min(b.last, self.next - 1)
            if lo <= hi:
                for first, last, count in self._available_ranges(lo, hi):
                    if skip:
                        self._set(first, last, ARCHIVED, count, None)
                        self.archived_records += last - first + 1
                        continue
                    allowed = max_records - taken if mode == RECORD_LIMIT else last - first + 1
                    if count >= threshold:  # a record delivered many times already: smaller acquisitions
                        if taken:
                            throttled = True
                            break
                        allowed = 1 if count + 1 >= limits.delivery_count_limit else \
                            max(1, max_records >> (count - threshold + 1))
                        throttled = True
                    end = min(last, first + allowed - 1)
                    if end < first:
                        break
                    self._set(first, end, ACQUIRED, count + 1, lock)
                    out.append(Acquired(first, end, count + 1))
                    taken += end - first + 1
                    if throttled or (mode == RECORD_LIMIT and taken >= max_records):
                        break
            if throttled or (mode == RECORD_LIMIT and taken >= max_records):
                break
            # the part of the batch after the window: new records
            lo = max(b.base, self.next)
            if lo > b.last:
                continue
            if self.next == self.start and not self.runs:
                self.start = self.next = lo
            room = limits.max_record_locks - (lo - self.start)
            if room <= 0:
                break
            hi = min(b.last, lo + room - 1)
            if skip:
                self.runs.append(Run(lo, hi, ARCHIVED, 0))
                self.archived_records += hi - lo + 1
            else:
                if mode == RECORD_LIMIT:
                    hi = min(hi, lo + max_records - taken - 1)
                self.runs.append(Run(lo, hi, ACQUIRED, 1, lock))
                out.append(Acquired(lo, hi, 1))
                taken += hi - lo + 1
            if lo > self.next:  # the log skipped offsets (compaction): nothing to deliver there
                self.runs.insert(len(self.runs) - 1, Run(self.next, lo - 1, ARCHIVED, 0))
            self.next = hi + 1
            if hi < b.last:
                break  # out of room (or, record_limit, of records)
        self.acquired_records += taken
        self._advance()
        return _merge_acquired(out), lock if out else None

    def _available_ranges(self, lo: int, hi: int) -> list[tuple[int, int, int]]:
        """(first, last, delivery count) of the settled AVAILABLE runs overlapping ``lo``..``hi``."""
        out = []
        i = self._index(lo)
        while i < len(self.runs) and self.runs[i].first <= hi:
            run = self.runs[i]
            if run.state == AVAILABLE and not run.write:
                out.append((max(run.first, lo), min(run.last, hi), run.count))
            i += 1
        return out

    def _archive_missing(self, first: int, last: int) -> None:
        for f, lst, count in self._available_ranges(max(first, self.start), last):
            self._set(f, lst, ARCHIVED, count, None)
            self.archived_records += lst - f + 1

    def _set(self, first: int, last: int, state: int, count: int, lock: Lock | None) -> None:
        i, j = self._split(first, last)
        for run in self.runs[i:j]:
            run.state, run.count, run.lock = state, count, lock

    # ---------------------------------------------------------------- acknowledging
    def acknowledge(self, member: str, batches: Sequence[AckBatch], now_ms: int, limits: ShareLimits,
                    waiter: Hashable | None = None) -> tuple[ErrorCode, str | None, bool]:
        """Apply ``member``'s acknowledgements: (error, message, whether a state write carries them — then
        ``waiter`` is answered by :meth:`write_done`).  All of them apply, or none (an error)."""
        plan: list[tuple[int, int, int]] = []
        for b in batches:
            for offset_first, offset_last, ack in expand(b):
                first, last = max(offset_first, self.start), offset_last
                if last < first:
                    continue  # below SPSO: done already
                if last >= self.next:
                    return E.INVALID_REQUEST, f"Offsets {first}-{last} are beyond the in-flight records", False
                for run in self._runs_in(first, last):
                    if run.state != ACQUIRED or run.write or run.lock is None or run.lock.member != member:
                        return (E.INVALID_RECORD_STATE, f"Offsets {max(first, run.first)}-{min(last, run.last)} are "
                                "not acquired by this member", False)
                plan.append((first, last, ack))
        written = False
        renew_lock: Lock | None = None
        write_id = self._queue_id()
        for first, last, ack in plan:
            self.acknowledged[ack] = self.acknowledged.get(ack, 0) + last - first + 1
            i, j = self._split(first, last)
            for run in self.runs[i:j]:
                if ack == RENEW:
                    if renew_lock is None:
                        renew_lock = Lock(member, now_ms + limits.lock_ms)
                    run.lock = renew_lock
                    continue
                run.undo = (run.state, run.count, run.lock)
                if ack == ACCEPT:
                    run.state = ACKNOWLEDGED
                elif ack == RELEASE:
                    run.state = ARCHIVED if run.count >= limits.delivery_count_limit else AVAILABLE
                else:
                    run.state = ARCHIVED
                if run.state == ARCHIVED:
                    self.archived_records += run.last - run.first + 1
                run.lock = None
                run.write = write_id
                self._queued.append((run.first, run.last, run.state, run.count))
                written = True
        if written and waiter is not None:
            self._queued_waiters.append(waiter)
        self.renewed = renew_lock
        self._coalesce()
        return E.NONE, None, written

    def _runs_in(self, first: int, last: int) -> list[Run]:
        out = []
        i = self._index(first)
        while i < len(self.runs) and self.runs[i].first <= last:
            out.append(self.runs[i])
            i += 1
        return out

    # ---------------------------------------------------------------- releasing
    def expire(self, lock: Lock, now_ms: int, limits: ShareLimits) -> bool:
        """``lock``'s deadline passed: its records still ACQUIRED become AVAILABLE (ARCHIVED at the delivery
        limit).  True when something changed."""
        changed = self._release(lambda r: r.lock is lock, limits)
        if changed:
            self.lock_expiries += 1
        return changed

    def release_member(self, member: str, limits: ShareLimits) -> bool:
        """``member``'s share session ended: every record it holds is released."""
        return self._release(lambda r: r.lock is not None and r.lock.member == member, limits)

    def _release(self, which: object, limits: ShareLimits) -> bool:
        changed = False
        write_id = self._queue_id()
        for run in self.runs:
            if run.state != ACQUIRED or run.write or not which(run):  # type: ignore[operator]
                continue
            run.state = ARCHIVED if run.count >= limits.delivery_count_limit else AVAILABLE
            if run.state == ARCHIVED:
                self.archived_records += run.last - run.first + 1
            run.lock = None
            run.write = write_id
            run.undo = None  # a release is not undone when its write fails
            self._queued.append((run.first, run.last, run.state, run.count))
            changed = True
        self._coalesce()
        return changed

    # ---------------------------------------------------------------- writing
    def _queue_id(self) -> int:
        """The id of the write the next queued changes will go in."""
        if not self._queued_ids:
            self._queued_ids.add(next(self._write_ids))
        return next(iter(self._queued_ids))

    def next_write(self) -> StateWrite | None:
        """The queued changes as one write, when none is in flight (then call :meth:`write_done`)."""
        if self.writing is not None or not (self._queued or self._must_write):
            return None
        write_id = next(iter(self._queued_ids)) if self._queued_ids else next(self._write_ids)
        start = self.next
        for run in self.runs:
            if run.state not in TERMINAL:
                start = run.first
                break
        batches = _persisted(self._queued)
        self.writing = StateWrite(write_id, start, batches, self._queued_waiters)
        self._queued, self._queued_waiters, self._queued_ids = [], [], set()
        self._must_write = False
        return self.writing

    def write_done(self, write_id: int, ok: bool, now_ms: int) -> list[Hashable]:
        """The write ``write_id`` completed (``ok``) or failed: settle its records — a failed acknowledgement
        goes back to ACQUIRED (its records then expire as their lock says).  Returns its waiters."""
        write = self.writing
        if write is None or write.id != write_id:
            return []
        self.writing = None
        for run in self.runs:
            if run.write != write_id:
                continue
            if not ok and run.undo is not None:
                run.state, run.count, run.lock = run.undo
            run.write = 0
            run.undo = None
        self._advance()
        return write.waiters

    def expired_locks(self, now_ms: int) -> list[Lock]:
        """Locks of ACQUIRED records whose deadline passed (e.g. restored by a failed write meanwhile)."""
        seen: dict[int, Lock] = {}
        for run in self.runs:
            if run.state == ACQUIRED and run.lock is not None and run.lock.deadline <= now_ms and not run.write:
                seen[run.lock.id] = run.lock
        return list(seen.values())


def expand(b: AckBatch) -> list[tuple[int, int, int]]:
    """An acknowledgement batch as (first, last, type) ranges of one type each."""
    if len(b.types) == 1:
        return [(b.first, b.last, b.types[0])]
    out: list[tuple[int, int, int]] = []
    for offset, ack in zip(range(b.first, b.last + 1), b.types, strict=True):
        if out and out[-1][2] == ack and out[-1][1] + 1 == offset:
            out[-1] = (out[-1][0], offset, ack)
        else:
            out.append((offset, offset, ack))
    return out


def _persisted(changes: list[tuple[int, int, int, int]]) -> list[tuple[int, int, int, int]]:
    """Changes as state batches: later ones win where they overlap; adjacent equal ones joined."""
    ranges = list(changes)
    if not ranges:
        return []
    # without overlaps (the common case) the ranges only need ordering and joining
    ordered = sorted(ranges, key=lambda r: r[0])
    if all(a[1] < b[0] for a, b in itertools.pairwise(ordered)):
        merged: list[tuple[int, int, int, int]] = []
        for r in ordered:
            if merged and merged[-1][1] + 1 == r[0] and merged[-1][2:] == r[2:]:
                merged[-1] = (merged[-1][0], r[1], r[2], r[3])
            else:
                merged.append(r)
        return merged
    by_offset: dict[int, tuple[int, int, int]] = {}
    for first, last, state, count in ranges:
        for offset in range(first, last + 1):
            by_offset[offset] = (offset, state, count)
    out: list[tuple[int, int, int, int]] = []
    for offset in sorted(by_offset):
        _, state, count = by_offset[offset]
        if out and out[-1][1] + 1 == offset and out[-1][2:] == (state, count):
            out[-1] = (out[-1][0], offset, state, count)
        else:
            out.append((offset, offset, state, count))
    return out


def _merge_acquired(ranges: list[Acquired]) -> list[Acquired]:
    out: list[Acquired] = []
    for r in ranges:
        if out and out[-1].last + 1 == r.first and out[-1].delivery_count == r.delivery_count:
            out[-1] = Acquired(out[-1].first, r.last, r.delivery_count)
        else:
            out.append(r)
    return out
