"""PartitionLog as a replica: leader-epoch stamping, follower appends, truncation, the high watermark."""

from __future__ import annotations

import os

import pytest

from broker.log import CorruptMessageError, LogConfig, PartitionLog
from broker.log.testing import FakeClock, make_batch
from protocol.records import decode_record_set, iter_batch_headers


def replica(tmp_path: os.PathLike[str], name: str, clock: FakeClock | None = None) -> PartitionLog:
    return PartitionLog(os.path.join(tmp_path, name, "t-0"), "t", 0, LogConfig.from_dict({}), clock or FakeClock())


def leader_bytes(log: PartitionLog) -> bytes:
    """Every batch of the log (all segments), as stored."""
    return b"".join(data for _, data in log.iter_batches(log.log_start_offset))


def test_leader_stamps_its_epoch_and_the_high_watermark_is_separate(tmp_path) -> None:
    log = replica(tmp_path, "a")
    log.assign_leader_epoch(3)
    log.append(make_batch(2))
    log.assign_leader_epoch(5)
    log.append(make_batch(1))
    epochs = [h.partition_leader_epoch for _, h in iter_batch_headers(leader_bytes(log))]
    assert epochs == [3, 5]
    assert log.epoch_cache.entries == [(3, 0), (5, 2)]
    assert log.high_watermark == 0 and log.read(0, 1 << 20).slices == []  # consumers see nothing yet
    log.high_watermark = 2
    assert [r.offset for r in decode_record_set(log.read(0, 1 << 20).to_bytes())] == [0, 1]
    log.high_watermark = 99
    assert log.high_watermark == 3  # never past the log end


def test_follower_copies_the_leaders_bytes_and_epochs(tmp_path) -> None:
    leader, follower = replica(tmp_path, "l"), replica(tmp_path, "f")
    leader.assign_leader_epoch(1)
    for n in (3, 1, 4):
        leader.append(make_batch(n))
    leader.assign_leader_epoch(2)
    leader.append(make_batch(2))
    data = leader_bytes(leader)
    assert follower.append_as_follower(data[:-7]) == 3  # the torn last batch waits for the next fetch
    assert follower.append_as_follower(data) == 1  # already-present batches are skipped
    assert leader_bytes(follower) == data
    assert follower.epoch_cache.entries == [(1, 0), (2, 8)]
    assert follower.log_end_offset == 10


def test_follower_rejects_a_corrupt_batch_and_keeps_what_came_before(tmp_path) -> None:
    leader, follower = replica(tmp_path, "l"), replica(tmp_path, "f")
    leader.assign_leader_epoch(0)
    leader.append(make_batch(1))
    leader.append(make_batch(1))
    data = bytearray(leader_bytes(leader))
    data[-1] ^= 0xFF
    with pytest.raises(CorruptMessageError):
        follower.append_as_follower(data)
    assert follower.log_end_offset == 1


def test_truncation_drops_a_divergent_tail_across_segments(tmp_path) -> None:
    log = PartitionLog(os.path.join(tmp_path, "t-0"), "t", 0, LogConfig.from_dict({"segment.bytes": "300"}),
                       FakeClock())
    log.assign_leader_epoch(1)
    for _ in range(10):
        log.append(make_batch(1, value=b"x" * 100))
    log.assign_leader_epoch(2)
    for _ in range(5):
        log.append(make_batch(1, value=b"y" * 100))
    log.high_watermark = 12
    assert len(log.segments) > 3
    log.truncate_to(7)
    assert log.log_end_offset == 7 and log.high_watermark == 7
    assert log.epoch_cache.entries == [(1, 0)]
    assert [r.offset for r in decode_record_set(leader_bytes(log))] == list(range(7))
    log.assign_leader_epoch(3)
    assert log.append(make_batch(1)).base_offset == 7
    log.close()
    again = PartitionLog(os.path.join(tmp_path, "t-0"), "t", 0, LogConfig.from_dict({"segment.bytes": "300"}),
                         FakeClock())
    assert again.log_end_offset == 8 and again.epoch_cache.entries == [(1, 0), (3, 7)]


def test_truncate_fully_and_start_at_the_leaders_log_start(tmp_path) -> None:
    log = replica(tmp_path, "f")
    log.append_as_follower(b"")
    log.assign_leader_epoch(0)
    log.append(make_batch(3))
    log.truncate_fully_and_start_at(100)
    assert (log.log_start_offset, log.log_end_offset, log.high_watermark) == (100, 100, 100)
    leader = replica(tmp_path, "l")
    leader.truncate_fully_and_start_at(100)
    leader.assign_leader_epoch(4)
    leader.append(make_batch(2))
    assert log.append_as_follower(leader_bytes(leader)) == 1
    assert log.log_end_offset == 102 and log.epoch_cache.entries == [(4, 100)]


def test_follower_log_start_follows_the_leader_up_to_its_high_watermark(tmp_path) -> None:
    log = replica(tmp_path, "f")
    log.assign_leader_epoch(0)
    for _ in range(5):
        log.append(make_batch(2))
    log.high_watermark = 6
    log.follow_log_start_offset(8)
    assert log.log_start_offset == 6


def test_a_log_from_before_epochs_counts_as_epoch_zero(tmp_path) -> None:
    log = replica(tmp_path, "old")
    log.append(make_batch(2))  # no epoch assigned: written as the old broker did
    log.close()
    pdir = os.path.join(tmp_path, "old", "t-0")
    assert not os.path.exists(os.path.join(pdir, "leader-epoch-checkpoint"))
    with open(os.path.join(pdir, "partition.checkpoint"), "w") as fh:  # the format before replication
        fh.write('{"version": 1, "log_start_offset": 0, "recovery_point": 2}')
    again = replica(tmp_path, "old")
    assert again.epoch_cache.entries == [(0, 0)]
    assert again.high_watermark == 2  # a pre-replication checkpoint: everything was committed
