"""Operating a cluster through its life, with real processes and clients: rolling restarts that lose
nothing, a leader paused past its session (a zombie), a node id taken while its broker was away.

Each test starts its own etcd and three brokers.  Waits are bounded; nothing asserts how fast
anything was (benchmarks/cluster_lifecycle.py measures that).
"""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from cluster_helpers import admin, create_topic, leader_of, partition_info, wait_for

from broker.testing.harness import BrokerProcess, KBrokerCluster

pytestmark = pytest.mark.slow


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
        missing = [v for v in checked if stored.get(self.acked[v]) != v]
        assert not missing, (f"{len(missing)} of {len(checked)} acknowledged records of {self.topic} lost, "
                             f"e.g. {missing[:5]}")
        if self.idempotent:
            twice = [v for v, n in count.items() if n > 1]
            assert not twice, f"records stored twice: {twice[:5]}"


def full_isrs(cluster: KBrokerCluster, topic: str, partitions: int) -> bool:
    for p in range(partitions):
        info = partition_info(cluster, topic, p)
        if info is None or info.leader < 0 or sorted(info.isrs) != sorted(cluster.brokers):
            return False
    return True


def test_rolling_restart_loses_no_acknowledged_record_and_keeps_the_groups_offsets(
        cluster: KBrokerCluster) -> None:
    from confluent_kafka import Consumer, TopicPartition

    for name in ("roll-one", "roll-all"):
        create_topic(cluster, name, partitions=6)
    streams = [Stream(cluster.bootstrap_servers, "roll-one", 6, acks="1", idempotent=False).start(),
               Stream(cluster.bootstrap_servers, "roll-all", 6, acks="all", idempotent=True).start()]
    group = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "roll-g",
                      "enable.auto.commit": False})
    committed = [TopicPartition("roll-one", p, 3 + p) for p in range(6)]
    group.commit(offsets=committed, asynchronous=False)
    group.close()
    wait_for(lambda: all(len(s.acked) > 300 for s in streams), "the producers to get going")
    for node in sorted(cluster.brokers):
        assert cluster.stop_broker(node) == 0
        cluster.restart(node)
        for name in ("roll-one", "roll-all"):
            wait_for(lambda name=name: full_isrs(cluster, name, 6), f"full ISRs of {name} after restarting {node}")
        now = time.monotonic()
        wait_for(lambda now=now: all(s.acks_after(now) > 50 for s in streams), "the producers to go on")
    for s in streams:
        s.finish()
    for s in streams:
        s.check(cluster.bootstrap_servers)
    reader = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "roll-g"})
    got = reader.committed([TopicPartition("roll-one", p) for p in range(6)], timeout=30)
    reader.close()
    assert sorted((t.partition, t.offset) for t in got) == [(p, 3 + p) for p in range(6)]


def test_a_leader_paused_past_its_session_loses_nothing_it_acknowledges_after_waking(
        cluster: KBrokerCluster) -> None:
    create_topic(cluster, "zombie", partitions=1)
    leader = leader_of(cluster, "zombie", 0)
    stream = Stream(cluster.bootstrap_servers, "zombie", 1, acks="1", idempotent=False)
    for i in range(100):  # connected to the leader, nothing in flight
        stream.producer.produce("zombie", value=b"before-%d" % i, partition=0)
    assert stream.producer.flush(30) == 0
    proc = cluster.brokers[leader].proc
    assert proc is not None
    os.kill(proc.pid, signal.SIGSTOP)  # a long GC pause, a stalled VM
    try:
        # everything produced from now on reaches the paused leader's socket, not its log
        stream.start()
        others = ",".join(b.bootstrap_servers for n, b in cluster.brokers.items() if n != leader)
        wait_for(lambda: admin(others).list_topics("zombie", timeout=5).topics["zombie"].partitions[0]
                 .leader not in (-1, leader), "another broker to lead while the leader is paused", timeout=60)
        time.sleep(2)  # the producer keeps sending to the paused leader meanwhile
    finally:
        os.kill(proc.pid, signal.SIGCONT)
    woke = time.monotonic()
    wait_for(lambda: stream.acks_after(woke) > 200, "the producer to go on after the old leader woke")
    wait_for(lambda: full_isrs(cluster, "zombie", 1), "the old leader to rejoin the ISR")
    stream.finish()
    stream.check(cluster.bootstrap_servers)


def test_a_broker_whose_node_id_was_taken_while_it_was_away_stops_with_an_error(
        cluster: KBrokerCluster, tmp_path: Path) -> None:
    victim = cluster.brokers[3]
    assert victim.proc is not None
    os.kill(victim.proc.pid, signal.SIGSTOP)
    impostor = BrokerProcess(tmp_path / "impostor", extra_args=["--node-id", "3", "--cluster", cluster.etcd.url,
                                                                 "--set", "cluster.id=kbroker"])
    try:
        others = ",".join(b.bootstrap_servers for n, b in cluster.brokers.items() if n != 3)
        wait_for(lambda: 3 not in admin(others).list_topics(timeout=5).brokers, "broker 3's session to lapse")
        impostor.start(60)  # takes node id 3 while the paused broker holds no registration
    finally:
        os.kill(victim.proc.pid, signal.SIGCONT)
    try:
        code = victim.proc.wait(60)
    finally:
        impostor.stop()
    victim._close_log()
    assert code == 69, victim.log_tail()
    assert "node id 3 was taken by another broker" in victim.log_tail()
