"""Chaos soak of a three-broker cluster: outside clients keep working while brokers are killed with
SIGKILL and restarted, then every acknowledged record is checked.

    .venv/bin/python benchmarks/cluster_soak.py --mode idempotent --seconds 240
    .venv/bin/python benchmarks/cluster_soak.py --mode transactions --seconds 180

Starts etcd and three ``python -m broker --cluster`` processes (:class:`broker.testing.harness.KBrokerCluster`),
a topic with replication factor 3 and ``min.insync.replicas=2``, and confluent-kafka clients:

* ``idempotent``: an idempotent ``acks=all`` producer; two consumers of one classic group with
  auto-commit.  Checked: every acknowledged record is at its acknowledged offset, no duplicates,
  the group's committed offsets reach the end.
* ``transactions``: a transactional producer (300 records per transaction, one in five aborted);
  three ``read_committed`` consumers of one KIP-848 group (``group.protocol=consumer``).
  Checked: every record of a committed transaction is read exactly once, none of an aborted one.

Every 8-15 s a random broker gets SIGKILL and is restarted 3-10 s later.  Prints the counts and
``RESULT OK`` or ``RESULT BAD``; exits 1 on BAD.
"""

from __future__ import annotations

import argparse
import collections
import random
import sys
import tempfile
import threading
import time
from typing import Any

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from broker.testing.harness import KBrokerCluster

TOPIC = "soak"


class Soak:
    def __init__(self, mode: str, partitions: int) -> None:
        self.mode = mode
        self.partitions = partitions
        self.stop = threading.Event()
        self.drain_until = float("inf")
        self.stats: collections.Counter[str] = collections.Counter()
        self.acked: dict[int, list[tuple[int, bytes]]] = collections.defaultdict(list)
        self.committed: set[bytes] = set()
        self.aborted: set[bytes] = set()
        self.consumed: set[bytes] = set()
        self.bootstrap = ""

    # -- load ------------------------------------------------------------------------
    def produce_idempotent(self) -> None:
        p = Producer({"bootstrap.servers": self.bootstrap, "enable.idempotence": True, "acks": "all",
                      "linger.ms": 5, "message.timeout.ms": 120_000})

        def delivered(err: Any, msg: Any) -> None:
            if err:
                self.stats[f"delivery error {err.name()}"] += 1
            else:
                self.acked[msg.partition()].append((msg.offset(), msg.value()))

        n = 0
        while not self.stop.is_set():
            try:
                p.produce(TOPIC, f"{n:09d}".encode(), key=str(n % 97).encode(), on_delivery=delivered)
                n += 1
            except BufferError:
                p.poll(0.05)
                continue
            if n % 200 == 0:
                p.poll(0.01)
                time.sleep(0.02)
        self.stats["left unflushed"] = p.flush(180)
        self.stats["produced"] = n

    def produce_transactions(self) -> None:
        n = 0
        p: Producer | None = None
        while not self.stop.is_set():
            if p is None:
                p = Producer({"bootstrap.servers": self.bootstrap, "transactional.id": "soak-tx",
                              "transaction.timeout.ms": 30_000})
                p.init_transactions(60)
            values: list[bytes] = []
            try:
                p.begin_transaction()
                for _ in range(300):
                    value = f"{n:09d}".encode()
                    n += 1
                    values.append(value)
                    while True:
                        try:
                            p.produce(TOPIC, value, key=value[-3:])
                            break
                        except BufferError:
                            p.poll(0.05)
                if random.random() < 0.2:
                    p.abort_transaction(60)
                    self.aborted.update(values)
                    self.stats["aborted"] += 1
                else:
                    p.commit_transaction(60)
                    self.committed.update(values)
                    self.stats["committed"] += 1
            except KafkaException as exc:
                err = exc.args[0]
                self.stats[f"{err.name()} ({'abortable' if err.txn_requires_abort() else 'fatal'})"] += 1
                self.aborted.update(values)  # outcome unknown unless aborted below: not counted as committed
                if err.txn_requires_abort():
                    try:
                        p.abort_transaction(60)
                        continue
                    except KafkaException:
                        pass
                p = None  # a new producer's InitProducerId aborts whatever was left open

    def consume(self) -> None:
        conf = {"bootstrap.servers": self.bootstrap, "group.id": f"soak-{self.mode}",
                "auto.offset.reset": "earliest"}
        if self.mode == "transactions":
            conf.update({"group.protocol": "consumer", "isolation.level": "read_committed"})
        else:
            conf.update({"enable.auto.commit": True, "auto.commit.interval.ms": 500, "session.timeout.ms": 10_000})
        c = Consumer(conf)
        c.subscribe([TOPIC])
        while not self.stop.is_set() or time.time() < self.drain_until:
            m = c.poll(0.5)
            if m is not None and not m.error():
                self.consumed.add(m.value())
        c.close()

    # -- checks ----------------------------------------------------------------------
    def read_back(self) -> dict[int, dict[int, bytes]]:
        c = Consumer({"bootstrap.servers": self.bootstrap, "group.id": "soak-verify", "enable.auto.commit": False,
                      "auto.offset.reset": "earliest", "isolation.level": "read_committed",
                      "enable.partition.eof": True})
        c.assign([TopicPartition(TOPIC, p, 0) for p in range(self.partitions)])
        got: dict[int, dict[int, bytes]] = collections.defaultdict(dict)
        eof: set[int] = set()
        while len(eof) < self.partitions:
            batch = c.consume(1000, 10)
            if not batch:
                break
            for m in batch:
                if m.error():
                    if m.error().code() == -191:  # _PARTITION_EOF
                        eof.add(m.partition())
                    continue
                got[m.partition()][m.offset()] = m.value()
        c.close()
        return got

    def check(self) -> int:
        got = self.read_back()
        values = [v for part in got.values() for v in part.values()]
        dups = len(values) - len(set(values))
        bad = dups
        if self.mode == "idempotent":
            missing = sum(1 for p, recs in self.acked.items() for o, v in recs if got[p].get(o) != v)
            bad += missing
            c = Consumer({"bootstrap.servers": self.bootstrap, "group.id": "soak-idempotent"})
            ends = {p: max(got[p], default=-1) + 1 for p in range(self.partitions)}
            behind = [(t.partition, t.offset) for t in c.committed(
                [TopicPartition(TOPIC, p) for p in range(self.partitions)], timeout=10) if t.offset < ends[t.partition]]
            c.close()
            bad += len(behind)
            print(f"acknowledged {sum(map(len, self.acked.values()))}, read {len(values)}, duplicates {dups}, "
                  f"acknowledged but missing {missing}, group consumed {len(self.consumed)}, "
                  f"partitions whose committed offset is short of the end {behind}")
        else:
            seen = set(values)
            missing = len(self.committed - seen)
            visible_aborts = len(seen & (self.aborted - self.committed))
            bad += missing + visible_aborts
            print(f"committed records {len(self.committed)}, aborted {len(self.aborted)}, read {len(values)}, "
                  f"duplicates {dups}, committed but missing {missing}, aborted but visible {visible_aborts}, "
                  f"group consumed {len(self.consumed & self.committed)} of the committed")
        return bad


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mode", choices=["idempotent", "transactions"], default="idempotent")
    ap.add_argument("--seconds", type=float, default=240)
    ap.add_argument("--partitions", type=int, default=6)
    ap.add_argument("--seed", type=int, default=None)
    args = ap.parse_args()
    random.seed(args.seed)
    soak = Soak(args.mode, args.partitions)
    with KBrokerCluster(3, tempfile.mkdtemp(prefix="kbroker-soak-"),
                        settings={"min.insync.replicas": 2, "default.replication.factor": 3}) as cluster:
        soak.bootstrap = cluster.bootstrap_servers
        admin = AdminClient({"bootstrap.servers": soak.bootstrap})
        for f in admin.create_topics([NewTopic(TOPIC, args.partitions, 3)]).values():
            f.result()
        producer = soak.produce_idempotent if args.mode == "idempotent" else soak.produce_transactions
        threads = [threading.Thread(target=producer)]
        threads += [threading.Thread(target=soak.consume) for _ in range(2 if args.mode == "idempotent" else 3)]
        for t in threads:
            t.start()
        start, kills = time.time(), 0
        while time.time() - start < args.seconds:
            time.sleep(random.uniform(8, 15))
            node = random.choice(list(cluster.brokers))
            print(f"{time.time() - start:6.1f}s kill -9 broker {node}", flush=True)
            cluster.kill(node)
            kills += 1
            time.sleep(random.uniform(3, 10))
            cluster.restart(node)
            print(f"{time.time() - start:6.1f}s broker {node} restarted", flush=True)
        soak.drain_until = time.time() + 40
        soak.stop.set()
        for t in threads:
            t.join(300)
        print(f"{kills} brokers killed; {dict(soak.stats)}")
        bad = soak.check()
    print("RESULT", "OK" if not bad else f"BAD ({bad})")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
