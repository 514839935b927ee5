"""The ready-made jobs, run in-process on the shared SparkSession."""

from __future__ import annotations

import json

import pytest
from spark_helpers import BASE_TS, new_topic, produce

from client.sync import SyncConsumer, SyncProducer
from client.types import TopicPartition
from spark_jobs import export_parquet, lag_report, windowed_count

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def test_export_parquet_offset_range(spark, bootstrap, tmp_path, capsys):
    topic = new_topic(bootstrap, partitions=2)
    produce(bootstrap, topic, 200, partitions=2)
    out = str(tmp_path / "export")
    rc = export_parquet.main(["-b", bootstrap, "--topic", topic, "--output", out,
                              "--starting-offsets", json.dumps({topic: {"0": 10, "1": -2}}),
                              "--ending-offsets", json.dumps({topic: {"0": 60, "1": -1}}),
                              "--min-partitions", "4", "--partition-by", "partition"])
    assert rc == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["rows_in_output"] == 150
    assert summary["partitions"] == {f"{topic}-0": 50, f"{topic}-1": 100}
    df = spark.read.parquet(out)
    assert sorted(r.offset for r in df.where("partition = 0").collect()) == list(range(10, 60))


def test_windowed_count_writes_counts_per_key_and_window(spark, bootstrap, tmp_path):
    src = new_topic(bootstrap, partitions=2)
    dst = new_topic(bootstrap)
    minute = 60_000
    base = (BASE_TS // minute) * minute
    expected: dict[tuple[int, str], int] = {}
    with SyncProducer(bootstrap_servers=bootstrap) as p:
        for i in range(120):
            key = "ab"[i % 2] if i < 100 else "c"
            w = i % 3
            p.send_async(src, b"x", key.encode(), None, i % 2, base + w * minute + i)
            expected[(w, key)] = expected.get((w, key), 0) + 1
        p.flush()
    args = ["-b", bootstrap, "--input-topic", src, "--output-topic", dst, "--checkpoint", str(tmp_path / "ck"),
            "--window", "1 minute", "--watermark", "1 hour", "--max-offsets-per-trigger", "50"]
    assert windowed_count.main(args) == 0
    rows = (spark.read.format("kbroker").option("kafka.bootstrap.servers", bootstrap).option("subscribe", dst)
            .load().orderBy("offset").selectExpr("cast(key as string) k", "cast(value as string) v").collect())
    latest: dict[tuple[int, str], int] = {}
    for r in rows:
        doc = json.loads(r.v)
        assert doc["key"] == r.k
        start_ms = _iso_ms(doc["window_start"])
        latest[((start_ms - base) // minute, doc["key"])] = doc["count"]
    assert latest == expected


def _iso_ms(text: str) -> int:
    from datetime import datetime

    return int(datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1000)


def test_lag_report(spark, bootstrap, tmp_path, capsys):
    topic = new_topic(bootstrap, partitions=2)
    produce(bootstrap, topic, 100, partitions=2)  # 50 per partition
    group = f"g-{topic}"
    with SyncConsumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False) as c:
        c.assign([TopicPartition(topic, 0), TopicPartition(topic, 1)])
        c.commit({TopicPartition(topic, 0): 20, TopicPartition(topic, 1): 50})
    out = str(tmp_path / "lag")
    assert lag_report.main(["-b", bootstrap, "--group", group, "--details", "--output", out, "--format", "json"]) == 0
    printed = capsys.readouterr().out
    assert group in printed and "30" in printed
    rows = sorted((r.partition, r.committed, r.end_offset, r.lag) for r in spark.read.json(out).collect())
    assert rows == [(0, 20, 50, 30), (1, 50, 50, 0)]


@pytest.mark.parametrize("job", [export_parquet, windowed_count, lag_report])
def test_jobs_have_help(job, capsys):
    with pytest.raises(SystemExit) as exc:
        job.main(["--help"])
    assert exc.value.code == 0
    assert "--bootstrap-servers" in capsys.readouterr().out
