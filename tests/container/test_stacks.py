"""The compose files run for real: docker-compose.yml with docker-compose.host.yml (host networking),
through Debian's docker-compose and podman's API socket.

* the default stack (broker, the one-shot ``topics``, Prometheus, the one-shot Spark export): it comes
  up in order, clients produce and consume through the broker, Prometheus scrapes it, and the Spark
  export service writes what was produced to Parquet;
* the ``cluster`` profile (etcd and three brokers): a replicated topic keeps taking and serving
  records with one broker container stopped, and the broker catches up when started again.

The host-network services listen on fixed ports of 127.0.0.1 (docker-compose.host.yml); the test
fails at once, naming them, when one is taken.
"""

from __future__ import annotations

import json
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from confluent_kafka.admin import AdminClient
from container_env import (
    ETCD,
    PROMETHEUS,
    SPARK,
    BackgroundBuilds,
    Compose,
    Podman,
    PodmanService,
    port_is_free,
    timed,
    wait_until,
)
from traffic import confluent_produce, confluent_read, create_topic, ours_produce, ours_read, values

pytestmark = pytest.mark.timeout(1800)

SINGLE_PORTS = (9092, 9464, 9090)
CLUSTER_PORTS = (2379, 2380, 19092, 29092, 39092, 19464, 29464, 39464)


def require_free(ports: tuple[int, ...], timeout: float = 60.0) -> None:
    """Wait until ``ports`` are free: some of them (39092, 39464) are in the kernel's ephemeral range, so
    a passing connection or another program's port-0 listener may hold one for a while."""
    deadline = time.monotonic() + timeout
    while True:
        taken = [p for p in ports if not port_is_free(p)]
        if not taken or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert not taken, (f"ports {taken} of 127.0.0.1 are in use; the host-network compose stacks "
                       f"(docker-compose.host.yml) listen there")


@pytest.fixture
def stack(podman: Podman, podman_service: PodmanService, stack_images: BackgroundBuilds, run_id: str,
          request: pytest.FixtureRequest) -> Iterator[Compose]:
    """A compose project of this run (``down -v`` at the end), once the images it uses are built."""
    name, profiles, images = request.param
    stack_images.wait(*images)
    compose = Compose(podman, podman_service, f"{run_id}{name}", profiles)
    try:
        yield compose
    finally:
        print(compose.logs())  # shown when the test failed
        compose.down()


def exited(podman: Podman, container: str, timeout: float) -> int:
    """Wait for ``container`` (a one-shot service) to exit; its exit code."""
    wait_until(lambda: podman.state(container)["Status"] == "exited", timeout, f"{container} to finish",
               interval=1)
    return int(podman.state(container)["ExitCode"])


def prometheus_query(query: str) -> list[dict]:
    url = "http://127.0.0.1:9090/api/v1/query?" + urllib.parse.urlencode({"query": query})
    try:
        with urllib.request.urlopen(url, timeout=10) as resp:
            return list(json.load(resp)["data"]["result"])
    except OSError:
        return []


def parquet_values(directory: Path) -> list[bytes]:
    table = pq.read_table(directory)
    return [bytes(v) for v in table.column("value").to_pylist()]


def registered_brokers(bootstrap: str) -> list[int]:
    try:
        return sorted(AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=5).brokers)
    except Exception:  # no broker answers yet
        return []


def isr_sizes(bootstrap: str, topic: str) -> list[int]:
    metadata = AdminClient({"bootstrap.servers": bootstrap}).list_topics(topic, timeout=20)
    return [len(p.isrs) for _, p in sorted(metadata.topics[topic].partitions.items())]


@pytest.mark.parametrize("stack", [("cluster", ["cluster"], [ETCD])], indirect=True)
def test_cluster_profile_keeps_serving_with_a_broker_container_stopped(podman: Podman, image: str,
                                                                        stack: Compose):
    require_free(CLUSTER_PORTS)
    stack.up("etcd", "cluster-1", "cluster-2", "cluster-3")
    bootstrap = "127.0.0.1:19092,127.0.0.1:29092,127.0.0.1:39092"
    wait_until(lambda: len(registered_brokers(bootstrap)) == 3, 90, "three brokers registered")
    create_topic(bootstrap, "replicated", 3, 3)
    wait_until(lambda: isr_sizes(bootstrap, "replicated") == [3, 3, 3], 60, "three in-sync replicas")
    confluent_produce(bootstrap, "replicated", values("before", 1000))

    stack.run("stop", "-t", "30", "cluster-2", timeout=120)
    stopped = podman.state(stack.container("cluster-2"))
    assert stopped["Status"] == "exited" and stopped["ExitCode"] == 0, stopped
    # acks=all with min.insync.replicas=2: two brokers of three still take writes
    wait_until(lambda: isr_sizes(bootstrap, "replicated") == [2, 2, 2], 60, "cluster-2 out of the ISRs")
    confluent_produce(bootstrap, "replicated", values("during", 1000))
    ours_produce(bootstrap, "replicated", values("ours", 500))
    expected = sorted(values("before", 1000) + values("during", 1000) + values("ours", 500))
    assert sorted(confluent_read(bootstrap, "replicated", 2500)) == expected
    assert sorted(ours_read(bootstrap, "replicated", 2500)) == expected

    stack.run("start", "cluster-2", timeout=120)
    wait_until(lambda: isr_sizes(bootstrap, "replicated") == [3, 3, 3], 120, "cluster-2 back in the ISRs")


@pytest.mark.parametrize("stack", [("single", [], [PROMETHEUS, SPARK])], indirect=True)
def test_default_stack_serves_clients_is_scraped_and_exports_parquet(podman: Podman, image: str, stack: Compose):
    require_free(SINGLE_PORTS)
    stack.up("broker", "topics", "prometheus")
    assert exited(podman, stack.container("topics"), 120) == 0, podman.logs(stack.container("topics"))

    bootstrap = "127.0.0.1:9092"
    ours_produce(bootstrap, "orders", values("ours", 1000))
    confluent_produce(bootstrap, "orders", values("ck", 1000))
    expected = sorted(values("ours", 1000) + values("ck", 1000))
    assert sorted(confluent_read(bootstrap, "orders", 2000)) == expected
    assert sorted(ours_read(bootstrap, "orders", 2000)) == expected

    scraped = wait_until(lambda: prometheus_query('kbroker_record_codec_info{job="kbroker"}'), 60,
                         "Prometheus to scrape the broker")
    assert [r["metric"]["codec"] for r in scraped] == ["compiled"]
    assert wait_until(lambda: prometheus_query('sum(kbroker_messages_in_total{topic="orders"}) == 2000'), 60,
                      "Prometheus to see the 2000 records")

    # the one-shot export, started as `up` starts it: once the broker is healthy and `topics` succeeded
    stack.up("spark-export")
    export = stack.container("spark-export")
    with timed("the Spark export service"):
        assert exited(podman, export, 600) == 0, podman.logs(export)[-4000:]
    logs = podman.logs(export)
    # Spark's driver stays on 127.0.0.1 (it warns when it binds another interface's address instead)
    assert "resolves to a loopback address" not in logs, logs[-3000:]
    summary = json.loads([ln for ln in logs.splitlines() if ln.startswith("{")][-1])
    assert summary["rows_in_output"] == 2000, summary
    assert sorted(parquet_values(stack.volume("spark-out") / "orders")) == expected
