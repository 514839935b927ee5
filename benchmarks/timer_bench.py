"""Timing wheel vs a ``heapq`` baseline: add / cancel / advance throughput (printed figures only).

Workload modelled on broker timers: many timeouts (30 s session, 0.5 s fetch wait) of which most
are cancelled before they fire, with time moving in 1 ms steps.

    .venv/bin/python benchmarks/timer_bench.py [n]
"""

from __future__ import annotations

import heapq
import random
import sys
import time

from protocol.timing_wheel import TimingWheel


class HeapTimer:
    """Baseline: one heap entry per timer, lazy cancellation (what ``loop.call_at`` does)."""

    def __init__(self) -> None:
        self.heap: list[list] = []
        self.seq = 0

    def add(self, deadline: int, item: object) -> list:
        self.seq += 1
        entry = [deadline, self.seq, item, False]
        heapq.heappush(self.heap, entry)
        return entry

    @staticmethod
    def cancel(entry: list) -> None:
        entry[3] = True

    def advance(self, now: int) -> list:
        out = []
        heap = self.heap
        while heap and heap[0][0] <= now:
            entry = heapq.heappop(heap)
            if not entry[3]:
                out.append(entry[2])
        return out


def run(n: int) -> None:
    rng = random.Random(42)
    deadlines = [rng.choice((30_000, 500, 10_000)) + rng.randrange(0, 1_000) for _ in range(n)]
    cancel_mask = [rng.random() < 0.9 for _ in range(n)]
    horizon = max(deadlines) + 1
    results = {}
    for name, factory, cancel in (
        ("wheel", TimingWheel, lambda t: t.cancel()),
        ("heapq", HeapTimer, HeapTimer.cancel),
    ):
        timer = factory()
        t0 = time.perf_counter()
        handles = [timer.add(d, i) for i, d in enumerate(deadlines)]
        t1 = time.perf_counter()
        for h, c in zip(handles, cancel_mask, strict=True):
            if c:
                cancel(h)
        t2 = time.perf_counter()
        fired = 0
        for now in range(0, horizon, 1):
            fired += len(timer.advance(now))
        t3 = time.perf_counter()
        results[name] = fired
        print(
            f"{name:6} add {n / (t1 - t0):>12,.0f}/s  cancel {sum(cancel_mask) / (t2 - t1):>12,.0f}/s  "
            f"advance {horizon} ticks in {t3 - t2:6.3f}s ({horizon / (t3 - t2):>10,.0f} ticks/s)  fired {fired}"
        )
    assert results["wheel"] == results["heapq"]


if __name__ == "__main__":
    run(int(sys.argv[1]) if len(sys.argv) > 1 else 200_000)
