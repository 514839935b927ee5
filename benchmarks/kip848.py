"""Rebalance time, classic vs KIP-848 consumer protocol: 10 confluent-kafka consumers x 900 partitions.

Against one ``python -m broker`` subprocess (its default settings: ``group.consumer.heartbeat.interval.ms``
5000, ``group.initial.rebalance.delay.ms`` 3000), the same run measures for each protocol

* **join**: 10 members subscribe at once → every partition owned by exactly one member, 90 each;
* **scale out**: an 11th member joins the settled group → exclusive cover again, balanced (81-82 each);
* **scale in**: that member closes → back to 90 each.

Protocols: ``classic`` with librdkafka's default eager assignor (range), ``classic`` with
``cooperative-sticky``, and ``consumer`` (``group.protocol=consumer``, the broker's ``uniform`` assignor).
Client settings are librdkafka's defaults.  "Settled" is read from each client's own ``assignment()``;
the figures are wall-clock seconds, and ratios are to the classic eager baseline of the same run.

Run: ``.venv/bin/python benchmarks/kip848.py`` (``--members 10 --partitions 900``).
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Broker:
    def __init__(self, data: Path) -> None:
        self.port = free_port()
        env = {k: v for k, v in os.environ.items() if not k.startswith("KBROKER_")}
        self.log = open(data.parent / "broker.log", "ab")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen([sys.executable, "-m", "broker", "--host", "127.0.0.1", "--port", str(self.port),
                                      "--data-dir", str(data), "--metrics-port", "0"], cwd=ROOT, env=env,
                                     stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 30
        while True:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    return
            except OSError:
                if time.monotonic() > deadline or self.proc.poll() is not None:
                    raise RuntimeError("broker did not start") from None
                time.sleep(0.05)

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(30)
        self.log.close()


def make_consumer(bootstrap: str, group: str, topic: str, protocol: str) -> Any:
    from confluent_kafka import Consumer

    config: dict[str, Any] = {"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False}
    if protocol == "consumer":
        config["group.protocol"] = "consumer"
    elif protocol == "cooperative":
        config["partition.assignment.strategy"] = "cooperative-sticky"
    c = Consumer(config)
    c.subscribe([topic])
    return c


def settled(consumers: list[Any], topic: str, partitions: int) -> bool:
    owned = [(tp.topic, tp.partition) for c in consumers for tp in c.assignment()]
    if len(owned) != partitions or set(owned) != {(topic, p) for p in range(partitions)}:
        return False
    sizes = [len(c.assignment()) for c in consumers]
    return max(sizes) - min(sizes) <= 1


def wait_settled(consumers: list[Any], topic: str, partitions: int, timeout: float) -> float:
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        for c in consumers:
            c.poll(0.01)
        if settled(consumers, topic, partitions):
            return time.monotonic() - start
    raise RuntimeError(f"not settled within {timeout}s")


def run_case(bootstrap: str, topic: str, partitions: int, members: int, protocol: str,
             timeout: float) -> dict[str, float]:
    group = f"bench-{protocol}-{uuid.uuid4().hex[:6]}"
    consumers = [make_consumer(bootstrap, group, topic, protocol) for _ in range(members)]
    out = {"join": wait_settled(consumers, topic, partitions, timeout)}
    extra = make_consumer(bootstrap, group, topic, protocol)
    consumers.append(extra)
    out["scale out"] = wait_settled(consumers, topic, partitions, timeout)
    consumers.pop()
    start = time.monotonic()
    extra.close()  # a graceful leave; the time includes the close
    closed = time.monotonic() - start
    out["scale in"] = closed + wait_settled(consumers, topic, partitions, timeout)
    for c in consumers:
        c.close()
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--members", type=int, default=10)
    ap.add_argument("--partitions", type=int, default=900)
    ap.add_argument("--timeout", type=float, default=300.0)
    args = ap.parse_args()
    from confluent_kafka import version
    from confluent_kafka.admin import AdminClient, NewTopic

    with tempfile.TemporaryDirectory() as tmp:
        broker = Broker(Path(tmp) / "data")
        try:
            topic = "kip848-bench"
            admin = AdminClient({"bootstrap.servers": broker.bootstrap})
            admin.create_topics([NewTopic(topic, args.partitions, 1)])[topic].result(60)
            cases = {"classic eager (range)": "classic", "classic cooperative-sticky": "cooperative",
                     "consumer (KIP-848, uniform)": "consumer"}
            results = {name: run_case(broker.bootstrap, topic, args.partitions, args.members, protocol, args.timeout)
                       for name, protocol in cases.items()}
        finally:
            broker.stop()
    print(f"{args.members} members x {args.partitions} partitions, confluent-kafka {version()}")
    base = results["classic eager (range)"]
    print("| case | join s | ratio | scale out s | ratio | scale in s | ratio |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, r in results.items():
        print(f"| {name} | " + " | ".join(f"{r[k]:.2f} | {r[k] / base[k]:.2f}"
                                          for k in ("join", "scale out", "scale in")) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
