"""Process-level failures: a consumer killed with SIGKILL, a static member restarted, a broker killed with -9."""

from __future__ import annotations

import asyncio
import re
import time
from pathlib import Path

import pytest
from groups_e2e import (
    BrokerProcess,
    ConsumerProcess,
    ConsumerThread,
    committed_offsets,
    create_topic,
    describe_group,
    exact_split,
    no_errors,
    produce,
    start_consumer,
    unique,
    wait_until,
)
from raw_members import Connection

from protocol.api import ApiKey

pytestmark = pytest.mark.slow

PARTITIONS = 6


def _generation(broker: BrokerProcess, group: str) -> float:
    """The group's generation id from the broker's ``kbroker_group_generation`` gauge."""
    m = re.search(rf'^kbroker_group_generation\{{group="{re.escape(group)}"\}} (\S+)$', broker.metrics_text(), re.M)
    assert m, f"no kbroker_group_generation for {group}"
    return float(m.group(1))


def test_sigkilled_consumer_is_expelled_and_its_partitions_move(broker: BrokerProcess,
                                                                 processes: list[ConsumerProcess]) -> None:
    topic = create_topic(broker.bootstrap, unique("kill"), PARTITIONS)
    group = unique("g-kill")
    for i, kind in enumerate(["kafka-python", "confluent", "kafka-python"]):
        processes.append(ConsumerProcess(kind, broker.bootstrap, group, topic, name=f"kill-{i}").start())
    wait_until(lambda: exact_split([p.assigned for p in processes], topic, PARTITIONS, [2, 2, 2]), timeout=90,
               message=lambda: f"2/2/2 across processes, have {[sorted(p.assigned) for p in processes]}")
    desc = wait_until(lambda: (d := describe_group(broker.bootstrap, group)).state.name == "STABLE"
                      and len(d.members) == 3 and d, message="Stable group of 3")
    victim = processes[1]
    victim_id = next(m.member_id for m in desc.members if m.client_id == victim.name)
    orphaned = victim.assigned

    killed_at = time.monotonic()
    victim.kill()
    survivors = [processes[0], processes[2]]
    wait_until(lambda: exact_split([p.assigned for p in survivors], topic, PARTITIONS, [3, 3]), timeout=90,
               message=lambda: f"3/3 after the kill, have {[sorted(p.assigned) for p in survivors]}")
    moved_after = time.monotonic() - killed_at
    desc = wait_until(lambda: (d := describe_group(broker.bootstrap, group)).state.name == "STABLE"
                      and len(d.members) == 2 and d, message="Stable group of 2")
    assert victim_id not in {m.member_id for m in desc.members}
    assert orphaned <= (survivors[0].assigned | survivors[1].assigned)
    print(f"partitions moved {moved_after:.1f}s after SIGKILL (session timeout 6s)")
    assert all(p.alive() for p in survivors), [p.stderr[-5:] for p in survivors]


@pytest.mark.parametrize("kind", ["confluent", "kafka-python"])
def test_static_member_restart_keeps_partitions_without_rebalance(broker: BrokerProcess,
                                                                  processes: list[ConsumerProcess],
                                                                  kind: str) -> None:
    topic = create_topic(broker.bootstrap, unique(f"static-{kind}"), PARTITIONS)
    group = unique(f"g-static-{kind}")
    session_ms = 10_000  # room for a process restart inside the session timeout
    a = ConsumerProcess(kind, broker.bootstrap, group, topic, instance_id="static-a", session_ms=session_ms,
                        name="static-a").start()
    b = ConsumerProcess(kind, broker.bootstrap, group, topic, instance_id="static-b", session_ms=session_ms,
                        name="static-b").start()
    processes += [a, b]
    wait_until(lambda: exact_split([a.assigned, b.assigned], topic, PARTITIONS, [3, 3]), timeout=90,
               message=lambda: f"3/3 static split, have {sorted(a.assigned)} / {sorted(b.assigned)}")
    wait_until(lambda: (d := describe_group(broker.bootstrap, group)).state.name == "STABLE" and len(d.members) == 2,
               message="Stable static group")

    # restart each member in turn (one of them is the leader): same partitions, no rebalance
    for restarted, other in ((a, b), (b, a)):
        instance = restarted.name
        desc = describe_group(broker.bootstrap, group)
        old_id = next(m.member_id for m in desc.members if m.group_instance_id == instance)
        mine, theirs = restarted.assigned, other.assigned
        other_events = len(other.events)
        generation = _generation(broker, group)
        assert generation >= 1

        restarted.kill()  # no LeaveGroup; the static member stays in the group until its session expires
        restarted.start()
        wait_until(lambda r=restarted: r.assigned, timeout=30, message=f"{instance} assigned after its restart")
        assert restarted.assigned == mine
        desc = wait_until(lambda: (d := describe_group(broker.bootstrap, group)).state.name == "STABLE"
                          and len(d.members) == 2 and d, message="Stable static group after a restart")
        new_id = next(m.member_id for m in desc.members if m.group_instance_id == instance)
        assert new_id != old_id, "the restarted incarnation gets a new member id (the old one is fenced)"
        time.sleep(2)  # let a would-be rebalance reach the other member's heartbeat (2 intervals)
        assert other.assigned == theirs
        assert [e for e in other.events[other_events:] if e.get("event") in ("assign", "revoke")] == []
        assert _generation(broker, group) == generation

    # static members do not leave on close: remove them by instance id (LeaveGroup v3+, as admin
    # tools do) so their group does not expire and rebalance during the next test
    for p in (a, b):
        p.terminate()
    results = asyncio.run(_leave_by_instance_id(broker, group, ["static-a", "static-b"]))
    assert results == [("static-a", 0), ("static-b", 0)], results
    assert describe_group(broker.bootstrap, group).state.name == "EMPTY"


async def _leave_by_instance_id(broker: BrokerProcess, group: str, instances: list[str]) -> list[tuple[str, int]]:
    conn = await Connection.open("127.0.0.1", broker.port, "admin-leave")
    try:
        resp = await conn.request(ApiKey.LEAVE_GROUP, 5, {
            "group_id": group,
            "members": [{"member_id": "", "group_instance_id": i, "reason": "test cleanup"} for i in instances]})
        assert resp.error_code == 0
        return [(m.group_instance_id, m.error_code) for m in resp.members]
    finally:
        await conn.close()


def test_committed_offsets_survive_broker_kill9(tmp_path: Path, consumers: list[ConsumerThread]) -> None:
    broker = BrokerProcess(tmp_path / "data").start()
    try:
        topic = create_topic(broker.bootstrap, unique("durable"), 3)
        group = unique("g-durable")
        first = produce(broker.bootstrap, topic, 3, 30)
        consumer = start_consumer("kafka-python", broker.bootstrap, group, topic, name="durable-kp")
        consumers.append(consumer)
        wait_until(lambda: consumer.values() >= set(first), message="the first 30 records")
        expected = {(topic, p): 10 for p in range(3)}
        wait_until(lambda: committed_offsets(broker.bootstrap, group) == expected,
                   message=lambda: f"commits {expected}, have {committed_offsets(broker.bootstrap, group)}")

        broker.kill()
        broker.start()

        # OffsetFetch after the restart returns the commits (confluent AdminClient and kafka-python)
        assert committed_offsets(broker.bootstrap, group) == expected
        from kafka import KafkaAdminClient

        kp_admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap, client_id="durable-admin")
        try:
            fetched = kp_admin.list_group_offsets(group)[group]  # OffsetFetch v8+
        finally:
            kp_admin.close()
        assert {(tp.topic, tp.partition): om.offset for tp, om in fetched.items()} == expected

        # the live consumer rides through the restart and carries on after its commits
        seen = len(consumer.records)
        second = produce(broker.bootstrap, topic, 3, 15, start=30)
        wait_until(lambda: consumer.values() >= set(second), timeout=90,
                   message=lambda: f"records after the restart, have {len(consumer.values() & set(second))}")
        reread = [(p, off) for p, off, _ in consumer.records[seen:] if off < 10]
        assert not reread, f"re-read committed records after the restart: {reread[:5]}"
        wait_until(lambda: committed_offsets(broker.bootstrap, group) == {(topic, p): 15 for p in range(3)},
                   message="commits after the restart")
        no_errors(consumers)
    finally:
        for c in consumers:
            c._stop_event.set()
        for c in consumers:
            c.closed.wait(30)
        broker.stop()
