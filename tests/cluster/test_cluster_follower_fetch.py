"""Reading from the nearest replica (KIP-392) with real processes: brokers in three racks with
Kafka's RackAwareReplicaSelector; consumers that give their rack read from the replica in it."""

from __future__ import annotations

import asyncio
import socket
import struct
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from cluster_helpers import create_topic, leader_of, partition_info, wait_for
from peers import require_etcd

from broker.testing.harness import KBrokerCluster
from protocol.api import ApiKey, decode_response, encode_request

pytestmark = pytest.mark.slow

RACKS = {1: "rack-a", 2: "rack-b", 3: "rack-c"}
SELECTOR = "org.apache.kafka.common.replica.RackAwareReplicaSelector"


@pytest.fixture(scope="module")
def racks(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KBrokerCluster]:
    require_etcd()
    with KBrokerCluster(3, tmp_path_factory.mktemp("racks"), settings={"replica.selector.class": SELECTOR},
                        per_broker={n: {"broker.rack": r} for n, r in RACKS.items()}) as c:
        yield c


def produce(cluster: KBrokerCluster, topic: str, n: int) -> None:
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all"})
    for i in range(n):
        p.produce(topic, value=b"r%d" % i, partition=0)
    assert p.flush(30) == 0


def raw_fetch(cluster: KBrokerCluster, node: int, topic: str, version: int, rack: str) -> object:
    body = {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": 1 << 20, "isolation_level": 0,
            "session_id": 0, "session_epoch": -1, "rack_id": rack, "forgotten_topics_data": [],
            "topics": [{"topic": topic, "partitions": [
                {"partition": 0, "fetch_offset": 0, "log_start_offset": -1, "partition_max_bytes": 1 << 20,
                 "current_leader_epoch": -1, "last_fetched_epoch": -1}]}]}
    b = cluster.brokers[node]
    with socket.create_connection((b.host, b.port), timeout=10) as s:
        s.sendall(encode_request(ApiKey.FETCH, version, 7, "test", body))
        size = struct.unpack(">i", s.recv(4, socket.MSG_WAITALL))[0]
        data = b""
        while len(data) < size:
            data += s.recv(size - len(data))
    _, resp = decode_response(ApiKey.FETCH, version, data)
    return resp.responses[0].partitions[0]


def test_the_leader_sends_a_consumer_in_another_rack_to_the_replica_in_its_own(racks: KBrokerCluster) -> None:
    create_topic(racks, "near", partitions=1)
    produce(racks, "near", 50)
    leader = leader_of(racks, "near", 0)
    follower = next(n for n in (1, 2, 3) if n != leader)
    at_leader = raw_fetch(racks, leader, "near", 12, RACKS[follower])
    assert at_leader.preferred_read_replica == follower and not at_leader.records
    same_rack = raw_fetch(racks, leader, "near", 12, RACKS[leader])
    assert same_rack.preferred_read_replica == -1 and same_rack.records
    wait_for(lambda: raw_fetch(racks, follower, "near", 12, RACKS[follower]).high_watermark == 50,
             "the follower to know the high watermark")
    at_follower = raw_fetch(racks, follower, "near", 12, RACKS[follower])
    assert at_follower.error_code == 0 and at_follower.records  # a follower serves consumers with metadata
    old = raw_fetch(racks, follower, "near", 10, "")  # Fetch v10: no client metadata, leader only
    assert old.error_code == 6


def test_our_consumer_and_confluent_kafka_read_from_their_rack(racks: KBrokerCluster) -> None:
    from confluent_kafka import Consumer, TopicPartition

    from client import Consumer as OurConsumer

    create_topic(racks, "near2", partitions=1)
    produce(racks, "near2", 100)
    leader = leader_of(racks, "near2", 0)
    follower = next(n for n in (1, 2, 3) if n != leader)
    info = partition_info(racks, "near2", 0)
    assert info is not None and follower in info.isrs

    c = Consumer({"bootstrap.servers": racks.bootstrap_servers, "group.id": "near-ck", "client.rack": RACKS[follower],
                  "auto.offset.reset": "earliest", "enable.auto.commit": False})
    c.assign([TopicPartition("near2", 0, 0)])
    got: list[bytes] = []
    wait_for(lambda: got.extend(m.value() for m in c.consume(100, 0.5) if m.error() is None) or len(got) >= 100,
             "confluent-kafka to read every record")
    c.close()
    assert got == [b"r%d" % i for i in range(100)]

    async def ours() -> tuple[list[bytes], dict[object, tuple[int, float]]]:
        async with OurConsumer(bootstrap_servers=racks.bootstrap_servers, client_rack=RACKS[follower],
                               auto_offset_reset="earliest", enable_auto_commit=False) as consumer:
            from client import TopicPartition as TP

            consumer.assign([TP("near2", 0)])
            values: list[bytes] = []
            deadline = time.monotonic() + 60
            while len(values) < 100 and time.monotonic() < deadline:
                batch = await consumer.getmany(timeout_ms=500)
                for records in batch.values():
                    values.extend(r.value for r in records)
            return values, dict(consumer._fetcher.preferred)

    values, preferred = asyncio.run(ours())
    assert values == [b"r%d" % i for i in range(100)]
    assert [node for node, _ in preferred.values()] == [follower]


def test_no_selector_keeps_every_consumer_on_the_leader(tmp_path: Path) -> None:
    require_etcd()
    with KBrokerCluster(3, tmp_path / "c", per_broker={n: {"broker.rack": r} for n, r in RACKS.items()}) as c:
        create_topic(c, "near", partitions=1)
        produce(c, "near", 5)
        leader = leader_of(c, "near", 0)
        follower = next(n for n in (1, 2, 3) if n != leader)
        assert raw_fetch(c, leader, "near", 12, RACKS[follower]).preferred_read_replica == -1
