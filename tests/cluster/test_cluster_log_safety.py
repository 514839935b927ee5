"""What a leader's log never does to records its followers may not have — with real processes.

Retention on a leader whose followers are behind deletes nothing they lack: the log start a consumer
sees never passes the high watermark, and the followers copy what expired meanwhile.  (A replica with a
torn leader-epoch checkpoint: ``test_cluster_failover``'s divergent-tail test.)
"""

from __future__ import annotations

import os
import signal
import socket
import struct
from collections.abc import Iterator
from pathlib import Path

import pytest
from cluster_helpers import create_topic, leader_of, wait_for
from peers import require_etcd
from test_cluster_failover import _recv, raw_produce

from broker.testing.harness import KBrokerCluster
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
