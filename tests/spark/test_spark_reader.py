"""The source's executor path (fetched record batches decoded straight into Arrow columns) on
compressed data: range bounds that fall inside and on the edges of batches, through
``_read_partition`` directly (no JVM: cheap enough to try every bound) and once through Spark."""

from __future__ import annotations

import json
from typing import Any

import pytest
from spark_helpers import BASE_TS, new_topic

from client.sync import SyncProducer

pytestmark = [pytest.mark.spark, pytest.mark.slow]

pa = pytest.importorskip("pyarrow")
pytest.importorskip("pyspark")

from spark_jobs import _reader  # noqa: E402
from spark_jobs.source import ARROW_SCHEMA, ARROW_SCHEMA_HEADERS, KBrokerPartition, _read_partition  # noqa: E402

CODECS = (None, "gzip", "snappy", "lz4", "zstd")  # partition i holds codec i
PER_BATCH = 7
RECORDS = 4 * PER_BATCH
# batch edges (7, 14, ...) and their neighbours, and the ends of the log
BOUNDS = (0, 1, 6, 7, 8, 13, 14, 20, 27, 28)


def _record(i: int) -> tuple[bytes | None, bytes, list[tuple[str, bytes | None]] | None]:
    key = None if i % 5 == 0 else b"k%d" % i
    headers = [("idx", b"%d" % i), ("none", None)] if i % 3 == 0 else None
    return key, b"v%d-" % i + b"x" * (i * 13 % 50), headers


@pytest.fixture(scope="module")
def codec_topic(bootstrap: str) -> str:
    """One partition per codec, RECORDS records each, in batches of PER_BATCH (a flush per batch)."""
    topic = new_topic(bootstrap, partitions=len(CODECS), prefix="codecs")
    for partition, codec in enumerate(CODECS):
        with SyncProducer(bootstrap_servers=bootstrap, linger_ms=60_000, compression_type=codec) as p:
            for first in range(0, RECORDS, PER_BATCH):
                futures = [p.send_async(topic, _record(i)[1], _record(i)[0], _record(i)[2], partition, BASE_TS + i)
                           for i in range(first, first + PER_BATCH)]
                p.flush()
                for f in futures:
                    f.result(30)
    return topic


def _expected(topic: str, partition: int, start: int, end: int, headers: bool) -> list[dict[str, Any]]:
    rows = []
    for i in range(start, min(end, RECORDS)):
        key, value, hdrs = _record(i)
        row = {"key": key, "value": value, "topic": topic, "partition": partition, "offset": i,
               "timestamp": BASE_TS + i, "timestampType": 0}
        if headers:
            row["headers"] = None if hdrs is None else [{"key": k, "value": v} for k, v in hdrs]
        rows.append(row)
    return rows


def _read(bootstrap: str, topic: str, partition: int, start: int, end: int, headers: bool) -> list[dict[str, Any]]:
    batches = list(_read_partition({"kafka.bootstrap.servers": bootstrap},
                                   KBrokerPartition(topic, partition, start, end), headers))
    table = pa.Table.from_batches(batches, schema=ARROW_SCHEMA_HEADERS if headers else ARROW_SCHEMA)
    table = table.set_column(5, "timestamp", table.column("timestamp").cast(pa.int64()))
    rows = table.to_pylist()
    for row in rows:
        row["timestamp"] //= 1000  # Spark's microseconds
    return rows


def test_every_bound_inside_and_on_the_edges_of_compressed_batches(bootstrap: str, codec_topic: str) -> None:
    for partition in range(len(CODECS)):
        for start in BOUNDS:
            for end in BOUNDS:
                if end <= start or end > RECORDS:
                    continue
                headers = (start + end) % 2 == 1
                assert _read(bootstrap, codec_topic, partition, start, end, headers) == \
                    _expected(codec_topic, partition, start, end, headers), (CODECS[partition], start, end)


def test_chunks_of_a_range_join_up_exactly(bootstrap: str, codec_topic: str) -> None:
    """A chunk per fetch (``max.partition.fetch.bytes`` tiny: one batch each) hands out each record
    of the range once, in order."""
    options = {"kafka.bootstrap.servers": bootstrap, "kafka.max.partition.fetch.bytes": "1"}
    chunks = list(_reader.read_range(_reader.consumer_kwargs(options, executor=True), codec_topic, 4, 6, 22))
    assert [c[0] for c in chunks] == [1, 7, 7, 1]  # batches [0, 7) [7, 14) [14, 21) [21, 28) cut at 6 and 22
    assert [o for c in chunks for o in memoryview(c[1]).cast("q").tolist()] == list(range(6, 22))


def test_spark_reads_compressed_ranges_with_headers(spark: Any, bootstrap: str, codec_topic: str) -> None:
    bounds = {str(p): (p * 3 + 1, RECORDS - p * 2) for p in range(len(CODECS))}
    df = (spark.read.format("kbroker").option("kafka.bootstrap.servers", bootstrap).option("subscribe", codec_topic)
          .option("startingOffsets", json.dumps({codec_topic: {p: s for p, (s, _) in bounds.items()}}))
          .option("endingOffsets", json.dumps({codec_topic: {p: e for p, (_, e) in bounds.items()}}))
          .option("includeHeaders", "true").load())
    got = sorted((r.partition, r.offset, None if r.key is None else bytes(r.key), bytes(r.value),
                  None if r.headers is None else [(h.key, None if h.value is None else bytes(h.value))
                                                  for h in r.headers],
                  int(r.timestamp.timestamp() * 1000)) for r in df.collect())
    assert got == [(int(p), i, *_record(i), BASE_TS + i) for p, (s, e) in sorted(bounds.items()) for i in range(s, e)]
