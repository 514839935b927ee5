"""Hierarchical timing wheel shared by the broker and the client.

This follows the design of Kafka's ``SystemTimer``/``TimingWheel`` (tick 1 ms, 20 buckets per
level, overflow levels created lazily with ``tick = parent.interval``):

* every bucket is an intrusive doubly-linked list, so :meth:`TimerTask.cancel` is O(1);
* only *buckets* are kept in a priority queue (a small ``heapq`` of bucket expirations), never the
  individual tasks, so the heap holds at most ``wheel_size`` entries per level plus stale ones;
* when a bucket of an overflow level expires its tasks are re-inserted and cascade down to finer
  levels until they land in a level-0 bucket or are due.

The wheel is pure: no asyncio, no threads, no I/O. Time only moves when the owner calls
:meth:`TimingWheel.advance` with the current time in milliseconds, which makes it deterministic
under a fake clock. It is not thread-safe; drive it from one thread (or one event loop, see
:mod:`protocol.timer_service`).

Two deliberate refinements over Kafka's wheel keep :meth:`TimingWheel.advance` exact for any
``tick_ms`` (Kafka may fire a task up to ``tick_ms - 1`` early):

* a level-0 bucket is keyed by the smallest deadline it holds, not by its window start;
* a task is returned only once ``deadline_ms <= now_ms``; tasks of a due bucket that are still in
  the future are put back.

Items fired by one :meth:`~TimingWheel.advance` call are returned ordered by deadline, ties in
insertion order.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterator
from typing import Any

__all__ = ["TimerTask", "TimingWheel"]

_PENDING = 0
_CANCELLED = 1
_FIRED = 2


class _Node:
    """Link fields shared by tasks and bucket sentinels."""

    __slots__ = ("_next", "_prev")

    _next: _Node
    _prev: _Node


class TimerTask(_Node):
    """Handle for one scheduled item; returned by :meth:`TimingWheel.add`."""

    __slots__ = ("_bucket", "_seq", "_state", "_wheel", "deadline_ms", "item")

    def __init__(self, wheel: TimingWheel, deadline_ms: int, item: Any, seq: int) -> None:
        self.deadline_ms = deadline_ms
        self.item = item
        self._wheel: TimingWheel | None = wheel
        self._seq = seq
        self._state = _PENDING
        self._bucket: _Bucket | None = None

    @property
    def cancelled(self) -> bool:
        return self._state == _CANCELLED

    @property
    def pending(self) -> bool:
        """True until the task is cancelled or returned by ``advance``."""
        return self._state == _PENDING

    def cancel(self) -> bool:
        """Cancel the task; returns False if it had already fired or been cancelled. O(1)."""
        if self._state != _PENDING:
            return False
        self._state = _CANCELLED
        bucket = self._bucket
        if bucket is not None:
            bucket.remove(self)
        wheel = self._wheel
        if wheel is not None:
            wheel._live -= 1
            self._wheel = None
        return True

    def __repr__(self) -> str:
        state = ("pending", "cancelled", "fired")[self._state]
        return f"TimerTask(deadline_ms={self.deadline_ms}, item={self.item!r}, {state})"


class _Bucket(_Node):
    """Circular doubly-linked list of tasks; the bucket object is its own sentinel."""

    __slots__ = ("_entry", "expiration", "level")

    def __init__(self, level: int) -> None:
        self._next = self
        self._prev = self
        self.level = level
        self.expiration = -1
        self._entry: list[Any] | None = None

    def append(self, task: TimerTask) -> None:
        last = self._prev
        task._prev = last
        task._next = self
        last._next = task
        self._prev = task
        task._bucket = self

    def remove(self, task: TimerTask) -> None:
        task._prev._next = task._next
        task._next._prev = task._prev
        task._bucket = None

    def drain(self) -> Iterator[TimerTask]:
        """Detach every task and reset the bucket; yields the detached tasks."""
        node = self._next
        self._next = self
        self._prev = self
        self.expiration = -1
        self._entry = None
        while node is not self:
            assert isinstance(node, TimerTask)
            nxt = node._next
            node._bucket = None
            yield node
            node = nxt

    def __bool__(self) -> bool:
        return self._next is not self


class _Level:
    """One wheel of the hierarchy: ``wheel_size`` buckets of ``tick_ms`` each."""

    __slots__ = ("buckets", "current_ms", "interval_ms", "tick_ms")

    def __init__(self, index: int, tick_ms: int, wheel_size: int, start_ms: int) -> None:
        self.tick_ms = tick_ms
        self.interval_ms = tick_ms * wheel_size
        self.current_ms = start_ms - start_ms % tick_ms
        self.buckets = [_Bucket(index) for _ in range(wheel_size)]

    def advance_clock(self, time_ms: int) -> None:
        if time_ms >= self.current_ms + self.tick_ms:
            self.current_ms = time_ms - time_ms % self.tick_ms


class TimingWheel:
    """Hierarchical timing wheel with O(1) add/cancel and an injected clock.

    ``advance(now_ms)`` returns the items whose deadline is ``<= now_ms``. Adding a deadline that
    is already ``<=`` the last advanced time makes it come out of the very next ``advance``.
    """

    def __init__(self, tick_ms: int = 1, wheel_size: int = 20, start_ms: int = 0) -> None:
        if tick_ms < 1:
            raise ValueError("tick_ms must be >= 1")
        if wheel_size < 2:
            raise ValueError("wheel_size must be >= 2")
        self.tick_ms = tick_ms
        self.wheel_size = wheel_size
        self._now = int(start_ms)
        self._levels: list[_Level] = [_Level(0, tick_ms, wheel_size, self._now)]
        self._heap: list[list[Any]] = []
        self._due: list[TimerTask] = []
        self._live = 0
        self._seq = 0

    @property
    def now_ms(self) -> int:
        """Time passed to the last :meth:`advance` (or ``start_ms``)."""
        return self._now

    @property
    def levels(self) -> int:
        """Number of wheel levels created so far (overflow levels are created lazily)."""
        return len(self._levels)

    def __len__(self) -> int:
        return self._live

    def add(self, deadline_ms: int, item: Any) -> TimerTask:
        """Schedule ``item`` to be returned by the first ``advance(now)`` with ``now >= deadline_ms``.

        Fractional deadlines are rounded up, so an item never comes out early.
        """
        if type(deadline_ms) is not int:
            deadline_ms = math.ceil(deadline_ms)
        self._seq += 1
        task = TimerTask(self, deadline_ms, item, self._seq)
        self._live += 1
        if deadline_ms <= self._now:
            self._due.append(task)
        else:
            self._place(task)
        return task

    def advance(self, now_ms: int) -> list[Any]:
        """Move time forward to ``now_ms`` and return the due items in deadline order.

        Time never goes backwards: a ``now_ms`` older than the current time only collects items
        that were added with past deadlines.
        """
        if type(now_ms) is not int:
            now_ms = math.floor(now_ms)
        now = max(now_ms, self._now)
        fired: list[TimerTask] = []
        if self._due:
            fired.extend(t for t in self._due if t._state == _PENDING)
            self._due = []
        heap = self._heap
        levels = self._levels
        while heap and heap[0][0] <= now:
            entry = heapq.heappop(heap)
            bucket: _Bucket = entry[2]
            if bucket._entry is not entry:
                continue
            expiration = entry[0]
            for level in levels:
                level.advance_clock(expiration)
            for task in bucket.drain():
                if task.deadline_ms <= now:
                    fired.append(task)
                else:
                    self._place(task)
        for level in levels:
            level.advance_clock(now)
        self._now = now
        if not fired:
            return []
        if len(fired) > 1:
            fired.sort(key=_order_key)
        self._live -= len(fired)
        out = []
        for task in fired:
            task._state = _FIRED
            task._wheel = None
            out.append(task.item)
        return out

    def next_deadline(self) -> int | None:
        """Earliest time at which :meth:`advance` may return something, or None when idle.

        It is a lower bound (a bucket whose tasks were all cancelled still counts), so it is safe
        to sleep until it.
        """
        heap = self._heap
        while heap and heap[0][2]._entry is not heap[0]:
            heapq.heappop(heap)
        best = heap[0][0] if heap else None
        if self._due:
            pending = [t.deadline_ms for t in self._due if t._state == _PENDING]
            if pending:
                due_min = min(pending)
                best = due_min if best is None else min(best, due_min)
            else:
                self._due = []
        return best

    def _place(self, task: TimerTask) -> None:
        """Insert a task whose deadline is in the future into the right level and bucket."""
        deadline = task.deadline_ms
        levels = self._levels
        index = 0
        while True:
            if index == len(levels):
                parent = levels[-1]
                levels.append(_Level(index, parent.interval_ms, self.wheel_size, parent.current_ms))
            level = levels[index]
            if deadline < level.current_ms + level.interval_ms:
                break
            index += 1
        virtual_id = deadline // level.tick_ms
        bucket = level.buckets[virtual_id % self.wheel_size]
        bucket.append(task)
        key = deadline if index == 0 else virtual_id * level.tick_ms
        if bucket._entry is None or key < bucket.expiration:
            bucket.expiration = key
            entry = [key, task._seq, bucket]
            bucket._entry = entry
            heapq.heappush(self._heap, entry)


def _order_key(task: TimerTask) -> tuple[int, int]:
    return task.deadline_ms, task._seq
