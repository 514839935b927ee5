"""The console of a 3-broker cluster (etcd, ``python -m broker`` processes), in headless Chromium.

Broker 1's console shows every broker and the partitions led elsewhere with their offsets (asked of their
leaders), and groups coordinated elsewhere with their lag (asked of their coordinators); when broker 3
is killed its page shows it down and its partitions under-replicated, updated in place.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from console_pages import TIMEOUT_S, Page
from peers import require_etcd

from broker.testing.harness import KBrokerCluster

pytestmark = pytest.mark.slow

TOPIC = "replicated"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KBrokerCluster]:
    require_etcd()
    directory: Path = tmp_path_factory.mktemp("console-cluster")
    c = KBrokerCluster(3, directory, console=True, settings={
        "console.refresh.ms": 700, "offsets.topic.num.partitions": 6, "default.replication.factor": 3})
    with c:
        from confluent_kafka import Producer
        from confluent_kafka.admin import AdminClient, NewTopic

        admin = AdminClient({"bootstrap.servers": c.bootstrap_servers})
        deadline = time.monotonic() + TIMEOUT_S
        while True:  # until all three brokers have registered (INVALID_REPLICATION_FACTOR before)
            try:
                admin.create_topics([NewTopic(TOPIC, 3, 3)])[TOPIC].result(TIMEOUT_S)
                break
            except Exception as exc:
                if "TOPIC_ALREADY_EXISTS" in repr(exc):
                    break  # an earlier attempt that timed out on the client's side created it
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        producer = Producer({"bootstrap.servers": c.bootstrap_servers, "acks": "all"})
        for p in range(3):
            for i in range(p + 1):  # partition p holds p + 1 records
                producer.produce(TOPIC, key=b"k", value=b"v%d" % i, partition=p)
        assert producer.flush(TIMEOUT_S) == 0
        yield c


@pytest.fixture()
def page(browser: Any, cluster: KBrokerCluster) -> Iterator[Page]:
    p = Page(browser, cluster.brokers[1].console_url)
    p.errors()
    yield p
    assert p.errors() == []


def test_partitions_led_elsewhere_and_groups_coordinated_elsewhere(page: Page, cluster: KBrokerCluster) -> None:
    page.open("/brokers")
    page.wait(lambda: all("alive" in page.css(f"#broker-{n}").text for n in (1, 2, 3)), "three live brokers")
    page.open(f"/topics/{TOPIC}")
    leaders = {p: page.css(f"#partition-{p} td").text for p in range(3)}
    assert set(leaders.values()) - {"1"}, f"every partition led by broker 1: {leaders}"  # some asked elsewhere
    assert [page.css(f"#partition-{p} .end").text for p in range(3)] == ["1", "2", "3"]
    # groups on every coordinator, each with its lag
    from confluent_kafka import Consumer, TopicPartition

    groups = [f"cluster-group-{i}" for i in range(6)]
    for group in groups:
        c = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": group})
        try:
            c.commit(offsets=[TopicPartition(TOPIC, 2, 1)], asynchronous=False)  # lag 2
        finally:
            c.close()
    page.open("/groups")
    rows = page.wait(lambda: [r.text for r in page.all("#groups-table tbody tr") if r.text.startswith("cluster-group")
                              and r.text.endswith(" 2")], "the groups with their lag")
    assert len(rows) == len(groups), rows
    coordinators = set()
    for group in groups:
        page.open(f"/groups/{group}")
        assert page.css("#total-lag").text == "2"
        coordinators.add(page.text("#group-state").split("Coordinator\nbroker ")[1].split()[0])
    assert len(coordinators) > 1, "every group on one coordinator: nothing was asked of another broker"


def test_a_killed_broker_is_down_and_its_partitions_under_replicated(page: Page, cluster: KBrokerCluster) -> None:
    page.open("/")
    assert page.css("#under-replicated").text == "0"
    cluster.kill(3)
    # the open page refreshes in place once broker 3's registration has expired
    page.wait(lambda: "down" in page.css("#broker-3 .status").text, "broker 3 shown down", timeout=60)
    page.wait(lambda: int(page.css("#under-replicated").text) >= 3, "under-replicated partitions")
    assert "Partitions that need attention" in page.text("#problems")
    page.screenshot("cluster-broker-down")
    page.open(f"/topics/{TOPIC}")
    assert all("under" in (page.css(f"#partition-{p}").get_attribute("class") or "") for p in range(3))
