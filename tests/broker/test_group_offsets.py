"""Group coordinator: offsets (commit/fetch/delete/expiry), admin APIs, record bytes and reload."""

from __future__ import annotations

from typing import Any

from kafka.protocol.old.consumer_protocol import ConsumerProtocolMemberMetadata_v0
from test_group_harness import START, Harness

from broker.coordinator.group import GroupConfig, GroupCoordinator
from broker.coordinator.group.records import (
    decode_group_metadata_value,
    decode_key,
    decode_offset_commit_value,
    encode_group_metadata_key,
    encode_offset_commit_key,
    encode_offset_commit_value,
    subscribed_topics,
)

NONE = 0
UNKNOWN_TOPIC_OR_PARTITION = 3
OFFSET_METADATA_TOO_LARGE = 12
ILLEGAL_GENERATION = 22
UNKNOWN_MEMBER_ID = 25
REBALANCE_IN_PROGRESS = 27
NON_EMPTY_GROUP = 68
GROUP_ID_NOT_FOUND = 69
FENCED_INSTANCE_ID = 82
GROUP_SUBSCRIBED_TO_TOPIC = 86

DAY = 24 * 3600 * 1000


def consumer_meta(*topics: str) -> bytes:
    """A real consumer-protocol subscription, as kafka-python encodes it."""
    return ConsumerProtocolMemberMetadata_v0(0, list(topics), b"").encode()


# ------------------------------------------------------------------------------- record bytes

def test_record_bytes_are_kafkas_format() -> None:
    key = encode_offset_commit_key("g", "t", 3)
    assert key.hex() == "0001" + "0001" + "67" + "0001" + "74" + "00000003"
    value = encode_offset_commit_value(42, 5, "m", 1000)
    assert value.hex() == "0003" + f"{42:016x}" + "00000005" + "0001" + "6d" + f"{1000:016x}"
    v1 = encode_offset_commit_value(42, -1, "", 1000, expire_timestamp=2000)
    assert v1.hex() == "0001" + f"{42:016x}" + "0000" + f"{1000:016x}" + f"{2000:016x}"
    assert decode_offset_commit_value(v1)["expire_timestamp"] == 2000
    assert encode_group_metadata_key("g").hex() == "0002" + "0001" + "67"
    k = decode_key(key)
    assert (k.record_type, k.group, k.topic, k.partition) == (1, "g", "t", 3)
    legacy = bytes.fromhex("0000") + key[2:]
    assert decode_key(legacy).topic == "t"
    assert decode_key(bytes.fromhex("0003") + b"\x00\x01g") is None   # KIP-848 records: not ours


def test_subscribed_topics_parses_consumer_protocol() -> None:
    assert subscribed_topics(consumer_meta("a", "b")) == frozenset({"a", "b"})
    assert subscribed_topics(b"\x00") is None
    assert subscribed_topics(b"") is None


# ------------------------------------------------------------------------------- OffsetCommit

def test_simple_consumer_commit_creates_empty_group() -> None:
    h = Harness()
    assert h.commit("solo", {("t", 0): (10, "x"), ("t", 1): (20, None)}) == {("t", 0): NONE, ("t", 1): NONE}
    assert h.state("solo") == "Empty"
    assert h.describe("solo")[0]["protocol_type"] == ""
    recs = h.decoded_records()
    assert [(k.topic, k.partition, v["offset"], v["metadata"], v["commit_timestamp"]) for k, v in recs] == [
        ("t", 0, 10, "x", START), ("t", 1, 20, "", START)]


def test_commit_to_unknown_group_with_generation() -> None:
    h = Harness()
    assert h.commit("nope", {("t", 0): (1, "")}, generation=1, member_id="m") == {("t", 0): ILLEGAL_GENERATION}
    assert h.commit("nope", {("t", 0): (1, "")}, generation=1, member_id="m", v=9) == {("t", 0): GROUP_ID_NOT_FOUND}
    assert "nope" not in h.c.groups and not h.records


def test_commit_validation_order() -> None:
    h = Harness()
    a, b = h.stable_group("g", 2)
    gen = h.c.groups["g"].generation_id
    tp = {("t", 0): (5, "")}
    assert h.commit("g", tp, generation=gen, member_id="ghost") == {("t", 0): UNKNOWN_MEMBER_ID}
    assert h.commit("g", tp, generation=gen - 1, member_id=a) == {("t", 0): ILLEGAL_GENERATION}   # stale
    assert h.commit("g", tp) == {("t", 0): UNKNOWN_MEMBER_ID}            # no member info, group not empty
    assert h.commit("g", tp, generation=gen, member_id=a) == {("t", 0): NONE}
    # PreparingRebalance: commits from the current generation still succeed
    h.join("g", a)
    assert h.state("g") == "PreparingRebalance"
    assert h.commit("g", tp, generation=gen, member_id=b) == {("t", 0): NONE}
    h.join("g", b)
    assert h.state("g") == "CompletingRebalance"
    assert h.commit("g", tp, generation=gen + 1, member_id=b) == {("t", 0): REBALANCE_IN_PROGRESS}
    assert h.commit("g", tp, generation=gen, member_id=b) == {("t", 0): ILLEGAL_GENERATION}


def test_commit_static_member_fencing_and_unknown_instance() -> None:
    h = Harness()
    a = h.reply(h.join("g", instance="i"))["member_id"]
    h.sync("g", a, 1, [(a, b"")])
    tp = {("t", 0): (5, "")}
    assert h.commit("g", tp, generation=1, member_id="x", instance="i") == {("t", 0): FENCED_INSTANCE_ID}
    assert h.commit("g", tp, generation=1, member_id=a, instance="j") == {("t", 0): UNKNOWN_MEMBER_ID}
    assert h.commit("g", tp, generation=1, member_id=a, instance="i") == {("t", 0): NONE}


def test_commit_metadata_too_large_and_unknown_topic() -> None:
    counts = {"t": 2}
    h = Harness(partition_count=counts.get, offset_metadata_max_bytes=10)
    res = h.commit("g", {("t", 0): (1, "x" * 10), ("t", 1): (1, "x" * 11), ("t", 2): (1, ""), ("u", 0): (1, "")})
    assert res == {("t", 0): NONE, ("t", 1): OFFSET_METADATA_TOO_LARGE, ("t", 2): UNKNOWN_TOPIC_OR_PARTITION,
                   ("u", 0): UNKNOWN_TOPIC_OR_PARTITION}
    assert len(h.records) == 1


def test_commit_v2_retention_writes_expire_timestamp_and_expires() -> None:
    h = Harness(offsets_retention_check_interval_ms=1000)
    h.commit("g", {("t", 0): (1, "")}, v=2, retention=5000)
    ((_, value),) = h.decoded_records()
    assert value["expire_timestamp"] == START + 5000
    h.advance(4000)
    assert ("t", 0) in h.c.offsets["g"]
    h.advance(1000)
    assert "g" not in h.c.offsets


def test_commit_leader_epoch_v6() -> None:
    h = Harness()
    h.commit("g", {("t", 0): (7, "")}, v=6, epoch=3)
    resp = h.reply(h.call("fetch", 5, {"group_id": "g", "topics": [{"name": "t", "partition_indexes": [0]}]}))
    assert resp["topics"][0]["partitions"][0]["committed_leader_epoch"] == 3


# ------------------------------------------------------------------------------- OffsetFetch

def test_offset_fetch_versions() -> None:
    h = Harness()
    h.commit("g", {("t", 1): (11, "a"), ("t", 0): (10, "b"), ("s", 0): (5, "")})
    r1 = h.reply(h.call("fetch", 1, {"group_id": "g", "topics": [{"name": "t", "partition_indexes": [0, 9]}]}))
    assert r1 == {"topics": [{"name": "t", "partitions": [
        {"partition_index": 0, "committed_offset": 10, "metadata": "b", "error_code": NONE},
        {"partition_index": 9, "committed_offset": -1, "metadata": "", "error_code": NONE}]}]}
    r7 = h.reply(h.call("fetch", 7, {"group_id": "g", "topics": None, "require_stable": True}))
    assert r7["error_code"] == NONE and r7["throttle_time_ms"] == 0
    assert [(t["name"], [p["partition_index"] for p in t["partitions"]]) for t in r7["topics"]] == [
        ("s", [0]), ("t", [0, 1])]
    assert r7["topics"][1]["partitions"][1]["committed_leader_epoch"] == -1
    r_unknown = h.reply(h.call("fetch", 3, {"group_id": "zzz", "topics": None}))
    assert r_unknown["topics"] == [] and r_unknown["error_code"] == NONE


def test_offset_fetch_v8_multi_group() -> None:
    h = Harness()
    h.commit("g1", {("t", 0): (1, "")})
    h.commit("g2", {("t", 0): (2, "")})
    r = h.reply(h.call("fetch", 8, {"groups": [
        {"group_id": "g1", "topics": [{"name": "t", "partition_indexes": [0]}]},
        {"group_id": "g2", "topics": None},
        {"group_id": "g3", "topics": None}], "require_stable": False}))
    assert [(g["group_id"], g["error_code"]) for g in r["groups"]] == [("g1", 0), ("g2", 0), ("g3", 0)]
    assert r["groups"][0]["topics"][0]["partitions"][0]["committed_offset"] == 1
    assert r["groups"][1]["topics"][0]["partitions"][0]["committed_offset"] == 2
    assert r["groups"][2]["topics"] == []
    assert "error_code" not in r and "topics" not in r
    r9 = h.reply(h.call("fetch", 9, {"groups": [{"group_id": "g1", "member_id": None, "member_epoch": -1,
                                                 "topics": None}]}))
    assert r9["groups"][0]["topics"][0]["name"] == "t"


# ------------------------------------------------------------------------------- Describe / List

def test_describe_groups() -> None:
    h = Harness()
    a, b = h.stable_group("g", 2, protocols=(("range", consumer_meta("t")),))
    d = h.describe("g", "missing", v=4)
    g, missing = d
    assert g["group_state"] == "Stable" and g["protocol_type"] == "consumer" and g["protocol_data"] == "range"
    assert {m["member_id"]: m["member_assignment"] for m in g["members"]} == {a: a.encode(), b: b.encode()}
    assert all(m["member_metadata"] == consumer_meta("t") and m["client_id"] == "client"
               and m["client_host"] == "/10.0.0.1" and m["group_instance_id"] is None for m in g["members"])
    assert missing == {"error_code": NONE, "group_id": "missing", "group_state": "Dead", "protocol_type": "",
                       "protocol_data": "", "members": [], "authorized_operations": -2147483648}
    (m6,) = h.describe("missing", v=6)
    assert m6["error_code"] == GROUP_ID_NOT_FOUND and m6["group_state"] == "Dead"
    # outside Stable: no metadata/assignment, no protocol
    h.join("g", a)
    (p,) = h.describe("g", v=0)
    assert p["group_state"] == "PreparingRebalance" and p["protocol_data"] == ""
    assert all(m["member_metadata"] == b"" and m["member_assignment"] == b"" for m in p["members"])


def test_list_groups_filters() -> None:
    h = Harness()
    h.stable_group("g", 1)
    h.commit("simple", {("t", 0): (1, "")})
    r0 = h.reply(h.call("list", 0, {}))
    assert r0 == {"error_code": NONE, "groups": [{"group_id": "g", "protocol_type": "consumer"},
                                                 {"group_id": "simple", "protocol_type": ""}]}
    r4 = h.reply(h.call("list", 4, {"states_filter": ["stable"]}))
    assert [g["group_id"] for g in r4["groups"]] == ["g"] and r4["groups"][0]["group_state"] == "Stable"
    r5 = h.reply(h.call("list", 5, {"states_filter": [], "types_filter": ["consumer"]}))
    assert r5["groups"] == []
    r5 = h.reply(h.call("list", 5, {"states_filter": ["Empty"], "types_filter": ["Classic"]}))
    assert r5["groups"] == [{"group_id": "simple", "protocol_type": "", "group_state": "Empty",
                             "group_type": "classic"}]


# ------------------------------------------------------------------------------- DeleteGroups / OffsetDelete

def test_delete_groups() -> None:
    h = Harness()
    h.stable_group("busy", 1)
    h.commit("idle", {("t", 0): (1, ""), ("t", 1): (2, "")})
    h.records.clear()
    r = h.reply(h.call("delete", 2, {"groups_names": ["busy", "idle", "ghost"]}))
    assert r["results"] == [{"group_id": "busy", "error_code": NON_EMPTY_GROUP},
                            {"group_id": "idle", "error_code": NONE},
                            {"group_id": "ghost", "error_code": GROUP_ID_NOT_FOUND}]
    recs = h.decoded_records()
    assert [(k.record_type, k.topic, k.partition, v) for k, v in recs] == [
        (1, "t", 0, None), (1, "t", 1, None), (2, None, None, None)]
    assert "idle" not in h.c.groups and "idle" not in h.c.offsets


def test_offset_delete() -> None:
    h = Harness()
    meta = consumer_meta("subscribed")
    (a,) = h.stable_group("g", 1, protocols=(("range", meta),))
    gen = h.c.groups["g"].generation_id
    h.commit("g", {("subscribed", 0): (1, ""), ("old", 0): (2, "")}, generation=gen, member_id=a)
    h.records.clear()
    body = {"group_id": "g", "topics": [{"name": "subscribed", "partitions": [{"partition_index": 0}]},
                                        {"name": "old", "partitions": [{"partition_index": 0},
                                                                       {"partition_index": 5}]}]}
    r = h.reply(h.call("offset_delete", 0, body))
    assert r["error_code"] == NONE
    assert r["topics"] == [
        {"name": "subscribed", "partitions": [{"partition_index": 0, "error_code": GROUP_SUBSCRIBED_TO_TOPIC}]},
        {"name": "old", "partitions": [{"partition_index": 0, "error_code": NONE},
                                       {"partition_index": 5, "error_code": NONE}]}]
    assert [(k.topic, v) for k, v in h.decoded_records()] == [("old", None)]
    assert list(h.c.offsets["g"]) == [("subscribed", 0)]
    r = h.reply(h.call("offset_delete", 0, {"group_id": "ghost", "topics": []}))
    assert r["error_code"] == GROUP_ID_NOT_FOUND
    # a non-consumer protocol type that is not Empty: refused as a whole
    h.stable_group("connect", 1, ptype="connect")
    h.commit("connect", {("x", 0): (1, "")}, generation=h.c.groups["connect"].generation_id,
             member_id=next(iter(h.c.groups["connect"].members)))
    r = h.reply(h.call("offset_delete", 0, {"group_id": "connect", "topics": []}))
    assert r["error_code"] == NON_EMPTY_GROUP
    # Empty group: everything goes
    h.leave("g", [(a, None)])
    assert h.state("g") == "Empty"
    body = {"group_id": "g", "topics": [{"name": "subscribed", "partitions": [{"partition_index": 0}]}]}
    assert h.reply(h.call("offset_delete", 0, body))["topics"][0]["partitions"][0]["error_code"] == NONE
    assert "g" not in h.c.offsets


# ------------------------------------------------------------------------------- retention

def test_offsets_of_empty_group_expire_after_retention_since_empty() -> None:
    h = Harness(offsets_retention_ms=DAY, offsets_retention_check_interval_ms=3600_000)
    (a,) = h.stable_group("g", 1, session=60_000)
    h.commit("g", {("t", 0): (1, "")}, generation=h.c.groups["g"].generation_id, member_id=a)
    h.advance(2 * DAY // 2)               # member heartbeats stopped long ago: expired after 60 s
    assert h.state("g") == "Empty"
    empty_since = h.c.groups["g"].current_state_timestamp
    assert "g" in h.c.offsets             # commit is a day old, but the group has only been empty ~1 day
    while h.now < empty_since + DAY:
        h.advance(3600_000)
    h.advance(3600_000)
    assert "g" not in h.c.offsets and "g" not in h.c.groups   # offsets expired, then the group deleted
    kinds = [(k.record_type, v) for k, v in h.decoded_records()[-2:]]
    assert kinds == [(1, None), (2, None)]


def test_simple_consumer_offsets_expire_after_commit() -> None:
    h = Harness(offsets_retention_ms=DAY, offsets_retention_check_interval_ms=600_000)
    h.commit("solo", {("t", 0): (1, "")})
    h.advance(DAY // 2)
    h.commit("solo", {("t", 1): (1, "")})
    h.advance(DAY // 2 + 600_000)
    assert list(h.c.offsets["solo"]) == [("t", 1)]
    h.advance(DAY // 2)
    assert "solo" not in h.c.offsets and "solo" not in h.c.groups


def test_stable_consumer_group_expires_only_unsubscribed_topics() -> None:
    h = Harness(offsets_retention_ms=DAY, offsets_retention_check_interval_ms=600_000)
    (a,) = h.stable_group("g", 1, protocols=(("range", consumer_meta("live")),), session=600_000)
    gen = h.c.groups["g"].generation_id
    h.commit("g", {("live", 0): (1, ""), ("gone", 0): (1, "")}, generation=gen, member_id=a)
    for _ in range(int(DAY / 300_000) + 2):
        h.advance(300_000)
        h.heartbeat("g", a, gen)
    assert h.state("g") == "Stable"
    assert list(h.c.offsets["g"]) == [("live", 0)]


# ------------------------------------------------------------------------------- reload

def _replay(h: Harness, now: int, **config: Any) -> GroupCoordinator:
    fresh = GroupCoordinator(GroupConfig(**config), now_ms=now)
    for partition, key, value in h.records:
        fresh.load(partition, key, value)
    fresh.complete_load(now)
    return fresh


def test_reload_reproduces_groups_and_offsets() -> None:
    h = Harness()
    a, b = h.stable_group("g", 2, protocols=(("range", consumer_meta("t")),))
    gen = h.c.groups["g"].generation_id
    h.commit("g", {("t", 0): (100, "m"), ("t", 1): (200, "")}, generation=gen, member_id=a, v=8, epoch=4)
    h.commit("g", {("t", 0): (150, "m2")}, generation=gen, member_id=b)
    h.commit("solo", {("x", 0): (1, "")})
    h.stable_group("gone", 1)
    h.leave("gone", [(next(iter(h.c.groups["gone"].members)), None)])
    h.call("delete", 1, {"groups_names": ["gone"]})
    s = _replay(h, h.now, initial_rebalance_delay_ms=0)
    assert set(s.groups) == {"g", "solo"}
    g = s.groups["g"]
    orig = h.c.groups["g"]
    assert g.state.value == "Stable" and g.generation_id == gen and g.leader_id == orig.leader_id
    assert g.protocol_name == "range" and g.protocol_type == "consumer"
    assert {m: (x.assignment, x.client_id, x.session_timeout_ms) for m, x in g.members.items()} == {
        m: (x.assignment, x.client_id, x.session_timeout_ms) for m, x in orig.members.items()}
    assert {tp: (e.offset, e.metadata, e.leader_epoch) for tp, e in s.offsets["g"].items()} == {
        ("t", 0): (150, "m2", -1), ("t", 1): (200, "", 4)}
    assert s.groups["solo"].state.value == "Empty"
    # reloaded members keep working: heartbeat and sync against the reloaded state
    fx = s.heartbeat(h.now, 3, {"group_id": "g", "generation_id": gen, "member_id": a,
                                "group_instance_id": None}, "t1")
    assert fx.replies[0][1]["error_code"] == NONE
    fx = s.sync_group(h.now, 3, {"group_id": "g", "generation_id": gen, "member_id": b,
                                 "group_instance_id": None, "assignments": []}, "t2")
    assert fx.replies[0][1]["assignment"] == b.encode()
    # and their sessions were re-armed: silence expels them
    s.poll(h.now + 9_999)
    assert len(s.groups["g"].members) == 2
    fx = s.poll(h.now + 10_000)
    assert not s.groups["g"].members and s.groups["g"].state.value == "Empty"
    assert len(fx.records) == 1   # the now-empty generation is persisted


def test_reload_static_members_and_tombstoned_offsets() -> None:
    h = Harness()
    a = h.reply(h.join("g", instance="i-1"))["member_id"]
    h.sync("g", a, 1, [(a, b"x")])
    h.commit("g", {("t", 0): (1, "")}, generation=1, member_id=a, instance="i-1")
    h.call("offset_delete", 0, {"group_id": "g", "topics": [{"name": "t", "partitions": [{"partition_index": 0}]}]})
    s = _replay(h, h.now)
    assert s.groups["g"].static_members == {"i-1": a}
    assert "g" not in s.offsets
    # the restarted static member is recognised and gets its assignment back without a rebalance
    fx = s.join_group(h.now, 5, {"group_id": "g", "session_timeout_ms": 10_000, "rebalance_timeout_ms": 30_000,
                                 "member_id": "", "group_instance_id": "i-1", "protocol_type": "consumer",
                                 "protocols": [{"name": "range", "metadata": b"meta"}]}, "j")
    assert not fx.replies and len(fx.records) == 1   # the new member id is stored first
    ((_, resp),) = s.write_committed(h.now, fx.writes[0].write_id).replies
    assert resp["error_code"] == NONE and resp["generation_id"] == 1


def test_group_metadata_record_round_trip_all_fields() -> None:
    h = Harness()
    a = h.reply(h.join("g", instance="i-1", session=7000, rebalance=9000, client_id="cid"))["member_id"]
    h.records.clear()
    h.sync("g", a, 1, [(a, b"\x00\x01")])
    ((_, key, value),) = h.records
    v = decode_group_metadata_value(value)
    assert value[:2] == b"\x00\x03"
    assert v["protocol_type"] == "consumer" and v["generation"] == 1 and v["protocol"] == "range"
    assert v["leader"] == a and v["current_state_timestamp"] == START
    assert v["members"] == [{"member_id": a, "group_instance_id": "i-1", "client_id": "cid",
                             "client_host": "/10.0.0.1", "rebalance_timeout": 9000, "session_timeout": 7000,
                             "subscription": b"meta", "assignment": b"\x00\x01"}]
    assert decode_key(key).group == "g"
