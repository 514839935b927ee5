"""Replication throttles: a byte rate over a sliding window, and which partitions are throttled.

Kafka's replication quotas (KIP-73), sans-IO with an injected clock.  A broker throttles the
partitions listed for it in the topic configs ``leader.replication.throttled.replicas`` (as the
leader answering followers) and ``follower.replication.throttled.replicas`` (as a follower
fetching) — ``*`` for every partition, or ``partition:broker`` entries of which each broker keeps
those naming itself — at the dynamic broker rates ``leader.replication.throttled.rate`` /
``follower.replication.throttled.rate`` (bytes/s; unlimited by default).  Every byte of a throttled
partition counts against its quota; while the quota is exceeded, replicas that are not in sync get
no more data of throttled partitions (in-sync ones always do, so the ISR never thrashes).
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable

__all__ = ["UNLIMITED", "RateQuota", "throttled"]

#: Kafka's default rate: no throttle
UNLIMITED = (1 << 63) - 1


def throttled(value: str | None, partition: int, broker: int) -> bool:
    """Whether a throttled-replicas topic config (``*`` or ``p:b,...``) names ``partition`` on ``broker``."""
    if not value:
        return False
    if value.strip() == "*":
        return True
    wanted = f"{partition}:{broker}"
    return any(item.strip() == wanted for item in value.split(","))


class RateQuota:
    """Bytes per second over ``window_num`` windows of ``window_s`` seconds (Kafka's
    ``replication.quota.window.num`` times ``replication.quota.window.size.seconds``).

    ``bound()`` gives the current limit (read on each check: the rate is a dynamic config).  The
    rate is the bytes recorded in the retained windows over the time they span, but at least one
    window, so a fresh quota lets through at most one window's worth at once."""

    def __init__(self, bound: Callable[[], int], *, window_num: int = 11, window_s: float = 1.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.bound = bound
        self.window_num = max(1, window_num)
        self.window_s = max(0.001, window_s)
        self.clock = clock
        self._samples: deque[list[float]] = deque()  # [window start, bytes]
        #: every byte recorded (the throttled-bytes metric)
        self.total = 0

    def record(self, nbytes: int) -> None:
        now = self.clock()
        self._expire(now)
        if not self._samples or now - self._samples[-1][0] >= self.window_s:
            self._samples.append([now, 0.0])
        self._samples[-1][1] += nbytes
        self.total += nbytes

    def rate(self) -> float:
        now = self.clock()
        self._expire(now)
        if not self._samples:
            return 0.0
        span = max(now - self._samples[0][0], self.window_s)
        return sum(s[1] for s in self._samples) / span

    def allowance(self) -> int:
        """The most bytes one fetch of a throttled partition may carry: one window's worth at the
        current rate (so however large the fetch sizes, a burst is bounded by the rate)."""
        limit = self.bound()
        return limit if limit >= UNLIMITED else max(1, int(limit * self.window_s))

    def exceeded(self) -> bool:
        limit = self.bound()
        return limit < UNLIMITED and self.rate() > limit

    def _expire(self, now: float) -> None:
        horizon = now - self.window_num * self.window_s
        while self._samples and self._samples[0][0] < horizon:
            self._samples.popleft()
