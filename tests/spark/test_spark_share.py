"""The ``kbroker`` source reading a share group (``option("shareGroup", "G")``, KIP-932) against
``python -m broker`` with short share-group heartbeats and locks: a stream copies every record once and
accepts them all, two queries on one group split the records between them, a failed micro-batch's records
come back (delivery count 2), a slow batch and the records a fetch brought beyond a batch keep their
locks, and options that do not apply are refused.  Waits are liveness bounds only."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from e2e.e2e_helpers import RawClient
from share_helpers import produce as produce_values
from share_helpers import share_args, unique, wait_until
from spark_helpers import produce

from broker.testing.harness import BrokerProcess
from client.sync import SyncAdmin, SyncShareConsumer
from client.types import Record
from protocol.api import ApiKey
from spark_jobs._share import ShareBatches

pytest.importorskip("pyarrow")
pytest.importorskip("pyspark")
from spark_jobs.source import records_to_arrow

pytestmark = [pytest.mark.spark, pytest.mark.slow, pytest.mark.timeout(240)]

REPO = Path(__file__).resolve().parents[2]
WAIT_S = 90.0  # a liveness bound for one wait, even on a busy machine


@pytest.fixture(scope="module")
def bs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    bp = BrokerProcess(tmp_path_factory.mktemp("share-spark") / "data", extra_args=share_args(), cwd=REPO)
    bp.start()
    yield bp.bootstrap_servers
    assert bp.alive(), f"broker died during the module:\n{bp.log_tail()}"
    assert bp.stop() == 0, bp.log_tail()


def new_queue(bs: str, partitions: int = 2, **group_configs: str) -> tuple[str, str]:
    """A topic and a share group reading it from the start."""
    group, topic = unique("g"), unique("t")
    with SyncAdmin(bootstrap_servers=bs) as admin:
        admin.create_topics({topic: partitions})
        configs = {"share.auto.offset.reset": "earliest", **group_configs}
        admin.incremental_alter_configs("group", group, [("set", k, v) for k, v in configs.items()])
    return group, topic


def share_stream(spark: Any, bs: str, group: str, topic: str, **options: str) -> Any:
    r = (spark.readStream.format("kbroker").option("kafka.bootstrap.servers", bs)
         .option("subscribe", topic).option("shareGroup", group).option("shareGroup.pollTimeoutMs", "300"))
    for k, v in options.items():
        r = r.option(k, v)
    return r.load()


class Collect:
    """A ``foreachBatch`` sink keeping ``(partition, offset, value, deliveryCount)`` of every committed row;
    ``fail_first`` makes its first non-empty batch fail instead (after seeing its rows)."""

    def __init__(self, fail_first: bool = False) -> None:
        self.rows: list[tuple[int, int, str, int]] = []
        self.failed: list[tuple[int, int, str, int]] = []
        self.fail_first = fail_first
        self.lock = threading.Lock()

    def __call__(self, df: Any, batch_id: int) -> None:
        rows = [(r.partition, r.offset, r.value.decode(), r.deliveryCount)
                for r in df.select("partition", "offset", "value", "deliveryCount").collect()]
        if rows and self.fail_first:
            self.fail_first = False
            self.failed = rows
            raise RuntimeError("this micro-batch fails")
        with self.lock:
            self.rows += rows

    def keys(self) -> list[tuple[int, int]]:
        with self.lock:
            return [(p, o) for p, o, _, _ in self.rows]


def all_keys(n: int, partitions: int) -> set[tuple[int, int]]:
    """``(partition, offset)`` of the ``n`` records :func:`spark_helpers.produce` wrote to a new topic."""
    return {(p, o) for p in range(partitions) for o in range(len(range(p, n, partitions)))}


def share_offsets(bs: str, group: str) -> dict[int, tuple[int, int]]:
    """DescribeShareGroupOffsets: partition -> (share start offset, lag) of the group."""
    host, port = bs.split(",")[0].rsplit(":", 1)
    client = RawClient(host, int(port))
    try:
        resp = client.request(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, 1, {"groups": [{"group_id": group, "topics": None}]})
    finally:
        client.close()
    return {p.partition_index: (p.start_offset, p.lag) for g in resp.groups for t in g.topics for p in t.partitions}


def test_available_now_copies_every_record_once_and_accepts_them(spark: Any, bs: str, tmp_path: Path) -> None:
    group, topic = new_queue(bs)
    produce(bs, topic, 600, partitions=2, headers=True)
    sink = Collect()
    q = (share_stream(spark, bs, group, topic, maxOffsetsPerTrigger="250", includeHeaders="true")
         .writeStream.foreachBatch(sink).option("checkpointLocation", str(tmp_path / "ck"))
         .trigger(availableNow=True).start())
    q.awaitTermination(WAIT_S)
    assert not q.isActive and q.exception() is None
    assert sorted(sink.keys()) == sorted(all_keys(600, 2))  # all, each once
    assert {dc for *_, dc in sink.rows} == {1}
    assert max(p["numInputRows"] for p in q.recentProgress) <= 250

    # every record was accepted when its batch committed, the last batch's too (though the query ended):
    # the group's share-partitions start past them all, nothing in flight
    wait_until(lambda: share_offsets(bs, group) == {0: (300, 0), 1: (300, 0)}, WAIT_S, 0.2,
               "the group's start offsets past every record")


def test_two_queries_on_one_share_group_split_the_records(spark: Any, bs: str, tmp_path: Path) -> None:
    group, topic = new_queue(bs, partitions=1)
    n = 400
    a, b = Collect(), Collect()
    queries = [share_stream(spark, bs, group, topic, maxOffsetsPerTrigger="50").writeStream.foreachBatch(sink)
               .option("checkpointLocation", str(tmp_path / f"ck{i}")).trigger(processingTime="200 milliseconds")
               .start() for i, sink in enumerate((a, b))]
    try:
        # both members in the group (a query's first batch is planned once its member has joined)
        wait_until(lambda: all(q.recentProgress for q in queries), WAIT_S, 0.2, "both queries' first batch")
        produce_values(bs, topic, [f"r{i}" for i in range(n)], batch=10)  # log batches of 10: a fetch takes 10s
        wait_until(lambda: len(a.keys()) + len(b.keys()) >= n, WAIT_S, 0.2, "all records in the two sinks")
    finally:
        for q in queries:
            q.stop()
    ka, kb = a.keys(), b.keys()
    assert sorted(ka + kb) == sorted(all_keys(n, 1))  # together all, none twice
    assert not set(ka) & set(kb)
    assert ka and kb, "both queries took records"


def test_a_failed_batch_is_delivered_again(spark: Any, bs: str, tmp_path: Path) -> None:
    group, topic = new_queue(bs, partitions=1, **{"share.record.lock.duration.ms": "2000"})
    produce(bs, topic, 50)
    failing = Collect(fail_first=True)
    q = (share_stream(spark, bs, group, topic).writeStream.foreachBatch(failing)
         .option("checkpointLocation", str(tmp_path / "ck")).trigger(availableNow=True).start())
    with pytest.raises(Exception, match="this micro-batch fails"):
        q.awaitTermination(WAIT_S)
    assert failing.failed and not failing.rows
    assert {dc for *_, dc in failing.failed} == {1}

    sink = Collect()  # the query again, on its checkpoint: the failed batch is planned again, empty now
    q = (share_stream(spark, bs, group, topic).writeStream.foreachBatch(sink)
         .option("checkpointLocation", str(tmp_path / "ck")).trigger(processingTime="200 milliseconds").start())
    try:
        wait_until(lambda: len(sink.keys()) >= 50, WAIT_S, 0.2, "the records again")
    finally:
        q.stop()
    assert sorted(sink.keys()) == sorted(all_keys(50, 1))
    failed = {(p, o) for p, o, _, _ in failing.failed}
    assert {(p, o): dc for p, o, _, dc in sink.rows if (p, o) in failed} == dict.fromkeys(failed, 2)


def test_a_slow_batch_keeps_its_records_past_the_lock_duration(spark: Any, bs: str, tmp_path: Path) -> None:
    """The locks of a running batch's records are renewed: another member polling the group while the batch
    takes two lock durations gets none of them.  (The lock is long next to the source's renewal interval, half
    a lock, so that a busy machine delaying one renewal for a moment does not let the locks run out.)"""
    group, topic = new_queue(bs, partitions=1, **{"share.record.lock.duration.ms": "3000"})
    produce(bs, topic, 30)
    other: list[Any] = []
    stop = threading.Event()

    def poll_other(sc: SyncShareConsumer) -> None:
        with sc:
            while not stop.is_set():
                for records in sc.getmany(timeout_ms=200).values():
                    other.extend(records)  # implicit mode: accepted with the next poll

    sink = Collect()

    def slow(df: Any, batch_id: int) -> None:
        if df.count() and not other and not stop.is_set():
            sc = SyncShareConsumer(topic, bootstrap_servers=bs, group_id=group)
            threading.Thread(target=poll_other, args=(sc,), daemon=True).start()
            wait_until(sc.assignment, WAIT_S, 0.1, "the other member's assignment")
            stop.wait(6.0)  # two lock durations
        sink(df, batch_id)

    q = (share_stream(spark, bs, group, topic).writeStream.foreachBatch(slow)
         .option("checkpointLocation", str(tmp_path / "ck")).trigger(availableNow=True).start())
    try:
        q.awaitTermination(WAIT_S)
    finally:
        stop.set()
    assert q.exception() is None
    assert sorted(sink.keys()) == sorted(all_keys(30, 1)) and {dc for *_, dc in sink.rows} == {1}
    assert other == []
    wait_until(lambda: share_offsets(bs, group) == {0: (30, 0)}, WAIT_S, 0.2, "every record accepted")


def test_what_a_fetch_brings_beyond_a_batch_is_held_for_the_next(bs: str) -> None:
    """The driver-side member alone (no Spark): a fetch acquires a whole log batch of 10 for a batch of 3;
    the other 7 stay locked to it (renewed) while another member polls for two lock durations, make the
    next batch, and everything is accepted once both batches commit.  (A lock long next to the renewal
    interval, half a lock: a busy machine delaying one renewal for a moment does not let it run out.)"""
    group, topic = new_queue(bs, partitions=1, **{"share.record.lock.duration.ms": "3000"})
    produce_values(bs, topic, [f"r{i}" for i in range(10)], batch=10)
    member = ShareBatches((topic,), {"bootstrap_servers": bs, "group_id": group}, poll_timeout_ms=300)
    try:
        assert wait_until(lambda: member.acquire(1, max_records=3), WAIT_S, 0, "a first batch") == 3
        other: list[Any] = []
        with SyncShareConsumer(topic, bootstrap_servers=bs, group_id=group) as sc:
            wait_until(sc.assignment, WAIT_S, 0.1, "the other member's assignment")
            held_until = time.monotonic() + 6.0  # two lock durations
            while time.monotonic() < held_until:
                for records in sc.getmany(timeout_ms=200).values():
                    other += records
        assert other == []
        assert member.acquire(2, max_records=100) == 7
        assert [r.value for r in member.records_between(0, 2)] == [f"r{i}".encode() for i in range(10)]
        assert member.holding(1) and not member.holding(0)
        member.accept_through(2)
        assert not member.holding(2)
        wait_until(lambda: share_offsets(bs, group) == {0: (10, 0)}, WAIT_S, 0.2, "every record accepted")
    finally:
        member.close()


def test_share_records_as_arrow() -> None:
    """Delivered records as the source's Arrow schema plus ``deliveryCount`` (headers when asked)."""
    records = [Record("t", 0, 5, 1_700_000_000_123, 0, b"k", b"v", [("h", b"x"), ("n", None)], 2),
               Record("t", 1, 6, 1_700_000_000_124, 1, None, None, [], 1)]
    rows = records_to_arrow(records, include_headers=True).to_pylist()
    assert [(r["key"], r["value"], r["partition"], r["offset"], r["timestampType"], r["deliveryCount"])
            for r in rows] == [(b"k", b"v", 0, 5, 0, 2), (None, None, 1, 6, 1, 1)]
    assert rows[0]["timestamp"].timestamp() == 1_700_000_000.123
    assert rows[0]["headers"] == [{"key": "h", "value": b"x"}, {"key": "n", "value": None}]
    assert rows[1]["headers"] is None
    assert records_to_arrow(records).schema.names == [
        "key", "value", "topic", "partition", "offset", "timestamp", "timestampType", "deliveryCount"]


def test_an_option_that_does_not_apply_to_a_share_group_is_refused(spark: Any) -> None:
    """(each such option: tests/spark/test_spark_options.py)"""
    q = (spark.readStream.format("kbroker").option("kafka.bootstrap.servers", "localhost:1")
         .option("subscribe", "t").option("shareGroup", "g").option("startingOffsets", "earliest").load()
         .writeStream.format("noop"))
    with pytest.raises(Exception, match="option 'startingoffsets' can't be used with 'shareGroup'"):
        q.start().awaitTermination(30)


def test_a_batch_read_of_a_share_group_is_refused(spark: Any) -> None:
    df = (spark.read.format("kbroker").option("kafka.bootstrap.servers", "localhost:1")
          .option("subscribe", "t").option("shareGroup", "g").load())
    with pytest.raises(Exception, match="streaming reads"):
        df.collect()
