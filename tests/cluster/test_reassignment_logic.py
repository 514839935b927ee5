"""Partition reassignment decided from the image (KIP-455), no store and no sockets: starting,
completing, cancelling, Kafka's errors, and the controller carrying reassignments through."""

from __future__ import annotations

import uuid

import pytest

from broker.cluster import reassignment
from broker.cluster.controller import ControllerSettings, decide
from broker.cluster.image import MetadataImage
from broker.cluster.kv import KeyValue, WatchEvent
from broker.cluster.reassignment import ReassignmentError
from broker.cluster.records import (
    BrokerRegistration,
    Endpoint,
    PartitionRecord,
    TopicRecord,
    broker_key,
    partition_key,
    topic_key,
)
from protocol.error_codes import ErrorCode as E

_rev = [0]


def put(image: MetadataImage, key: str, value: bytes, create: int | None = None) -> None:
    _rev[0] += 1
    image.apply([WatchEvent("put", KeyValue(key, value, create or _rev[0], _rev[0], 1))])


def cluster(*brokers: int, replicas: tuple[int, ...] = (1, 2, 3), isr: tuple[int, ...] | None = None,
            leader: int | None = None) -> MetadataImage:
    image = MetadataImage()
    for b in brokers:
        put(image, broker_key(b), BrokerRegistration(b, (Endpoint("PLAINTEXT", "h", 9000 + b),)).encode())
    put(image, topic_key("t"), TopicRecord("t", uuid.uuid4(), (replicas,)).encode())
    isr = replicas if isr is None else isr
    epochs = tuple(image.broker_epoch(r) for r in isr)
    put(image, partition_key("t", 0), PartitionRecord(replicas[0] if leader is None else leader, 3, isr, 7, epochs,
                                                       replicas).encode())
    return image


def apply(image: MetadataImage, record: PartitionRecord) -> None:
    put(image, partition_key("t", 0), record.encode())


def part(image: MetadataImage):  # type: ignore[no-untyped-def]
    p = image.partition("t", 0)
    assert p is not None
    return p


def join_isr(image: MetadataImage, *brokers: int) -> None:
    """The leader adds caught-up followers to the ISR (as its AlterPartition write would)."""
    rec = part(image).record
    isr = rec.isr + tuple(brokers)
    apply(image, PartitionRecord(rec.leader, rec.leader_epoch, isr, rec.partition_epoch + 1,
                                 rec.isr_epochs + tuple(image.broker_epoch(b) for b in brokers), rec.replicas,
                                 rec.adding, rec.removing))


def test_start_records_target_then_removing_and_the_controller_waits_for_the_new_replica() -> None:
    image = cluster(1, 2, 3, 4)
    change = reassignment.start(image, part(image), [2, 3, 4])
    rec = change.record
    assert (rec.replicas, rec.adding, rec.removing, rec.leader, rec.isr) == ((2, 3, 4, 1), (4,), (1,), 1, (1, 2, 3))
    apply(image, rec)
    assert decide(image, ControllerSettings()) == []  # 4 is not in sync yet
    join_isr(image, 4)
    # the leader (1) is being removed: it hands over and completes itself, the controller waits
    assert decide(image, ControllerSettings()) == []
    done = reassignment.completed_record(image, part(image).record, leader=2)
    assert done is not None
    assert (done.replicas, done.adding, done.removing, done.leader, done.isr) == ((2, 3, 4), (), (), 2, (2, 3, 4))
    assert done.leader_epoch == 4


def test_the_controller_completes_when_the_leader_stays() -> None:
    image = cluster(1, 2, 3, 4)
    apply(image, reassignment.start(image, part(image), [1, 2, 4]).record)
    join_isr(image, 4)
    [change] = decide(image, ControllerSettings())
    assert change.reason == "reassignment completed"
    rec = change.record
    assert (rec.replicas, rec.isr, rec.leader, rec.leader_epoch) == ((1, 2, 4), (1, 2, 4), 1, 4)
    assert not rec.reassigning


def test_a_dead_leader_being_removed_is_replaced_by_a_target_replica() -> None:
    image = cluster(1, 2, 3, 4)
    apply(image, reassignment.start(image, part(image), [2, 3, 4]).record)
    join_isr(image, 4)
    _rev[0] += 1
    image.apply([WatchEvent("delete", KeyValue(broker_key(1), b"", 0, _rev[0], 0))])
    changes = decide(image, ControllerSettings())
    for c in changes:
        apply(image, c.record)
    changes = decide(image, ControllerSettings())
    for c in changes:
        apply(image, c.record)
    rec = part(image).record
    assert rec.leader == 2 and rec.replicas == (2, 3, 4) and not rec.reassigning


def test_a_reordering_or_removal_of_in_sync_replicas_completes_at_once() -> None:
    image = cluster(1, 2, 3)
    rec = reassignment.start(image, part(image), [1, 3, 2]).record
    assert (rec.replicas, rec.reassigning, rec.leader_epoch) == ((1, 3, 2), False, 3)
    lowered = reassignment.start(image, part(image), [1, 2]).record  # replication factor 3 -> 2
    assert (lowered.replicas, lowered.isr, lowered.reassigning, lowered.leader_epoch) == ((1, 2), (1, 2), False, 4)


def test_a_new_target_replaces_the_running_one() -> None:
    image = cluster(1, 2, 3, 4, 5)
    apply(image, reassignment.start(image, part(image), [2, 3, 4]).record)
    rec = reassignment.start(image, part(image), [2, 3, 5]).record
    assert (rec.replicas, rec.adding, rec.removing) == ((2, 3, 5, 4, 1), (5,), (4, 1))  # current order


def test_cancel_restores_the_original_replicas() -> None:
    image = cluster(1, 2, 3, 4)
    apply(image, reassignment.start(image, part(image), [2, 3, 4]).record)
    join_isr(image, 4)
    rec = reassignment.cancel(image, part(image), unclean_allowed=False).record
    assert (rec.replicas, rec.isr, rec.adding, rec.removing, rec.leader) == ((2, 3, 1), (1, 2, 3), (), (), 1)
    with pytest.raises(ReassignmentError) as refused:
        reassignment.cancel(image, cluster(1, 2, 3).partition("t", 0), unclean_allowed=False)  # type: ignore[arg-type]
    assert refused.value.code == E.NO_REASSIGNMENT_IN_PROGRESS


def test_kafkas_errors() -> None:
    image = cluster(1, 2, 3)
    for target, code in (([], E.INVALID_REPLICA_ASSIGNMENT), ([1, 1, 2], E.INVALID_REPLICA_ASSIGNMENT),
                         ([1, 2, 9], E.INVALID_REPLICA_ASSIGNMENT)):
        with pytest.raises(ReassignmentError) as refused:
            reassignment.start(image, part(image), target)
        assert refused.value.code == code
    with pytest.raises(ReassignmentError) as refused:
        reassignment.start(image, part(image), [1, 2], allow_replication_factor_change=False)
    assert refused.value.code == E.INVALID_REPLICATION_FACTOR


def test_raising_the_replication_factor_waits_for_the_new_replicas() -> None:
    image = cluster(1, 2, 3, replicas=(1,))
    rec = reassignment.start(image, part(image), [1, 2, 3]).record
    assert (rec.replicas, rec.adding, rec.removing, rec.isr) == ((1, 2, 3), (2, 3), (), (1,))
    apply(image, rec)
    join_isr(image, 2)
    assert decide(image, ControllerSettings()) == []
    join_isr(image, 3)
    [change] = decide(image, ControllerSettings())
    assert change.record.replicas == (1, 2, 3) and change.record.leader_epoch == 3  # nothing dropped


def test_node_add_gives_a_broker_that_joins_its_share() -> None:
    from broker.cluster.controller import node_add_moves

    image = MetadataImage()
    for b in (1, 2, 3):
        put(image, broker_key(b), BrokerRegistration(b, (Endpoint("PLAINTEXT", "h", 9000 + b),)).encode())
    assignment = [(1, 2), (2, 3), (3, 1), (1, 3), (2, 1), (3, 2)]
    put(image, topic_key("t"), TopicRecord("t", uuid.uuid4(), tuple(assignment)).encode())
    for i, replicas in enumerate(assignment):
        put(image, partition_key("t", i), PartitionRecord(replicas[0], 0, replicas, 0, (), replicas).encode())
    off = ControllerSettings()
    on = ControllerSettings(autobalancer_mode="node_add")
    assert node_add_moves(image, on) == []  # every broker holds replicas: nothing to do
    put(image, broker_key(4), BrokerRegistration(4, (Endpoint("PLAINTEXT", "h", 9004),)).encode())
    assert node_add_moves(image, off) == []
    changes = node_add_moves(image, on)
    targets = [c.record.target for c in changes]
    assert sum(4 in t for t in targets) == 3  # 12 replicas over 4 brokers
    for c in changes:
        put(image, partition_key(c.topic, c.partition), c.record.encode())
    assert node_add_moves(image, on) == []  # reassignments running (and broker 4 holds replicas now)
