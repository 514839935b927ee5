"""The balance planner (broker.cluster.balance): rebalance and decommission plans as pure functions,
checked by examples and by hypothesis properties (replication factors kept, no broker twice in a
partition, rack spread never worse, counts within one per topic, balanced input left alone,
minimal moves, determinism)."""

from __future__ import annotations

import ast
import random
import sys
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import broker.cluster.balance
from broker.cluster.balance import PlanError, apply_plan, decommission, rebalance, replica_moves

Assignments = dict[tuple[str, int], list[int]]
PROPERTY = settings(max_examples=150, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


def round_robin(topic: str, partitions: int, rf: int, brokers: Sequence[int], start: int = 0) -> Assignments:
    n = len(brokers)
    return {(topic, p): [brokers[(start + p + i) % n] for i in range(rf)] for p in range(partitions)}


def counts(assignments: Mapping[tuple[str, int], Sequence[int]], topic: str | None = None,
           leaders: bool = False) -> Counter[int]:
    out: Counter[int] = Counter()
    for (t, _), replicas in assignments.items():
        if topic is None or t == topic:
            out.update(replicas[:1] if leaders else replicas)
    return out


def spread(counter: Counter[int], brokers: Sequence[int]) -> int:
    values = [counter[b] for b in brokers]
    return max(values) - min(values)


def rack_key(racks: Mapping[int, str | None]):  # type: ignore[no-untyped-def]
    aware = any(racks.values())
    return lambda b: ((racks[b] or "") if aware else f"#{b}") if b in racks else f"dead#{b}"


def distinct_racks(replicas: Sequence[int], racks: Mapping[int, str | None]) -> int:
    key = rack_key(racks)
    return len({key(b) for b in replicas})


def check_well_formed(before: Assignments, plan: Mapping[tuple[str, int], Sequence[int]]) -> Assignments:
    assert set(plan) <= set(before)
    after = apply_plan(before, plan)
    for tp, replicas in after.items():
        assert len(replicas) == len(before[tp]), f"{tp} changed its replication factor"
        assert len(set(replicas)) == len(replicas), f"{tp} names a broker twice: {replicas}"
    for tp, replicas in plan.items():
        assert list(replicas) != list(before[tp]), f"{tp} is in the plan without a change"
    assert list(plan) == sorted(plan)
    return after


# -- examples -------------------------------------------------------------------------------------


def test_the_planner_imports_only_the_standard_library():
    """The CLI and the controller share it: it must not pull in the rest of the broker."""
    tree = ast.parse(Path(broker.cluster.balance.__file__).read_text(encoding="utf-8"))
    imported = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import)
                for alias in node.names}
    imported |= {node.module.split(".")[0] for node in ast.walk(tree)
                 if isinstance(node, ast.ImportFrom) and node.module and node.level == 0}
    assert imported <= set(sys.stdlib_module_names) | {"__future__"}, imported


def test_adding_one_broker_to_three_moves_only_its_share():
    before = round_robin("t", 12, 3, [1, 2, 3])
    brokers = {1: None, 2: None, 3: None, 4: None}
    plan = rebalance(before, brokers)
    after = check_well_formed(before, plan)
    assert replica_moves(before, plan) == 9  # 36 replicas over 4 brokers: 9 each, all from the old three
    assert counts(after) == {1: 9, 2: 9, 3: 9, 4: 9}
    assert counts(after, leaders=True) == {1: 3, 2: 3, 3: 3, 4: 3}
    assert len(plan) == 9  # the leaderships broker 4 needs ride on partitions that move anyway
    assert rebalance(after, brokers) == {}


def test_a_balanced_cluster_gets_an_empty_plan():
    before = {**round_robin("a", 6, 3, [1, 2, 3]), **round_robin("b", 4, 2, [1, 2, 3], start=1),
              **round_robin("c", 1, 1, [1, 2, 3])}
    assert counts(before) == {1: 9, 2: 9, 3: 9}
    assert rebalance(before, {1: None, 2: None, 3: None}) == {}


def test_several_topics_share_the_new_broker_evenly():
    before = {**round_robin("a", 6, 3, [1, 2, 3]), **round_robin("b", 6, 3, [1, 2, 3], start=1),
              **round_robin("c", 50, 3, [1, 2, 3])}
    brokers = {b: None for b in (1, 2, 3, 4)}
    plan = rebalance(before, brokers)
    after = check_well_formed(before, plan)
    for topic in "abc":
        assert spread(counts(after, topic), [1, 2, 3, 4]) <= 1
        assert spread(counts(after, topic, leaders=True), [1, 2, 3, 4]) <= 1
    assert spread(counts(after), [1, 2, 3, 4]) <= 1
    assert spread(counts(after, leaders=True), [1, 2, 3, 4]) <= 1
    # broker 4 needs at least 4 replicas of a (18 over four), 4 of b and 37 of c (150 over four),
    # and 46 in all (186 over four): one more than the topics alone ask for
    assert counts(after)[4] == 46
    assert replica_moves(before, plan) == 46


def test_many_small_topics_do_not_pile_onto_one_broker():
    before = {(f"t{i}", 0): [1] for i in range(9)}  # each topic alone is balanced within one
    plan = rebalance(before, {1: None, 2: None, 3: None})
    after = check_well_formed(before, plan)
    assert counts(after) == {1: 3, 2: 3, 3: 3}
    assert replica_moves(before, plan) == 6


def test_replicas_of_a_dead_broker_move_to_the_live_ones():
    before = round_robin("t", 6, 3, [1, 2, 4])  # broker 4 is gone, broker 3 is its replacement
    plan = rebalance(before, {1: None, 2: None, 3: None})
    after = check_well_formed(before, plan)
    assert counts(after) == {1: 6, 2: 6, 3: 6}
    assert replica_moves(before, plan) == 6
    assert all(after[tp] == [3 if b == 4 else b for b in before[tp]] for tp in before)


def test_a_partition_that_cannot_leave_a_dead_broker_keeps_that_replica():
    before = {("t", 0): [1, 2, 3]}
    plan = rebalance(before, {1: None, 2: None})
    assert plan == {}


def test_rebalance_repairs_rack_spread():
    racks = {1: "a", 2: "a", 3: "b", 4: "b"}
    before = {("t", 0): [1, 2], ("t", 1): [3, 4], ("t", 2): [1, 3], ("t", 3): [2, 4]}
    plan = rebalance(before, racks)
    after = check_well_formed(before, plan)
    assert all(distinct_racks(r, racks) == 2 for r in after.values())
    assert replica_moves(before, plan) == 2
    assert spread(counts(after), [1, 2, 3, 4]) == 0


def test_rack_spread_wins_over_even_counts():
    racks = {1: "a", 2: "b", 3: "b", 4: "b"}
    before = {("t", p): [1, 2 + p % 3] for p in range(6)}
    plan = rebalance(before, racks)
    after = check_well_formed(before, plan)
    assert all(distinct_racks(r, racks) == 2 for r in after.values())
    assert counts(after)[1] == 6  # the only broker of rack a keeps a replica of every partition
    assert spread(counts(after), [2, 3, 4]) == 0


def test_decommission_moves_only_the_brokers_replicas():
    before = {**round_robin("t", 8, 3, [1, 2, 3, 4]), **round_robin("u", 3, 1, [1, 2, 3, 4])}
    brokers = {b: None for b in (1, 2, 3, 4)}
    plan = decommission(before, brokers, 4)
    after = check_well_formed(before, plan)
    assert all(4 not in r for r in after.values())
    assert set(plan) == {tp for tp, r in before.items() if 4 in r}
    assert replica_moves(before, plan) == sum(4 in r for r in before.values())
    assert counts(after, "t") == {1: 8, 2: 8, 3: 8}
    # the partitions broker 4 preferred-led go to a replica that was already there
    for tp, replicas in before.items():
        if replicas[0] == 4 and len(replicas) > 1:
            assert after[tp][0] in replicas
    assert spread(counts(after, "t", leaders=True), [1, 2, 3]) <= 1


def test_decommission_keeps_the_rack():
    racks = {1: "a", 2: "a", 3: "b", 4: "b", 5: "c"}
    before = {("t", 0): [1, 3, 5], ("t", 1): [3, 5, 1], ("t", 2): [5, 1, 3]}
    plan = decommission(before, racks, 1)
    after = check_well_formed(before, plan)
    assert all(r == [2 if b == 1 else b for b in before[tp]] for tp, r in after.items())


def test_decommission_of_a_dead_broker_replaces_it():
    before = round_robin("t", 4, 2, [1, 2, 3])
    plan = decommission(before, {1: None, 2: None, 4: None}, 3)
    after = check_well_formed(before, plan)
    assert all(3 not in r for r in after.values())
    assert replica_moves(before, plan) == sum(3 in r for r in before.values())


def test_decommission_refusals():
    before = round_robin("t", 3, 3, [1, 2, 3])
    with pytest.raises(PlanError, match="broker 9 is not in the cluster"):
        decommission(before, {1: None, 2: None, 3: None}, 9)
    with pytest.raises(PlanError, match="t-0 has 3 replicas but only 2 brokers would remain"):
        decommission(before, {1: None, 2: None, 3: None}, 3)
    with pytest.raises(PlanError, match="no live brokers"):
        rebalance(before, {})
    with pytest.raises(PlanError, match="replicas"):
        rebalance({("t", 0): [1, 1]}, {1: None, 2: None})


def test_plans_are_deterministic():
    rng = random.Random(7)
    before = {(f"t{t}", p): rng.sample([1, 2, 3, 4, 5], 3) for t in range(4) for p in range(7)}
    brokers = {1: "a", 2: "b", 3: "a", 4: "b", 5: "c", 6: "c"}
    plan = rebalance(before, brokers)
    items = list(before.items())
    rng.shuffle(items)
    assert rebalance(dict(items), dict(reversed(list(brokers.items())))) == plan
    assert list(rebalance(dict(items), brokers).items()) == list(plan.items())
    assert decommission(dict(items), brokers, 2) == decommission(before, brokers, 2)


def test_a_large_cluster_plans_quickly():
    """40 topics of 30 partitions (RF 3) on six brokers in three racks; three brokers join, one a rack."""
    brokers = {b: f"r{b % 3}" for b in range(1, 10)}
    before: Assignments = {}
    for t in range(40):
        before.update(round_robin(f"topic-{t}", 30, 3, [1, 2, 3, 4, 5, 6], start=t))
    started = time.monotonic()
    plan = rebalance(before, brokers)
    elapsed = time.monotonic() - started
    after = check_well_formed(before, plan)
    assert all(distinct_racks(r, brokers) == 3 for r in after.values())
    for t in range(40):
        assert spread(counts(after, f"topic-{t}"), sorted(brokers)) <= 1
        assert spread(counts(after, f"topic-{t}", leaders=True), sorted(brokers)) <= 1
    assert spread(counts(after), sorted(brokers)) <= 1
    assert replica_moves(before, plan) == 40 * 30  # each new broker takes a third of its rack's share
    assert elapsed < 30, f"planning took {elapsed:.1f}s"


# -- properties -----------------------------------------------------------------------------------


@st.composite
def clusters(draw: st.DrawFn, *, racks: str = "any", dead: bool = True) -> tuple[Assignments, dict[int, str | None]]:
    """(assignments, live brokers with racks): up to 7 live brokers, maybe replicas on dead ones."""
    n_live = draw(st.integers(1, 7))
    live = list(range(1, n_live + 1))
    if racks == "none":
        rack_of: dict[int, str | None] = dict.fromkeys(live)
    elif racks == "even":
        n_racks = draw(st.integers(1, n_live))
        assume(n_live % n_racks == 0)
        rack_of = {b: f"r{b % n_racks}" for b in live}
    else:
        rack_of = {b: draw(st.sampled_from([None, "a", "b", "c"])) for b in live}
    n_dead = draw(st.integers(0, 2)) if dead else 0
    pool = live + list(range(100, 100 + n_dead))
    assignments: Assignments = {}
    for t in range(draw(st.integers(1, 3))):
        rf = draw(st.integers(1, min(3, len(pool))))
        for p in range(draw(st.integers(1, 10))):
            assignments[(f"t{t}", p)] = draw(st.permutations(pool))[:rf]
    return assignments, rack_of


@PROPERTY
@given(clusters())
def test_rebalance_keeps_partitions_whole_and_is_a_fixed_point(cluster):
    before, brokers = cluster
    plan = rebalance(before, brokers)
    after = check_well_formed(before, plan)
    live_racks = len({rack_key(brokers)(b) for b in brokers})
    for tp, replicas in after.items():
        if len(replicas) <= len(brokers):
            assert set(replicas) <= set(brokers), f"{tp} left on a dead broker: {replicas}"
        was = distinct_racks(before[tp], brokers)
        now = distinct_racks(replicas, brokers)
        if set(before[tp]) <= set(brokers):
            assert now >= was, f"{tp}: rack spread {before[tp]} -> {replicas}"
        else:
            assert now >= min(was, live_racks), f"{tp}: rack spread {before[tp]} -> {replicas}"
    assert rebalance(after, brokers) == {}


@PROPERTY
@given(clusters(racks="none"))
def test_rebalance_without_racks_balances_within_one(cluster):
    before, brokers = cluster
    assume(all(len(r) <= len(brokers) for r in before.values()))
    after = check_well_formed(before, rebalance(before, brokers))
    live = sorted(brokers)
    for topic in {t for t, _ in after}:
        assert spread(counts(after, topic), live) <= 1, topic
        assert spread(counts(after, topic, leaders=True), live) <= 1, topic
    assert spread(counts(after), live) <= 1


@PROPERTY
@given(clusters(racks="even", dead=False))
def test_rebalance_with_even_racks_balances_within_one_per_topic(cluster):
    before, brokers = cluster
    after = check_well_formed(before, rebalance(before, brokers))
    live = sorted(brokers)
    for topic in {t for t, _ in after}:
        assert spread(counts(after, topic), live) <= 1, topic
        assert spread(counts(after, topic, leaders=True), live) <= 1, topic


@PROPERTY
@given(clusters(racks="none", dead=False), st.integers(1, 3))
def test_rebalance_moves_no_more_than_needed(cluster, added):
    """Without racks, a topic's moves are the least any plan with counts within one needs: the larger
    of what brokers hold above share+1 and what they lack below the share."""
    before, brokers = cluster
    topics = {t for t, _ in before}
    assume(len(topics) == 1)
    brokers = {**brokers, **{b: None for b in range(50, 50 + added)}}
    plan = rebalance(before, brokers)
    check_well_formed(before, plan)
    held = counts(before)
    lo, extra = divmod(sum(held.values()), len(brokers))
    hi = lo + (1 if extra else 0)
    excess = sum(max(0, held[b] - hi) for b in brokers)
    lack = sum(max(0, lo - held[b]) for b in brokers)
    assert replica_moves(before, plan) == max(excess, lack)


@PROPERTY
@given(clusters(racks="any", dead=False), st.data())
def test_decommission_empties_one_broker_and_moves_nothing_else(cluster, data):
    before, brokers = cluster
    leaving = data.draw(st.sampled_from(sorted(brokers)))
    remaining = [b for b in brokers if b != leaving]
    if any(leaving in r and len(r) > len(remaining) for r in before.values()) or not remaining:
        with pytest.raises(PlanError):
            decommission(before, brokers, leaving)
        return
    plan = decommission(before, brokers, leaving)
    after = check_well_formed(before, plan)
    assert all(leaving not in r for r in after.values())
    assert set(plan) == {tp for tp, r in before.items() if leaving in r}
    assert replica_moves(before, plan) == len(plan)
    remaining_racks = len({rack_key(brokers)(b) for b in remaining})
    for tp, replicas in after.items():
        assert distinct_racks(replicas, brokers) >= min(distinct_racks(before[tp], brokers), remaining_racks)
