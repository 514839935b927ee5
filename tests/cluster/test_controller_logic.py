"""Pure cluster logic: placement, the image, and the controller's decisions (no store, no sockets)."""

from __future__ import annotations

import random
import uuid
from collections import Counter

import pytest

from broker.cluster.controller import (
    ControllerSettings,
    decide,
    elect_preferred,
    elect_unclean,
    imbalanced_partitions,
)
from broker.cluster.image import MetadataImage
from broker.cluster.kv import KeyValue, WatchEvent
from broker.cluster.placement import PlacementError, assign_replicas
from broker.cluster.records import (
    BrokerRegistration,
    Endpoint,
    PartitionRecord,
    TopicRecord,
    broker_key,
    partition_key,
    topic_key,
)

_rev = [0]


def _kv(key: str, value: bytes, create: int | None = None) -> KeyValue:
    _rev[0] += 1
    return KeyValue(key, value, create or _rev[0], _rev[0], 1)


def put(image: MetadataImage, key: str, value: bytes) -> None:
    image.apply([WatchEvent("put", _kv(key, value))])


def delete(image: MetadataImage, key: str) -> None:
    _rev[0] += 1
    image.apply([WatchEvent("delete", KeyValue(key, b"", 0, _rev[0], 0))])


def broker(image: MetadataImage, node: int) -> None:
    put(image, broker_key(node), BrokerRegistration(node, (Endpoint("PLAINTEXT", "h", 9000 + node),)).encode())


def topic(image: MetadataImage, name: str, assignment: list[tuple[int, ...]], **configs: str) -> None:
    put(image, topic_key(name), TopicRecord(name, uuid.uuid4(), tuple(assignment), dict(configs)).encode())


def part(image: MetadataImage, name: str, p: int, leader: int, epoch: int, isr: tuple[int, ...]) -> None:
    put(image, partition_key(name, p), PartitionRecord(leader, epoch, isr, 0).encode())


def apply_all(image: MetadataImage, settings: ControllerSettings = ControllerSettings()) -> list:
    changes = decide(image, settings)
    for c in changes:
        put(image, partition_key(c.topic, c.partition), c.record.encode())
    return changes


# -- placement ---------------------------------------------------------------------------

def test_placement_spreads_leaders_and_never_repeats_a_broker() -> None:
    out = assign_replicas([1, 2, 3], 30, 3, rng=random.Random(7))
    assert all(len(set(r)) == 3 for r in out)
    leaders = Counter(r[0] for r in out)
    assert leaders == {1: 10, 2: 10, 3: 10}
    followers = Counter(r[1] for r in out)
    assert set(followers) == {1, 2, 3}


def test_placement_is_rack_aware() -> None:
    racks = {1: "a", 2: "a", 3: "b", 4: "b"}
    out = assign_replicas([1, 2, 3, 4], 20, 2, racks=racks, rng=random.Random(1))
    assert all(racks[r[0]] != racks[r[1]] for r in out)
    assert set(Counter(r[0] for r in out).values()) == {5}


def test_placement_refuses_more_replicas_than_brokers() -> None:
    with pytest.raises(PlacementError):
        assign_replicas([1, 2], 1, 3)


# -- image -------------------------------------------------------------------------------

def test_image_tracks_topics_partitions_and_deltas() -> None:
    image = MetadataImage()
    part(image, "t", 0, 1, 0, (1,))  # arrives before its topic: waits
    assert image.partition("t", 0) is None
    topic(image, "t", [(1, 2)])
    p = image.partition("t", 0)
    assert p is not None and p.replicas == (1, 2) and p.leader == 1
    _rev[0] += 1
    delta = image.apply([WatchEvent("delete", KeyValue(topic_key("t"), b"", 0, _rev[0], 0))])
    assert "t" in delta.topics_deleted and image.topic("t") is None


def test_image_sees_a_recreated_topic_as_delete_plus_create() -> None:
    image = MetadataImage()
    topic(image, "t", [(1,)])
    first = image.topic("t")
    assert first is not None
    old_id = first.topic_id
    delta = image.apply([WatchEvent("put", _kv(topic_key("t"), TopicRecord("t", uuid.uuid4(), ((1,),)).encode()))])
    assert delta.topics_deleted == {"t": old_id} and "t" in delta.topics_created


# -- controller decisions ------------------------------------------------------------------

def test_new_partitions_get_the_first_live_replica_as_leader() -> None:
    image = MetadataImage()
    for b in (1, 3):
        broker(image, b)
    topic(image, "t", [(2, 3, 1), (1, 2, 3)])
    apply_all(image)
    p0, p1 = image.partition("t", 0), image.partition("t", 1)
    assert p0 is not None and p1 is not None
    assert (p0.leader, p0.isr, p0.leader_epoch) == (3, (3, 1), 0)
    assert (p1.leader, p1.isr) == (1, (1, 3))
    assert decide(image, ControllerSettings()) == []


def test_leader_loss_elects_from_the_isr_in_assignment_order() -> None:
    image = MetadataImage()
    for b in (1, 2, 3):
        broker(image, b)
    topic(image, "t", [(1, 2, 3)])
    part(image, "t", 0, 1, 4, (1, 3, 2))
    delete(image, broker_key(1))
    [change] = apply_all(image)
    p = image.partition("t", 0)
    assert p is not None and (p.leader, p.leader_epoch, p.isr) == (2, 5, (3, 2))
    assert change.reason == "leader election from the ISR"


def test_follower_loss_shrinks_the_isr_without_a_new_leader_epoch() -> None:
    image = MetadataImage()
    for b in (1, 2, 3):
        broker(image, b)
    topic(image, "t", [(1, 2, 3)])
    part(image, "t", 0, 1, 4, (1, 2, 3))
    delete(image, broker_key(3))
    apply_all(image)
    p = image.partition("t", 0)
    assert p is not None and (p.leader, p.leader_epoch, p.isr) == (1, 4, (1, 2))


def test_last_isr_member_dying_leaves_the_partition_offline_until_it_returns() -> None:
    image = MetadataImage()
    for b in (1, 2):
        broker(image, b)
    topic(image, "t", [(1, 2)])
    part(image, "t", 0, 1, 0, (1,))
    delete(image, broker_key(1))
    apply_all(image)
    p = image.partition("t", 0)
    assert p is not None and (p.leader, p.leader_epoch, p.isr) == (-1, 1, (1,))
    assert decide(image, ControllerSettings()) == []  # broker 2 is alive but not in sync: stays offline
    broker(image, 1)
    apply_all(image)
    p = image.partition("t", 0)
    assert p is not None and (p.leader, p.leader_epoch, p.isr) == (1, 2, (1,))


def test_unclean_election_when_enabled_for_the_topic() -> None:
    image = MetadataImage()
    for b in (1, 2):
        broker(image, b)
    topic(image, "t", [(1, 2)], **{"unclean.leader.election.enable": "true"})
    part(image, "t", 0, 1, 0, (1,))
    delete(image, broker_key(1))
    apply_all(image)
    p = image.partition("t", 0)
    assert p is not None and (p.leader, p.isr) == (2, (2,))


def test_preferred_and_unclean_elections_on_demand() -> None:
    image = MetadataImage()
    for b in (1, 2):
        broker(image, b)
    topic(image, "t", [(1, 2), (2, 1)])
    part(image, "t", 0, 2, 3, (2, 1))
    part(image, "t", 1, -1, 3, (1,))
    p0, p1 = image.partition("t", 0), image.partition("t", 1)
    assert p0 is not None and p1 is not None
    change = elect_preferred(image, p0)
    assert change is not None and (change.record.leader, change.record.leader_epoch) == (1, 4)
    assert elect_preferred(image, p1) is None
    delete(image, broker_key(1))
    unclean = elect_unclean(image, p1)
    assert unclean is not None and (unclean.record.leader, unclean.record.isr) == (2, (2,))


def test_imbalance_check_moves_leadership_back_to_preferred_replicas() -> None:
    image = MetadataImage()
    for b in (1, 2):
        broker(image, b)
    topic(image, "t", [(1, 2)] * 10)
    for p in range(10):
        part(image, "t", p, 2 if p < 2 else 1, 1, (1, 2))
    moves = imbalanced_partitions(image, ControllerSettings(imbalance_percentage=10))
    assert sorted(c.partition for c in moves) == [0, 1]
    assert imbalanced_partitions(image, ControllerSettings(imbalance_percentage=25)) == []


# -- broker epochs (KIP-380) and controlled shutdown -----------------------------------------

def reregister(image: MetadataImage, node: int, *, shutting_down: bool = False) -> int:
    """A new incarnation of ``node`` (a restart within its session): the same key, a new create revision."""
    _rev[0] += 1
    reg = BrokerRegistration(node, (Endpoint("PLAINTEXT", "h", 9000 + node),), shutting_down=shutting_down)
    image.apply([WatchEvent("put", KeyValue(broker_key(node), reg.encode(), _rev[0], _rev[0], 1))])
    return _rev[0]


def epoch_part(image: MetadataImage, name: str, p: int, leader: int, epoch: int, isr: tuple[int, ...]) -> None:
    """A partition record naming each ISR member's current incarnation."""
    epochs = tuple(image.broker_epoch(r) for r in isr)
    put(image, partition_key(name, p), PartitionRecord(leader, epoch, isr, 0, epochs).encode())


def test_new_partitions_record_the_isr_members_epochs() -> None:
    image = MetadataImage()
    for b in (1, 2):
        broker(image, b)
    topic(image, "t", [(1, 2)])
    apply_all(image)
    p = image.partition("t", 0)
    assert p is not None and p.record.isr_epochs == (image.broker_epoch(1), image.broker_epoch(2))


def test_a_restarted_follower_leaves_the_isr_though_it_never_looked_dead() -> None:
    image = MetadataImage()
    for b in (1, 2, 3):
        broker(image, b)
    topic(image, "t", [(1, 2, 3)])
    epoch_part(image, "t", 0, 1, 4, (1, 2, 3))
    reregister(image, 3)  # restarted within its session: never removed from the image
    [change] = apply_all(image)
    p = image.partition("t", 0)
    assert p is not None and (p.leader, p.leader_epoch, p.isr) == (1, 4, (1, 2))
    assert change.reason == "dead or restarted replicas leave the ISR"


def test_a_restarted_leader_is_never_leader_at_its_old_epoch() -> None:
    image = MetadataImage()
    for b in (1, 2, 3):
        broker(image, b)
    topic(image, "t", [(1, 2, 3)])
    epoch_part(image, "t", 0, 1, 4, (1, 2, 3))
    reregister(image, 1)
    apply_all(image)
    p = image.partition("t", 0)
    assert p is not None and (p.leader, p.leader_epoch, p.isr) == (2, 5, (2, 3))


def test_a_restarted_last_isr_member_leads_again_at_a_new_epoch() -> None:
    image = MetadataImage()
    for b in (1, 2):
        broker(image, b)
    topic(image, "t", [(1, 2)])
    epoch_part(image, "t", 0, 1, 4, (1,))
    new_epoch = reregister(image, 1)
    apply_all(image)
    p = image.partition("t", 0)
    assert p is not None and (p.leader, p.leader_epoch, p.isr, p.record.isr_epochs) == (1, 5, (1,), (new_epoch,))
    assert decide(image, ControllerSettings()) == []


def test_records_without_epochs_are_taken_as_they_are() -> None:
    image = MetadataImage()
    for b in (1, 2):
        broker(image, b)
    topic(image, "t", [(1, 2)])
    part(image, "t", 0, 1, 4, (1, 2))  # written before broker epochs were recorded
    reregister(image, 2)
    assert decide(image, ControllerSettings()) == []


def test_brokers_shutting_down_get_no_new_leadership() -> None:
    image = MetadataImage()
    for b in (1, 2, 3):
        broker(image, b)
    topic(image, "t", [(1, 2, 3), (2, 1, 3)])
    epoch_part(image, "t", 0, 1, 0, (1, 2, 3))
    epoch_part(image, "t", 1, 1, 0, (2, 1, 3))  # led by 1, preferred 2
    reg = BrokerRegistration(2, (Endpoint("PLAINTEXT", "h", 9002),), shutting_down=True)
    _rev[0] += 1
    delta = image.apply([WatchEvent("put", KeyValue(broker_key(2), reg.encode(), image.broker_epoch(2), _rev[0], 2))])
    assert delta.brokers_changed == {2} and image.is_shutting_down(2)
    p1 = image.partition("t", 1)
    assert p1 is not None and elect_preferred(image, p1) is None
    delete(image, broker_key(1))
    apply_all(image)
    p0 = image.partition("t", 0)
    assert p0 is not None and p0.leader == 3  # 2 comes before 3 in the assignment, but is leaving
    topic(image, "u", [(2, 3)])
    apply_all(image)
    u = image.partition("u", 0)
    assert u is not None and u.leader == 3
