"""What a replica's log never does to data its followers may not have (real files, fake clock).

* Retention deletes a segment only when the high watermark has passed all of it (Kafka's
  ``UnifiedLog.deletableSegments``: ``highWatermark >= next segment's base offset``, the log end for
  the active segment), so the log start never overtakes the high watermark and the high watermark is
  never dragged up past records no follower has.
* DeleteRecords and a follower's log start never pass the high watermark either.
* A replica whose leader-epoch checkpoint cannot be read never keeps a tail nobody checked: as a
  follower it truncates to its high watermark before fetching (Kafka's rule for a follower without
  epochs), as a leader it rebuilds the cache from the epochs its batches carry.
"""

from __future__ import annotations

import os

import pytest

from broker.log import LogConfig, OffsetOutOfRangeError, PartitionLog
from broker.log.testing import FakeClock, make_batch
from protocol.records import decode_record_set

T0 = 1_700_000_000_000
HOUR = 3_600_000


def leader(tmp_path: os.PathLike[str], clock: FakeClock, **configs: str) -> PartitionLog:
    """A leader's log whose high watermark the test moves (as followers' fetches would)."""
    config = LogConfig.from_dict({k.replace("_", "."): v for k, v in configs.items()})
    log = PartitionLog(os.path.join(tmp_path, "t-0"), "t", 0, config, clock)
    log.assign_leader_epoch(1)
    return log


def fill(log: PartitionLog, n: int, ts: int) -> None:
    for i in range(n):
        log.append(make_batch(1, ts=ts + i, value=b"v" * 100))


def offsets(log: PartitionLog, start: int) -> list[int]:
    """What a follower fetching from ``start`` reads (up to the log end)."""
    data = b"".join(s.read() for s in log.read(start, 1 << 20, max_offset=log.log_end_offset).slices)
    return [r.offset for r in decode_record_set(data)]


def test_time_retention_keeps_every_segment_the_high_watermark_has_not_passed(tmp_path) -> None:
    clock = FakeClock(T0)
    log = leader(tmp_path, clock, segment_bytes="600", retention_ms=str(HOUR))
    fill(log, 30, T0)
    assert len(log.segments) >= 4
    bases = [s.base_offset for s in log.segments]
    hw = bases[2] + 1  # inside the third segment: the followers have this much
    log.high_watermark = hw
    clock.advance(2 * HOUR)  # every segment, the active one too, is past retention.ms
    log.apply_retention()
    assert log.log_start_offset == log.segments[0].base_offset == bases[2]  # the HW's segment is kept
    assert log.high_watermark == hw  # not dragged up to a new log start
    assert log.log_end_offset == 30
    assert offsets(log, hw)[0] == hw and offsets(log, hw)[-1] <= 29  # the followers can still fetch it
    log.close()
    log = leader(tmp_path, clock, segment_bytes="600", retention_ms=str(HOUR))  # what was checkpointed
    assert (log.log_start_offset, log.high_watermark, log.log_end_offset) == (bases[2], hw, 30)
    # once the followers have everything, the rest goes (the active segment rolled, an empty one kept)
    log.high_watermark = log.log_end_offset
    log.apply_retention()
    assert len(log.segments) == 1 and log.active_segment.size == 0
    assert log.log_start_offset == log.log_end_offset == log.high_watermark == 30
    log.close()


def test_an_expired_active_segment_is_not_rolled_away_while_followers_lack_it(tmp_path) -> None:
    clock = FakeClock(T0)
    log = leader(tmp_path, clock, segment_bytes="100000", retention_ms=str(HOUR))
    fill(log, 5, T0)
    log.high_watermark = 2
    clock.advance(2 * HOUR)
    assert log.apply_retention() == 0
    assert (log.log_start_offset, log.high_watermark, log.log_end_offset) == (0, 2, 5)
    assert offsets(log, 2) == [2, 3, 4]
    log.close()


def test_size_retention_keeps_every_segment_the_high_watermark_has_not_passed(tmp_path) -> None:
    clock = FakeClock(T0)
    log = leader(tmp_path, clock, segment_bytes="600", retention_bytes="700")
    fill(log, 30, T0)
    hw = log.segments[1].base_offset  # the followers have the first segment only
    log.high_watermark = hw
    deleted = log.apply_retention()
    assert deleted == 1
    assert log.log_start_offset == hw == log.high_watermark
    assert offsets(log, hw)[0] == hw
    log.high_watermark = log.log_end_offset
    log.apply_retention()
    assert log.size_bytes - log.segments[0].size < 700 and log.log_start_offset <= log.high_watermark
    log.close()


def test_delete_records_and_a_followers_log_start_stop_at_the_high_watermark(tmp_path) -> None:
    clock = FakeClock(T0)
    log = leader(tmp_path, clock, segment_bytes="600")
    fill(log, 30, T0)
    log.high_watermark = 12
    with pytest.raises(OffsetOutOfRangeError):
        log.delete_records_before(13)
    assert log.delete_records_before(-1) == 12
    log.follow_log_start_offset(25)
    assert log.log_start_offset == 12 == log.high_watermark
    log.close()


# ------------------------------------------------------------- an unreadable leader-epoch checkpoint
def replica(tmp_path: os.PathLike[str], name: str) -> PartitionLog:
    return PartitionLog(os.path.join(tmp_path, name, "t-0"), "t", 0, LogConfig.from_dict({}), FakeClock(T0))


def all_batches(log: PartitionLog) -> bytes:
    return b"".join(data for _, data in log.iter_batches(log.log_start_offset))


def diverged_pair(tmp_path: os.PathLike[str]) -> tuple[PartitionLog, PartitionLog]:
    """A leader (epoch 2 from offset 6) and an old leader whose tail 6..9 was written in epoch 1 and
    never committed; the old leader's high watermark is 6 and its leader-epoch checkpoint is torn."""
    new, old = replica(tmp_path, "new"), replica(tmp_path, "old")
    old.assign_leader_epoch(1)
    for _ in range(6):
        old.append(make_batch(1, value=b"committed"))
    new.append_as_follower(all_batches(old))
    old.high_watermark = new.high_watermark = 6
    for _ in range(4):
        old.append(make_batch(1, value=b"lost"))  # acks=1, then the old leader died
    new.assign_leader_epoch(2)
    for _ in range(3):
        new.append(make_batch(1, value=b"new"))
    new.high_watermark = new.log_end_offset
    old.close()
    with open(os.path.join(tmp_path, "old", "t-0", "leader-epoch-checkpoint"), "wb") as fh:
        fh.write(b"0\n2\n1 0\n")  # torn: one of its two entries is missing
    return new, replica(tmp_path, "old")


def test_a_follower_with_an_unreadable_epoch_checkpoint_truncates_to_its_high_watermark(tmp_path) -> None:
    new, old = diverged_pair(tmp_path)
    assert old.epoch_cache.unreadable and old.epoch_cache.entries == []
    assert (old.high_watermark, old.log_end_offset) == (6, 10)
    assert old.prepare_to_follow()
    assert old.log_end_offset == 6
    old.append_as_follower(new.read(6, 1 << 20, max_offset=new.log_end_offset).to_bytes())
    assert all_batches(old) == all_batches(new)
    assert old.epoch_cache.entries == [(2, 6)] and not old.epoch_cache.unreadable
    assert not old.prepare_to_follow()  # it knows its epochs again: the divergence check does the rest


def test_a_leader_with_an_unreadable_epoch_checkpoint_rebuilds_it_from_its_batches(tmp_path) -> None:
    _, old = diverged_pair(tmp_path)
    old.assign_leader_epoch(3)
    assert old.epoch_cache.entries == [(1, 0), (3, 10)]
    # a follower whose last batch is of epoch 1 learns where epoch 1 ends here
    assert old.epoch_cache.end_offset_for(1, old.log_end_offset) == (1, 10)


async def test_following_a_leader_with_an_unreadable_epoch_checkpoint_drops_the_uncommitted_tail(tmp_path) -> None:
    """The broker's fetcher manager, given the partition to follow (as the replica manager does on a
    leadership change), leaves no tail the leader could not check."""
    import uuid

    from broker.replication.fetcher import FetcherSettings, ReplicaFetcherManager
    from broker.replication.partition import Partition
    from protocol.timer_service import WheelTimer

    _, old = diverged_pair(tmp_path)
    partition = Partition("t", 0, uuid.uuid4(), 1, old)
    partition.leader, partition.leader_epoch = 2, 2
    manager = ReplicaFetcherManager(1, FetcherSettings(backoff_ms=10), WheelTimer(), broker=lambda _id: None,
                                    broker_epoch=lambda: 1, topic_name=lambda _id: "t")
    try:
        manager.follow(partition)
        assert old.log_end_offset == 6
    finally:
        await manager.close()
