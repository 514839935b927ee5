"""Prometheus metrics for one broker, served on ``--metrics-port`` at ``/metrics``.

The request path's series (requests and their latency by API and version,
record bytes in and out by topic) are plain numbers in :class:`HotCounters`,
updated on the event loop without the lock a ``prometheus_client`` metric
takes per increment, and turned into metric families at scrape time; the
rarer counters are ``prometheus_client`` metrics.  Per-partition and
per-group gauges (log end offset, size, committed offset, lag, groups by
state) are computed at scrape time by a collector, so the hot path does not
pay for them.  Every label whose values a client chooses (topics, groups) is
capped, so a hostile client cannot explode the series count.
"""

from __future__ import annotations

import asyncio
import bisect
import concurrent.futures
import logging
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, Info
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.exposition import start_http_server
from prometheus_client.utils import floatToGoString

from broker.cluster.internal_topics import is_internal_topic
from protocol import compiled
from protocol.records import COMPILED

if TYPE_CHECKING:
    from broker.security.connection import AuthEvents

log = logging.getLogger("kbroker.metrics")

MAX_LABELLED_TOPICS = 1000
MAX_LABELLED_GROUPS = 1000
OTHER = "__other__"
#: the record codec this process runs: "compiled" (protocol/_crecords, built at install) or "python"
RECORD_CODEC = "compiled" if COMPILED else "python"
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


class HotCounters:
    """The request path's counters as plain numbers (one owner: the event loop's thread).

    ``requests[(api, version)]`` is ``[latency sum, per-bucket counts...]`` (the last bucket is
    +Inf; their total is the request count); ``topics[label]`` is ``[bytes in, records in, bytes out]``.  The scrape
    thread copies them (``list()`` of a dict or a list is one step under the GIL): a scrape
    racing a request sees it either counted or not yet, never a broken row.
    """

    __slots__ = ("requests", "topics")

    def __init__(self) -> None:
        self.requests: dict[tuple[str, int], list[float]] = {}
        self.topics: dict[str, list[int]] = {}

    def request(self, api: str, version: int, seconds: float) -> None:
        row = self.requests.get((api, version))
        if row is None:
            row = self.requests[(api, version)] = [0.0] + [0] * (len(_LATENCY_BUCKETS) + 1)
        row[0] += seconds
        row[1 + bisect.bisect_left(_LATENCY_BUCKETS, seconds)] += 1

    def families(self) -> Iterator[Any]:
        requests = CounterMetricFamily("kbroker_requests", "Requests handled, by API and version",
                                       labels=["api", "version"])
        latency = HistogramMetricFamily("kbroker_request_latency_seconds",
                                        "Time from request decoded to response ready, by API and version",
                                        labels=["api", "version"])
        bounds = [floatToGoString(b) for b in _LATENCY_BUCKETS] + ["+Inf"]
        for (api, version), row in sorted(list(self.requests.items())):
            row = list(row)
            labels = [api, str(version)]
            buckets, total = [], 0
            for bound, n in zip(bounds, row[1:], strict=True):
                total += int(n)
                buckets.append((bound, total))
            requests.add_metric(labels, total)
            latency.add_metric(labels, buckets, row[0])
        bytes_in = CounterMetricFamily("kbroker_bytes_in", "Record bytes appended by producers", labels=["topic"])
        messages_in = CounterMetricFamily("kbroker_messages_in", "Records appended by producers", labels=["topic"])
        bytes_out = CounterMetricFamily("kbroker_bytes_out", "Record bytes sent to fetchers, counted once their "
                                        "response has been written", labels=["topic"])
        for topic, counts in sorted(list(self.topics.items())):
            nin, nrec, nout = list(counts)
            bytes_in.add_metric([topic], nin)
            messages_in.add_metric([topic], nrec)
            bytes_out.add_metric([topic], nout)
        yield from (requests, latency, bytes_in, messages_in, bytes_out)


class _HotCollector:
    def __init__(self, counters: HotCounters) -> None:
        self.counters = counters

    def describe(self) -> list[Any]:
        return []

    def collect(self) -> Iterator[Any]:
        return self.counters.families()


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
        #: requests, their latency and per-topic record bytes: updated on the request path without locks
        self.hot = HotCounters()
        r.register(_HotCollector(self.hot))
        self.errors = Counter("kbroker_errors", "Error codes returned, by API and error name",
                              ["api", "error"], registry=r)
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
        self.record_codec = Info("kbroker_record_codec", "The record codec in use: compiled (built at install "
                                 "with Cython) or python (the pure-Python fallback)", registry=r)
        self.record_codec.info({"codec": RECORD_CODEC})
        self.compiled_modules = Gauge("kbroker_compiled_modules", "How many of the request path's modules "
                                      "(protocol/compiled.py) run compiled with Cython; the rest run as Python",
                                      registry=r)
        self.compiled_modules.set_function(lambda: len(compiled.in_use()))
        self.loop_lag = Histogram("kbroker_event_loop_lag_seconds", "How late the event loop's timers run (a beat "
                                  "every 100 ms or less; a blocked loop shows here)",
                                  buckets=(0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10), registry=r)
        self.loop_stalls = Counter("kbroker_event_loop_stalls", "Times the event loop ran no timer for "
                                   "event.loop.stall.warn.ms", registry=r)
        r.register(_StateCollector(self))
        self._http: Any = None
        self._error_names: dict[int, str] = {}
        #: each topic's counter row in ``hot.topics`` (topics past the label cap share ``__other__``'s)
        self._by_topic: dict[str, list[int]] = {}
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
        self.hot.request(api, version, seconds)
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

    def _topic_row(self, topic: str) -> list[int]:
        """``topic``'s [bytes in, records in, bytes out] row (looked up once per topic)."""
        row = self._by_topic.get(topic)
        if row is None:
            label = self.topic_label(topic)
            row = self.hot.topics.get(label)
            if row is None:
                row = self.hot.topics[label] = [0, 0, 0]
            if label != OTHER:
                self._by_topic[topic] = row
        return row

    def auth_events(self) -> AuthEvents:
        """The security edge's outcomes as counters (labels: configured listeners, the three mechanisms,
        API names and resource types: bounded whatever clients send)."""
        from broker.security.connection import AuthEvents

        return AuthEvents(
            succeeded=lambda listener, mechanism: self.authentications.labels(listener, mechanism, "success").inc(),
            failed=lambda listener, mechanism: self.authentications.labels(listener, mechanism, "failure").inc(),
            denied=lambda api, resource_type: self.authorization_denials.labels(api, resource_type).inc())

    def bytes_in(self, topic: str, nbytes: int, records: int) -> None:
        row = self._topic_row(topic)
        row[0] += nbytes
        row[1] += records

    def bytes_out(self, topic: str, nbytes: int) -> None:
        self._topic_row(topic)[2] += nbytes

    def topics_changed(self) -> None:
        """Drop the per-topic series of deleted topics and free their label slots."""
        existing = self.topic_names()
        for topic in [t for t in self.topic_label.seen if t not in existing]:
            self.topic_label.forget(topic)
            self._by_topic.pop(topic, None)
            self.hot.topics.pop(topic, None)

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
