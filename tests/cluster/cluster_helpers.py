"""Helpers for the multi-broker tests: who leads what (through confluent-kafka's admin client), waits, log bytes."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from broker.testing.harness import KBrokerCluster


def wait_for(predicate: Callable[[], Any], what: str, timeout: float = 60.0, interval: float = 0.1) -> Any:
    """Poll until ``predicate()`` is truthy; a bound so a broken cluster fails instead of hanging."""
    deadline = time.monotonic() + timeout
    last_exc: Exception | None = None
    while time.monotonic() < deadline:
        try:
            value = predicate()
            if value:
                return value
        except Exception as exc:  # a broker may be restarting: keep polling
            last_exc = exc
        time.sleep(interval)
    raise AssertionError(f"timed out waiting for {what}" + (f" (last error: {last_exc})" if last_exc else ""))


def admin(bootstrap: str) -> Any:
    from confluent_kafka.admin import AdminClient

    return AdminClient({"bootstrap.servers": bootstrap, "socket.timeout.ms": 5000})


def partition_info(cluster: KBrokerCluster, topic: str, partition: int = 0) -> Any:
    md = admin(cluster.bootstrap_servers).list_topics(topic, timeout=10)
    t = md.topics.get(topic)
    if t is None or t.error is not None:
        return None
    return t.partitions.get(partition)


def leader_of(cluster: KBrokerCluster, topic: str, partition: int = 0) -> int:
    info = partition_info(cluster, topic, partition)
    return -1 if info is None else int(info.leader)


def create_topic(cluster: KBrokerCluster, name: str, partitions: int = 1, rf: int = 3,
                 config: dict[str, str] | None = None) -> None:
    from confluent_kafka.admin import NewTopic

    client = admin(cluster.bootstrap_servers)  # keep it alive until the future resolves
    futures = client.create_topics([NewTopic(name, partitions, rf, config=config or {})], operation_timeout=30)
    futures[name].result(60)
    wait_for(lambda: all(
        (info := partition_info(cluster, name, p)) is not None and info.leader >= 0 and len(info.isrs) == rf
        for p in range(partitions)), f"{name} to have leaders and full ISRs")


def segment_bytes(data_dir: Path, topic: str, partition: int) -> bytes:
    """The concatenated .log files of one replica (its exact bytes on disk)."""
    pdir = data_dir / f"{topic}-{partition}"
    return b"".join(p.read_bytes() for p in sorted(pdir.glob("*.log")))
