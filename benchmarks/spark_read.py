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
  task per partition, tasks run in parallel), a cold first run and the best of the warm runs,
  with the CPU time the warm runs took per kind of process (the JVM, the Python workers, the
  broker; from ``/proc``) to show where the time goes;
* spark floor: the same ``count()`` of a data source with the same schema whose tasks re-yield one
  prebuilt Arrow batch (no fetch, no decode; its CPU time too): what Spark itself costs for these
  rows; and of one with the ``offset`` column only: what ``count()`` would cost if Spark pruned
  the columns of Python data sources (it does not: their rows reach the JVM whole).  After a cold
  run of each, the warm runs of the three take turns, so the JVM's warming up and the machine's
  load fall on each alike.

Printed ratios: spark (warm) / the 1,000,000 rows/s aim, spark (warm) / spark floor, and
spark (warm) / client.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

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


def poll_records(c: Any) -> int:
    """One ``getmany`` of a SyncConsumer: how many ``Record`` rows it handed out."""
    return sum(len(v) for v in c.getmany(timeout_ms=1000).values())


def poll_columns(c: Any) -> int:
    """One ``getmany_record_sets`` decoded into ``RecordColumns``: how many records."""
    from protocol.records import RecordColumns

    n = 0
    for sets in c.getmany_record_sets(timeout_ms=1000).values():
        cols = RecordColumns()
        for data, min_offset, aborted in sets:
            cols.add(data, min_offset, aborted=aborted)
        n += cols.finish()[0]
    return n


def client_rate(bootstrap: str, topic: str, records: int, partitions: int, poll: Callable[[Any], int]) -> float:
    """Records/s of one SyncConsumer reading every partition from the start with ``poll``."""
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
            n += poll(c)
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


def cpu_seconds() -> dict[int, tuple[int, str, float]]:
    """``(parent pid, command line, CPU seconds (user + system) so far)`` of every process we can
    see (Linux ``/proc``; empty elsewhere)."""
    tick = os.sysconf("SC_CLK_TCK")
    out: dict[int, tuple[int, str, float]] = {}
    for entry in os.listdir("/proc") if os.path.isdir("/proc") else ():
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        out[int(entry)] = (int(fields[1]), cmd, (int(fields[11]) + int(fields[12])) / tick)
    return out


_CPU_KINDS = (("pyspark.daemon pyspark.worker", "Python executor workers (read + Arrow)"),
              ("pyspark.sql.worker", "Python planning workers (schema, partitions)"),
              ("-m broker", "broker"),
              ("java", "Spark JVM (driver + executor threads, JIT, GC)"))


def cpu_split(before: dict[int, tuple[int, str, float]], after: dict[int, tuple[int, str, float]],
              runs: int) -> dict[str, float]:
    """CPU seconds per run by kind of process (``_CPU_KINDS``) among this process and its
    descendants (the broker, Spark's JVM and its Python workers); the rest of the machine is
    one more line."""
    ours = {os.getpid()}
    grew = True
    while grew:
        grew = False
        for pid, (parent, _, _) in after.items():
            if parent in ours and pid not in ours:
                ours.add(pid)
                grew = True
    split: dict[str, float] = {}
    for pid, (_, cmd, used) in after.items():
        spent = used - before.get(pid, (0, cmd, 0.0))[2]
        if spent <= 0:
            continue
        if pid not in ours:
            kind = "other processes on the machine"
        elif pid == os.getpid():
            kind = "benchmark driver (Python)"
        else:
            kind = next((name for marker, name in _CPU_KINDS if marker in cmd), "other processes of this run")
        split[kind] = split.get(kind, 0.0) + spent / runs
    return split


def prebuilt_source(records: int, partitions: int, value_bytes: int, offset_only: bool = False) -> type:
    """A data source with the kbroker schema (``offset_only``: just its ``offset`` column) whose
    tasks re-yield one prebuilt Arrow batch (``records`` rows over ``partitions`` tasks): what
    Spark itself costs for these rows, with no fetching and no decoding."""
    from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

    from spark_jobs.source import SCHEMA_DDL

    class Reader(DataSourceReader):
        def partitions(self) -> list[InputPartition]:
            return [InputPartition(i) for i in range(partitions)]

        def read(self, partition: InputPartition) -> Any:
            import pyarrow as pa

            from spark_jobs.source import ARROW_SCHEMA

            left = records // partitions + (partition.value < records % partitions)
            n = min(left, 65_536)
            offsets = pa.array(range(n), pa.int64())
            if offset_only:
                batch = pa.RecordBatch.from_arrays([offsets], names=["offset"])
            else:
                batch = pa.RecordBatch.from_arrays([
                    pa.array([b"key-%08d" % i for i in range(n)], pa.binary()),
                    pa.array([os.urandom(value_bytes)] * n, pa.binary()),
                    pa.repeat(pa.scalar("bench", pa.string()), n),
                    pa.repeat(pa.scalar(partition.value, pa.int32()), n),
                    offsets,
                    offsets.cast(pa.timestamp("us", tz="UTC")),
                    pa.repeat(pa.scalar(0, pa.int32()), n)], schema=ARROW_SCHEMA)
            while left > 0:
                yield batch.slice(0, min(n, left))
                left -= n

    class Prebuilt(DataSource):
        @classmethod
        def name(cls) -> str:
            return "kbroker-bench-offsets" if offset_only else "kbroker-bench-prebuilt"

        def schema(self) -> str:
            return "offset long" if offset_only else SCHEMA_DDL

        def reader(self, schema: Any) -> DataSourceReader:
            return Reader()

    return Prebuilt


@dataclass
class SparkRates:
    cold: float
    warm: list[float]
    cpu: dict[str, float]  # CPU seconds per warm run by kind of process
    floor_warm: list[float]  # the prebuilt source's warm rates
    floor_cpu: dict[str, float]  # and its CPU seconds per warm run
    offsets_warm: list[float]  # the same with the offset column only


def spark_rates(bootstrap: str, topic: str, records: int, partitions: int, value_bytes: int, cores: int,
                warm_runs: int) -> SparkRates:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    import spark_jobs

    spark = (SparkSession.builder.master(f"local[{cores}]").config("spark.ui.enabled", "false")
             .config("spark.sql.shuffle.partitions", str(cores)).getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    spark_jobs.register(spark)
    spark.dataSource.register(prebuilt_source(records, partitions, value_bytes))
    spark.dataSource.register(prebuilt_source(records, partitions, value_bytes, offset_only=True))

    def once(fmt: str) -> float:
        t = time.perf_counter()
        n = (spark.read.format(fmt).option("kafka.bootstrap.servers", bootstrap)
             .option("subscribe", topic).load().count())
        assert n == records, n
        return n / (time.perf_counter() - t)

    def measured(fmt: str, cpu: dict[str, float]) -> float:
        before = cpu_seconds()
        rate = once(fmt)
        for kind, used in cpu_split(before, cpu_seconds(), warm_runs).items():
            cpu[kind] = cpu.get(kind, 0.0) + used
        return rate

    cold = once("kbroker")
    once("kbroker-bench-prebuilt")
    once("kbroker-bench-offsets")
    # interleaved, so that the JVM's warming up and the machine's load fall on every case alike
    rates = SparkRates(cold, [], {}, [], {}, [])
    for _ in range(warm_runs):
        rates.warm.append(measured("kbroker", rates.cpu))
        rates.floor_warm.append(measured("kbroker-bench-prebuilt", rates.floor_cpu))
        rates.offsets_warm.append(once("kbroker-bench-offsets"))
    spark.stop()
    return rates


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--partitions", type=int, default=2)
    ap.add_argument("--value-bytes", type=int, default=100)
    ap.add_argument("--cores", type=int, default=2, help="Spark local[N]")
    ap.add_argument("--warm-runs", type=int, default=5)
    ap.add_argument("--aim", type=int, default=1_000_000, help="rows/s spark count() should reach (warm)")
    ap.add_argument("--profile", metavar="FILE", default=None,
                    help="run the reader case under cProfile, stats to FILE")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        proc, bs = start_broker(d)
        try:
            topic = "bench"
            produced = fill(bs, topic, args.records, args.partitions, args.value_bytes)
            client = client_rate(bs, topic, args.records, args.partitions, poll_records)
            columns = client_rate(bs, topic, args.records, args.partitions, poll_columns)
            reader = reader_rate(bs, topic, args.records, args.partitions, args.profile)
            sr = spark_rates(bs, topic, args.records, args.partitions, args.value_bytes, args.cores, args.warm_runs)
        finally:
            proc.terminate()
            proc.wait(30)
    warm, floor = max(sr.warm), max(sr.floor_warm)
    print(f"records={args.records} partitions={args.partitions} value={args.value_bytes} B "
          f"key=12 B spark=local[{args.cores}]")
    print("| case | rows/s |")
    print("|---|---:|")
    print(f"| produce (confluent-kafka, fill only) | {produced:,.0f} |")
    print(f"| client: SyncConsumer getmany, 1 process | {client:,.0f} |")
    print(f"| client: SyncConsumer getmany_record_sets + RecordColumns, 1 process | {columns:,.0f} |")
    print(f"| source reader: _read_partition (fetch + Arrow), 1 process, partitions in turn | {reader:,.0f} |")
    print(f"| spark count(), cold (first action of the session) | {sr.cold:,.0f} |")
    print(f"| spark count(), warm (best of {args.warm_runs}) | {warm:,.0f} |")
    print(f"| spark count() of a source re-yielding one prebuilt batch, warm (best of {args.warm_runs}) "
          f"| {floor:,.0f} |")
    print(f"| the same, offset column only (count() if Spark pruned columns of Python sources), warm "
          f"(best of {args.warm_runs}) | {max(sr.offsets_warm):,.0f} |")
    print(f"warm runs: {', '.join(f'{r:,.0f}' for r in sr.warm)} rows/s; prebuilt: "
          f"{', '.join(f'{r:,.0f}' for r in sr.floor_warm)}; offset column only: "
          f"{', '.join(f'{r:,.0f}' for r in sr.offsets_warm)}")
    print(f"ratio spark warm / aim {args.aim:,} rows/s = {warm / args.aim:.2f}")
    print(f"ratio spark warm / prebuilt-batch source (Spark's own cost) = {warm / floor:.2f}")
    print(f"ratio spark warm / client getmany = {warm / client:.2f}")
    if sr.cpu:
        print(f"CPU seconds per warm count() (the machine has {os.cpu_count()} cores): kbroker | prebuilt batch")
        for kind in sorted(set(sr.cpu) | set(sr.floor_cpu), key=lambda k: -sr.cpu.get(k, 0.0)):
            print(f"  {sr.cpu.get(kind, 0.0):6.2f} | {sr.floor_cpu.get(kind, 0.0):6.2f}  {kind}")


if __name__ == "__main__":
    main()
