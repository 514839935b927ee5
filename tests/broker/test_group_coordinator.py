"""Classic group coordinator: membership, rebalances, static members, timers (fake clock)."""

from __future__ import annotations

from test_group_harness import Harness

from broker.coordinator.group import GroupState, coordinator_partition, java_string_hashcode

NONE = 0
ILLEGAL_GENERATION = 22
INCONSISTENT_GROUP_PROTOCOL = 23
INVALID_GROUP_ID = 24
UNKNOWN_MEMBER_ID = 25
INVALID_SESSION_TIMEOUT = 26
REBALANCE_IN_PROGRESS = 27
MEMBER_ID_REQUIRED = 79
GROUP_MAX_SIZE_REACHED = 81
FENCED_INSTANCE_ID = 82


# ------------------------------------------------------------------------------- partitioning

def test_java_hashcode_and_partition() -> None:
    assert java_string_hashcode("") == 0
    assert java_string_hashcode("hello") == 99162322
    assert java_string_hashcode("polygenelubricants") == -(2**31)   # Integer.MIN_VALUE
    assert java_string_hashcode("\U0001F600") == 31 * 0xD83D + 0xDE00  # surrogate pair
    assert coordinator_partition("polygenelubricants", 50) == 0        # Utils.abs(MIN_VALUE) == 0
    assert coordinator_partition("hello", 50) == 99162322 % 50
    neg = "Aa" * 7 + "z"  # any string with a negative hash
    h = java_string_hashcode(neg)
    assert coordinator_partition(neg, 50) == abs(h) % 50


# ------------------------------------------------------------------------------- JoinGroup basics

def test_two_step_join_single_member_to_stable() -> None:
    h = Harness()
    t = h.join("g")
    r = h.reply(t)
    assert r["error_code"] == MEMBER_ID_REQUIRED and r["member_id"] == "client-0"
    assert h.state("g") == "Empty"
    t2 = h.join("g", "client-0")
    r2 = h.reply(t2)
    assert r2["error_code"] == NONE and r2["generation_id"] == 1 and r2["leader"] == "client-0"
    assert r2["protocol_name"] == "range"
    assert [m["member_id"] for m in r2["members"]] == ["client-0"]
    assert h.state("g") == "CompletingRebalance"
    h.records.clear()
    s = h.sync("g", "client-0", 1, [("client-0", b"A")])
    assert h.reply(s) == {"throttle_time_ms": 0, "error_code": NONE, "assignment": b"A"}
    assert h.state("g") == "Stable"
    ((k, value),) = h.decoded_records()
    assert k.group == "g" and value["generation"] == 1 and value["leader"] == "client-0"
    assert value["members"][0]["assignment"] == b"A" and value["members"][0]["subscription"] == b"meta"
    assert value["members"][0]["client_host"] == "/10.0.0.1"
    # Stable: SyncGroup returns the stored assignment again
    assert h.reply(h.sync("g", "client-0", 1))["assignment"] == b"A"


def test_join_v3_adds_member_at_once_and_v9_shape() -> None:
    h = Harness()
    t = h.join("g", v=3)
    r = h.reply(t)
    assert r["error_code"] == NONE and r["member_id"] == "client-0" and "protocol_type" not in r
    t9 = h.join("g9", v=9)
    assert h.error(t9) == MEMBER_ID_REQUIRED
    r9 = h.reply(h.join("g9", h.reply(t9)["member_id"], v=9))
    assert r9["protocol_type"] == "consumer" and r9["skip_assignment"] is False


def test_join_validation_errors() -> None:
    h = Harness(max_size=3)
    assert h.error(h.join("")) == INVALID_GROUP_ID
    assert h.error(h.join("g", session=10)) == INVALID_SESSION_TIMEOUT
    assert h.error(h.join("g", session=1_800_001)) == INVALID_SESSION_TIMEOUT
    assert h.error(h.join("g", "ghost")) == UNKNOWN_MEMBER_ID        # unknown group, member id given
    assert h.error(h.join("g", ptype="")) == INCONSISTENT_GROUP_PROTOCOL
    assert h.error(h.join("g", protocols=())) == INCONSISTENT_GROUP_PROTOCOL
    assert "g" not in h.c.groups   # failed joins do not create the group
    h.stable_group("g", 2)
    assert h.error(h.join("g", ptype="connect")) == INCONSISTENT_GROUP_PROTOCOL
    assert h.error(h.join("g", protocols=(("roundrobin", b""),))) == INCONSISTENT_GROUP_PROTOCOL
    assert h.error(h.join("g", "client-99", v=5)) == UNKNOWN_MEMBER_ID  # member id of nobody
    h = Harness(max_size=2)
    h.stable_group("g", 2)
    t = h.join("g")
    assert h.error(t) == GROUP_MAX_SIZE_REACHED and h.reply(t)["member_id"] == ""


def test_max_size_in_preparing_counts_awaiting_members() -> None:
    h = Harness(max_size=1)
    _a, ta = h.join_new("g")
    assert h.error(ta) == NONE
    b = h.reply(h.join("g"))["member_id"]   # MEMBER_ID_REQUIRED: pending members do not count
    assert h.error(h.join("g", b)) == GROUP_MAX_SIZE_REACHED


def test_protocol_vote() -> None:
    h = Harness()
    tokens = []
    prefs = [(("range", b""), ("rr", b"")), (("rr", b""), ("range", b"")), (("rr", b""), ("sticky", b"")),
             (("rr", b""), ("range", b""), ("sticky", b""))]
    mids = []
    first = h.reply(h.join("g", protocols=prefs[0]))["member_id"]
    tokens.append(h.join("g", first, protocols=prefs[0]))   # completes alone: generation 1
    mids.append(first)
    assert h.reply(tokens[0])["protocol_name"] == "range"
    h.sync("g", first, 1, [(first, b"")])
    # member 2 only supports range/rr; all others must share a candidate
    assert h.error(h.join("g", protocols=(("sticky", b""),))) == INCONSISTENT_GROUP_PROTOCOL
    joins = []
    for p in prefs[1:3]:
        mid = h.reply(h.join("g", protocols=p))["member_id"]
        joins.append((mid, h.join("g", mid, protocols=p)))
    # a rebalance is in progress; the leader rejoins
    lt = h.join("g", first, protocols=prefs[0])
    r = h.reply(lt)
    # candidates: rr only (range not supported by member 3) -> rr
    assert r["generation_id"] == 2 and r["protocol_name"] == "rr"


def test_leader_gets_members_followers_do_not() -> None:
    h = Harness()
    a, ta = h.join_new("g")
    assert h.reply(ta)["generation_id"] == 1
    h.sync("g", a, 1, [(a, b"")])
    _b, tb = h.join_new("g")                     # new member: rebalance, b parked
    assert h.reply(tb) is None and h.state("g") == "PreparingRebalance"
    assert h.heartbeat("g", a, 1) == REBALANCE_IN_PROGRESS
    ta2 = h.join("g", a)
    ra, rb = h.reply(ta2), h.reply(tb)
    assert ra["leader"] == a and len(ra["members"]) == 2
    assert rb["leader"] == a and rb["members"] == [] and rb["generation_id"] == 2


# ------------------------------------------------------------------------------- initial delay

def test_initial_delay_extends_while_members_arrive() -> None:
    h = Harness(initial_rebalance_delay_ms=3000)
    _a, ta = h.join_new("g", rebalance=10_000)
    assert h.reply(ta) is None and h.state("g") == "PreparingRebalance"
    h.advance(2000)
    _b, _tb = h.join_new("g", rebalance=10_000)
    h.advance(1000)                      # t=3000: b arrived during the delay -> extended
    assert h.reply(ta) is None
    h.advance(2000)                      # t=5000
    _c, tc = h.join_new("g", rebalance=10_000)
    h.advance(1000)                      # t=6000: extended again
    assert h.reply(ta) is None
    h.advance(2999)
    assert h.reply(ta) is None
    h.advance(1)                         # t=9000: nobody new -> complete
    assert h.reply(ta)["generation_id"] == 1 and len(h.reply(ta)["members"]) == 3
    assert h.reply(tc)["generation_id"] == 1


def test_initial_delay_bounded_by_rebalance_timeout() -> None:
    h = Harness(initial_rebalance_delay_ms=3000)
    _a, ta = h.join_new("g", rebalance=7000)
    tokens = [ta]
    for _ in range(20):                  # a new member every second, forever
        h.advance(1000)
        if h.reply(ta) is not None:
            break
        tokens.append(h.join_new("g", rebalance=7000)[1])
    # first delay 3000, then min(3000, remaining 4000), then min(3000, 1000): done by ~t=7000
    assert h.reply(ta) is not None and h.now - 1_000_000 <= 7000 + 1000


def test_initial_delay_does_not_complete_early_when_all_joined() -> None:
    h = Harness(initial_rebalance_delay_ms=3000)
    _a, ta = h.join_new("g")
    assert h.reply(ta) is None
    h.advance(2999)
    assert h.reply(ta) is None
    h.advance(1)
    assert h.error(ta) == NONE


# ------------------------------------------------------------------------------- pending members

def test_pending_member_expiry_unblocks_join() -> None:
    h = Harness()
    a, b = h.stable_group("g", 2)
    # a third member gets an id but never comes back
    pending = h.reply(h.join("g", session=6000))["member_id"]
    assert pending in h.c.groups["g"].pending_members
    ta = h.join("g", a)                              # leader rejoins -> PreparingRebalance
    tb = h.join("g", b)
    assert h.reply(ta) is None                       # waits for the pending member
    h.advance(5999)
    assert h.reply(ta) is None
    h.advance(1)
    assert h.error(ta) == NONE and h.error(tb) == NONE
    assert pending not in h.c.groups["g"].pending_members
    assert h.error(h.join("g", pending)) == UNKNOWN_MEMBER_ID


# ------------------------------------------------------------------------------- heartbeat / session

def test_heartbeat_errors_and_states() -> None:
    h = Harness()
    assert h.heartbeat("", "x", 1) == INVALID_GROUP_ID
    assert h.heartbeat("nope", "x", 1) == UNKNOWN_MEMBER_ID
    a, _ta = h.join_new("g")
    assert h.heartbeat("g", a, 1) == NONE                    # CompletingRebalance
    assert h.heartbeat("g", a, 0) == ILLEGAL_GENERATION
    assert h.heartbeat("g", "other", 1) == UNKNOWN_MEMBER_ID
    h.sync("g", a, 1, [(a, b"")])
    assert h.heartbeat("g", a, 1, v=0) == NONE
    h.join_new("g")                                          # b parked; rebalance
    assert h.heartbeat("g", a, 1) == REBALANCE_IN_PROGRESS


def test_session_expiry_triggers_rebalance_and_expelled_member_is_unknown() -> None:
    h = Harness()
    a, b = h.stable_group("g", 2, session=10_000)
    gen = h.c.groups["g"].generation_id
    h.advance(9000)
    assert h.heartbeat("g", a, gen) == NONE     # a keeps its session alive; b stays silent
    h.advance(1000)                             # b expires: rebalance
    assert h.state("g") == "PreparingRebalance"
    assert h.heartbeat("g", a, gen) == REBALANCE_IN_PROGRESS
    assert h.heartbeat("g", b, gen) == UNKNOWN_MEMBER_ID
    assert b not in h.c.groups["g"].members


def test_session_expiry_last_member_makes_group_empty_and_persists() -> None:
    h = Harness()
    (_a,) = h.stable_group("g", 1)
    h.records.clear()
    h.advance(10_000)
    assert h.state("g") == "Empty"
    ((_k, v),) = h.decoded_records()
    assert v["generation"] == 2 and v["members"] == [] and v["protocol"] is None and v["leader"] is None
    assert v["current_state_timestamp"] == h.now


def test_commit_resets_session_timer() -> None:
    h = Harness()
    (a,) = h.stable_group("g", 1)
    for _ in range(4):
        h.advance(8000)
        assert h.commit("g", {("t", 0): (1, "")}, generation=1, member_id=a) == {("t", 0): NONE}
    assert h.state("g") == "Stable"
    h.advance(10_000)
    assert h.state("g") == "Empty"


# ------------------------------------------------------------------------------- rebalance timeout

def test_rebalance_timeout_removes_dynamic_laggards_and_reelects_leader() -> None:
    h = Harness()
    leader, b, c = h.stable_group("g", 3, rebalance=20_000, session=30_000)
    gen = h.c.groups["g"].generation_id
    tb = h.join("g", b, protocols=(("range", b"new"),), rebalance=20_000, session=30_000)
    assert h.state("g") == "PreparingRebalance"
    tc = h.join("g", c, rebalance=20_000, session=30_000)
    h.advance(19_999)
    assert h.reply(tc) is None
    h.advance(1)
    rb, rc = h.reply(tb), h.reply(tc)
    assert rb["generation_id"] == rc["generation_id"] == gen + 1
    assert leader not in h.c.groups["g"].members
    new_leader = rb["leader"]
    assert new_leader in (b, c) and new_leader != leader
    assert len((rb if new_leader == b else rc)["members"]) == 2


def test_no_member_rejoined_reschedules_then_static_member_stays() -> None:
    h = Harness()
    ta = h.join("g", instance="i-a", session=60_000, rebalance=10_000)
    a = h.reply(ta)["member_id"]
    h.sync("g", a, 1, [(a, b"x")])
    tb = h.join("g", instance="i-b", session=60_000, rebalance=10_000)   # new static member
    b = h.c.groups["g"].static_members["i-b"]
    h.advance(10_000)      # a (static leader) did not rejoin; b did: b leads, a stays
    rb = h.reply(tb)
    assert rb["generation_id"] == 2 and rb["leader"] == b
    assert a in h.c.groups["g"].members
    assert {m["member_id"] for m in rb["members"]} == {a, b}


# ------------------------------------------------------------------------------- SyncGroup

def test_sync_errors() -> None:
    h = Harness()
    assert h.error(h.sync("", "x", 1)) == INVALID_GROUP_ID
    assert h.error(h.sync("nope", "x", 1)) == UNKNOWN_MEMBER_ID
    a, _ta = h.join_new("g")
    assert h.error(h.sync("g", "x", 1)) == UNKNOWN_MEMBER_ID
    assert h.error(h.sync("g", a, 7)) == ILLEGAL_GENERATION
    assert h.error(h.sync("g", a, 1, v=5, ptype="connect")) == INCONSISTENT_GROUP_PROTOCOL
    assert h.error(h.sync("g", a, 1, v=5, pname="roundrobin")) == INCONSISTENT_GROUP_PROTOCOL
    ok = h.reply(h.sync("g", a, 1, [(a, b"z"), ("stranger", b"q")], v=5, ptype="consumer", pname="range"))
    assert ok == {"throttle_time_ms": 0, "error_code": NONE, "protocol_type": "consumer",
                  "protocol_name": "range", "assignment": b"z"}
    h.join_new("g")
    assert h.error(h.sync("g", a, 1)) == REBALANCE_IN_PROGRESS


def test_followers_parked_until_leader_sync_and_missing_get_empty() -> None:
    h = Harness()
    (a, ta), (b, tb), (c, tc) = [h.join_new("g") for _ in range(3)]
    # a completed alone (gen 1) and b, c joined later: bring all to one generation
    assert h.reply(ta)["generation_id"] == 1
    h.sync("g", a, 1, [(a, b"")])
    ta = h.join("g", a)
    gen = h.reply(ta)["generation_id"]
    assert gen == 2 and h.reply(tb)["generation_id"] == 2 and h.reply(tc)["generation_id"] == 2
    sb = h.sync("g", b, gen)
    sc = h.sync("g", c, gen)
    assert h.reply(sb) is None and h.reply(sc) is None
    h.records.clear()
    sa = h.sync("g", a, gen, [(a, b"A"), (b, b"B")])
    # the call hands out the assignment's write; all three replies wait for it to commit
    assert len(h.last_fx.records) == 1 and not h.last_fx.replies and len(h.last_replies) == 3
    assert h.reply(sa)["assignment"] == b"A" and h.reply(sb)["assignment"] == b"B"
    assert h.reply(sc)["assignment"] == b""


def test_member_joining_while_another_syncs() -> None:
    h = Harness()
    a, b = h.stable_group("g", 2)
    ta, tb = h.join("g", a), h.join("g", b)
    gen = h.reply(ta)["generation_id"]
    sb = h.sync("g", b, gen)                       # follower parked in CompletingRebalance
    assert h.reply(sb) is None
    _c, tc = h.join_new("g")                        # new member -> back to PreparingRebalance
    assert h.error(sb) == REBALANCE_IN_PROGRESS
    assert h.state("g") == "PreparingRebalance"
    assert h.error(h.sync("g", a, gen)) == REBALANCE_IN_PROGRESS
    ta, tb = h.join("g", a), h.join("g", b)
    assert {h.reply(t)["generation_id"] for t in (ta, tb, tc)} == {gen + 1}


def test_leader_leaving_during_completing_rebalance() -> None:
    h = Harness()
    a, b, c = h.stable_group("g", 3)
    tokens = {m: h.join("g", m) for m in (a, b, c)}
    gen = h.reply(tokens[a])["generation_id"]
    sb = h.sync("g", b, gen)
    resp = h.leave("g", [(a, None)])
    assert resp["members"] == [{"member_id": a, "group_instance_id": None, "error_code": NONE}]
    assert h.error(sb) == REBALANCE_IN_PROGRESS
    assert h.state("g") == "PreparingRebalance"
    assert h.c.groups["g"].leader_id in (b, c)
    tb, _tc = h.join("g", b), h.join("g", c)
    rb = h.reply(tb)
    assert rb["generation_id"] == gen + 1 and rb["leader"] in (b, c)


def test_sync_timeout_removes_members_that_never_synced() -> None:
    h = Harness()
    a, b = h.stable_group("g", 2, rebalance=15_000, session=60_000)
    ta, _tb = h.join("g", a, rebalance=15_000, session=60_000), h.join("g", b, rebalance=15_000, session=60_000)
    gen = h.reply(ta)["generation_id"]
    h.sync("g", a, gen, [(a, b""), (b, b"")])      # leader syncs; b never does
    assert h.state("g") == "Stable"
    h.advance(15_000)
    assert b not in h.c.groups["g"].members
    assert h.state("g") in ("PreparingRebalance", "CompletingRebalance")


def test_back_to_back_rebalances_cooperative() -> None:
    h = Harness()
    a, b = h.stable_group("g", 2)
    # cooperative-sticky: right after sync, every member rejoins with new owned partitions
    for round_ in range(3):
        gen = h.c.groups["g"].generation_id
        ta = h.join("g", a, protocols=(("range", f"a{round_}".encode()),))
        tb = h.join("g", b, protocols=(("range", f"b{round_}".encode()),))
        ra, rb = h.reply(ta), h.reply(tb)
        assert ra["generation_id"] == rb["generation_id"] == gen + 1
        assert ra["protocol_name"] == "range"
        sa = h.sync("g", a, gen + 1, [(a, b"1"), (b, b"2")])
        sb = h.sync("g", b, gen + 1)
        assert h.reply(sa)["assignment"] == b"1" and h.reply(sb)["assignment"] == b"2"
        assert h.state("g") == "Stable"


def test_rejoin_in_stable_with_same_metadata_returns_current_generation() -> None:
    h = Harness()
    a, b = h.stable_group("g", 2)
    tb = h.join("g", b)
    r = h.reply(tb)
    gen = h.c.groups["g"].generation_id
    assert r["error_code"] == NONE and r["generation_id"] == gen and r["members"] == [] and r["leader"] == a
    assert h.state("g") == "Stable"
    ta = h.join("g", a)                                    # leader rejoin always rebalances
    assert h.state("g") == "PreparingRebalance" and h.reply(ta) is None


def test_rejoin_in_completing_with_same_metadata() -> None:
    h = Harness()
    a, b = h.stable_group("g", 2)
    ta, _tb = h.join("g", a), h.join("g", b)
    gen = h.reply(ta)["generation_id"]
    r = h.reply(h.join("g", a))          # retried join: leader gets the member list again
    assert r["generation_id"] == gen and len(r["members"]) == 2
    tb2 = h.join("g", b, protocols=(("range", b"changed"),))
    assert h.state("g") == "PreparingRebalance" and h.reply(tb2) is None


def test_superseded_join_is_answered() -> None:
    h = Harness()
    a, b = h.stable_group("g", 2)
    t1 = h.join("g", a)
    t2 = h.join("g", a)
    assert h.error(t1) == REBALANCE_IN_PROGRESS and h.reply(t2) is None
    h.join("g", b)
    assert h.error(t2) == NONE


# ------------------------------------------------------------------------------- LeaveGroup

def test_leave_group_versions_and_errors() -> None:
    h = Harness()
    a, b, c = h.stable_group("g", 3)
    assert h.leave("nope", "x", v=1) == {"throttle_time_ms": 0, "error_code": UNKNOWN_MEMBER_ID}
    assert h.leave("g", "x", v=0) == {"error_code": UNKNOWN_MEMBER_ID}
    assert h.leave("g", a, v=2)["error_code"] == NONE
    assert h.state("g") == "PreparingRebalance"
    resp = h.leave("g", [(b, None), ("ghost", None), ("", "nobody")], v=3)
    assert resp["error_code"] == NONE
    assert [m["error_code"] for m in resp["members"]] == [NONE, UNKNOWN_MEMBER_ID, UNKNOWN_MEMBER_ID]
    assert list(h.c.groups["g"].members) == [c]


def test_leave_static_by_instance_id_and_fencing() -> None:
    h = Harness()
    t = h.join("g", instance="i1")
    m1 = h.reply(t)["member_id"]
    h.sync("g", m1, 1, [(m1, b"")])
    resp = h.leave("g", [("wrong", "i1")], v=4)
    assert resp["members"][0]["error_code"] == FENCED_INSTANCE_ID
    resp = h.leave("g", [("", "i1")], v=5)
    assert resp["members"] == [{"member_id": "", "group_instance_id": "i1", "error_code": NONE}]
    assert h.state("g") == "Empty"


def test_leave_pending_member() -> None:
    h = Harness()
    _a, _b = h.stable_group("g", 2)
    p = h.reply(h.join("g"))["member_id"]
    resp = h.leave("g", [(p, None)])
    assert resp["members"][0]["error_code"] == NONE
    assert not h.c.groups["g"].pending_members


def test_new_member_join_timeout() -> None:
    h = Harness(new_member_join_timeout_ms=300_000)
    a, b = h.stable_group("g", 2, session=60_000, rebalance=1_000_000)
    c, tc = h.join_new("g", session=60_000, rebalance=1_000_000)   # parked; a and b never rejoin
    gen = h.c.groups["g"].generation_id
    for _ in range(6):
        h.advance(50_000)
        assert h.heartbeat("g", a, gen) == REBALANCE_IN_PROGRESS
        assert h.heartbeat("g", b, gen) == REBALANCE_IN_PROGRESS
    # the new member's parked join times out after 5 minutes; it is told UNKNOWN_MEMBER_ID
    assert h.error(tc) == UNKNOWN_MEMBER_ID and c not in h.c.groups["g"].members


# ------------------------------------------------------------------------------- static membership

def _static_stable(h: Harness, v: int = 5) -> tuple[str, str]:
    ta = h.join("g", instance="ia", v=v)
    a = h.reply(ta)["member_id"]
    tb = h.join("g", instance="ib", v=v)       # a completed alone; b triggers gen 2
    h.sync("g", a, 1, [(a, b"")])
    ta = h.join("g", a, instance="ia", v=v)
    assert h.reply(ta)["generation_id"] == 2
    b = h.reply(tb)["member_id"]
    h.sync("g", a, 2, [(a, b"A"), (b, b"B")], instance="ia")
    h.sync("g", b, 2, instance="ib")
    assert h.state("g") == "Stable"
    return a, b


def test_static_rejoin_stable_no_rebalance_follower() -> None:
    h = Harness()
    a, b = _static_stable(h)
    h.records.clear()
    t = h.join("g", instance="ib")                     # b restarted: empty member id
    r = h.reply(t)
    new_b = r["member_id"]
    assert r["error_code"] == NONE and new_b != b and r["generation_id"] == 2 and r["leader"] == a
    assert h.state("g") == "Stable"
    ((_k, v),) = h.decoded_records()                    # the new member id is persisted
    assert {m["member_id"] for m in v["members"]} == {a, new_b}
    assert h.reply(h.sync("g", new_b, 2, instance="ib"))["assignment"] == b"B"
    # the old incarnation is fenced
    assert h.heartbeat("g", b, 2, instance="ib") == FENCED_INSTANCE_ID
    assert h.heartbeat("g", b, 2) == UNKNOWN_MEMBER_ID
    assert h.commit("g", {("t", 0): (1, "")}, generation=2, member_id=b, instance="ib") == {("t", 0): FENCED_INSTANCE_ID}
    assert h.error(h.sync("g", b, 2, instance="ib")) == FENCED_INSTANCE_ID
    assert h.error(h.join("g", b, instance="ib")) == FENCED_INSTANCE_ID


def test_static_leader_rejoin_v9_skip_assignment_and_old_leader_before_v9() -> None:
    h = Harness()
    _a, _b = _static_stable(h)
    r = h.reply(h.join("g", instance="ia", v=9))
    new_a = r["member_id"]
    assert r["leader"] == new_a and r["skip_assignment"] is True and len(r["members"]) == 2
    assert h.state("g") == "Stable"
    r8 = h.reply(h.join("g", instance="ia", v=8))
    assert r8["leader"] == new_a and r8["member_id"] != new_a      # old leader id: no re-assignment
    assert r8["members"] == []
    assert h.state("g") == "Stable"


def test_static_rejoin_with_changed_protocol_rebalances() -> None:
    h = Harness()
    ta = h.join("g", instance="ia", protocols=(("range", b""), ("rr", b"")))
    a = h.reply(ta)["member_id"]
    h.sync("g", a, 1, [(a, b"")])
    # same protocol selected (metadata differs): no rebalance
    t = h.join("g", instance="ia", protocols=(("range", b"new"), ("rr", b"")))
    assert h.error(t) == NONE and h.state("g") == "Stable"
    # the vote would now pick rr: rebalance, the join completes with the new protocol
    t = h.join("g", instance="ia", protocols=(("rr", b""), ("range", b"")))
    r = h.reply(t)
    assert r["generation_id"] == 2 and r["protocol_name"] == "rr"
    assert h.state("g") == "CompletingRebalance"


def test_static_rejoin_in_completing_rebalance_rebalances() -> None:
    h = Harness()
    a, b = _static_stable(h)
    ta = h.join("g", a, instance="ia")
    h.join("g", b, instance="ib")
    assert h.state("g") == "CompletingRebalance"
    t = h.join("g", instance="ib")
    assert h.state("g") == "PreparingRebalance" and h.reply(t) is None
    ta = h.join("g", a, instance="ia")
    assert h.reply(t)["generation_id"] == 4 and h.error(ta) == NONE


def test_static_rejoin_while_preparing_fences_parked_join() -> None:
    h = Harness()
    a, b = _static_stable(h)
    tb = h.join("g", b, instance="ib", protocols=(("range", b"changed"),))
    assert h.state("g") == "PreparingRebalance"
    tb2 = h.join("g", instance="ib")
    assert h.error(tb) == FENCED_INSTANCE_ID and h.reply(tb2) is None
    ta = h.join("g", a, instance="ia")
    assert h.error(ta) == NONE and h.error(tb2) == NONE


def test_static_member_session_expiry_removes_it() -> None:
    h = Harness()
    a, b = _static_stable(h)
    for _ in range(3):
        h.advance(6000)
        h.heartbeat("g", a, 2, instance="ia")
    assert b not in h.c.groups["g"].members and "ib" not in h.c.groups["g"].static_members


def test_state_transition_table_is_enforced() -> None:
    h = Harness()
    (_a,) = h.stable_group("g", 1)
    group = h.c.groups["g"]
    assert group.state is GroupState.STABLE
    try:
        group.transition_to(GroupState.EMPTY, 0)
    except AssertionError:
        pass
    else:
        raise AssertionError("Stable -> Empty must be refused")


# ------------------------------------------------------------------------------- scale

def test_thousand_members_join_at_once() -> None:
    h = Harness(check=False, initial_rebalance_delay_ms=3000)
    tokens = []
    for _ in range(1000):
        tokens.append(h.join_new("big", rebalance=60_000))
    h.advance(3000)                      # members were still arriving: the delay is extended once
    assert h.reply(tokens[0][1]) is None
    h.advance(3000)
    replies = [h.reply(t) for _, t in tokens]
    assert all(r is not None and r["generation_id"] == 1 for r in replies)
    leader = replies[0]["leader"]
    assert sum(1 for r in replies if r["members"]) == 1 and len(replies[0]["members"]) == 1000
    gen = 1
    for mid, _ in tokens[1:]:
        h.sync("big", mid, gen)
    s = h.sync("big", leader, gen, [(m, b"x") for m, _ in tokens])
    assert len(h.last_replies) == 1000
    assert h.error(s) == NONE and h.state("big") == "Stable"
