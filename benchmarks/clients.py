"""Produce/consume throughput of kbroker's client vs aiokafka, kafka-python and confluent-kafka.

A third case, ``keyed``, produces 100 B values under 1,000 distinct 36-byte keys (UUIDs) to a
10-partition topic with each client's default partitioner (murmur2 of the key, as Java's).

All clients run against the same broker in one run — ``python -m broker`` as a separate process
(:class:`broker.testing.harness.BrokerProcess`), so the broker's own work does not share the clients'
interpreter; records/s and MB/s for 100 B and 1 KB values, then ratios relative to our client.
``--in-process`` runs the broker in a thread of this process instead (every client then shares
its interpreter with the broker).  Prints which record codec our client uses (compiled or pure
Python, ``protocol.records.COMPILED``).

Before measuring, every client produces and consumes 2,000 records once (``--warmup``), so that no
client pays for first-time work the others are spared: the broker's first request of each API
and version builds its codec, and whichever client went first used to pay that (~20-30 ms)
inside its figure.  Every measured run still includes the client's start, the topic's creation
and the final flush or close.

Further sections (``--sections``, all by default):

* ``rebalance``: rebalance time of our consumer, classic and KIP-848 (``group_protocol="consumer"``), beside
  confluent-kafka's, 10 members x 900 partitions (as ``benchmarks/kip848.py``): join, scale out (an 11th
  member), scale in (it closes), each until every partition is owned once and the split is balanced;
* ``transactions``: transactional produce records/s at 100, 1,000 and 10,000 records per transaction, ours
  beside confluent-kafka's and aiokafka's;
* ``spark``: the ``kbroker`` sink's batch write throughput, exactly-once vs at-least-once.

    python benchmarks/clients.py [--records 50000] [--in-process] [--sections throughput,rebalance,...]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import os
import random
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterable

from broker import BrokerConfig, BrokerThread
from broker.testing.harness import BrokerProcess
from client import Admin, Consumer, Producer, TopicPartition


def _keys(n: int, keys: list[bytes] | None) -> Iterable[bytes | None]:
    """The key of each of ``n`` records: none (sent to partition 0), or ``keys`` in turn (partitioned
    by the client's default partitioner)."""
    return itertools.repeat(None, n) if keys is None else (keys[i % len(keys)] for i in range(n))


def _ours_produce(bs: str, topic: str, n: int, payload: bytes, keys: list[bytes] | None = None) -> None:
    partition = 0 if keys is None else None

    async def run() -> None:
        async with Producer(bootstrap_servers=bs, linger_ms=5, batch_size=256 * 1024, acks=1) as p:
            for key in _keys(n, keys):
                await p.enqueue(topic, value=payload, key=key, partition=partition)
            await p.flush()

    asyncio.run(run())


def _create_topics(bs: str, topics: dict[str, int]) -> None:
    async def run() -> None:
        async with Admin(bootstrap_servers=bs) as admin:
            await admin.create_topics(topics)

    asyncio.run(run())


def _ours_consume(bs: str, topic: str, n: int) -> None:
    async def run() -> None:
        async with Consumer(bootstrap_servers=bs, auto_offset_reset="earliest") as c:
            c.assign([TopicPartition(topic, 0)])
            got = 0
            while got < n:
                for recs in (await c.getmany(timeout_ms=1000)).values():
                    got += len(recs)

    asyncio.run(run())


def _aiokafka_produce(bs: str, topic: str, n: int, payload: bytes, keys: list[bytes] | None = None) -> None:
    from aiokafka import AIOKafkaProducer

    partition = 0 if keys is None else None

    async def run() -> None:
        p = AIOKafkaProducer(bootstrap_servers=bs, linger_ms=5, max_batch_size=256 * 1024, acks=1)
        await p.start()
        try:
            for key in _keys(n, keys):
                await p.send(topic, value=payload, key=key, partition=partition)
            await p.flush()
        finally:
            await p.stop()

    asyncio.run(run())


def _aiokafka_consume(bs: str, topic: str, n: int) -> None:
    from aiokafka import AIOKafkaConsumer
    from aiokafka.structs import TopicPartition as ATP

    async def run() -> None:
        c = AIOKafkaConsumer(bootstrap_servers=bs, auto_offset_reset="earliest", enable_auto_commit=False)
        await c.start()
        try:
            c.assign([ATP(topic, 0)])
            got = 0
            while got < n:
                for recs in (await c.getmany(timeout_ms=1000)).values():
                    got += len(recs)
        finally:
            await c.stop()

    asyncio.run(run())


def _kafka_python_produce(bs: str, topic: str, n: int, payload: bytes, keys: list[bytes] | None = None) -> None:
    from kafka import KafkaProducer

    partition = 0 if keys is None else None
    p = KafkaProducer(bootstrap_servers=bs, linger_ms=5, batch_size=256 * 1024, acks=1)
    for key in _keys(n, keys):
        p.send(topic, value=payload, key=key, partition=partition)
    p.flush()
    p.close()


def _kafka_python_consume(bs: str, topic: str, n: int) -> None:
    from kafka import KafkaConsumer
    from kafka import TopicPartition as KTP

    c = KafkaConsumer(bootstrap_servers=bs, auto_offset_reset="earliest", enable_auto_commit=False)
    c.assign([KTP(topic, 0)])
    got = 0
    while got < n:
        for recs in c.poll(timeout_ms=1000).values():
            got += len(recs)
    c.close()


def _confluent_produce(bs: str, topic: str, n: int, payload: bytes, keys: list[bytes] | None = None) -> None:
    from confluent_kafka import Producer as CKProducer

    where = {"partition": 0} if keys is None else {}  # keyed: librdkafka's partitioner (murmur2_random)
    p = CKProducer({"bootstrap.servers": bs, "linger.ms": 5, "acks": 1, "partitioner": "murmur2_random"})
    for key in _keys(n, keys):
        while True:
            try:
                p.produce(topic, value=payload, key=key, **where)
                break
            except BufferError:
                p.poll(0.01)
    p.flush(60)


def _confluent_consume(bs: str, topic: str, n: int) -> None:
    from confluent_kafka import Consumer as CKConsumer
    from confluent_kafka import TopicPartition as CTP

    c = CKConsumer({"bootstrap.servers": bs, "group.id": "bench", "auto.offset.reset": "earliest",
                    "enable.auto.commit": False})
    c.assign([CTP(topic, 0, 0)])
    got = 0
    while got < n:
        # consume(num, timeout) waits for all of num or the timeout: never ask for more than is left, or the
        # last call waits out its timeout (12,500 records took 1.0 s that way)
        got += len(c.consume(min(10000, n - got), 1.0))
    c.close()


CLIENTS: dict[str, tuple[Callable[..., None], Callable[..., None]]] = {
    "kbroker": (_ours_produce, _ours_consume),
    "aiokafka": (_aiokafka_produce, _aiokafka_consume),
    "kafka-python": (_kafka_python_produce, _kafka_python_consume),
    "confluent-kafka": (_confluent_produce, _confluent_consume),
}


# -- rebalance time: 10 members, 900 partitions (as benchmarks/kip848.py) ------------------------


def _settled(assignments: list[set[tuple[str, int]]], topic: str, partitions: int) -> bool:
    owned = [tp for a in assignments for tp in a]
    if len(owned) != partitions or set(owned) != {(topic, p) for p in range(partitions)}:
        return False
    sizes = [len(a) for a in assignments]
    return max(sizes) - min(sizes) <= 1


def _ours_rebalance(bs: str, topic: str, partitions: int, members: int, protocol: str,
                    timeout: float) -> dict[str, float]:
    """Our consumers (one event loop): join, an extra member joins (scale out), it closes (scale in)."""
    group = f"bench-ours-{protocol}-{uuid.uuid4().hex[:6]}"

    def make() -> Consumer:
        return Consumer(topic, bootstrap_servers=bs, group_id=group, group_protocol=protocol,
                        enable_auto_commit=False)

    async def settle(consumers: list[Consumer]) -> float:
        start = time.monotonic()
        while time.monotonic() - start < timeout:
            await asyncio.gather(*(c.getmany(timeout_ms=10) for c in consumers))
            if _settled([{(tp.topic, tp.partition) for tp in c.assignment()} for c in consumers], topic, partitions):
                return time.monotonic() - start
        raise RuntimeError(f"not settled within {timeout}s")

    async def run() -> dict[str, float]:
        consumers = [make() for _ in range(members)]
        start = time.monotonic()
        await asyncio.gather(*(c.start() for c in consumers))
        out = {"join": time.monotonic() - start + await settle(consumers)}
        extra = make()
        start = time.monotonic()
        await extra.start()
        out["scale out"] = time.monotonic() - start + await settle([*consumers, extra])
        start = time.monotonic()
        await extra.close()
        out["scale in"] = time.monotonic() - start + await settle(consumers)
        await asyncio.gather(*(c.close() for c in consumers))
        return out

    return asyncio.run(run())


def _confluent_rebalance(bs: str, topic: str, partitions: int, members: int, protocol: str,
                         timeout: float) -> dict[str, float]:
    from confluent_kafka import Consumer as CKConsumer

    group = f"bench-ck-{protocol}-{uuid.uuid4().hex[:6]}"

    def make() -> CKConsumer:
        config = {"bootstrap.servers": bs, "group.id": group, "enable.auto.commit": False}
        if protocol == "consumer":
            config["group.protocol"] = "consumer"
        c = CKConsumer(config)
        c.subscribe([topic])
        return c

    def settle(consumers: list[CKConsumer]) -> float:
        start = time.monotonic()
        while time.monotonic() - start < timeout:
            for c in consumers:
                c.poll(0.01)
            if _settled([{(tp.topic, tp.partition) for tp in c.assignment()} for c in consumers], topic, partitions):
                return time.monotonic() - start
        raise RuntimeError(f"not settled within {timeout}s")

    consumers = [make() for _ in range(members)]
    out = {"join": settle(consumers)}
    extra = make()
    out["scale out"] = settle([*consumers, extra])
    start = time.monotonic()
    extra.close()
    out["scale in"] = time.monotonic() - start + settle(consumers)
    for c in consumers:
        c.close()
    return out


def rebalance_section(bs: str, members: int, partitions: int) -> None:
    topic = "bench-rebalance"
    _create_topics(bs, {topic: partitions})
    cases = {"kbroker classic (range, eager)": lambda: _ours_rebalance(bs, topic, partitions, members, "classic", 300),
             "kbroker consumer (KIP-848)": lambda: _ours_rebalance(bs, topic, partitions, members, "consumer", 300),
             "confluent-kafka classic (range, eager)":
                 lambda: _confluent_rebalance(bs, topic, partitions, members, "classic", 300),
             "confluent-kafka consumer (KIP-848)":
                 lambda: _confluent_rebalance(bs, topic, partitions, members, "consumer", 300)}
    print(f"\nrebalance time, {members} members x {partitions} partitions (s, until every partition is owned "
          "once and the split is balanced)")
    print("| case | join | scale out | scale in |")
    print("|---|---:|---:|---:|")
    for name, run in cases.items():
        r = run()
        print(f"| {name} | {r['join']:.2f} | {r['scale out']:.2f} | {r['scale in']:.2f} |", flush=True)


# -- transactional producers ---------------------------------------------------------------------


def _ours_txn(bs: str, topic: str, n: int, per_txn: int, payload: bytes) -> None:
    async def run() -> None:
        async with Producer(bootstrap_servers=bs, linger_ms=5, batch_size=256 * 1024,
                            transactional_id=f"bench-{uuid.uuid4().hex[:8]}") as p:
            for start in range(0, n, per_txn):
                async with p.transaction():
                    for _ in range(min(per_txn, n - start)):
                        await p.enqueue(topic, value=payload, partition=0)

    asyncio.run(run())


def _aiokafka_txn(bs: str, topic: str, n: int, per_txn: int, payload: bytes) -> None:
    from aiokafka import AIOKafkaProducer

    async def run() -> None:
        p = AIOKafkaProducer(bootstrap_servers=bs, linger_ms=5, max_batch_size=256 * 1024,
                             transactional_id=f"bench-{uuid.uuid4().hex[:8]}")
        await p.start()
        try:
            for start in range(0, n, per_txn):
                async with p.transaction():
                    for _ in range(min(per_txn, n - start)):
                        await p.send(topic, value=payload, partition=0)
        finally:
            await p.stop()

    asyncio.run(run())


def _confluent_txn(bs: str, topic: str, n: int, per_txn: int, payload: bytes) -> None:
    from confluent_kafka import Producer as CKProducer

    p = CKProducer({"bootstrap.servers": bs, "linger.ms": 5, "transactional.id": f"bench-{uuid.uuid4().hex[:8]}"})
    p.init_transactions(60)
    for start in range(0, n, per_txn):
        p.begin_transaction()
        for _ in range(min(per_txn, n - start)):
            while True:
                try:
                    p.produce(topic, value=payload, partition=0)
                    break
                except BufferError:
                    p.poll(0.01)
        p.commit_transaction(60)


TXN_CLIENTS: dict[str, Callable[..., None]] = {
    "kbroker": _ours_txn, "aiokafka": _aiokafka_txn, "confluent-kafka": _confluent_txn,
}


def transactions_section(bs: str) -> None:
    payload = b"x" * 100
    print("\ntransactional produce, 100 B records, one partition (records/s; every transaction committed)")
    print("| records per transaction | " + " | ".join(TXN_CLIENTS) + " | kbroker / aiokafka |")
    print("|---:|" + "---:|" * (len(TXN_CLIENTS) + 1))
    for per_txn, n in ((100, 20_000), (1000, 50_000), (10_000, 100_000)):
        rates = {}
        for name, run in TXN_CLIENTS.items():
            topic = f"bench-txn-{name}-{per_txn}"
            _create_topics(bs, {topic: 1})
            t0 = time.perf_counter()
            run(bs, topic, n, per_txn, payload)
            rates[name] = n / (time.perf_counter() - t0)
        print(f"| {per_txn:,} | " + " | ".join(f"{rates[c]:,.0f}" for c in TXN_CLIENTS)
              + f" | {rates['kbroker'] / rates['aiokafka']:.2f} |", flush=True)


# -- Spark: exactly-once vs at-least-once writes ----------------------------------------------------


def spark_section(bs: str, rows: int, repeats: int) -> None:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    import spark_jobs

    spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false").config("spark.sql.shuffle.partitions", "2")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    spark_jobs.register(spark)
    df = spark.range(0, rows, 1, 2).selectExpr("cast(id as string) key", "repeat('x', 100) value").cache()
    df.count()
    best: dict[str, float] = {}
    for i in range(repeats + 1):  # the first round warms Spark and the workers up
        for guarantee in ("at-least-once", "exactly-once"):
            topic = f"bench-spark-{guarantee}-{i}"
            _create_topics(bs, {topic: 2})
            t0 = time.perf_counter()
            df.write.format("kbroker").mode("append").option("kafka.bootstrap.servers", bs).option("topic", topic) \
                .option("deliveryGuarantee", guarantee).save()
            rate = rows / (time.perf_counter() - t0)
            if i:
                best[guarantee] = max(best.get(guarantee, 0.0), rate)
    spark.stop()
    ratio = best["exactly-once"] / best["at-least-once"]
    print(f"\nSpark batch write of {rows:,} rows (100 B values, 2 tasks, local[2]), best of {repeats}: "
          f"at-least-once {best['at-least-once']:,.0f} rows/s, exactly-once {best['exactly-once']:,.0f} rows/s, "
          f"ratio {ratio:.2f}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=50_000)
    ap.add_argument("--in-process", action="store_true", help="run the broker in a thread of this process")
    ap.add_argument("--warmup", type=int, default=2000, help="records each client produces and consumes first")
    ap.add_argument("--sections", default="throughput,rebalance,transactions,spark",
                    help="comma-separated: throughput, rebalance, transactions, spark")
    ap.add_argument("--members", type=int, default=10)
    ap.add_argument("--partitions", type=int, default=900)
    ap.add_argument("--spark-rows", type=int, default=500_000)
    args = ap.parse_args()
    sections = set(args.sections.split(","))
    results: dict[tuple[str, int, str], float] = {}
    from protocol.records import COMPILED

    print(f"kbroker record codec: {'compiled' if COMPILED else 'pure Python'}", flush=True)
    with contextlib.ExitStack() as stack:
        d = stack.enter_context(tempfile.TemporaryDirectory())
        if args.in_process:
            bs = stack.enter_context(BrokerThread(BrokerConfig(host="127.0.0.1", port=0, data_dir=d))).bootstrap_servers
        else:
            broker = stack.enter_context(BrokerProcess(os.path.join(d, "data"), extra_args=["--log-level", "WARNING"]))
            bs = broker.bootstrap_servers
        if "rebalance" in sections:
            rebalance_section(bs, args.members, args.partitions)
        if "transactions" in sections:
            transactions_section(bs)
        if "spark" in sections:
            spark_section(bs, args.spark_rows, 2)
        if "throughput" not in sections:
            return
        if args.warmup > 0:
            for name, (produce, consume) in CLIENTS.items():
                produce(bs, f"warmup-{name}", args.warmup, b"w" * 100)
                consume(bs, f"warmup-{name}", args.warmup)
        for size in (100, 1024):
            payload = b"x" * size
            n = args.records if size == 100 else max(args.records // 4, 1000)
            for name, (produce, consume) in CLIENTS.items():
                topic = f"bench-{name}-{size}"
                t0 = time.perf_counter()
                produce(bs, topic, n, payload)
                t1 = time.perf_counter()
                consume(bs, topic, n)
                t2 = time.perf_counter()
                results[(name, size, "produce")] = n / (t1 - t0)
                results[(name, size, "consume")] = n / (t2 - t1)
                print(f"{name:16s} {size:5d} B  produce {n / (t1 - t0):10.0f} rec/s {n * size / (t1 - t0) / 1e6:7.1f} MB/s"
                      f"   consume {n / (t2 - t1):10.0f} rec/s {n * size / (t2 - t1) / 1e6:7.1f} MB/s", flush=True)
        keys = [str(uuid.UUID(int=random.Random(7).getrandbits(128) + i)).encode() for i in range(1000)]
        _create_topics(bs, {f"bench-keyed-{name}": 10 for name in CLIENTS})
        for name, (produce, _) in CLIENTS.items():
            n = args.records
            t0 = time.perf_counter()
            produce(bs, f"bench-keyed-{name}", n, b"x" * 100, keys)
            t1 = time.perf_counter()
            results[(name, 100, "keyed")] = n / (t1 - t0)
            print(f"{name:16s}   100 B  keyed produce (10 partitions) {n / (t1 - t0):10.0f} rec/s", flush=True)
    print("\nratio kbroker / other (>1 means kbroker is faster)")
    for size in (100, 1024):
        for op in ("produce", "consume"):
            ours = results[("kbroker", size, op)]
            cells = "  ".join(f"{name} {ours / results[(name, size, op)]:5.2f}" for name in CLIENTS if name != "kbroker")
            print(f"{size:5d} B {op:8s} {cells}")
    ours = results[("kbroker", 100, "keyed")]
    cells = "  ".join(f"{name} {ours / results[(name, 100, 'keyed')]:5.2f}" for name in CLIENTS if name != "kbroker")
    print(f"  100 B keyed    {cells}")


if __name__ == "__main__":
    main()
