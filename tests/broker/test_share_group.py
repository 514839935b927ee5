"""Share groups (KIP-932) on the pure group coordinator, with a fake clock, fake topic metadata and a
fake share coordinator answering the share-state initialisations."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_consumer_group import Topics

from broker.coordinator.group import GroupConfig, GroupCoordinator
from broker.coordinator.group.share_assignor import assign_simple
from broker.coordinator.group.share_group import ShareGroupConfig
from protocol.api import ApiKey
from protocol.error_codes import ErrorCode as E

HB = ApiKey.SHARE_GROUP_HEARTBEAT


class Shard:
    """A coordinator whose writes commit at once (or fail, while ``fail_writes``), with a share coordinator
    that initialises share state when ``auto_init`` (else the requests wait in ``inits``)."""

    def __init__(self, topics: Topics, **share: Any) -> None:
        self.topics = topics
        self.now = 1_000
        self.config = GroupConfig(share=ShareGroupConfig(**{"heartbeat_interval_ms": 100, "session_timeout_ms": 1000,
                                                            "max_size": 5, "initialize_retry_interval_ms": 500,
                                                            **share}))
        self.c = self.new()
        self.records: list[tuple[bytes, bytes | None]] = []
        self.tokens = 0
        self.auto_init = True
        self.fail_writes = False
        self.inits: list[Any] = []

    def new(self) -> GroupCoordinator:
        return GroupCoordinator(self.config, now_ms=self.now, topics=self.topics,
                                partition_count=self.topics.partition_count)

    def run(self, fx: Any) -> dict[Any, Any]:
        replies = dict(fx.replies)
        for w in fx.writes:
            if self.fail_writes:
                replies.update(self.run(self.c.write_failed(self.now, w.write_id, E.NOT_ENOUGH_REPLICAS)))
                continue
            self.records.extend(w.records)
            replies.update(self.run(self.c.write_committed(self.now, w.write_id)))
        self.inits += self.c.share.take_initializations()
        while self.auto_init and self.inits:
            self.answer_init(self.inits.pop(0), ok=True)
        return replies

    def answer_init(self, init: Any, ok: bool) -> None:
        self.tokens += 1
        self.run(self.c.share_initialized(self.now, init.group_id, init.topic_id, list(init.partitions), ok,
                                          self.tokens))

    def call(self, key: int, version: int, req: dict[str, Any]) -> dict[str, Any]:
        self.tokens += 1
        token = self.tokens
        replies = self.run(self.c.handle(key, self.now, version, req, token, client_id="cid", client_host="/1.2.3.4"))
        return replies[token]

    def hb(self, member_id: str, epoch: int, topics: list[str] | None = None, group: str = "g",
           rack: str | None = None) -> dict[str, Any]:
        return self.call(HB, 1, {"group_id": group, "member_id": member_id, "member_epoch": epoch, "rack_id": rack,
                                 "subscribed_topic_names": topics})

    def advance(self, ms: int) -> None:
        self.now += ms
        self.run(self.c.poll(self.now))

    def group(self, gid: str = "g") -> Any:
        return self.c.share.groups[gid]


class Member:
    """A share consumer following the protocol: it keeps its epoch and the last assignment it got."""

    def __init__(self, shard: Shard, member_id: str, topics: list[str]) -> None:
        self.shard, self.member_id, self.topics = shard, member_id, topics
        self.epoch = 0
        self.assignment: set[tuple[uuid.UUID, int]] = set()

    def beat(self) -> dict[str, Any]:
        resp = self.shard.hb(self.member_id, self.epoch, self.topics if self.epoch == 0 else None)
        assert resp["error_code"] == E.NONE, resp
        self.epoch = resp["member_epoch"]
        if resp["assignment"] is not None:
            self.assignment = {(tp["topic_id"], p) for tp in resp["assignment"]["topic_partitions"]
                               for p in tp["partitions"]}
        return resp


def settle(members: list[Member], rounds: int = 3) -> None:
    for _ in range(rounds):
        for m in members:
            m.beat()


def test_partitions_are_assigned_once_their_share_state_is_initialised() -> None:
    shard = Shard(Topics(t=2))
    shard.auto_init = False
    resp = shard.hb("m1", 0, ["t"])
    assert resp["error_code"] == E.NONE and resp["member_epoch"] == 1
    assert resp["assignment"] == {"topic_partitions": []}
    assert resp["heartbeat_interval_ms"] == 100
    [init] = shard.inits
    tid = shard.topics.topic_id("t")
    assert (init.group_id, init.topic_id, dict(init.partitions), init.state_epoch) == ("g", tid, {0: -1, 1: -1}, 1)
    assert shard.group().initializing == {tid: ("t", frozenset({0, 1}))}
    shard.auto_init = True
    shard.run(type("Fx", (), {"replies": [], "writes": []})())  # the share coordinator answers
    assert shard.group().initialized == {tid: ("t", frozenset({0, 1}))} and not shard.group().initializing
    assert shard.group().group_epoch == 2
    resp = shard.hb("m1", 1)
    assert resp["member_epoch"] == 2
    assert resp["assignment"] == {"topic_partitions": [{"topic_id": tid, "partitions": [0, 1]}]}
    # nothing changed: no assignment in the answer, no records written
    before = len(shard.records)
    resp = shard.hb("m1", 2)
    assert resp["assignment"] is None and resp["member_epoch"] == 2 and len(shard.records) == before


def test_several_members_share_one_partition() -> None:
    shard = Shard(Topics(t=1))
    members = [Member(shard, f"m{i}", ["t"]) for i in range(3)]
    settle(members)
    tid = shard.topics.topic_id("t")
    assert all(m.assignment == {(tid, 0)} for m in members)
    assert shard.group().state == "Stable"


@settings(max_examples=60, deadline=None)
@given(members=st.integers(1, 12), partitions=st.integers(1, 12), previous=st.integers(0, 12))
def test_simple_assignor_balances_and_shares(members: int, partitions: int, previous: int) -> None:
    tid = uuid.UUID(int=7)
    subs = {f"m{i:02d}": frozenset({tid}) for i in range(members)}
    before = assign_simple({f"m{i:02d}": frozenset({tid}) for i in range(previous)}, {tid: frozenset(range(partitions))},
                           {})
    out = assign_simple(subs, {tid: frozenset(range(partitions))}, before)
    counts = [len(out[m].get(tid, ())) for m in subs]
    assert max(counts) - min(counts) <= 1
    assert min(counts) >= 1
    copies = 1 if members <= partitions else -(-members // partitions)
    holders = {p: sum(1 for m in subs if p in out[m].get(tid, ())) for p in range(partitions)}
    assert set(holders.values()) == {copies}


def test_assignor_is_sticky_within_balance() -> None:
    tid = uuid.UUID(int=1)
    parts = {tid: frozenset(range(4))}
    first = assign_simple({"a": frozenset({tid}), "b": frozenset({tid})}, parts, {})
    second = assign_simple({"a": frozenset({tid}), "b": frozenset({tid}), "c": frozenset({tid})}, parts, first)
    for m in ("a", "b"):
        assert len(second[m][tid] & first[m][tid]) >= 1  # each keeps part of what it had
    assert sorted(len(second[m].get(tid, ())) for m in second) == [1, 1, 2]


def test_member_epochs_are_checked() -> None:
    shard = Shard(Topics(t=2))
    m = Member(shard, "m1", ["t"])
    settle([m])
    current = m.epoch
    assert shard.hb("m1", current + 1)["error_code"] == E.FENCED_MEMBER_EPOCH
    Member(shard, "m2", ["t"]).beat()  # a new epoch for the group
    resp = shard.hb("m1", current)
    assert resp["error_code"] == E.NONE and resp["member_epoch"] > current
    # the previous epoch is accepted (a lost response), anything older is fenced
    assert shard.hb("m1", current)["error_code"] == E.NONE
    if current > 1:
        assert shard.hb("m1", current - 1)["error_code"] == E.FENCED_MEMBER_EPOCH
    assert shard.hb("nobody", 3)["error_code"] == E.UNKNOWN_MEMBER_ID
    assert shard.hb("m1", 3, group="other")["error_code"] == E.GROUP_ID_NOT_FOUND


@pytest.mark.parametrize(("member_id", "epoch", "topics"), [
    ("", 0, ["t"]),            # a member id is required
    ("x" * 37, 0, ["t"]),      # at most 36 characters
    ("m", 0, None),            # joining needs a subscription
    ("m", 0, []),
    ("m", -2, None),           # -1 leaves; anything lower is invalid
])
def test_malformed_heartbeats_are_invalid_requests(member_id: str, epoch: int, topics: list[str] | None) -> None:
    shard = Shard(Topics(t=1))
    resp = shard.hb(member_id, epoch, topics)
    assert resp["error_code"] == E.INVALID_REQUEST and resp["member_epoch"] == -1
    assert "g" not in shard.c.share.groups


def test_group_max_size() -> None:
    shard = Shard(Topics(t=1), max_size=2)
    settle([Member(shard, "a", ["t"]), Member(shard, "b", ["t"])], 1)
    assert shard.hb("c", 0, ["t"])["error_code"] == E.GROUP_MAX_SIZE_REACHED


def test_session_expiry_fences_a_member_and_reassigns() -> None:
    shard = Shard(Topics(t=2))
    a, b = Member(shard, "a", ["t"]), Member(shard, "b", ["t"])
    settle([a, b])
    assert len(a.assignment) == len(b.assignment) == 1
    for _ in range(6):  # b keeps heartbeating, a does not
        shard.advance(300)
        b.beat()
    assert set(shard.group().members) == {"b"}
    assert len(b.assignment) == 2
    assert shard.hb("a", a.epoch)["error_code"] == E.UNKNOWN_MEMBER_ID


def test_leaving() -> None:
    shard = Shard(Topics(t=2))
    a, b = Member(shard, "a", ["t"]), Member(shard, "b", ["t"])
    settle([a, b])
    resp = shard.hb("a", -1)
    assert resp["error_code"] == E.NONE and resp["member_epoch"] == -1
    b.beat()
    assert len(b.assignment) == 2
    assert shard.hb("a", -1)["error_code"] == E.UNKNOWN_MEMBER_ID
    assert shard.hb("b", -1)["error_code"] == E.NONE
    assert shard.group().state == "Empty"


def test_a_heartbeat_that_changes_nothing_writes_nothing_and_any_change_still_counts() -> None:
    shard = Shard(Topics(t=2))
    a = Member(shard, "a", ["t"])
    settle([a])
    written = len(shard.records)
    for _ in range(3):
        assert a.beat()["assignment"] is None
    assert len(shard.records) == written
    assert shard.hb("a", a.epoch, rack="r1")["error_code"] == E.NONE  # a new rack is written
    assert len(shard.records) == written + 1 and shard.group().members["a"].rack_id == "r1"
    b = Member(shard, "b", ["t"])
    settle([a, b])  # the steady member gives up a partition when another joins
    assert len(a.assignment) == len(b.assignment) == 1


def test_a_group_loaded_while_its_topics_changed_sees_the_change_at_its_first_heartbeat() -> None:
    topics = Topics(t=1)
    shard = Shard(topics)
    a = Member(shard, "a", ["t"])
    settle([a])
    tid = topics.topic_id("t")
    topics.topics["t"] = (tid, 2)  # grows while no coordinator has the group (no metadata_changed)
    loaded = shard.new()
    for key, value in shard.records:
        loaded.load(0, key, value)
    shard.run(loaded.complete_load(shard.now))
    shard.c = loaded
    settle([a])
    assert a.assignment == {(tid, 0), (tid, 1)}


def test_the_records_rebuild_the_groups() -> None:
    shard = Shard(Topics(t=3, u=1))
    a, b = Member(shard, "a", ["t"]), Member(shard, "b", ["t", "u"])
    settle([a, b])
    loaded = shard.new()
    for key, value in shard.records:
        loaded.load(0, key, value)
    loaded.complete_load(shard.now)
    assert loaded.share.groups == shard.c.share.groups
    assert loaded.share.take_initializations() == []  # everything was initialised


def test_a_load_retries_unfinished_initialisations() -> None:
    shard = Shard(Topics(t=2))
    shard.auto_init = False
    shard.hb("a", 0, ["t"])
    loaded = shard.new()
    for key, value in shard.records:
        loaded.load(0, key, value)
    loaded.complete_load(shard.now)
    [init] = loaded.share.take_initializations()
    assert dict(init.partitions) == {0: -1, 1: -1}


def test_failed_initialisation_is_retried() -> None:
    shard = Shard(Topics(t=1))
    shard.auto_init = False
    shard.hb("a", 0, ["t"])
    shard.answer_init(shard.inits.pop(), ok=False)
    assert not shard.inits
    shard.advance(600)
    assert len(shard.inits) == 1
    shard.auto_init = True
    shard.advance(1)
    assert shard.group().initialized


def test_a_failed_write_reverts_the_group() -> None:
    shard = Shard(Topics(t=1))
    a = Member(shard, "a", ["t"])
    settle([a])
    stored = shard.group().group_epoch
    shard.fail_writes = True
    resp = shard.hb("b", 0, ["t"])
    assert resp["error_code"] == E.COORDINATOR_NOT_AVAILABLE and resp["assignment"] is None
    assert set(shard.group().members) == {"a"} and shard.group().group_epoch == stored
    shard.fail_writes = False
    Member(shard, "b", ["t"]).beat()
    assert set(shard.group().members) == {"a", "b"}


def test_group_types_do_not_mix() -> None:
    shard = Shard(Topics(t=1))
    settle([Member(shard, "a", ["t"])], 1)
    # a consumer group's heartbeat, and classic requests, for the share group's id
    resp = shard.call(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, {
        "group_id": "g", "member_id": "c", "member_epoch": 0, "instance_id": None, "rack_id": None,
        "rebalance_timeout_ms": 5000, "subscribed_topic_names": ["t"], "subscribed_topic_regex": None,
        "server_assignor": None, "topic_partitions": []})
    assert resp["error_code"] == E.GROUP_ID_NOT_FOUND
    join = shard.call(ApiKey.JOIN_GROUP, 5, {"group_id": "g", "session_timeout_ms": 10000,
                                             "rebalance_timeout_ms": 10000, "member_id": "",
                                             "group_instance_id": None, "protocol_type": "consumer",
                                             "protocols": [{"name": "range", "metadata": b""}]})
    assert join["error_code"] == E.INCONSISTENT_GROUP_PROTOCOL
    assert shard.call(ApiKey.HEARTBEAT, 3, {"group_id": "g", "generation_id": 1, "member_id": "x",
                                            "group_instance_id": None})["error_code"] == E.UNKNOWN_MEMBER_ID
    # a share heartbeat for a consumer group's id
    shard.call(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, {
        "group_id": "cg", "member_id": "c", "member_epoch": 0, "instance_id": None, "rack_id": None,
        "rebalance_timeout_ms": 5000, "subscribed_topic_names": ["t"], "subscribed_topic_regex": None,
        "server_assignor": None, "topic_partitions": []})
    resp = shard.hb("s", 0, ["t"], group="cg")
    assert resp["error_code"] == E.GROUP_ID_NOT_FOUND and "not a share group" in resp["error_message"]


def test_list_describe_and_delete() -> None:
    shard = Shard(Topics(t=2))
    a = Member(shard, "a", ["t"])
    settle([a])
    shard.hb("e", 0, ["t"], group="empty")
    shard.hb("e", -1, group="empty")
    listed = shard.call(ApiKey.LIST_GROUPS, 5, {"states_filter": [], "types_filter": ["Share"]})["groups"]
    assert sorted((g["group_id"], g["group_state"], g["group_type"], g["protocol_type"]) for g in listed) == [
        ("empty", "Empty", "share", "share"), ("g", "Stable", "share", "share")]
    assert shard.call(ApiKey.LIST_GROUPS, 5, {"states_filter": [], "types_filter": ["classic"]})["groups"] == []
    assert shard.call(ApiKey.LIST_GROUPS, 5, {"states_filter": ["stable"], "types_filter": []})["groups"] == [
        {"group_id": "g", "protocol_type": "share", "group_state": "Stable", "group_type": "share"}]
    described = shard.call(ApiKey.DESCRIBE_GROUPS, 6, {"groups": ["g"], "include_authorized_operations": False})
    assert described["groups"][0]["error_code"] == E.GROUP_ID_NOT_FOUND
    assert described["groups"][0]["group_state"] == "Dead"
    desc = shard.call(ApiKey.SHARE_GROUP_DESCRIBE, 1, {"group_ids": ["g", "nope", ""],
                                                       "include_authorized_operations": False})["groups"]
    tid = shard.topics.topic_id("t")
    assert desc[0]["error_code"] == E.NONE and desc[0]["group_state"] == "Stable"
    assert desc[0]["assignor_name"] == "simple"
    [member] = desc[0]["members"]
    assert (member["member_id"], member["client_id"], member["client_host"], member["subscribed_topic_names"]) == \
        ("a", "cid", "/1.2.3.4", ["t"])
    assert member["assignment"] == {"topic_partitions": [{"topic_id": tid, "topic_name": "t", "partitions": [0, 1]}]}
    assert [d["error_code"] for d in desc[1:]] == [E.GROUP_ID_NOT_FOUND, E.INVALID_GROUP_ID]
    deleted = shard.call(ApiKey.DELETE_GROUPS, 2, {"groups_names": ["g", "empty"]})["results"]
    assert [(r["group_id"], r["error_code"]) for r in deleted] == [("g", E.NON_EMPTY_GROUP), ("empty", E.NONE)]
    assert "empty" not in shard.c.share.groups
    loaded = shard.new()
    for key, value in shard.records:
        loaded.load(0, key, value)
    assert set(loaded.share.groups) == {"g"}


def test_new_partitions_are_initialised_and_deleted_topics_forgotten() -> None:
    topics = Topics(t=1)
    shard = Shard(topics)
    a = Member(shard, "a", ["t"])
    settle([a])
    tid = topics.topic_id("t")
    topics.topics["t"] = (tid, 3)
    shard.run(shard.c.metadata_changed(shard.now))
    a.beat()
    assert a.assignment == {(tid, 0), (tid, 1), (tid, 2)}
    del topics.topics["t"]
    shard.run(shard.c.metadata_changed(shard.now))
    a.beat()
    assert a.assignment == set() and not shard.group().initialized


def test_offsets_admin_state_changes() -> None:
    shard = Shard(Topics(t=2))
    a = Member(shard, "a", ["t"])
    settle([a])
    tid = shard.topics.topic_id("t")
    topics = {tid: ("t", frozenset({0}))}

    def change(group: str = "g", **kw: bool) -> dict[str, Any]:
        shard.tokens += 1
        return shard.run(shard.c.share_state_change(shard.now, group, topics, shard.tokens, **kw))[shard.tokens]

    assert change()["error_code"] == E.NON_EMPTY_GROUP
    shard.hb("a", -1)
    before = shard.group().group_epoch
    marked = change()  # AlterShareGroupOffsets: initialised again, under a new (state) epoch
    assert marked["error_code"] == E.NONE and marked["state_epoch"] == before + 1
    assert shard.group().initializing == topics and shard.group().initialized == {tid: ("t", frozenset({1}))}
    change(done=True)
    assert shard.group().initialized == {tid: ("t", frozenset({0, 1}))} and not shard.group().initializing
    change(deleting=True)  # DeleteShareGroupOffsets
    assert shard.group().deleting == {tid: "t"} and not shard.group().initialized
    change(deleting=True, done=True)
    assert not shard.group().deleting
    assert change("unknown", deleting=True)["error_code"] == E.GROUP_ID_NOT_FOUND
    created = change("fresh")  # altering the offsets of a group that does not exist creates it
    assert created["error_code"] == E.NONE and shard.c.share.groups["fresh"].initializing == topics
