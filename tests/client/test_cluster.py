"""Tests for client.cluster: every branch of leastLoadedNode and metadata diffs."""

from __future__ import annotations

import random
import re

from client.cluster import (
    BrokerInfo,
    ClusterMetadata,
    NodeState,
    PartitionInfo,
    TopicInfo,
    least_loaded_node,
)

NODES = [1, 2, 3, 4]


def pick(states: dict[int, NodeState], now: int = 1_000, seed: int = 0, nodes=NODES):
    return least_loaded_node(nodes, states, now, random.Random(seed))


def disconnected(last: int = 0, backoff_until: int = 0) -> NodeState:
    return NodeState(last_connect_attempt_ms=last, backoff_until_ms=backoff_until)


def test_no_nodes() -> None:
    res = least_loaded_node([], {}, 0, random.Random(0))
    assert res.node is None and not res.at_least_one_ready


def test_ready_idle_node_wins_immediately_whatever_the_offset() -> None:
    states = {
        1: NodeState(ready=True, in_flight=2),
        2: NodeState(ready=True, in_flight=0),
        3: NodeState(connecting=True),
        4: disconnected(),
    }
    for seed in range(20):
        res = pick(states, seed=seed)
        assert res.node == 2 and res.at_least_one_ready


def test_ready_node_with_fewest_in_flight() -> None:
    states = {
        1: NodeState(ready=True, in_flight=3),
        2: NodeState(ready=True, in_flight=1),
        3: NodeState(ready=True, in_flight=2),
        4: NodeState(connecting=True),
    }
    for seed in range(20):
        assert pick(states, seed=seed).node == 2


def test_ready_ties_broken_by_random_start() -> None:
    states = {n: NodeState(ready=True, in_flight=1) for n in NODES}
    chosen = {pick(states, seed=seed).node for seed in range(50)}
    assert chosen == set(NODES)


def test_ready_but_cannot_send_more_is_skipped() -> None:
    states = {
        1: NodeState(ready=True, in_flight=5, max_in_flight=5),
        2: NodeState(ready=True, in_flight=1, last_send_completed=False),
        3: NodeState(connecting=True),
    }
    res = pick(states, nodes=[1, 2, 3])
    assert res.node == 3 and res.at_least_one_ready


def test_throttled_node_is_neither_ready_nor_connectable() -> None:
    states = {1: NodeState(ready=True, throttle_until_ms=2_000), 2: disconnected(backoff_until=5_000)}
    res = pick(states, nodes=[1, 2])
    assert res.node is None and not res.at_least_one_ready
    res = pick(states, now=2_000, nodes=[1, 2])
    assert res.node == 1 and res.at_least_one_ready


def test_connecting_beats_connectable() -> None:
    states = {1: disconnected(), 2: NodeState(connecting=True), 3: disconnected(), 4: disconnected()}
    for seed in range(20):
        res = pick(states, seed=seed)
        assert res.node == 2 and not res.at_least_one_ready


def test_connectable_with_oldest_attempt_and_backoff_skipped() -> None:
    states = {
        1: disconnected(last=500, backoff_until=900),
        2: disconnected(last=100, backoff_until=1_500),
        3: disconnected(last=300, backoff_until=400),
        4: disconnected(last=700, backoff_until=800),
    }
    for seed in range(20):
        assert pick(states, seed=seed).node == 3


def test_never_connected_node_counts_as_oldest() -> None:
    states = {1: disconnected(last=5, backoff_until=0)}
    for seed in range(20):
        assert pick(states, seed=seed, nodes=[1, 2]).node == 2
    assert least_loaded_node([1], lambda n: None, 0, random.Random(0)).node == 1


def test_all_backing_off() -> None:
    states = {n: disconnected(last=900, backoff_until=1_100) for n in NODES}
    res = pick(states)
    assert res.node is None and not res.at_least_one_ready


def _meta(topics: dict[str, int], ids: dict[str, bytes] | None = None, internal=()) -> ClusterMetadata:
    ids = ids or {}
    return ClusterMetadata(
        brokers={1: BrokerInfo(1, "h", 9092), 2: BrokerInfo(2, "h", 9093)},
        topics={
            t: TopicInfo(
                t,
                {p: PartitionInfo(p, leader=1 + p % 3) for p in range(n)},
                topic_id=ids.get(t),
                is_internal=t in internal,
            )
            for t, n in topics.items()
        },
        controller_id=1,
        cluster_id="c",
    )


def test_metadata_accessors() -> None:
    m = _meta({"a": 4})
    assert m.partition_count("a") == 4 and m.partition_count("zz") is None
    assert m.leader_for("a", 1) == 2 and m.leader_for("a", 9) is None
    assert list(m.available_partitions("a")) == [0, 1, 3]
    assert m.available_partitions("a") is m.available_partitions("a")  # worked out once per snapshot
    assert m.partition_counts() == {"a": 4}
    assert m.broker(2) == BrokerInfo(2, "h", 9093)


def test_diff_partition_growth_and_deletion() -> None:
    old = _meta({"a": 2, "b": 3, "c": 1})
    new = _meta({"a": 4, "b": 3, "d": 1})
    d = old.diff(new, subscribed=["a", "b", "c"])
    assert d.partition_changes == {"a": (2, 4), "c": (1, None)}
    assert d.gained_partitions == {"a": (2, 4)}
    assert d.rebalance_needed
    assert not old.diff(old, subscribed=["a", "b"]).rebalance_needed


def test_diff_pattern_matches_full_name_and_skips_internal() -> None:
    old = _meta({"orders-1": 1, "__consumer_offsets": 50}, internal={"__consumer_offsets"})
    new = _meta(
        {"orders-1": 1, "orders-2": 2, "xorders-3": 1, "__consumer_offsets": 50},
        internal={"__consumer_offsets"},
    )
    d = old.diff(new, pattern=re.compile(r"orders-\d+"))
    assert d.newly_matching == {"orders-2"}
    assert d.partition_changes == {"orders-2": (None, 2)}
    assert new.matching(".*") == {"orders-1", "orders-2", "xorders-3"}
    gone = new.diff(old, pattern="orders-.*")
    assert gone.no_longer_matching == {"orders-2"}


def test_diff_recreated_topic() -> None:
    old = _meta({"a": 2}, ids={"a": b"\x01" * 16})
    new = _meta({"a": 2}, ids={"a": b"\x02" * 16})
    d = old.diff(new, subscribed=["a"])
    assert d.topic_id_changes == {"a": (b"\x01" * 16, b"\x02" * 16)}
    assert d.rebalance_needed
    assert new.topic_name(b"\x02" * 16) == "a"
