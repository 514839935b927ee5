"""KIP-848 consumer groups end to end: confluent-kafka consumers with ``group.protocol=consumer`` against
``python -m broker`` — joining, splitting partitions, scaling 1→5→1, a SIGKILLed member, static members,
subscription changes, regex subscriptions, a broker restart, and classic groups beside them.

The broker runs with a short heartbeat interval (the group's pace) and a 6 s session; waits are liveness
bounds only.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from groups_e2e import (
    BrokerProcess,
    ConsumerProcess,
    ConsumerThread,
    all_values,
    create_topic,
    describe_group,
    no_errors,
    produce,
    start_consumer,
    unique,
    wait_until,
)

CONSUMER = {"group.protocol": "consumer"}
SETTINGS = {
    "group.consumer.heartbeat.interval.ms": "300", "group.consumer.min.heartbeat.interval.ms": "100",
    "group.consumer.session.timeout.ms": "6000", "group.consumer.min.session.timeout.ms": "1000",
}


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    b = BrokerProcess(tmp_path_factory.mktemp("kip848") / "data", settings=SETTINGS).start()
    try:
        yield b
    finally:
        b.stop()


def consumer(broker: BrokerProcess, group: str, topic: str, consumers: list[ConsumerThread], **kw: Any) -> ConsumerThread:
    c = start_consumer("confluent", broker.bootstrap, group, topic, **{**CONSUMER, **kw})
    consumers.append(c)
    return c


def exclusive_cover(members: list[ConsumerThread], topic: str, partitions: int) -> bool:
    """Every partition assigned to exactly one of ``members``."""
    seen: list[tuple[str, int]] = [tp for c in members for tp in c.assigned]
    return len(seen) == len(set(seen)) and set(seen) == {(topic, p) for p in range(partitions)}


def sizes(members: list[ConsumerThread]) -> list[int]:
    return sorted(len(c.assigned) for c in members)


def test_two_members_split_the_partitions_and_read_everything(broker: BrokerProcess,
                                                               consumers: list[ConsumerThread]) -> None:
    topic = create_topic(broker.bootstrap, unique("split"), 6)
    group = unique("g-split")
    values = set(produce(broker.bootstrap, topic, 6, 120))
    a = consumer(broker, group, topic, consumers)
    wait_until(lambda: exclusive_cover([a], topic, 6), message="the first member to own all 6")
    b = consumer(broker, group, topic, consumers)
    wait_until(lambda: exclusive_cover([a, b], topic, 6) and sizes([a, b]) == [3, 3],
               message=lambda: f"3/3, have {sizes([a, b])}")
    wait_until(lambda: all_values([a, b]) >= values, message="every record")
    desc = describe_group(broker.bootstrap, group)
    assert desc.state.name == "STABLE" and len(desc.members) == 2
    assert desc.type.name == "CONSUMER"
    no_errors([a, b])


def test_scale_from_one_to_five_and_back(broker: BrokerProcess, consumers: list[ConsumerThread]) -> None:
    topic = create_topic(broker.bootstrap, unique("scale"), 10)
    group = unique("g-scale")
    members = [consumer(broker, group, topic, consumers)]
    wait_until(lambda: exclusive_cover(members, topic, 10), message="one member owning 10")
    for _ in range(4):
        members.append(consumer(broker, group, topic, consumers))
        wait_until(lambda: exclusive_cover(members, topic, 10) and sizes(members)[-1] - sizes(members)[0] <= 1,
                   message=lambda: f"a balanced split over {len(members)}, have {sizes(members)}")
    assert sizes(members) == [2, 2, 2, 2, 2]
    while len(members) > 1:
        members.pop().stop()
        wait_until(lambda: exclusive_cover(members, topic, 10) and sizes(members)[-1] - sizes(members)[0] <= 1,
                   message=lambda: f"a balanced split over {len(members)}, have {sizes(members)}")
    assert sizes(members) == [10]
    no_errors(members)


def test_sigkilled_member_is_fenced_and_its_partitions_move(broker: BrokerProcess,
                                                            processes: list[ConsumerProcess]) -> None:
    topic = create_topic(broker.bootstrap, unique("kill848"), 6)
    group = unique("g-kill848")
    for i in range(3):
        processes.append(ConsumerProcess("confluent", broker.bootstrap, group, topic, name=f"k{i}",
                                         protocol="consumer").start())
    wait_until(lambda: sorted(len(p.assigned) for p in processes) == [2, 2, 2],
               message=lambda: f"2/2/2, have {[sorted(p.assigned) for p in processes]}")
    victim, survivors = processes[0], processes[1:]
    victim.kill()
    wait_until(lambda: sorted(len(p.assigned) for p in survivors) == [3, 3],
               message=lambda: f"3/3 after the kill, have {[sorted(p.assigned) for p in survivors]}")
    assert set().union(*(p.assigned for p in survivors)) == {(topic, p) for p in range(6)}
    wait_until(lambda: len(describe_group(broker.bootstrap, group).members) == 2, message="the victim fenced")


def test_static_member_restart_keeps_its_partitions(broker: BrokerProcess, consumers: list[ConsumerThread]) -> None:
    topic = create_topic(broker.bootstrap, unique("static848"), 4)
    group = unique("g-static848")
    a = consumer(broker, group, topic, consumers, instance_id="inst-a")
    b = consumer(broker, group, topic, consumers, instance_id="inst-b")
    wait_until(lambda: exclusive_cover([a, b], topic, 4) and sizes([a, b]) == [2, 2], message="2/2")
    before = a.assigned
    epoch = describe_group(broker.bootstrap, group)
    a.stop()  # a static member leaves "for now" (epoch -2) and keeps its partitions
    a2 = consumer(broker, group, topic, consumers, instance_id="inst-a")
    wait_until(lambda: a2.assigned == before, message=lambda: f"the same partitions back, have {a2.assigned}")
    assert b.assigned == frozenset({(topic, p) for p in range(4)}) - before
    after = describe_group(broker.bootstrap, group)
    assert len(after.members) == 2 and {m.group_instance_id for m in after.members} == {"inst-a", "inst-b"}
    assert epoch.state.name == "STABLE"
    no_errors([a2, b])


def test_subscription_change_and_regex(broker: BrokerProcess, consumers: list[ConsumerThread]) -> None:
    prefix = unique("rx")
    one = create_topic(broker.bootstrap, f"{prefix}-one", 2)
    create_topic(broker.bootstrap, unique("unrelated"), 2)
    group = unique("g-rx")
    c = consumer(broker, group, f"^{prefix}-.*", consumers)
    wait_until(lambda: c.assigned == {(one, 0), (one, 1)}, message=lambda: f"the regex's topic, have {c.assigned}")
    two = create_topic(broker.bootstrap, f"{prefix}-two", 3)
    wait_until(lambda: c.assigned == {(one, 0), (one, 1), (two, 0), (two, 1), (two, 2)},
               message=lambda: f"the new matching topic too, have {c.assigned}")
    values = set(produce(broker.bootstrap, two, 3, 30))
    wait_until(lambda: c.values() >= values, message="records of the new topic")
    desc = describe_group(broker.bootstrap, group)
    assert len(desc.members) == 1
    no_errors([c])


def test_subscription_change_moves_the_member(broker: BrokerProcess) -> None:
    from confluent_kafka import Consumer

    t1 = create_topic(broker.bootstrap, unique("sub-a"), 2)
    t2 = create_topic(broker.bootstrap, unique("sub-b"), 3)
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": unique("g-sub"), **CONSUMER})
    try:
        c.subscribe([t1])

        def assigned() -> set[tuple[str, int]]:
            c.poll(0.1)
            return {(tp.topic, tp.partition) for tp in c.assignment()}

        wait_until(lambda: assigned() == {(t1, 0), (t1, 1)}, message="the first topic")
        c.subscribe([t2])
        wait_until(lambda: assigned() == {(t2, 0), (t2, 1), (t2, 2)}, message="the second topic only")
    finally:
        c.close()


def test_classic_and_consumer_groups_side_by_side(broker: BrokerProcess, consumers: list[ConsumerThread]) -> None:
    from confluent_kafka.admin import AdminClient

    topic = create_topic(broker.bootstrap, unique("mixed"), 4)
    classic_group, consumer_group = unique("g-classic"), unique("g-new")
    values = set(produce(broker.bootstrap, topic, 4, 40))
    classic = start_consumer("confluent", broker.bootstrap, classic_group, topic)
    consumers.append(classic)
    modern = consumer(broker, consumer_group, topic, consumers)
    wait_until(lambda: len(classic.assigned) == 4 and len(modern.assigned) == 4, message="both groups own all 4")
    wait_until(lambda: classic.values() >= values and modern.values() >= values, message="both read everything")
    client = AdminClient({"bootstrap.servers": broker.bootstrap})  # alive until the result is in
    listing = client.list_consumer_groups().result(30)
    listed = {g.group_id: g.type.name for g in listing.valid}
    assert listed.get(classic_group) == "CLASSIC" and listed.get(consumer_group) == "CONSUMER", (listed, listing.errors)
    # a classic member cannot join the consumer group: JoinGroup answers INCONSISTENT_GROUP_PROTOCOL
    intruder = start_consumer("confluent", broker.bootstrap, consumer_group, topic)
    consumers.append(intruder)
    wait_until(lambda: any("INCONSISTENT_GROUP_PROTOCOL" in e for e in intruder.errors),
               message=lambda: f"the intruder refused, errors {intruder.errors}")
    assert len(modern.assigned) == 4 and not intruder.assigned
    intruder.stop()
    no_errors([classic, modern])


def test_group_resumes_after_broker_restart(tmp_path: Path, consumers: list[ConsumerThread]) -> None:
    b = BrokerProcess(tmp_path / "data", settings=SETTINGS).start()
    try:
        topic = create_topic(b.bootstrap, unique("restart848"), 4)
        group = unique("g-restart848")
        produce(b.bootstrap, topic, 4, 40)
        c = consumer(b, group, topic, consumers)
        wait_until(lambda: len(c.values()) == 40 and len(c.assigned) == 4, message="all read")
        before = describe_group(b.bootstrap, group)
        events = len(c.events)
        b.kill()
        b.start()
        more = set(produce(b.bootstrap, topic, 4, 20, start=40))
        wait_until(lambda: c.values() >= more, message="the member goes on after the restart")
        after = describe_group(b.bootstrap, group)
        # the coordinator replayed the group: the same member kept its partitions, nothing was revoked or lost
        assert [m.member_id for m in after.members] == [m.member_id for m in before.members]
        assert {(tp.topic, tp.partition) for tp in after.members[0].assignment.topic_partitions} == c.assigned
        assert [e for e in c.events[events:] if e[0] == "revoke"] == []
        c.stop()
        no_errors([c])
    finally:
        b.stop()


def test_cli_lists_and_describes_both_kinds(broker: BrokerProcess, consumers: list[ConsumerThread]) -> None:
    import json
    import subprocess
    import sys

    from groups_e2e import ROOT

    def kbroker(*args: str) -> str:
        proc = subprocess.run([sys.executable, "-m", "kbroker_cli", "--bootstrap-servers", broker.bootstrap, *args],
                              capture_output=True, timeout=60, cwd=ROOT)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout.decode()

    topic = create_topic(broker.bootstrap, unique("cli848"), 4)
    group, classic_group = unique("g-cli848"), unique("g-cli-classic")
    a, b = consumer(broker, group, topic, consumers), consumer(broker, group, topic, consumers)
    old = start_consumer("confluent", broker.bootstrap, classic_group, topic)
    consumers.append(old)
    wait_until(lambda: exclusive_cover([a, b], topic, 4) and sizes([a, b]) == [2, 2] and len(old.assigned) == 4,
               message="both groups settled")
    listed = {g["group"]: g for g in json.loads(kbroker("groups", "list", "--json"))}
    assert listed[group]["type"] == "consumer" and listed[group]["state"] == "Stable"
    assert listed[classic_group]["type"] == "classic"
    data = json.loads(kbroker("groups", "describe", group, "--json"))
    assert data["type"] == "consumer" and data["protocol"] == "uniform" and len(data["members"]) == 2
    assert data["group_epoch"] == data["assignment_epoch"] >= 2
    assigned = sorted(p for m in data["members"] for p in m["assignment"])
    assert assigned == sorted(f"{topic}-{p}" for p in range(4))
    assert all(m["assignment"] == m["target_assignment"] for m in data["members"])
    assert "consumer protocol" in kbroker("groups", "describe", group)
    metrics = broker.metrics_text()
    assert f'kbroker_group_members{{group="{group}",type="consumer"}} 2.0' in metrics
    assert f'kbroker_group_members{{group="{classic_group}",type="classic"}} 1.0' in metrics
    rebalances = [line for line in metrics.splitlines() if line.startswith("kbroker_group_rebalances_total ")]
    assert rebalances and float(rebalances[0].split()[1]) >= 2  # the consumer group's two epochs at least
