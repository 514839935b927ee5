"""Exactly once through a broker crash: a confluent-kafka consume-transform-produce loop (read_committed input,
transactional output, offsets sent to the transaction) over 1,000 records, with the broker killed (kill -9)
in the middle and restarted on the same data.  The loop finishes, and the output read with read_committed
holds each result exactly once."""

from __future__ import annotations

import threading
import time
from collections import Counter
from typing import Any

from test_transactions import create_topic, read_topic, wait_markers

N = 1000
PARTITIONS = 3
BATCH = 40
TOPIC_IN, TOPIC_OUT, GROUP, TXN_ID = "ctp-in", "ctp-out", "ctp", "ctp-tx"


def produce_input(bootstrap: str) -> list[int]:
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    for i in range(N):
        p.produce(TOPIC_IN, value=b"in-%d" % i, partition=i % PARTITIONS)
    assert p.flush(30) == 0
    return [len(range(p_, N, PARTITIONS)) for p_ in range(PARTITIONS)]


class Loop:
    """The application: consume a batch, produce its results and the input offsets in one transaction."""

    def __init__(self, bootstrap: str, ends: list[int]) -> None:
        self.bootstrap = bootstrap
        self.ends = ends
        self.processed = 0           # records whose transaction committed
        self.recoveries = 0          # times the loop had to abort or start a new producer
        self.error: BaseException | None = None
        self.done = threading.Event()

    def _producer(self) -> Any:
        from confluent_kafka import Producer

        # No KIP-1102 re-bootstrap: when its only broker goes down, librdkafka 2.16 decommissions it, and
        # send_offsets_to_transaction then waits forever on the group coordinator it had cached for it
        # (librdkafka issue #5511), whatever the broker does.
        p = Producer({"bootstrap.servers": self.bootstrap, "transactional.id": TXN_ID,
                      "transaction.timeout.ms": 30_000, "message.timeout.ms": 30_000,
                      "metadata.recovery.strategy": "none"})
        p.init_transactions(60)  # fences an older producer; waits for its transaction to finish first
        return p

    def _rewind(self, consumer: Any) -> dict[int, int]:
        """Continue from the committed offsets (read with require_stable: they include every committed
        transaction's offsets)."""
        from confluent_kafka import OFFSET_BEGINNING, TopicPartition

        committed = consumer.committed([TopicPartition(TOPIC_IN, p) for p in range(PARTITIONS)], timeout=60)
        positions = {tp.partition: tp.offset if tp.offset >= 0 else 0 for tp in committed}
        consumer.assign([TopicPartition(TOPIC_IN, p, positions[p] if positions[p] > 0 else OFFSET_BEGINNING)
                         for p in range(PARTITIONS)])
        return positions

    def run(self) -> None:
        try:
            self._run()
        except BaseException as exc:  # surfaced by the test
            self.error = exc
        finally:
            self.done.set()

    def _run(self) -> None:
        from confluent_kafka import Consumer, KafkaException, TopicPartition

        consumer = Consumer({"bootstrap.servers": self.bootstrap, "group.id": GROUP, "enable.auto.commit": False,
                             "isolation.level": "read_committed", "auto.offset.reset": "earliest"})
        producer = self._producer()
        positions = self._rewind(consumer)
        deadline = time.monotonic() + 240
        while [positions[p] for p in range(PARTITIONS)] != self.ends:
            assert time.monotonic() < deadline, f"stuck at {positions} (ends {self.ends})"
            msgs = [m for m in consumer.consume(BATCH, 0.5) if not m.error()]
            if not msgs:
                continue
            nxt = dict(positions)
            for m in msgs:
                nxt[m.partition()] = m.offset() + 1
            try:
                producer.begin_transaction()
                for m in msgs:
                    producer.produce(TOPIC_OUT, value=b"out-" + m.value(), partition=m.partition())
                producer.send_offsets_to_transaction(
                    [TopicPartition(TOPIC_IN, p, o) for p, o in nxt.items()], consumer.consumer_group_metadata(), 60)
                self._commit(producer)
            except KafkaException as exc:
                err = exc.args[0]
                self.recoveries += 1
                if err.txn_requires_abort():
                    try:
                        producer.abort_transaction(60)
                    except KafkaException:
                        producer = self._producer()
                else:  # fatal (e.g. fenced after a timeout): a new producer, which fences this one
                    producer = self._producer()
                positions = self._rewind(consumer)
                continue
            positions = nxt
            self.processed += len(msgs)
        consumer.close()

    @staticmethod
    def _commit(producer: Any) -> None:
        from confluent_kafka import KafkaException

        for attempt in range(20):
            try:
                producer.commit_transaction(60)
                return
            except KafkaException as exc:
                if not exc.args[0].retriable() or attempt == 19:
                    raise  # librdkafka: a retriable commit error means "call commit again"


def test_consume_transform_produce_survives_kill_9(broker_process: Any) -> None:
    bs = broker_process.bootstrap_servers
    create_topic(bs, TOPIC_IN, PARTITIONS)
    create_topic(bs, TOPIC_OUT, PARTITIONS)
    ends = produce_input(bs)
    loop = Loop(bs, ends)
    thread = threading.Thread(target=loop.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 120
    while loop.processed < 0.4 * N:
        assert not loop.done.is_set(), f"the loop ended early: {loop.error!r}"
        assert time.monotonic() < deadline, "no progress before the crash"
        time.sleep(0.01)
    broker_process.kill9()
    killed_at = loop.processed
    broker_process.start()
    assert loop.done.wait(240), "the loop did not finish after the restart"
    thread.join(10)
    assert loop.error is None, repr(loop.error)
    assert killed_at < N, "the crash came after the work was done"
    wait_markers(bs, TOPIC_OUT, PARTITIONS)  # the last transaction's, written after EndTxn is answered
    out = read_topic(bs, TOPIC_OUT, "read_committed", PARTITIONS, timeout=60)
    counts = Counter(v for vs in out.values() for v in vs)
    assert sorted(counts) == sorted(b"out-in-%d" % i for i in range(N))
    assert set(counts.values()) == {1}, [v for v, n in counts.items() if n > 1][:10]
    # per partition, in input order
    for p, vs in out.items():
        assert vs == [b"out-in-%d" % i for i in range(p, N, PARTITIONS)]
