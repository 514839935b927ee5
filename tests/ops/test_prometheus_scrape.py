"""A real Prometheus server scrapes a running broker; the values are read back through its HTTP API."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from ops_helpers import free_port, wait_for
from peers import peer_missing

from broker import BrokerThread
from client import TopicPartition
from client.sync import SyncAdmin, SyncConsumer, SyncProducer

pytestmark = pytest.mark.slow

PROMETHEUS = shutil.which("prometheus") or next(
    (p for p in ("/usr/bin/prometheus", "/usr/local/bin/prometheus") if os.access(p, os.X_OK)), None)


class PrometheusServer:
    def __init__(self, workdir: Path, target: str) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.config = workdir / "prometheus.yml"
        self.config.write_text(
            "global:\n"
            "  scrape_interval: 1s\n"
            "  evaluation_interval: 1s\n"
            "scrape_configs:\n"
            "  - job_name: kbroker\n"
            "    scrape_interval: 1s\n"
            "    scrape_timeout: 1s\n"
            "    static_configs:\n"
            f"      - targets: ['{target}']\n")
        self.storage = workdir / "tsdb"
        self.log = workdir / "prometheus.log"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        assert PROMETHEUS is not None
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen(
                [PROMETHEUS, f"--config.file={self.config}", f"--storage.tsdb.path={self.storage}",
                 f"--web.listen-address=127.0.0.1:{self.port}", "--log.level=warn"],
                stdout=log, stderr=subprocess.STDOUT)
        wait_for(self._ready, 120, 0.2, what=f"prometheus ready ({self.log})")

    def _ready(self) -> bool:
        assert self.proc is not None
        if self.proc.poll() is not None:
            raise AssertionError(f"prometheus exited with {self.proc.returncode}:\n{self.log.read_text()}")
        try:
            with urllib.request.urlopen(self.url + "/-/ready", timeout=2) as resp:
                return resp.status == 200
        except OSError:
            return False

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)

    def query(self, promql: str) -> list[dict]:
        url = f"{self.url}/api/v1/query?{urllib.parse.urlencode({'query': promql})}"
        with urllib.request.urlopen(url, timeout=5) as resp:
            body = json.load(resp)
        assert body["status"] == "success", body
        return body["data"]["result"]

    def scalar(self, promql: str) -> float | None:
        result = self.query(promql)
        if not result:
            return None
        assert len(result) == 1, result
        return float(result[0]["value"][1])

    def wait_value(self, promql: str, expected: float, timeout: float = 60) -> None:
        wait_for(lambda: self.scalar(promql) == expected, timeout, 0.25,
                 what=f"{promql} == {expected} in prometheus (last: {self.scalar(promql)})")


@pytest.fixture
def prometheus_and_broker(tmp_path: Path) -> Iterator[tuple[PrometheusServer, BrokerThread]]:
    if PROMETHEUS is None:
        peer_missing("the prometheus binary is not installed (apt-get install prometheus; tests/setup_tools.sh)")
    metrics_port = free_port()
    with BrokerThread(data_dir=str(tmp_path / "data"), metrics_port=metrics_port,
                      metrics_host="127.0.0.1") as broker:
        server = PrometheusServer(tmp_path, f"127.0.0.1:{metrics_port}")
        try:
            server.start()
            yield server, broker
        finally:
            server.stop()


def test_prometheus_scrapes_broker_metrics(prometheus_and_broker):
    prom, broker = prometheus_and_broker
    bs = broker.bootstrap_servers
    prom.wait_value('up{job="kbroker"}', 1)

    with SyncAdmin(bootstrap_servers=bs) as admin:
        admin.create_topics({"scraped": 2})
    with SyncProducer(bootstrap_servers=bs, linger_ms=0) as producer:
        for i in range(30):
            producer.send("scraped", value=b"payload-%d" % i, partition=i % 2)
    with SyncConsumer(bootstrap_servers=bs, group_id="scrapers", enable_auto_commit=False) as consumer:
        consumer.commit({TopicPartition("scraped", 0): 5, TopicPartition("scraped", 1): 15})

    prom.wait_value('kbroker_messages_in_total{topic="scraped"}', 30)
    prom.wait_value('sum(kbroker_log_end_offset{topic="scraped"})', 30)
    prom.wait_value('kbroker_group_lag{group="scrapers",topic="scraped",partition="0"}', 10)
    prom.wait_value('kbroker_group_lag{group="scrapers",topic="scraped",partition="1"}', 0)
    prom.wait_value('kbroker_group_committed_offset{group="scrapers",topic="scraped",partition="1"}', 15)
    # lag as Prometheus computes it from the two underlying series agrees with the broker's own
    prom.wait_value('sum(kbroker_log_end_offset{topic="scraped"}) - '
                    'sum(kbroker_group_committed_offset{group="scrapers",topic="scraped"})', 10)
    # (polled, not read once: a scrape that times out on a busy machine marks the series stale until the next)
    bytes_in = wait_for(lambda: prom.scalar('kbroker_bytes_in_total{topic="scraped"}'), 60, 0.25,
                        what="bytes in")
    assert bytes_in > 30 * len("payload-00")
    produce_requests = wait_for(lambda: prom.scalar('sum(kbroker_requests_total{api="Produce"})'), 60, 0.25,
                                what="produce requests")
    assert produce_requests >= 30
    # histograms arrive with their buckets: a latency quantile is computable
    wait_for(lambda: prom.query('histogram_quantile(0.99, sum by (le) '
                                '(rate(kbroker_request_latency_seconds_bucket[1m])))'), 60, 0.25,
             what="a latency quantile")
    wait_for(lambda: prom.scalar("kbroker_active_connections") is not None, 60, 0.25, what="active connections")
