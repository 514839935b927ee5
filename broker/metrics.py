"""Prometheus metrics for one broker, served on ``--metrics-port`` at ``/metrics``.

Counters and histograms are updated on the request path; per-partition and
per-group gauges (log end offset, size, committed offset, lag, groups by
state) are computed at scrape time by a collector, so the hot path does not
pay for them.  Every label whose values a client chooses (topics, groups) is
capped, so a hostile client cannot explode the series count.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.exposition import start_http_server

from broker.internal_topics import is_internal_topic

if TYPE_CHECKING:
    from broker.security.connection import AuthEvents

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

    def forget(self, value: str) -> bool:
        """Free ``value``'s slot (its topic was deleted); True when it held one."""
        with self._lock:
            if value in self.seen:
                self.seen.discard(value)
                return True
        return False


@dataclass(slots=True)
class BrokerState:
    """What /metrics reports at scrape time, snapshotted on the broker's event loop."""

    #: (topic, partition, log end, bytes, log start, high watermark, last stable offset) of every hosted log
    partitions: list[tuple[str, int, int, int, int, int, int]] = field(default_factory=list)
    #: metric families of the group coordinator
    groups: list[Any] = field(default_factory=list)
    #: metric families of the transaction coordinator
    transactions: list[Any] = field(default_factory=list)
    #: cluster gauges, name -> (help, value)
    cluster: dict[str, tuple[str, float]] = field(default_factory=dict)
    #: follower lag (messages behind the leader's high watermark) per partition
    fetcher_lag: dict[tuple[str, int], int] = field(default_factory=dict)


class BrokerMetrics:
    """The broker's metrics; ``state`` (set by the composition root) provides the scrape-time state."""

    def __init__(self) -> None:
        #: returns the scrape-time state (on the loop), or None before the broker has started
        self.state: Callable[[], BrokerState | None] = lambda: None
        #: the topics that exist (to drop series of deleted ones)
        self.topic_names: Callable[[], set[str]] = set
        #: bytes of responses queued on connections (the server's count)
        self.queued_bytes: Callable[[], int] = lambda: 0
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.topic_label = _BoundedLabels(MAX_LABELLED_TOPICS)
        self.requests = Counter("kbroker_requests", "Requests handled, by API and version",
                                ["api", "version"], registry=r)
        self.request_latency = Histogram("kbroker_request_latency_seconds",
                                         "Time from request decoded to response ready, by API and version",
                                         ["api", "version"], buckets=_LATENCY_BUCKETS, registry=r)
        self.errors = Counter("kbroker_errors", "Error codes returned, by API and error name",
                              ["api", "error"], registry=r)
        self.bytes_in_total = Counter("kbroker_bytes_in", "Record bytes appended by producers", ["topic"],
                                      registry=r)
        self.bytes_out_total = Counter("kbroker_bytes_out", "Record bytes sent to fetchers, counted once "
                                       "their response has been written", ["topic"], registry=r)
        self.messages_in_total = Counter("kbroker_messages_in", "Records appended by producers", ["topic"],
                                         registry=r)
        self.connections = Gauge("kbroker_active_connections", "Open client connections", registry=r)
        self.waiting_fetches = Gauge("kbroker_waiting_fetches", "Long-poll fetches parked in purgatory",
                                     registry=r)
        self.queued_response_bytes = Gauge("kbroker_queued_response_bytes",
                                           "Bytes of answered responses (record data included) not yet "
                                           "handed to the client sockets", registry=r)
        self.queued_response_bytes.set_function(self._queued_response_bytes)
        self.rebalances = Counter("kbroker_group_rebalances", "Completed rebalances (new generations)",
                                  registry=r)
        self.rebalance_seconds = Histogram("kbroker_group_rebalance_duration_seconds",
                                           "Time from PreparingRebalance to the new generation",
                                           buckets=(0.01, 0.05, 0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 300), registry=r)
        self.isr_shrinks = Counter("kbroker_isr_shrinks", "ISR shrinks written by this broker as leader",
                                   registry=r)
        self.isr_expands = Counter("kbroker_isr_expands", "ISR expansions written by this broker as leader",
                                   registry=r)
        self.offsets_load_errors = Counter("kbroker_offsets_load_errors",
                                           "__consumer_offsets records skipped while loading because they do "
                                           "not decode", registry=r)
        self.txn_state_load_errors = Counter("kbroker_transaction_state_load_errors",
                                             "__transaction_state records skipped while loading because they do "
                                             "not decode", registry=r)
        self.txn_commits = Counter("kbroker_transaction_commits", "Transactions committed (their markers all "
                                   "written) by the transactions this broker coordinates", registry=r)
        self.txn_aborts = Counter("kbroker_transaction_aborts", "Transactions aborted (by their producer or their "
                                  "timeout) by the transactions this broker coordinates", registry=r)
        self.authentications = Counter("kbroker_authentications", "SASL authentications, by listener, mechanism "
                                       "and result (success, failure)", ["listener", "mechanism", "result"],
                                       registry=r)
        self.authorization_denials = Counter("kbroker_authorization_denials", "Requests or resources refused "
                                             "by the authorizer, by API and resource type",
                                             ["api", "resource_type"], registry=r)
        r.register(_StateCollector(self))
        self._http: Any = None
        self._error_names: dict[int, str] = {}
        #: series children by (api, version) and by topic, so the request path does one dict lookup
        self._request_children: dict[tuple[str, int], tuple[Any, Any]] = {}
        self._by_topic: dict[str, tuple[Any, Any, Any]] = {}
        #: the event loop the broker runs on; scrape-time collection snapshots state there
        self.loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: int | None = None
        #: the port /metrics is served on (the real one when ``metrics_port`` was 0)
        self.bound_port: int | None = None

    def _queued_response_bytes(self) -> float:
        return float(self.queued_bytes())

    # -- request path ------------------------------------------------------------------

    def observe_request(self, api: str, version: int, seconds: float, errors: list[int] | None = None) -> None:
        """One request of ``api``/``version`` answered after ``seconds``, with the non-zero error
        codes its response carries (``protocol.primitives.Writer.errors``)."""
        children = self._request_children.get((api, version))
        if children is None:
            v = str(version)
            children = self._request_children[(api, version)] = (self.requests.labels(api, v),
                                                                  self.request_latency.labels(api, v))
        children[0].inc()
        children[1].observe(seconds)
        if errors:
            if len(errors) == 1:
                self.request_error(api, errors[0])
            else:
                counts: dict[int, int] = {}
                for code in errors:
                    counts[code] = counts.get(code, 0) + 1
                for code, n in counts.items():
                    self.request_error(api, code, n)

    def request_error(self, api: str, code: int, count: int = 1) -> None:
        if api.startswith("Unknown"):
            api = "Unknown"  # the key is client-chosen: one label value for all unknown APIs
        name = self._error_names.get(code)
        if name is None:
            from protocol.error_codes import ErrorCode

            try:
                name = ErrorCode(code).name
            except ValueError:
                name = str(code)
            self._error_names[code] = name
        self.errors.labels(api, name).inc(count)

    def _topic_children(self, topic: str) -> tuple[Any, Any, Any]:
        """The (bytes in, messages in, bytes out) series of ``topic`` (looked up once per topic)."""
        children = self._by_topic.get(topic)
        if children is None:
            label = self.topic_label(topic)
            children = (self.bytes_in_total.labels(label), self.messages_in_total.labels(label),
                        self.bytes_out_total.labels(label))
            if label != OTHER:
                self._by_topic[topic] = children
        return children

    def auth_events(self) -> AuthEvents:
        """The security edge's outcomes as counters (labels: configured listeners, the three mechanisms,
        API names and resource types: bounded whatever clients send)."""
        from broker.security.connection import AuthEvents

        return AuthEvents(
            succeeded=lambda listener, mechanism: self.authentications.labels(listener, mechanism, "success").inc(),
            failed=lambda listener, mechanism: self.authentications.labels(listener, mechanism, "failure").inc(),
            denied=lambda api, resource_type: self.authorization_denials.labels(api, resource_type).inc())

    def bytes_in(self, topic: str, nbytes: int, records: int) -> None:
        children = self._topic_children(topic)
        children[0].inc(nbytes)
        children[1].inc(records)

    def bytes_out(self, topic: str, nbytes: int) -> None:
        self._topic_children(topic)[2].inc(nbytes)

    def topics_changed(self) -> None:
        """Drop the per-topic series of deleted topics and free their label slots."""
        existing = self.topic_names()
        for topic in [t for t in self.topic_label.seen if t not in existing]:
            self.topic_label.forget(topic)
            self._by_topic.pop(topic, None)
            for counter in (self.bytes_in_total, self.bytes_out_total, self.messages_in_total):
                try:
                    counter.remove(topic)
                except KeyError:
                    pass

    # -- endpoint ---------------------------------------------------------------------

    def serve(self, host: str, port: int) -> None:
        try:
            self.loop = asyncio.get_running_loop()
            self._loop_thread = threading.get_ident()
        except RuntimeError:
            self.loop = None
        self._http = start_http_server(port, addr=host, registry=self.registry)
        server = self._http[0] if isinstance(self._http, tuple) else None
        self.bound_port = server.server_address[1] if server is not None else port
        log.info("metrics on http://%s:%d/metrics", host, self.bound_port)

    def on_loop(self, fn: Any, timeout: float = 10.0) -> Any:
        """Run ``fn()`` on the broker's event loop (state is only consistent there) and return its result."""
        loop = self.loop
        if loop is None or loop.is_closed() or not loop.is_running() or threading.get_ident() == self._loop_thread:
            return fn()
        done: concurrent.futures.Future[Any] = concurrent.futures.Future()

        def invoke() -> None:
            try:
                done.set_result(fn())
            except BaseException as exc:
                done.set_exception(exc)

        try:
            loop.call_soon_threadsafe(invoke)
        except RuntimeError:  # loop closed meanwhile
            return fn()
        return done.result(timeout)

    def close(self) -> None:
        if self._http is not None:
            server = self._http[0] if isinstance(self._http, tuple) else None
            if server is not None:
                server.shutdown()
                server.server_close()
            self._http = None
        self.bound_port = None


class _StateCollector:
    """Scrape-time gauges: partitions, groups, committed offsets and lag.

    The state is snapshotted on the broker's event loop (the HTTP server runs in its own
    thread, and the logs and groups are only consistent on the loop); the metric families
    are then built in the scraping thread.
    """

    def __init__(self, metrics: BrokerMetrics) -> None:
        self.metrics = metrics

    def describe(self) -> list[Any]:
        return []

    def collect(self) -> Iterator[GaugeMetricFamily]:
        try:
            state = self.metrics.on_loop(self.metrics.state)
        except Exception:
            log.exception("collecting broker state for /metrics failed")
            return
        if state is None:
            return
        parts, groups = state.partitions, state.groups
        for name, (help_text, value) in sorted(state.cluster.items()):
            family = GaugeMetricFamily(name, help_text)
            family.add_metric([], value)
            yield family
        leo = GaugeMetricFamily("kbroker_log_end_offset", "Log end offset", labels=["topic", "partition"])
        size = GaugeMetricFamily("kbroker_log_size_bytes", "Bytes on disk", labels=["topic", "partition"])
        start = GaugeMetricFamily("kbroker_log_start_offset", "Log start offset", labels=["topic", "partition"])
        lso_lag = GaugeMetricFamily("kbroker_partition_lso_lag", "High watermark minus last stable offset: "
                                    "records read_committed consumers wait for (open transactions), on leaders",
                                    labels=["topic", "partition"])
        dir_size = GaugeMetricFamily("kbroker_log_dir_size_bytes", "Bytes on disk of every partition, internal "
                                     "topics and topics beyond the label cap included")
        partitions = GaugeMetricFamily("kbroker_partitions", "Partitions hosted, internal topics included")
        # one shared set of at most MAX_LABELLED_TOPICS topic label values across all metrics
        labelled: set[str] = set()
        all_bytes = 0
        for topic, partition, end, nbytes, first, hw, lso in sorted(parts):
            all_bytes += nbytes
            if is_internal_topic(topic):
                continue
            if topic not in labelled:
                if self.metrics.topic_label(topic) == OTHER:
                    continue
                labelled.add(topic)
            labels = [topic, str(partition)]
            leo.add_metric(labels, end)
            size.add_metric(labels, nbytes)
            start.add_metric(labels, first)
            if lso >= 0:
                lso_lag.add_metric(labels, max(0, hw - lso))
        dir_size.add_metric([], all_bytes)
        partitions.add_metric([], len(parts))
        lag = GaugeMetricFamily("kbroker_replica_fetcher_lag", "Messages a follower is behind its leader's "
                                "high watermark", labels=["topic", "partition"])
        for (topic, partition), behind in sorted(state.fetcher_lag.items()):
            if topic in labelled or (not is_internal_topic(topic) and self.metrics.topic_label(topic) != OTHER):
                lag.add_metric([topic, str(partition)], behind)
        yield leo
        yield size
        yield start
        yield lso_lag
        yield dir_size
        yield partitions
        yield lag
        for family in groups:
            if "topic" in getattr(family, "_labelnames", ()) or family.name in _GROUP_TOPIC_FAMILIES:
                family.samples = [s for s in family.samples if s.labels.get("topic") in labelled]
            yield family
        yield from state.transactions


#: group families labelled by topic: their samples are limited to the labelled topics
_GROUP_TOPIC_FAMILIES = {"kbroker_group_committed_offset", "kbroker_group_lag"}
