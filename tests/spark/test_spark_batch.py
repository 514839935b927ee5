"""Batch reads and writes through ``spark.read.format("kbroker")`` against a real broker."""

from __future__ import annotations

import json

import pytest
from spark_helpers import BASE_TS, delete_records, new_topic, produce

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def _read(spark, bootstrap, **options):
    r = spark.read.format("kbroker").option("kafka.bootstrap.servers", bootstrap)
    for k, v in options.items():
        r = r.option(k, v)
    return r.load()


def test_counts_bytes_and_columns_match_what_was_produced(spark, bootstrap):
    topic = new_topic(bootstrap, partitions=3)
    produced = produce(bootstrap, topic, 3000, partitions=3)
    df = _read(spark, bootstrap, subscribe=topic)
    assert df.columns == ["key", "value", "topic", "partition", "offset", "timestamp", "timestampType"]
    assert [f.dataType.simpleString() for f in df.schema.fields] == [
        "binary", "binary", "string", "int", "bigint", "timestamp", "int"]
    agg = df.selectExpr("count(*) n", "sum(length(value)) vb", "sum(length(key)) kb",
                        "count(distinct partition, offset) d", "min(timestampType) t0", "max(timestampType) t1",
                        f"min(topic = '{topic}') ok").first()
    assert agg.n == 3000 == agg.d
    assert agg.vb == sum(len(v) for _, _, v, _ in produced)
    assert agg.kb == sum(len(k) for _, k, _, _ in produced)
    assert (agg.t0, agg.t1, agg.ok) == (0, 0, True)
    rows = {bytes(r.key): r for r in df.collect()}
    for part, key, value, ts in produced:
        row = rows[key]
        assert (row.partition, bytes(row.value)) == (part, value)
        assert int(row.timestamp.timestamp() * 1000) == ts
    per_part = {r.partition: (r.n, r.lo, r.hi) for r in
                df.groupBy("partition").agg({"*": "count", "offset": "min"}).selectExpr(
                    "partition", "`count(1)` n", "`min(offset)` lo").selectExpr("*", "n - 1 + lo hi").collect()}
    assert per_part == {p: (1000, 0, 999) for p in range(3)}


def test_exact_offset_ranges_and_special_offsets(spark, bootstrap):
    topic = new_topic(bootstrap, partitions=2)
    produce(bootstrap, topic, 400, partitions=2)  # 200 per partition
    df = _read(spark, bootstrap, subscribe=topic,
               startingOffsets=json.dumps({topic: {"0": 10, "1": -2}}),
               endingOffsets=json.dumps({topic: {"0": 25, "1": -1}}))
    got = sorted((r.partition, r.offset) for r in df.select("partition", "offset").collect())
    assert got == [(0, o) for o in range(10, 25)] + [(1, o) for o in range(200)]
    # assign: only the named partition; an empty range yields nothing
    df = _read(spark, bootstrap, assign=json.dumps({topic: [1]}),
               startingOffsets=json.dumps({topic: {"1": 50}}), endingOffsets=json.dumps({topic: {"1": 53}}))
    assert sorted(r.offset for r in df.collect()) == [50, 51, 52]
    assert _read(spark, bootstrap, assign=json.dumps({topic: [0]}),
                 startingOffsets=json.dumps({topic: {"0": 7}}),
                 endingOffsets=json.dumps({topic: {"0": 7}})).count() == 0
    with pytest.raises(Exception, match="latest"):
        _read(spark, bootstrap, subscribe=topic, startingOffsets="latest").count()


def test_timestamps_pattern_and_min_partitions(spark, bootstrap):
    prefix = new_topic(bootstrap, partitions=1, prefix="pat")
    other = prefix + "-b"
    from client.sync import SyncAdmin

    with SyncAdmin(bootstrap_servers=bootstrap) as admin:
        admin.create_topics({other: 2})
    produce(bootstrap, prefix, 1000)
    produce(bootstrap, other, 100, partitions=2)
    df = _read(spark, bootstrap, subscribePattern=f"{prefix}.*")
    assert df.count() == 1100
    # timestamps: BASE_TS + i for record i; [100, 300) of the 1-partition topic
    df = _read(spark, bootstrap, subscribe=prefix, startingTimestamp=str(BASE_TS + 100),
               endingOffsetsByTimestamp=json.dumps({prefix: {"0": BASE_TS + 300}}))
    offs = sorted(r.offset for r in df.select("offset").collect())
    assert offs == list(range(100, 300))
    # minPartitions: one big partition is cut into 6 tasks, no record lost or doubled
    df = _read(spark, bootstrap, subscribe=prefix, minPartitions="6")
    assert df.rdd.getNumPartitions() == 6
    assert df.selectExpr("count(*) n", "count(distinct offset) d").first() == (1000, 1000)
    sizes = df.rdd.glom().map(len).collect()
    assert sorted(sizes) == [166, 167, 167, 166, 167, 167] or (sum(sizes) == 1000 and min(sizes) >= 160)


def test_include_headers(spark, bootstrap):
    topic = new_topic(bootstrap)
    produce(bootstrap, topic, 20, headers=True)
    df = _read(spark, bootstrap, subscribe=topic, includeHeaders="true")
    assert df.columns[-1] == "headers"
    assert df.schema["headers"].dataType.simpleString() == "array<struct<key:string,value:binary>>"
    rows = {r.offset: r.headers for r in df.collect()}
    assert rows[1] is None
    assert [(h.key, None if h.value is None else bytes(h.value)) for h in rows[4]] == [("idx", b"4"), ("none", None)]


def test_writer_round_trip(spark, bootstrap):
    src = new_topic(bootstrap, partitions=2)
    dst = new_topic(bootstrap, partitions=2)
    produce(bootstrap, src, 500, partitions=2, headers=True)
    df = _read(spark, bootstrap, subscribe=src, includeHeaders="true")
    # topic column says src but the option overrides it; partition column is honoured
    df.select("key", "value", "topic", "partition", "headers").write.format("kbroker").mode("append") \
        .option("kafka.bootstrap.servers", bootstrap).option("topic", dst).save()
    back = _read(spark, bootstrap, subscribe=dst, includeHeaders="true")
    a = sorted((bytes(r.key), bytes(r.value), r.partition, str(r.headers)) for r in df.collect())
    b = sorted((bytes(r.key), bytes(r.value), r.partition, str(r.headers)) for r in back.collect())
    assert a == b and len(b) == 500
    # string value + topic column only; no key
    third = new_topic(bootstrap)
    spark.createDataFrame([(third, f"s{i}") for i in range(10)], "topic string, value string") \
        .write.format("kbroker").mode("append").option("kafka.bootstrap.servers", bootstrap).save()
    got = _read(spark, bootstrap, subscribe=third).selectExpr("cast(value as string) v", "key").collect()
    assert sorted(r.v for r in got) == sorted(f"s{i}" for i in range(10))
    assert all(r.key is None for r in got)
    with pytest.raises(Exception, match="value"):
        spark.createDataFrame([("x",)], "key string").write.format("kbroker").mode("append") \
            .option("kafka.bootstrap.servers", bootstrap).option("topic", third).save()


@pytest.mark.parametrize("fail", [True, False])
def test_delete_records_and_fail_on_data_loss(spark, bootstrap, fail):
    topic = new_topic(bootstrap, partitions=2)
    produce(bootstrap, topic, 200, partitions=2)  # 100 per partition
    delete_records(bootstrap, topic, {0: 40})
    # "earliest" resolves past the deleted records: never data loss
    assert _read(spark, bootstrap, subscribe=topic).count() == 160
    explicit = json.dumps({topic: {"0": 0, "1": 0}})
    df = _read(spark, bootstrap, subscribe=topic, startingOffsets=explicit, failOnDataLoss=str(fail).lower())
    if fail:
        with pytest.raises(Exception, match="data may have been lost"):
            df.count()
    else:
        got = sorted((r.partition, r.offset) for r in df.select("partition", "offset").collect())
        assert got == [(0, o) for o in range(40, 100)] + [(1, o) for o in range(100)]
