"""Delayed-operation purgatory (Kafka's ``DelayedOperationPurgatory`` pattern).

A :class:`DelayedOperation` is a request that cannot be answered yet (a produce waiting for
``acks=all``, a long-poll fetch waiting for ``min_bytes``, a join waiting for the group). The
purgatory parks it under one or more *watch keys* and on a timer:

* :meth:`DelayedOperationPurgatory.try_complete_else_watch` tries to complete the operation, watches
  its keys, then tries once more (so an event that happened between the first attempt and the watch
  is not lost) and finally arms its expiration timer;
* :meth:`DelayedOperationPurgatory.check_and_complete` is called when something happens to a key
  (new data appended, high watermark moved, a member joined);
* :meth:`DelayedOperationPurgatory.advance` moves the injected clock, expiring operations whose
  deadline passed.

An operation completed through one key (or expired) stays in the watch lists of its other keys
until a purge.  As in Kafka, the purgatory counts the operations it has watched and, whenever
that estimate exceeds the operations still waiting by more than ``purge_interval``, drops
completed operations from every watch list; it also drops them all once nothing is waiting.
The check runs whenever a waiting operation completes (expirations included), whichever
scheduler fires the timers, so watch lists of idle or deleted keys do not grow without bound.

Completion is exactly-once: whichever of ``try_complete``/expiration/``force_complete`` wins calls
:meth:`DelayedOperation.on_complete`; expiration then also calls
:meth:`DelayedOperation.on_expiration` (Kafka's order).

Everything here is synchronous and single-threaded; the broker's event-loop edge drives
:meth:`~DelayedOperationPurgatory.advance` (for example from a
:class:`protocol.timer_service.WheelTimer`, sleeping until
:meth:`~DelayedOperationPurgatory.next_deadline`).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from typing import Any, Protocol

from protocol.timing_wheel import TimerTask, TimingWheel

__all__ = ["DelayedOperation", "DelayedOperationPurgatory", "Scheduler"]


class Scheduler(Protocol):
    """Anything that can run a callback at a deadline (``TimingWheel.add``, ``WheelTimer.call_at_ms``)."""

    def __call__(self, deadline_ms: int, callback: Callable[[], Any], /) -> TimerTask: ...


class DelayedOperation:
    """Base class for operations parked in a :class:`DelayedOperationPurgatory`.

    Subclasses implement :meth:`try_complete` (check the condition; if satisfied return
    ``self.force_complete()``), :meth:`on_complete` (send the response) and optionally
    :meth:`on_expiration`.
    """

    def __init__(self, delay_ms: int) -> None:
        self.delay_ms = delay_ms
        self._completed = False
        self._timer_task: TimerTask | None = None
        self._purgatory: DelayedOperationPurgatory | None = None

    @property
    def is_completed(self) -> bool:
        return self._completed

    @property
    def deadline_ms(self) -> int | None:
        """Expiration time once the operation is on the timer, else None."""
        return self._timer_task.deadline_ms if self._timer_task is not None else None

    def force_complete(self) -> bool:
        """Complete now; True only for the single call that actually completed the operation."""
        if self._completed:
            return False
        self._completed = True
        if self._timer_task is not None:
            self._timer_task.cancel()
            self._timer_task = None
        purgatory = self._purgatory
        if purgatory is not None:
            self._purgatory = None
            purgatory._num_delayed -= 1
        self.on_complete()
        if purgatory is not None:
            purgatory.maybe_purge()
        return True

    def try_complete(self) -> bool:
        """Complete the operation if its condition holds (via :meth:`force_complete`)."""
        raise NotImplementedError

    def on_complete(self) -> None:
        """Called exactly once, whichever way the operation completes."""
        raise NotImplementedError

    def on_expiration(self) -> None:
        """Called after :meth:`on_complete` when completion was caused by the timeout."""

    def expire(self) -> bool:
        """Timer callback: force completion and report expiration if this call completed it."""
        if self.force_complete():
            self.on_expiration()
            return True
        return False


class DelayedOperationPurgatory:
    """Watches delayed operations by key and expires them on a timing wheel.

    By default the purgatory owns a :class:`TimingWheel` and time moves only through
    :meth:`advance`. ``timer`` lets several purgatories share one wheel (its items are then
    callables, which :meth:`advance` runs); ``schedule`` replaces the wheel entirely (for example
    ``WheelTimer.call_at_ms``), in which case expiration happens wherever that scheduler runs
    callbacks. ``clock`` gives "now" for computing deadlines; it defaults to the wheel's time.
    """

    def __init__(
        self,
        name: str = "",
        *,
        timer: TimingWheel | None = None,
        schedule: Scheduler | None = None,
        clock: Callable[[], int] | None = None,
        purge_interval: int = 1000,
        start_ms: int = 0,
    ) -> None:
        self.name = name
        self.timer = timer if timer is not None else TimingWheel(start_ms=start_ms)
        self._schedule: Scheduler = schedule if schedule is not None else self.timer.add
        self._clock = clock if clock is not None else (lambda: self.timer.now_ms)
        self.purge_interval = purge_interval
        self._watchers: dict[Hashable, list[DelayedOperation]] = {}
        self._num_delayed = 0
        self._estimated_total = 0
        self._expired_total = 0

    @property
    def num_delayed(self) -> int:
        """Operations waiting on the timer (not yet completed)."""
        return self._num_delayed

    @property
    def expired_total(self) -> int:
        return self._expired_total

    def watched(self) -> int:
        """Total entries in all watcher lists, completed-but-not-purged ones included."""
        return sum(len(ops) for ops in self._watchers.values())

    def watched_keys(self) -> int:
        return len(self._watchers)

    def try_complete_else_watch(self, op: DelayedOperation, keys: Iterable[Hashable]) -> bool:
        """Complete ``op`` now if possible; otherwise watch ``keys`` and arm its timer.

        Returns True if the operation completed during this call.
        """
        if op.try_complete():
            return True
        keys = list(keys)
        for key in keys:
            if op.is_completed:
                break
            self._watchers.setdefault(key, []).append(op)
        if keys:
            self._estimated_total += 1
        if op.try_complete():
            return True
        if not op.is_completed:
            deadline = self._clock() + op.delay_ms
            op._purgatory = self
            self._num_delayed += 1
            op._timer_task = self._schedule(deadline, self._expiry_callback(op))
        return False

    def check_and_complete(self, key: Hashable) -> int:
        """Try to complete every operation watching ``key``; returns how many completed."""
        ops = self._watchers.get(key)
        if not ops:
            return 0
        completed = 0
        for op in list(ops):
            if not op.is_completed and op.try_complete():
                completed += 1
        current = self._watchers.get(key)
        if current is not None:
            live = [op for op in current if not op.is_completed]
            if live:
                self._watchers[key] = live
            else:
                del self._watchers[key]
        return completed

    def cancel_for_key(self, key: Hashable) -> list[DelayedOperation]:
        """Stop watching ``key``; returns its uncompleted operations without completing them.

        The operations stay on the timer (they may be watched under other keys); callers that
        abandon them should ``force_complete`` them.
        """
        ops = self._watchers.pop(key, [])
        return [op for op in ops if not op.is_completed]

    def advance(self, now_ms: int) -> int:
        """Move the clock, run due timer callbacks, purge if needed; returns ops expired here."""
        before = self._expired_total
        for callback in self.timer.advance(now_ms):
            callback()
        self.maybe_purge()
        return self._expired_total - before

    def next_deadline(self) -> int | None:
        return self.timer.next_deadline()

    def maybe_purge(self) -> int:
        """Purge completed operations when enough have piled up (or nothing waits any more)."""
        if not self._watchers:
            return 0
        if self._num_delayed == 0 or self._estimated_total - self._num_delayed > self.purge_interval:
            return self.purge_completed()
        return 0

    def purge_completed(self) -> int:
        """Drop completed operations from every watcher list; returns how many entries went."""
        purged = 0
        for key in list(self._watchers):
            ops = self._watchers[key]
            live = [op for op in ops if not op.is_completed]
            purged += len(ops) - len(live)
            if live:
                self._watchers[key] = live
            else:
                del self._watchers[key]
        self._estimated_total = self._num_delayed
        return purged

    def shutdown(self) -> list[DelayedOperation]:
        """Forget all watchers and cancel their timers; returns the uncompleted watched operations."""
        pending: dict[int, DelayedOperation] = {}
        for ops in self._watchers.values():
            for op in ops:
                if not op.is_completed:
                    pending[id(op)] = op
        self._watchers.clear()
        for op in pending.values():
            if op._timer_task is not None:
                op._timer_task.cancel()
                op._timer_task = None
            if op._purgatory is self:
                op._purgatory = None
                self._num_delayed -= 1
        self._estimated_total = 0
        return list(pending.values())

    def _expiry_callback(self, op: DelayedOperation) -> Callable[[], None]:
        def expire() -> None:
            if op.expire():
                self._expired_total += 1

        return expire
