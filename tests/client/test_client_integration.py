"""Our client against the in-process broker: round trips, codecs, offsets, admin, sync facade.

Every wait here is bounded (``STEP_S`` per blocking step, a 10 s request timeout in the clients and
a 60 s pytest-timeout backstop), so a lost wakeup or a stuck request fails fast with a clear
error instead of hanging the suite, even on a slow, loaded machine.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import threading
import time
from collections.abc import Iterator

import pytest

from broker import BrokerConfig, BrokerThread
from client import Admin, Consumer, Producer, TopicPartition
from client.errors import ConcurrentAccessError, KafkaError
from client.partitioner import partition_for_key
from client.sync import SyncAdmin, SyncConsumer, SyncProducer

pytestmark = pytest.mark.timeout(60)

STEP_S = 20.0                      # upper bound for one blocking step of a test
FAST = {"request_timeout_ms": 10_000}   # a lost response surfaces as KafkaTimeoutError well within STEP_S


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerThread]:
    cfg = BrokerConfig(host="127.0.0.1", port=0, data_dir=tmp_path_factory.mktemp("broker"),
                       group_initial_rebalance_delay_ms=0, group_min_session_timeout_ms=1000)
    with BrokerThread(cfg) as b:
        yield b


@pytest.fixture(scope="module")
def bs(broker: BrokerThread) -> str:
    return broker.bootstrap_servers


async def consume_n(c: Consumer, n: int, timeout_s: float = STEP_S) -> list:
    out: list = []
    deadline = time.monotonic() + timeout_s
    while len(out) < n:
        if time.monotonic() >= deadline:
            raise AssertionError(f"got {len(out)} of {n} records within {timeout_s} s: {out}")
        for recs in (await c.getmany(timeout_ms=1000)).values():
            out += recs
    return out


async def bounded(aw, timeout_s: float = STEP_S):  # type: ignore[no-untyped-def]
    return await asyncio.wait_for(aw, timeout_s)


async def test_round_trip_with_group_commit(bs: str) -> None:
    async with Admin(bootstrap_servers=bs, **FAST) as admin:
        await admin.create_topics({"rt": 3})
    async with Producer(bootstrap_servers=bs, **FAST) as p:
        meta = await bounded(p.send("rt", value=b"first", key=b"k1", headers=[("h", b"v")]))
        assert meta.topic == "rt" and meta.offset == 0 and meta.partition == partition_for_key(b"k1", 3)
        futs = [await p.enqueue("rt", value=b"v%d" % i, key=b"%d" % i) for i in range(200)]
        await p.flush(STEP_S)
        assert all(f.done() and f.exception() is None for f in futs)
    async with Consumer("rt", bootstrap_servers=bs, group_id="g-rt", auto_offset_reset="earliest",
                        enable_auto_commit=False, partition_assignment_strategy=["range"], **FAST) as c:
        recs = await consume_n(c, 201)
        assert c.assignment() == {TopicPartition("rt", p) for p in range(3)}
        first = next(r for r in recs if r.value == b"first")
        assert first.key == b"k1" and first.headers == [("h", b"v")] and first.timestamp == meta.timestamp
        assert sorted(r.value for r in recs if r.value != b"first") == sorted(b"v%d" % i for i in range(200))
        await bounded(c.commit())
        ends = await bounded(c.end_offsets(c.assignment()))
        for tp in c.assignment():
            assert await bounded(c.committed(tp)) == ends[tp] == await bounded(c.position(tp))
    async with Consumer("rt", bootstrap_servers=bs, group_id="g-rt", auto_offset_reset="earliest", **FAST) as c2:
        assert await c2.getmany(timeout_ms=300) == {}


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
async def test_codecs(bs: str, codec: str) -> None:
    topic = f"codec-{codec}"
    async with Producer(bootstrap_servers=bs, compression_type=codec, linger_ms=20, **FAST) as p:
        futs = [await p.enqueue(topic, value=b"payload-%d" % i * 10, partition=0) for i in range(50)]
        await p.flush(STEP_S)
        assert [f.result().offset for f in futs] == list(range(50))
    async with Consumer(bootstrap_servers=bs, auto_offset_reset="earliest", **FAST) as c:
        c.assign([TopicPartition(topic, 0)])
        recs = await consume_n(c, 50)
        assert [r.value for r in recs] == [b"payload-%d" % i * 10 for i in range(50)]


async def test_assign_seek_pause_and_offset_helpers(bs: str) -> None:
    tp = TopicPartition("seek", 0)
    base_ts = int(time.time() * 1000) - 60_000
    async with Producer(bootstrap_servers=bs, enable_idempotence=True, acks="all", **FAST) as p:
        metas = [await bounded(p.send("seek", value=b"%d" % i, partition=0, timestamp_ms=base_ts + i))
                 for i in range(10)]
    assert [m.offset for m in metas] == list(range(10))
    async with Consumer(bootstrap_servers=bs, auto_offset_reset="latest", **FAST) as c:
        c.assign([tp])
        assert await bounded(c.position(tp)) == 10
        assert await bounded(c.beginning_offsets([tp])) == {tp: 0}
        assert await bounded(c.end_offsets([tp])) == {tp: 10}
        assert (await bounded(c.offsets_for_times({tp: base_ts + 5})))[tp].offset == 5
        c.seek(tp, 7)
        assert [r.offset for r in await consume_n(c, 3)] == [7, 8, 9]
        await bounded(c.seek_to_beginning(tp))
        c.pause(tp)
        assert await bounded(c.getmany(timeout_ms=200)) == {}
        c.resume(tp)
        assert (await bounded(c.getone())).offset == 0


async def test_auto_offset_reset_none_raises(bs: str) -> None:
    async with Producer(bootstrap_servers=bs, **FAST) as p:
        await bounded(p.send("noreset", value=b"x", partition=0))
    async with Consumer(bootstrap_servers=bs, group_id="g-none", auto_offset_reset="none", **FAST) as c:
        c.assign([TopicPartition("noreset", 0)])
        # Raises as soon as the (possibly still loading) coordinator says nothing is committed;
        # the generous poll timeout only matters when the machine is slow.
        with pytest.raises(KafkaError):
            await bounded(c.getmany(timeout_ms=int(STEP_S * 1000) // 2))


async def test_admin_operations(bs: str) -> None:
    async with Admin(bootstrap_servers=bs, **FAST) as admin:
        await admin.create_topics({"adm": 2})
        with pytest.raises(KafkaError):
            await admin.create_topics({"adm": 2})
        await admin.create_partitions({"adm": 4})
        assert (await admin.list_topics())["adm"] == 4
        cluster = await admin.describe_cluster()
        assert len(cluster.brokers) == 1
        async with Producer(bootstrap_servers=bs, **FAST) as p:
            for i in range(8):
                await bounded(p.send("adm", value=b"x", partition=i % 4))
        async with Consumer("adm", bootstrap_servers=bs, group_id="g-adm", auto_offset_reset="earliest",
                            enable_auto_commit=False, **FAST) as c:
            await consume_n(c, 8)
            await bounded(c.commit({TopicPartition("adm", 0): 1}))
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
    with SyncAdmin(bootstrap_servers=bs, **FAST) as admin:
        admin.create_topics({"sync": 1})
    with SyncProducer(bootstrap_servers=bs, **FAST) as p:
        assert p.send("sync", value=b"a").offset == 0
        futs = [p.send_async("sync", value=b"%d" % i) for i in range(10)]
        p.flush(STEP_S)
        assert [f.result(STEP_S).offset for f in futs] == list(range(1, 11))
    with SyncConsumer("sync", bootstrap_servers=bs, group_id="g-sync", auto_offset_reset="earliest", **FAST) as c:
        got: list = []
        deadline = time.monotonic() + STEP_S
        while len(got) < 11:
            assert time.monotonic() < deadline, f"got {len(got)} of 11 records within {STEP_S} s"
            for recs in c.getmany(timeout_ms=1000).values():
                got += recs
        tp = TopicPartition("sync", 0)
        assert c.end_offsets([tp]) == {tp: 11}
        entered = threading.Event()
        release = threading.Event()
        errors: list[BaseException] = []

        def hog() -> None:
            c._call(lambda: _hold(entered, release))

        t = threading.Thread(target=hog, daemon=True)
        t.start()
        try:
            assert entered.wait(STEP_S), "the hog thread never got the consumer"
            try:
                c.getmany(timeout_ms=10)
            except ConcurrentAccessError as exc:
                errors.append(exc)
        finally:
            release.set()
            t.join(STEP_S)
        assert not t.is_alive()
        assert errors and "concurrent" in str(errors[0]).lower()


async def _hold(entered: threading.Event, release: threading.Event) -> None:
    entered.set()
    deadline = time.monotonic() + STEP_S
    while not release.is_set() and time.monotonic() < deadline:
        await asyncio.sleep(0.01)


async def test_consumer_from_two_tasks_fails_fast(bs: str) -> None:
    async with Producer(bootstrap_servers=bs, **FAST) as p:
        await bounded(p.send("two-tasks", value=b"x", partition=0))
    async with Consumer(bootstrap_servers=bs, auto_offset_reset="latest", **FAST) as c:
        c.assign([TopicPartition("two-tasks", 0)])
        # The first call must still be running when the second one starts, however slow the
        # machine: give it a long poll and wait until it owns the consumer (not a fixed sleep).
        first = asyncio.ensure_future(c.getmany(timeout_ms=int(STEP_S * 1000)))
        try:
            async with asyncio.timeout(STEP_S):
                while c._owned.owner is None and not first.done():
                    await asyncio.sleep(0)
            assert not first.done(), first
            with pytest.raises(ConcurrentAccessError):
                await c.getmany(timeout_ms=10)
        finally:
            first.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await first
        # A cancelled call releases the consumer.
        assert await bounded(c.getmany(timeout_ms=10)) == {}


async def test_metadata_update_wakes_the_fetcher_of_an_assigned_consumer(bs: str) -> None:
    async with Producer(bootstrap_servers=bs, **FAST) as p:
        await bounded(p.send("wake", value=b"x", partition=0))
    async with Consumer(bootstrap_servers=bs, auto_offset_reset="earliest", **FAST) as c:
        c.assign([TopicPartition("wake", 0)])
        fetcher, net = c._fetcher, c._net
        assert fetcher is not None and net is not None
        wakes: list[int] = []
        wake = fetcher.wake
        fetcher.wake = lambda: (wakes.append(1), wake())[1]  # type: ignore[method-assign]
        await bounded(net.refresh_metadata())
        # A manually assigned consumer has no group, but a new snapshot may carry the leader the
        # fetcher was waiting for: the fetcher must be woken, not left until the next poll.
        assert wakes
        assert [r.value for r in await consume_n(c, 1)] == [b"x"]


async def test_fetch_backs_off_on_retriable_partition_errors_and_recovers(broker: BrokerThread) -> None:
    bs = broker.bootstrap_servers
    async with Producer(bootstrap_servers=bs, **FAST) as p:
        await bounded(p.send("flaky", value=b"x", partition=0))
    fault = broker.faults.inject("Fetch", error_code=6, times=3)  # NOT_LEADER_OR_FOLLOWER
    try:
        async with Consumer(bootstrap_servers=bs, auto_offset_reset="earliest", retry_backoff_ms=300, **FAST) as c:
            c.assign([TopicPartition("flaky", 0)])
            t0 = time.monotonic()
            assert [r.value for r in await consume_n(c, 1)] == [b"x"]
            assert fault.exhausted
            # three failed fetches, each followed by a retry_backoff_ms pause (not a hot loop)
            assert time.monotonic() - t0 >= 3 * 0.3
    finally:
        broker.faults.clear()


async def test_limited_drains_and_undecoded_record_sets_hand_out_each_record_once(bs: str) -> None:
    """``max_records`` leaves decoded records buffered; ``getmany_record_sets`` hands those (re-batched)
    and the undecoded sets after them, so every offset is handed out exactly once, in order."""
    from protocol.records import RecordColumns

    async with Admin(bootstrap_servers=bs, **FAST) as admin:
        await admin.create_topics({"drain": 1})
    tp = TopicPartition("drain", 0)
    async with Producer(bootstrap_servers=bs, linger_ms=0, **FAST) as p:
        for i in range(120):
            await p.enqueue("drain", value=b"v%d" % i, key=b"k%d" % i, headers=[("i", b"%d" % i)])
        await p.flush(STEP_S)
    async with Consumer(bootstrap_servers=bs, auto_offset_reset="earliest", **FAST) as c:
        c.assign([tp])
        first: list = []
        while len(first) < 30:
            first += (await bounded(c.getmany(timeout_ms=1000, max_records=7))).get(tp, [])
            assert len(first) <= 35
        assert [r.offset for r in first] == list(range(len(first)))
        cols = RecordColumns(headers=True)
        while cols.length < 120 - len(first):
            for data, min_offset, aborted in (await bounded(c.getmany_record_sets(timeout_ms=1000))).get(tp, []):
                assert aborted is None  # read_uncommitted
                cols.add(data, min_offset)
        _, offsets, _, _, _, (valid, offs, blob), hdrs = cols.finish()
        got = memoryview(offsets).cast("q").tolist()
        assert got == list(range(len(first), 120))
        assert valid is None
        ends = memoryview(offs).cast("i").tolist()
        assert [bytes(blob[a:b]) for a, b in itertools.pairwise(ends)] == [b"v%d" % i for i in got]
        assert hdrs == [[("i", b"%d" % i)] for i in got]
        assert await bounded(c.position(tp)) == 120


async def test_a_read_committed_consumer_waits_for_undecided_transactional_offsets(bs: str) -> None:
    """A consumer starting while a transaction holds offsets for its group (KIP-447: OffsetFetch with
    require_stable, as Kafka's consumer asks) waits for the transaction instead of starting from the offset
    before it: once committed, it starts at the transaction's offsets — nothing consumed twice."""
    tp = TopicPartition("stable-in", 0)
    async with Producer(bootstrap_servers=bs, acks="all", **FAST) as p:
        for i in range(10):
            await bounded(p.send("stable-in", value=b"%d" % i, partition=0))
    async with Producer(bootstrap_servers=bs, transactional_id="stable-tx", **FAST) as txp:
        await txp.begin_transaction()
        await bounded(txp.send_offsets_to_transaction({tp: 7}, "stable-g"))
        async with Consumer(bootstrap_servers=bs, group_id="stable-g", isolation_level="read_committed",
                            auto_offset_reset="earliest", enable_auto_commit=False, **FAST) as c:
            c.assign([tp])
            # the offsets are undecided: nothing is handed out (before, records from offset 0 were)
            assert await bounded(c.getmany(timeout_ms=1500)) == {}
            await bounded(txp.commit_transaction())
            assert [r.offset for r in await consume_n(c, 3)] == [7, 8, 9]
