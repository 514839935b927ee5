"""Dynamic broker configs and compaction on three brokers over etcd (real processes).

The cluster-wide default reaches every broker through the metadata store, a per-broker config only
its broker, and both survive a restart; a compacted topic is compacted by each replica on its own
copy, and all copies end up holding the same records.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from cluster_helpers import create_topic, wait_for
from peers import require_etcd

from broker.testing.harness import KBrokerCluster
from client import Admin
from protocol.records import decode_record_set

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KBrokerCluster]:
    require_etcd()
    with KBrokerCluster(3, tmp_path_factory.mktemp("configs"), settings={"default.replication.factor": 3,
                                                                          "log.cleaner.backoff.ms": 200}) as c:
        yield c


def broker_value(cluster: KBrokerCluster, node: int, name: str) -> tuple[str | None, str]:
    async def run() -> tuple[str | None, str]:
        async with Admin(bootstrap_servers=cluster.brokers[node].bootstrap_servers) as admin:
            (entry,) = await admin.describe_config_entries("broker", str(node), [name])
            return entry.value, entry.source

    return asyncio.run(run())


def alter(cluster: KBrokerCluster, via: int, name: str, *ops: tuple[str, str, str | None]) -> None:
    async def run() -> None:
        async with Admin(bootstrap_servers=cluster.brokers[via].bootstrap_servers) as admin:
            await admin.incremental_alter_configs("broker", name, ops)

    asyncio.run(run())


def test_cluster_default_reaches_every_broker_and_per_broker_configs_only_theirs(cluster: KBrokerCluster) -> None:
    alter(cluster, 1, "", ("set", "log.retention.ms", "7200000"))
    for node in (1, 2, 3):
        wait_for(lambda n=node: broker_value(cluster, n, "log.retention.ms") ==
                 ("7200000", "DYNAMIC_DEFAULT_BROKER_CONFIG"), f"the default on broker {node}")
    alter(cluster, 2, "2", ("set", "log.retention.ms", "3600000"))
    assert broker_value(cluster, 2, "log.retention.ms") == ("3600000", "DYNAMIC_BROKER_CONFIG")
    assert broker_value(cluster, 3, "log.retention.ms") == ("7200000", "DYNAMIC_DEFAULT_BROKER_CONFIG")
    cluster.restart(3)
    cluster.restart(2)
    assert broker_value(cluster, 3, "log.retention.ms") == ("7200000", "DYNAMIC_DEFAULT_BROKER_CONFIG")
    assert broker_value(cluster, 2, "log.retention.ms") == ("3600000", "DYNAMIC_BROKER_CONFIG")
    alter(cluster, 3, "", ("delete", "log.retention.ms", None))
    wait_for(lambda: broker_value(cluster, 1, "log.retention.ms") == ("604800000", "DEFAULT_CONFIG"),
             "the default to be gone")


def replica_records(cluster: KBrokerCluster, node: int, topic: str) -> dict[int, tuple[bytes | None, bytes | None]]:
    pdir = cluster.brokers[node].data_dir / f"{topic}-0"
    data = b"".join(p.read_bytes() for p in sorted(pdir.glob("*.log")))
    return {r.offset: (r.key, r.value) for r in decode_record_set(data)}


def test_every_replica_compacts_its_copy_of_a_compacted_topic(cluster: KBrokerCluster) -> None:
    from confluent_kafka import Producer

    topic = "replicated-compacted"
    create_topic(cluster, topic, partitions=1, rf=3, config={
        "cleanup.policy": "compact", "segment.bytes": "2000", "min.cleanable.dirty.ratio": "0.01"})
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all", "linger.ms": 10,
                         "batch.num.messages": 25})  # batches of 25: many segments of 2000 bytes
    for i in range(600):
        producer.produce(topic, key=b"k%d" % (i % 20), value=b"v%04d" % i, partition=0)
    assert producer.flush(30) == 0
    for i in range(20):
        producer.produce(topic, key=b"seal-%d" % i, value=b"x" * 300, partition=0)
    assert producer.flush(30) == 0
    latest_values = {b"k%d" % k: b"v%04d" % (580 + k) for k in range(20)}

    def compacted(node: int) -> bool:
        records = replica_records(cluster, node, topic)
        data = [(key, value) for _, (key, value) in sorted(records.items()) if not key.startswith(b"seal-")]
        return dict(data) == latest_values and len(data) == 20

    for node in (1, 2, 3):
        wait_for(lambda n=node: compacted(n), f"replica on broker {node} to be compacted")
    copies = [replica_records(cluster, node, topic) for node in (1, 2, 3)]
    assert copies[0] == copies[1] == copies[2]  # same records at the same offsets on every replica
