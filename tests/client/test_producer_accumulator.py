"""RecordAccumulator batching rules with an explicit clock, and the delivery of an acknowledged
batch's futures (compiled ``complete_deliveries`` against its pure-Python twin)."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from peers import compiled_codec

import client.accumulator as acc_module
from client.accumulator import RecordAccumulator, py_complete_deliveries
from client.types import RecordMetadata, TopicPartition
from protocol.records import decode_record_set

A = TopicPartition("t", 0)
B = TopicPartition("t", 1)


def leader(tp: TopicPartition) -> int:
    return 7


def test_linger_holds_batch_until_deadline() -> None:
    acc = RecordAccumulator(batch_size=10_000, linger_ms=5)
    acc.append(A, b"k", b"v", None, 1, "f1", now_ms=100)
    assert acc.ready(104, leader) == {}
    assert acc.next_deadline() == 105
    ready = acc.ready(105, leader)
    assert [len(b) for b in ready[7]] == [1]


def test_full_batch_is_ready_immediately_and_new_one_opens() -> None:
    acc = RecordAccumulator(batch_size=200, linger_ms=1000)
    results = [acc.append(A, None, b"x" * 50, None, 1, i, now_ms=0) for i in range(5)]
    closed = [c for c, _ in results]
    opened = [o for _, o in results]
    # one 72-byte record fits a 200-byte batch (61 bytes of overhead) but two do not
    assert closed == [False, True, True, True, True]
    assert opened == [True, True, True, True, True]
    ready = acc.ready(0, leader)
    assert len(ready[7]) == 1 and 1 <= len(ready[7][0]) < 5
    assert A in acc.open


def test_one_batch_in_flight_per_partition_keeps_order() -> None:
    acc = RecordAccumulator(batch_size=100, linger_ms=0)
    for i in range(10):
        acc.append(A, None, b"y" * 40, None, 1, i, now_ms=0)
    first = acc.ready(0, leader)[7][0]
    assert acc.ready(0, leader) == {}
    acc.complete(first)
    second = acc.ready(0, leader)[7][0]
    assert second.futures[0] == len(first)


def test_requeue_goes_first_and_respects_backoff() -> None:
    acc = RecordAccumulator(batch_size=100, linger_ms=0)
    acc.append(A, None, b"1", None, 1, "a", now_ms=0)
    batch = acc.ready(0, leader)[7][0]
    acc.append(A, None, b"2", None, 1, "b", now_ms=0)
    acc.requeue(batch, retry_at_ms=50)
    acc.in_flight.discard(A)
    assert acc.ready(10, leader) == {}
    again = acc.ready(50, leader)[7][0]
    assert again is batch


def test_flush_ignores_linger_and_partitions_group_by_leader() -> None:
    acc = RecordAccumulator(batch_size=10_000, linger_ms=10_000)
    acc.append(A, None, b"1", None, 1, "a", now_ms=0)
    acc.append(B, None, b"2", None, 1, "b", now_ms=0)
    acc.flushing += 1
    ready = acc.ready(1, lambda tp: tp.partition)
    assert set(ready) == {0, 1}


def test_unknown_leader_is_skipped() -> None:
    acc = RecordAccumulator(batch_size=10, linger_ms=0)
    acc.append(A, None, b"123456789012", None, 1, "a", now_ms=0)
    assert acc.ready(0, lambda tp: None) == {}
    assert acc.has_unsent()


def test_expired_batches_are_returned() -> None:
    acc = RecordAccumulator(batch_size=10, linger_ms=0)
    acc.append(A, None, b"123456789012", None, 1, "a", now_ms=0)
    assert acc.expire(100, 1000) == []
    assert len(acc.expire(2000, 1000)) == 1


def test_batch_encodes_once_with_sequence() -> None:
    acc = RecordAccumulator(batch_size=1000, linger_ms=0)
    acc.append(A, b"k", b"v", [("h", b"x")], 123, "a", now_ms=0)
    batch = acc.ready(0, leader)[7][0]
    data = batch.encode(0, producer_id=5, producer_epoch=0, base_sequence=9)
    assert batch.encode(0, 6, 0, 11) is data and batch.base_sequence == 9
    (rec,) = list(decode_record_set(data))
    assert (rec.key, rec.value, rec.headers, rec.timestamp) == (b"k", b"v", [("h", b"x")], 123)


# ------------------------------------------------------------------ delivering an acknowledged batch


def _compiled_complete() -> Any:
    return compiled_codec().complete_deliveries


@pytest.fixture(params=["python", "compiled"])
def complete(request: pytest.FixtureRequest) -> Callable[..., None]:
    return py_complete_deliveries if request.param == "python" else _compiled_complete()


@pytest.fixture
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    lp = asyncio.new_event_loop()
    yield lp
    lp.close()


def _outcomes(futures: list[asyncio.Future[Any]]) -> list[Any]:
    return ["cancelled" if f.cancelled() else f.result() if f.done() else "pending" for f in futures]


@pytest.mark.parametrize(("base", "step", "lat"), [(100, 1, -1), (7, 1, 1_700_000_000_000), (-1, 0, -1)])
def test_complete_deliveries_twins_agree(loop: asyncio.AbstractEventLoop, complete: Callable[..., None],
                                         base: int, step: int, lat: int) -> None:
    records = [(None, b"v", None, 1000 + i) for i in range(6)]
    futures = [loop.create_future() for _ in records]
    futures[2].cancel()  # a caller gave up on one: it is skipped, its offset still counted
    complete(futures, records, RecordMetadata, "t", 3, base, step, lat)
    expected = [RecordMetadata("t", 3, base + i * step, lat if lat != -1 else 1000 + i) for i in range(6)]
    expected[2] = "cancelled"
    assert _outcomes(futures) == expected
    assert all(type(f.result()) is RecordMetadata for f in futures if not f.cancelled())


def test_complete_deliveries_twins_refuse_the_same_input(loop: asyncio.AbstractEventLoop) -> None:
    compiled = _compiled_complete()
    for impl in (py_complete_deliveries, compiled):
        with pytest.raises(ValueError):
            impl([loop.create_future()], [], RecordMetadata, "t", 0, 0, 1, -1)
        with pytest.raises(TypeError):
            impl([], [], dict, "t", 0, 0, 1, -1)


def test_compiled_deliveries_leave_only_atom_rows_untracked(loop: asyncio.AbstractEventLoop) -> None:
    compiled = _compiled_complete()
    futures = [loop.create_future() for _ in range(2)]
    odd_ts: list[int] = []  # a timestamp a caller passed that is not an int: that row stays tracked
    compiled(futures, [(None, b"v", None, 5), (None, b"v", None, odd_ts)], RecordMetadata, "t", 0, 0, 1, -1)
    assert not gc.is_tracked(futures[0].result())
    assert gc.is_tracked(futures[1].result())


def test_the_producer_uses_the_compiled_deliveries_when_built() -> None:
    assert acc_module.complete_deliveries is _compiled_complete()
