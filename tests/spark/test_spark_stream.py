"""Streaming reads (availableNow, restart from checkpoint, new partitions) and the stream writer."""

from __future__ import annotations

import json

import pytest
from spark_helpers import new_topic, produce

from client.sync import SyncAdmin

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def _run_available_now(spark, bootstrap, topic, out, ck, **options):
    r = (spark.readStream.format("kbroker").option("kafka.bootstrap.servers", bootstrap)
         .option("subscribe", topic).option("startingOffsets", "earliest"))
    for k, v in options.items():
        r = r.option(k, v)
    q = (r.load().writeStream.format("parquet").option("path", out).option("checkpointLocation", ck)
         .trigger(availableNow=True).start())
    q.awaitTermination(180)
    assert not q.isActive
    assert q.exception() is None
    return [p for p in q.recentProgress if p["numInputRows"] > 0]


def test_available_now_restart_reads_only_new_records(spark, bootstrap, tmp_path):
    topic = new_topic(bootstrap, partitions=2)
    produce(bootstrap, topic, 1000, partitions=2)
    out, ck = str(tmp_path / "out"), str(tmp_path / "ck")
    batches = _run_available_now(spark, bootstrap, topic, out, ck, maxOffsetsPerTrigger="300")
    assert [b["numInputRows"] for b in batches] == [300, 300, 300, 100]
    assert json.loads(batches[-1]["sources"][0]["endOffset"]) == {topic: {"0": 500, "1": 500}}
    assert spark.read.parquet(out).count() == 1000

    # more data, plus a partition that did not exist before (read from its beginning)
    with SyncAdmin(bootstrap_servers=bootstrap) as admin:
        admin.create_partitions({topic: 3})
    produce(bootstrap, topic, 600, partitions=3, start=1000)
    batches = _run_available_now(spark, bootstrap, topic, out, ck)
    assert sum(b["numInputRows"] for b in batches) == 600
    df = spark.read.parquet(out)
    stats = df.selectExpr("count(*) n", "count(distinct partition, offset) d").first()
    assert (stats.n, stats.d) == (1600, 1600)
    assert df.where("partition = 2").count() == 200

    # nothing new: the same query again reads nothing
    assert _run_available_now(spark, bootstrap, topic, out, ck) == []


def test_stream_writer_copies_a_topic(spark, bootstrap, tmp_path):
    src = new_topic(bootstrap, partitions=2)
    dst = new_topic(bootstrap, partitions=1)
    produce(bootstrap, src, 300, partitions=2, headers=True)
    q = (spark.readStream.format("kbroker").option("kafka.bootstrap.servers", bootstrap)
         .option("subscribe", src).option("startingOffsets", "earliest").option("includeHeaders", "true").load()
         .selectExpr("key", "upper(cast(value as string)) value", "headers")
         .writeStream.format("kbroker").option("kafka.bootstrap.servers", bootstrap).option("topic", dst)
         .option("checkpointLocation", str(tmp_path / "ck")).trigger(availableNow=True).start())
    q.awaitTermination(180)
    assert q.exception() is None
    back = (spark.read.format("kbroker").option("kafka.bootstrap.servers", bootstrap).option("subscribe", dst)
            .option("includeHeaders", "true").load())
    rows = back.selectExpr("cast(key as string) k", "cast(value as string) v", "headers").collect()
    assert len(rows) == 300
    assert all(r.v == r.v.upper() and r.v.startswith("V") for r in rows)
    assert sum(1 for r in rows if r.headers) == 150


@pytest.mark.parametrize("fail", [True, False])
def test_stream_after_delete_records(spark, bootstrap, tmp_path, fail):
    from spark_helpers import delete_records

    topic = new_topic(bootstrap)
    produce(bootstrap, topic, 100)
    out, ck = str(tmp_path / "out"), str(tmp_path / "ck")
    assert sum(b["numInputRows"] for b in _run_available_now(spark, bootstrap, topic, out, ck)) == 100
    produce(bootstrap, topic, 100, start=100)
    delete_records(bootstrap, topic, {0: 150})  # half of the records the next run needs are gone
    r = (spark.readStream.format("kbroker").option("kafka.bootstrap.servers", bootstrap)
         .option("subscribe", topic).option("failOnDataLoss", str(fail).lower()).load())
    q = (r.writeStream.format("parquet").option("path", out).option("checkpointLocation", ck)
         .trigger(availableNow=True).start())
    if fail:
        with pytest.raises(Exception, match="data may have been lost"):
            q.awaitTermination(180)
    else:
        q.awaitTermination(180)
        offsets = sorted(row.offset for row in spark.read.parquet(out).select("offset").collect())
        assert offsets == list(range(100)) + list(range(150, 200))
