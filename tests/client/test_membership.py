"""The classic group membership state machine, driven with a fake clock (no I/O)."""

from __future__ import annotations

import pytest

from client.group_protocol import ConsumerGroupProtocol
from client.membership import (
    Assign,
    Fatal,
    FindCoordinator,
    Membership,
    Revoke,
    RunAssignment,
    SendHeartbeat,
    SendJoinGroup,
    SendLeaveGroup,
    SendSyncGroup,
    State,
)
from client.types import TopicPartition
from protocol.error_codes import ErrorCode

T0 = TopicPartition("t", 0)
T1 = TopicPartition("t", 1)
T2 = TopicPartition("t", 2)


def machine(strategy: str = "range", instance: str | None = None) -> Membership:
    return Membership(group_id="g", protocol=ConsumerGroupProtocol([strategy]), session_timeout_ms=10000,
                      heartbeat_interval_ms=1000, max_poll_interval_ms=30000, retry_backoff_ms=100,
                      group_instance_id=instance)


def of(actions: list, kind: type) -> list:
    return [a for a in actions if isinstance(a, kind)]


def join_as_leader(m: Membership, now: float = 0, members: int = 1) -> list:
    m.subscribe(["t"], now)
    acts = m.poll(now)
    assert of(acts, FindCoordinator)
    acts = m.on_coordinator(1, now)
    (join,) = of(acts, SendJoinGroup)
    acts = m.on_join_response(ErrorCode.MEMBER_ID_REQUIRED, now, member_id="m1")
    (join,) = of(acts, SendJoinGroup)
    assert join.member_id == "m1"
    meta = join.protocols[0][1]
    acts = m.on_join_response(0, now, member_id="m1", generation=1, protocol_name="range", leader="m1",
                              members=[(f"m{i + 1}", None, meta) for i in range(members)])
    (run,) = of(acts, RunAssignment)
    assignments = m.protocol.assign(run.protocol, {"t": 3}, run.members)  # type: ignore[attr-defined]
    (sync,) = of(m.on_assignment(assignments, now), SendSyncGroup)
    return m.on_sync_response(0, now, sync.assignments["m1"])


def test_join_as_leader_assigns_everything_and_heartbeats_on_schedule() -> None:
    m = machine()
    acts = join_as_leader(m)
    (assign,) = of(acts, Assign)
    assert assign.assignment == {T0, T1, T2}
    assert m.state is State.STABLE and m.generation == 1 and m.is_leader
    assert m.tick(500) == []
    assert m.next_deadline() == 1000
    (hb,) = of(m.tick(1000), SendHeartbeat)
    assert hb.generation == 1 and hb.member_id == "m1"
    assert m.tick(1500) == []
    m.on_heartbeat_response(0, 1600)
    assert m.next_deadline() == 2600
    assert of(m.tick(2600), SendHeartbeat)


def test_follower_sends_empty_sync() -> None:
    m = machine()
    m.subscribe(["t"], 0)
    m.poll(0)
    m.on_coordinator(1, 0)
    acts = m.on_join_response(0, 0, member_id="m2", generation=3, protocol_name="range", leader="m1", members=[])
    (sync,) = of(acts, SendSyncGroup)
    assert sync.assignments == {} and sync.generation == 3


def test_rebalance_in_progress_eager_revokes_all_then_rejoins() -> None:
    m = machine()
    join_as_leader(m)
    m.tick(1000)
    acts = m.on_heartbeat_response(ErrorCode.REBALANCE_IN_PROGRESS, 1001)
    assert isinstance(acts[0], Revoke) and acts[0].partitions == {T0, T1, T2} and not acts[0].lost
    assert isinstance(acts[1], SendJoinGroup)
    assert m.state is State.JOINING and m.owned == set()


def test_cooperative_keeps_partitions_while_rejoining_and_revokes_only_moved() -> None:
    m = machine("cooperative-sticky")
    m.subscribe(["t"], 0)
    m.poll(0)
    m.on_coordinator(1, 0)
    meta = of(m.on_join_response(ErrorCode.MEMBER_ID_REQUIRED, 0, member_id="m1"), SendJoinGroup)[0].protocols[0][1]
    acts = m.on_join_response(0, 0, member_id="m1", generation=1, protocol_name="cooperative-sticky",
                              leader="m1", members=[("m1", None, meta)])
    run = of(acts, RunAssignment)[0]
    sync = of(m.on_assignment(m.protocol.assign(run.protocol, {"t": 3}, run.members), 0), SendSyncGroup)[0]
    m.on_sync_response(0, 0, sync.assignments["m1"])
    assert m.owned == {T0, T1, T2}
    acts = m.on_heartbeat_response(ErrorCode.REBALANCE_IN_PROGRESS, 10)
    assert not of(acts, Revoke)
    assert of(acts, SendJoinGroup)
    assert m.owned == {T0, T1, T2}
    m.on_join_response(0, 20, member_id="m1", generation=2, protocol_name="cooperative-sticky", leader="m0",
                       members=[])
    new = m.protocol.assign("cooperative-sticky", {"t": 3}, [("m1", None, meta)])["m1"]  # type: ignore[attr-defined]
    assert m.protocol.decode_assignment(new) == {T0, T1, T2}
    smaller = ConsumerGroupProtocol(["cooperative-sticky"])
    from client.assignors import Assignment, encode_assignment

    acts = m.on_sync_response(0, 30, encode_assignment(Assignment([("t", 0)])))
    (revoke,) = of(acts, Revoke)
    assert revoke.partitions == {T1, T2} and not revoke.lost
    assert of(acts, Assign)[0].added == set()
    assert of(acts, SendJoinGroup), "a cooperative member rejoins after revoking"
    assert smaller.is_cooperative("cooperative-sticky")


def test_unknown_member_id_on_heartbeat_loses_partitions_and_resets_member() -> None:
    m = machine()
    join_as_leader(m)
    m.tick(1000)
    acts = m.on_heartbeat_response(ErrorCode.UNKNOWN_MEMBER_ID, 1001)
    (revoke,) = of(acts, Revoke)
    assert revoke.lost
    (join,) = of(acts, SendJoinGroup)
    assert join.member_id == "" and m.generation == -1


def test_illegal_generation_keeps_member_id() -> None:
    m = machine()
    join_as_leader(m)
    m.tick(1000)
    acts = m.on_heartbeat_response(ErrorCode.ILLEGAL_GENERATION, 1001)
    assert of(acts, Revoke)[0].lost
    assert of(acts, SendJoinGroup)[0].member_id == "m1"


def test_not_coordinator_rediscovers_and_resumes_without_rejoin() -> None:
    m = machine()
    join_as_leader(m)
    m.tick(1000)
    acts = m.on_heartbeat_response(ErrorCode.NOT_COORDINATOR, 1001)
    assert of(acts, FindCoordinator) and m.coordinator is None
    acts = m.on_coordinator(2, 1100)
    assert acts == [] and m.state is State.STABLE and m.coordinator == 2 and m.owned == {T0, T1, T2}
    assert of(m.tick(1100), SendHeartbeat)


def test_find_coordinator_error_backs_off_then_retries() -> None:
    m = machine()
    m.subscribe(["t"], 0)
    m.poll(0)
    assert m.on_coordinator_error(ErrorCode.COORDINATOR_NOT_AVAILABLE, 0) == []
    assert m.next_deadline() == 100
    assert m.tick(50) == []
    assert of(m.tick(100), FindCoordinator)


def test_join_errors() -> None:
    m = machine()
    m.subscribe(["t"], 0)
    m.poll(0)
    m.on_coordinator(1, 0)
    assert m.on_join_response(ErrorCode.REBALANCE_IN_PROGRESS, 0) == []
    assert of(m.tick(100), SendJoinGroup)
    acts = m.on_join_response(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, 200)
    assert of(acts, Fatal) and m.state is State.FAILED


def test_session_timeout_without_heartbeat_ack_marks_coordinator_dead() -> None:
    m = machine()
    join_as_leader(m)
    m.tick(1000)
    m.on_request_failed(SendHeartbeat(1, "m1"), 1000)
    assert m.coordinator is None


def test_silent_coordinator_session_expiry() -> None:
    m = machine()
    join_as_leader(m)
    assert of(m.tick(1000), SendHeartbeat)
    assert m.tick(5000) == []
    assert of(m.tick(10001), FindCoordinator)


def test_max_poll_interval_leaves_group_and_rejoins_on_next_poll() -> None:
    m = machine()
    join_as_leader(m)
    now = 0
    while now < 30000:
        now += 1000
        for a in m.tick(now):
            if isinstance(a, SendHeartbeat):
                m.on_heartbeat_response(0, now)
    acts = m.tick(30001)
    assert of(acts, SendLeaveGroup)
    assert of(acts, Revoke)[0].lost
    assert m.member_id == "" and m.state is State.UNJOINED
    acts = m.poll(30500)
    assert of(acts, SendJoinGroup) or of(acts, FindCoordinator)


def test_static_member_does_not_leave_on_poll_timeout_or_close() -> None:
    m = machine(instance="i-1")
    join_as_leader(m)
    acts = m.tick(30001)
    assert not of(acts, SendLeaveGroup)
    assert m.member_id == "m1"
    m2 = machine(instance="i-1")
    join_as_leader(m2)
    assert not of(m2.leave(10), SendLeaveGroup)


def test_leave_revokes_then_sends_leave_group() -> None:
    m = machine()
    join_as_leader(m)
    acts = m.leave(10)
    assert isinstance(acts[0], Revoke) and not acts[0].lost
    assert isinstance(acts[1], SendLeaveGroup) and acts[1].member_id == "m1"
    assert m.state is State.CLOSED and m.tick(100000) == []


def test_sync_rebalance_in_progress_rejoins() -> None:
    m = machine()
    m.subscribe(["t"], 0)
    m.poll(0)
    m.on_coordinator(1, 0)
    m.on_join_response(0, 0, member_id="m2", generation=3, protocol_name="range", leader="m1", members=[])
    acts = m.on_sync_response(ErrorCode.REBALANCE_IN_PROGRESS, 5)
    assert of(acts, SendJoinGroup) and m.state is State.JOINING


def test_fenced_instance_is_fatal() -> None:
    m = machine(instance="i-1")
    join_as_leader(m)
    acts = m.on_heartbeat_response(ErrorCode.FENCED_INSTANCE_ID, 1000)
    assert of(acts, Fatal) and m.state is State.FAILED


def test_metadata_triggered_rejoin_from_stable() -> None:
    m = machine()
    join_as_leader(m)
    acts = m.request_rejoin("partitions grew", 50)
    assert of(acts, Revoke) and of(acts, SendJoinGroup)
    assert of(acts, SendJoinGroup)[0].reason == "partitions grew"


@pytest.mark.parametrize("code", [ErrorCode.REBALANCE_IN_PROGRESS, ErrorCode.ILLEGAL_GENERATION])
def test_commit_errors_feed_back(code: ErrorCode) -> None:
    m = machine()
    join_as_leader(m)
    acts = m.on_commit_error(code, 10)
    assert of(acts, SendJoinGroup)
