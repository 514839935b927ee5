"""Losing brokers, the controller, a group's coordinator, or etcd itself — with real processes and clients.

Each test starts its own etcd and three brokers (``python -m broker --node-id N --cluster etcd://...``)
and breaks them with SIGKILL / SIGSTOP.  Waits are bounded (a broken cluster fails the test instead of
hanging it); nothing asserts how fast anything was.
"""

from __future__ import annotations

import os
import signal
import socket
import struct
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from cluster_helpers import admin, create_topic, leader_of, partition_info, segment_bytes, wait_for

from broker.testing.harness import BrokerProcess, KBrokerCluster
from protocol.api import ApiKey, decode_response, encode_request
from protocol.records import encode_batch

pytestmark = pytest.mark.slow


def raw_produce(host_port: str, topic: str, partition: int, values: list[bytes], acks: int = -1,
                timeout_ms: int = 10_000) -> int:
    """One Produce v9 request straight to a broker; returns the partition's error code."""
    host, port = host_port.rsplit(":", 1)
    batch = encode_batch([(None, v, [], int(time.time() * 1000)) for v in values])
    body = {"transactional_id": None, "acks": acks, "timeout_ms": timeout_ms,
            "topic_data": [{"name": topic, "partition_data": [{"index": partition, "records": batch}]}]}
    with socket.create_connection((host, int(port)), timeout=30) as s:
        s.sendall(encode_request(ApiKey.PRODUCE, 9, 1, "test", body))
        size = struct.unpack(">i", _recv(s, 4))[0]
        _, resp = decode_response(ApiKey.PRODUCE, 9, _recv(s, size))
    return int(resp.responses[0].partition_responses[0].error_code)


def _recv(s: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("closed")
        buf += chunk
    return buf


def consume_all(bootstrap: str, topic: str, partitions: int, expected: int) -> dict[int, list[tuple[int, bytes]]]:
    """Every record of the topic, per partition, as (offset, value), read with confluent-kafka."""
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"verify-{topic}-{time.time()}",
                  "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    out: dict[int, list[tuple[int, bytes]]] = {p: [] for p in range(partitions)}

    def done() -> bool:
        for m in c.consume(500, 0.5):
            if m.error() is None:
                out[m.partition()].append((m.offset(), m.value()))
        return sum(len(v) for v in out.values()) >= expected

    wait_for(done, f"{expected} records of {topic}", timeout=90)
    c.close()
    return out


class IdempotentStream:
    """A confluent-kafka producer (acks=all, idempotent) sending sequence numbers from a thread."""

    def __init__(self, bootstrap: str, topic: str, partitions: int) -> None:
        from confluent_kafka import Producer

        self.producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True,
                                  "linger.ms": 5, "message.timeout.ms": 120_000, "retry.backoff.ms": 50,
                                  "reconnect.backoff.ms": 50, "reconnect.backoff.max.ms": 500})
        self.topic = topic
        self.partitions = partitions
        self.acked: dict[int, tuple[int, int]] = {}
        self.ack_times: list[float] = []
        self.failed: dict[int, str] = {}
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.sent = 0
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self.stop.is_set():
            seq = self.sent
            self.sent += 1

            def cb(err: Any, msg: Any, seq: int = seq) -> None:
                with self.lock:
                    if err is None:
                        self.acked[seq] = (msg.partition(), msg.offset())
                        self.ack_times.append(time.monotonic())
                    else:
                        self.failed[seq] = str(err)

            while True:
                try:
                    self.producer.produce(self.topic, value=str(seq).encode(), partition=seq % self.partitions,
                                          on_delivery=cb)
                    break
                except BufferError:
                    self.producer.poll(0.05)
            self.producer.poll(0)
            time.sleep(0.002)

    def acks_after(self, t: float) -> int:
        with self.lock:
            return sum(1 for x in self.ack_times if x > t)

    def finish(self) -> None:
        self.stop.set()
        self.thread.join(30)
        assert self.producer.flush(120) == 0

    def check_exactly_once(self, bootstrap: str) -> None:
        assert not self.failed, f"deliveries failed: {list(self.failed.items())[:5]}"
        stored = consume_all(bootstrap, self.topic, self.partitions, len(self.acked))
        seen: dict[int, int] = {}
        for p, records in stored.items():
            seqs = [int(v) for _, v in records]
            assert seqs == sorted(seqs), f"partition {p} out of order"
            for offset, value in records:
                seq = int(value)
                assert seq not in seen, f"record {seq} stored twice"
                seen[seq] = offset
        for seq, (p, offset) in self.acked.items():
            assert seen.get(seq) == offset, f"acknowledged record {seq} not at offset {offset} of partition {p}"


def replicas_identical(cluster: KBrokerCluster, topic: str, partition: int) -> bool:
    return len({segment_bytes(b.data_dir, topic, partition) for b in cluster.brokers.values()}) == 1


def test_kill9_leader_under_idempotent_acks_all_producer(cluster: KBrokerCluster) -> None:
    create_topic(cluster, "fo", partitions=2)
    stream = IdempotentStream(cluster.bootstrap_servers, "fo", 2)
    stream.thread.start()
    wait_for(lambda: len(stream.acked) > 200, "the producer to get going")
    victim = leader_of(cluster, "fo", 0)
    killed_at = time.monotonic()
    cluster.kill(victim)
    wait_for(lambda: stream.acks_after(killed_at) > 200, "the producer to resume after the leader died", timeout=60)
    new_leader = leader_of(cluster, "fo", 0)
    assert new_leader not in (-1, victim)
    cluster.restart(victim)
    stream.finish()
    for p in range(2):
        wait_for(lambda p=p: (i := partition_info(cluster, "fo", p)) is not None and sorted(i.isrs) == [1, 2, 3],
                 "the restarted broker to rejoin the ISR")
    stream.check_exactly_once(cluster.bootstrap_servers)
    for p in range(2):
        wait_for(lambda p=p: replicas_identical(cluster, "fo", p), "replicas to be byte-identical")


def test_kill9_controller_another_takes_over(cluster: KBrokerCluster) -> None:
    controller = admin(cluster.bootstrap_servers).list_topics(timeout=10).controller_id
    assert controller in (1, 2, 3)
    cluster.kill(controller)
    wait_for(lambda: admin(cluster.bootstrap_servers).list_topics(timeout=10).controller_id not in (-1, controller),
             "a new controller")
    from confluent_kafka.admin import NewTopic

    client = admin(cluster.bootstrap_servers)
    client.create_topics([NewTopic("after", 3, 2)], operation_timeout=30)["after"].result(60)
    for p in range(3):
        wait_for(lambda p=p: leader_of(cluster, "after", p) in {1, 2, 3} - {controller}, "leaders for the new topic")


@pytest.mark.parametrize("epoch_checkpoint", ["kept", "torn"])
def test_divergent_tail_is_truncated_when_the_old_leader_returns(cluster: KBrokerCluster,
                                                                epoch_checkpoint: str) -> None:
    """With its leader-epoch checkpoint torn, the old leader cannot have its tail checked against the
    leader's: it truncates to its high watermark (as Kafka does for a follower without epochs)."""
    create_topic(cluster, "div", partitions=1)
    leader = leader_of(cluster, "div", 0)
    followers = [n for n in (1, 2, 3) if n != leader]
    assert raw_produce(cluster.brokers[leader].bootstrap_servers, "div", 0, [b"r%d" % i for i in range(10)]) == 0
    wait_for(lambda: replicas_identical(cluster, "div", 0), "replication of the first records")
    for f in followers:
        os.kill(cluster.brokers[f].proc.pid, signal.SIGSTOP)  # type: ignore[union-attr]
    try:
        # their fetches parked at the leader expire (replica.fetch.wait.max.ms) and none follow
        time.sleep(1.0)
        # acks=1: acknowledged by the leader alone, which then dies before anyone copied it
        assert raw_produce(cluster.brokers[leader].bootstrap_servers, "div", 0, [b"lost-%d" % i for i in range(5)],
                           acks=1) == 0
        cluster.kill(leader)
    finally:
        for f in followers:
            os.kill(cluster.brokers[f].proc.pid, signal.SIGCONT)  # type: ignore[union-attr]
    wait_for(lambda: leader_of(cluster, "div", 0) in followers, "a follower to take over")
    new_leader = leader_of(cluster, "div", 0)
    assert raw_produce(cluster.brokers[new_leader].bootstrap_servers, "div", 0,
                       [b"new-%d" % i for i in range(5)]) == 0
    if epoch_checkpoint == "torn":  # one of its two entries lost
        (cluster.brokers[leader].data_dir / "div-0" / "leader-epoch-checkpoint").write_text("0\n2\n0 0\n")
    cluster.restart(leader)
    wait_for(lambda: replicas_identical(cluster, "div", 0), "the old leader to drop its divergent tail")
    values = [v for _, v in consume_all(cluster.bootstrap_servers, "div", 1, 15)[0]]
    assert values == [b"r%d" % i for i in range(10)] + [b"new-%d" % i for i in range(5)]


def test_min_insync_replicas_refuses_writes_it_cannot_replicate(cluster: KBrokerCluster) -> None:
    create_topic(cluster, "mis", partitions=1, config={"min.insync.replicas": "2"})
    leader = leader_of(cluster, "mis", 0)
    addr = cluster.brokers[leader].bootstrap_servers
    assert raw_produce(addr, "mis", 0, [b"a%d" % i for i in range(20)]) == 0
    down = [n for n in (1, 2, 3) if n != leader]
    for n in down:
        cluster.kill(n)
    wait_for(lambda: (i := partition_info(cluster, "mis", 0)) is not None and list(i.isrs) == [leader],
             "the ISR to shrink to the leader")
    assert raw_produce(addr, "mis", 0, [b"refused"]) == 19  # NOT_ENOUGH_REPLICAS
    assert raw_produce(addr, "mis", 0, [b"acks1-ok"], acks=1) == 0
    for n in down:
        cluster.restart(n)
    wait_for(lambda: (i := partition_info(cluster, "mis", 0)) is not None and sorted(i.isrs) == [1, 2, 3],
             "the ISR to grow back")
    assert raw_produce(addr, "mis", 0, [b"b0"]) == 0
    values = [v for _, v in consume_all(cluster.bootstrap_servers, "mis", 1, 22)[0]]
    assert values == [b"a%d" % i for i in range(20)] + [b"acks1-ok", b"b0"]
    wait_for(lambda: replicas_identical(cluster, "mis", 0), "replicas to converge")


def test_etcd_outage_during_traffic(cluster: KBrokerCluster) -> None:
    create_topic(cluster, "etcd-down", partitions=2)
    stream = IdempotentStream(cluster.bootstrap_servers, "etcd-down", 2)
    stream.thread.start()
    wait_for(lambda: len(stream.acked) > 100, "the producer to get going")
    cluster.etcd.stop()
    stopped_at = time.monotonic()
    wait_for(lambda: stream.acks_after(stopped_at) > 200, "acks=all writes to continue without etcd")
    time.sleep(2)  # longer than a broker session: nobody may lose leadership while etcd is away
    cluster.etcd.start()
    stream.finish()
    create_topic(cluster, "after-etcd", partitions=1)
    stream.check_exactly_once(cluster.bootstrap_servers)
    for node, b in cluster.brokers.items():
        assert b.alive(), f"broker {node} died:\n{b.log_tail()}"


def test_duplicate_node_id_is_refused(cluster: KBrokerCluster, tmp_path: Path) -> None:
    dup = BrokerProcess(tmp_path / "dup", extra_args=["--node-id", "2", "--cluster", cluster.etcd.url,
                                                       "--set", "cluster.id=kbroker"])
    dup.start(wait=False)
    assert dup.proc is not None
    code = dup.proc.wait(60)
    dup._close_log()
    assert code != 0
    assert "node id 2 is already registered" in dup.log_tail()


def test_controlled_shutdown_moves_leadership_and_elect_leaders_brings_it_back(cluster: KBrokerCluster) -> None:
    from confluent_kafka import ElectionType, TopicPartition

    create_topic(cluster, "pref", partitions=3)
    by_leader = {p: leader_of(cluster, "pref", p) for p in range(3)}
    victim = by_leader[0]
    led = [p for p, n in by_leader.items() if n == victim]
    assert cluster.stop_broker(victim) == 0  # SIGTERM: it deregisters and hands its leaderships over
    for p in led:
        info = wait_for(lambda p=p: (i := partition_info(cluster, "pref", p)) is not None
                        and i.leader not in (-1, victim) and i, "leadership to move on shutdown", timeout=20)
        assert victim not in info.isrs
    cluster.restart(victim)
    for p in led:
        wait_for(lambda p=p: (i := partition_info(cluster, "pref", p)) is not None and victim in i.isrs,
                 "the restarted broker to rejoin the ISR")
        assert leader_of(cluster, "pref", p) != victim  # preferred election waits for the imbalance check
    client = admin(cluster.bootstrap_servers)
    client.elect_leaders(ElectionType.PREFERRED, [TopicPartition("pref", p) for p in led]).result(30)
    for p in led:
        wait_for(lambda p=p: leader_of(cluster, "pref", p) == victim, "the preferred replica to lead again")
