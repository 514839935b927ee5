"""Helpers of the share-group tests with real processes (KIP-932; the end-to-end and cluster suites):
broker settings that make share groups quick to test, admin helpers over confluent-kafka's AdminClient, a
confluent-kafka ``ShareConsumer`` in a thread (implicit or explicit acknowledgement, an acknowledgement
decided per record), and raw share requests (heartbeat, fetch, acknowledge) over any client with a
``request(api_key, version, body)`` (the end-to-end suite's ``RawClient``) for what a client hides.
"""

from __future__ import annotations

import contextlib
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from broker.testing.harness import BrokerProcess
from protocol.api import ApiKey
from protocol.error_codes import ErrorCode as E
from protocol.records import decode_record_set

#: share groups on a short leash: 500 ms heartbeats, 6 s sessions, locks from 1 s
SHARE_SETTINGS = {
    "group.share.heartbeat.interval.ms": "500", "group.share.min.heartbeat.interval.ms": "100",
    "group.share.session.timeout.ms": "6000", "group.share.min.session.timeout.ms": "6000",
    "group.share.min.record.lock.duration.ms": "1000",
}


@contextlib.contextmanager
def share_broker(data_dir: Path) -> Iterator[str]:
    """``python -m broker`` (from this checkout) with :data:`SHARE_SETTINGS`: its bootstrap servers; it must
    stay up and stop cleanly."""
    bp = BrokerProcess(data_dir, extra_args=share_args(), cwd=Path(__file__).resolve().parents[1])
    bp.start()
    try:
        yield bp.bootstrap_servers
        assert bp.alive(), f"broker died:\n{bp.log_tail()}"
    finally:
        if bp.alive():
            assert bp.stop() == 0, bp.log_tail()


def share_args(**extra: str) -> list[str]:
    args: list[str] = []
    for key, value in {**SHARE_SETTINGS, **extra}.items():
        args += ["--set", f"{key}={value}"]
    return args


def wait_until(predicate: Callable[[], Any], timeout: float = 60.0, interval: float = 0.1, what: str = "") -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what or predicate}")
        time.sleep(interval)


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


# ------------------------------------------------------------------ admin

def admin(bootstrap: str) -> Any:
    from confluent_kafka.admin import AdminClient

    return AdminClient({"bootstrap.servers": bootstrap, "socket.timeout.ms": 5000})


def create_topic(bootstrap: str, name: str, partitions: int = 1, replication: int = 1,
                 configs: dict[str, str] | None = None) -> None:
    from confluent_kafka.admin import NewTopic

    client = admin(bootstrap)  # kept until the futures are done
    for f in client.create_topics([NewTopic(name, partitions, replication, config=configs or {})]).values():
        f.result(30)


def set_group_configs(bootstrap: str, group: str, **configs: str) -> None:
    """IncrementalAlterConfigs SET on the group resource (``share_auto_offset_reset`` → ``share.auto.offset.reset``)."""
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource

    entries = [ConfigEntry(k.replace("_", "."), v, incremental_operation=AlterConfigOpType.SET)
               for k, v in configs.items()]
    client = admin(bootstrap)
    for f in client.incremental_alter_configs([ConfigResource("GROUP", group, incremental_configs=entries)]).values():
        f.result(30)


def produce(bootstrap: str, topic: str, values: list[str], partition: int = 0, batch: int = 10,
            **config: Any) -> None:
    """Produce ``values`` to one partition, ``batch`` records per produce request (log batches of that size)."""
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 50, **config})
    for i in range(0, len(values), batch):
        for v in values[i:i + batch]:
            p.produce(topic, value=v.encode(), partition=partition)
        p.flush(30)


# ------------------------------------------------------------------ a confluent-kafka ShareConsumer

class ShareReader(threading.Thread):
    """A ``confluent_kafka.ShareConsumer`` polling in a thread.  ``decide(value, delivery_count)`` gives each
    record's acknowledgement in explicit mode (an ``AcknowledgeType``, or None to hold it unacknowledged: the
    acknowledged ones are committed, then the reader stops polling); ``hold`` stops polling, keeping the
    connection and whatever it holds; :meth:`stop` closes the consumer (releasing what it holds)."""

    def __init__(self, bootstrap: str, group: str, topics: list[str], *, explicit: bool = False,
                 decide: Callable[[str, int], Any] | None = None, **config: Any) -> None:
        super().__init__(daemon=True)
        self.bootstrap, self.group, self.topics = bootstrap, group, topics
        self.explicit = explicit
        self.decide = decide
        self.config = config
        self.records: list[tuple[int, str, int]] = []  # (offset, value, delivery count)
        self.errors: list[Any] = []
        self.commit_results: list[dict[Any, Any]] = []
        self.hold = threading.Event()
        self._stop_event = threading.Event()
        self.closed = threading.Event()
        self.lock = threading.Lock()

    def values(self) -> list[str]:
        with self.lock:
            return [v for _, v, _ in self.records]

    def run(self) -> None:
        from confluent_kafka import ShareConsumer

        conf = {"bootstrap.servers": self.bootstrap, "group.id": self.group,
                "share.acknowledgement.mode": "explicit" if self.explicit else "implicit", **self.config}
        consumer = ShareConsumer(conf)
        try:
            consumer.subscribe(self.topics)
            while not self._stop_event.is_set():
                if self.hold.is_set():
                    time.sleep(0.05)
                    continue
                held = False
                for m in consumer.poll(0.2):
                    if m.error():
                        self.errors.append(m.error())
                        continue
                    value = m.value().decode()
                    with self.lock:
                        self.records.append((m.offset(), value, m.delivery_count()))
                    if self.explicit:
                        ack = self.decide(value, m.delivery_count()) if self.decide else None
                        if ack is None:
                            held = True
                        else:
                            consumer.acknowledge(m, ack)
                if self.explicit:
                    results = consumer.commit_sync(30)
                    if results:
                        self.commit_results.append(results)
                if held:  # a record left unacknowledged: no more polls (explicit mode needs them all acknowledged)
                    self.hold.set()
        except Exception as exc:  # reported to the test
            self.errors.append(exc)
        finally:
            consumer.close()
            self.closed.set()

    def stop(self, timeout: float = 30.0) -> None:
        self._stop_event.set()
        self.join(timeout)


# ------------------------------------------------------------------ raw share requests

class RawMember:
    """A share group member speaking the protocol itself over a :class:`RawClient` (for what clients hide)."""

    def __init__(self, client: Any, group: str, topic_id: uuid.UUID, member_id: str | None = None) -> None:
        self.client, self.group, self.topic_id = client, group, topic_id
        self.member_id = member_id or uuid.uuid4().hex[:22]
        self.epoch = 0
        self.session_epoch = 0

    def heartbeat(self, topics: list[str] | None, epoch: int | None = None) -> Any:
        resp = self.client.request(ApiKey.SHARE_GROUP_HEARTBEAT, 1, {
            "group_id": self.group, "member_id": self.member_id,
            "member_epoch": self.epoch if epoch is None else epoch, "rack_id": None,
            "subscribed_topic_names": topics})
        if resp.error_code == E.NONE:
            self.epoch = resp.member_epoch
        return resp

    def join(self, topic: str, timeout: float = 30.0) -> None:
        """Heartbeat until partition 0 of ``topic`` is assigned."""
        first = [self.heartbeat([topic])]

        def assigned() -> bool:
            resp = first.pop() if first else self.heartbeat(None)
            return resp.assignment is not None and any(tp.partitions for tp in resp.assignment.topic_partitions)

        wait_until(assigned, timeout, 0.2, "an assignment")

    def fetch(self, *, acks: list[tuple[int, int, list[int]]] | None = None, max_records: int = 500,
              max_wait_ms: int = 5000, version: int = 2, epoch: int | None = None, mode: int = 0,
              renew: bool = False, partition: int = 0) -> Any:
        """A ShareFetch; it waits up to ``max_wait_ms`` for records (5 s: a share-partition's first fetch
        initialises its state on the share coordinator first, which a busy machine may take a while to do)."""
        epoch = self.session_epoch if epoch is None else epoch
        body = {"group_id": self.group, "member_id": self.member_id, "share_session_epoch": epoch,
                "max_wait_ms": max_wait_ms, "min_bytes": 0 if renew else 1, "max_bytes": 0 if renew else 1 << 20,
                "max_records": max_records, "batch_size": max_records, "share_acquire_mode": mode,
                "is_renew_ack": renew, "forgotten_topics_data": [],
                "topics": [{"topic_id": self.topic_id, "partitions": [{
                    "partition_index": partition, "acknowledgement_batches": [
                        {"first_offset": f, "last_offset": lst, "acknowledge_types": types}
                        for f, lst, types in acks or []]}]}]}
        resp = self.client.request(ApiKey.SHARE_FETCH, version, body)
        if resp.error_code == E.NONE and epoch >= 0:
            self.session_epoch = epoch + 1
        return resp

    def acknowledge(self, acks: list[tuple[int, int, list[int]]], *, version: int = 2, renew: bool = False,
                    epoch: int | None = None) -> Any:
        epoch = self.session_epoch if epoch is None else epoch
        resp = self.client.request(ApiKey.SHARE_ACKNOWLEDGE, version, {
            "group_id": self.group, "member_id": self.member_id, "share_session_epoch": epoch,
            "is_renew_ack": renew, "topics": [{"topic_id": self.topic_id, "partitions": [{
                "partition_index": 0, "acknowledgement_batches": [
                    {"first_offset": f, "last_offset": lst, "acknowledge_types": types}
                    for f, lst, types in acks]}]}]})
        if resp.error_code == E.NONE and epoch > 0:
            self.session_epoch = epoch + 1
        return resp


def partition_entry(resp: Any, index: int = 0) -> Any:
    for t in resp.responses:
        for p in t.partitions:
            if p.partition_index == index:
                return p
    return None


def acquired(resp: Any) -> list[tuple[int, int, int]]:
    p = partition_entry(resp)
    return [] if p is None else [(a.first_offset, a.last_offset, a.delivery_count) for a in p.acquired_records]


def fetched_values(resp: Any) -> dict[int, str]:
    """offset -> value of the records of the fetch that were acquired."""
    p = partition_entry(resp)
    if p is None or not p.records:
        return {}
    ranges = [(a.first_offset, a.last_offset) for a in p.acquired_records]
    return {r.offset: (r.value or b"").decode() for r in decode_record_set(bytes(p.records))
            if any(f <= r.offset <= lst for f, lst in ranges)}


def topic_id(client: Any, topic: str) -> uuid.UUID:
    resp = client.request(ApiKey.METADATA, 12, {"topics": [{"name": topic, "topic_id": None}],
                                                "allow_auto_topic_creation": False,
                                                "include_topic_authorized_operations": False})
    return resp.topics[0].topic_id
