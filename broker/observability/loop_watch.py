"""The event loop's health: how late its timers run (the lag histogram) and, when it is blocked longer than
``event.loop.stall.warn.ms``, where its thread is (a watchdog thread logs that thread's stack, once a stall).

Every connection, timer and coordinator of a broker runs on one event loop, so a callback that does not
return — a write blocked in the kernel, a long computation — delays every client at once.  A beat on
the loop every ``interval`` measures how late it ran (``kbroker_event_loop_lag_seconds``); a thread
off the loop (it runs while the loop's thread holds no GIL, or at the interpreter's switch interval
while it runs Python) sees the beats stop and reports the stall with the stack the loop's thread is
in, and the request the loop is handling when it is in one (its API, version, correlation id, client id
and address: compiled modules (protocol/compiled.py) have no Python frames, so there the stack names
only the nearest Python caller; ``KBROKER_PURE_PYTHON=1`` shows every frame).

:class:`StallDetector` decides (no clock or thread of its own); :class:`LoopWatch` is the edge.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import threading
import time
import traceback
from collections.abc import Callable

log = logging.getLogger("kbroker.loop")

#: the beat's period when stalls are not reported, or only past 400 ms or more (see beat_interval)
BEAT_INTERVAL_S = 0.1


class StallDetector:
    """Beats in, stalls out: :meth:`check` returns how long the loop has gone without a beat when that
    passes ``threshold_s`` — once per stall — else None; :meth:`beat` how long a reported stall lasted."""

    __slots__ = ("_last_beat", "_reported", "threshold_s")

    def __init__(self, threshold_s: float, now: float) -> None:
        self.threshold_s = threshold_s
        self._last_beat = now
        self._reported = False

    def beat(self, now: float) -> float | None:
        """A beat at ``now``: how long the stall it ends lasted when that stall was reported, else None."""
        ended = now - self._last_beat if self._reported else None
        self._last_beat = now
        self._reported = False
        return ended

    def check(self, now: float) -> float | None:
        blocked = now - self._last_beat
        if self._reported or blocked < self.threshold_s:
            return None
        self._reported = True
        return blocked


def beat_interval(stall_threshold_s: float) -> float:
    """The beat's period: a tenth of a second, or a quarter of the stall threshold when that is shorter."""
    if stall_threshold_s <= 0:
        return BEAT_INTERVAL_S
    return min(BEAT_INTERVAL_S, stall_threshold_s / 4)


class LoopWatch:
    """The beat (a timer chain on ``loop``) and, with ``stall_threshold_s`` > 0, the watchdog thread.

    ``on_lag(seconds)``: each beat's lateness; ``on_stall(seconds, stack, activity)``: a stall as the
    watchdog first saw it (default: a warning with the loop thread's stack), where ``activity`` is what
    ``activity()`` said the loop was doing then (None: nothing it knows of; it is called on the
    watchdog's thread)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, stall_threshold_s: float, *,
                 on_lag: Callable[[float], None] | None = None,
                 on_stall: Callable[[float, str, str | None], None] | None = None,
                 activity: Callable[[], str | None] | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._loop = loop
        self._clock = clock
        self._on_lag = on_lag
        self._on_stall = on_stall or warn_stall
        self._activity = activity
        self.interval = beat_interval(stall_threshold_s)
        self._detector = StallDetector(stall_threshold_s, clock()) if stall_threshold_s > 0 else None
        self._handle: asyncio.TimerHandle | None = None
        self._due = 0.0
        self._thread_id: int | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        #: the detector is read and written from the loop's thread (beats) and the watchdog's (checks)
        self._lock = threading.Lock()

    def start(self) -> None:
        """Start beating (call on the loop's thread)."""
        self._thread_id = threading.get_ident()
        self._schedule(self._clock())
        if self._detector is not None:
            self._detector.beat(self._clock())
            self._thread = threading.Thread(target=self._watch, name="kbroker-loop-watch", daemon=True)
            self._thread.start()

    def close(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)
            self._thread = None

    def _schedule(self, now: float) -> None:
        self._due = now + self.interval
        self._handle = self._loop.call_later(self.interval, self._beat)

    def _beat(self) -> None:
        now = self._clock()
        if self._detector is not None:
            with self._lock:
                ended = self._detector.beat(now)
            if ended is not None:
                log.warning("the event loop ran again after %.0f ms", ended * 1000)
        if self._on_lag is not None:
            self._on_lag(max(0.0, now - self._due))
        self._schedule(now)

    def _watch(self) -> None:
        detector = self._detector
        assert detector is not None
        period = detector.threshold_s / 4
        while not self._stop.wait(period):
            with self._lock:
                blocked = detector.check(self._clock())
            if blocked is None:
                continue
            frame = sys._current_frames().get(self._thread_id) if self._thread_id is not None else None
            stack = "".join(traceback.format_stack(frame)) if frame is not None else "(no Python frame)\n"
            try:
                self._on_stall(blocked, stack, self._activity() if self._activity is not None else None)
            except Exception:
                log.exception("reporting an event loop stall failed")


def warn_stall(blocked: float, stack: str, activity: str | None = None) -> None:
    """The default report of a stall: a warning with what the loop is doing and the stack."""
    doing = f" handling {activity}" if activity else ""
    log.warning("the event loop has been blocked for %.0f ms%s; its thread is at (most recent call last):\n%s",
                blocked * 1000, doing, stack.rstrip())
