"""A consumer group survives its coordinator's broker dying (kill -9), with confluent-kafka and kafka-python members.

The group lives on the leader of its ``__consumer_offsets`` partition; when that broker dies the
partition's leadership moves, the new leader loads the group's offsets, the members find it and
rejoin, and consumption resumes from the committed offsets: nothing committed is lost or rewound.
"""

from __future__ import annotations

import itertools
import threading

import pytest
from cluster_helpers import admin, create_topic, wait_for

from broker.testing.harness import KBrokerCluster

pytestmark = pytest.mark.slow

TOPIC, GROUP, PARTITIONS = "orders", "billing", 4


def coordinator_of(bootstrap: str, group: str) -> int:
    client = admin(bootstrap)  # keep it alive until the future resolves
    desc = client.describe_consumer_groups([group], request_timeout=10)[group].result(15)
    return int(desc.coordinator.id)


def committed(bootstrap: str, group: str) -> dict[int, int]:
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition

    client = admin(bootstrap)
    request = ConsumerGroupTopicPartitions(group, [TopicPartition(TOPIC, p) for p in range(PARTITIONS)])
    result = client.list_consumer_group_offsets([request], request_timeout=10)[group].result(15)
    return {tp.partition: tp.offset for tp in result.topic_partitions if tp.offset >= 0}


class Member(threading.Thread):
    """One group member in a thread: polls, records what it saw, commits synchronously after each batch."""

    def __init__(self, kind: str, bootstrap: str) -> None:
        super().__init__(daemon=True)
        self.kind = kind
        self.bootstrap = bootstrap
        self.seen: list[bytes] = []
        self.stop = threading.Event()
        self.error: BaseException | None = None
        self.has_partitions = False  # as of its last poll

    def run(self) -> None:
        try:
            self._confluent() if self.kind == "confluent" else self._kafka_python()
        except BaseException as exc:
            self.error = exc

    def _confluent(self) -> None:
        from confluent_kafka import Consumer, KafkaException

        c = Consumer({"bootstrap.servers": self.bootstrap, "group.id": GROUP, "auto.offset.reset": "earliest",
                      "enable.auto.commit": False, "session.timeout.ms": 10_000,
                      "heartbeat.interval.ms": 500})
        c.subscribe([TOPIC])
        while not self.stop.is_set():
            msgs = [m for m in c.consume(100, 0.3) if m.error() is None]
            self.has_partitions = bool(c.assignment())
            if msgs:
                self.seen += [m.value() for m in msgs]
                try:
                    c.commit(asynchronous=False)
                except KafkaException:
                    pass  # the coordinator moved: the next commit goes to the new one
        c.close()

    def _kafka_python(self) -> None:
        from kafka import KafkaConsumer
        from kafka.errors import KafkaError

        c = KafkaConsumer(TOPIC, bootstrap_servers=self.bootstrap, group_id=GROUP, auto_offset_reset="earliest",
                          enable_auto_commit=False, session_timeout_ms=10_000, heartbeat_interval_ms=500)
        while not self.stop.is_set():
            batches = c.poll(timeout_ms=300)
            self.has_partitions = bool(c.assignment())
            records = [r for rs in batches.values() for r in rs]
            if records:
                self.seen += [r.value for r in records]
                try:
                    c.commit()
                except KafkaError:
                    pass
        c.close()


def test_group_continues_when_its_coordinator_is_killed(cluster: KBrokerCluster) -> None:
    from confluent_kafka import Producer

    create_topic(cluster, TOPIC, partitions=PARTITIONS)
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all", "enable.idempotence": True,
                         "message.timeout.ms": 120_000})
    produced: list[bytes] = []
    lock = threading.Lock()

    def produce(n: int) -> None:
        for _ in range(n):
            with lock:
                index = len(produced)
                value = b"m%d" % index
                produced.append(value)
            # every partition gets records (a sticky partitioner could put them all in one, and then
            # only one member would have anything to read)
            producer.produce(TOPIC, value=value, partition=index % PARTITIONS)
        assert producer.flush(120) == 0

    members = [Member("confluent", cluster.bootstrap_servers), Member("kafka-python", cluster.bootstrap_servers)]
    for m in members:
        m.start()
    wait_for(lambda: all(m.has_partitions for m in members), "both members to share the partitions", timeout=90)
    produce(400)
    wait_for(lambda: sum(len(m.seen) for m in members) >= 400, "the group to read the first records", timeout=90)
    victim = coordinator_of(cluster.bootstrap_servers, GROUP)
    wait_for(lambda: sum(committed(cluster.bootstrap_servers, GROUP).values()) >= 400, "the first commits")
    before = committed(cluster.bootstrap_servers, GROUP)
    cluster.kill(victim)
    survivors = ",".join(b.bootstrap_servers for n, b in cluster.brokers.items() if n != victim)
    produce(400)
    wait_for(lambda: coordinator_of(survivors, GROUP) != victim, "a new coordinator", timeout=60)
    history: list[dict[int, int]] = []

    def caught_up() -> bool:
        now = committed(survivors, GROUP)
        history.append(now)
        return sum(now.values()) >= 800

    wait_for(caught_up, "the group to commit everything under its new coordinator", timeout=120, interval=0.5)
    for m in members:
        m.stop.set()
    for m in members:
        m.join(30)
        assert m.error is None, f"{m.kind} member failed: {m.error!r}"
    # nothing committed was lost or rewound
    for snapshot in [before, *history]:
        for p, offset in snapshot.items():
            assert offset >= before.get(p, 0)
    for earlier, later in itertools.pairwise(history):
        for p, offset in earlier.items():
            assert later.get(p, offset) >= offset, f"partition {p} rewound from {offset} to {later.get(p)}"
    seen: set[bytes] = set()
    for m in members:
        seen.update(m.seen)
    assert seen >= set(produced), f"{len(set(produced) - seen)} records were never consumed"
    assert all(len(m.seen) > 0 for m in members), "both clients took part"
