"""Consumer groups with real clients (kafka-python, aiokafka, confluent-kafka) against one broker process.

Every test uses its own topic and group id on the module's broker.
"""

from __future__ import annotations

import pytest
from groups_e2e import (
    BrokerProcess,
    ConsumerThread,
    all_values,
    assignments_by_member,
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

PARTITIONS = 6
KINDS = ["kafka-python", "aiokafka", "confluent"]


def _assigned(cs: list[ConsumerThread]) -> list[frozenset[tuple[str, int]]]:
    return [c.assigned for c in cs]


def _describe_split(broker: BrokerProcess, group: str, topic: str, members: int) -> bool:
    desc = describe_group(broker.bootstrap, group)
    if desc.state.name != "STABLE" or len(desc.members) != members:
        return False
    sets = list(assignments_by_member(desc).values())
    return exact_split(sets, topic, PARTITIONS) and all(sets)


@pytest.mark.parametrize("kind", KINDS)
def test_three_consumers_split_consume_and_hand_over(broker: BrokerProcess, consumers: list[ConsumerThread],
                                                      kind: str) -> None:
    topic = create_topic(broker.bootstrap, unique(f"split-{kind}"), PARTITIONS)
    group = unique(f"g-split-{kind}")
    first = produce(broker.bootstrap, topic, PARTITIONS, 120)
    for i in range(3):
        consumers.append(start_consumer(kind, broker.bootstrap, group, topic, name=f"{kind}-{i}"))

    # exact 2/2/2 split, seen by the clients and by DescribeGroups
    wait_until(lambda: exact_split(_assigned(consumers), topic, PARTITIONS, [2, 2, 2]),
               message=lambda: f"2/2/2 split, have {_assigned(consumers)}")
    wait_until(lambda: _describe_split(broker, group, topic, 3), message="Stable group of 3 in DescribeGroups")
    # ... and everything is consumed
    wait_until(lambda: all_values(consumers) >= set(first),
               message=lambda: f"all of {len(first)} records, have {len(all_values(consumers))}")
    wait_until(lambda: committed_offsets(broker.bootstrap, group) == {(topic, p): 20 for p in range(PARTITIONS)},
               message=lambda: f"commits at the end of every partition: {committed_offsets(broker.bootstrap, group)}")
    no_errors(consumers)

    # graceful leave: the leaver's partitions move to the two others, which carry on from its commits
    leaver = consumers[0]
    moved = set(leaver.assigned)
    assert len(moved) == 2
    rest = consumers[1:]
    seen_before = {c.name: len(c.records) for c in rest}
    leaver.stop()
    wait_until(lambda: exact_split(_assigned(rest), topic, PARTITIONS, [3, 3]),
               message=lambda: f"3/3 split after a leave, have {_assigned(rest)}")
    wait_until(lambda: _describe_split(broker, group, topic, 2), message="Stable group of 2 in DescribeGroups")
    second = produce(broker.bootstrap, topic, PARTITIONS, 60, start=120)
    wait_until(lambda: all_values(rest) >= set(second),
               message=lambda: f"records produced after the leave, have {len(all_values(rest) & set(second))}")
    # the new owners of the moved partitions started at the committed offsets (20), not earlier
    for c in rest:
        after = c.records[seen_before[c.name]:]
        stale = [(p, off) for p, off, _ in after if (topic, p) in moved and off < 20]
        assert not stale, f"{c.name} re-read records of a handed-over partition below its commit: {stale[:5]}"
    no_errors(consumers)


@pytest.mark.parametrize("leader_kind", KINDS)
def test_mixed_clients_range_assignor(broker: BrokerProcess, consumers: list[ConsumerThread],
                                      leader_kind: str) -> None:
    """kafka-python + aiokafka + confluent-kafka in one group on 'range'; the first to join leads."""
    topic = create_topic(broker.bootstrap, unique(f"mixed-{leader_kind}"), PARTITIONS)
    group = unique(f"g-mixed-{leader_kind}")
    values = produce(broker.bootstrap, topic, PARTITIONS, 60)
    order = [leader_kind] + [k for k in KINDS if k != leader_kind]
    consumers.append(start_consumer(order[0], broker.bootstrap, group, topic, assignor="range",
                                    name=f"mixed-{order[0]}"))
    wait_until(lambda: len(consumers[0].assigned) == PARTITIONS, message="the first member owning everything")
    for kind in order[1:]:
        consumers.append(start_consumer(kind, broker.bootstrap, group, topic, assignor="range",
                                        name=f"mixed-{kind}"))

    wait_until(lambda: exact_split(_assigned(consumers), topic, PARTITIONS, [2, 2, 2]),
               message=lambda: f"2/2/2 range split, have {_assigned(consumers)}")
    desc = wait_until(lambda: (d := describe_group(broker.bootstrap, group)).state.name == "STABLE"
                      and len(d.members) == 3 and d, message="Stable mixed group")
    assert desc.partition_assignor == "range"
    # range: each member owns a contiguous block, in member-id order
    by_member = assignments_by_member(desc)
    blocks = [sorted(p for _, p in by_member[m]) for m in sorted(by_member)]
    assert blocks == [[0, 1], [2, 3], [4, 5]], blocks
    wait_until(lambda: all_values(consumers) >= set(values), message="every record consumed by the mixed group")
    no_errors(consumers)


def test_confluent_cooperative_sticky(broker: BrokerProcess, consumers: list[ConsumerThread]) -> None:
    """librdkafka's cooperative-sticky: incremental rebalances; survivors keep what they had."""
    topic = create_topic(broker.bootstrap, unique("coop"), PARTITIONS)
    group = unique("g-coop")
    values = produce(broker.bootstrap, topic, PARTITIONS, 60)
    for i in range(3):
        consumers.append(start_consumer("confluent", broker.bootstrap, group, topic,
                                        assignor="cooperative-sticky", name=f"coop-{i}"))
        wait_until(lambda: exact_split(_assigned(consumers), topic, PARTITIONS),
                   message=lambda: f"all partitions owned by {len(consumers)} cooperative members")

    wait_until(lambda: exact_split(_assigned(consumers), topic, PARTITIONS, [2, 2, 2]),
               message=lambda: f"2/2/2 cooperative split, have {_assigned(consumers)}")
    desc = wait_until(lambda: (d := describe_group(broker.bootstrap, group)).state.name == "STABLE"
                      and len(d.members) == 3 and d, message="Stable cooperative group")
    assert desc.partition_assignor == "cooperative-sticky"
    wait_until(lambda: all_values(consumers) >= set(values), message="every record consumed")

    # one member leaves: the others only gain partitions (no revocation of what they own)
    survivors = consumers[1:]
    before = {c.name: c.assigned for c in survivors}
    events_before = {c.name: len(c.events) for c in survivors}
    consumers[0].stop()
    wait_until(lambda: exact_split(_assigned(survivors), topic, PARTITIONS, [3, 3]),
               message=lambda: f"3/3 after a leave, have {_assigned(survivors)}")
    for c in survivors:
        assert c.assigned >= before[c.name], f"{c.name} lost partitions: {before[c.name]} -> {c.assigned}"
        revoked = [parts for what, parts in c.events[events_before[c.name]:] if what == "revoke" and parts]
        assert not revoked, f"{c.name} had partitions revoked in a cooperative rebalance: {revoked}"
    no_errors(consumers)


@pytest.mark.parametrize("kind", KINDS)
def test_second_consumer_joins_without_unknown_member_loops(broker: BrokerProcess,
                                                            consumers: list[ConsumerThread], kind: str) -> None:
    """A second member joining a Stable group: one rebalance, no UNKNOWN_MEMBER_ID churn, no empty syncs."""
    topic = create_topic(broker.bootstrap, unique(f"second-{kind}"), 4)
    group = unique(f"g-second-{kind}")
    unknown_before = (broker.error_count("JoinGroup", "UNKNOWN_MEMBER_ID")
                      + broker.error_count("SyncGroup", "UNKNOWN_MEMBER_ID")
                      + broker.error_count("Heartbeat", "UNKNOWN_MEMBER_ID"))
    required_before = broker.error_count("JoinGroup", "MEMBER_ID_REQUIRED")
    first = start_consumer(kind, broker.bootstrap, group, topic, name=f"second-{kind}-0")
    consumers.append(first)
    wait_until(lambda: len(first.assigned) == 4, message="the first member owning all 4 partitions")
    second = start_consumer(kind, broker.bootstrap, group, topic, name=f"second-{kind}-1")
    consumers.append(second)
    wait_until(lambda: exact_split([first.assigned, second.assigned], topic, 4, [2, 2]),
               message=lambda: f"2/2 split, have {first.assigned} / {second.assigned}")
    wait_until(lambda: (d := describe_group(broker.bootstrap, group)).state.name == "STABLE" and len(d.members) == 2,
               message="Stable group of 2")
    unknown_after = (broker.error_count("JoinGroup", "UNKNOWN_MEMBER_ID")
                     + broker.error_count("SyncGroup", "UNKNOWN_MEMBER_ID")
                     + broker.error_count("Heartbeat", "UNKNOWN_MEMBER_ID"))
    # tests in this module run one at a time, so the counters move only because of this group;
    # the two-step KIP-394 join (JoinGroup v4+; aiokafka uses v5) shows the error counter is live
    assert broker.error_count("JoinGroup", "MEMBER_ID_REQUIRED") >= required_before + 2
    assert unknown_after == unknown_before, f"{unknown_after - unknown_before} UNKNOWN_MEMBER_ID replies"
    # every assignment either member received was non-empty (4 partitions >= 2 members)
    for c in consumers:
        assigns = [parts for what, parts in c.events if what == "assign"]
        assert assigns and all(assigns), f"{c.name} got an empty assignment: {c.events}"
    no_errors(consumers)
