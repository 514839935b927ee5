"""Operating a cluster through its life, with real processes and clients: rolling restarts that lose
nothing, a leader paused past its session (a zombie), a node id taken while its broker was away.

Each test starts its own etcd and three brokers.  Waits are bounded; nothing asserts how fast
anything was (benchmarks/cluster_lifecycle.py measures that).
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest
from cluster_helpers import Stream, admin, create_topic, full_isrs, leader_of, wait_for

from broker.testing.harness import BrokerProcess, KBrokerCluster

pytestmark = pytest.mark.slow


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


def test_sigterm_stops_a_broker_still_waiting_for_the_metadata_store(tmp_path: Path) -> None:
    """Starting waits up to a minute for an unreachable metadata store; SIGTERM meanwhile stops it at once
    (exit 0), as an orchestrator stopping a broker that never came up expects."""
    import subprocess
    import sys

    from broker.testing.harness import free_port

    log_path = tmp_path / "broker.log"
    with open(log_path, "wb") as log_file:
        proc = subprocess.Popen(
            [sys.executable, "-m", "broker", "--node-id", "1", "--host", "127.0.0.1", "--port", str(free_port()),
             "--data-dir", str(tmp_path / "data"), "--cluster", f"etcd://127.0.0.1:{free_port()}",
             "--metrics-port", "0", "--console-port", "none"],
            stdout=log_file, stderr=subprocess.STDOUT)
    try:
        wait_for(lambda: b"retrying" in log_path.read_bytes(), "the broker to wait for the metadata store")
        proc.send_signal(signal.SIGTERM)
        # the store is retried for 60 s: well before then, the broker is gone
        assert proc.wait(timeout=30) == 0, log_path.read_text()
        assert "stopped while starting" in log_path.read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
