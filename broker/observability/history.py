"""MetricsHistory: the last hour of the broker's figures, kept in memory for the web console's charts.

Every ``interval`` the composition root records a sample: cumulative counters (record bytes in and
out, records in, requests by kind) and gauges (each group's total lag).  Counters become rates
(per second, between neighbouring samples) when read; the per-topic records-in counters are kept
only as their latest rate (the topics list shows it).  Each series is a fixed ring of floats, so
the memory is bounded whatever runs: ``window / interval`` samples of at most ``max_series`` series.
Sans-IO: the caller passes the time.
"""

from __future__ import annotations

import itertools
import math
from array import array
from collections.abc import Mapping

__all__ = ["MetricsHistory"]


class MetricsHistory:
    def __init__(self, interval_s: float, window_s: float = 3600.0, *, max_series: int = 2000) -> None:
        self.interval_s = interval_s
        self.capacity = max(2, int(window_s // interval_s) + 1)
        self.max_series = max_series
        self._times = array("d", [math.nan] * self.capacity)
        self._series: dict[str, array[float]] = {}
        self._head = -1  # index of the newest sample
        self._count = 0
        self._topics: dict[str, float] = {}
        self._topics_at = math.nan
        #: records appended per second to each topic, between the last two samples
        self.topic_rates: dict[str, float] = {}

    def __len__(self) -> int:
        return self._count

    def record(self, now: float, values: Mapping[str, float], topic_records: Mapping[str, float] | None = None) -> None:
        """One sample: ``values`` (counters and gauges by name; a series missing here has no value now) and
        the per-topic cumulative records-in counters."""
        self._head = (self._head + 1) % self.capacity
        self._count = min(self._count + 1, self.capacity)
        head = self._head
        self._times[head] = now
        for series in self._series.values():
            series[head] = math.nan
        for name, value in values.items():
            series = self._series.get(name)
            if series is None:
                if len(self._series) >= self.max_series:
                    continue
                series = self._series[name] = array("d", [math.nan] * self.capacity)
            series[head] = float(value)
        if topic_records is not None:
            elapsed = now - self._topics_at
            if elapsed > 0:
                self.topic_rates = {t: max(0.0, (n - self._topics.get(t, n)) / elapsed)
                                    for t, n in topic_records.items()}
            self._topics, self._topics_at = dict(topic_records), now
        # series that have had no value for a whole window are dropped (a deleted group's lag)
        for name in [n for n, s in self._series.items() if all(math.isnan(v) for v in s)]:
            del self._series[name]

    def _ordered(self, name: str) -> list[tuple[float, float]]:
        series = self._series.get(name)
        if series is None:
            return []
        out = []
        for i in range(self._count):
            index = (self._head - self._count + 1 + i) % self.capacity
            out.append((self._times[index], series[index]))
        return out

    def gauge(self, name: str) -> list[tuple[float, float]]:
        """``(time, value)`` of a gauge, oldest first (samples without a value left out)."""
        return [(t, v) for t, v in self._ordered(name) if not math.isnan(v)]

    def rate(self, name: str) -> list[tuple[float, float]]:
        """``(time, per second)`` of a counter between neighbouring samples, oldest first (a counter that
        went down, a restart of its source, gives no point)."""
        points = self._ordered(name)
        out = []
        for (t0, v0), (t1, v1) in itertools.pairwise(points):
            if t1 > t0 and not math.isnan(v0) and not math.isnan(v1) and v1 >= v0:
                out.append((t1, (v1 - v0) / (t1 - t0)))
        return out

    def names(self) -> list[str]:
        return list(self._series)
