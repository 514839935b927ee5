"""The KIP-848 membership state machine (ConsumerGroupHeartbeat), driven with a fake clock (no I/O)."""

from __future__ import annotations

import uuid

from client.consumer_membership import (
    ConsumerMembership,
    MemberState,
    Reconcile,
    RefreshMetadata,
    SendConsumerHeartbeat,
)
from client.membership import Fatal, FindCoordinator, Revoke
from client.types import TopicPartition
from protocol.error_codes import ErrorCode as E

T_ID, U_ID = uuid.uuid4(), uuid.uuid4()
NAMES = {T_ID: "t", U_ID: "u"}


def tp(topic: str, p: int) -> TopicPartition:
    return TopicPartition(topic, p)


def resolve(tid: uuid.UUID) -> str | None:
    return NAMES.get(tid)


def machine(instance: str | None = None) -> ConsumerMembership:
    return ConsumerMembership(group_id="g", rebalance_timeout_ms=30000, max_poll_interval_ms=60000,
                              retry_backoff_ms=100, retry_backoff_max_ms=1000, group_instance_id=instance)


def of(actions: list, kind: type) -> list:
    return [a for a in actions if isinstance(a, kind)]


def heartbeat(actions: list) -> SendConsumerHeartbeat:
    (hb,) = of(actions, SendConsumerHeartbeat)
    return hb


def respond(m: ConsumerMembership, now: float, epoch: int, assignment: dict | None, interval: int = 1000) -> list:
    return m.on_heartbeat_response(E.NONE, now, resolve, member_epoch=epoch, heartbeat_interval_ms=interval,
                                   assignment=assignment)


def joined(m: ConsumerMembership, parts: dict | None = None, now: float = 0) -> None:
    """Subscribe to t, join, reconcile the first assignment, acknowledge it."""
    m.subscribe(["t"], None, now)
    m.on_coordinator(1, now)
    acts = respond(m, now, 1, parts if parts is not None else {T_ID: [0, 1, 2]})
    (rec,) = of(acts, Reconcile)
    acts = m.on_reconciled(rec.token, True, resolve, now)
    heartbeat(acts)
    respond(m, now, 1, None)
    assert m.state is MemberState.STABLE


def test_join_reconcile_acknowledge() -> None:
    m = machine()
    acts = m.subscribe(["t"], None, 0)
    assert of(acts, FindCoordinator)
    assert m.state is MemberState.JOINING
    hb = heartbeat(m.on_coordinator(1, 0))
    assert (hb.member_epoch, hb.subscribed_topic_names, hb.subscribed_topic_regex, hb.topic_partitions) == \
        (0, ["t"], None, [])
    assert m.member_id and len(m.member_id) == 22  # client-generated, as Kafka's (base64 uuid)
    (rec,) = of(respond(m, 5, 1, {T_ID: [0, 1]}), Reconcile)
    assert (rec.revoked, rec.added, rec.assignment) == (set(), {tp("t", 0), tp("t", 1)}, {tp("t", 0), tp("t", 1)})
    assert m.state is MemberState.RECONCILING
    ack = heartbeat(m.on_reconciled(rec.token, True, resolve, 7))
    assert ack.member_epoch == 1 and ack.topic_partitions == [(T_ID, [0, 1])]
    assert m.owned == {tp("t", 0), tp("t", 1)} and m.state is MemberState.STABLE
    assert respond(m, 8, 1, None) == []
    assert m.next_deadline() == 8 + 1000


def test_heartbeats_follow_the_interval_the_broker_gives() -> None:
    m = machine()
    joined(m)
    assert m.tick(500) == []
    hb = heartbeat(m.tick(1000))
    assert hb.member_epoch == 1 and hb.topic_partitions == [(T_ID, [0, 1, 2])]
    assert m.tick(2000) == []  # one in flight at a time
    respond(m, 2100, 1, None, interval=3000)
    assert m.next_deadline() == 5100


def test_revocation_comes_before_new_partitions_and_a_newer_target_waits() -> None:
    m = machine()
    joined(m)
    (rec,) = of(respond(m, 10, 1, {T_ID: [0]}), Reconcile)
    assert (rec.revoked, rec.added) == ({tp("t", 1), tp("t", 2)}, set())
    # a newer target arrives while the revocation runs: it waits for this reconciliation
    hb = heartbeat(m.tick(1010))
    assert hb.topic_partitions == [(T_ID, [0, 1, 2])]  # still owned until the callbacks are done
    assert of(respond(m, 1011, 2, {T_ID: [0], U_ID: [0]}), Reconcile) == []
    acts = m.on_reconciled(rec.token, True, resolve, 1020)
    assert heartbeat(acts).topic_partitions == [(T_ID, [0])]  # the ack first
    (nxt,) = of(acts, Reconcile)
    assert (nxt.revoked, nxt.added) == (set(), {tp("u", 0)})
    assert m.member_epoch == 2


def test_unknown_topic_ids_wait_for_metadata() -> None:
    m = machine()
    joined(m)
    other = uuid.uuid4()
    acts = respond(m, 10, 2, {T_ID: [0, 1, 2], other: [0]})
    assert of(acts, RefreshMetadata)[0].topic_ids == {other}
    assert not of(acts, Reconcile)
    assert heartbeat(acts).topic_partitions == [(T_ID, [0, 1, 2])]  # what it has is acknowledged
    acts = respond(m, 11, 2, {T_ID: [0, 1, 2], other: [0]})  # the same target again: no second ack
    assert not of(acts, SendConsumerHeartbeat) and m.next_deadline() == 11 + 1000
    acts = m.on_metadata(resolve, 20)  # still unknown: another refresh, no second acknowledgement
    assert [type(a) for a in acts] == [RefreshMetadata]
    NAMES[other] = "later"
    try:
        (rec,) = of(m.on_metadata(resolve, 30), Reconcile)
        assert rec.added == {tp("later", 0)}
    finally:
        del NAMES[other]


def test_fenced_member_loses_its_partitions_and_rejoins_with_the_same_id() -> None:
    m = machine()
    joined(m)
    member_id = m.member_id
    heartbeat(m.tick(1000))
    acts = m.on_heartbeat_response(E.FENCED_MEMBER_EPOCH, 1001, resolve)
    (lost,) = of(acts, Revoke)
    assert lost.lost and lost.partitions == {tp("t", 0), tp("t", 1), tp("t", 2)}
    hb = heartbeat(acts)
    assert (hb.member_epoch, hb.topic_partitions) == (0, [])
    assert m.member_id == member_id and m.owned == set() and m.state is MemberState.JOINING


def test_fenced_during_reconciliation_gives_up_what_it_assigned() -> None:
    m = machine()
    m.subscribe(["t"], None, 0)
    m.on_coordinator(1, 0)
    (rec,) = of(respond(m, 0, 1, {T_ID: [0, 1]}), Reconcile)
    heartbeat(m.tick(1000))
    m.on_heartbeat_response(E.UNKNOWN_MEMBER_ID, 1001, resolve)
    (lost,) = of(m.on_reconciled(rec.token, True, resolve, 1002), Revoke)
    assert lost.lost and lost.partitions == {tp("t", 0), tp("t", 1)}
    assert m.owned == set()


def test_coordinator_errors_rediscover_with_backoff() -> None:
    m = machine()
    joined(m)
    heartbeat(m.tick(1000))
    assert m.on_heartbeat_response(E.NOT_COORDINATOR, 1001, resolve) == []
    assert m.coordinator is None and m.next_deadline() == 1101
    assert of(m.tick(1101), FindCoordinator)
    assert heartbeat(m.on_coordinator(2, 1150)).member_epoch == 1  # back with its epoch: no rejoin
    assert m.on_request_failed(SendConsumerHeartbeat(1, ["t"], None, []), 1200) == []
    assert m.retry_at_ms == 1200 + 200  # exponential
    assert m.on_heartbeat_response(E.COORDINATOR_LOAD_IN_PROGRESS, 1500, resolve) == []


def test_fatal_errors() -> None:
    m = machine("i1")
    joined(m)
    heartbeat(m.tick(1000))
    acts = m.on_heartbeat_response(E.UNRELEASED_INSTANCE_ID, 1001, resolve, message="held by another")
    (fatal,) = of(acts, Fatal)
    assert fatal.code == E.UNRELEASED_INSTANCE_ID and "held by another" in fatal.message
    assert of(acts, Revoke)[0].lost
    assert m.state is MemberState.FATAL and m.next_deadline() is None


def test_poll_timeout_leaves_and_the_next_poll_rejoins() -> None:
    m = machine()
    joined(m, now=0)
    m.poll(50000)
    respond(m, 50000, 1, None)
    acts = m.tick(110001)
    assert heartbeat(acts).member_epoch == -1
    assert of(acts, Revoke)[0].lost
    assert m.state is MemberState.STALE
    assert m.tick(200000) == []
    hb = heartbeat(m.poll(200001))
    assert hb.member_epoch == 0 and m.state is MemberState.JOINING


def test_leaving_dynamic_static_and_unsubscribe() -> None:
    m = machine()
    joined(m)
    acts = m.leave(10)
    assert of(acts, Revoke)[0].partitions == {tp("t", 0), tp("t", 1), tp("t", 2)}
    assert not of(acts, Revoke)[0].lost  # a clean revoke: offsets are committed
    assert heartbeat(acts).member_epoch == -1
    s = machine("inst")
    joined(s)
    assert heartbeat(s.leave(10)).member_epoch == -2  # a static member keeps its place for a while
    s = machine("inst")
    joined(s)
    assert heartbeat(s.subscribe([], None, 10)).member_epoch == -1  # unsubscribe really leaves
    assert s.state is MemberState.UNSUBSCRIBED


def test_regex_subscription_is_sent_to_the_broker() -> None:
    m = machine()
    m.subscribe([], "orders-.*", 0)
    hb = heartbeat(m.on_coordinator(1, 0))
    assert (hb.subscribed_topic_names, hb.subscribed_topic_regex) == ([], "orders-.*")
    respond(m, 0, 1, {})
    assert m.state is MemberState.STABLE
    m.subscribe(["a"], None, 5)  # a new subscription goes out at once
    hb = heartbeat(m.tick(5)) if m.heartbeat_in_flight is False else None
    assert hb is None or hb.subscribed_topic_names == ["a"]
