"""The coordinator's writes: replies wait for ``write_committed``, ``write_failed`` changes nothing
stored and answers every waiting request with Kafka's mapped error, writes complete in order per
partition, and reads (OffsetFetch, DescribeGroups, ListGroups) see committed state only."""

from __future__ import annotations

from typing import Any

import pytest
from test_group_harness import Harness

from broker.coordinator.group import GroupCoordinator, commit_error, coordinator_partition, group_write_error
from protocol.error_codes import ErrorCode as E


def fetch(h: Harness, group: str, *tps: tuple[str, int]) -> dict[tuple[str, int], int]:
    """Committed offsets as OffsetFetch v7 answers them (-1 = none)."""
    topics: dict[str, list[int]] = {}
    for topic, part in tps:
        topics.setdefault(topic, []).append(part)
    body = {"group_id": group, "require_stable": False,
            "topics": [{"name": t, "partition_indexes": ps} for t, ps in topics.items()]}
    resp = h.reply(h.call("fetch", 7, body))
    return {(t["name"], p["partition_index"]): p["committed_offset"] for t in resp["topics"]
            for p in t["partitions"]}


def commit_token(h: Harness, group: str, offsets: dict[tuple[str, int], tuple[int, str]], **kw: Any) -> int:
    """Send an OffsetCommit v7 without expecting its reply yet; returns its token."""
    topics: dict[str, list[dict[str, Any]]] = {}
    for (topic, part), (off, meta) in offsets.items():
        topics.setdefault(topic, []).append({"partition_index": part, "committed_offset": off,
                                             "committed_leader_epoch": -1, "committed_metadata": meta})
    body = {"group_id": group, "generation_id_or_member_epoch": kw.get("generation", -1),
            "member_id": kw.get("member_id", ""), "group_instance_id": None,
            "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()]}
    return h.call("commit", 7, body)


def commit_errors(h: Harness, token: int) -> dict[tuple[str, int], int]:
    resp = h.reply(token)
    assert resp is not None
    return {(t["name"], p["partition_index"]): p["error_code"] for t in resp["topics"] for p in t["partitions"]}


# ------------------------------------------------------------------------------ offset commits

def test_commit_is_answered_and_visible_only_once_its_write_commits() -> None:
    h = Harness(auto_commit=False)
    t = commit_token(h, "solo", {("t", 0): (5, ""), ("t", 1): (7, "m")})
    (write,) = h.inflight
    assert h.reply(t) is None and len(write.records) == 2
    assert fetch(h, "solo", ("t", 0), ("t", 1)) == {("t", 0): -1, ("t", 1): -1}
    assert h.describe("solo", v=6)[0]["error_code"] == E.GROUP_ID_NOT_FOUND   # no simple group yet
    h.commit_write()
    assert commit_errors(h, t) == {("t", 0): E.NONE, ("t", 1): E.NONE}
    assert fetch(h, "solo", ("t", 0), ("t", 1)) == {("t", 0): 5, ("t", 1): 7}
    assert h.state("solo") == "Empty" and h.c.writes_in_flight() == 0


def test_failed_commit_changes_nothing_and_answers_the_mapped_error() -> None:
    h = Harness(auto_commit=False)
    t = commit_token(h, "solo", {("t", 0): (5, ""), ("t", 1): (7, "x" * 5000)})
    h.fail_write(E.KAFKA_STORAGE_ERROR)
    # the accepted partition gets NOT_COORDINATOR; the refused one keeps its own error
    assert commit_errors(h, t) == {("t", 0): E.NOT_COORDINATOR, ("t", 1): E.OFFSET_METADATA_TOO_LARGE}
    assert fetch(h, "solo", ("t", 0)) == {("t", 0): -1}
    assert "solo" not in h.c.groups and "solo" not in h.c.offsets and not h.records
    assert h.c.writes_in_flight() == 0
    # no offset change is left pending: the group has nothing to delete
    deleted = h.reply(h.call("delete", 2, {"groups_names": ["solo"]}))
    assert deleted["results"][0]["error_code"] == E.GROUP_ID_NOT_FOUND


def test_failed_commit_keeps_the_previous_offset_of_a_live_group() -> None:
    h = Harness()
    (a,) = h.stable_group("g", 1)
    gen = h.c.groups["g"].generation_id
    assert h.commit("g", {("t", 0): (10, "")}, generation=gen, member_id=a) == {("t", 0): E.NONE}
    h.auto_commit = False
    t = commit_token(h, "g", {("t", 0): (20, "")}, generation=gen, member_id=a)
    h.fail_write(E.MESSAGE_TOO_LARGE)
    assert commit_errors(h, t) == {("t", 0): E.INVALID_COMMIT_OFFSET_SIZE}
    assert fetch(h, "g", ("t", 0)) == {("t", 0): 10}
    assert h.state("g") == "Stable"


@pytest.mark.parametrize(("append_error", "for_commit", "for_group"), [
    (E.MESSAGE_TOO_LARGE, E.INVALID_COMMIT_OFFSET_SIZE, E.UNKNOWN_SERVER_ERROR),
    (E.RECORD_LIST_TOO_LARGE, E.INVALID_COMMIT_OFFSET_SIZE, E.UNKNOWN_SERVER_ERROR),
    (E.INVALID_FETCH_SIZE, E.INVALID_COMMIT_OFFSET_SIZE, E.UNKNOWN_SERVER_ERROR),
    (E.UNKNOWN_TOPIC_OR_PARTITION, E.COORDINATOR_NOT_AVAILABLE, E.COORDINATOR_NOT_AVAILABLE),
    (E.NOT_ENOUGH_REPLICAS, E.COORDINATOR_NOT_AVAILABLE, E.COORDINATOR_NOT_AVAILABLE),
    (E.NOT_ENOUGH_REPLICAS_AFTER_APPEND, E.COORDINATOR_NOT_AVAILABLE, E.COORDINATOR_NOT_AVAILABLE),
    (E.REQUEST_TIMED_OUT, E.COORDINATOR_NOT_AVAILABLE, E.COORDINATOR_NOT_AVAILABLE),
    (E.NOT_LEADER_OR_FOLLOWER, E.NOT_COORDINATOR, E.NOT_COORDINATOR),
    (E.KAFKA_STORAGE_ERROR, E.NOT_COORDINATOR, E.NOT_COORDINATOR),
    (E.CORRUPT_MESSAGE, E.CORRUPT_MESSAGE, E.CORRUPT_MESSAGE),
])
def test_append_error_mappings(append_error: E, for_commit: E, for_group: E) -> None:
    assert commit_error(append_error) == for_commit
    assert group_write_error(append_error) == for_group
    h = Harness(auto_commit=False)
    t = commit_token(h, "solo", {("t", 0): (1, "")})
    h.fail_write(append_error)
    assert commit_errors(h, t) == {("t", 0): for_commit}


def test_unknown_error_code_counts_as_unknown_server_error() -> None:
    h = Harness(auto_commit=False)
    t = commit_token(h, "solo", {("t", 0): (1, "")})
    h.fail_write(31000)
    assert commit_errors(h, t) == {("t", 0): E.UNKNOWN_SERVER_ERROR}


# ------------------------------------------------------------------------------ ordering

def test_writes_of_one_partition_complete_in_order() -> None:
    h = Harness(auto_commit=False)
    t1 = commit_token(h, "solo", {("t", 0): (5, "")})
    t2 = commit_token(h, "solo", {("t", 0): (6, "")})
    w1, w2 = h.inflight
    assert w1.partition == w2.partition and w1.write_id < w2.write_id
    with pytest.raises(ValueError, match="in order"):
        h.c.write_committed(h.now, w2.write_id)
    with pytest.raises(ValueError, match="in order"):
        h.c.write_failed(h.now, w2.write_id, E.KAFKA_STORAGE_ERROR)
    h.commit_write(w1)
    assert commit_errors(h, t1) == {("t", 0): E.NONE} and h.reply(t2) is None
    assert fetch(h, "solo", ("t", 0)) == {("t", 0): 5}
    h.fail_write(E.KAFKA_STORAGE_ERROR, w2)
    assert commit_errors(h, t2) == {("t", 0): E.NOT_COORDINATOR}
    assert fetch(h, "solo", ("t", 0)) == {("t", 0): 5}
    with pytest.raises(KeyError):
        h.c.write_committed(h.now, w1.write_id)


def test_a_failed_write_does_not_undo_a_later_one() -> None:
    h = Harness(auto_commit=False)
    t1 = commit_token(h, "solo", {("t", 0): (5, "")})
    t2 = commit_token(h, "solo", {("t", 0): (6, "")})
    h.fail_write(E.NOT_ENOUGH_REPLICAS)
    h.commit_write()
    assert commit_errors(h, t1) == {("t", 0): E.COORDINATOR_NOT_AVAILABLE}
    assert commit_errors(h, t2) == {("t", 0): E.NONE}
    assert fetch(h, "solo", ("t", 0)) == {("t", 0): 6}


def test_partitions_complete_independently() -> None:
    h = Harness(auto_commit=False)
    groups = ["a", "b", "c", "d", "e"]
    parts = {g: coordinator_partition(g, h.config.offsets_topic_num_partitions) for g in groups}
    x, y = next((g1, g2) for g1 in groups for g2 in groups if parts[g1] != parts[g2])
    tx = commit_token(h, x, {("t", 0): (1, "")})
    ty = commit_token(h, y, {("t", 0): (2, "")})
    wx, wy = h.inflight
    h.commit_write(wy)                       # the later write of another partition may finish first
    assert h.reply(tx) is None and commit_errors(h, ty) == {("t", 0): E.NONE}
    h.commit_write(wx)
    assert commit_errors(h, tx) == {("t", 0): E.NONE}


def test_commits_of_one_call_share_one_write_and_one_batch() -> None:
    h = Harness(auto_commit=False)
    commit_token(h, "solo", {("t", p): (p, "") for p in range(10)})
    (write,) = h.inflight
    assert len(write.records) == 10 and {p for p, _, _ in h.last_fx.records} == {write.partition}


# ------------------------------------------------------------------------------ SyncGroup

def _completing_pair(h: Harness) -> tuple[str, str, int, int]:
    """Two members at generation 1, the follower's SyncGroup parked; returns (leader, follower,
    generation, follower's sync token)."""
    a, _ = h.join_new("g")          # generation 1, alone
    b, tb = h.join_new("g")         # parked: a rebalance waits for a
    h.join("g", a)                  # generation 2 with both
    gen = h.reply(tb)["generation_id"]
    leader = h.reply(tb)["leader"]
    follower = b if leader == a else a
    sf = h.sync("g", follower, gen)
    assert h.reply(sf) is None
    return leader, follower, gen, sf


def test_group_becomes_stable_only_once_the_assignment_is_stored() -> None:
    h = Harness(auto_commit=False)
    leader, follower, gen, sf = _completing_pair(h)
    assert not h.inflight   # joining writes nothing
    sl = h.sync("g", leader, gen, [(leader, b"L"), (follower, b"F")])
    assert h.reply(sl) is None and h.reply(sf) is None
    assert h.state("g") == "CompletingRebalance"
    assert h.heartbeat("g", follower, gen) == E.NONE
    h.commit_write()
    assert h.reply(sl)["assignment"] == b"L" and h.reply(sf)["assignment"] == b"F"
    assert h.state("g") == "Stable"


@pytest.mark.parametrize(("append_error", "expected"), [
    (E.KAFKA_STORAGE_ERROR, E.NOT_COORDINATOR),
    (E.MESSAGE_TOO_LARGE, E.UNKNOWN_SERVER_ERROR),
    (E.NOT_ENOUGH_REPLICAS, E.COORDINATOR_NOT_AVAILABLE),
])
def test_failed_assignment_answers_every_parked_member_and_rebalances(append_error: E, expected: E) -> None:
    h = Harness()
    leader, follower, gen, sf = _completing_pair(h)
    h.auto_commit = False
    sl = h.sync("g", leader, gen, [(leader, b"L"), (follower, b"F")])
    h.fail_write(append_error)
    assert h.error(sl) == expected and h.error(sf) == expected
    assert h.reply(sl)["assignment"] == b"" and h.reply(sf)["assignment"] == b""
    group = h.c.groups["g"]
    assert h.state("g") == "PreparingRebalance" and all(m.assignment == b"" for m in group.members.values())
    assert h.heartbeat("g", leader, gen) == E.REBALANCE_IN_PROGRESS
    # the members rejoin and the next assignment is stored normally
    h.auto_commit = True
    j1, j2 = h.join("g", leader), h.join("g", follower)
    gen2 = h.reply(j1)["generation_id"]
    assert gen2 == gen + 1 and h.reply(j2)["generation_id"] == gen2
    new_leader = h.reply(j1)["leader"]
    other = follower if new_leader == leader else leader
    s2 = h.sync("g", other, gen2)
    s1 = h.sync("g", new_leader, gen2, [(leader, b"L2"), (follower, b"F2")])
    assert h.error(s1) == E.NONE and h.error(s2) == E.NONE and h.state("g") == "Stable"


def test_stored_assignment_is_ignored_after_a_rebalance_started_meanwhile() -> None:
    h = Harness()
    leader, follower, gen, sf = _completing_pair(h)
    h.auto_commit = False
    sl = h.sync("g", leader, gen, [(leader, b"L"), (follower, b"F")])
    h.join_new("g")   # a third member: the generation is gone, parked syncs learn it at once
    assert h.error(sl) == E.REBALANCE_IN_PROGRESS and h.error(sf) == E.REBALANCE_IN_PROGRESS
    h.commit_write()  # the stale assignment's write: no second answer, no Stable
    assert h.state("g") == "PreparingRebalance"


# ------------------------------------------------------------------------------ deletion

def test_deleted_group_stays_readable_until_its_tombstones_commit() -> None:
    h = Harness()
    h.commit("solo", {("t", 0): (3, "")})
    h.auto_commit = False
    t = h.call("delete", 2, {"groups_names": ["solo"]})
    assert h.reply(t) is None
    assert fetch(h, "solo", ("t", 0)) == {("t", 0): 3}
    assert h.state("solo") == "Empty"
    listed = h.reply(h.call("list", 4, {"states_filter": []}))["groups"]
    assert [(g["group_id"], g["group_state"]) for g in listed] == [("solo", "Empty")]
    # writers see the deletion: a commit now is refused until the group is gone
    t2 = commit_token(h, "solo", {("t", 0): (4, "")})
    assert commit_errors(h, t2) == {("t", 0): E.COORDINATOR_NOT_AVAILABLE}
    fx = h.commit_write()
    assert h.reply(t)["results"] == [{"group_id": "solo", "error_code": E.NONE}]
    assert fx.removed_groups == ["solo"]
    assert "solo" not in h.c.groups and "solo" not in h.c.offsets
    assert fetch(h, "solo", ("t", 0)) == {("t", 0): -1}


def test_failed_deletion_keeps_the_group_and_its_offsets() -> None:
    h = Harness()
    h.commit("solo", {("t", 0): (3, "")})
    ts = h.c.groups["solo"].current_state_timestamp
    h.auto_commit = False
    t = h.call("delete", 2, {"groups_names": ["solo", "nope"]})
    fx = h.fail_write(E.KAFKA_STORAGE_ERROR)
    assert h.reply(t)["results"] == [{"group_id": "solo", "error_code": E.NOT_COORDINATOR},
                                     {"group_id": "nope", "error_code": E.GROUP_ID_NOT_FOUND}]
    assert not fx.removed_groups
    assert h.state("solo") == "Empty" and h.c.groups["solo"].current_state_timestamp == ts
    assert fetch(h, "solo", ("t", 0)) == {("t", 0): 3}
    h.auto_commit = True
    assert h.reply(h.call("delete", 2, {"groups_names": ["solo"]}))["results"][0]["error_code"] == E.NONE


def test_a_deletion_behind_the_first_offset_commit_leaves_no_group() -> None:
    """DeleteGroups while the group's first commit is in flight (no group yet, its offsets pending): the
    commit then makes a "simple" group, and the deletion's tombstone, after it in the log, removes it —
    live as a reload does."""
    h = Harness(auto_commit=False)
    commit_token(h, "solo", {("t", 0): (5, "")})
    t = h.call("delete", 2, {"groups_names": ["solo"]})
    assert h.reply(t) is None and len(h.inflight) == 2
    h.commit_write()
    assert h.state("solo") == "Empty"  # the commit made the simple group
    fx = h.commit_write()
    assert h.reply(t)["results"] == [{"group_id": "solo", "error_code": E.NONE}]
    assert fx.removed_groups == ["solo"]
    assert "solo" not in h.c.groups and "solo" not in h.c.offsets
    fresh = GroupCoordinator(h.config, now_ms=h.now)
    for partition, key, value in h.records:
        fresh.load(partition, key, value)
    assert "solo" not in fresh.groups


def test_deletion_across_partitions_answers_once_all_writes_completed() -> None:
    h = Harness()
    groups = ["a", "b", "c", "d", "e", "f"]
    by_part: dict[int, str] = {}
    for g in groups:
        by_part.setdefault(coordinator_partition(g, h.config.offsets_topic_num_partitions), g)
    x, y = list(by_part.values())[:2]
    h.commit(x, {("t", 0): (1, "")})
    h.commit(y, {("t", 0): (1, "")})
    h.auto_commit = False
    t = h.call("delete", 2, {"groups_names": [x, y]})
    assert len(h.inflight) == 2
    h.fail_write(E.NOT_LEADER_OR_FOLLOWER)
    assert h.reply(t) is None
    h.commit_write()
    assert h.reply(t)["results"] == [{"group_id": x, "error_code": E.NOT_COORDINATOR},
                                     {"group_id": y, "error_code": E.NONE}]
    assert x in h.c.groups and y not in h.c.groups


def test_failed_offset_delete_keeps_the_offsets() -> None:
    h = Harness()
    h.commit("solo", {("t", 0): (3, ""), ("t", 1): (4, "")})
    h.auto_commit = False
    body = {"group_id": "solo", "topics": [{"name": "t", "partitions": [{"partition_index": 0}]}]}
    t = h.call("offset_delete", 0, body)
    assert h.reply(t) is None and fetch(h, "solo", ("t", 0)) == {("t", 0): 3}
    h.fail_write(E.KAFKA_STORAGE_ERROR)
    assert h.reply(t) == {"error_code": E.NOT_COORDINATOR, "throttle_time_ms": 0, "topics": []}
    assert fetch(h, "solo", ("t", 0), ("t", 1)) == {("t", 0): 3, ("t", 1): 4}
    t = h.call("offset_delete", 0, body)
    h.commit_write()
    assert h.error(t) == E.NONE and fetch(h, "solo", ("t", 0), ("t", 1)) == {("t", 0): -1, ("t", 1): 4}


def test_offset_delete_of_an_offset_still_in_flight_writes_its_tombstone() -> None:
    h = Harness(auto_commit=False)
    commit_token(h, "solo", {("t", 0): (3, "")})
    h.commit_write()
    commit_token(h, "solo", {("t", 1): (4, "")})   # in flight
    h.call("offset_delete", 0, {"group_id": "solo", "topics": [{"name": "t", "partitions": [
        {"partition_index": 1}]}]})
    assert [k.partition for k, v in _decoded(h.inflight[1].records)] == [1]
    h.commit_write()
    h.commit_write()
    assert fetch(h, "solo", ("t", 1)) == {("t", 1): -1}


# ------------------------------------------------------------------------------ static members

def test_failed_static_rejoin_gives_the_old_member_id_back() -> None:
    h = Harness()
    old = h.reply(h.join("g", instance="i-1"))["member_id"]
    assert h.error(h.sync("g", old, 1, [(old, b"x")])) == E.NONE
    h.auto_commit = False
    t = h.join("g", instance="i-1")
    assert h.reply(t) is None
    new = next(iter(h.c.groups["g"].members))
    assert new != old
    h.fail_write(E.KAFKA_STORAGE_ERROR)
    resp = h.reply(t)
    assert resp["error_code"] == E.NOT_COORDINATOR and resp["member_id"] == "" and resp["generation_id"] == 1
    group = h.c.groups["g"]
    assert list(group.members) == [old] and group.static_members == {"i-1": old} and group.leader_id == old
    assert h.heartbeat("g", old, 1, instance="i-1") == E.NONE
    assert h.heartbeat("g", new, 1, instance="i-1") == E.FENCED_INSTANCE_ID
    h.advance(9_000)   # the old id's session was re-armed by the revert
    assert h.heartbeat("g", old, 1, instance="i-1") == E.NONE


# ------------------------------------------------------------------------------ reload

def test_replaying_committed_writes_reproduces_committed_state() -> None:
    h = Harness(auto_commit=False)
    commit_token(h, "a", {("t", 0): (1, "")})
    commit_token(h, "a", {("t", 0): (2, "")})
    commit_token(h, "b", {("t", 0): (9, "")})
    while h.inflight:
        write = h.inflight[0]
        if any(v is not None and b"\x00\x00\x00\x00\x00\x00\x00\x02" in v for _, v in write.records):
            h.fail_write(E.KAFKA_STORAGE_ERROR, write)
        else:
            h.commit_write(write)
    fresh = GroupCoordinator(h.config, now_ms=h.now)
    for partition, key, value in h.records:
        fresh.load(partition, key, value)
    assert {g: {tp: e.offset for tp, e in o.items()} for g, o in fresh.offsets.items()} == \
        {g: {tp: e.offset for tp, e in o.items()} for g, o in h.c.offsets.items()} == \
        {"a": {("t", 0): 1}, "b": {("t", 0): 9}}


def _decoded(records: list[tuple[bytes, bytes | None]]) -> list[tuple[Any, bytes | None]]:
    from broker.coordinator.group.records import decode_key

    return [(decode_key(k), v) for k, v in records]
