"""Rows/s of ``spark.read.format("kbroker")...count()`` next to the client's own consume rate.

    .venv/bin/python benchmarks/spark_read.py [--records 1000000] [--partitions 2] [--value-bytes 100]
        [--profile reader.prof]

Starts ``python -m broker`` as a subprocess (temp data dir, metrics off), fills one topic with
confluent-kafka, then measures in the same run:

* client: one SyncConsumer assigned to every partition, getmany() until all records are seen
  (the consume loop of kbroker's client, one process, one ``Record`` per row);
* client columns: the same consumer with ``getmany_record_sets`` decoded into
  ``protocol.records.RecordColumns`` (no object per row);
* reader: the executor path of the source (``spark_jobs.source._read_partition``: fetch and Arrow
  batches) for every partition in turn, one process, no Spark; with ``--profile`` under cProfile
  (stats written to that file, the top functions printed; the client's I/O thread is not profiled);
* spark: ``spark.read.format("kbroker")...load().count()`` on ``local[N]`` (Arrow path; one
  task per partition, tasks run in parallel), a cold first run and the best of the warm runs.

Printed ratios: spark (warm) / the 1,000,000 rows/s aim, and spark (warm) / client.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_broker(data_dir: str) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "broker", "--port", str(port), "--data-dir", data_dir,
                             "--metrics-port", "0", "--log-level", "WARNING"])
    deadline = time.time() + 30
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), 0.5).close()
            return proc, f"127.0.0.1:{port}"
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError("broker did not start")


def fill(bootstrap: str, topic: str, records: int, partitions: int, value_bytes: int) -> float:
    from confluent_kafka import Producer

    from client.sync import SyncAdmin

    with SyncAdmin(bootstrap_servers=bootstrap) as admin:
        admin.create_topics({topic: partitions})
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "batch.size": 1_000_000,
                  "queue.buffering.max.messages": 500_000, "acks": 1})
    value = os.urandom(value_bytes)
    t = time.perf_counter()
    for i in range(records):
        while True:
            try:
                p.produce(topic, value=value, key=b"key-%08d" % i, partition=i % partitions)
                break
            except BufferError:
                p.poll(0.05)
    if p.flush(120):
        raise RuntimeError("produce did not finish")
    return records / (time.perf_counter() - t)


def client_rate(bootstrap: str, topic: str, records: int, partitions: int) -> float:
    from client.sync import SyncConsumer
    from client.types import TopicPartition

    tps = [TopicPartition(topic, p) for p in range(partitions)]
    with SyncConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, auto_offset_reset="earliest",
                      max_partition_fetch_bytes=8 << 20, fetch_max_bytes=64 << 20) as c:
        c.assign(tps)
        for tp in tps:
            c.seek(tp, 0)
        n = 0
        t = time.perf_counter()
        while n < records:
            n += sum(len(v) for v in c.getmany(timeout_ms=1000).values())
        return n / (time.perf_counter() - t)


def client_columns_rate(bootstrap: str, topic: str, records: int, partitions: int) -> float:
    from client.sync import SyncConsumer
    from client.types import TopicPartition
    from protocol.records import RecordColumns

    tps = [TopicPartition(topic, p) for p in range(partitions)]
    with SyncConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, auto_offset_reset="earliest",
                      max_partition_fetch_bytes=8 << 20, fetch_max_bytes=64 << 20) as c:
        c.assign(tps)
        for tp in tps:
            c.seek(tp, 0)
        n = 0
        t = time.perf_counter()
        while n < records:
            for sets in c.getmany_record_sets(timeout_ms=1000).values():
                cols = RecordColumns()
                for data, min_offset, aborted in sets:
                    cols.add(data, min_offset, aborted=aborted)
                n += cols.finish()[0]
        return n / (time.perf_counter() - t)


def reader_rate(bootstrap: str, topic: str, records: int, partitions: int, profile: str | None) -> float:
    from client.types import TopicPartition
    from spark_jobs import _reader
    from spark_jobs.source import KBrokerPartition, _read_partition

    options = {"kafka.bootstrap.servers": bootstrap}
    with _reader.OffsetReader(_reader.consumer_kwargs(options)) as r:
        ends = r.latest([TopicPartition(topic, p) for p in range(partitions)])

    def run() -> int:
        return sum(batch.num_rows for tp, end in sorted(ends.items())
                   for batch in _read_partition(options, KBrokerPartition(topic, tp.partition, 0, end), False))

    t = time.perf_counter()
    if profile:
        import cProfile
        import pstats

        prof = cProfile.Profile()
        n = prof.runcall(run)
        elapsed = time.perf_counter() - t
        prof.dump_stats(profile)
        pstats.Stats(profile).sort_stats("tottime").print_stats(12)
    else:
        n = run()
        elapsed = time.perf_counter() - t
    assert n == records, n
    return n / elapsed


def spark_rates(bootstrap: str, topic: str, records: int, cores: int, warm_runs: int) -> tuple[float, float]:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    import spark_jobs

    spark = (SparkSession.builder.master(f"local[{cores}]").config("spark.ui.enabled", "false")
             .config("spark.sql.shuffle.partitions", str(cores)).getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    spark_jobs.register(spark)

    def once() -> float:
        t = time.perf_counter()
        n = (spark.read.format("kbroker").option("kafka.bootstrap.servers", bootstrap)
             .option("subscribe", topic).load().count())
        assert n == records, n
        return n / (time.perf_counter() - t)

    cold = once()
    warm = max(once() for _ in range(warm_runs))
    spark.stop()
    return cold, warm


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--partitions", type=int, default=2)
    ap.add_argument("--value-bytes", type=int, default=100)
    ap.add_argument("--cores", type=int, default=2, help="Spark local[N]")
    ap.add_argument("--warm-runs", type=int, default=3)
    ap.add_argument("--aim", type=int, default=1_000_000, help="rows/s spark count() should reach (warm)")
    ap.add_argument("--profile", metavar="FILE", default=None,
                    help="run the reader case under cProfile, stats to FILE")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        proc, bs = start_broker(d)
        try:
            topic = "bench"
            produced = fill(bs, topic, args.records, args.partitions, args.value_bytes)
            client = client_rate(bs, topic, args.records, args.partitions)
            columns = client_columns_rate(bs, topic, args.records, args.partitions)
            reader = reader_rate(bs, topic, args.records, args.partitions, args.profile)
            cold, warm = spark_rates(bs, topic, args.records, args.cores, args.warm_runs)
        finally:
            proc.terminate()
            proc.wait(30)
    print(f"records={args.records} partitions={args.partitions} value={args.value_bytes} B "
          f"key=12 B spark=local[{args.cores}]")
    print("| case | rows/s |")
    print("|---|---:|")
    print(f"| produce (confluent-kafka, fill only) | {produced:,.0f} |")
    print(f"| client: SyncConsumer getmany, 1 process | {client:,.0f} |")
    print(f"| client: SyncConsumer getmany_record_sets + RecordColumns, 1 process | {columns:,.0f} |")
    print(f"| source reader: _read_partition (fetch + Arrow), 1 process, partitions in turn | {reader:,.0f} |")
    print(f"| spark count(), cold (first action of the session) | {cold:,.0f} |")
    print(f"| spark count(), warm (best of {args.warm_runs}) | {warm:,.0f} |")
    print(f"ratio spark warm / aim {args.aim:,} rows/s = {warm / args.aim:.2f}")
    print(f"ratio spark warm / client getmany = {warm / client:.2f}")


if __name__ == "__main__":
    main()
