"""Tests for client.assignors: Java documentation vectors, sticky properties, cooperative rounds, wire."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor as KPSticky
from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment as KPAssignment
from kafka.protocol.consumer.metadata import ConsumerProtocolSubscription as KPSubscription
from kafka.structs import TopicPartition as KPTopicPartition

from client.assignors import (
    ASSIGNORS,
    Assignment,
    CooperativeStickyAssignor,
    RangeAssignor,
    RoundRobinAssignor,
    StickyAssignor,
    Subscription,
    assignor_by_name,
    decode_assignment,
    decode_sticky_user_data,
    decode_subscription,
    encode_assignment,
    encode_sticky_user_data,
    encode_subscription,
)
from protocol.errors import ProtocolError

TP = tuple[str, int]


def run(assignor, cluster: dict[str, int], subs: dict[str, Subscription]) -> dict[str, list[TP]]:
    return {m: a.partitions for m, a in assignor.assign(cluster, subs).items()}


def tps(spec: str) -> list[TP]:
    """'t0p0 t1p2' -> [('t0', 0), ('t1', 2)]"""
    out = []
    for item in spec.split():
        topic, _, part = item.rpartition("p")
        out.append((topic, int(part)))
    return sorted(out)


TWO_BY_THREE = {"t0": 3, "t1": 3}
TWO_MEMBERS = {"C0": Subscription(["t0", "t1"]), "C1": Subscription(["t0", "t1"])}


def test_range_java_doc_vector() -> None:
    assert run(RangeAssignor(), TWO_BY_THREE, TWO_MEMBERS) == {
        "C0": tps("t0p0 t0p1 t1p0 t1p1"),
        "C1": tps("t0p2 t1p2"),
    }


def test_roundrobin_java_doc_vector() -> None:
    assert run(RoundRobinAssignor(), TWO_BY_THREE, TWO_MEMBERS) == {
        "C0": tps("t0p0 t0p2 t1p1"),
        "C1": tps("t0p1 t1p0 t1p2"),
    }


UNEQUAL_CLUSTER = {"t0": 1, "t1": 2, "t2": 3}
UNEQUAL_SUBS = {
    "C0": Subscription(["t0"]),
    "C1": Subscription(["t0", "t1"]),
    "C2": Subscription(["t0", "t1", "t2"]),
}


def test_roundrobin_java_doc_unequal_subscriptions() -> None:
    assert run(RoundRobinAssignor(), UNEQUAL_CLUSTER, UNEQUAL_SUBS) == {
        "C0": tps("t0p0"),
        "C1": tps("t1p0"),
        "C2": tps("t1p1 t2p0 t2p1 t2p2"),
    }


@pytest.mark.parametrize("assignor", [StickyAssignor(), CooperativeStickyAssignor()])
def test_sticky_java_doc_unequal_subscriptions(assignor) -> None:
    first = run(assignor, UNEQUAL_CLUSTER, UNEQUAL_SUBS)
    assert first == {"C0": tps("t0p0"), "C1": tps("t1p0 t1p1"), "C2": tps("t2p0 t2p1 t2p2")}
    subs = {m: _owning(assignor, UNEQUAL_SUBS[m], first[m], 1) for m in ("C1", "C2")}
    assert run(assignor, UNEQUAL_CLUSTER, subs) == {"C1": tps("t0p0 t1p0 t1p1"), "C2": tps("t2p0 t2p1 t2p2")}


def test_sticky_java_doc_equal_subscriptions_first_round() -> None:
    cluster = {f"t{i}": 2 for i in range(4)}
    subs = {m: Subscription(list(cluster)) for m in ("C0", "C1", "C2")}
    assert run(StickyAssignor(), cluster, subs) == {
        "C0": tps("t0p0 t1p1 t3p0"),
        "C1": tps("t0p1 t2p0 t3p1"),
        "C2": tps("t1p0 t2p1"),
    }


def test_range_uneven_and_missing_topics() -> None:
    subs = {
        "a": Subscription(["t0", "missing"]),
        "b": Subscription(["t0", "t1"]),
        "c": Subscription(["t1"]),
    }
    assert run(RangeAssignor(), {"t0": 5, "t1": 1}, subs) == {
        "a": tps("t0p0 t0p1 t0p2"),
        "b": tps("t0p3 t0p4 t1p0"),
        "c": [],
    }


def test_static_members_sorted_by_instance_id_first() -> None:
    subs = {
        "m-a": Subscription(["t"], group_instance_id="zeta"),
        "m-b": Subscription(["t"], group_instance_id="alpha"),
        "m-0": Subscription(["t"]),
    }
    assert run(RangeAssignor(), {"t": 4}, subs) == {
        "m-b": [("t", 0), ("t", 1)],
        "m-a": [("t", 2)],
        "m-0": [("t", 3)],
    }
    assert run(RoundRobinAssignor(), {"t": 4}, subs) == {
        "m-b": [("t", 0), ("t", 3)],
        "m-a": [("t", 1)],
        "m-0": [("t", 2)],
    }


def test_registry() -> None:
    assert set(ASSIGNORS) == {"range", "roundrobin", "sticky", "cooperative-sticky"}
    assert assignor_by_name("cooperative-sticky").protocol == "COOPERATIVE"
    assert assignor_by_name("range").protocol == "EAGER"
    with pytest.raises(ValueError):
        assignor_by_name("nope")
    assert RangeAssignor().assign({"t": 1}, {}) == {}


def _owning(assignor, sub: Subscription, owned: list[TP], generation: int) -> Subscription:
    user_data = assignor.subscription_user_data(sub.topics, owned, generation)
    if isinstance(assignor, CooperativeStickyAssignor):
        return Subscription(sub.topics, user_data, list(owned), generation)
    return Subscription(sub.topics, user_data)


def _check_valid(cluster: dict[str, int], subs: dict[str, Subscription], result: dict[str, list[TP]]) -> None:
    assigned = [tp for ps in result.values() for tp in ps]
    assert len(assigned) == len(set(assigned))
    for m, ps in result.items():
        assert all(t in subs[m].topics for t, _ in ps)
    wanted = {(t, p) for s in subs.values() for t in s.topics for p in range(cluster.get(t, 0))}
    assert set(assigned) == wanted


def _eligible(cluster, sub):
    return {(t, p) for t in sub.topics for p in range(cluster.get(t, 0))}


def _check_balanced(cluster, subs, result) -> None:
    sizes = {m: len(ps) for m, ps in result.items()}
    if len({frozenset(t for t in s.topics if cluster.get(t)) for s in subs.values()}) == 1:
        assert max(sizes.values()) - min(sizes.values()) <= 1
    for u, ps in result.items():
        for v in result:
            if sizes[u] >= sizes[v] + 2:
                assert not (set(ps) & _eligible(cluster, subs[v])), (u, v)


topics_st = st.dictionaries(st.sampled_from(["a", "b", "c", "d"]), st.integers(0, 7), min_size=1)


@st.composite
def groups(draw):
    cluster = draw(topics_st)
    names = [*sorted(cluster), "ghost"]
    n = draw(st.integers(1, 6))
    equal = draw(st.booleans())
    common = draw(st.lists(st.sampled_from(names), min_size=1, unique=True))
    subs = {}
    for i in range(n):
        topics = common if equal else draw(st.lists(st.sampled_from(names), min_size=1, unique=True))
        subs[f"m{i}"] = Subscription(list(topics))
    return cluster, subs


@settings(max_examples=150, deadline=None)
@given(group=groups(), churn=st.lists(st.integers(0, 9), max_size=4), data=st.data())
def test_sticky_properties(group, churn, data) -> None:
    cluster, subs = group
    assignor = StickyAssignor()
    first = run(assignor, cluster, subs)
    _check_valid(cluster, subs, first)
    _check_balanced(cluster, subs, first)
    again = run(assignor, cluster, {m: _owning(assignor, s, first[m], 1) for m, s in subs.items()})
    assert again == first
    members = dict(subs)
    for c in churn:
        if c % 2 and len(members) > 1:
            members.pop(sorted(members)[c % len(members)])
        else:
            members[f"new{c}"] = Subscription(list(data.draw(st.sampled_from([s.topics for s in subs.values()]))))
    nxt_subs = {m: _owning(assignor, s, first.get(m, []), 1) for m, s in members.items()}
    nxt = run(assignor, cluster, nxt_subs)
    _check_valid(cluster, nxt_subs, nxt)
    _check_balanced(cluster, nxt_subs, nxt)
    if len({frozenset(t for t in s.topics if cluster.get(t)) for s in members.values()}) == 1:
        total = sum(len(v) for v in nxt.values())
        floor_q, extra = divmod(total, len(members))
        owned = {m: len(first.get(m, [])) for m in members}
        best = sum(min(o, floor_q) for o in owned.values()) + min(extra, sum(o > floor_q for o in owned.values()))
        kept = sum(len(set(nxt[m]) & set(first.get(m, []))) for m in members)
        assert kept == best


@settings(max_examples=150, deadline=None)
@given(group=groups(), joiners=st.integers(1, 3))
def test_cooperative_two_phase(group, joiners) -> None:
    cluster, subs = group
    coop = CooperativeStickyAssignor()
    first = run(coop, cluster, subs)
    members = {m: _owning(coop, s, first[m], 1) for m, s in subs.items()}
    topics = next(iter(subs.values())).topics
    for j in range(joiners):
        members[f"z{j}"] = Subscription(list(topics), struct.pack(">i", -1))
    round1 = run(coop, cluster, members)
    for x, ps in round1.items():
        for y, s in members.items():
            if y != x:
                assert not set(ps) & set(s.owned_partitions), (x, y)
        assert set(members[x].owned_partitions) >= set(ps) - {
            tp for tp in ps if not any(tp in s.owned_partitions for s in members.values())
        }
    members2 = {m: _owning(coop, s, round1[m], 2) for m, s in members.items()}
    round2 = run(coop, cluster, members2)
    revoked_in_round2 = [tp for m in members2 for tp in members2[m].owned_partitions if tp not in round2[m]]
    assert revoked_in_round2 == []
    _check_valid(cluster, members2, round2)
    _check_balanced(cluster, members2, round2)
    eager_target = run(StickyAssignor(), cluster, {m: _owning(StickyAssignor(), s, first.get(m, []), 1)
                                                   for m, s in members.items()})
    assert sorted(len(v) for v in round2.values()) == sorted(len(v) for v in eager_target.values())


def test_cooperative_revokes_before_reassigning() -> None:
    coop = CooperativeStickyAssignor()
    cluster = {"t": 4}
    subs = {
        "A": Subscription(["t"], None, [("t", 0), ("t", 1)], 3),
        "B": Subscription(["t"], None, [("t", 2), ("t", 3)], 3),
        "C": Subscription(["t"], None, [], -1),
    }
    r1 = run(coop, cluster, subs)
    assert r1["C"] == []
    assert sum(map(len, r1.values())) == 3
    subs2 = {m: Subscription(["t"], None, r1[m], 4) for m in subs}
    r2 = run(coop, cluster, subs2)
    assert sorted(len(v) for v in r2.values()) == [1, 1, 2]
    assert len(r2["C"]) == 1
    assert all(set(r1[m]) <= set(r2[m]) for m in ("A", "B"))


def test_generation_resolves_conflicting_claims() -> None:
    sticky = CooperativeStickyAssignor()
    cluster = {"t": 2}
    subs = {
        "old": Subscription(["t"], None, [("t", 0), ("t", 1)], 4),
        "new": Subscription(["t"], None, [("t", 0)], 5),
    }
    result = run(StickyAssignor(), cluster, {m: _owning(StickyAssignor(), s, s.owned_partitions, s.generation_id)
                                             for m, s in subs.items()})
    assert result == {"new": [("t", 0)], "old": [("t", 1)]}
    assert run(sticky, cluster, subs) == {"new": [("t", 0)], "old": [("t", 1)]}
    dup = {
        "x": Subscription(["t"], None, [("t", 0), ("t", 1)], 5),
        "y": Subscription(["t"], None, [("t", 1)], 5),
    }
    assert sorted(len(v) for v in run(StickyAssignor(), cluster, {
        m: _owning(StickyAssignor(), s, s.owned_partitions, 5) for m, s in dup.items()}).values()) == [1, 1]


def test_cooperative_generation_from_user_data_or_field() -> None:
    coop = CooperativeStickyAssignor()
    assert coop.claims(Subscription(["t"], struct.pack(">i", 9), [("t", 0)])) == ([("t", 0)], 9)
    assert coop.claims(Subscription(["t"], struct.pack(">i", 9), [("t", 0)], 11)) == ([("t", 0)], 11)
    assert coop.claims(Subscription(["t"], None, [])) == ([], -1)
    assert coop.claims(Subscription(["t"], b"\x01", [])) == ([], -1)
    assert coop.subscription_user_data(["t"], [], 7) == b"\x00\x00\x00\x07"


# ---- wire format -----------------------------------------------------------------------------


def _kp_sub(version: int) -> bytes:
    return KPSubscription(
        version=version,
        topics=["t0", "t1"],
        user_data=b"\x00\x00\x00\x05",
        owned_partitions=[KPSubscription.TopicPartition(topic="t0", partitions=[0, 2])],
        generation_id=7,
        rack_id="r1",
    ).encode()


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_subscription_bytes_identical_to_kafka_python(version: int) -> None:
    data = _kp_sub(version)
    sub = decode_subscription(data)
    assert sub.topics == ["t0", "t1"]
    assert sub.user_data == b"\x00\x00\x00\x05"
    assert sub.owned_partitions == ([("t0", 0), ("t0", 2)] if version >= 1 else [])
    assert sub.generation_id == (7 if version >= 2 else -1)
    assert sub.rack_id == ("r1" if version >= 3 else None)
    assert encode_subscription(sub, version) == data
    back = KPSubscription.decode(encode_subscription(sub, version))
    assert back.topics == ["t0", "t1"]


def test_subscription_from_kafka_python_cooperative_assignor_roundtrip() -> None:
    data = KPSubscription(version=1, topics=["a", "b"], user_data=b"", owned_partitions=[
        KPSubscription.TopicPartition(topic="b", partitions=[3, 1]),
        KPSubscription.TopicPartition(topic="a", partitions=[0]),
    ]).encode()
    sub = decode_subscription(data, group_instance_id="static-1")
    assert sub.owned_partitions == [("b", 3), ("b", 1), ("a", 0)]
    assert sub.group_instance_id == "static-1"
    assert encode_subscription(sub, 1) == data


def test_subscription_known_bytes() -> None:
    sub = Subscription(["a"], None, [("a", 1)], 2, None)
    assert encode_subscription(sub, 3).hex() == (
        "0003" "00000001" "000161" "ffffffff" "00000001" "000161" "00000001" "00000001" "00000002" "ffff"
    )
    assert encode_subscription(sub, 0).hex() == "0000" "00000001" "000161" "ffffffff"


def test_decoders_accept_higher_versions_and_trailing_bytes() -> None:
    v3 = encode_subscription(Subscription(["x"], b"u", [("x", 0)], 3, "rack"), 3)
    future = struct.pack(">h", 9) + v3[2:] + b"\x00\x01future-field"
    sub = decode_subscription(future)
    assert (sub.topics, sub.user_data, sub.owned_partitions, sub.generation_id, sub.rack_id) == (
        ["x"], b"u", [("x", 0)], 3, "rack")
    a = encode_assignment(Assignment([("x", 0), ("y", 2)], b"ud"), 0)
    fut = decode_assignment(struct.pack(">h", 5) + a[2:] + b"\xff" * 7)
    assert fut.partitions == [("x", 0), ("y", 2)] and fut.user_data == b"ud"


def test_decoders_reject_garbage() -> None:
    with pytest.raises(ProtocolError):
        decode_subscription(b"\xff\xff\x00")
    with pytest.raises(ProtocolError):
        decode_subscription(b"\x00")
    with pytest.raises(ProtocolError):
        decode_subscription(b"\x00\x00\x00\x00\x00\x05\x00\x01")
    assert decode_assignment(b"") == Assignment([], None)


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_assignment_bytes_identical_to_kafka_python(version: int) -> None:
    kp = KPAssignment(version=version, assigned_partitions=[
        KPAssignment.TopicPartition(topic="t1", partitions=[1, 2]),
        KPAssignment.TopicPartition(topic="t0", partitions=[0]),
    ], user_data=None).encode()
    ours = decode_assignment(kp)
    assert ours.partitions == [("t1", 1), ("t1", 2), ("t0", 0)]
    assert ours.user_data is None
    assert encode_assignment(ours, version) == kp
    assert KPAssignment.decode(encode_assignment(Assignment([("a", 4)], b"x"), version)).partitions() == [
        KPTopicPartition("a", 4)
    ]


def test_sticky_user_data_java_layout_and_kafka_python_variant() -> None:
    java_v1 = encode_sticky_user_data([("t0", 0), ("t0", 2), ("t1", 1)], 5)
    assert java_v1.hex() == (
        "00000002" "00027430" "00000002" "00000000" "00000002" "00027431" "00000001" "00000001" "00000005"
    )
    assert decode_sticky_user_data(java_v1) == ([("t0", 0), ("t0", 2), ("t1", 1)], 5)
    java_v0 = encode_sticky_user_data([("t0", 0)], None)
    assert decode_sticky_user_data(java_v0) == ([("t0", 0)], -1)
    assert decode_sticky_user_data(None) == ([], -1)
    assert decode_sticky_user_data(b"\x07") == ([], -1)

    kp_meta = KPSticky._metadata(["t0", "t1"], [KPTopicPartition("t0", 0), KPTopicPartition("t1", 1)], 5)
    sub = decode_subscription(kp_meta.encode())
    assert StickyAssignor().claims(sub) == ([("t0", 0), ("t1", 1)], 5)


def test_eager_sticky_keeps_kafka_python_members_partitions() -> None:
    cluster = {"t0": 2, "t1": 2}
    owned = {"A": [("t0", 1), ("t1", 1)], "B": [("t0", 0), ("t1", 0)]}
    subs = {
        m: decode_subscription(
            KPSticky._metadata(["t0", "t1"], [KPTopicPartition(*tp) for tp in owned[m]], 3).encode()
        )
        for m in owned
    }
    assert run(StickyAssignor(), cluster, subs) == {m: sorted(v) for m, v in owned.items()}
