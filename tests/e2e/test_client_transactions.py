"""Our transactional producer against ``python -m broker``: commits and aborts as read_committed readers
(ours and confluent-kafka) see them, with transaction version 2 (what the broker offers) and version 1,
zombie fencing, the broker aborting a transaction that outlives its timeout, and consume-transform-produce
with our consumer and producer through a kill -9 of the application and of the broker."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_transactions import create_topic, end_offsets, read_topic, wait_markers

import client.txn_requests
from client import (
    AbortableTransactionError,
    Consumer,
    KafkaError,
    Producer,
    ProducerFencedError,
    TopicPartition,
    TransactionError,
)
from client.transactions import TxnState

pytestmark = pytest.mark.timeout(180)

HERE = Path(__file__).resolve().parent
PARTS = 3


async def read_ours(bs: str, topic: str, isolation: str, parts: int = PARTS, timeout_s: float = 60) -> list[bytes]:
    """Every value of ``topic`` our consumer sees at ``isolation``, up to the end it reports."""
    out: list[bytes] = []
    async with Consumer(bootstrap_servers=bs, isolation_level=isolation, auto_offset_reset="earliest") as c:
        tps = [TopicPartition(topic, p) for p in range(parts)]
        c.assign(tps)
        ends = await c.end_offsets(tps)
        deadline = time.monotonic() + timeout_s
        while [await c.position(tp) for tp in tps] < [ends[tp] for tp in tps]:
            assert time.monotonic() < deadline, "did not reach the end"
            for recs in (await c.getmany(timeout_ms=200)).values():
                out += [r.value for r in recs if r.value is not None]
    return out


@pytest.fixture(params=[2, 1], ids=["tv2", "tv1"])
def txn_version(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> int:
    if request.param == 1:
        monkeypatch.setattr(client.txn_requests, "uses_transaction_v2", lambda *_: False)
    return int(request.param)


async def test_committed_and_aborted_transactions_as_readers_see_them(shared_broker: Any, txn_version: int) -> None:
    bs = shared_broker.bootstrap_servers
    topic, offsets_topic = f"ours-txn-{txn_version}", f"ours-txn-in-{txn_version}"
    create_topic(bs, topic)
    create_topic(bs, offsets_topic, 1)
    async with Producer(bootstrap_servers=bs, transactional_id=f"ours-{txn_version}") as p:
        assert p._txn is not None and p._txn.tv2 == (txn_version == 2)
        async with p.transaction():
            for i in range(30):
                await p.enqueue(topic, b"a-%d" % i, partition=i % PARTS)
            await p.send_offsets_to_transaction({TopicPartition(offsets_topic, 0): 11}, f"g-{txn_version}")
        await p.begin_transaction()
        for i in range(30):
            await p.enqueue(topic, b"b-%d" % i, partition=i % PARTS)
        await p.send_offsets_to_transaction({TopicPartition(offsets_topic, 0): 99}, f"g-{txn_version}")
        await p.flush()
        await p.abort_transaction()
        with pytest.raises(RuntimeError):
            async with p.transaction():
                await p.send(topic, b"c-0", partition=0)
                raise RuntimeError("the block fails: the transaction is aborted")
        async with p.transaction():
            await p.send(topic, b"d-0", partition=1)
    committed = sorted([b"a-%d" % i for i in range(30)] + [b"d-0"])
    wait_markers(bs, topic, PARTS)  # written after EndTxn is answered
    assert sorted(await read_ours(bs, topic, "read_committed")) == committed
    theirs = read_topic(bs, topic, "read_committed")
    assert sorted(v for vs in theirs.values() for v in vs) == committed
    everything = await read_ours(bs, topic, "read_uncommitted")
    assert len(everything) == 30 + 30 + 1 + 1
    async with Consumer(bootstrap_servers=bs, group_id=f"g-{txn_version}") as c:
        assert await c.committed(TopicPartition(offsets_topic, 0)) == 11


async def test_a_second_producer_with_the_same_id_fences_the_first(shared_broker: Any) -> None:
    bs = shared_broker.bootstrap_servers
    topic = "ours-zombie"
    create_topic(bs, topic)
    old = Producer(bootstrap_servers=bs, transactional_id="zombie")
    new = Producer(bootstrap_servers=bs, transactional_id="zombie")
    newer = Producer(bootstrap_servers=bs, transactional_id="zombie")
    try:
        await old.start()
        await old.begin_transaction()
        await old.send(topic, b"zombie-0", partition=0)
        await new.start()  # fences old and aborts its transaction
        with pytest.raises(ProducerFencedError) as err:
            await old.commit_transaction()
        assert err.value.fatal and not err.value.abortable
        assert old._txn is not None and old._txn.state is TxnState.FATAL_ERROR
        with pytest.raises(ProducerFencedError):
            await old.begin_transaction()
        async with new.transaction():
            await new.send(topic, b"new-0", partition=0)
        await new.begin_transaction()
        await newer.start()  # fences new between two transactions
        with pytest.raises(KafkaError):  # the stale epoch is refused (INVALID_PRODUCER_EPOCH)
            await new.send(topic, b"zombie-1", partition=0)
        with pytest.raises(TransactionError):
            await new.commit_transaction()
        with pytest.raises(ProducerFencedError):  # ending the transaction shows the fence
            await new.abort_transaction()
        async with newer.transaction():
            await newer.send(topic, b"newer-0", partition=0)
    finally:
        for p in (old, new, newer):
            await p.close()
    wait_markers(bs, topic, PARTS)  # written after EndTxn is answered
    assert await read_ours(bs, topic, "read_committed") == [b"new-0", b"newer-0"]


async def test_the_broker_aborts_a_transaction_past_its_timeout(shared_broker: Any) -> None:
    bs = shared_broker.bootstrap_servers
    topic = "ours-timeout"
    create_topic(bs, topic, 1)
    async with Producer(bootstrap_servers=bs, transactional_id="slow", transaction_timeout_ms=1000) as p:
        await p.begin_transaction()
        await p.send(topic, b"late", partition=0)
        # the coordinator aborts it: the partition's last stable offset passes the record and its marker
        deadline = time.monotonic() + 60
        while end_offsets(bs, topic, 1, 1)[0] < 2:
            assert time.monotonic() < deadline, "the transaction was not aborted by the broker"
            await asyncio.sleep(0.2)
        with pytest.raises(TransactionError) as err:
            await p.commit_transaction()
        assert err.value.fatal or err.value.abortable
    assert await read_ours(bs, topic, "read_committed", 1) == []
    assert read_topic(bs, topic, "read_committed", 1) == {0: []}
    async with Producer(bootstrap_servers=bs, transactional_id="slow") as again, again.transaction():
        await again.send(topic, b"on-time", partition=0)
    wait_markers(bs, topic, 1)  # written after EndTxn is answered
    assert await read_ours(bs, topic, "read_committed", 1) == [b"on-time"]


async def test_a_failed_send_makes_the_transaction_abortable(shared_broker: Any) -> None:
    bs = shared_broker.bootstrap_servers
    topic = "ours-abortable"
    create_topic(bs, topic, 1)
    async with Producer(bootstrap_servers=bs, transactional_id="abortable", max_request_size=10 << 20) as p:
        await p.begin_transaction()
        ok = await p.enqueue(topic, b"fine", partition=0)
        too_big = await p.enqueue(topic, b"x" * (2 << 20), partition=0)  # the broker refuses it
        with pytest.raises(AbortableTransactionError):
            await p.commit_transaction()
        assert ok.done() and too_big.done() and too_big.exception() is not None
        await p.abort_transaction()
        async with p.transaction():
            await p.send(topic, b"after", partition=0)
    wait_markers(bs, topic, 1)  # written after EndTxn is answered
    assert await read_ours(bs, topic, "read_committed", 1) == [b"after"]


class App:
    """``ctp_app.py`` as a process; its ``committed N`` lines counted as they come."""

    def __init__(self, bs: str, *args: str) -> None:
        self.proc = subprocess.Popen([sys.executable, str(HERE / "ctp_app.py"), bs, *args], stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True)
        self.committed = 0
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line.rstrip())
            if line.startswith("committed "):
                self.committed += int(line.split()[1])

    def wait_committed(self, n: int, timeout_s: float = 90) -> None:
        deadline = time.monotonic() + timeout_s
        while self.committed < n:
            assert self.proc.poll() is None, "the application exited:\n" + "\n".join(self.lines[-30:])
            assert time.monotonic() < deadline, f"only {self.committed} committed:\n" + "\n".join(self.lines[-30:])
            time.sleep(0.05)

    def kill9(self) -> None:
        self.proc.kill()
        self.proc.wait(30)


@pytest.fixture
def apps() -> Iterator[list[App]]:
    started: list[App] = []
    yield started
    for a in started:
        if a.proc.poll() is None:
            a.kill9()


@pytest.mark.timeout(300)
def test_consume_transform_produce_exactly_once_through_kill_9_of_app_and_broker(broker_process: Any,
                                                                               apps: list[App]) -> None:
    n = 900
    bs = broker_process.bootstrap_servers
    create_topic(bs, "ctp-ours-in")
    create_topic(bs, "ctp-ours-out")
    from confluent_kafka import Producer as CKProducer

    ck = CKProducer({"bootstrap.servers": bs})
    for i in range(n):
        ck.produce("ctp-ours-in", value=b"in-%d" % i, partition=i % PARTS)
    assert ck.flush(30) == 0
    args = ("ctp-ours-in", "ctp-ours-out", "ctp-ours", "ctp-ours-tx", "classic")
    apps.append(App(bs, *args))
    apps[-1].wait_committed(n // 4)
    apps[-1].kill9()  # mid-stream, likely inside a transaction
    apps.append(App(bs, *args))
    apps[-1].wait_committed(n // 4)
    broker_process.kill9()
    broker_process.start()
    app = apps[-1]
    assert app.proc.wait(180) == 0, "\n".join(app.lines[-40:])
    expected = sorted(b"out-in-%d" % i for i in range(n))
    wait_markers(bs, "ctp-ours-out", PARTS)  # the last transaction's, written after EndTxn is answered
    theirs = read_topic(bs, "ctp-ours-out", "read_committed", PARTS, timeout=60)
    counts = Counter(v for vs in theirs.values() for v in vs)
    assert sorted(counts) == expected, f"missing: {sorted(set(expected) - set(counts))[:10]}"
    assert set(counts.values()) == {1}, [v for v, c in counts.items() if c > 1][:10]
    for p, vs in theirs.items():
        assert vs == [b"out-in-%d" % i for i in range(p, n, PARTS)]  # in input order per partition
    ours = asyncio.run(read_ours(bs, "ctp-ours-out", "read_committed", timeout_s=60))
    assert sorted(ours) == expected
