"""Helpers for the multi-broker tests: who leads what (through confluent-kafka's admin client), waits, log bytes."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from broker.testing.harness import KBrokerCluster


def wait_for(predicate: Callable[[], Any], what: str, timeout: float = 60.0, interval: float = 0.1) -> Any:
    """Poll until ``predicate()`` is truthy; a bound so a broken cluster fails instead of hanging."""
    deadline = time.monotonic() + timeout
    last_exc: Exception | None = None
    while time.monotonic() < deadline:
        try:
            value = predicate()
            if value:
                return value
        except Exception as exc:  # a broker may be restarting: keep polling
            last_exc = exc
        time.sleep(interval)
    raise AssertionError(f"timed out waiting for {what}" + (f" (last error: {last_exc})" if last_exc else ""))


def admin(bootstrap: str) -> Any:
    from confluent_kafka.admin import AdminClient

    return AdminClient({"bootstrap.servers": bootstrap, "socket.timeout.ms": 5000})


def partition_info(cluster: KBrokerCluster, topic: str, partition: int = 0) -> Any:
    md = admin(cluster.bootstrap_servers).list_topics(topic, timeout=10)
    t = md.topics.get(topic)
    if t is None or t.error is not None:
        return None
    return t.partitions.get(partition)


def leader_of(cluster: KBrokerCluster, topic: str, partition: int = 0) -> int:
    info = partition_info(cluster, topic, partition)
    return -1 if info is None else int(info.leader)


def create_topic(cluster: KBrokerCluster, name: str, partitions: int = 1, rf: int = 3,
                 config: dict[str, str] | None = None) -> None:
    from confluent_kafka.admin import NewTopic

    client = admin(cluster.bootstrap_servers)  # keep it alive until the future resolves
    futures = client.create_topics([NewTopic(name, partitions, rf, config=config or {})], operation_timeout=30)
    futures[name].result(60)
    wait_for(lambda: all(
        (info := partition_info(cluster, name, p)) is not None and info.leader >= 0 and len(info.isrs) == rf
        for p in range(partitions)), f"{name} to have leaders and full ISRs")


def segment_bytes(data_dir: Path, topic: str, partition: int) -> bytes:
    """The concatenated .log files of one replica (its exact bytes on disk)."""
    pdir = data_dir / f"{topic}-{partition}"
    return b"".join(p.read_bytes() for p in sorted(pdir.glob("*.log")))


class Stream:
    """A confluent-kafka producer sending numbered records round-robin over ``partitions`` from a
    thread, remembering where each acknowledged record was stored."""

    def __init__(self, bootstrap: str, topic: str, partitions: int, *, acks: str, idempotent: bool) -> None:
        from confluent_kafka import Producer

        self.producer = Producer({"bootstrap.servers": bootstrap, "acks": acks, "enable.idempotence": idempotent,
                                  "linger.ms": 5, "message.timeout.ms": 120_000, "retry.backoff.ms": 50,
                                  "reconnect.backoff.ms": 50, "reconnect.backoff.max.ms": 500,
                                  "topic.metadata.refresh.interval.ms": 1000})
        self.topic = topic
        self.partitions = partitions
        self.idempotent = idempotent
        self.acked: dict[bytes, tuple[int, int]] = {}
        self.ack_times: list[float] = []
        self.acked_at: dict[bytes, float] = {}
        self.failed: dict[bytes, str] = {}
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        seq = 0
        while not self.stop.is_set():
            value = b"%s-%d" % (self.topic.encode(), seq)

            def cb(err: Any, msg: Any, value: bytes = value) -> None:
                with self.lock:
                    if err is None:
                        self.acked[value] = (msg.partition(), msg.offset())
                        self.ack_times.append(time.monotonic())
                        self.acked_at[value] = self.ack_times[-1]
                    else:
                        self.failed[value] = str(err)

            while True:
                try:
                    self.producer.produce(self.topic, value=value, partition=seq % self.partitions, on_delivery=cb)
                    break
                except BufferError:
                    self.producer.poll(0.05)
            seq += 1
            self.producer.poll(0)
            time.sleep(0.002)

    def start(self) -> Stream:
        self.thread.start()
        return self

    def acks_after(self, t: float) -> int:
        with self.lock:
            return sum(1 for x in self.ack_times if x > t)

    def finish(self) -> None:
        self.stop.set()
        self.thread.join(30)
        assert self.producer.flush(120) == 0

    def check(self, bootstrap: str, acked_since: float = 0.0) -> None:
        """Every record acknowledged (after ``acked_since``) is stored where it was acknowledged (none
        truncated away); an idempotent producer's records are stored once."""
        from confluent_kafka import Consumer, TopicPartition

        assert not self.failed, f"deliveries failed: {list(self.failed.items())[:5]}"
        c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"verify-{self.topic}-{time.time()}",
                      "enable.auto.commit": False, "auto.offset.reset": "earliest"})
        ends = {p: c.get_watermark_offsets(TopicPartition(self.topic, p), timeout=10)[1]
                for p in range(self.partitions)}
        c.assign([TopicPartition(self.topic, p, 0) for p in range(self.partitions)])
        stored: dict[tuple[int, int], bytes] = {}
        count: dict[bytes, int] = {}

        def done() -> bool:
            for m in c.consume(1000, 0.5):
                if m.error() is None:
                    stored[(m.partition(), m.offset())] = m.value()
                    count[m.value()] = count.get(m.value(), 0) + 1
            return all(sum(1 for (p, _) in stored if p == q) >= ends[q] for q in ends)

        wait_for(done, f"every record of {self.topic}", timeout=120)
        c.close()
        checked = [v for v in self.acked if self.acked_at[v] >= acked_since]
        # librdkafka reports no offset (None) for a record it counts as delivered because a later batch
        # of the same idempotent producer was: such a record must be stored in its partition
        where = {v: pos for pos, v in stored.items()}
        missing = [v for v in checked
                   if (stored.get(self.acked[v]) != v if self.acked[v][1] is not None
                       else where.get(v, (None,))[0] != self.acked[v][0])]
        assert not missing, (f"{len(missing)} of {len(checked)} acknowledged records of {self.topic} lost, "
                             f"e.g. {missing[:5]}")
        if self.idempotent:
            twice = [v for v, n in count.items() if n > 1]
            assert not twice, f"records stored twice: {twice[:5]}"


def full_isrs(cluster: KBrokerCluster, topic: str, partitions: int, brokers: list[int] | None = None) -> bool:
    """Every partition has a leader and all its replicas in sync (and they are ``brokers``, when given;
    by default every broker of the cluster)."""
    expected = sorted(cluster.brokers) if brokers is None else sorted(brokers)
    for p in range(partitions):
        info = partition_info(cluster, topic, p)
        if info is None or info.leader < 0 or sorted(info.isrs) != expected or sorted(info.replicas) != expected:
            return False
    return True
