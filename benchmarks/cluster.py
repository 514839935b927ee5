"""Replication's cost and failover time: three brokers on etcd beside one broker, in the same run.

    .venv/bin/python benchmarks/cluster.py [--size-mb 200] [--value-bytes 1000] [--failovers 5] [--pin] [--set KEY=VALUE ...]

Starts real processes (``python -m broker``, and etcd for the cluster) and a
confluent-kafka (librdkafka) producer, then prints:

* acks=all produce throughput (MB/s of record values) to a one-partition topic:
  one broker with replication factor 1, and three brokers with replication
  factor 3 (followers fetching from the leader), and their ratio;
* acks=all latency (p50 / p99, ms from ``produce()`` to the delivery report) at
  a fixed, moderate rate, on both;
* where the CPU went during each throughput run: CPU seconds per 100 MB for
  each broker process and for this process (librdkafka's threads), and the
  throughput each setup would reach if every process had a core of its own
  (the run's size over the busiest process's CPU seconds: what the CPU-bound
  pipeline allows once the processes stop competing for two cores);
* with ``--pin``, the throughput runs again with the leader alone on CPU 0 and
  everything else (followers, etcd, the producer) on CPU 1, and the single
  broker on CPU 0 with the producer on CPU 1 (``os.sched_setaffinity``, as
  ``taskset`` does): the leader gets a core of its own in both;
* failover time: with an idempotent acks=all producer running, the partition's
  leader is killed (SIGKILL) and the time to the next acknowledged record is
  measured, ``--failovers`` times (the killed broker is restarted and back in
  the ISR before the next round); median and max.

Sizes are MB = 10^6 bytes.  The machine is shared: compare the ratio, not the rates.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from confluent_kafka import Producer  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402
from raw_wire import cpu_seconds  # noqa: E402

from broker.testing.harness import BrokerProcess, KBrokerCluster  # noqa: E402

MB = 1_000_000
TOPIC = "bench"


def create(bootstrap: str, rf: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(TOPIC, 1, rf)], operation_timeout=30)[TOPIC].result(60)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        part = admin.list_topics(TOPIC, timeout=10).topics[TOPIC].partitions.get(0)
        if part is not None and part.leader >= 0 and len(part.isrs) == rf:
            return
        time.sleep(0.1)
    raise SystemExit("the topic never got a full ISR")


def leader(bootstrap: str) -> int:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    part = admin.list_topics(TOPIC, timeout=10).topics[TOPIC].partitions[0]
    return int(part.leader)


def own_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


class CpuRun:
    """The CPU seconds each named process (and this one) spends inside a ``with`` block."""

    def __init__(self, pids: dict[str, int]) -> None:
        self.pids = pids
        self.used: dict[str, float] = {}

    def __enter__(self) -> CpuRun:
        self._before = {name: cpu_seconds(pid) for name, pid in self.pids.items()}
        self._own = own_cpu_seconds()
        return self

    def __exit__(self, *exc: object) -> None:
        self.used = {name: cpu_seconds(pid) - self._before[name] for name, pid in self.pids.items()}
        self.used["producer"] = own_cpu_seconds() - self._own

    def report(self, size_mb: int, measured: float) -> tuple[str, float]:
        """A line of CPU seconds per 100 MB, and the throughput with a core per process."""
        per100 = ", ".join(f"{name} {used * 100 / size_mb:.2f}" for name, used in self.used.items())
        return f"CPU s per 100 MB: {per100}", size_mb / max(self.used.values())


def pin(pid: int, cpus: set[int]) -> None:
    """Pin every thread of ``pid`` to ``cpus`` (``taskset -a -p``)."""
    for tid in os.listdir(f"/proc/{pid}/task"):
        os.sched_setaffinity(int(tid), cpus)


def pid_of(process: Any) -> int:
    assert process.proc is not None
    return int(process.proc.pid)


def throughput(bootstrap: str, size_mb: int, value_bytes: int) -> float:
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5, "batch.size": 1_000_000,
                  "queue.buffering.max.kbytes": 512 * 1024, "compression.type": "none"})
    value = b"x" * value_bytes
    n = size_mb * MB // value_bytes
    started = time.perf_counter()
    for _ in range(n):
        while True:
            try:
                p.produce(TOPIC, value)
                break
            except BufferError:
                p.poll(0.01)
    if p.flush(300) != 0:
        raise SystemExit("throughput: deliveries still pending")
    return n * value_bytes / MB / (time.perf_counter() - started)


def latency(bootstrap: str, rate: int, seconds: float, value_bytes: int) -> tuple[float, float]:
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0})
    samples: list[float] = []
    value = b"y" * value_bytes

    def report(sent: float) -> Any:
        return lambda err, msg: samples.append((time.perf_counter() - sent) * 1000) if err is None else None

    interval = 1 / rate
    end = time.perf_counter() + seconds
    next_at = time.perf_counter()
    while time.perf_counter() < end:
        now = time.perf_counter()
        if now < next_at:
            p.poll(max(0.0, next_at - now))
            continue
        p.produce(TOPIC, value, on_delivery=report(now))
        next_at += interval
    p.flush(60)
    samples.sort()
    return samples[len(samples) // 2], samples[min(len(samples) - 1, int(len(samples) * 0.99))]


def failover_once(cluster: KBrokerCluster) -> float:
    p = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all", "enable.idempotence": True,
                  "linger.ms": 1, "retry.backoff.ms": 20, "reconnect.backoff.ms": 20,
                  "reconnect.backoff.max.ms": 200, "topic.metadata.refresh.interval.ms": 1000,
                  "message.timeout.ms": 60_000})
    acked: list[tuple[float, float]] = []  # (produced, acknowledged) of each acknowledged record
    stop = threading.Event()

    def on_delivery(produced: float) -> Any:
        return lambda err, msg: acked.append((produced, time.monotonic())) if err is None else None

    def run() -> None:
        while not stop.is_set():
            try:
                p.produce(TOPIC, b"f", on_delivery=on_delivery(time.monotonic()))
            except BufferError:
                pass
            p.poll(0.002)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    while len(acked) < 100:
        time.sleep(0.01)
    victim = leader(cluster.bootstrap_servers)
    killed = time.monotonic()
    cluster.kill(victim)
    deadline = killed + 60
    # the first record produced after the kill and acknowledged (not one acknowledged before and reported late)
    while not any(produced > killed for produced, _ in acked[-50:]) and time.monotonic() < deadline:
        time.sleep(0.005)
    after = [ack for produced, ack in acked if produced > killed]
    stop.set()
    t.join(10)
    p.flush(30)
    cluster.restart(victim)
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    while len(admin.list_topics(TOPIC, timeout=10).topics[TOPIC].partitions[0].isrs) < 3:
        time.sleep(0.1)
    if not after:
        raise SystemExit("no record was acknowledged within 60 s of the leader's death")
    return min(after) - killed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size-mb", type=int, default=200)
    ap.add_argument("--value-bytes", type=int, default=1000)
    ap.add_argument("--rate", type=int, default=1000, help="records/s for the latency measurement")
    ap.add_argument("--failovers", type=int, default=5)
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="a setting of every broker (single and cluster), repeatable")
    ap.add_argument("--pin", action="store_true",
                    help="also run the throughput cases with the leader pinned to CPU 0 and the rest to CPU 1")
    args = ap.parse_args()
    lines: list[str] = []
    with tempfile.TemporaryDirectory(prefix="kbroker-bench-") as tmp:
        settings = dict(item.split("=", 1) for item in args.set)
        single = BrokerProcess(Path(tmp) / "single", extra_args=["--log-level", "WARNING"] + [
            arg for key, value in settings.items() for arg in ("--set", f"{key}={value}")])
        with single:
            create(single.bootstrap_servers, 1)
            with CpuRun({"broker": pid_of(single)}) as cpu1:
                one = throughput(single.bootstrap_servers, args.size_mb, args.value_bytes)
            one_lat = latency(single.bootstrap_servers, args.rate, 5, args.value_bytes)
            if args.pin:
                pin(pid_of(single), {0})
                os.sched_setaffinity(0, {1})
                one_pinned = throughput(single.bootstrap_servers, args.size_mb, args.value_bytes)
                os.sched_setaffinity(0, {0, 1})
        with KBrokerCluster(3, Path(tmp) / "cluster", settings={"log.level": "WARNING", **settings}) as cluster:
            create(cluster.bootstrap_servers, 3)
            lead = leader(cluster.bootstrap_servers)
            pids = {("leader" if node == lead else f"follower {node}"): pid_of(b) for node, b in cluster.brokers.items()}
            pids["etcd"] = pid_of(cluster.etcd)
            with CpuRun(pids) as cpu3:
                three = throughput(cluster.bootstrap_servers, args.size_mb, args.value_bytes)
            three_lat = latency(cluster.bootstrap_servers, args.rate, 5, args.value_bytes)
            if args.pin:
                for node, b in cluster.brokers.items():
                    pin(pid_of(b), {0} if node == lead else {1})
                pin(pid_of(cluster.etcd), {1})
                os.sched_setaffinity(0, {1})
                three_pinned = throughput(cluster.bootstrap_servers, args.size_mb, args.value_bytes)
                os.sched_setaffinity(0, {0, 1})
                for b in cluster.brokers.values():
                    pin(pid_of(b), {0, 1})
                pin(pid_of(cluster.etcd), {0, 1})
            failovers = [failover_once(cluster) for _ in range(args.failovers)]
    cpu1_line, one_core = cpu1.report(args.size_mb, one)
    cpu3_line, three_core = cpu3.report(args.size_mb, three)
    lines.append(f"acks=all produce, {args.value_bytes} B values, {args.size_mb} MB, one partition")
    lines.append(f"  1 broker,  RF 1: {one:8.1f} MB/s   latency p50 {one_lat[0]:6.1f} ms  p99 {one_lat[1]:6.1f} ms "
                 f"(at {args.rate}/s)")
    lines.append(f"    {cpu1_line}")
    lines.append(f"  3 brokers, RF 3: {three:8.1f} MB/s   latency p50 {three_lat[0]:6.1f} ms  "
                 f"p99 {three_lat[1]:6.1f} ms (at {args.rate}/s)")
    lines.append(f"    {cpu3_line}")
    lines.append(f"  replicated / single: {three / one:.2f}")
    lines.append(f"  with a core per process (size / busiest process's CPU s): 1 broker {one_core:.1f} MB/s, "
                 f"3 brokers {three_core:.1f} MB/s, ratio {three_core / one_core:.2f}")
    if args.pin:
        lines.append(f"  pinned (leader alone on CPU 0, the rest on CPU 1): 1 broker {one_pinned:.1f} MB/s, "
                     f"3 brokers {three_pinned:.1f} MB/s, ratio {three_pinned / one_pinned:.2f}")
    lines.append(f"failover (kill -9 of the leader -> next acknowledged record), {len(failovers)} runs: "
                 f"median {statistics.median(failovers):.2f} s, max {max(failovers):.2f} s, "
                 f"all {[round(f, 2) for f in failovers]}")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
