"""Three brokers on etcd, as real processes, seen by every outside client: metadata, produce, consume.

One cluster for the module (starting etcd and three brokers is the expensive part).
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from cluster_helpers import create_topic, partition_info, segment_bytes, wait_for
from peers import require_etcd, require_kafkajs, require_tool

from broker.testing.harness import KBrokerCluster

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KBrokerCluster]:
    require_etcd()
    with KBrokerCluster(3, tmp_path_factory.mktemp("cluster"), settings={"default.replication.factor": 3}) as c:
        yield c
        for node, b in c.brokers.items():
            assert b.alive(), f"broker {node} died during the module:\n{b.log_tail()}"


def test_metadata_lists_every_broker_and_full_replica_sets(cluster: KBrokerCluster) -> None:
    from confluent_kafka.admin import AdminClient

    create_topic(cluster, "meta", partitions=6, rf=3)
    md = AdminClient({"bootstrap.servers": cluster.brokers[2].bootstrap_servers}).list_topics(timeout=10)
    assert sorted(md.brokers) == [1, 2, 3]
    assert md.controller_id in (1, 2, 3)
    parts = md.topics["meta"].partitions
    assert len(parts) == 6
    leaders = sorted(p.leader for p in parts.values())
    assert leaders == [1, 1, 2, 2, 3, 3]  # leaders spread evenly
    for p in parts.values():
        assert sorted(p.replicas) == [1, 2, 3] and sorted(p.isrs) == [1, 2, 3]
        assert p.replicas[0] == p.leader  # the preferred replica leads


def test_confluent_kafka_produce_and_consume_rf3(cluster: KBrokerCluster) -> None:
    from confluent_kafka import Consumer, Producer

    create_topic(cluster, "ck", partitions=3)
    p = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all", "enable.idempotence": True})
    for i in range(300):
        p.produce("ck", key=str(i).encode(), value=f"v{i}".encode())
    assert p.flush(30) == 0
    c = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "ck-group",
                  "auto.offset.reset": "earliest"})
    c.subscribe(["ck"])
    got: set[bytes] = set()
    wait_for(lambda: (got.update(m.value() for m in c.consume(100, 0.5) if not m.error()) or len(got) == 300),
             "confluent-kafka to read 300 records")
    c.close()
    # every replica holds the same bytes
    for part in range(3):
        info = partition_info(cluster, "ck", part)
        assert info is not None and sorted(info.isrs) == [1, 2, 3]
        wait_for(lambda part=part: len({segment_bytes(cluster.brokers[n].data_dir, "ck", part)
                                        for n in (1, 2, 3)}) == 1, "replicas to converge")


def test_kafka_python_produce_and_consume_rf3(cluster: KBrokerCluster) -> None:
    from kafka import KafkaConsumer, KafkaProducer

    create_topic(cluster, "kp", partitions=2)
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers, acks="all")
    for i in range(100):
        producer.send("kp", f"kp-{i}".encode())
    producer.flush(30)
    producer.close()
    consumer = KafkaConsumer("kp", bootstrap_servers=cluster.bootstrap_servers, auto_offset_reset="earliest",
                             group_id="kp-group", consumer_timeout_ms=20_000)
    got = set()
    for msg in consumer:
        got.add(msg.value)
        if len(got) == 100:
            break
    consumer.close()
    assert got == {f"kp-{i}".encode() for i in range(100)}


def test_aiokafka_produce_and_consume_rf3(cluster: KBrokerCluster) -> None:
    import asyncio

    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

    create_topic(cluster, "aio", partitions=2)

    async def run() -> set[bytes]:
        producer = AIOKafkaProducer(bootstrap_servers=cluster.bootstrap_servers, acks="all")
        await producer.start()
        try:
            for i in range(100):
                await producer.send("aio", f"a{i}".encode())
            await producer.flush()
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer("aio", bootstrap_servers=cluster.bootstrap_servers,
                                    auto_offset_reset="earliest", group_id="aio-group")
        await consumer.start()
        got: set[bytes] = set()
        try:
            async with asyncio.timeout(30):
                while len(got) < 100:
                    batch = await consumer.getmany(timeout_ms=500)
                    for records in batch.values():
                        got.update(r.value for r in records)
        finally:
            await consumer.stop()
        return got

    assert asyncio.run(run()) == {f"a{i}".encode() for i in range(100)}


def test_kcat_sees_the_cluster_and_round_trips(cluster: KBrokerCluster) -> None:
    kcat = require_tool("kcat")
    create_topic(cluster, "kc", partitions=1)
    listing = subprocess.run([kcat, "-b", cluster.bootstrap_servers, "-L", "-J"], capture_output=True,
                             timeout=60, check=True)
    md = json.loads(listing.stdout)
    assert sorted(b["id"] for b in md["brokers"]) == [1, 2, 3]
    subprocess.run([kcat, "-b", cluster.bootstrap_servers, "-P", "-t", "kc", "-X", "acks=all"],
                   input=b"one\ntwo\nthree\n", timeout=60, check=True)
    out = subprocess.run([kcat, "-b", cluster.bootstrap_servers, "-C", "-t", "kc", "-o", "beginning", "-e",
                          "-q"], capture_output=True, timeout=60, check=True)
    assert out.stdout.split() == [b"one", b"two", b"three"]


def test_kafkajs_round_trips(cluster: KBrokerCluster) -> None:
    node = require_kafkajs()
    node_dir = REPO / "tests" / "node"
    records = [{"key": base64.b64encode(f"k{i}".encode()).decode(), "value": base64.b64encode(f"v{i}".encode()).decode(),
                "headers": [], "partition": i % 3} for i in range(60)]
    result = subprocess.run([node, str(node_dir / "produce_consume.js"), "both", cluster.bootstrap_servers, "js"],
                            input=json.dumps(records).encode(), capture_output=True, timeout=120, cwd=str(node_dir),
                            env={**os.environ, "EXPECT": "60", "PARTITIONS": "3"})
    assert result.returncode == 0, result.stderr.decode()[-3000:]
    doc = json.loads(result.stdout.decode().strip().splitlines()[-1])
    assert sorted(base64.b64decode(m["value"]) for m in doc["consumed"]) == sorted(f"v{i}".encode() for i in range(60))


def test_our_cli_describes_the_cluster(cluster: KBrokerCluster) -> None:
    create_topic(cluster, "cli", partitions=2)
    out = subprocess.run([sys.executable, "-m", "kbroker_cli", "-b", cluster.bootstrap_servers, "cluster",
                          "describe", "--json"], capture_output=True, timeout=60, cwd=str(REPO))
    assert out.returncode == 0, out.stderr.decode()
    doc = json.loads(out.stdout)
    assert sorted(b["id"] for b in doc["brokers"]) == [1, 2, 3]
    assert doc["controller"] in (1, 2, 3)
    assert doc["under_replicated_partitions"] == [] and doc["offline_partitions"] == []
    out = subprocess.run([sys.executable, "-m", "kbroker_cli", "-b", cluster.bootstrap_servers, "topics",
                          "describe", "cli", "--json"], capture_output=True, timeout=60, cwd=str(REPO))
    assert out.returncode == 0, out.stderr.decode()
    parts = json.loads(out.stdout)["partitions"]
    assert all(sorted(p["replicas"]) == [1, 2, 3] and sorted(p["isr"]) == [1, 2, 3] for p in parts)
