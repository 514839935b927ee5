"""The work a group's coordinator does per member stays O(1) as the group grows (no timing assertions).

Each test drives the pure coordinator with a fake clock and counts what grows with the group: walks
over the group's member table (a request that walks every member makes a join storm of N members cost
N²), server-side assignor runs, and records written.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from test_consumer_group import Client, Shard, Topics
from test_group_harness import Harness

from broker.coordinator.group import assignors
from broker.coordinator.group.records import GROUP_METADATA_KEY_TYPE
from protocol.error_codes import ErrorCode as E

META = b"\x00\x00\x00\x00\x00\x01\x00\x01t\xff\xff\xff\xff"  # consumer subscription v0 to "t"


class CountingMembers(dict):  # type: ignore[type-arg]
    """A member table that counts the walks over it (lookups by member id are free)."""

    walks = 0

    def _walked(self) -> None:
        CountingMembers.walks += 1

    def __iter__(self) -> Iterator[Any]:
        self._walked()
        return super().__iter__()

    def values(self) -> Any:
        self._walked()
        return super().values()

    def items(self) -> Any:
        self._walked()
        return super().items()

    def keys(self) -> Any:
        self._walked()
        return super().keys()


@pytest.fixture
def walks() -> Iterator[type[CountingMembers]]:
    CountingMembers.walks = 0
    yield CountingMembers


@pytest.fixture
def assignor_runs(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    runs = [0]
    for name, fn in list(assignors.ASSIGNORS.items()):
        def counted(*args: Any, _fn: Any = fn) -> Any:
            runs[0] += 1
            return _fn(*args)
        monkeypatch.setitem(assignors.ASSIGNORS, name, counted)
    return runs


# ------------------------------------------------------------------------------ classic


def test_a_classic_join_storm_walks_the_members_a_constant_number_of_times(walks: type[CountingMembers]) -> None:
    """N members join at once (KIP-394 two-step), sync, heartbeat and commit: the member table is walked
    a fixed number of times (completing the join, storing the assignment), never per member, and the
    group's metadata — a snapshot of every member — is written once for the rebalance, not per join."""
    n = 300
    h = Harness()
    join = {"group_id": "g", "session_timeout_ms": 10_000, "rebalance_timeout_ms": 60_000, "member_id": "",
            "group_instance_id": None, "protocol_type": "consumer",
            "protocols": [{"name": "range", "metadata": META}]}
    first = [h.reply(h.call("join", 5, join)) for _ in range(n)]
    assert {r["error_code"] for r in first} == {E.MEMBER_ID_REQUIRED}
    group = h.c.groups["g"]
    group.members = walks(group.members)
    records_before = len(h.records)
    tokens = [h.call("join", 5, {**join, "member_id": r["member_id"]}) for r in first]
    joined = [h.reply(t) for t in tokens]
    generation, leader = joined[0]["generation_id"], joined[0]["leader"]
    sync = {"group_id": "g", "generation_id": generation, "group_instance_id": None, "assignments": []}
    syncs = [h.call("sync", 3, {**sync, "member_id": r["member_id"],
                                "assignments": [{"member_id": m["member_id"], "assignment": b"a"} for m in r["members"]]
                                if r["member_id"] == leader else []}) for r in joined]
    assert {h.reply(t)["error_code"] for t in syncs} == {E.NONE} and group.state.value == "Stable"
    for r in joined:
        hb = h.call("heartbeat", 3, {"group_id": "g", "generation_id": generation, "member_id": r["member_id"],
                                     "group_instance_id": None})
        assert h.reply(hb)["error_code"] == E.NONE
    assert walks.walks <= 12, f"{walks.walks} walks over {n} members"
    group_records = [key for _, key, _ in h.records[records_before:]
                     if int.from_bytes(key[:2], "big") == GROUP_METADATA_KEY_TYPE]
    assert len(group_records) == 1


# ------------------------------------------------------------------------------ KIP-848


def test_a_consumer_group_join_storm_runs_the_assignor_once_per_interval(walks: type[CountingMembers],
                                                                           assignor_runs: list[int]) -> None:
    """N members join within one assignment interval: the first gets a target at once, the others share
    one assignor run when the interval ends (not one run over every member per join); the heartbeats
    walk no member table; the group settles with every member holding its share."""
    n = 300
    s = Shard(Topics(t=600), assignment_interval_ms=1000, session_timeout_ms=60_000)
    clients = [Client(s, f"m{i:03d}", ["t"]) for i in range(n)]
    clients[0].beat()
    group = s.group()
    group.members = walks(group.members)
    for c in clients[1:]:
        c.beat()
    assert assignor_runs[0] == 1
    assert walks.walks <= 2, f"{walks.walks} walks over the members for {n} joins"
    records = len(s.records)
    assert records <= 4 * n, f"{records} records for {n} joins"
    s.advance(1000)  # the interval ends: one run for everybody who joined
    assert assignor_runs[0] == 2
    walks.walks = 0
    for _ in range(3):
        for c in clients:
            c.beat()
    assert walks.walks == 0, f"{walks.walks} walks over the members in {3 * n} heartbeats"
    assert assignor_runs[0] == 2
    assert group.state == "Stable" and sorted(len(c.partitions()) for c in clients) == [2] * n


def test_the_subscription_counts_follow_the_members() -> None:
    """The per-group counts that replace walking the members stay what the members say, through joins,
    subscription changes, leaves, static replacement and a reload of the records."""
    topics = Topics(a=2, b=2, c=2)
    s = Shard(topics)
    x, y, z = Client(s, "x", ["a", "b"]), Client(s, "y", regex="c|b"), Client(s, "z", ["a"], instance="i1")
    for c in (x, y, z):
        c.beat()
    s.hb("x", x.epoch, topics=["c"], assignor="range")
    s.hb("z", -2, instance="i1")  # a static member leaves for now
    z2 = Client(s, "z2", ["a"], instance="i1")
    z2.beat()
    s.hb("y", -1)

    def expected(group: Any) -> tuple[dict[str, int], dict[str, int], dict[str, int]]:
        names: dict[str, int] = {}
        regexes: dict[str, int] = {}
        chosen: dict[str, int] = {}
        for m in group.members.values():
            for t in m.subscribed_topic_names:
                names[t] = names.get(t, 0) + 1
            if m.subscribed_topic_regex is not None:
                regexes[m.subscribed_topic_regex] = regexes.get(m.subscribed_topic_regex, 0) + 1
            if m.server_assignor is not None:
                chosen[m.server_assignor] = chosen.get(m.server_assignor, 0) + 1
        return names, regexes, chosen

    group = s.group()
    assert (group.topic_counts, group.regex_counts, group.assignor_counts) == expected(group)
    assert group.topic_counts == {"a": 1, "c": 1} and group.assignor_counts == {"range": 1}
    again = Shard(topics)
    for key, value in s.records:
        again.c.load(0, key, value)
    reloaded = again.group()
    assert (reloaded.topic_counts, reloaded.regex_counts, reloaded.assignor_counts) == expected(reloaded)
    assert reloaded.subscribed_names() == group.subscribed_names() == frozenset({"a", "c"})
