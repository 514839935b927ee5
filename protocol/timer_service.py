"""Asyncio driver for :class:`protocol.timing_wheel.TimingWheel`.

:class:`WheelTimer` keeps exactly one ``loop.call_at`` handle armed for the wheel's earliest
bucket, so thousands of mostly-cancelled timers (session timeouts, long-poll fetches, request
timeouts) cost one loop timer instead of one heap entry each. Callbacks run on the loop, in
deadline order. Not thread-safe: use it from the loop's thread only.

The clock is injectable (milliseconds, monotonic); tests can skip the loop entirely and call
:meth:`WheelTimer.poll` after moving a fake clock.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable
from typing import Any

from protocol.timing_wheel import TimerTask, TimingWheel

__all__ = ["WheelTimer", "monotonic_ms"]


def monotonic_ms() -> float:
    return time.monotonic() * 1000.0


class WheelTimer:
    """Runs callbacks at millisecond deadlines using a hierarchical timing wheel on an event loop."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop | None = None,
        *,
        clock: Callable[[], float] = monotonic_ms,
        tick_ms: int = 1,
        wheel_size: int = 20,
        wheel: TimingWheel | None = None,
    ) -> None:
        self._loop = loop if loop is not None else asyncio.get_running_loop()
        self._clock = clock
        self.wheel = wheel if wheel is not None else TimingWheel(tick_ms, wheel_size, math.floor(clock()))
        self._handle: asyncio.TimerHandle | None = None
        self._armed_for: int | None = None
        self._closed = False
        self._running = False

    def now_ms(self) -> float:
        return self._clock()

    def call_at_ms(self, deadline_ms: float, callback: Callable[[], Any]) -> TimerTask:
        """Run ``callback()`` once the clock reaches ``deadline_ms``; cancel via the returned task."""
        if self._closed:
            raise RuntimeError("WheelTimer is closed")
        task = self.wheel.add(deadline_ms, callback)
        if not self._running and (self._armed_for is None or task.deadline_ms < self._armed_for):
            self._rearm()
        return task

    def call_later_ms(self, delay_ms: float, callback: Callable[[], Any]) -> TimerTask:
        return self.call_at_ms(self._clock() + delay_ms, callback)

    def poll(self) -> int:
        """Run every callback that is due now and re-arm the loop timer; returns how many ran."""
        if self._closed:
            return 0
        self._running = True
        try:
            callbacks = self.wheel.advance(math.floor(self._clock()))
            for callback in callbacks:
                try:
                    callback()
                except Exception as exc:
                    self._loop.call_exception_handler(
                        {"message": "WheelTimer callback failed", "exception": exc, "callback": callback}
                    )
        finally:
            self._running = False
        self._rearm()
        return len(callbacks)

    def close(self) -> None:
        """Stop the loop timer; pending callbacks never run."""
        self._closed = True
        if self._handle is not None:
            self._handle.cancel()
        self._handle = None
        self._armed_for = None

    def __len__(self) -> int:
        return len(self.wheel)

    def _on_timer(self) -> None:
        self._handle = None
        self._armed_for = None
        self.poll()

    def _rearm(self) -> None:
        if self._closed:
            return
        deadline = self.wheel.next_deadline()
        if deadline == self._armed_for:
            return
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
            self._armed_for = None
        if deadline is None:
            return
        delay_s = max(0.0, (deadline - self._clock()) / 1000.0)
        self._handle = self._loop.call_at(self._loop.time() + delay_s, self._on_timer)
        self._armed_for = deadline
