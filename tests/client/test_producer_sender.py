"""The producer's sender against the in-process broker: when batches leave, and what happens to a
batch whose connection drops while it is in flight.

A full batch is written from ``enqueue`` itself and the partition's next batch from the receive
callback of the previous one's response, so a caller that enqueues in a tight loop keeps the
connection busy instead of buffering everything until ``flush``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from broker import BrokerConfig, BrokerThread
from client import Admin, Consumer, Producer, TopicPartition
from client.errors import IllegalStateError, KafkaConnectionError

pytestmark = pytest.mark.timeout(60)

STEP_S = 20.0


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerThread]:
    cfg = BrokerConfig(host="127.0.0.1", port=0, data_dir=tmp_path_factory.mktemp("broker"))
    with BrokerThread(cfg) as b:
        yield b


@pytest.fixture(scope="module")
def bs(broker: BrokerThread) -> str:
    return broker.bootstrap_servers


async def _values(bs: str, topic: str, n: int) -> list[bytes]:
    out: list[bytes] = []
    async with Consumer(bootstrap_servers=bs, auto_offset_reset="earliest") as c:
        c.assign([TopicPartition(topic, 0)])
        while len(out) < n:
            for recs in (await asyncio.wait_for(c.getmany(timeout_ms=500), STEP_S)).values():
                out += [r.value for r in recs]
    return out


async def test_a_full_batch_is_written_before_enqueue_returns(bs: str) -> None:
    async with Admin(bootstrap_servers=bs) as admin:
        await admin.create_topics({"sender-full": 1})
    # a long linger: only a full batch can make the sender send
    async with Producer(bootstrap_servers=bs, batch_size=1024, linger_ms=60_000) as p:
        await p.partitions_for("sender-full")
        assert p._net is not None
        leader = p._net.metadata.leader_for("sender-full", 0)
        assert leader is not None
        conn = await p._net.connection(leader)
        futures = []
        while True:
            futures.append(await p.enqueue("sender-full", value=b"v" * 100, partition=0))
            if p._acc.queued or p._acc.in_flight:   # this enqueue closed the first batch
                break
        assert len(futures) > 1
        # the batch is on the wire (or already answered), not waiting for the sender task's turn
        assert conn.in_flight == 1 or all(f.done() for f in futures[:-1])
        await asyncio.wait_for(p.flush(), STEP_S)
        offsets = [f.result().offset for f in futures]
    assert offsets == list(range(len(futures)))


async def test_a_tight_loop_keeps_batches_moving_and_in_order(bs: str) -> None:
    async with Admin(bootstrap_servers=bs) as admin:
        await admin.create_topics({"sender-loop": 1})
    n = 20_000
    async with Producer(bootstrap_servers=bs, batch_size=16 * 1024, linger_ms=5) as p:
        futures = [await p.enqueue("sender-loop", value=b"%08d" % i, partition=0) for i in range(n)]
        await asyncio.wait_for(p.flush(), STEP_S)
    assert [f.result().offset for f in futures] == list(range(n))
    assert await _values(bs, "sender-loop", n) == [b"%08d" % i for i in range(n)]


async def test_acks_0_completes_every_record_without_an_offset(bs: str) -> None:
    async with Admin(bootstrap_servers=bs) as admin:
        await admin.create_topics({"sender-acks0": 1})
    async with Producer(bootstrap_servers=bs, acks=0, batch_size=1024) as p:
        await p.partitions_for("sender-acks0")
        futures = [await p.enqueue("sender-acks0", value=b"%04d" % i, partition=0) for i in range(200)]
        await asyncio.wait_for(p.flush(), STEP_S)
    assert {f.result().offset for f in futures} == {-1}
    assert await _values(bs, "sender-acks0", 200) == [b"%04d" % i for i in range(200)]


async def test_a_connection_dropped_under_an_in_flight_batch_is_retried(bs: str) -> None:
    async with Admin(bootstrap_servers=bs) as admin:
        await admin.create_topics({"sender-drop": 1})
    async with Producer(bootstrap_servers=bs, batch_size=1024, linger_ms=60_000, acks="all",
                        enable_idempotence=True, retry_backoff_ms=10) as p:
        await p.partitions_for("sender-drop")
        assert p._net is not None
        leader = p._net.metadata.leader_for("sender-drop", 0)
        assert leader is not None
        conn = await p._net.connection(leader)
        assert p._net.ready_connection(leader) is conn
        futures = [await p.enqueue("sender-drop", value=b"%04d" % i, partition=0) for i in range(5)]
        # send the open batch now (as a flush does) and drop the connection before its response can
        # have been read: the receive callback path reports the loss, and the batch is retried
        p._acc.flushing += 1
        p._send_ready()
        assert conn.in_flight == 1
        p._acc.flushing -= 1
        conn.close()
        assert not any(f.done() for f in futures)
        futures += [await p.enqueue("sender-drop", value=b"%04d" % i, partition=0) for i in range(5, 40)]
        await asyncio.wait_for(p.flush(), STEP_S)
        offsets = [f.result().offset for f in futures]
    # delivered once each and in order: the idempotent retry of the first batch is not duplicated
    assert offsets == list(range(40))
    assert await _values(bs, "sender-drop", 40) == [b"%04d" % i for i in range(40)]


async def test_close_settles_every_future_even_with_a_batch_in_flight(broker: BrokerThread) -> None:
    bs = broker.bootstrap_servers
    async with Admin(bootstrap_servers=bs) as admin:
        await admin.create_topics({"sender-close": 1})
    p = Producer(bootstrap_servers=bs, batch_size=1 << 20, linger_ms=60_000)
    await p.start()
    try:
        await p.partitions_for("sender-close")
        futures = [await p.enqueue("sender-close", value=b"%04d" % i, partition=0) for i in range(50)]
        broker.faults.inject("Produce", latency_ms=30_000)  # its answer comes long after the close
        p._acc.flushing += 1
        p._send_ready()  # on the wire now; close does not wait for it (timeout 0)
        p._acc.flushing -= 1
        futures += [await p.enqueue("sender-close", value=b"late", partition=0) for _ in range(5)]
    finally:
        await asyncio.wait_for(p.close(timeout_s=0), STEP_S)
        broker.faults.clear()
    # failed because the producer closed, not left pending
    assert all(f.done() for f in futures)
    assert all(isinstance(f.exception(), IllegalStateError | KafkaConnectionError) for f in futures)
