"""Helpers for the group-coordinator end-to-end tests (fixtures live in conftest.py) with real Kafka clients.

* :class:`BrokerProcess` — ``python -m broker`` as a subprocess on a free port with its own data
  directory (and a metrics port, so tests can read the broker's error counters);
* consumer runners — one thread per consumer for kafka-python, aiokafka (own event loop) and
  confluent-kafka, all exposing the same view: current assignment, assign/revoke events, records
  seen, and a graceful :meth:`stop` (close → LeaveGroup);
* :class:`ConsumerProcess` — a consumer in its own process (``consumer_proc.py``) that reports its
  assignment as JSON lines, for SIGKILL and restart tests;
* admin helpers (topic creation, producing to explicit partitions, describe/offsets) over
  confluent-kafka's AdminClient, and :func:`wait_until`.

Timing: session timeout 6000 ms (the broker's minimum), heartbeat 1000 ms.  Tests wait with
generous deadlines; they never assert on elapsed time.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent

SESSION_MS = 6000
HEARTBEAT_MS = 1000
DEADLINE = 60.0  # generous default for wait_until


# ---------------------------------------------------------------------------------- utilities


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until(predicate: Callable[[], Any], timeout: float = DEADLINE, interval: float = 0.2,
               message: str | Callable[[], str] = "condition") -> Any:
    """Poll ``predicate`` until it returns a truthy value; fail with ``message`` after ``timeout``."""
    deadline = time.monotonic() + timeout
    last_exc: BaseException | None = None
    while True:
        try:
            value = predicate()
            if value:
                return value
        except Exception as exc:  # a transient client error while the group moves
            last_exc = exc
        if time.monotonic() > deadline:
            text = message() if callable(message) else message
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {text}"
                                 + (f" (last error: {last_exc!r})" if last_exc else ""))
        time.sleep(interval)


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


# ---------------------------------------------------------------------------------- broker process


class BrokerProcess:
    """``python -m broker`` on a free port; :meth:`kill` (SIGKILL) and :meth:`start` again on the same dir."""

    def __init__(self, data_dir: Path, *, settings: dict[str, str] | None = None) -> None:
        self.data_dir = Path(data_dir)
        self.port = free_port()
        self.metrics_port = free_port()
        self.settings = {"group.initial.rebalance.delay.ms": "0", **(settings or {})}
        self.proc: subprocess.Popen[bytes] | None = None
        self.log_path = self.data_dir.parent / f"{self.data_dir.name}-broker.log"

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self, timeout: float = 30.0) -> BrokerProcess:
        cmd = [sys.executable, "-m", "broker", "--host", "127.0.0.1", "--port", str(self.port),
               "--data-dir", str(self.data_dir), "--metrics-port", str(self.metrics_port), "--console-port", "none"]
        for key, value in self.settings.items():
            cmd += ["--set", f"{key}={value}"]
        log = open(self.log_path, "ab")  # noqa: SIM115 - owned by the child for its lifetime
        env = {k: v for k, v in os.environ.items() if not k.startswith("KBROKER_")}
        self.proc = subprocess.Popen(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, env=env)
        log.close()
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"broker exited with {self.proc.returncode}:\n{self.log_tail()}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    return self
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"broker did not listen within {timeout}s:\n{self.log_tail()}") from None
                time.sleep(0.05)

    def kill(self) -> None:
        """SIGKILL: no shutdown hooks, no flush beyond what the broker already wrote."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)
        self.proc = None

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self.proc = None

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def metrics_text(self) -> str:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=5) as resp:
            return resp.read().decode()

    def error_count(self, api: str, error: str) -> float:
        """Value of ``kbroker_errors_total{api=..., error=...}`` (0 when never returned)."""
        total = 0.0
        pattern = re.compile(r'^kbroker_errors_total\{(?P<labels>[^}]*)\} (?P<value>\S+)$')
        for line in self.metrics_text().splitlines():
            m = pattern.match(line)
            if m and f'api="{api}"' in m["labels"] and f'error="{error}"' in m["labels"]:
                total += float(m["value"])
        return total



# ---------------------------------------------------------------------------------- admin helpers


def admin(bootstrap: str) -> Any:
    from confluent_kafka.admin import AdminClient

    return AdminClient({"bootstrap.servers": bootstrap})


def create_topic(bootstrap: str, name: str, partitions: int) -> str:
    from confluent_kafka.admin import NewTopic

    client = admin(bootstrap)  # keep the handle alive until the future resolves
    client.create_topics([NewTopic(name, partitions, 1)], operation_timeout=10)[name].result(30)
    return name


def produce(bootstrap: str, topic: str, partitions: int, count: int, start: int = 0) -> list[str]:
    """``count`` records spread round-robin over explicit partitions; returns their values."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    values = []
    for i in range(start, start + count):
        value = f"{topic}-{i}"
        producer.produce(topic, value=value.encode(), partition=i % partitions)
        values.append(value)
    assert producer.flush(30) == 0, "producer did not deliver every record"
    return values


def describe_group(bootstrap: str, group: str) -> Any:
    """confluent-kafka ConsumerGroupDescription (state, members with assignments)."""
    client = admin(bootstrap)
    return client.describe_consumer_groups([group], request_timeout=10)[group].result(30)


def group_state(bootstrap: str, group: str) -> str:
    return describe_group(bootstrap, group).state.name


def committed_offsets(bootstrap: str, group: str) -> dict[tuple[str, int], int]:
    from confluent_kafka import ConsumerGroupTopicPartitions

    client = admin(bootstrap)
    result = client.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)],
                                                request_timeout=10)[group].result(30)
    return {(tp.topic, tp.partition): tp.offset for tp in result.topic_partitions if tp.offset >= 0}


def assignments_by_member(desc: Any) -> dict[str, set[tuple[str, int]]]:
    return {m.member_id: {(tp.topic, tp.partition) for tp in m.assignment.topic_partitions}
            for m in desc.members}


def exact_split(sets: list[set[tuple[str, int]]] | list[frozenset[tuple[str, int]]], topic: str,
                partitions: int, sizes: list[int] | None = None) -> bool:
    """Every partition of ``topic`` owned exactly once across ``sets`` (and optionally these sizes)."""
    owned = [tp for s in sets for tp in s]
    if sorted(owned) != sorted((topic, p) for p in range(partitions)):
        return False
    return sizes is None or sorted(len(s) for s in sets) == sorted(sizes)


# ---------------------------------------------------------------------------------- consumer threads


class ConsumerThread(threading.Thread):
    """A real client consumer in a thread; subclasses implement :meth:`_run` for one library.

    Observable state (read from the test thread): ``assigned`` (frozenset of (topic, partition) from
    the client's own ``assignment()``), ``events`` (("assign"|"revoke", frozenset)), ``records``
    ((partition, offset, value)), ``errors``.  Offsets are committed synchronously after every
    non-empty batch.
    """

    kind = "?"

    def __init__(self, bootstrap: str, group: str, topic: str, *, assignor: str | None = None,
                 instance_id: str | None = None, name: str | None = None, **extra: Any) -> None:
        super().__init__(name=name or f"{self.kind}-{group}", daemon=True)
        self.bootstrap = bootstrap
        self.group = group
        self.topic = topic
        self.assignor = assignor
        self.instance_id = instance_id
        self.extra = extra
        self.assigned: frozenset[tuple[str, int]] = frozenset()
        self.events: list[tuple[str, frozenset[tuple[str, int]]]] = []
        self.records: list[tuple[int, int, str]] = []
        self.errors: list[str] = []
        self.commit_failures = 0
        self._stop_event = threading.Event()
        self.closed = threading.Event()
        self._lock = threading.Lock()

    # -- used by subclasses
    def _on_records(self, batch: list[tuple[int, int, str]]) -> None:
        with self._lock:
            self.records.extend(batch)

    def _event(self, what: str, parts: Any) -> None:
        with self._lock:
            self.events.append((what, frozenset(parts)))

    def run(self) -> None:
        try:
            self._run()
        except BaseException as exc:  # surfaced by the tests through .errors
            self.errors.append(repr(exc))
        finally:
            self.closed.set()

    def _run(self) -> None:
        raise NotImplementedError

    # -- used by tests
    def values(self) -> set[str]:
        with self._lock:
            return {v for _, _, v in self.records}

    def stop(self, timeout: float = 30.0) -> None:
        """Graceful close (the client sends LeaveGroup unless it is a static member)."""
        self._stop_event.set()
        self.closed.wait(timeout)
        self.join(timeout)
        assert not self.is_alive(), f"{self.name} did not close"

    @property
    def stopping(self) -> bool:
        return self._stop_event.is_set()


def kafka_python_wait_for_snapshot(consumer: Any, topic: str, timeout: float = 30.0) -> None:
    """Work around a kafka-python 3.0.12 client bug before the first poll().

    If the leader's first assignment runs before the coordinator's metadata snapshot knows the
    topic, the next metadata update makes ``need_rejoin()`` true only through the snapshot
    mismatch; when poll()'s timer then expires while that JoinGroup/SyncGroup task is in flight,
    the leader's assignment resets the mismatch, ``need_rejoin()`` turns false and the finished
    task is never consumed: the member neither applies its SyncGroup assignment nor heartbeats
    (the broker correctly expels it after the session timeout, and the zombie keeps its old
    partitions).  Waiting until the snapshot holds the topic avoids that path.
    """
    deadline = time.monotonic() + timeout
    coordinator = consumer._coordinator
    while not coordinator._metadata_snapshot.get(topic) and time.monotonic() < deadline:
        consumer._client.cluster.request_update()
        time.sleep(0.05)


class KafkaPythonConsumer(ConsumerThread):
    kind = "kafka-python"

    def _run(self) -> None:
        from kafka import ConsumerRebalanceListener, KafkaConsumer
        from kafka.coordinator.assignors.range import RangePartitionAssignor
        from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor

        owner = self

        class Listener(ConsumerRebalanceListener):
            def on_partitions_revoked(self, revoked: Any) -> None:
                owner._event("revoke", {(tp.topic, tp.partition) for tp in revoked})

            def on_partitions_assigned(self, assigned: Any) -> None:
                owner._event("assign", {(tp.topic, tp.partition) for tp in assigned})

        config: dict[str, Any] = dict(
            bootstrap_servers=self.bootstrap, group_id=self.group, client_id=self.name,
            auto_offset_reset="earliest", enable_auto_commit=False,
            session_timeout_ms=SESSION_MS, heartbeat_interval_ms=HEARTBEAT_MS,
            max_poll_interval_ms=60_000, request_timeout_ms=30_000, fetch_max_wait_ms=200,
            retry_backoff_ms=100, reconnect_backoff_max_ms=1000,
        )
        if self.assignor:
            config["partition_assignment_strategy"] = [
                {"range": RangePartitionAssignor, "roundrobin": RoundRobinPartitionAssignor}[self.assignor]]
        if self.instance_id:
            config["group_instance_id"] = self.instance_id
        config.update(self.extra)
        consumer = KafkaConsumer(**config)
        consumer.subscribe([self.topic], listener=Listener())
        kafka_python_wait_for_snapshot(consumer, self.topic)
        try:
            while not self._stop_event.is_set():
                polled = consumer.poll(timeout_ms=200)
                batch = [(r.partition, r.offset, r.value.decode()) for rs in polled.values() for r in rs]
                if batch:
                    self._on_records(batch)
                    try:
                        consumer.commit()
                    except Exception:  # CommitFailedError while the group rebalances
                        self.commit_failures += 1
                self.assigned = frozenset((tp.topic, tp.partition) for tp in consumer.assignment())
        finally:
            self.assigned = frozenset()
            consumer.close()


class AioKafkaConsumer(ConsumerThread):
    kind = "aiokafka"

    def _run(self) -> None:
        asyncio.run(self._main())

    async def _main(self) -> None:
        from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener
        from aiokafka.coordinator.assignors.range import RangePartitionAssignor
        from aiokafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor

        owner = self

        class Listener(ConsumerRebalanceListener):
            def on_partitions_revoked(self, revoked: Any) -> None:
                owner._event("revoke", {(tp.topic, tp.partition) for tp in revoked})

            def on_partitions_assigned(self, assigned: Any) -> None:
                owner._event("assign", {(tp.topic, tp.partition) for tp in assigned})

        config: dict[str, Any] = dict(
            bootstrap_servers=self.bootstrap, group_id=self.group, client_id=self.name,
            auto_offset_reset="earliest", enable_auto_commit=False,
            session_timeout_ms=SESSION_MS, heartbeat_interval_ms=HEARTBEAT_MS,
            max_poll_interval_ms=60_000, request_timeout_ms=30_000, fetch_max_wait_ms=200,
            retry_backoff_ms=100,
        )
        if self.assignor:
            config["partition_assignment_strategy"] = (
                {"range": RangePartitionAssignor, "roundrobin": RoundRobinPartitionAssignor}[self.assignor],)
        if self.instance_id:
            config["group_instance_id"] = self.instance_id
        config.update(self.extra)
        consumer = AIOKafkaConsumer(**config)
        await consumer.start()
        consumer.subscribe([self.topic], listener=Listener())
        try:
            while not self._stop_event.is_set():
                polled = await consumer.getmany(timeout_ms=200)
                batch = [(r.partition, r.offset, r.value.decode()) for rs in polled.values() for r in rs]
                if batch:
                    self._on_records(batch)
                    try:
                        await consumer.commit()
                    except Exception:
                        self.commit_failures += 1
                self.assigned = frozenset((tp.topic, tp.partition) for tp in consumer.assignment())
        finally:
            self.assigned = frozenset()
            await consumer.stop()


class ConfluentConsumer(ConsumerThread):
    kind = "confluent"

    def _run(self) -> None:
        from confluent_kafka import Consumer, KafkaException

        config: dict[str, Any] = {
            "bootstrap.servers": self.bootstrap, "group.id": self.group, "client.id": self.name,
            "auto.offset.reset": "earliest", "enable.auto.commit": False,
            "session.timeout.ms": SESSION_MS, "heartbeat.interval.ms": HEARTBEAT_MS,
            "max.poll.interval.ms": 60_000, "fetch.wait.max.ms": 200,
            "topic.metadata.refresh.interval.ms": 2000,
        }
        if self.assignor:
            config["partition.assignment.strategy"] = self.assignor
        if self.instance_id:
            config["group.instance.id"] = self.instance_id
        config.update(self.extra)
        if config.get("group.protocol") == "consumer":  # KIP-848: timing and assignment are the broker's
            for key in ("session.timeout.ms", "heartbeat.interval.ms", "partition.assignment.strategy"):
                config.pop(key, None)
        consumer = Consumer(config)

        def on_assign(c: Any, parts: Any) -> None:
            self._event("assign", {(tp.topic, tp.partition) for tp in parts})

        def on_revoke(c: Any, parts: Any) -> None:
            self._event("revoke", {(tp.topic, tp.partition) for tp in parts})

        consumer.subscribe([self.topic], on_assign=on_assign, on_revoke=on_revoke)
        try:
            while not self._stop_event.is_set():
                msgs = consumer.consume(num_messages=500, timeout=0.2)
                batch = []
                for m in msgs:
                    if m.error():
                        if not m.error().retriable() and m.error().code() != -191:  # _PARTITION_EOF
                            self.errors.append(str(m.error()))
                        continue
                    batch.append((m.partition(), m.offset(), m.value().decode()))
                if batch:
                    self._on_records(batch)
                    try:
                        consumer.commit(asynchronous=False)
                    except KafkaException:
                        self.commit_failures += 1
                self.assigned = frozenset((tp.topic, tp.partition) for tp in consumer.assignment())
        finally:
            self.assigned = frozenset()
            consumer.close()


CONSUMERS: dict[str, type[ConsumerThread]] = {
    "kafka-python": KafkaPythonConsumer,
    "aiokafka": AioKafkaConsumer,
    "confluent": ConfluentConsumer,
}


def start_consumer(kind: str, bootstrap: str, group: str, topic: str, **kw: Any) -> ConsumerThread:
    c = CONSUMERS[kind](bootstrap, group, topic, **kw)
    c.start()
    return c



def no_errors(consumers: list[ConsumerThread]) -> None:
    errors = {c.name: c.errors for c in consumers if c.errors}
    assert not errors, f"consumer errors: {errors}"


def all_values(consumers: list[ConsumerThread]) -> set[str]:
    out: set[str] = set()
    for c in consumers:
        out |= c.values()
    return out


# ---------------------------------------------------------------------------------- consumer processes


class ConsumerProcess:
    """A consumer in its own Python process (``consumer_proc.py``), reporting JSON lines on stdout."""

    def __init__(self, kind: str, bootstrap: str, group: str, topic: str, *, instance_id: str | None = None,
                 session_ms: int = SESSION_MS, name: str = "proc", protocol: str = "classic") -> None:
        self.args = [sys.executable, str(HERE / "consumer_proc.py"), "--kind", kind, "--bootstrap", bootstrap,
                     "--group", group, "--topic", topic, "--session-ms", str(session_ms),
                     "--heartbeat-ms", str(HEARTBEAT_MS), "--name", name, "--protocol", protocol]
        if instance_id:
            self.args += ["--instance-id", instance_id]
        self.name = name
        self.proc: subprocess.Popen[str] | None = None
        self.assigned: frozenset[tuple[str, int]] = frozenset()
        self.events: list[dict[str, Any]] = []
        self.stderr: list[str] = []
        self._reader: threading.Thread | None = None

    def start(self) -> ConsumerProcess:
        self.assigned = frozenset()
        self.proc = subprocess.Popen(self.args, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, bufsize=1)
        proc = self.proc

        def read_stdout() -> None:
            assert proc.stdout is not None
            for line in proc.stdout:
                try:
                    event = json.loads(line)
                except ValueError:
                    continue
                self.events.append(event)
                if "assigned" in event:
                    self.assigned = frozenset((t, p) for t, p in event["assigned"])

        def read_stderr() -> None:
            assert proc.stderr is not None
            for line in proc.stderr:
                self.stderr.append(line.rstrip())
                del self.stderr[:-200]

        self._reader = threading.Thread(target=read_stdout, daemon=True)
        self._reader.start()
        threading.Thread(target=read_stderr, daemon=True).start()
        return self

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)
        if self._reader is not None:
            self._reader.join(5)

    def terminate(self) -> None:
        """SIGTERM: the child closes its consumer (LeaveGroup unless static) and exits."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.kill()
        if self._reader is not None:
            self._reader.join(5)

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def event_kinds(self) -> list[str]:
        return [e["event"] for e in self.events if "event" in e]
