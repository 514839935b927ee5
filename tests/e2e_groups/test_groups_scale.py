"""Many members and back-to-back rebalances: groups settle to Stable with every partition assigned once."""

from __future__ import annotations

import asyncio
import time

from groups_e2e import (
    BrokerProcess,
    ConsumerThread,
    assignments_by_member,
    create_topic,
    describe_group,
    exact_split,
    no_errors,
    start_consumer,
    unique,
    wait_until,
)
from raw_members import RawMember, describe


async def _settled(broker: BrokerProcess, group: str, topic: str, partitions: int, members: list[RawMember],
                   timeout: float = 90.0) -> int:
    """Wait until every raw member synced the same generation, the group is Stable and the split exact."""
    deadline = time.monotonic() + timeout
    while True:
        for m in members:
            if m.task is not None and m.task.done() and m.task.exception() is not None:
                raise m.task.exception()  # type: ignore[misc]
        generations = {m.stable_generation for m in members}
        if len(generations) == 1 and -1 not in generations:
            desc = await describe("127.0.0.1", broker.port, group)
            if (desc.group_state == "Stable" and len(desc.members) == len(members)
                    and exact_split([m.assigned for m in members], topic, partitions)):
                return generations.pop()
        if time.monotonic() > deadline:
            state = [(m.name, m.stable_generation, len(m.assigned)) for m in members]
            raise AssertionError(f"group {group} did not settle: {state}")
        await asyncio.sleep(0.1)


async def test_twenty_raw_members_join_at_once(broker: BrokerProcess) -> None:
    topic, group, partitions = unique("raw20"), unique("g-raw20"), 40
    create_topic(broker.bootstrap, topic, partitions)
    members = [RawMember("127.0.0.1", broker.port, group, topic, partitions, name=f"raw-{i}", heartbeat_ms=500)
               for i in range(20)]
    try:
        for m in members:
            m.start()
        generation = await _settled(broker, group, topic, partitions, members)
        assert all(len(m.assigned) == 2 for m in members), [len(m.assigned) for m in members]
        # no member was ever told it is unknown, and no SyncGroup handed out an empty assignment
        assert sum(m.unknown_member for m in members) == 0
        assert sum(m.empty_syncs for m in members) == 0
        # the group stays put: a few heartbeat rounds later nothing has moved
        await asyncio.sleep(1.5)
        assert {m.stable_generation for m in members} == {generation}
    finally:
        await asyncio.gather(*(m.leave() for m in members), return_exceptions=True)
    desc = await describe("127.0.0.1", broker.port, group)
    assert desc.group_state == "Empty" and not desc.members


async def test_raw_members_joining_one_after_another(broker: BrokerProcess) -> None:
    """Back-to-back rebalances: each join lands while the previous rebalance is still running."""
    topic, group, partitions = unique("rawseq"), unique("g-rawseq"), 24
    create_topic(broker.bootstrap, topic, partitions)
    members: list[RawMember] = []
    try:
        for i in range(12):
            members.append(RawMember("127.0.0.1", broker.port, group, topic, partitions, name=f"seq-{i}",
                                     heartbeat_ms=300).start())
            await asyncio.sleep(0.15)
        await _settled(broker, group, topic, partitions, members)
        assert all(len(m.assigned) == 2 for m in members)
        assert sum(m.unknown_member for m in members) == 0
        assert sum(m.empty_syncs for m in members) == 0
        # and leaving one after another settles too
        for _ in range(4):
            await members.pop().leave()
            await asyncio.sleep(0.1)
        await _settled(broker, group, topic, partitions, members)
        assert sorted(len(m.assigned) for m in members) == [3] * 8
    finally:
        await asyncio.gather(*(m.leave() for m in members), return_exceptions=True)


def test_ten_confluent_consumers(broker: BrokerProcess, consumers: list[ConsumerThread]) -> None:
    topic, group, partitions = unique("conf10"), unique("g-conf10"), 20
    create_topic(broker.bootstrap, topic, partitions)
    for i in range(10):
        consumers.append(start_consumer("confluent", broker.bootstrap, group, topic, name=f"conf10-{i}"))
    wait_until(lambda: exact_split([c.assigned for c in consumers], topic, partitions, [2] * 10), timeout=90,
               message=lambda: f"2 partitions each, have {sorted(len(c.assigned) for c in consumers)}")
    desc = wait_until(lambda: (d := describe_group(broker.bootstrap, group)).state.name == "STABLE"
                      and len(d.members) == 10 and d, message="Stable group of 10")
    assert exact_split(list(assignments_by_member(desc).values()), topic, partitions, [2] * 10)
    no_errors(consumers)


def test_mixed_clients_joining_back_to_back(broker: BrokerProcess, consumers: list[ConsumerThread]) -> None:
    """Six real consumers (two of each client) started one after another on 'range' settle 2 each."""
    topic, group, partitions = unique("b2b"), unique("g-b2b"), 12
    create_topic(broker.bootstrap, topic, partitions)
    for i, kind in enumerate(["kafka-python", "aiokafka", "confluent"] * 2):
        consumers.append(start_consumer(kind, broker.bootstrap, group, topic, assignor="range",
                                        name=f"b2b-{kind}-{i}"))
        time.sleep(0.3)
    wait_until(lambda: exact_split([c.assigned for c in consumers], topic, partitions, [2] * 6), timeout=90,
               message=lambda: f"2 partitions each, have {[sorted(c.assigned) for c in consumers]}")
    wait_until(lambda: (d := describe_group(broker.bootstrap, group)).state.name == "STABLE" and len(d.members) == 6,
               message="Stable group of 6")
    no_errors(consumers)
