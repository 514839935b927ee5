"""RecordAccumulator batching rules with an explicit clock."""

from __future__ import annotations

from client.accumulator import RecordAccumulator
from client.types import TopicPartition
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
