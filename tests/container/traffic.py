"""Records through a broker in a container, with real clients: confluent-kafka (librdkafka) and ours.

Each function produces or reads a topic from a host process over 127.0.0.1 and returns what it saw,
so a test compares values, not counts alone.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from client import TopicPartition as OurTopicPartition
from client.sync import SyncConsumer, SyncProducer


def values(prefix: str, n: int) -> list[bytes]:
    """``n`` distinct values, ``prefix-000000`` on."""
    return [b"%s-%06d" % (prefix.encode(), i) for i in range(n)]


def create_topic(bootstrap: str, topic: str, partitions: int, replication_factor: int = -1) -> None:
    """Create ``topic`` with confluent-kafka's admin client (waiting for the result)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(topic, partitions, replication_factor)], operation_timeout=30)
    futures[topic].result(timeout=60)


def confluent_produce(bootstrap: str, topic: str, values: Sequence[bytes], acks: str = "all") -> None:
    errors: list[str] = []

    def delivered(err: object, _msg: object) -> None:
        if err is not None:
            errors.append(str(err))

    producer = Producer({"bootstrap.servers": bootstrap, "acks": acks, "linger.ms": 5,
                         "message.timeout.ms": 60000})
    for value in values:
        while True:
            try:
                producer.produce(topic, value, on_delivery=delivered)
                break
            except BufferError:
                producer.poll(0.1)
    left = producer.flush(90)
    assert left == 0 and not errors, f"confluent-kafka: {left} undelivered, errors {errors[:3]}"


def confluent_read(bootstrap: str, topic: str, expected: int, timeout: float = 60) -> list[bytes]:
    """Every record of ``topic`` from the beginning, until ``expected`` were read (or the timeout)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"container-test-{time.time_ns()}",
                         "enable.auto.commit": False})
    try:
        partitions = consumer.list_topics(topic, timeout=30).topics[topic].partitions
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in partitions])
        values: list[bytes] = []
        deadline = time.monotonic() + timeout
        while len(values) < expected and time.monotonic() < deadline:
            for msg in consumer.consume(1000, timeout=0.5):
                if msg.error():
                    raise KafkaException(msg.error())
                values.append(msg.value())
        return values
    finally:
        consumer.close()


def ours_produce(bootstrap: str, topic: str, values: Sequence[bytes]) -> None:
    with SyncProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5) as producer:
        futures = [producer.send_async(topic, value=v) for v in values]
        producer.flush(90)
        for future in futures:
            future.result(timeout=90)


def ours_read(bootstrap: str, topic: str, expected: int, timeout: float = 60) -> list[bytes]:
    with SyncConsumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest") as consumer:
        consumer.assign([OurTopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic) or ())])
        values: list[bytes] = []
        deadline = time.monotonic() + timeout
        while len(values) < expected and time.monotonic() < deadline:
            for records in consumer.getmany(timeout_ms=500).values():
                values.extend(r.value for r in records)
        return values
