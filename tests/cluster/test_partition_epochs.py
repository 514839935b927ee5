"""Partition (sans-IO): broker epochs as a leader and a follower see them, and the controlled-shutdown
freeze — no store, no sockets."""

from __future__ import annotations

import uuid
from pathlib import Path

from broker.cluster.records import PartitionRecord
from broker.log import LogConfig, PartitionLog
from broker.log.testing import FakeClock, make_batch
from broker.replication.partition import Partition


def partition(tmp_path: Path, local: int) -> Partition:
    plog = PartitionLog(str(tmp_path / f"b{local}" / "t-0"), "t", 0, LogConfig.from_dict({}), FakeClock())
    return Partition("t", 0, uuid.uuid4(), local, plog)


def test_a_record_naming_an_earlier_incarnation_leader_is_not_followed(tmp_path: Path) -> None:
    p = partition(tmp_path, 1)
    record = PartitionRecord(1, 4, (1, 2), 0, (10, 20))
    assert p.apply_record(record, (1, 2), 1, 0, local_epoch=10) == "leader"
    restarted = partition(tmp_path, 1)
    assert restarted.apply_record(record, (1, 2), 1, 0, local_epoch=11) == "follower"
    assert not restarted.is_leader and restarted.leader == -1
    # the controller elects the new incarnation again: a new leader epoch, its new broker epoch
    again = PartitionRecord(1, 5, (1,), 1, (11,))
    assert restarted.apply_record(again, (1, 2), 2, 0, local_epoch=11) == "leader"


def test_fetches_of_an_earlier_incarnation_do_not_count(tmp_path: Path) -> None:
    p = partition(tmp_path, 1)
    p.apply_record(PartitionRecord(1, 0, (1, 2), 0, (10, 20)), (1, 2), 1, 0, local_epoch=10)
    p.log.append(make_batch(5))
    assert p.update_follower(2, 5, 1, broker_epoch=21)  # the new incarnation caught up: HW moves
    assert p.log.high_watermark == 5
    p.log.append(make_batch(1))
    assert not p.update_follower(2, 6, 2, broker_epoch=20)  # a late fetch of the old one: ignored
    assert p.followers[2].log_end_offset == 5


def test_only_a_follower_fetching_as_its_current_incarnation_joins_the_isr(tmp_path: Path) -> None:
    p = partition(tmp_path, 1)
    p.apply_record(PartitionRecord(1, 0, (1,), 0, (10,)), (1, 2), 1, 0, local_epoch=10)
    p.log.append(make_batch(3))
    p.update_follower(2, 3, 1, broker_epoch=20)
    assert p.isr_change(2, 30_000, {1: 10, 2: 21}) is None  # broker 2 registered again since
    assert p.isr_change(2, 30_000, {1: 10, 2: 20}) == (1, 2)
    assert p.joining_epoch(2, {1: 10, 2: 20}) == 20


def test_a_partition_being_handed_over_knows_who_has_caught_up(tmp_path: Path) -> None:
    p = partition(tmp_path, 1)
    p.apply_record(PartitionRecord(1, 0, (1, 2, 3), 0, (10, 20, 30)), (1, 2, 3), 1, 0, local_epoch=10)
    p.log.append(make_batch(4))
    p.update_follower(2, 4, 1, broker_epoch=20)
    p.update_follower(3, 2, 1, broker_epoch=30)
    assert p.caught_up(2) and not p.caught_up(3)
    p.handing_over = True
    # a new record (the move) ends the handover here
    assert p.apply_record(PartitionRecord(2, 1, (2, 3), 1, (20, 30)), (1, 2, 3), 2, 0, local_epoch=10) == "follower"
    assert not p.handing_over


def test_a_leader_epoch_bump_that_keeps_the_leader_keeps_its_term(tmp_path: Path) -> None:
    """acks=all writes parked on a leader survive an epoch bump that keeps it leader (a reassignment
    completing): its log is not truncated; they fail only when the leadership is lost."""
    p = partition(tmp_path, 1)
    assert p.apply_record(PartitionRecord(1, 0, (1, 2, 3), 0, (10, 20, 30)), (1, 2, 3), 1, 0, local_epoch=10) == "leader"
    term = p.leader_term
    p.apply_record(PartitionRecord(1, 1, (1, 2), 1, (10, 20)), (1, 2), 2, 0, local_epoch=10)
    assert p.is_leader and p.leader_epoch == 1 and p.leader_term == term
    p.apply_record(PartitionRecord(2, 2, (2,), 2, (20,)), (1, 2), 3, 0, local_epoch=10)
    p.apply_record(PartitionRecord(1, 3, (1, 2), 3, (10, 20)), (1, 2), 4, 0, local_epoch=10)
    assert p.is_leader and p.leader_term == term + 1
