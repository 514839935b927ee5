"""Our client against the in-process broker: round trips, codecs, offsets, admin, sync facade."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator

import pytest

from broker import BrokerConfig, BrokerThread
from client import Admin, Consumer, Producer, TopicPartition
from client.errors import ConcurrentAccessError, KafkaError
from client.partitioner import partition_for_key
from client.sync import SyncAdmin, SyncConsumer, SyncProducer


@pytest.fixture(scope="module")
def bs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    cfg = BrokerConfig(host="127.0.0.1", port=0, data_dir=tmp_path_factory.mktemp("broker"),
                       group_initial_rebalance_delay_ms=0, group_min_session_timeout_ms=1000)
    with BrokerThread(cfg) as b:
        yield b.bootstrap_servers


async def consume_n(c: Consumer, n: int) -> list:
    out: list = []
    while len(out) < n:
        for recs in (await c.getmany(timeout_ms=1000)).values():
            out += recs
    return out


async def test_round_trip_with_group_commit(bs: str) -> None:
    async with Admin(bootstrap_servers=bs) as admin:
        await admin.create_topics({"rt": 3})
    async with Producer(bootstrap_servers=bs) as p:
        meta = await p.send("rt", value=b"first", key=b"k1", headers=[("h", b"v")])
        assert meta.topic == "rt" and meta.offset == 0 and meta.partition == partition_for_key(b"k1", 3)
        futs = [await p.enqueue("rt", value=b"v%d" % i, key=b"%d" % i) for i in range(200)]
        await p.flush()
        assert all(f.done() and f.exception() is None for f in futs)
    async with Consumer("rt", bootstrap_servers=bs, group_id="g-rt", auto_offset_reset="earliest",
                        enable_auto_commit=False, partition_assignment_strategy=["range"]) as c:
        recs = await consume_n(c, 201)
        assert c.assignment() == {TopicPartition("rt", p) for p in range(3)}
        first = next(r for r in recs if r.value == b"first")
        assert first.key == b"k1" and first.headers == [("h", b"v")] and first.timestamp == meta.timestamp
        assert sorted(r.value for r in recs if r.value != b"first") == sorted(b"v%d" % i for i in range(200))
        await c.commit()
        ends = await c.end_offsets(c.assignment())
        for tp in c.assignment():
            assert await c.committed(tp) == ends[tp] == await c.position(tp)
    async with Consumer("rt", bootstrap_servers=bs, group_id="g-rt", auto_offset_reset="earliest") as c2:
        assert await c2.getmany(timeout_ms=300) == {}


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
async def test_codecs(bs: str, codec: str) -> None:
    topic = f"codec-{codec}"
    async with Producer(bootstrap_servers=bs, compression_type=codec, linger_ms=20) as p:
        futs = [await p.enqueue(topic, value=b"payload-%d" % i * 10, partition=0) for i in range(50)]
        await p.flush()
        assert [f.result().offset for f in futs] == list(range(50))
    async with Consumer(bootstrap_servers=bs, auto_offset_reset="earliest") as c:
        c.assign([TopicPartition(topic, 0)])
        recs = await consume_n(c, 50)
        assert [r.value for r in recs] == [b"payload-%d" % i * 10 for i in range(50)]


async def test_assign_seek_pause_and_offset_helpers(bs: str) -> None:
    tp = TopicPartition("seek", 0)
    base_ts = int(time.time() * 1000) - 60_000
    async with Producer(bootstrap_servers=bs, enable_idempotence=True, acks="all") as p:
        metas = [await p.send("seek", value=b"%d" % i, partition=0, timestamp_ms=base_ts + i) for i in range(10)]
    assert [m.offset for m in metas] == list(range(10))
    async with Consumer(bootstrap_servers=bs, auto_offset_reset="latest") as c:
        c.assign([tp])
        assert await c.position(tp) == 10
        assert await c.beginning_offsets([tp]) == {tp: 0}
        assert await c.end_offsets([tp]) == {tp: 10}
        assert (await c.offsets_for_times({tp: base_ts + 5}))[tp].offset == 5
        c.seek(tp, 7)
        assert [r.offset for r in await consume_n(c, 3)] == [7, 8, 9]
        await c.seek_to_beginning(tp)
        c.pause(tp)
        assert await c.getmany(timeout_ms=200) == {}
        c.resume(tp)
        assert (await c.getone()).offset == 0


async def test_auto_offset_reset_none_raises(bs: str) -> None:
    async with Producer(bootstrap_servers=bs) as p:
        await p.send("noreset", value=b"x", partition=0)
    async with Consumer(bootstrap_servers=bs, group_id="g-none", auto_offset_reset="none") as c:
        c.assign([TopicPartition("noreset", 0)])
        with pytest.raises(KafkaError):
            await c.getmany(timeout_ms=500)


async def test_admin_operations(bs: str) -> None:
    async with Admin(bootstrap_servers=bs) as admin:
        await admin.create_topics({"adm": 2})
        with pytest.raises(KafkaError):
            await admin.create_topics({"adm": 2})
        await admin.create_partitions({"adm": 4})
        assert (await admin.list_topics())["adm"] == 4
        cluster = await admin.describe_cluster()
        assert len(cluster.brokers) == 1
        async with Producer(bootstrap_servers=bs) as p:
            for i in range(8):
                await p.send("adm", value=b"x", partition=i % 4)
        async with Consumer("adm", bootstrap_servers=bs, group_id="g-adm", auto_offset_reset="earliest",
                            enable_auto_commit=False) as c:
            await consume_n(c, 8)
            await c.commit({TopicPartition("adm", 0): 1})
            groups = {g.group_id for g in await admin.list_groups()}
            assert "g-adm" in groups
            desc = (await admin.describe_groups(["g-adm"]))["g-adm"]
            assert desc.state == "Stable" and len(desc.members) == 1
            assert desc.members[0].assignment == {TopicPartition("adm", p) for p in range(4)}
        offsets = await admin.list_group_offsets("g-adm")
        assert offsets[TopicPartition("adm", 0)].offset == 1 and offsets[TopicPartition("adm", 0)].lag == 1
        await admin.delete_groups(["g-adm"])
        await admin.delete_topics(["adm"])
        assert "adm" not in await admin.list_topics()


def test_sync_facade_round_trip_and_concurrent_use_fails_fast(bs: str) -> None:
    with SyncAdmin(bootstrap_servers=bs) as admin:
        admin.create_topics({"sync": 1})
    with SyncProducer(bootstrap_servers=bs) as p:
        assert p.send("sync", value=b"a").offset == 0
        futs = [p.send_async("sync", value=b"%d" % i) for i in range(10)]
        p.flush()
        assert [f.result().offset for f in futs] == list(range(1, 11))
    with SyncConsumer("sync", bootstrap_servers=bs, group_id="g-sync", auto_offset_reset="earliest") as c:
        got: list = []
        while len(got) < 11:
            for recs in c.getmany(timeout_ms=1000).values():
                got += recs
        tp = TopicPartition("sync", 0)
        assert c.end_offsets([tp]) == {tp: 11}
        entered = threading.Event()
        release = threading.Event()
        errors: list[BaseException] = []

        def hog() -> None:
            c._call(lambda: _hold(entered, release))

        t = threading.Thread(target=hog)
        t.start()
        entered.wait()
        try:
            c.getmany(timeout_ms=10)
        except ConcurrentAccessError as exc:
            errors.append(exc)
        release.set()
        t.join()
        assert errors and "concurrent" in str(errors[0]).lower()


async def _hold(entered: threading.Event, release: threading.Event) -> None:
    entered.set()
    while not release.is_set():
        await asyncio.sleep(0.01)


async def test_consumer_from_two_tasks_fails_fast(bs: str) -> None:
    async with Producer(bootstrap_servers=bs) as p:
        await p.send("two-tasks", value=b"x", partition=0)
    async with Consumer(bootstrap_servers=bs, auto_offset_reset="latest") as c:
        c.assign([TopicPartition("two-tasks", 0)])
        first = asyncio.ensure_future(c.getmany(timeout_ms=500))
        await asyncio.sleep(0.05)
        with pytest.raises(ConcurrentAccessError):
            await c.getmany(timeout_ms=10)
        await first
