"""Moving partitions between brokers (KIP-455) with real processes, driven by an outside client
(kafka-python's admin): a broker lost for good replaced by a new one, the replication factor raised
and lowered.  Waits are bounded; nothing asserts how fast anything was."""

from __future__ import annotations

from pathlib import Path

import pytest
from cluster_helpers import Stream, create_topic, full_isrs, partition_info, segment_bytes, wait_for

from broker.testing.harness import KBrokerCluster

pytestmark = pytest.mark.slow


def kafka_admin(cluster: KBrokerCluster):  # type: ignore[no-untyped-def]
    from kafka.admin import KafkaAdminClient

    return KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers, request_timeout_ms=30_000)


def replicas(cluster: KBrokerCluster, topic: str, partition: int) -> list[int]:
    info = partition_info(cluster, topic, partition)
    return [] if info is None else list(info.replicas)


def reassign(cluster: KBrokerCluster, plan: dict[tuple[str, int], list[int] | None]) -> None:
    from kafka import TopicPartition

    admin = kafka_admin(cluster)
    try:
        result = admin.alter_partition_reassignments({TopicPartition(t, p): r for (t, p), r in plan.items()})
        assert all(err is None for err in result.values()), result
        wait_for(lambda: not admin.list_partition_reassignments(), "the reassignments to complete", timeout=120)
    finally:
        admin.close()


def test_a_broker_lost_for_good_is_replaced_by_a_new_one(cluster: KBrokerCluster) -> None:
    create_topic(cluster, "replace", partitions=4)
    stream = Stream(cluster.bootstrap_servers, "replace", 4, acks="all", idempotent=True).start()
    wait_for(lambda: len(stream.acked) > 200, "the producer to get going")
    cluster.kill(3)  # the machine is gone
    wait_for(lambda: (md := cluster_admin(cluster).list_topics(timeout=5)).controller_id not in (-1, 3)
             and 3 not in md.brokers, "the cluster to notice broker 3 is gone")
    cluster.add_broker(4)
    plan = {}
    for topic in ("replace", "__consumer_offsets"):
        md = partition_info(cluster, topic, 0)
        assert md is not None
        count = len(cluster_topic_partitions(cluster, topic))
        for p in range(count):
            current = replicas(cluster, topic, p)
            if 3 in current:
                plan[(topic, p)] = [4 if r == 3 else r for r in current]
    reassign(cluster, plan)
    wait_for(lambda: full_isrs(cluster, "replace", 4, brokers=[1, 2, 4]), "full ISRs on brokers 1, 2 and 4")
    stream.finish()
    stream.check(cluster.bootstrap_servers)
    for p in range(4):
        wait_for(lambda p=p: len({segment_bytes(cluster.brokers[b].data_dir, "replace", p) for b in (1, 2, 4)}) == 1,
                 "the new replica to hold the same bytes")


def cluster_topic_partitions(cluster: KBrokerCluster, topic: str) -> list[int]:
    from cluster_helpers import admin

    md = admin(cluster.bootstrap_servers).list_topics(topic, timeout=10)
    return sorted(md.topics[topic].partitions)


def test_the_replication_factor_is_raised_and_lowered(cluster: KBrokerCluster, tmp_path: Path) -> None:
    from confluent_kafka import Producer

    create_topic(cluster, "rf", partitions=2, rf=1)
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all"})
    for i in range(200):
        producer.produce("rf", value=b"v%d" % i, partition=i % 2)
    assert producer.flush(30) == 0
    before = {p: replicas(cluster, "rf", p) for p in range(2)}
    reassign(cluster, {("rf", p): before[p] + [b for b in (1, 2, 3) if b not in before[p]] for p in range(2)})
    wait_for(lambda: full_isrs(cluster, "rf", 2), "three in-sync replicas of each partition")
    for p in range(2):
        wait_for(lambda p=p: len({segment_bytes(b.data_dir, "rf", p) for b in cluster.brokers.values()}) == 1,
                 "every replica to hold the same bytes")
    # 3 -> 2, dropping the first (preferred) replica: leadership moves off it before it leaves
    lowered = {p: replicas(cluster, "rf", p)[1:] for p in range(2)}
    reassign(cluster, {("rf", p): lowered[p] for p in range(2)})
    for p in range(2):
        wait_for(lambda p=p: sorted(replicas(cluster, "rf", p)) == sorted(lowered[p]), "two replicas")
        dropped = ({1, 2, 3} - set(lowered[p])).pop()
        wait_for(lambda p=p, d=dropped: not (cluster.brokers[d].data_dir / f"rf-{p}").exists(),
                 "the dropped replica to delete its log")
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "rf-check",
                  "auto.offset.reset": "earliest"})
    c.assign([TopicPartition("rf", p, 0) for p in range(2)])
    got: list[bytes] = []
    wait_for(lambda: got.extend(m.value() for m in c.consume(500, 0.5) if m.error() is None) or len(got) >= 200,
             "every record back")
    c.close()
    assert sorted(got) == sorted(b"v%d" % i for i in range(200))


def set_configs(cluster: KBrokerCluster, topic: str, topic_configs: dict[str, str], rate: int | None,
                brokers: list[int]) -> None:
    """Throttle a reassignment as Kafka's tool does: the topic's throttled replicas, and the rates on the
    brokers involved (None removes them)."""
    from confluent_kafka.admin import (
        AdminClient,
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
        ResourceType,
    )

    # generous timeouts: a loaded machine may take seconds to answer while the copy runs
    client = AdminClient({"bootstrap.servers": cluster.bootstrap_servers, "socket.timeout.ms": 30_000})
    op = AlterConfigOpType.SET if rate is not None else AlterConfigOpType.DELETE
    resources = [ConfigResource(ResourceType.TOPIC, topic, incremental_configs=[
        ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET if v else AlterConfigOpType.DELETE)
        for k, v in topic_configs.items()])]
    for b in brokers:
        resources.append(ConfigResource(ResourceType.BROKER, str(b), incremental_configs=[
            ConfigEntry(name, str(rate or ""), incremental_operation=op)
            for name in ("leader.replication.throttled.rate", "follower.replication.throttled.rate")]))
    for resource in resources:  # confluent-kafka takes one broker resource per call
        for future in client.incremental_alter_configs([resource], request_timeout=30).values():
            future.result(60)


def cluster_admin(cluster: KBrokerCluster):  # type: ignore[no-untyped-def]
    from cluster_helpers import admin

    return admin(cluster.bootstrap_servers)


def fill(cluster: KBrokerCluster, topic: str, mb: int) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all", "linger.ms": 20,
                         "compression.type": "none"})
    payload = bytes(range(256)) * 40  # 10 KiB, incompressible enough
    for _ in range(mb * 100):
        while True:
            try:
                producer.produce(topic, value=payload, partition=0)
                break
            except BufferError:
                producer.poll(0.05)
    assert producer.flush(60) == 0


def test_a_throttled_reassignment_moves_at_about_the_rate_and_survives_kill_9_of_the_controller_and_the_new_replica(
        cluster: KBrokerCluster) -> None:
    import time

    from confluent_kafka import Producer
    from kafka import TopicPartition

    create_topic(cluster, "slow", partitions=1, rf=1)
    fill(cluster, "slow", 6)
    source = replicas(cluster, "slow", 0)[0]
    new = next(b for b in (1, 2, 3) if b != source)
    rate = 1_000_000
    set_configs(cluster, "slow", {"leader.replication.throttled.replicas": f"0:{source}",
                                  "follower.replication.throttled.replicas": f"0:{new}"}, rate, [source, new])
    started = time.monotonic()
    admin = kafka_admin(cluster)
    try:
        assert admin.alter_partition_reassignments({TopicPartition("slow", 0): [source, new]}) == {
            TopicPartition("slow", 0): None}
        # producers keep being served while the copy runs
        producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all"})
        for i in range(50):
            producer.produce("slow", value=b"during-%d" % i, partition=0)
        assert producer.flush(30) == 0
        copied = lambda: (cluster.brokers[new].data_dir / "slow-0").exists() and sum(  # noqa: E731
            f.stat().st_size for f in (cluster.brokers[new].data_dir / "slow-0").glob("*.log"))
        wait_for(lambda: copied() and copied() > 1_500_000, "the copy to be under way")
        # the controller dies mid-copy, then the new replica itself
        controller = cluster_admin(cluster).list_topics(timeout=10).controller_id
        if controller not in (source,):
            cluster.kill(controller)
            cluster.restart(controller)
        assert admin.list_partition_reassignments(), "the reassignment is still in progress"
        cluster.kill(new)
        cluster.restart(new)
        wait_for(lambda: not admin.list_partition_reassignments(), "the reassignment to complete", timeout=120)
    finally:
        admin.close()
    elapsed = time.monotonic() - started
    # 6 MB at 1 MB/s, a window's worth let through at once: it cannot have been much quicker
    assert elapsed > 3.0, f"a throttled 6 MB copy took only {elapsed:.1f} s"
    assert sorted(replicas(cluster, "slow", 0)) == sorted([source, new])
    wait_for(lambda: len({segment_bytes(cluster.brokers[b].data_dir, "slow", 0) for b in (source, new)}) == 1,
             "both replicas to hold the same bytes")
    set_configs(cluster, "slow", {"leader.replication.throttled.replicas": "",
                                  "follower.replication.throttled.replicas": ""}, None, [source, new])


def test_node_add_autobalancing_gives_a_new_broker_its_share(tmp_path: Path) -> None:
    from peers import require_etcd

    require_etcd()
    with KBrokerCluster(3, tmp_path / "c", settings={"partition.autobalancer.mode": "node_add"}) as c:
        create_topic(c, "spread", partitions=6, rf=2)
        c.add_broker(4)
        wait_for(lambda: sum(4 in replicas(c, "spread", p) for p in range(6)) >= 3, "broker 4 to get its share",
                 timeout=120)
        admin = kafka_admin(c)
        try:
            wait_for(lambda: not admin.list_partition_reassignments(), "the moves to complete", timeout=120)
        finally:
            admin.close()
        counts = {b: sum(b in replicas(c, "spread", p) for p in range(6)) for b in (1, 2, 3, 4)}
        assert sorted(counts.values()) == [3, 3, 3, 3], counts
