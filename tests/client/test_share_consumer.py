"""Our ShareConsumer (KIP-932) against ``python -m broker``: records acquired with their delivery counts,
ACCEPT, RELEASE (redelivered at once with delivery count 2), REJECT (never again), RENEW (a slow record
stays ours past its lock), implicit acknowledgement, two consumers sharing one partition, and close
(the member leaves the group; what it held goes back at once).  Short heartbeats and locks
(``share_helpers.SHARE_SETTINGS``); waits are liveness bounds only."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from share_helpers import share_args, share_broker, unique

from broker.testing.harness import BrokerProcess
from client import AcknowledgeType, Admin, Producer, Record, ShareConsumer, TopicPartition
from client.errors import ConcurrentAccessError, IllegalStateError
from client.share_fetcher import Acknowledgements
from client.sync import SyncShareConsumer
from protocol.api import ApiKey
from protocol.error_codes import ErrorCode

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]

WAIT_S = 60.0  # a liveness bound for one wait, even on a busy machine


@pytest.fixture(scope="module")
def bs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with share_broker(tmp_path_factory.mktemp("share-client") / "data") as bootstrap:
        yield bootstrap


async def new_queue(bs: str, partitions: int = 1, **group_configs: str) -> tuple[str, str]:
    """A topic (one partition unless told) and a share group reading it from the start (with ``group_configs``)."""
    group, topic = unique("g"), unique("t")
    async with Admin(bootstrap_servers=bs) as admin:
        await admin.create_topics({topic: partitions})
        configs = {"share.auto.offset.reset": "earliest", **group_configs}
        await admin.incremental_alter_configs("group", group, [("set", k, v) for k, v in configs.items()])
    return group, topic


async def produce(bs: str, topic: str, values: list[str], batch: int = 10) -> None:
    """``values`` to partition 0, ``batch`` per log batch (a share fetch acquires whole log batches)."""
    async with Producer(bootstrap_servers=bs) as p:
        for i in range(0, len(values), batch):
            for v in values[i:i + batch]:
                await p.enqueue(topic, v.encode(), partition=0)
            await p.flush()


async def take(sc: ShareConsumer, n: int, *, max_records: int | None = None) -> list[Record]:
    """At least ``n`` records from ``sc`` (explicit mode: the caller acknowledges them)."""
    got: list[Record] = []
    deadline = time.monotonic() + WAIT_S
    while len(got) < n:
        assert time.monotonic() < deadline, f"got {len(got)} of {n} records"
        for records in (await sc.getmany(timeout_ms=500, max_records=max_records)).values():
            got += records
    return got


async def drain_until(sc: ShareConsumer, marker: str, *, explicit: bool = True) -> list[Record]:
    """Every record ``sc`` gets (accepting each) until the one with value ``marker``."""
    got: list[Record] = []
    deadline = time.monotonic() + WAIT_S
    while not any(r.value == marker.encode() for r in got):
        assert time.monotonic() < deadline, f"no {marker!r} after {[r.value for r in got]}"
        for records in (await sc.getmany(timeout_ms=500)).values():
            for r in records:
                if explicit:
                    sc.acknowledge(r, AcknowledgeType.ACCEPT)
            got += records
    return got


def share(bs: str, topic: str, group: str, mode: str = "explicit", **config: Any) -> ShareConsumer:
    return ShareConsumer(topic, bootstrap_servers=bs, group_id=group, acknowledgement_mode=mode, **config)


def values_of(records: list[Record]) -> list[str]:
    return [r.value.decode() for r in records if r.value is not None]


async def test_records_come_with_delivery_count_1_and_accepted_ones_never_come_back(bs: str) -> None:
    group, topic = await new_queue(bs)
    await produce(bs, topic, [f"v{i}" for i in range(10)])
    async with share(bs, topic, group) as sc:
        records = await take(sc, 10)
        assert values_of(records) == [f"v{i}" for i in range(10)]
        assert [r.offset for r in records] == list(range(10))
        assert {r.delivery_count for r in records} == {1}
        assert all(isinstance(r, Record) and r.topic == topic and r.partition == 0 for r in records)
        for r in records:
            sc.acknowledge(r, AcknowledgeType.ACCEPT)
        assert await sc.commit() == {TopicPartition(topic, 0): None}
        assert sc.acquisition_lock_timeout_ms == 30_000
    async with share(bs, topic, group) as again:
        await produce(bs, topic, ["end"])
        assert values_of(await drain_until(again, "end")) == ["end"]


async def test_a_released_record_comes_back_at_once_with_delivery_count_2(bs: str) -> None:
    group, topic = await new_queue(bs)
    await produce(bs, topic, ["a", "b", "c"])
    async with share(bs, topic, group) as sc:
        first = await take(sc, 3)
        assert values_of(first) == ["a", "b", "c"]
        sc.acknowledge(first[0], AcknowledgeType.ACCEPT)
        sc.acknowledge(first[1], AcknowledgeType.RELEASE)
        sc.acknowledge(first[2], AcknowledgeType.ACCEPT)
        [again] = await take(sc, 1)  # the release rides on this fetch; the lock (30 s) has not run out
        assert (again.value, again.offset, again.delivery_count) == (b"b", 1, 2)
        sc.acknowledge(again, AcknowledgeType.ACCEPT)
        await sc.commit()


async def test_a_rejected_record_never_comes_back(bs: str) -> None:
    group, topic = await new_queue(bs)
    await produce(bs, topic, ["keep", "poison", "keep2"])
    async with share(bs, topic, group) as sc:
        records = await take(sc, 3)
        for r in records:
            sc.acknowledge(r, AcknowledgeType.REJECT if r.value == b"poison" else AcknowledgeType.ACCEPT)
        assert await sc.commit() == {TopicPartition(topic, 0): None}
        await produce(bs, topic, ["end"])
        assert values_of(await drain_until(sc, "end")) == ["end"]


async def test_renew_keeps_a_slow_record_past_its_lock(bs: str) -> None:
    # A lock several times longer than one renewal round (a commit and a 200 ms poll), so that a busy
    # machine pausing the loop for a moment does not let the lock run out between two renewals.
    group, topic = await new_queue(bs, **{"share.record.lock.duration.ms": "3000"})
    await produce(bs, topic, ["slow"])
    async with share(bs, topic, group) as slow, share(bs, topic, group) as other:
        [record] = await take(slow, 1)
        assert slow.acquisition_lock_timeout_ms == 3000
        seen_by_other: list[Record] = []
        held_until = time.monotonic() + 6.0  # two lock durations
        while time.monotonic() < held_until:
            slow.acknowledge(record, AcknowledgeType.RENEW)
            assert await slow.commit() == {TopicPartition(topic, 0): None}
            for records in (await other.getmany(timeout_ms=200)).values():
                seen_by_other += records
        assert seen_by_other == []
        slow.acknowledge(record, AcknowledgeType.ACCEPT)
        assert await slow.commit() == {TopicPartition(topic, 0): None}
        await produce(bs, topic, ["end"])
        assert values_of(await drain_until(other, "end", explicit=False)) == ["end"]


async def test_explicit_mode_wants_every_record_acknowledged_and_implicit_mode_none(bs: str) -> None:
    group, topic = await new_queue(bs)
    await produce(bs, topic, ["x", "y"])
    async with share(bs, topic, group) as sc:
        records = await take(sc, 2)
        sc.acknowledge(records[0])
        with pytest.raises(IllegalStateError, match="not acknowledged"):
            await sc.getmany(timeout_ms=0)
        with pytest.raises(IllegalStateError, match="not a record"):
            sc.acknowledge(records[0])  # acknowledged already
        sc.acknowledge(records[1], AcknowledgeType.ACCEPT)
        await sc.commit()
    group, topic = await new_queue(bs)
    await produce(bs, topic, ["p", "q"])
    async with share(bs, topic, group, "implicit") as sc:
        records = await take(sc, 2)
        with pytest.raises(IllegalStateError, match="explicit"):
            sc.acknowledge(records[0])
        assert await sc.commit() == {TopicPartition(topic, 0): None}  # the batch, accepted
    async with share(bs, topic, group) as again:
        await produce(bs, topic, ["end"])
        assert values_of(await drain_until(again, "end")) == ["end"]


async def test_records_of_two_partitions_acknowledged_out_of_order_with_mixed_types(bs: str) -> None:
    group, topic = await new_queue(bs, partitions=2)
    async with Producer(bootstrap_servers=bs) as p:
        for partition in (0, 1):
            for i in range(20):
                await p.enqueue(topic, f"p{partition}-{i}".encode(), partition=partition)
            await p.flush()

    def final(r: Record) -> AcknowledgeType:  # for the renewed ones (even offsets)
        return AcknowledgeType.RELEASE if r.offset % 4 == 2 else AcknowledgeType.ACCEPT

    async with share(bs, topic, group) as sc:
        seen: list[Record] = []
        renewed: list[Record] = []
        deadline = time.monotonic() + WAIT_S
        while len(seen) < 40:
            assert time.monotonic() < deadline, f"got {len(seen)} of 40 records"
            for records in (await sc.getmany(timeout_ms=500)).values():
                seen += records
                for r in reversed(records):  # backwards; odd offsets accepted, even ones kept (RENEW) for later
                    if r.offset % 2 == 0:
                        sc.acknowledge(r, AcknowledgeType.RENEW)
                        renewed.append(r)
                    else:
                        sc.acknowledge(r, AcknowledgeType.ACCEPT)
        assert sorted(values_of(seen)) == sorted(f"p{p}-{i}" for p in (0, 1) for i in range(20))
        # the renewed ones: backwards, the two partitions interleaved, RELEASE among ACCEPTs
        p0, p1 = (sorted((r for r in renewed if r.partition == p), key=lambda r: -r.offset) for p in (0, 1))
        for r0, r1 in zip(p0, p1, strict=True):
            sc.acknowledge(r0, final(r0))
            sc.acknowledge(r1, final(r1))
        with pytest.raises(IllegalStateError, match="not a record"):
            sc.acknowledge(p1[3])  # acknowledged already
        assert await sc.commit() == {TopicPartition(topic, 0): None, TopicPartition(topic, 1): None}
        released = {(r.partition, r.offset) for r in renewed if final(r) is AcknowledgeType.RELEASE}
        again: list[Record] = []
        while len(again) < len(released):
            assert time.monotonic() < deadline, f"got {len(again)} of {len(released)} released records again"
            for records in (await sc.getmany(timeout_ms=500)).values():
                for r in records:
                    sc.acknowledge(r, AcknowledgeType.ACCEPT)
                again += records
        assert sorted((r.partition, r.offset, r.delivery_count) for r in again) == sorted(
            (p, o, 2) for p, o in released)
        await sc.commit()
        assert await sc.getmany(timeout_ms=500) == {}


async def test_two_consumers_share_one_partition(bs: str) -> None:
    group, topic = await new_queue(bs)
    tp = TopicPartition(topic, 0)
    async with share(bs, topic, group, "implicit", max_poll_records=10) as a, \
            share(bs, topic, group, "implicit", max_poll_records=10) as b:
        deadline = time.monotonic() + WAIT_S
        while not (a.assignment() == b.assignment() == {tp}):
            assert time.monotonic() < deadline, (a.assignment(), b.assignment())
            await asyncio.gather(a.getmany(timeout_ms=200), b.getmany(timeout_ms=200))
        expected = [f"v{i}" for i in range(200)]
        await produce(bs, topic, expected)
        got: dict[str, list[Record]] = {"a": [], "b": []}

        async def read(name: str, sc: ShareConsumer) -> None:
            while len(got["a"]) + len(got["b"]) < len(expected) and time.monotonic() < deadline:
                for records in (await sc.getmany(timeout_ms=300, max_records=10)).values():
                    got[name] += records
                await asyncio.sleep(0)

        deadline = time.monotonic() + WAIT_S
        await asyncio.gather(read("a", a), read("b", b))
        everything = values_of(got["a"]) + values_of(got["b"])
        assert sorted(everything) == sorted(expected)  # each once: the two got disjoint records
        assert got["a"] and got["b"], "both members read the partition"
        assert {r.delivery_count for r in got["a"] + got["b"]} == {1}


async def share_group_members(bs: str, group: str) -> list[str]:
    async with Admin(bootstrap_servers=bs) as admin:
        _, resp = await admin.net.send_any(ApiKey.SHARE_GROUP_DESCRIBE,
                                           {"group_ids": [group], "include_authorized_operations": False})
    [described] = resp.groups
    return [m.member_id for m in described.members]


async def test_close_leaves_the_group_and_gives_back_what_it_held(bs: str) -> None:
    group, topic = await new_queue(bs, **{"share.record.lock.duration.ms": "60000"})
    await produce(bs, topic, ["held"])
    sc = share(bs, topic, group)
    await sc.start()
    [record] = await take(sc, 1)
    member = sc.member_id
    assert await share_group_members(bs, group) == [member]
    await sc.close()  # without acknowledging: the record goes back now, not after its 60 s lock
    assert await share_group_members(bs, group) == []
    async with share(bs, topic, group) as next_one:
        [again] = await take(next_one, 1)
        assert (again.value, again.offset, again.delivery_count) == (b"held", record.offset, 2)
        next_one.acknowledge(again)
        await next_one.commit()


async def test_the_synchronous_facade(bs: str) -> None:
    group, topic = await new_queue(bs)
    await produce(bs, topic, ["s0", "s1", "s2"])

    def consume() -> tuple[list[tuple[bytes | None, int | None]], Any]:
        with SyncShareConsumer(topic, bootstrap_servers=bs, group_id=group, acknowledgement_mode="explicit") as sc:
            got: list[Record] = []
            deadline = time.monotonic() + WAIT_S
            while len(got) < 3 and time.monotonic() < deadline:
                for records in sc.getmany(timeout_ms=500).values():
                    for r in records:
                        sc.acknowledge(r, AcknowledgeType.RELEASE if r.value == b"s1" else AcknowledgeType.ACCEPT)
                    got += records
            while len(got) < 4 and time.monotonic() < deadline:  # s1 again
                for records in sc.getmany(timeout_ms=500).values():
                    for r in records:
                        sc.acknowledge(r)
                    got += records
            return [(r.value, r.delivery_count) for r in got], sc.commit()

    got, committed = await asyncio.to_thread(consume)
    assert got == [(b"s0", 1), (b"s1", 1), (b"s2", 1), (b"s1", 2)]
    assert committed == {TopicPartition(topic, 0): None}


async def test_buffered_counts_what_a_fetch_acquired_beyond_max_records(bs: str) -> None:
    """A fetch acquires whole log batches: what getmany did not hand out is counted, and comes next."""
    group, topic = await new_queue(bs)
    await produce(bs, topic, [f"b{i}" for i in range(10)])  # one log batch
    async with share(bs, topic, group) as sc:
        assert sc.buffered == 0
        first = await take(sc, 1, max_records=3)
        assert len(first) == 3 and sc.buffered == 7
        for r in first:
            sc.acknowledge(r)
        rest = (await sc.getmany(timeout_ms=0, max_records=sc.buffered)).get(TopicPartition(topic, 0), [])
        assert values_of(rest) == [f"b{i}" for i in range(3, 10)] and sc.buffered == 0
        for r in rest:
            sc.acknowledge(r)
        assert await sc.commit() == {TopicPartition(topic, 0): None}


async def test_a_record_held_past_its_lock_goes_to_another_member_and_its_late_ack_fails(bs: str) -> None:
    group, topic = await new_queue(bs, **{"share.record.lock.duration.ms": "1000"})
    await produce(bs, topic, ["stuck"])
    async with share(bs, topic, group) as stalled, share(bs, topic, group) as other:
        [record] = await take(stalled, 1)
        [again] = await take(other, 1)  # once the lock ran out
        assert (again.value, again.offset, again.delivery_count) == (b"stuck", record.offset, 2)
        stalled.acknowledge(record, AcknowledgeType.ACCEPT)
        [(tp, error)] = (await stalled.commit()).items()
        assert tp == TopicPartition(topic, 0) and error is not None and error.code == ErrorCode.INVALID_RECORD_STATE
        other.acknowledge(again, AcknowledgeType.ACCEPT)
        assert await other.commit() == {TopicPartition(topic, 0): None}


def test_acknowledgements_go_in_batches_of_consecutive_offsets() -> None:
    acks = Acknowledgements()
    tp = TopicPartition("t", 0)
    for offset, ack_type in [(5, 1), (3, 1), (4, 1), (7, 2), (8, 3), (10, 0)]:
        acks.add(tp, offset, ack_type)
    assert acks.pending[tp].batches() == [
        {"first_offset": 3, "last_offset": 5, "acknowledge_types": [1]},
        {"first_offset": 7, "last_offset": 8, "acknowledge_types": [2, 3]},
        {"first_offset": 10, "last_offset": 10, "acknowledge_types": [0]}]
    taken = acks.take([tp])
    assert list(taken) == [tp] and taken[tp].offsets() == {3: 1, 4: 1, 5: 1, 7: 2, 8: 3, 10: 0} and not acks


async def test_kill_9_of_the_broker_loses_nothing_and_brings_back_nothing_acknowledged(tmp_path: Path) -> None:
    bp = BrokerProcess(tmp_path / "data", extra_args=share_args(), cwd=Path(__file__).resolve().parents[2])
    bp.start()
    try:
        bs = bp.bootstrap_servers
        group, topic = await new_queue(bs)
        await produce(bs, topic, [f"v{i}" for i in range(20)])
        async with share(bs, topic, group, max_poll_records=10) as sc:
            first = await take(sc, 10, max_records=10)
            for r in first:
                sc.acknowledge(r, AcknowledgeType.ACCEPT)
            assert await sc.commit() == {TopicPartition(topic, 0): None}
            held = await take(sc, 10, max_records=10)  # not acknowledged when the broker dies
            assert values_of(first + held) == [f"v{i}" for i in range(20)]
            bp.kill9()
            bp.start()
            for r in held:
                sc.acknowledge(r, AcknowledgeType.ACCEPT)  # too late: the session they were acquired in is gone
            [(tp, error)] = (await sc.commit()).items()
            assert tp == TopicPartition(topic, 0) and error is not None, error
            again = await drain_until(sc, "v19")
            assert sorted(values_of(again)) == sorted(values_of(held))  # each once more, none acknowledged
            assert await sc.commit() == {TopicPartition(topic, 0): None}
    finally:
        if bp.alive():
            bp.stop()


async def test_one_task_at_a_time(bs: str) -> None:
    group, topic = await new_queue(bs)
    async with share(bs, topic, group) as sc:
        first = asyncio.ensure_future(sc.getmany(timeout_ms=int(WAIT_S * 1000)))
        async with asyncio.timeout(WAIT_S):
            while sc._owned.owner is None:  # until the first call is inside
                await asyncio.sleep(0)
        with pytest.raises(ConcurrentAccessError, match="in use"):
            await sc.getmany(timeout_ms=0)
        await produce(bs, topic, ["x"])  # the first call returns with it
        assert values_of([r for records in (await first).values() for r in records]) == ["x"]
        sc.acknowledge(next(iter((await first).values()))[0])
