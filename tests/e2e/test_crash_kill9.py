"""Crash safety of a real ``python -m broker`` process: ``kill -9`` under an acks=all producer.

A confluent-kafka producer (acks=all, idempotent) keeps sending to two
partitions while the broker is SIGKILLed and restarted on the same data
directory and port.  The producer rides through the outage (its requests are
retried against the restarted broker).  Afterwards every record whose
delivery was acknowledged must be in the log exactly once, at the offset it
was acknowledged with, and each partition must hold the producer's records in
the order they were sent.
"""

from __future__ import annotations

import threading
import time

import pytest
from e2e_helpers import read_all

from protocol.records import encode_batch

pytestmark = pytest.mark.slow

TOPIC = "crash"
PARTITIONS = 2


def _wait_for(predicate, what: str, timeout: float = 60.0) -> None:
    # a bound so a broken broker fails the test instead of hanging it; not a timing assertion
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def test_kill9_while_acks_all_producer_is_sending(broker_process) -> None:
    from confluent_kafka import Producer

    with broker_process.raw() as c:
        assert c.create_topic(TOPIC, PARTITIONS) == 0

    producer = Producer({
        "bootstrap.servers": broker_process.bootstrap_servers,
        "acks": "all",
        "enable.idempotence": True,
        "linger.ms": 2,
        "batch.num.messages": 50,
        "message.timeout.ms": 120_000,
        "retry.backoff.ms": 50,
        "reconnect.backoff.ms": 50,
        "reconnect.backoff.max.ms": 200,
    })
    acked: dict[int, tuple[int, int]] = {}  # sequence number -> (partition, offset)
    failed: dict[int, str] = {}
    lock = threading.Lock()
    stop = threading.Event()
    sent = [0]

    def on_delivery(err, msg) -> None:
        seq = int(msg.value().split(b":")[0])
        with lock:
            if err is not None:
                failed[seq] = str(err)
            else:
                acked[seq] = (msg.partition(), msg.offset())

    def send_loop() -> None:
        i = 0
        while not stop.is_set():
            if len(producer) > 2000:  # keep the queue bounded; serve callbacks
                producer.poll(0.01)
                continue
            producer.produce(TOPIC, key=f"k{i}".encode(), value=f"{i}:".encode() + b"x" * 200,
                             partition=i % PARTITIONS, on_delivery=on_delivery)
            producer.poll(0)
            i += 1
            sent[0] = i

    sender = threading.Thread(target=send_loop, daemon=True)
    sender.start()
    try:
        _wait_for(lambda: len(acked) >= 3000, "3000 acknowledged records before the crash")
        broker_process.kill9()
        acked_at_kill = len(acked)
        in_flight_at_kill = sent[0] - acked_at_kill
        time.sleep(0.5)  # the producer keeps queueing and retrying against a dead port
        broker_process.start()
        _wait_for(lambda: len(acked) >= acked_at_kill + 3000, "3000 more acknowledged records after restart")
    finally:
        stop.set()
        sender.join(10)
        remaining = producer.flush(120)
    assert remaining == 0, f"{remaining} records never delivered"
    assert in_flight_at_kill > 0, "the kill did not hit the producer mid-stream"
    assert not failed, f"{len(failed)} deliveries failed, e.g. {list(failed.items())[:3]}"

    # stop cleanly and read from a fresh process, so nothing is served from the old one's memory
    assert broker_process.stop() == 0
    broker_process.start()
    with broker_process.raw() as c:
        logs = {p: [(r.offset, int(r.value.split(b":")[0]), r.key) for r in read_all(c, TOPIC, p)]
                for p in range(PARTITIONS)}
    for p, entries in logs.items():
        seqs = [s for _, s, _ in entries]
        assert len(seqs) == len(set(seqs)), f"partition {p} holds duplicates"
        assert seqs == sorted(seqs), f"partition {p} is out of send order"
        assert all(s % PARTITIONS == p for s in seqs)
        assert all(k == f"k{s}".encode() for _, s, k in entries)
    where = {s: (p, off) for p, entries in logs.items() for off, s, _ in entries}
    missing = [s for s in acked if s not in where]
    assert not missing, f"{len(missing)} acknowledged records lost, e.g. {missing[:5]}"
    moved = [(s, acked[s], where[s]) for s in acked if acked[s] != where[s]]
    assert not moved, f"acknowledged records at other offsets: {moved[:5]}"
    # everything the producer was told about is there; nothing else is (every send was acknowledged)
    assert set(where) == set(acked) == set(range(sent[0]))


def test_kill9_right_after_ack_then_restart(broker_process) -> None:
    """Acknowledged (acks=-1) then SIGKILL before any flush interval: the data is in the page cache."""
    with broker_process.raw() as c:
        assert c.create_topic("crash-idle", 1) == 0
        batches = [encode_batch([(f"k{i}-{j}".encode(), f"v{i}-{j}".encode(), [("n", str(j).encode())], None)
                                 for j in range(10)]) for i in range(50)]
        for i, b in enumerate(batches):
            part = c.produce("crash-idle", 0, b)
            assert (part.error_code, part.base_offset) == (0, 10 * i)
    broker_process.kill9()
    broker_process.start()
    with broker_process.raw() as c:
        records = read_all(c, "crash-idle")
        assert [(r.offset, r.key, r.value) for r in records] == [
            (10 * i + j, f"k{i}-{j}".encode(), f"v{i}-{j}".encode()) for i in range(50) for j in range(10)]
        # and the log continues where it ended
        assert c.produce("crash-idle", 0, batches[0]).base_offset == 500
