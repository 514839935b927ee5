"""What a replica's log never does to records its followers may not have — with real processes.

* Retention on a leader whose followers are behind deletes nothing they lack: the log start a
  consumer sees never passes the high watermark, and the followers copy what expired meanwhile.
* A restarted replica whose leader-epoch checkpoint is unreadable cannot have its tail checked against
  the leader's: it truncates to its high watermark and ends identical to the leader.
"""

from __future__ import annotations

import os
import signal
import socket
import struct
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from cluster_helpers import create_topic, leader_of, wait_for
from peers import require_etcd
from test_cluster_failover import _recv, consume_all, raw_produce, replicas_identical

from broker.harness import KBrokerCluster
from protocol.api import ApiKey, decode_response, encode_request

pytestmark = pytest.mark.slow

REQUEST_TIMED_OUT = 7


@pytest.fixture
def slow_expiry_cluster(tmp_path: Path) -> Iterator[KBrokerCluster]:
    """Brokers that run retention every 100 ms and keep a stopped broker registered and in the ISR
    for a while (long enough to see what the leader does meanwhile)."""
    require_etcd()
    settings = {"log.retention.check.interval.ms": 100, "broker.session.timeout.ms": 30_000,
                "replica.lag.time.max.ms": 30_000}
    with KBrokerCluster(3, tmp_path / "cluster", settings=settings) as c:
        yield c


def watermarks(host_port: str, topic: str) -> tuple[int, int]:
    """(log start offset, high watermark) of partition 0 as the broker at ``host_port`` answers
    ListOffsets EARLIEST and LATEST (raw requests: a client library may tidy up what it is told)."""
    host, port = host_port.rsplit(":", 1)
    offsets = []
    with socket.create_connection((host, int(port)), timeout=30) as s:
        for timestamp in (-2, -1):
            s.sendall(encode_request(ApiKey.LIST_OFFSETS, 7, 1, "test", {
                "replica_id": -1, "isolation_level": 0, "topics": [{"name": topic, "partitions": [
                    {"partition_index": 0, "current_leader_epoch": -1, "timestamp": timestamp}]}]}))
            size = struct.unpack(">i", _recv(s, 4))[0]
            _, resp = decode_response(ApiKey.LIST_OFFSETS, 7, _recv(s, size))
            entry = resp.topics[0].partitions[0]
            assert entry.error_code == 0, entry
            offsets.append(int(entry.offset))
    return offsets[0], offsets[1]


def test_retention_never_deletes_what_the_followers_lack(slow_expiry_cluster: KBrokerCluster) -> None:
    cluster = slow_expiry_cluster
    create_topic(cluster, "aging", partitions=1, config={"retention.ms": "200", "min.insync.replicas": "3"})
    leader = leader_of(cluster, "aging", 0)
    addr = cluster.brokers[leader].bootstrap_servers
    assert raw_produce(addr, "aging", 0, [b"early-%d" % i for i in range(5)]) == 0  # offsets 0-4
    followers = [n for n in (1, 2, 3) if n != leader]
    for f in followers:
        os.kill(cluster.brokers[f].proc.pid, signal.SIGSTOP)  # type: ignore[union-attr]
    try:
        # offset 5 expires on the leader long before the produce's 3 s timeout (retention runs every
        # 100 ms); no follower has it, so it is neither acknowledged nor deleted
        assert raw_produce(addr, "aging", 0, [b"unreplicated"], timeout_ms=3000) == REQUEST_TIMED_OUT
        low, high = watermarks(addr, "aging")
        assert low <= high == 5, (low, high)  # the log start never passes the high watermark
    finally:
        for f in followers:
            os.kill(cluster.brokers[f].proc.pid, signal.SIGCONT)  # type: ignore[union-attr]
    # the followers copy offset 5; from then on the leader acknowledges again (and retention deletes it all)
    wait_for(lambda: raw_produce(addr, "aging", 0, [b"late"]) == 0, "an acks=all produce to succeed again")
    wait_for(lambda: watermarks(addr, "aging")[1] >= 7, "the high watermark to pass the late record")


def test_an_unreadable_epoch_checkpoint_still_drops_a_divergent_tail(cluster: KBrokerCluster) -> None:
    create_topic(cluster, "div", partitions=1)
    leader = leader_of(cluster, "div", 0)
    followers = [n for n in (1, 2, 3) if n != leader]
    assert raw_produce(cluster.brokers[leader].bootstrap_servers, "div", 0, [b"r%d" % i for i in range(10)]) == 0
    wait_for(lambda: replicas_identical(cluster, "div", 0), "replication of the first records")
    for f in followers:
        os.kill(cluster.brokers[f].proc.pid, signal.SIGSTOP)  # type: ignore[union-attr]
    try:
        time.sleep(1.0)  # let their fetches parked at the leader expire, so none copies what follows
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
    # the old leader's tail (offsets 10-14, as long as the new leader's) and a torn epoch checkpoint
    (cluster.brokers[leader].data_dir / "div-0" / "leader-epoch-checkpoint").write_text("0\n2\n0 0\n")
    cluster.restart(leader)
    wait_for(lambda: replicas_identical(cluster, "div", 0), "the old leader to drop its divergent tail")
    values = [v for _, v in consume_all(cluster.bootstrap_servers, "div", 1, 15)[0]]
    assert values == [b"r%d" % i for i in range(10)] + [b"new-%d" % i for i in range(5)]
