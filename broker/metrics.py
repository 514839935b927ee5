"""Prometheus metrics for one broker, served on ``--metrics-port`` at ``/metrics``.

Counters and histograms are updated on the request path; per-partition and
per-group gauges (log end offset, size, committed offset, lag, groups by
state) are computed at scrape time by a collector, so the hot path does not
pay for them.  Every label whose values a client chooses (topics, groups) is
capped, so a hostile client cannot explode the series count.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.exposition import start_http_server

if TYPE_CHECKING:
    from broker.core import BrokerCore

log = logging.getLogger("kbroker.metrics")

MAX_LABELLED_TOPICS = 1000
MAX_LABELLED_GROUPS = 1000
OTHER = "__other__"
_LATENCY_BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0,
                    2.5, 5.0, 10.0, 30.0)


class _BoundedLabels:
    """Hands out a label value, or ``__other__`` once ``limit`` distinct values were seen."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.seen: set[str] = set()
        self._lock = threading.Lock()

    def __call__(self, value: str) -> str:
        if value in self.seen:
            return value
        with self._lock:
            if len(self.seen) >= self.limit:
                return OTHER
            self.seen.add(value)
        return value


class BrokerMetrics:
    def __init__(self, core: BrokerCore) -> None:
        self.core = core
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.topic_label = _BoundedLabels(MAX_LABELLED_TOPICS)
        self.requests = Counter("kbroker_requests", "Requests handled, by API and version",
                                ["api", "version"], registry=r)
        self.request_latency = Histogram("kbroker_request_latency_seconds",
                                         "Time from request decoded to response ready", ["api"],
                                         buckets=_LATENCY_BUCKETS, registry=r)
        self.errors = Counter("kbroker_errors", "Error codes returned, by API and error name",
                              ["api", "error"], registry=r)
        self.bytes_in_total = Counter("kbroker_bytes_in", "Record bytes appended by producers", ["topic"],
                                      registry=r)
        self.bytes_out_total = Counter("kbroker_bytes_out", "Record bytes served to fetchers", ["topic"],
                                       registry=r)
        self.messages_in_total = Counter("kbroker_messages_in", "Records appended by producers", ["topic"],
                                         registry=r)
        self.connections = Gauge("kbroker_active_connections", "Open client connections", registry=r)
        self.waiting_fetches = Gauge("kbroker_waiting_fetches", "Long-poll fetches parked in purgatory",
                                     registry=r)
        self.rebalances = Counter("kbroker_group_rebalances", "Completed rebalances (new generations)",
                                  registry=r)
        self.rebalance_seconds = Histogram("kbroker_group_rebalance_duration_seconds",
                                           "Time from PreparingRebalance to the new generation",
                                           buckets=(0.01, 0.05, 0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 300), registry=r)
        r.register(_StateCollector(core))
        self._http: Any = None
        self._error_names: dict[int, str] = {}

    # -- request path ------------------------------------------------------------------

    def observe_request(self, api: str, version: int, seconds: float, body: Any) -> None:
        self.requests.labels(api, str(version)).inc()
        self.request_latency.labels(api).observe(seconds)
        if body is not None:
            for code in _error_codes(body):
                self.request_error(api, code)

    def request_error(self, api: str, code: int) -> None:
        name = self._error_names.get(code)
        if name is None:
            from protocol.error_codes import ErrorCode

            try:
                name = ErrorCode(code).name
            except ValueError:
                name = str(code)
            self._error_names[code] = name
        self.errors.labels(api, name).inc()

    def bytes_in(self, topic: str, nbytes: int, records: int) -> None:
        label = self.topic_label(topic)
        self.bytes_in_total.labels(label).inc(nbytes)
        self.messages_in_total.labels(label).inc(records)

    def bytes_out(self, topic: str, nbytes: int) -> None:
        self.bytes_out_total.labels(self.topic_label(topic)).inc(nbytes)

    def produce_rejected(self, topic: str, code: int) -> None:
        return None

    def topics_changed(self) -> None:
        return None

    # -- endpoint ---------------------------------------------------------------------

    def serve(self, host: str, port: int) -> None:
        self._http = start_http_server(port, addr=host, registry=self.registry)
        log.info("metrics on http://%s:%d/metrics", host, port)

    def close(self) -> None:
        if self._http is not None:
            server = self._http[0] if isinstance(self._http, tuple) else None
            if server is not None:
                server.shutdown()
                server.server_close()
            self._http = None


def _error_codes(body: Any, budget: int = 2000) -> Iterator[int]:
    """Non-zero ``error_code`` values in a response body (bounded walk, records skipped)."""
    stack = [body]
    while stack and budget > 0:
        node = stack.pop()
        budget -= 1
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "error_code":
                    if value:
                        yield int(value)
                elif isinstance(value, list | dict) and key != "records":
                    stack.append(value)
        elif isinstance(node, list):
            stack.extend(node)


class _StateCollector:
    """Scrape-time gauges: partitions, groups, committed offsets and lag."""

    def __init__(self, core: BrokerCore) -> None:
        self.core = core

    def describe(self) -> list[Any]:
        return []

    def collect(self) -> Iterator[GaugeMetricFamily]:
        core = self.core
        if not getattr(core, "started", False):
            return
        leo = GaugeMetricFamily("kbroker_log_end_offset", "Log end offset", labels=["topic", "partition"])
        size = GaugeMetricFamily("kbroker_log_size_bytes", "Bytes on disk", labels=["topic", "partition"])
        start = GaugeMetricFamily("kbroker_log_start_offset", "Log start offset", labels=["topic", "partition"])
        end_offsets: dict[tuple[str, int], int] = {}
        count = 0
        for plog in core.logs.logs():
            topic, partition = plog.topic, plog.partition
            end_offsets[(topic, partition)] = plog.high_watermark
            if topic.startswith("__"):
                continue
            count += 1
            if count > MAX_LABELLED_TOPICS * 10:
                continue
            labels = [topic, str(partition)]
            leo.add_metric(labels, plog.log_end_offset)
            size.add_metric(labels, plog.size_bytes)
            start.add_metric(labels, plog.log_start_offset)
        yield leo
        yield size
        yield start
        yield from core.group_service.collect_metrics(end_offsets, MAX_LABELLED_GROUPS)
