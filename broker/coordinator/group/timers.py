"""Keyed, lazily-rescheduled timers on top of :class:`protocol.timing_wheel.TimingWheel`.

The coordinator owns one :class:`KeyedTimers`.  Keys are tuples such as
``("heartbeat", group_id, member_id)``, ``("join", group_id)``, ``("sync", group_id)``,
``("pending", group_id, member_id)``, ``("initial-delay", group_id)`` and ``("retention",)``;
there is at most one live deadline per key.

Rescheduling to a *later* deadline (every heartbeat) costs one dict store: the wheel entry is
left in place and, when it fires early, it is silently re-armed at the stored deadline.  Only
moving a deadline *earlier* touches the wheel.  Each wheel entry carries a sequence number so a
stale entry (cancelled or superseded) never fires.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any

from protocol.timing_wheel import TimingWheel

__all__ = ["KeyedTimers"]


class KeyedTimers:
    """At most one deadline per key; :meth:`expire` returns the keys whose deadline passed."""

    __slots__ = ("_armed", "_deadline", "_seq", "_wheel")

    def __init__(self, start_ms: int = 0,
                 wheel_factory: Callable[[int], Any] | None = None) -> None:
        self._wheel = (wheel_factory or (lambda s: TimingWheel(tick_ms=1, wheel_size=20, start_ms=s)))(start_ms)
        self._deadline: dict[Hashable, int] = {}
        # key -> (sequence, wheel deadline, task) of the one wheel entry that may fire for it
        self._armed: dict[Hashable, tuple[int, int, Any]] = {}
        self._seq = 0

    def __len__(self) -> int:
        return len(self._deadline)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._deadline

    def deadline(self, key: Hashable) -> int | None:
        """The current deadline of ``key``, or None when not scheduled."""
        return self._deadline.get(key)

    def schedule(self, key: Hashable, deadline_ms: int) -> None:
        """Set ``key`` to fire at ``deadline_ms`` (replacing any earlier or later deadline)."""
        self._deadline[key] = deadline_ms
        armed = self._armed.get(key)
        if armed is not None and armed[1] <= deadline_ms:
            return  # the wheel entry fires first and re-arms itself lazily
        if armed is not None:
            armed[2].cancel()
        self._arm(key, deadline_ms)

    def postpone(self, key: Hashable, deadline_ms: int) -> bool:
        """Move ``key``'s deadline to ``deadline_ms`` if its wheel entry fires no later (then nothing is
        re-armed and :meth:`next_deadline` is unchanged); False, changing nothing, otherwise."""
        armed = self._armed.get(key)
        if armed is None or armed[1] > deadline_ms:
            return False
        self._deadline[key] = deadline_ms
        return True

    def cancel(self, key: Hashable) -> None:
        if self._deadline.pop(key, None) is not None:
            armed = self._armed.pop(key, None)
            if armed is not None:
                armed[2].cancel()

    def expire(self, now_ms: int) -> list[Hashable]:
        """Advance to ``now_ms``; return due keys in deadline order (each fires once)."""
        out: list[Hashable] = []
        for key, seq in self._wheel.advance(now_ms):
            armed = self._armed.get(key)
            if armed is None or armed[0] != seq:
                continue
            del self._armed[key]
            deadline = self._deadline[key]
            if deadline > now_ms:
                self._arm(key, deadline)
            else:
                del self._deadline[key]
                out.append(key)
        return out

    def next_deadline(self) -> int | None:
        """A lower bound of the next time :meth:`expire` may return something (None when idle)."""
        return self._wheel.next_deadline()

    def _arm(self, key: Hashable, deadline_ms: int) -> None:
        self._seq += 1
        task = self._wheel.add(deadline_ms, (key, self._seq))
        self._armed[key] = (self._seq, deadline_ms, task)
