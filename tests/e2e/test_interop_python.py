"""kafka-python, aiokafka and confluent-kafka against a real ``python -m broker`` process.

Each client creates a topic with its own admin API and produces records with
keys (some null) and headers to explicit partitions; then every client reads
every topic back from the beginning by assignment, and the bytes (key, value,
headers, partition, offset) must equal what was acknowledged.  Our own codec
reads the topic too, as an independent check of what is on the broker.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

import pytest
from e2e_helpers import read_all, sample_records

from protocol.api import ApiKey

PARTITIONS = 3
N = 120
Stored = dict[tuple[int, int], tuple[bytes | None, bytes, list[tuple[str, bytes]]]]


def _headers(h: Any) -> list[tuple[str, bytes]]:
    return [(k, bytes(v) if v is not None else None) for k, v in (h or [])]


# -- admin -------------------------------------------------------------------------------


def create_kafka_python(bootstrap: str, topic: str) -> None:
    from kafka.admin import KafkaAdminClient, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="e2e-kafka-python")
    try:
        admin.create_topics([NewTopic(topic, num_partitions=PARTITIONS, replication_factor=1)])
    finally:
        admin.close()


def create_aiokafka(bootstrap: str, topic: str) -> None:
    from aiokafka.admin import AIOKafkaAdminClient, NewTopic

    async def run() -> None:
        admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
        await admin.start()
        try:
            await admin.create_topics([NewTopic(topic, num_partitions=PARTITIONS, replication_factor=1)])
        finally:
            await admin.close()

    asyncio.run(run())


def create_confluent(bootstrap: str, topic: str) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(topic, num_partitions=PARTITIONS, replication_factor=1)])
    futures[topic].result(30)


# -- produce: returns {(partition, offset): (key, value, headers)} as acknowledged ---------


def produce_kafka_python(bootstrap: str, topic: str, records: list, **cfg: Any) -> Stored:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, **{"acks": "all", "linger_ms": 5, **cfg})
    try:
        futures = [(producer.send(topic, value=v, key=k, headers=h, partition=i % PARTITIONS), (k, v, h))
                   for i, (k, v, h) in enumerate(records)]
        producer.flush(30)
        out: Stored = {}
        for fut, rec in futures:
            md = fut.get(30)
            out[(md.partition, md.offset)] = rec
        return out
    finally:
        producer.close(10)


def produce_aiokafka(bootstrap: str, topic: str, records: list, **cfg: Any) -> Stored:
    from aiokafka import AIOKafkaProducer

    async def run() -> Stored:
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, **{"acks": "all", "linger_ms": 5, **cfg})
        await producer.start()
        try:
            futs = [(await producer.send(topic, value=v, key=k, headers=h, partition=i % PARTITIONS), (k, v, h))
                    for i, (k, v, h) in enumerate(records)]
            out: Stored = {}
            for fut, rec in futs:
                md = await fut
                out[(md.partition, md.offset)] = rec
            return out
        finally:
            await producer.stop()

    return asyncio.run(run())


def produce_confluent(bootstrap: str, topic: str, records: list, **cfg: Any) -> Stored:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5, **cfg})
    out: Stored = {}
    errors: list[Any] = []

    def make_cb(rec: Any) -> Callable[[Any, Any], None]:
        def cb(err: Any, msg: Any) -> None:
            if err is not None:
                errors.append(err)
            else:
                out[(msg.partition(), msg.offset())] = rec
        return cb

    for i, (k, v, h) in enumerate(records):
        producer.produce(topic, value=v, key=k, headers=h, partition=i % PARTITIONS, on_delivery=make_cb((k, v, h)))
        producer.poll(0)
    assert producer.flush(30) == 0
    assert not errors, errors
    return out


# -- consume from the beginning by assignment ---------------------------------------------


def _deadline(seconds: float = 60.0) -> float:
    # a bound so a broken broker fails the test instead of hanging it; not a timing assertion
    return time.monotonic() + seconds


def consume_kafka_python(bootstrap: str, topic: str, n: int) -> Stored:
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, group_id=None,
                             auto_offset_reset="earliest", fetch_max_wait_ms=100)
    try:
        tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        out: Stored = {}
        end = _deadline()
        while len(out) < n and time.monotonic() < end:
            for batch in consumer.poll(timeout_ms=500).values():
                for m in batch:
                    out[(m.partition, m.offset)] = (m.key, m.value, _headers(m.headers))
        return out
    finally:
        consumer.close()


def consume_aiokafka(bootstrap: str, topic: str, n: int) -> Stored:
    from aiokafka import AIOKafkaConsumer, TopicPartition

    async def run() -> Stored:
        consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, group_id=None,
                                    auto_offset_reset="earliest", fetch_max_wait_ms=100)
        await consumer.start()
        try:
            tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]
            consumer.assign(tps)
            await consumer.seek_to_beginning(*tps)
            out: Stored = {}
            end = _deadline()
            while len(out) < n and time.monotonic() < end:
                for batch in (await consumer.getmany(timeout_ms=500)).values():
                    for m in batch:
                        out[(m.partition, m.offset)] = (m.key, m.value, _headers(m.headers))
            return out
        finally:
            await consumer.stop()

    return asyncio.run(run())


def consume_confluent(bootstrap: str, topic: str, n: int) -> Stored:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"e2e-{topic}", "enable.auto.commit": False,
                         "fetch.wait.max.ms": 100})
    try:
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(PARTITIONS)])
        out: Stored = {}
        end = _deadline()
        while len(out) < n and time.monotonic() < end:
            for m in consumer.consume(500, 0.5):
                assert m.error() is None, m.error()
                out[(m.partition(), m.offset())] = (m.key(), m.value(), _headers(m.headers()))
        return out
    finally:
        consumer.close()


CLIENTS = {
    "kafka-python": (create_kafka_python, produce_kafka_python, consume_kafka_python),
    "aiokafka": (create_aiokafka, produce_aiokafka, consume_aiokafka),
    "confluent-kafka": (create_confluent, produce_confluent, consume_confluent),
}


def _normalise(stored: Stored) -> Stored:
    return {pos: (k, v, _headers(h)) for pos, (k, v, h) in stored.items()}


@pytest.fixture(scope="module")
def produced(shared_broker) -> dict[str, tuple[str, Stored]]:
    """Each client creates its topic and produces into it; returns {client: (topic, acknowledged)}."""
    out: dict[str, tuple[str, Stored]] = {}
    for seed, (name, (create, produce, _consume)) in enumerate(CLIENTS.items()):
        topic = f"interop-{name}"
        create(shared_broker.bootstrap_servers, topic)
        acked = produce(shared_broker.bootstrap_servers, topic, sample_records(N, seed))
        out[name] = (topic, _normalise(acked))
    return out


@pytest.mark.slow
@pytest.mark.parametrize("client", sorted(CLIENTS))
def test_admin_created_topic_and_acknowledged_every_record(shared_broker, produced, client) -> None:
    topic, acked = produced[client]
    assert len(acked) == N, f"{client} acknowledged {len(acked)} of {N}"
    # offsets per partition are dense from 0 and in production order
    for p in range(PARTITIONS):
        offsets = sorted(o for (pp, o) in acked if pp == p)
        assert offsets == list(range(len(offsets)))
    with shared_broker.raw() as c:
        md = c.request(ApiKey.METADATA, 12, {"topics": [{"name": topic, "topic_id": None}],
                                             "allow_auto_topic_creation": False,
                                             "include_topic_authorized_operations": False})
        assert md.topics[0].error_code == 0 and len(md.topics[0].partitions) == PARTITIONS
        # what our own codec reads (CRC-checked) is what the client was acknowledged for
        stored: Stored = {}
        for p in range(PARTITIONS):
            for r in read_all(c, topic, p):
                stored[(p, r.offset)] = (r.key, r.value, _headers(r.headers))
    assert stored == acked


@pytest.mark.slow
@pytest.mark.parametrize("consumer", sorted(CLIENTS))
@pytest.mark.parametrize("producer", sorted(CLIENTS))
def test_read_back_from_beginning_byte_for_byte(shared_broker, produced, producer, consumer) -> None:
    topic, acked = produced[producer]
    got = CLIENTS[consumer][2](shared_broker.bootstrap_servers, topic, len(acked))
    assert len(got) == len(acked), f"{consumer} read {len(got)} of {len(acked)} records written by {producer}"
    assert _normalise(got) == acked
