"""Operating a cluster under load: a rolling restart, and moving a partition with and without a throttle.

    .venv/bin/python benchmarks/cluster_lifecycle.py [--rate 2000] [--move-mb 100] [--throttle-mb 10]

Starts etcd and three ``python -m broker --cluster`` processes (:class:`broker.testing.harness.KBrokerCluster`)
and confluent-kafka clients, then prints:

* rolling restart: two producers (``acks=1``, and idempotent ``acks=all``) at ``--rate`` records/s
  each over a 6-partition topic with replication factor 3, and a consumer group; every broker in
  turn gets SIGTERM, is restarted and the next waits for full ISRs.  Printed: acknowledged records
  lost (must be 0), records duplicated by the idempotent producer (must be 0), how long each SIGTERM
  took, the longest gap between two acknowledgements of each producer while each broker restarted,
  and the longest the group went without consuming;
* reassignment: a partition of ``--move-mb`` MB copied to a new replica, unthrottled and then at
  ``--throttle-mb`` MB/s, while a producer writes to another topic at full speed: the MB/s moved,
  and the producer's records/s during each move as a ratio of its rate before.

The machine is shared: compare ratios and bounds, not rates.
"""

from __future__ import annotations

import argparse
import itertools
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import (  # noqa: E402
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
    ResourceType,
)

from broker.testing.harness import KBrokerCluster  # noqa: E402

MB = 1_000_000


def wait_for(check: Any, what: str, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if check():
                return
        except Exception:
            pass
        time.sleep(0.1)
    raise SystemExit(f"timed out waiting for {what}")


def partitions(admin: AdminClient, topic: str) -> dict[int, Any]:
    return admin.list_topics(topic, timeout=10).topics[topic].partitions


def full_isrs(admin: AdminClient, topic: str, brokers: set[int]) -> bool:
    return all(p.leader >= 0 and set(p.isrs) == brokers for p in partitions(admin, topic).values())


class Producing:
    """A producer at ``rate`` records/s from a thread, recording where each acknowledged record went."""

    def __init__(self, bootstrap: str, topic: str, rate: float, *, acks: str, idempotent: bool) -> None:
        self.producer = Producer({"bootstrap.servers": bootstrap, "acks": acks, "enable.idempotence": idempotent,
                                  "linger.ms": 5, "message.timeout.ms": 120_000, "retry.backoff.ms": 50,
                                  "topic.metadata.refresh.interval.ms": 1000})
        self.topic, self.rate, self.idempotent = topic, rate, idempotent
        self.acked: dict[bytes, tuple[int, int]] = {}
        self.ack_times: list[float] = []
        self.failed = 0
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        seq, start = 0, time.monotonic()
        while not self.stop.is_set():
            value = b"%s-%d" % (self.topic.encode(), seq)

            def cb(err: Any, msg: Any, value: bytes = value) -> None:
                with self.lock:
                    if err is None:
                        self.acked[value] = (msg.partition(), msg.offset())
                        self.ack_times.append(time.monotonic())
                    else:
                        self.failed += 1

            try:
                self.producer.produce(self.topic, value=value, on_delivery=cb)
                seq += 1
            except BufferError:
                pass
            self.producer.poll(0)
            if self.rate:
                delay = start + seq / self.rate - time.monotonic()
                if delay > 0:
                    time.sleep(delay)

    def longest_gap(self, t0: float, t1: float) -> float:
        with self.lock:
            times = [t for t in self.ack_times if t0 <= t <= t1]
        times = [t0, *times, t1]
        return max(b - a for a, b in itertools.pairwise(times))

    def finish(self) -> None:
        self.stop.set()
        self.thread.join(30)
        self.producer.flush(120)


def read_all(bootstrap: str, topic: str, count: int) -> dict[tuple[int, int], bytes]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"check-{time.time()}", "enable.auto.commit": False,
                  "auto.offset.reset": "earliest"})
    md = c.list_topics(topic, timeout=10).topics[topic].partitions
    ends = {p: c.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in md}
    c.assign([TopicPartition(topic, p, 0) for p in md])
    stored: dict[tuple[int, int], bytes] = {}
    deadline = time.monotonic() + 300
    while sum(1 for _ in stored) < sum(ends.values()) and time.monotonic() < deadline:
        for m in c.consume(5000, 0.5):
            if m.error() is None:
                stored[(m.partition(), m.offset())] = m.value()
    c.close()
    return stored


def rolling_restart(cluster: KBrokerCluster, rate: float) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    for f in admin.create_topics([NewTopic(t, 6, 3) for t in ("roll-one", "roll-all")]).values():
        f.result(30)
    wait_for(lambda: full_isrs(admin, "roll-one", {1, 2, 3}) and full_isrs(admin, "roll-all", {1, 2, 3}), "topics")
    producers = [Producing(cluster.bootstrap_servers, "roll-one", rate, acks="1", idempotent=False),
                 Producing(cluster.bootstrap_servers, "roll-all", rate, acks="all", idempotent=True)]
    consumed: list[float] = []
    stop = threading.Event()

    def consume() -> None:
        c = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "roll-g",
                      "auto.offset.reset": "earliest"})
        c.subscribe(["roll-one"])
        while not stop.is_set():
            for m in c.consume(500, 0.2):
                if m.error() is None:
                    consumed.append(time.monotonic())
        c.close()

    group = threading.Thread(target=consume, daemon=True)
    for p in producers:
        p.thread.start()
    group.start()
    time.sleep(5)
    rows = []
    for node in sorted(cluster.brokers):
        t0 = time.monotonic()
        assert cluster.stop_broker(node) == 0
        stopped = time.monotonic() - t0
        cluster.restart(node)
        wait_for(lambda: full_isrs(admin, "roll-one", {1, 2, 3}) and full_isrs(admin, "roll-all", {1, 2, 3}),
                 f"full ISRs after restarting {node}")
        t1 = time.monotonic()
        time.sleep(2)
        window = [t for t in consumed if t0 - 1 <= t <= t1 + 2]
        group_gap = max(b - a for a, b in itertools.pairwise([t0, *window, t1]))
        rows.append((node, stopped, producers[0].longest_gap(t0, t1), producers[1].longest_gap(t0, t1), group_gap))
    time.sleep(2)
    stop.set()
    for p in producers:
        p.finish()
    group.join(10)
    print("rolling restart: SIGTERM, restart, full ISRs — broker by broker")
    print("| broker | SIGTERM took | longest ack gap acks=1 | longest ack gap idempotent acks=all | longest gap "
          "the group consumed nothing |")
    print("|---:|---:|---:|---:|---:|")
    for node, stopped, g1, g2, gg in rows:
        print(f"| {node} | {stopped:.2f} s | {g1:.2f} s | {g2:.2f} s | {gg:.2f} s |")
    for p in producers:
        stored = read_all(cluster.bootstrap_servers, p.topic, len(p.acked))
        lost = sum(1 for v, where in p.acked.items() if stored.get(where) != v)
        counts: dict[bytes, int] = {}
        for v in stored.values():
            counts[v] = counts.get(v, 0) + 1
        dups = sum(1 for n in counts.values() if n > 1) if p.idempotent else "-"
        kind = "idempotent acks=all" if p.idempotent else "acks=1"
        print(f"{kind}: {len(p.acked)} acknowledged, {p.failed} failed deliveries, lost {lost}, duplicated {dups}")


def set_throttle(admin: AdminClient, topic: str, source: int, dest: int, rate: int | None) -> None:
    op = AlterConfigOpType.SET if rate is not None else AlterConfigOpType.DELETE
    resources = [ConfigResource(ResourceType.TOPIC, topic, incremental_configs=[
        ConfigEntry("leader.replication.throttled.replicas", f"0:{source}", incremental_operation=op),
        ConfigEntry("follower.replication.throttled.replicas", f"0:{dest}", incremental_operation=op)])]
    for b in (source, dest):
        resources.append(ConfigResource(ResourceType.BROKER, str(b), incremental_configs=[
            ConfigEntry(n, str(rate or ""), incremental_operation=op)
            for n in ("leader.replication.throttled.rate", "follower.replication.throttled.rate")]))
    for r in resources:
        for f in admin.incremental_alter_configs([r]).values():
            f.result(30)


def reassignment(cluster: KBrokerCluster, move_mb: int, throttle_mb: float) -> None:
    from kafka import TopicPartition as KTP
    from kafka.admin import KafkaAdminClient

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    kadmin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
    for f in admin.create_topics([NewTopic("busy", 3, 2)]).values():
        f.result(30)
    rows = []
    for label, throttle in (("unthrottled", None), (f"throttled at {throttle_mb:g} MB/s", int(throttle_mb * MB))):
        topic = f"move-{label.split()[0]}"
        for f in admin.create_topics([NewTopic(topic, 1, 1)]).values():
            f.result(30)
        wait_for(lambda topic=topic: partitions(admin, topic)[0].leader >= 0, "the topic's leader")
        fill = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "1", "linger.ms": 20,
                         "compression.type": "none", "batch.size": 1 << 20})
        value = bytes(range(256)) * 40
        for _ in range(move_mb * MB // len(value)):
            while True:
                try:
                    fill.produce(topic, value=value, partition=0)
                    break
                except BufferError:
                    fill.poll(0.05)
        fill.flush(300)
        source = partitions(admin, topic)[0].leader
        dest = next(b for b in (1, 2, 3) if b != source)
        busy = Producing(cluster.bootstrap_servers, "busy", 0, acks="1", idempotent=False)
        busy.thread.start()
        time.sleep(3)
        before = busy_rate(busy, 3)
        if throttle:
            set_throttle(admin, topic, source, dest, throttle)
        t0 = time.monotonic()
        kadmin.alter_partition_reassignments({KTP(topic, 0): [source, dest]})
        wait_for(lambda: not kadmin.list_partition_reassignments(), "the move", timeout=3600)
        took = time.monotonic() - t0
        during = busy_rate_between(busy, t0, t0 + took)
        busy.finish()
        if throttle:
            set_throttle(admin, topic, source, dest, None)
        rows.append((label, move_mb / took, during / before if before else float("nan")))
    kadmin.close()
    print(f"reassignment of a {move_mb} MB partition to a new replica, a producer writing to another topic meanwhile")
    print("| move | MB/s moved | producer records/s during / before |")
    print("|---|---:|---:|")
    for label, mbs, ratio in rows:
        print(f"| {label} | {mbs:.1f} | {ratio:.2f} |")


def busy_rate(p: Producing, seconds: float) -> float:
    now = time.monotonic()
    return busy_rate_between(p, now - seconds, now)


def busy_rate_between(p: Producing, t0: float, t1: float) -> float:
    with p.lock:
        n = sum(1 for t in p.ack_times if t0 <= t <= t1)
    return n / max(t1 - t0, 1e-9)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rate", type=float, default=2000, help="records/s of each rolling-restart producer")
    ap.add_argument("--move-mb", type=int, default=100)
    ap.add_argument("--throttle-mb", type=float, default=10.0)
    ap.add_argument("--only", choices=("restart", "reassign"))
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="kbroker-lifecycle-") as tmp:
        if args.only != "reassign":
            with KBrokerCluster(3, Path(tmp) / "restart") as cluster:
                rolling_restart(cluster, args.rate)
        if args.only != "restart":
            with KBrokerCluster(3, Path(tmp) / "move") as cluster:
                reassignment(cluster, args.move_mb, args.throttle_mb)


if __name__ == "__main__":
    main()
