"""Transactional produce throughput beside non-transactional, same broker, same run.

A ``python -m broker`` process (its own data directory) takes confluent-kafka producers of 100-byte
records over 3 partitions: idempotent (acks=all, the baseline), then transactional with commits every
``--txn-sizes`` records, then the baseline again.  Prints records/s and MB/s per case and the ratio
to the baseline (the mean of its two runs), plus commits/s; then read_committed beside
read_uncommitted consume rates of a transactional topic.

    python benchmarks/transactions.py [--records 200000] [--txn-sizes 100,1000,10000]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from typing import Any

from broker.testing.harness import BrokerProcess

PARTITIONS = 3


def create_topic(bootstrap: str, name: str) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(name, PARTITIONS, 1)]).values():
        future.result(30)


def send(p: Any, topic: str, payload: bytes, first: int, end: int) -> None:
    """Records ``first..end-1`` round-robin over the partitions, waiting while the client's buffer is full."""
    for i in range(first, end):
        while True:
            try:
                p.produce(topic, value=payload, partition=i % PARTITIONS)
                break
            except BufferError:
                p.poll(0.01)


def produce_idempotent(bootstrap: str, topic: str, n: int, payload: bytes) -> float:
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 5})
    started = time.perf_counter()
    send(p, topic, payload, 0, n)
    assert p.flush(120) == 0
    return time.perf_counter() - started


def produce_transactional(bootstrap: str, topic: str, n: int, payload: bytes, per_txn: int) -> float:
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"bench-{per_txn}", "linger.ms": 5})
    p.init_transactions(30)
    started = time.perf_counter()
    sent = 0
    while sent < n:
        p.begin_transaction()
        send(p, topic, payload, sent, min(n, sent + per_txn))
        sent = min(n, sent + per_txn)
        p.commit_transaction(60)
    return time.perf_counter() - started


def consume(bootstrap: str, topic: str, n: int, isolation: str) -> float:
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-{isolation}", "isolation.level": isolation,
                  "enable.auto.commit": False, "fetch.max.bytes": 64 << 20})
    c.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    started = time.perf_counter()
    got = 0
    while got < n:
        for m in c.consume(10_000, 1.0):
            if m.error() is None:
                got += 1
    elapsed = time.perf_counter() - started
    c.close()
    return elapsed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--size", type=int, default=100)
    ap.add_argument("--txn-sizes", default="100,1000,10000")
    args = ap.parse_args()
    n, payload = args.records, b"x" * args.size
    sizes = [int(s) for s in args.txn_sizes.split(",")]
    with tempfile.TemporaryDirectory() as tmp, BrokerProcess(Path(tmp) / "data") as broker:
        bs = broker.bootstrap_servers
        rows: list[tuple[str, float, int]] = []
        create_topic(bs, "bench-plain")
        rows.append(("idempotent (baseline)", produce_idempotent(bs, "bench-plain", n, payload), 0))
        for per_txn in sizes:
            topic = f"bench-txn-{per_txn}"
            create_topic(bs, topic)
            rows.append((f"transactional, {per_txn} records/txn", produce_transactional(bs, topic, n, payload, per_txn),
                         -(-n // per_txn)))
        create_topic(bs, "bench-plain-2")  # the baseline again, last: the spread of the two is the run's noise
        rows.append(("idempotent (baseline, again)", produce_idempotent(bs, "bench-plain-2", n, payload), 0))
        base = 2 * n / (rows[0][1] + rows[-1][1])
        print(f"{n} records of {args.size} B over {PARTITIONS} partitions, confluent-kafka, acks=all\n")
        print("| case | records/s | MB/s | commits/s | ratio to baseline (mean of its two runs) |")
        print("|---|---:|---:|---:|---:|")
        for name, seconds, commits in rows:
            rate = n / seconds
            print(f"| {name} | {rate:,.0f} | {rate * args.size / 1e6:.1f} | "
                  f"{commits / seconds if commits else 0:,.0f} | {rate / base:.2f} |")
        topic = f"bench-txn-{sizes[-1]}"
        uncommitted = n / consume(bs, topic, n, "read_uncommitted")
        committed = n / consume(bs, topic, n, "read_committed")
        print(f"\nconsume {topic}: read_uncommitted {uncommitted:,.0f} rec/s, read_committed {committed:,.0f} rec/s "
              f"(ratio {committed / uncommitted:.2f})")


if __name__ == "__main__":
    main()
