"""Helpers for the Spark tests: create topics, produce known records, delete records."""

from __future__ import annotations

import time
import uuid

import pytest

from client.sync import SyncAdmin, SyncProducer

# Recent enough that time-based retention does not delete the test records.
BASE_TS = (int(time.time()) - 3600) * 1000


def new_topic(bootstrap: str, partitions: int = 1, prefix: str = "t") -> str:
    name = f"{prefix}-{uuid.uuid4().hex[:8]}"
    with SyncAdmin(bootstrap_servers=bootstrap) as admin:
        admin.create_topics({name: partitions})
    return name


def produce(bootstrap: str, topic: str, n: int, *, partitions: int = 1, start: int = 0,
            headers: bool = False, base_ts: int = BASE_TS) -> list[tuple[int, bytes, bytes, int]]:
    """Records i in [start, start+n): key ``k<i>``, value of varying length, partition i % partitions,
    timestamp base_ts + i ms; returns ``(partition, key, value, timestamp)`` per record."""
    out = []
    with SyncProducer(bootstrap_servers=bootstrap, linger_ms=5) as p:
        futures = []
        for i in range(start, start + n):
            key = b"k%d" % i
            value = b"v%d-" % i + b"x" * (i % 37)
            part = i % partitions
            hdrs = [("idx", str(i).encode()), ("none", None)] if headers and i % 2 == 0 else None
            futures.append(p.send_async(topic, value, key, hdrs, part, base_ts + i))
            out.append((part, key, value, base_ts + i))
        p.flush()
        for f in futures:
            f.result(30)
    return out


def delete_records(bootstrap: str, topic: str, before: dict[int, int]) -> None:
    """DeleteRecords: move each partition's log start offset to ``before[p]``."""
    ck = pytest.importorskip("confluent_kafka")
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.delete_records([ck.TopicPartition(topic, p, off) for p, off in before.items()],
                                   request_timeout=30)
    for f in futures.values():
        f.result(30)
