"""Transactions on three brokers: the transaction coordinator's broker dies (kill -9) in the middle of a
transaction; leadership of its ``__transaction_state`` partition moves, the new coordinator loads the
transaction, the producer finds it and finishes, and the outcome is all-or-nothing — read_committed
consumers see every record of that transaction or none of them, never a part."""

from __future__ import annotations

from typing import Any

import pytest
from cluster_helpers import create_topic, wait_for

from broker.testing.harness import KBrokerCluster
from client.admin import Admin
from client.coordinator import TRANSACTION_KEY, find_coordinator

pytestmark = pytest.mark.slow

TOPIC, PARTITIONS, TXN_ID, N = "payments", 3, "payments-tx", 60


def coordinator_of(bootstrap: str, transactional_id: str) -> int:
    import asyncio

    async def find() -> int:
        async with Admin(bootstrap_servers=bootstrap, request_timeout_ms=5000) as admin:
            return await find_coordinator(admin.net, transactional_id, TRANSACTION_KEY)

    return asyncio.run(find())


def decided(bootstrap: str) -> bool:
    """Every transaction on the topic has its markers (written after EndTxn is answered: until then the last
    stable offset ends a read_committed read early): the last stable offsets are the log end offsets."""
    from client.sync import SyncConsumer
    from client.types import TopicPartition

    tps = [TopicPartition(TOPIC, p) for p in range(PARTITIONS)]
    with SyncConsumer(bootstrap_servers=bootstrap) as plain, \
            SyncConsumer(bootstrap_servers=bootstrap, isolation_level="read_committed") as committed:
        return committed.end_offsets(tps) == plain.end_offsets(tps)


def read_committed(bootstrap: str) -> list[bytes]:
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "audit", "isolation.level": "read_committed",
                  "enable.partition.eof": True, "enable.auto.commit": False})
    c.assign([TopicPartition(TOPIC, p, 0) for p in range(PARTITIONS)])
    got: list[bytes] = []
    eof: set[int] = set()

    def drained() -> bool:
        m = c.poll(0.5)
        if m is not None and m.error() is None:
            got.append(m.value())
            eof.discard(m.partition())
        elif m is not None and m.error().code() == -191:
            eof.add(m.partition())
        return len(eof) == PARTITIONS

    try:
        wait_for(drained, "the end of every partition (read_committed)", interval=0)
    finally:
        c.close()
    return got


def produce_txn(producer: Any, prefix: str, n: int) -> list[bytes]:
    values = [b"%s-%d" % (prefix.encode(), i) for i in range(n)]
    for i, v in enumerate(values):
        producer.produce(TOPIC, value=v, partition=i % PARTITIONS)
    assert producer.flush(60) == 0
    return values


def test_coordinator_broker_dies_mid_transaction(cluster: KBrokerCluster) -> None:
    from confluent_kafka import KafkaException, Producer

    create_topic(cluster, TOPIC, PARTITIONS, rf=3)
    bs = cluster.bootstrap_servers
    conf = {"bootstrap.servers": bs, "transactional.id": TXN_ID, "transaction.timeout.ms": 60_000}
    producer = Producer(conf)
    producer.init_transactions(60)
    producer.begin_transaction()
    before = produce_txn(producer, "before", N)
    producer.commit_transaction(60)

    victim = coordinator_of(bs, TXN_ID)
    producer.begin_transaction()
    middle = produce_txn(producer, "middle", N)  # on the partition leaders; the transaction is open
    cluster.kill(victim)
    survivors = ",".join(b.bootstrap_servers for n, b in cluster.brokers.items() if n != victim)
    wait_for(lambda: coordinator_of(survivors, TXN_ID) not in (victim, -1), "a new transaction coordinator")
    try:
        producer.commit_transaction(90)
        committed = True
    except KafkaException as exc:
        committed = False
        if exc.args[0].txn_requires_abort():
            producer.abort_transaction(90)
        else:  # fatal: a new producer fences this one and aborts what it left open
            producer = Producer({**conf, "bootstrap.servers": survivors})
            producer.init_transactions(90)
    producer.begin_transaction()
    after = produce_txn(producer, "after", N)
    producer.commit_transaction(90)

    wait_for(lambda: decided(survivors), "every transaction's markers")
    got = read_committed(survivors)
    seen_middle = [v for v in got if v.startswith(b"middle-")]
    assert len(seen_middle) in (0, N), f"{len(seen_middle)} of {N} records of the interrupted transaction"
    if committed:  # (a commit that reported failure may still have been decided: either outcome is whole)
        assert len(seen_middle) == N
    assert sorted(v for v in got if not v.startswith(b"middle-")) == sorted(before + after)
    assert sorted(seen_middle) in ([], sorted(middle))

    cluster.restart(victim)  # it rejoins and serves the same outcome from its copy
    assert sorted(read_committed(cluster.bootstrap_servers)) == sorted(got)
