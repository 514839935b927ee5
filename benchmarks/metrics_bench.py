"""The request path's metric updates: ``BrokerMetrics`` (plain numbers rendered at scrape time) vs a
``prometheus_client`` Counter + Histogram per (API, version) and Counters per topic (what the broker
used before: a lock per increment), same run.  Prints µs per request and the ratio.

    .venv/bin/python benchmarks/metrics_bench.py [requests]

Per simulated request: one ``observe_request`` and, for every other request (a Produce), one
``bytes_in``; the latencies cycle through the histogram's range so every bucket is hit.
"""

from __future__ import annotations

import sys
import time

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest

from broker.observability.metrics import _LATENCY_BUCKETS, BrokerMetrics

LATENCIES = [0.00005 * 1.7 ** i for i in range(24)]


class PrometheusClientMetrics:
    """Baseline: the same series as ``prometheus_client`` metric children, looked up once."""

    def __init__(self) -> None:
        r = self.registry = CollectorRegistry()
        self.requests = Counter("kbroker_requests", "x", ["api", "version"], registry=r)
        self.latency = Histogram("kbroker_request_latency_seconds", "x", ["api", "version"],
                                 buckets=_LATENCY_BUCKETS, registry=r)
        self.bytes_in_total = Counter("kbroker_bytes_in", "x", ["topic"], registry=r)
        self.messages_in_total = Counter("kbroker_messages_in", "x", ["topic"], registry=r)
        self._children: dict[tuple[str, int], tuple[object, object]] = {}
        self._topics: dict[str, tuple[object, object]] = {}

    def observe_request(self, api: str, version: int, seconds: float) -> None:
        children = self._children.get((api, version))
        if children is None:
            v = str(version)
            children = self._children[(api, version)] = (self.requests.labels(api, v), self.latency.labels(api, v))
        children[0].inc()  # type: ignore[attr-defined]
        children[1].observe(seconds)  # type: ignore[attr-defined]

    def bytes_in(self, topic: str, nbytes: int, records: int) -> None:
        children = self._topics.get(topic)
        if children is None:
            children = self._topics[topic] = (self.bytes_in_total.labels(topic), self.messages_in_total.labels(topic))
        children[0].inc(nbytes)  # type: ignore[attr-defined]
        children[1].inc(records)  # type: ignore[attr-defined]


def run(metrics: BrokerMetrics | PrometheusClientMetrics, n: int) -> float:
    observe, bytes_in, lat = metrics.observe_request, metrics.bytes_in, LATENCIES
    k = len(lat)
    start = time.perf_counter()
    for i in range(n):
        if i & 1:
            observe("Produce", 9, lat[i % k])
            bytes_in("orders", 1000, 10)
        else:
            observe("Heartbeat", 4, lat[i % k])
    return (time.perf_counter() - start) / n


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    best_base = best_ours = float("inf")
    for _ in range(3):
        best_base = min(best_base, run(PrometheusClientMetrics(), n))
        ours = BrokerMetrics()
        best_ours = min(best_ours, run(ours, n))
    generate_latest(ours.registry)  # renders
    print(f"prometheus_client Counter+Histogram: {best_base * 1e6:6.3f} µs per request")
    print(f"BrokerMetrics (plain numbers):        {best_ours * 1e6:6.3f} µs per request")
    print(f"ratio: {best_base / best_ours:.2f}x faster; saves {(best_base - best_ours) * 1e6:.2f} µs per request")


if __name__ == "__main__":
    main()
