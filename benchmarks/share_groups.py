"""Share groups (KIP-932): records/s through 1, 4 and 16 share consumers on one partition beside a classic
consumer on the same partition, the latency of a released record's redelivery, and the broker's CPU per
acknowledged record — all in one run against one ``python -m broker`` subprocess.

    .venv/bin/python benchmarks/share_groups.py [--records 100000] [--consumers 1,4,16]
                                                [--clients confluent,kbroker] [--releases 200] [--quick]

One topic of one partition holds ``--records`` records of ``--value-bytes`` bytes (produced first, by a
confluent-kafka producer).  Then, each reading every record of that partition once:

* **classic**: one consumer assigned the partition from the beginning (confluent-kafka's ``Consumer``, and
  our ``client.Consumer``): the baseline of the same run;
* **share, k consumers**: a new share group (``share.auto.offset.reset=earliest``) of k members, explicit
  acknowledgement, every record acknowledged ACCEPT on its own (``acknowledge(record)``), the
  acknowledgements going with the member's next fetch, and a final commit of each member: confluent-kafka's
  ``ShareConsumer`` (librdkafka, one thread per member) and our ``client.ShareConsumer`` (all members in one
  event loop).  Timed from the first record any member receives to the last member's final commit
  (members join in the first heartbeat round, before that).

records/s is records acknowledged (share) or consumed (classic) per second; the ratios are to the
classic consumer of the same client in the same run, and of k consumers to one.  Broker CPU is the
broker process's user+system time (``/proc/PID/stat``) over the case, per record.

**Redelivery**: one share member (explicit acknowledgement, one record per fetch) receives a record,
acknowledges it RELEASE and fetches again: the time from the RELEASE to the same record received again
(delivery count 2), ``--releases`` times (each record is then accepted), p50 / p99 / max.

Every case runs ``--rounds`` times, interleaved; the best round is reported, with all of them beside it.
``--py-spy PREFIX`` samples the broker during the first round's cases.  ``--quick``: 20,000 records,
50 releases, one round.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from broker.testing.harness import BrokerProcess  # noqa: E402

#: quick heartbeats, so that members join in a fraction of a second (the broker's other share settings are
#: its defaults: 30 s record locks, 2,000 record locks per share-partition, delivery-count limit 5)
BROKER_ARGS = ["--set", "group.share.heartbeat.interval.ms=500", "--set", "group.share.min.heartbeat.interval.ms=100"]
TOPIC, REDELIVER_TOPIC = "share-bench", "share-redeliver"


def cpu_s(pid: int) -> float:
    """The process's user + system CPU seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / 100  # utime + stime, in clock ticks of 10 ms


class Result:
    def __init__(self, records: int, seconds: float, cpu: float, duplicates: int = 0, join_s: float = 0.0) -> None:
        self.records, self.seconds, self.cpu = records, seconds, cpu
        self.duplicates, self.join_s = duplicates, join_s
        self.client_cpu = 0.0  # this process's CPU seconds (the consumers, all their threads)

    @property
    def rate(self) -> float:
        return self.records / self.seconds

    @property
    def cpu_us(self) -> float:
        return self.cpu / self.records * 1e6

    @property
    def client_cpu_us(self) -> float:
        return self.client_cpu / self.records * 1e6


def measured(pid: int, run: Callable[[], tuple[int, float, int, float]], profile: str | None = None,
             native: bool = False) -> Result:
    """``run()`` with the broker's CPU time read around it (and, with ``profile``, py-spy sampling the broker
    into that file, collapsed stacks)."""
    spy = None
    if profile:
        spy = subprocess.Popen(["py-spy", "record", "--pid", str(pid), "--format", "raw", "--rate", "1000",
                                "--output", profile, *(["--native"] if native else [])], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(1.0)  # attached
    before, mine = cpu_s(pid), time.process_time()
    records, seconds, duplicates, join_s = run()
    result = Result(records, seconds, cpu_s(pid) - before, duplicates, join_s)
    result.client_cpu = time.process_time() - mine
    if spy is not None:
        spy.send_signal(signal.SIGINT)
        spy.wait(60)
    return result


# ------------------------------------------------------------------ setup

def create_topic(bs: str, name: str) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bs})
    admin.create_topics([NewTopic(name, 1, 1)])[name].result(30)


def share_group(bs: str, prefix: str) -> str:
    """A new share group reading from the earliest offset."""
    from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource

    group = f"{prefix}-{uuid.uuid4().hex[:6]}"
    entry = ConfigEntry("share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET)
    admin = AdminClient({"bootstrap.servers": bs})
    for f in admin.incremental_alter_configs([ConfigResource("GROUP", group, incremental_configs=[entry])]).values():
        f.result(30)
    return group


def assigned_members(port: int, group: str) -> int:
    """Members of share group ``group`` that have partition 0 of the topic assigned (ShareGroupDescribe)."""
    from protocol.api import ApiKey, decode_response, encode_request

    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(encode_request(ApiKey.SHARE_GROUP_DESCRIBE, 1, 1, "share-bench",
                                    {"group_ids": [group], "include_authorized_operations": False}))
        (size,) = struct.unpack(">i", recv_exactly(sock, 4))
        resp = decode_response(ApiKey.SHARE_GROUP_DESCRIBE, 1, recv_exactly(sock, size))[1]
    return sum(1 for g in resp.groups for m in g.members
               if any(0 in tp.partitions for tp in m.assignment.topic_partitions))


def recv_exactly(sock: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise ConnectionError("closed")
        data += chunk
    return data


def wait_joined(port: int, group: str, k: int, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while assigned_members(port, group) < k:
        if time.monotonic() > deadline:
            raise RuntimeError(f"{k} members of {group} not assigned within {timeout:.0f}s")
        time.sleep(0.05)


def produce(bs: str, topic: str, n: int, value_bytes: int, batch_records: int = 1) -> None:
    """``n`` records to partition 0, at most ``batch_records`` in a log batch."""
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bs, "linger.ms": 5, "batch.size": 1 << 20,
                  "batch.num.messages": batch_records})
    payload = b"x" * value_bytes
    for _ in range(n):
        while True:
            try:
                p.produce(topic, value=payload, partition=0)
                break
            except BufferError:
                p.poll(0.05)
    p.flush(60)


# ------------------------------------------------------------------ classic consumers

def classic_confluent(bs: str, n: int) -> tuple[int, float, int, float]:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bs, "group.id": f"classic-{uuid.uuid4().hex[:6]}",
                  "enable.auto.commit": False})
    c.assign([TopicPartition(TOPIC, 0, OFFSET_BEGINNING)])
    got, start = 0, 0.0
    while got < n:
        for m in c.consume(500, 1.0):
            if m.error() is None:
                if not got:
                    start = time.monotonic()
                got += 1
    seconds = time.monotonic() - start
    c.close()
    return got, seconds, 0, 0.0


def classic_ours(bs: str, n: int) -> tuple[int, float, int, float]:
    from client import Consumer, TopicPartition

    async def run() -> tuple[int, float, int, float]:
        async with Consumer(bootstrap_servers=bs, auto_offset_reset="earliest") as c:
            c.assign([TopicPartition(TOPIC, 0)])
            got, start = 0, 0.0
            while got < n:
                for recs in (await c.getmany(timeout_ms=1000)).values():
                    if recs and not got:
                        start = time.monotonic()
                    got += len(recs)
            return got, time.monotonic() - start, 0, 0.0

    return asyncio.run(run())


# ------------------------------------------------------------------ share consumers

def share_confluent(bs: str, port: int, n: int, k: int) -> tuple[int, float, int, float]:
    """k confluent-kafka ShareConsumers (one thread each), explicit per-record ACCEPT."""
    from confluent_kafka import AcknowledgeType, ShareConsumer

    group = share_group(bs, "share-ck")
    offsets: list[list[int]] = [[] for _ in range(k)]
    go, done, closing = threading.Event(), threading.Event(), threading.Event()
    ended: list[float] = [0.0] * k
    errors: list[Any] = []

    def member(i: int) -> None:
        consumer = ShareConsumer({"bootstrap.servers": bs, "group.id": group,
                                  "share.acknowledgement.mode": "explicit", "log_level": 3})
        mine = offsets[i]
        try:
            consumer.subscribe([TOPIC])
            go.wait()
            while not done.is_set():
                for m in consumer.poll(0.2):
                    if m.error():
                        errors.append(m.error())
                        continue
                    consumer.acknowledge(m, AcknowledgeType.ACCEPT)
                    mine.append(m.offset())
            consumer.commit_sync(60)  # the last batch's acknowledgements
        except Exception as exc:  # reported below
            errors.append(exc)
        finally:
            ended[i] = time.monotonic()
            closing.wait()
            consumer.close()

    threads = [threading.Thread(target=member, args=(i,), daemon=True) for i in range(k)]
    for t in threads:
        t.start()
    try:
        joined = time.monotonic()
        wait_joined(port, group, k)
        joined = time.monotonic() - joined
        start = time.monotonic()
        go.set()
        while sum(len(o) for o in offsets) < n and not errors:
            time.sleep(0.01)
        done.set()
        while not all(ended):
            time.sleep(0.005)
    finally:
        go.set()
        done.set()
        closing.set()
        for t in threads:
            t.join(60)
    if errors:
        raise RuntimeError(f"share consumer errors: {errors[:5]}")
    return summarise(offsets, max(ended) - start, joined)


def share_ours(bs: str, port: int, n: int, k: int) -> tuple[int, float, int, float]:
    """k of our ShareConsumers in one event loop, explicit per-record ACCEPT."""
    from client import AcknowledgeType, ShareConsumer

    group = share_group(bs, "share-kb")
    offsets: list[list[int]] = [[] for _ in range(k)]

    async def run() -> tuple[float, float]:
        members = [ShareConsumer(TOPIC, bootstrap_servers=bs, group_id=group, acknowledgement_mode="explicit")
                   for _ in range(k)]
        joined = time.monotonic()
        await asyncio.gather(*(m.start() for m in members))
        await asyncio.to_thread(wait_joined, port, group, k)
        joined = time.monotonic() - joined
        done = asyncio.Event()

        async def member(i: int) -> None:
            sc, mine = members[i], offsets[i]
            while not done.is_set():
                for recs in (await sc.getmany(timeout_ms=200)).values():
                    for r in recs:
                        sc.acknowledge(r, AcknowledgeType.ACCEPT)
                        mine.append(r.offset)
                if sum(len(o) for o in offsets) >= n:
                    done.set()
            await sc.commit()

        try:
            start = time.monotonic()
            await asyncio.gather(*(member(i) for i in range(k)))
            return time.monotonic() - start, joined
        finally:
            await asyncio.gather(*(m.close() for m in members))

    seconds, joined = asyncio.run(run())
    return summarise(offsets, seconds, joined)


def summarise(offsets: list[list[int]], seconds: float, joined: float) -> tuple[int, float, int, float]:
    """(distinct records, seconds, duplicates, seconds until every member had the partition assigned)."""
    everything = [o for mine in offsets for o in mine]
    distinct = len(set(everything))
    return distinct, seconds, len(everything) - distinct, joined


# ------------------------------------------------------------------ redelivery latency

def redelivery_confluent(bs: str, releases: int) -> list[float]:
    from confluent_kafka import AcknowledgeType, ShareConsumer

    group = share_group(bs, "redeliver-ck")
    consumer = ShareConsumer({"bootstrap.servers": bs, "group.id": group, "share.acknowledgement.mode": "explicit",
                              "max.poll.records": 1, "log_level": 3})
    consumer.subscribe([REDELIVER_TOPIC])
    waits: list[float] = []
    released: dict[int, float] = {}
    try:
        while len(waits) < releases:
            for m in consumer.poll(1.0):
                if m.error():
                    raise RuntimeError(str(m.error()))
                if m.offset() in released:
                    waits.append(time.monotonic() - released.pop(m.offset()))
                    consumer.acknowledge(m, AcknowledgeType.ACCEPT)
                elif m.delivery_count() == 1:
                    released[m.offset()] = time.monotonic()
                    consumer.acknowledge(m, AcknowledgeType.RELEASE)
                else:
                    consumer.acknowledge(m, AcknowledgeType.ACCEPT)
    finally:
        consumer.close()
    return waits


def redelivery_ours(bs: str, releases: int) -> list[float]:
    from client import AcknowledgeType, ShareConsumer

    group = share_group(bs, "redeliver-kb")

    async def run() -> list[float]:
        waits: list[float] = []
        released: dict[int, float] = {}
        async with ShareConsumer(REDELIVER_TOPIC, bootstrap_servers=bs, group_id=group,
                                 acknowledgement_mode="explicit") as sc:
            while len(waits) < releases:
                for recs in (await sc.getmany(timeout_ms=1000, max_records=1)).values():
                    for r in recs:
                        if r.offset in released:
                            waits.append(time.monotonic() - released.pop(r.offset))
                            sc.acknowledge(r, AcknowledgeType.ACCEPT)
                        elif r.delivery_count == 1:
                            released[r.offset] = time.monotonic()
                            sc.acknowledge(r, AcknowledgeType.RELEASE)
                        else:
                            sc.acknowledge(r, AcknowledgeType.ACCEPT)
        return waits

    return asyncio.run(run())


def best(results: list[Result]) -> Result:
    return max(results, key=lambda r: r.rate)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


# ------------------------------------------------------------------ main

def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=100_000)
    ap.add_argument("--value-bytes", type=int, default=100)
    ap.add_argument("--consumers", default="1,4,16", help="share group sizes, comma separated")
    ap.add_argument("--clients", default="confluent,kbroker", help="confluent and/or kbroker (our client)")
    ap.add_argument("--batch-records", type=int, default=500,
                    help="records per log batch at most (the producer's batch.num.messages; librdkafka's default "
                    "is 10,000)")
    ap.add_argument("--releases", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=3, help="rounds of every case (the best is reported)")
    ap.add_argument("--native", action="store_true", help="with --py-spy: native frames too")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="a broker setting (repeatable)")
    ap.add_argument("--quick", action="store_true", help="20,000 records, 50 releases, one round")
    ap.add_argument("--py-spy", metavar="PREFIX", help="sample the broker with py-spy during each timed case "
                    "into PREFIX-CASE.txt (collapsed stacks)")
    args = ap.parse_args()
    if args.quick:
        args.records, args.releases, args.rounds = 20_000, 50, 1
    sizes = [int(k) for k in args.consumers.split(",")]
    clients = args.clients.split(",")
    from confluent_kafka import libversion, version

    runners = {"confluent": (classic_confluent, share_confluent, redelivery_confluent),
               "kbroker": (classic_ours, share_ours, redelivery_ours)}
    with tempfile.TemporaryDirectory() as tmp:
        broker = BrokerProcess(Path(tmp) / "data",
                               extra_args=BROKER_ARGS + [a for kv in args.set for a in ("--set", kv)])
        broker.start()
        try:
            assert broker.proc is not None
            pid, bs = broker.proc.pid, broker.bootstrap_servers
            for topic in (TOPIC, REDELIVER_TOPIC):
                create_topic(bs, topic)
            produce(bs, TOPIC, args.records, args.value_bytes, args.batch_records)
            produce(bs, REDELIVER_TOPIC, args.releases * len(clients) + 10, args.value_bytes, 1)
            for name in clients:  # warm-up: every API and version's codec built before anything is timed
                classic, share, _ = runners[name]
                classic(bs, min(args.records, 2000))
                share(bs, broker.port, min(args.records, 2000), 1)
            runs: dict[tuple[str, int], list[Result]] = {}  # (client, 0 = classic or k share consumers)
            waits: dict[str, list[float]] = {}
            for round_ in range(args.rounds):  # the cases interleaved, so that the machine's moods hit them all
                for name in clients:
                    classic, share, _ = runners[name]
                    spy = args.py_spy if round_ == 0 else None
                    runs.setdefault((name, 0), []).append(measured(
                        pid, lambda: classic(bs, args.records),  # noqa: B023 - called at once
                        spy and f"{spy}-{name}-classic.txt", args.native))
                    for k in sizes:
                        runs.setdefault((name, k), []).append(measured(
                            pid, lambda: share(bs, broker.port, args.records, k),  # noqa: B023
                            spy and f"{spy}-{name}-share{k}.txt", args.native))
            for name in clients:
                waits[name] = runners[name][2](bs, args.releases)
            assert broker.alive(), broker.log_tail()
        finally:
            broker.stop()
    print(f"{args.records:,} records of {args.value_bytes} B on one partition (log batches of up to "
          f"{args.batch_records} records); broker settings {' '.join(args.set) or 'default'}; "
          f"best of {args.rounds} rounds; confluent-kafka {version()} / "
          f"librdkafka {libversion()[0]}")
    print()
    print("| client | consumer | records/s (best) | all rounds | x classic | x one share consumer "
          "| broker CPU µs/record | consumers' CPU µs/record | duplicates | time to join |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name in clients:
        base = best(runs[name, 0])
        for k in [0, *sizes]:
            r = best(runs[name, k])
            spread = " / ".join(f"{x.rate / 1000:,.0f}k" for x in runs[name, k])
            one = best(runs[name, 1]) if (name, 1) in runs else None
            label = "classic, assigned" if k == 0 else f"share x{k}"
            scale = "" if one is None or k == 0 else f"{r.rate / one.rate:.2f}"
            extra = "| | |" if k == 0 else f"| {sum(x.duplicates for x in runs[name, k])} | {r.join_s:.2f} s |"
            print(f"| {name} | {label} | {r.rate:,.0f} | {spread} | {r.rate / base.rate:.2f} | {scale} | "
                  f"{r.cpu_us:.1f} | {r.client_cpu_us:.1f} {extra}")
    print()
    print("| client | released → redelivered p50 | p99 | max | releases |")
    print("|---|---:|---:|---:|---:|")
    for name in clients:
        w = waits[name]
        print(f"| {name} | {statistics.median(w) * 1000:.1f} ms | {percentile(w, 0.99) * 1000:.1f} ms | "
              f"{max(w) * 1000:.1f} ms | {len(w)} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
