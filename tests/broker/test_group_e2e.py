"""End to end: kafka-python consumers in one group against the embedded broker (edge + pure coordinator)."""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

import pytest

pytestmark = pytest.mark.slow


def test_kafka_python_group_rebalances_commits_and_deletes(caplog: pytest.LogCaptureFixture) -> None:
    kafka = pytest.importorskip("kafka")
    from kafka.admin import NewTopic

    from broker.testing.embedded import BrokerThread

    caplog.set_level(logging.CRITICAL, logger="kafka")  # quiet, and restored afterwards
    with BrokerThread() as bt:
        bs = bt.broker.bootstrap_servers
        admin = kafka.KafkaAdminClient(bootstrap_servers=bs)
        admin.create_topics([NewTopic("t", 4, 1)])
        producer = kafka.KafkaProducer(bootstrap_servers=bs)
        for i in range(40):
            producer.send("t", str(i).encode(), partition=i % 4)
        producer.flush()
        producer.close()

        consumed: dict[int, int] = {}
        assignment: dict[int, list[int]] = {}
        stop = threading.Event()
        errors: list[BaseException] = []

        def run(i: int) -> None:
            try:
                c = kafka.KafkaConsumer("t", bootstrap_servers=bs, group_id="g1", auto_offset_reset="earliest",
                                        enable_auto_commit=False, session_timeout_ms=10_000,
                                        heartbeat_interval_ms=500)
                _wait_for_metadata_snapshot(c, "t")
                consumed[i] = 0
                while not stop.is_set():
                    records = c.poll(timeout_ms=100)
                    consumed[i] += sum(len(v) for v in records.values())
                    assignment[i] = sorted(tp.partition for tp in c.assignment())
                    if records:
                        c.commit()
                c.close()
            except BaseException as exc:  # surfaced by the main thread
                errors.append(exc)

        threads = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(3)]
        for t in threads:
            t.start()
            time.sleep(0.3)
        seen: dict[str, Any] = {}

        def settled() -> bool:
            """The group is stable with all three members, together they hold every partition, and
            every record's offset is committed (a rebalance may still be running before that)."""
            seen["assignment"] = sorted(p for ps in assignment.values() for p in ps)
            described = admin.describe_groups(["g1"])["g1"]
            seen["state"], seen["members"] = described["group_state"], len(described["members"])
            offsets = admin.list_group_offsets("g1")["g1"]
            seen["offsets"] = {tp.partition: om.offset for tp, om in offsets.items()}
            return (len(assignment) == 3 and seen["assignment"] == [0, 1, 2, 3] and seen["state"] == "Stable"
                    and seen["members"] == 3 and seen["offsets"] == {0: 10, 1: 10, 2: 10, 3: 10})

        try:
            deadline = time.monotonic() + 60
            while not settled() and time.monotonic() < deadline and not errors:
                time.sleep(0.2)
            assert seen["assignment"] == [0, 1, 2, 3], seen
            assert (seen["state"], seen["members"]) == ("Stable", 3), seen
            assert seen["offsets"] == {0: 10, 1: 10, 2: 10, 3: 10}, seen
        finally:
            stop.set()
            for t in threads:
                t.join(30)
        assert not errors, errors
        deadline = time.monotonic() + 30  # the members' LeaveGroups may still be landing
        while admin.describe_groups(["g1"])["g1"]["group_state"] != "Empty" and time.monotonic() < deadline:
            time.sleep(0.1)
        assert admin.describe_groups(["g1"])["g1"]["group_state"] == "Empty"
        assert admin.delete_groups(["g1"]) == {"g1": "OK"}
        assert admin.list_groups() == []
        admin.close()


def _wait_for_metadata_snapshot(consumer: Any, topic: str, timeout: float = 30.0) -> None:
    """Avoid a kafka-python 3.0.12 bug: a leader whose first assignment ran before its metadata
    snapshot knew the topic can lose its rejoin when poll() times out mid-join, and then never
    heartbeats again.  Polling only once the snapshot holds the topic keeps off that path."""
    deadline = time.monotonic() + timeout
    while not consumer._coordinator._metadata_snapshot.get(topic) and time.monotonic() < deadline:
        consumer._client.cluster.request_update()
        time.sleep(0.05)
