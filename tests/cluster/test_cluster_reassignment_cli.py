"""``kbroker cluster reassign / rebalance / decommission`` and the admin client's reassignment calls against
real brokers on etcd: a fourth broker joins and gets its share, is decommissioned again, a dead broker
is replaced, a throttled move is verified and cancelled.

Each test starts etcd and brokers 1-3 (broker 4 of the same cluster joins when a test starts it).
Waits are bounded.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cluster_helpers import admin, create_topic, partition_info, wait_for
from peers import require_etcd

from broker.testing.harness import KBrokerCluster
from client import Admin, TopicPartition
from protocol.error_codes import ErrorCode

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
TOPIC = "orders"
PARTITIONS = 6
RECORDS = 300


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[KBrokerCluster]:
    """Brokers 1-3 running; broker 4 (same cluster, not started) for the tests that add one."""
    require_etcd()
    c = KBrokerCluster(4, tmp_path / "cluster")
    try:
        c.etcd.start()
        for node in (1, 2, 3):
            c.brokers[node].start(wait=False)
        for node in (1, 2, 3):
            c.brokers[node].wait_ready(60)
        yield c
    finally:
        c.stop()


def kbroker(cluster: KBrokerCluster, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kbroker_cli", "-b", cluster.bootstrap_servers, *args],
                          capture_output=True, text=True, timeout=timeout, cwd=str(REPO))


def ok(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 0, f"exit {proc.returncode}\nstdout: {proc.stdout}\nstderr: {proc.stderr}"
    return proc.stdout


def start_broker(cluster: KBrokerCluster, node: int) -> None:
    cluster.brokers[node].start(60)
    wait_for(lambda: node in admin(cluster.bootstrap_servers).list_topics(timeout=10).brokers,
             f"broker {node} to register")


def replicas(cluster: KBrokerCluster, topic: str = TOPIC, partitions: int = PARTITIONS) -> dict[int, list[int]]:
    md = admin(cluster.bootstrap_servers).list_topics(topic, timeout=10)
    return {p: list(md.topics[topic].partitions[p].replicas) for p in range(partitions)}


def fully_in_sync(cluster: KBrokerCluster, topic: str = TOPIC, partitions: int = PARTITIONS) -> bool:
    for p in range(partitions):
        info = partition_info(cluster, topic, p)
        if info is None or info.leader < 0 or sorted(info.isrs) != sorted(info.replicas):
            return False
    return True


def no_reassignments(cluster: KBrokerCluster) -> bool:
    return ok(kbroker(cluster, "cluster", "reassign", "--list")).strip() == "No partition reassignments found."


def produce(cluster: KBrokerCluster, count: int = RECORDS, size: int = 100) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all", "linger.ms": 5})
    failed: list[Any] = []
    for i in range(count):
        producer.produce(TOPIC, value=b"%06d" % i + b"x" * size, partition=i % PARTITIONS,
                         on_delivery=lambda err, msg: failed.append(err) if err else None)
    assert producer.flush(60) == 0 and not failed


def consume_all(cluster: KBrokerCluster, count: int = RECORDS) -> set[bytes]:
    from confluent_kafka import Consumer

    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": f"check-{time.monotonic()}",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe([TOPIC])
    seen: set[bytes] = set()
    deadline = time.monotonic() + 60
    try:
        while len(seen) < count and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                seen.add(msg.value()[:6])
    finally:
        consumer.close()
    return seen


def write_plan(path: Path, assignment: dict[int, list[int]], topic: str = TOPIC) -> str:
    path.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": topic, "partition": p, "replicas": r} for p, r in sorted(assignment.items())]}))
    return str(path)


def describe_configs(cluster: KBrokerCluster, *which: str) -> dict[str, str]:
    return {e["name"]: e["value"] for e in json.loads(ok(kbroker(cluster, "configs", "describe", *which, "--json")))}


# -- what works before the broker side exists ---------------------------------------------------------


def test_rebalance_dry_run_plans_the_new_brokers_share(cluster: KBrokerCluster, tmp_path: Path) -> None:
    create_topic(cluster, TOPIC, partitions=PARTITIONS, rf=3)
    before = replicas(cluster)
    start_broker(cluster, 4)
    proc = kbroker(cluster, "cluster", "rebalance", "--dry-run", "--json")
    plan = json.loads(ok(proc))
    assert plan["version"] == 1
    after = dict(before)
    for entry in plan["partitions"]:
        if entry["topic"] == TOPIC:
            after[entry["partition"]] = entry["replicas"]
    counts = Counter(b for r in after.values() for b in r)
    assert sorted(counts.values()) == [4, 4, 5, 5] and counts[4] >= 4  # 18 replicas over four brokers
    assert max(Counter(r[0] for r in after.values()).values()) - min(
        Counter(r[0] for r in after.values()).get(b, 0) for b in (1, 2, 3, 4)) <= 1
    text = ok(kbroker(cluster, "cluster", "rebalance", "--dry-run"))
    assert text.startswith("Rebalancing over brokers 1,2,3,4: ")
    assert replicas(cluster) == before  # a dry run moves nothing


def test_decommission_of_an_unknown_broker_is_refused(cluster: KBrokerCluster) -> None:
    create_topic(cluster, TOPIC, partitions=2, rf=3)
    proc = kbroker(cluster, "cluster", "decommission", "9")
    assert proc.returncode == 1
    assert proc.stderr == ("kbroker: cannot decommission broker 9: it is not in the cluster (brokers 1,2,3) "
                           "and holds no replica\n")


def test_elect_leaders_reports_per_partition_results(cluster: KBrokerCluster) -> None:
    create_topic(cluster, TOPIC, partitions=2, rf=3)

    async def main() -> dict[TopicPartition, Any]:
        async with Admin(bootstrap_servers=cluster.bootstrap_servers) as client:
            return await client.elect_leaders([TopicPartition(TOPIC, 0), TopicPartition(TOPIC, 7)])

    errors = asyncio.run(main())
    assert errors[TopicPartition(TOPIC, 7)].code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert errors[TopicPartition(TOPIC, 0)].code == ErrorCode.ELECTION_NOT_NEEDED


# -- with the broker side ---------------------------------------------------------------------------


def test_client_surfaces_kafkas_per_partition_errors(cluster: KBrokerCluster) -> None:
    create_topic(cluster, TOPIC, partitions=2, rf=3)

    async def main() -> tuple[dict[TopicPartition, Any], dict[TopicPartition, Any], dict[TopicPartition, Any]]:
        async with Admin(bootstrap_servers=cluster.bootstrap_servers) as client:
            refused = await client.alter_partition_reassignments(
                {TopicPartition(TOPIC, 7): [1, 2, 3], TopicPartition(TOPIC, 0): [1, 2, 9],
                 TopicPartition(TOPIC, 1): None})
            no_rf_change = await client.alter_partition_reassignments(
                {TopicPartition(TOPIC, 0): [1, 2]}, allow_replication_factor_change=False)
            listed = await client.list_partition_reassignments()
            return refused, no_rf_change, listed

    refused, no_rf_change, listed = asyncio.run(main())
    assert {tp: e.code for tp, e in refused.items()} == {
        TopicPartition(TOPIC, 7): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        TopicPartition(TOPIC, 0): ErrorCode.INVALID_REPLICA_ASSIGNMENT,
        TopicPartition(TOPIC, 1): ErrorCode.NO_REASSIGNMENT_IN_PROGRESS}
    assert {tp: e.code for tp, e in no_rf_change.items()} == {
        TopicPartition(TOPIC, 0): ErrorCode.INVALID_REPLICATION_FACTOR}
    assert listed == {}


def test_a_new_broker_gets_its_share_and_is_decommissioned_again(cluster: KBrokerCluster) -> None:
    create_topic(cluster, TOPIC, partitions=PARTITIONS, rf=3)
    produce(cluster)
    start_broker(cluster, 4)

    out = ok(kbroker(cluster, "cluster", "rebalance"))
    assert "Successfully started partition reassignment" in out
    wait_for(lambda: no_reassignments(cluster), "the rebalance to complete", timeout=90)
    wait_for(lambda: fully_in_sync(cluster), "full ISRs after the rebalance", timeout=60)
    counts = Counter(b for r in replicas(cluster).values() for b in r)
    assert sorted(counts.values()) == [4, 4, 5, 5] and counts[4] >= 4
    assert ok(kbroker(cluster, "cluster", "rebalance", "--dry-run")).startswith(
        "Replicas and preferred leaders are balanced")

    out = ok(kbroker(cluster, "cluster", "decommission", "4", "--wait", "--wait-timeout", "90", timeout=150))
    assert out.endswith("Broker 4 holds no replicas and leads no partitions: it can be stopped.\n")
    assert all(4 not in r for r in replicas(cluster).values())
    assert all(partition_info(cluster, TOPIC, p).leader != 4 for p in range(PARTITIONS))
    cluster.stop_broker(4)
    wait_for(lambda: fully_in_sync(cluster), "full ISRs without broker 4", timeout=60)
    assert consume_all(cluster) == {b"%06d" % i for i in range(RECORDS)}


def test_throttled_reassignment_is_verified_and_its_throttle_cleared(cluster: KBrokerCluster, tmp_path: Path) -> None:
    create_topic(cluster, TOPIC, partitions=PARTITIONS, rf=3)
    produce(cluster)
    start_broker(cluster, 4)
    current = replicas(cluster)
    target = {0: [4 if b == 3 else b for b in current[0]]}  # broker 3's replica of partition 0 moves to 4
    plan = write_plan(tmp_path / "plan.json", target)

    out = ok(kbroker(cluster, "cluster", "reassign", "--execute", plan, "--throttle", "10000000"))
    rollback = out.split("Current partition replica assignment\n\n", 1)[1].split("\n", 1)[0]
    assert json.loads(rollback)["partitions"][0]["replicas"] == current[0]
    assert "Save this to use as the --reassignment-json-file option during rollback" in out
    assert "The inter-broker throttle limit was set to 10000000 B/s" in out
    topic_configs = describe_configs(cluster, "--topic", TOPIC)
    assert topic_configs["leader.replication.throttled.replicas"] == ",".join(f"0:{b}" for b in sorted(current[0]))
    assert topic_configs["follower.replication.throttled.replicas"] == "0:4"
    assert describe_configs(cluster, "--broker", "4")["follower.replication.throttled.rate"] == "10000000"

    def verified() -> str:
        text = ok(kbroker(cluster, "cluster", "reassign", "--verify", plan))
        return text if "Reassignment of partition orders-0 is completed." in text else ""

    text = wait_for(verified, "the reassignment to complete", timeout=90)
    assert "Clearing broker-level throttles on brokers 1,2,3,4" in text
    assert "Clearing topic-level throttles on topic orders" in text
    assert replicas(cluster)[0] == target[0]
    assert not describe_configs(cluster, "--topic", TOPIC).get("leader.replication.throttled.replicas")
    assert describe_configs(cluster, "--broker", "4").get("follower.replication.throttled.rate") in (
        None, "", str(2**63 - 1))
    wait_for(lambda: fully_in_sync(cluster), "full ISRs after the move", timeout=60)
    assert consume_all(cluster) == {b"%06d" % i for i in range(RECORDS)}


def test_a_dead_broker_is_replaced_by_a_new_one(cluster: KBrokerCluster, tmp_path: Path) -> None:
    create_topic(cluster, TOPIC, partitions=PARTITIONS, rf=3)
    produce(cluster)
    cluster.kill(3)
    start_broker(cluster, 4)
    plan = write_plan(tmp_path / "replace.json", {p: [4 if b == 3 else b for b in r]
                                                  for p, r in replicas(cluster).items()})
    ok(kbroker(cluster, "cluster", "reassign", "--execute", plan))

    def done() -> bool:
        text = ok(kbroker(cluster, "cluster", "reassign", "--verify", plan))
        return text.count("is completed.") == PARTITIONS

    wait_for(done, "the replacement to complete", timeout=90)
    wait_for(lambda: fully_in_sync(cluster), "full ISRs with broker 4", timeout=60)
    assert all(sorted(r) == [1, 2, 4] for r in replicas(cluster).values())
    assert consume_all(cluster) == {b"%06d" % i for i in range(RECORDS)}


def test_a_slow_reassignment_is_cancelled(cluster: KBrokerCluster, tmp_path: Path) -> None:
    create_topic(cluster, TOPIC, partitions=PARTITIONS, rf=3)
    produce(cluster, count=2000, size=1000)  # ~2 MB: minutes at the throttle below
    start_broker(cluster, 4)
    current = replicas(cluster)
    plan = write_plan(tmp_path / "slow.json", {p: [*r[:2], 4] for p, r in current.items()})
    ok(kbroker(cluster, "cluster", "reassign", "--execute", plan, "--throttle", "10000"))
    listed = ok(kbroker(cluster, "cluster", "reassign", "--list"))
    assert listed.startswith("Current partition reassignments:\n")
    assert "adding: 4." in listed
    out = ok(kbroker(cluster, "cluster", "reassign", "--cancel", plan))
    assert out.startswith("Successfully cancelled partition reassignment")
    assert no_reassignments(cluster)
    assert all(sorted(r) == sorted(current[p]) for p, r in replicas(cluster).items())
    assert not describe_configs(cluster, "--topic", TOPIC).get("leader.replication.throttled.replicas")
