"""A consumer process for the SIGKILL / restart tests; reports on stdout as JSON lines.

    {"event": "assign"|"revoke", "partitions": [[topic, p], ...]}
    {"assigned": [[topic, p], ...]}          whenever the client's assignment() changes
    {"records": n}                           after each non-empty batch (running total)

SIGTERM closes the consumer (a dynamic member sends LeaveGroup) and exits 0.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
import time
from typing import Any


def emit(obj: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def parts(tps: Any) -> list[list[Any]]:
    return sorted([tp.topic, tp.partition] for tp in tps)


def run_kafka_python(args: argparse.Namespace, stop: threading.Event) -> None:
    from kafka import ConsumerRebalanceListener, KafkaConsumer

    class Listener(ConsumerRebalanceListener):
        def on_partitions_revoked(self, revoked: Any) -> None:
            emit({"event": "revoke", "partitions": parts(revoked)})

        def on_partitions_assigned(self, assigned: Any) -> None:
            emit({"event": "assign", "partitions": parts(assigned)})

    config: dict[str, Any] = dict(bootstrap_servers=args.bootstrap, group_id=args.group, client_id=args.name,
                                  auto_offset_reset="earliest", enable_auto_commit=False,
                                  session_timeout_ms=args.session_ms, heartbeat_interval_ms=args.heartbeat_ms,
                                  max_poll_interval_ms=60_000, fetch_max_wait_ms=200, retry_backoff_ms=100)
    if args.instance_id:
        config["group_instance_id"] = args.instance_id
    consumer = KafkaConsumer(**config)
    consumer.subscribe([args.topic], listener=Listener())
    # see groups_e2e.kafka_python_wait_for_snapshot (kafka-python 3.0.12 client bug)
    while not consumer._coordinator._metadata_snapshot.get(args.topic):
        consumer._client.cluster.request_update()
        time.sleep(0.05)
    last: list[list[Any]] | None = None
    total = 0
    while not stop.is_set():
        polled = consumer.poll(timeout_ms=200)
        n = sum(len(v) for v in polled.values())
        if n:
            total += n
            try:
                consumer.commit()
            except Exception:
                pass
            emit({"records": total})
        now = parts(consumer.assignment())
        if now != last:
            emit({"assigned": now})
            last = now
    consumer.close()


def run_confluent(args: argparse.Namespace, stop: threading.Event) -> None:
    from confluent_kafka import Consumer, KafkaException

    config: dict[str, Any] = {"bootstrap.servers": args.bootstrap, "group.id": args.group, "client.id": args.name,
                              "auto.offset.reset": "earliest", "enable.auto.commit": False,
                              "session.timeout.ms": args.session_ms, "heartbeat.interval.ms": args.heartbeat_ms,
                              "fetch.wait.max.ms": 200}
    if args.protocol == "consumer":  # KIP-848: the broker owns session and heartbeat timing
        del config["session.timeout.ms"], config["heartbeat.interval.ms"]
        config["group.protocol"] = "consumer"
    if args.instance_id:
        config["group.instance.id"] = args.instance_id
    consumer = Consumer(config)
    consumer.subscribe([args.topic],
                       on_assign=lambda c, ps: emit({"event": "assign", "partitions": parts(ps)}),
                       on_revoke=lambda c, ps: emit({"event": "revoke", "partitions": parts(ps)}))
    last: list[list[Any]] | None = None
    total = 0
    while not stop.is_set():
        msgs = [m for m in consumer.consume(num_messages=500, timeout=0.2) if not m.error()]
        if msgs:
            total += len(msgs)
            try:
                consumer.commit(asynchronous=False)
            except KafkaException:
                pass
            emit({"records": total})
        now = parts(consumer.assignment())
        if now != last:
            emit({"assigned": now})
            last = now
    consumer.close()


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--kind", choices=["kafka-python", "confluent"], required=True)
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--group", required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("--session-ms", type=int, default=6000)
    ap.add_argument("--heartbeat-ms", type=int, default=1000)
    ap.add_argument("--instance-id")
    ap.add_argument("--name", default="proc")
    ap.add_argument("--protocol", choices=["classic", "consumer"], default="classic")
    args = ap.parse_args()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    {"kafka-python": run_kafka_python, "confluent": run_confluent}[args.kind](args, stop)
    emit({"closed": True})
    return 0


if __name__ == "__main__":
    sys.exit(main())
