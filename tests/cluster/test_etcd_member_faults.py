"""One etcd member of three stalls (SIGSTOP) or dies (SIGKILL): no broker may lose its registration.

Real processes: a three-member etcd on 127.0.0.1 (etcd's default timing), three brokers
(``--cluster etcd://m0,m1,m2``, so broker N starts on member N mod 3) and an idempotent producer.
Across each fault the brokers' registrations keep their epochs (no lease expired, nobody registered
again), the controller and every partition's leader and leader epoch stay as they were, the
Metadata broker list never loses a broker, the producer keeps being acknowledged, and the brokers
that were on the faulty member moved to another.
"""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from cluster_helpers import admin, create_topic, wait_for
from peers import require_etcd
from test_cluster_failover import IdempotentStream

from broker.cluster.etcd_kv import EtcdKV
from broker.cluster.records import PartitionRecord
from broker.testing.harness import BrokerProcess, EtcdCluster, KBrokerCluster

pytestmark = pytest.mark.slow

SESSION_S = 3.0  # broker.session.timeout.ms's default
TOPIC = "steady"


def store_state(cluster: KBrokerCluster, endpoints: list[tuple[str, int]]) -> dict[str, Any]:
    """What a lost lease would change, read from etcd through ``endpoints``: each broker's registration
    epoch (its key's create revision), the controller's, and each partition's leader and leader epoch."""
    async def read() -> dict[str, Any]:
        kv = EtcdKV(endpoints, f"/kbroker/{cluster.cluster_id}/")
        try:
            brokers, _ = await kv.get_prefix("brokers/")
            partitions, _ = await kv.get_prefix("partitions/")
            controller = await kv.get("controller")
        finally:
            await kv.close()
        leaders = {}
        for item in partitions:
            record = PartitionRecord.decode(item.value)
            leaders[item.key] = (record.leader, record.leader_epoch)
        return {"registrations": {b.key: b.create_revision for b in brokers},
                "controller": None if controller is None else (controller.value, controller.create_revision),
                "leaders": leaders}

    return asyncio.run(read())


class MetadataMonitor:
    """Asks for Metadata every 0.2 s from a thread and keeps every broker list and leader map that
    differs from the first one seen."""

    def __init__(self, cluster: KBrokerCluster) -> None:
        self.client = admin(cluster.bootstrap_servers)
        self.first: tuple[Any, ...] | None = None
        self.changes: list[tuple[Any, ...]] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.stop.wait(0.2):
            try:
                md = self.client.list_topics(TOPIC, timeout=5)
            except Exception:  # a slow answer is no evidence either way
                continue
            seen = (sorted(md.brokers), {p: info.leader for p, info in md.topics[TOPIC].partitions.items()})
            if self.first is None:
                self.first = seen
            elif seen != self.first:
                self.changes.append(seen)

    def close(self) -> None:
        self.stop.set()
        self.thread.join(10)


def moved_off(broker: BrokerProcess, endpoint: tuple[str, int], log_from: int) -> bool:
    """The broker's log (from byte ``log_from``) says it left ``endpoint``."""
    text = broker.log_path.read_bytes()[log_from:].decode(errors="replace")
    return f"etcd endpoint {endpoint[0]}:{endpoint[1]} " in text and "moving to" in text


def survive(cluster: KBrokerCluster, stream: IdempotentStream, healthy: list[tuple[str, int]],
            fault: str, brokers_moving: list[int], endpoint: tuple[str, int], do_fault: Any) -> None:
    """Apply ``do_fault``; over three sessions nothing that a lost lease would change may change."""
    before = store_state(cluster, healthy)
    assert sorted(before["registrations"]) == ["brokers/1", "brokers/2", "brokers/3"]
    log_sizes = {n: cluster.brokers[n].log_path.stat().st_size for n in brokers_moving}
    monitor = MetadataMonitor(cluster)
    wait_for(lambda: monitor.first is not None, "a first Metadata answer")
    do_fault()
    faulted_at = time.monotonic()
    try:
        # a lease not kept alive through the fault would be gone after one session: watch three
        wait_for(lambda: time.monotonic() > faulted_at + 3 * SESSION_S
                 and stream.acks_after(faulted_at + 3 * SESSION_S) >= 20,
                 f"the producer to be acknowledged three sessions after the etcd member {fault}", timeout=90)
        after = store_state(cluster, healthy)
    finally:
        monitor.close()
    changed = {what: {k: (v, after[what].get(k)) for k, v in before[what].items() if after[what].get(k) != v}
               if isinstance(before[what], dict) else (before[what], after[what])
               for what in before if after[what] != before[what]}
    assert not changed, f"the etcd member {fault} and the cluster changed (a lease expired): {changed}"
    assert not monitor.changes, f"Metadata changed while the etcd member {fault}: {monitor.first} -> {monitor.changes}"
    for node in brokers_moving:
        wait_for(lambda node=node: moved_off(cluster.brokers[node], endpoint, log_sizes[node]),
                 f"broker {node} to leave the etcd member that {fault}")
    assert not stream.failed, f"deliveries failed: {list(stream.failed.items())[:5]}"


def test_a_stalled_then_a_dead_etcd_member_expires_no_broker_lease(tmp_path: Path) -> None:
    require_etcd()
    with KBrokerCluster(3, tmp_path / "cluster", etcd_members=3) as cluster:
        etcd = cluster.etcd
        assert isinstance(etcd, EtcdCluster)
        m0, m1, m2 = etcd.members
        create_topic(cluster, TOPIC, partitions=3)
        stream = IdempotentStream(cluster.bootstrap_servers, TOPIC, 3)
        stream.thread.start()
        try:
            wait_for(lambda: len(stream.acked) > 100, "the producer to get going")

            # 1. The first endpoint (where broker 3 starts) stalls while it follows: its clients must leave it.
            etcd.move_leader(1)
            survive(cluster, stream, [m1.endpoint, m2.endpoint], "stalled", [3], m0.endpoint, m0.pause)
            m0.resume()
            wait_for(m0.healthy, "the stalled etcd member to be back")

            # 2. The leading member, which broker 1 started on and broker 3 moved to, dies: an election too.
            etcd.move_leader(1)
            survive(cluster, stream, [m0.endpoint, m2.endpoint], "died", [1, 3], m1.endpoint, m1.kill9)
            m1.start()

            stream.finish()
            stream.check_exactly_once(cluster.bootstrap_servers)
            for node, b in cluster.brokers.items():
                assert b.alive(), f"broker {node} died:\n{b.log_tail()}"
        finally:
            stream.stop.set()
