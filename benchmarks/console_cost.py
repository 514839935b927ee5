"""What the web console costs the broker's request path: the same load with the console closed and
with ten tabs open on it, alternating, same run.

    .venv/bin/python benchmarks/console_cost.py [--phase-s 20] [--rounds 2]

Starts ``python -m broker`` with its console (the harness's command line), a topic of 6 partitions
with records and a consumer group, then alternates phases:

* closed — nobody looks at the console;
* open — ten tabs (a separate process) each showing one page (the overview, topics, a topic with its
  records browsed, groups, a group, brokers, security) and refreshing it as the page script does, every
  ``console.refresh.ms`` (5 s, the default);
* busy — the same ten tabs refreshing every 0.5 s (ten times the default rate).

Under each phase a confluent-kafka producer writes 1 KiB records (acks=1), paced at ``--rate`` records/s
and then as fast as it can, while another sends one record at a time and waits for it (produce round
trips: the request path's latency).  Prints records/s delivered, round-trip p50/p99, the broker's CPU
and the pages served, and the ratios against the closed phases.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from broker.testing.harness import BrokerProcess  # noqa: E402

TOPIC, GROUP = "load", "load-readers"
PAGES = ["/", "/topics", f"/topics/{TOPIC}?partition=all&mode=newest&count=20", "/groups", f"/groups/{GROUP}",
         "/brokers", "/security", "/", f"/topics/{TOPIC}", "/groups"]


def tabs(base: str, interval_s: float, duration_s: float) -> None:
    """Ten tabs: each loads its page, then refreshes it every ``interval_s``; prints pages and mean ms."""
    served: list[float] = []
    lock = threading.Lock()

    def tab(path: str, offset: float) -> None:
        time.sleep(offset)
        end = time.monotonic() + duration_s - offset
        first = True
        while time.monotonic() < end:
            started = time.monotonic()
            request = urllib.request.Request(base + path, headers={} if first else {"X-Console-Refresh": "1"})
            with urllib.request.urlopen(request, timeout=30) as response:
                response.read()
            took = time.monotonic() - started
            with lock:
                served.append(took)
            first = False
            time.sleep(max(0.0, interval_s - took))

    threads = [threading.Thread(target=tab, args=(p, i * interval_s / len(PAGES))) for i, p in enumerate(PAGES)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(f"{len(served)} {statistics.mean(served) * 1000 if served else 0:.1f}")


def cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / 100  # utime + stime, in clock ticks of 10 ms


def phase(broker: BrokerProcess, name: str, duration_s: float, interval_s: float | None,
          rate: float | None) -> dict[str, float]:
    """One phase: the flood at ``rate`` records/s (None: as fast as it goes) with the round-trip probe
    beside it, and the tabs when ``interval_s`` is given."""
    viewers = None
    if interval_s is not None:
        viewers = subprocess.Popen([sys.executable, __file__, "--tabs", broker.console_url, str(interval_s),
                                    str(duration_s)], stdout=subprocess.PIPE, text=True)
    assert broker.proc is not None
    cpu0 = cpu_s(broker.proc.pid)
    started = time.monotonic()
    stop = started + duration_s
    delivered = [0]

    def count(err: object, _msg: object) -> None:
        if err is None:
            delivered[0] += 1

    def flood() -> None:
        producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "acks": 1, "linger.ms": 2,
                             "queue.buffering.max.messages": 200_000})
        value = b"x" * 1024
        batches = 0
        while time.monotonic() < stop:
            for _ in range(500):
                try:
                    producer.produce(TOPIC, value=value, on_delivery=count)
                except BufferError:
                    producer.poll(0.01)
            batches += 1
            producer.poll(0)
            if rate is not None:
                time.sleep(max(0.0, started + batches * 500 / rate - time.monotonic()))
        producer.flush(30)

    thread = threading.Thread(target=flood)
    thread.start()
    probe = Producer({"bootstrap.servers": broker.bootstrap_servers, "acks": 1, "linger.ms": 0})
    rtts: list[float] = []
    while time.monotonic() < stop:
        sent = time.perf_counter()
        probe.produce(TOPIC, value=b"probe", partition=0)
        probe.flush(10)
        rtts.append(time.perf_counter() - sent)
    thread.join()
    cpu = cpu_s(broker.proc.pid) - cpu0
    pages, page_ms = 0, 0.0
    if viewers is not None:
        out, _ = viewers.communicate(timeout=60)
        pages, page_ms = int(out.split()[0]), float(out.split()[1])
    rtts.sort()
    return {"name": name, "records_s": delivered[0] / duration_s, "p50_ms": rtts[len(rtts) // 2] * 1000,
            "p99_ms": rtts[int(len(rtts) * 0.99)] * 1000, "cpu_pct": cpu / duration_s * 100,
            "pages": pages, "page_ms": page_ms}


PHASES = (("closed", None), ("open: 10 tabs, 5 s", 5.0), ("closed", None), ("busy: 10 tabs, 0.5 s", 0.5))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--phase-s", type=float, default=20.0)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--rate", type=float, default=20_000, help="records/s of the paced load")
    parser.add_argument("--tabs", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.tabs:
        tabs(args.tabs[0], float(args.tabs[1]), float(args.tabs[2]))
        return
    with tempfile.TemporaryDirectory(prefix="kbroker-console-cost-") as tmp:
        broker = BrokerProcess(Path(tmp) / "data", console=True,
                               extra_args=["--set", "log.level=WARNING", "--set", "offsets.topic.num.partitions=3"])
        broker.start()
        try:
            admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
            admin.create_topics([NewTopic(TOPIC, 6, 1)])[TOPIC].result(30)
            consumer = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": GROUP})
            consumer.commit(offsets=[TopicPartition(TOPIC, p, 0) for p in range(6)], asynchronous=False)
            consumer.close()
            phase(broker, "warm-up", 5, None, None)
            results: dict[str, list[dict[str, float]]] = {"rate": [], "flat out": []}
            for _ in range(args.rounds):
                for load, rate in (("rate", args.rate), ("flat out", None)):
                    for name, interval in PHASES:
                        r = phase(broker, name, args.phase_s, interval, rate)
                        results[load].append(r)
                        print(f"{load:<8} {r['name']:<22} {r['records_s']:>9,.0f} rec/s  p50 {r['p50_ms']:.2f} ms  "
                              f"p99 {r['p99_ms']:.2f} ms  broker CPU {r['cpu_pct']:.0f} %  "
                              f"{r['pages']:.0f} pages ({r['page_ms']:.1f} ms each)", flush=True)
        finally:
            broker.stop()
    for load, rows in results.items():
        closed = [r for r in rows if r["name"] == "closed"]
        base = {k: statistics.mean(r[k] for r in closed) for k in ("records_s", "p50_ms", "p99_ms", "cpu_pct")}
        print(f"\n{load}: against the closed phases (means)")
        for name in ("open: 10 tabs, 5 s", "busy: 10 tabs, 0.5 s"):
            mean = {k: statistics.mean(r[k] for r in rows if r["name"] == name) for k in base}
            print(f"{name:<22} records/s x{mean['records_s'] / base['records_s']:.3f}  "
                  f"p50 x{mean['p50_ms'] / base['p50_ms']:.3f}  p99 x{mean['p99_ms'] / base['p99_ms']:.3f}  "
                  f"broker CPU x{mean['cpu_pct'] / base['cpu_pct']:.3f}")


if __name__ == "__main__":
    main()
