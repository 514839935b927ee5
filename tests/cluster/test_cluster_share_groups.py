"""Share groups (KIP-932) on a three-broker cluster: the share state is replicated in ``__share_group_state``
(replication factor 3), so after a kill -9 of the partition's leader, or of the share coordinator
holding the share-partition's state, nothing acknowledged comes back and nothing unacknowledged is lost
— with confluent-kafka's ShareConsumer."""

from __future__ import annotations

import asyncio
import base64
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from cluster_helpers import create_topic, leader_of, partition_info, wait_for
from peers import require_etcd
from share_helpers import SHARE_SETTINGS, ShareReader, produce, set_group_configs, unique

from broker.coordinator.share.state import Key, share_key, state_partition
from broker.testing.harness import KBrokerCluster
from protocol.api import ApiKey

pytestmark = pytest.mark.slow

SHARE_STATE = "__share_group_state"


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[KBrokerCluster]:
    require_etcd()
    with KBrokerCluster(3, tmp_path / "cluster", settings={**SHARE_SETTINGS,
                                                           "share.coordinator.state.topic.num.partitions": 5}) as c:
        yield c


def topic_id(cluster: KBrokerCluster, topic: str) -> uuid.UUID:
    from confluent_kafka import TopicCollection
    from confluent_kafka.admin import AdminClient

    client = AdminClient({"bootstrap.servers": cluster.bootstrap_servers, "socket.timeout.ms": 5000})
    described = client.describe_topics(TopicCollection([topic]))[topic].result(30)
    return uuid.UUID(bytes=base64.urlsafe_b64decode(str(described.topic_id) + "=="))


def share_coordinator(cluster: KBrokerCluster, key: Key) -> int:
    """FindCoordinator v6, key type SHARE (what brokers ask; it creates ``__share_group_state``)."""
    from client.conn import Connection
    from protocol.timer_service import WheelTimer

    async def ask() -> int:
        broker = next(b for b in cluster.brokers.values() if b.alive())
        conn = Connection(0, broker.host, broker.port, client_id="test", timers=WheelTimer(),
                          request_timeout_ms=30_000)
        await conn.open()
        try:
            resp = await conn.request(ApiKey.FIND_COORDINATOR, {"key_type": 2, "coordinator_keys": [share_key(key)]},
                                      version=6)
            entry = resp.coordinators[0]
            return entry.node_id if entry.error_code == 0 else -1
        finally:
            conn.close()

    return asyncio.run(ask())


def group_coordinated_elsewhere(cluster: KBrokerCluster, topic: str, leader: int) -> str:
    """A group whose share state for ``topic``'s partition 0 lives on another broker than ``leader``."""
    tid = topic_id(cluster, topic)
    for _ in range(50):
        group = unique("g")
        node = wait_for(lambda group=group: (n := share_coordinator(cluster, Key(group, tid, 0))) >= 0 and n,
                        "the share coordinator")
        if node != leader:
            assert state_partition(Key(group, tid, 0), 5) >= 0
            return group
    raise AssertionError("every group's share state on the leader")


def split_records(cluster: KBrokerCluster, group: str, topic: str) -> set[str]:
    """A consumer accepts the even records it gets and holds the odd ones (then stops polling, still
    connected); returns what it accepted."""
    from confluent_kafka import AcknowledgeType

    acked: set[str] = set()

    def decide(value: str, count: int) -> object:
        if int(value[1:]) % 2 == 0:
            acked.add(value)
            return AcknowledgeType.ACCEPT
        return None

    reader = ShareReader(cluster.bootstrap_servers, group, [topic], explicit=True, decide=decide)
    reader.start()
    wait_for(reader.hold.is_set, "a first delivery", 90)
    assert not reader.errors and all(v is None for r in reader.commit_results for v in r.values())
    reader.stop()  # its close releases the odd records (or, its broker dead, they come back anyway)
    return acked


def remaining(cluster: KBrokerCluster, group: str, topic: str, expected: set[str], marker: str) -> list[str]:
    """What a new consumer gets (accepting all of it, every acknowledgement written) once ``marker`` is
    produced after ``expected``."""
    from confluent_kafka import AcknowledgeType

    reader = ShareReader(cluster.bootstrap_servers, group, [topic], explicit=True,
                         decide=lambda v, c: AcknowledgeType.ACCEPT)
    reader.start()
    try:
        produce(cluster.bootstrap_servers, topic, [marker])
        wait_for(lambda: set(reader.values()) >= expected | {marker}, "the unacknowledged records", 120)
        wait_for(lambda: reader.commit_results and all(
            v is None for v in reader.commit_results[-1].values()), "the acknowledgements written", 60)
        return reader.values()
    finally:
        reader.stop()


def new_leader(cluster: KBrokerCluster, topic: str, dead: int) -> None:
    wait_for(lambda: (info := partition_info(cluster, topic)) is not None and info.leader not in (-1, dead),
             "a new leader", 60)


@pytest.mark.parametrize("victim", ["leader", "coordinator"])
def test_kill9_of_the_leader_or_the_share_coordinator(cluster: KBrokerCluster, victim: str) -> None:
    topic = unique("t")
    create_topic(cluster, topic, rf=3, config={"min.insync.replicas": "2"})
    leader = leader_of(cluster, topic)
    # a group whose share state lives on another broker than the partition's leader
    group = group_coordinated_elsewhere(cluster, topic, leader)
    set_group_configs(cluster.bootstrap_servers, group, share_auto_offset_reset="earliest")
    produce(cluster.bootstrap_servers, topic, [f"v{i}" for i in range(40)], batch=10)
    acked = split_records(cluster, group, topic)
    assert acked
    dead = leader if victim == "leader" else share_coordinator(cluster, Key(group, topic_id(cluster, topic), 0))
    assert dead >= 1
    cluster.kill(dead)
    new_leader(cluster, topic, dead)
    expected = {f"v{i}" for i in range(1, 40, 2)}
    got = remaining(cluster, group, topic, expected, "last")
    assert sorted(got) == sorted(expected | {"last"})  # every unacknowledged record once, no acknowledged one
    if victim == "coordinator":
        # the new coordinator holds all of it: a new leader, reading the state from it, delivers nothing old
        cluster.restart(dead)
        leader = leader_of(cluster, topic)
        cluster.kill(leader)
        new_leader(cluster, topic, leader)
        assert remaining(cluster, group, topic, set(), "final") == ["final"]
