"""The log cleaner's policy and bounds: delete horizons for tombstones, the bounded key map, lazy
rewrites, min.cleanable.dirty.ratio, min/max.compaction.lag.ms, idempotent producers' last batches,
and the cleaner offset that survives a restart."""

from __future__ import annotations

import os
import tracemalloc
from pathlib import Path

import pytest

from broker.log import LogManager, PartitionLog
from broker.log.cleaner import MAP_ENTRY_BYTES, CleanerSettings, OffsetMap, cleanable_segments
from broker.log.errors import OutOfOrderSequenceError
from broker.log.testing import FakeClock, create_logs, open_log, open_manager
from protocol.records import DELETE_HORIZON_MASK, decode_batch, encode_batch

T0 = 1_700_000_000_000
TOPIC = "t"


def setup(tmp_path: Path, clock: FakeClock, *, settings: CleanerSettings | None = None,
          **configs: str) -> tuple[LogManager, PartitionLog]:
    lm = open_manager(tmp_path, clock, cleaner_settings=settings)
    base = {"cleanup.policy": "compact", "segment.bytes": "400"}
    create_logs(lm, TOPIC, 1, base | {k.replace("_", "."): v for k, v in configs.items()})
    return lm, lm.get_log(TOPIC, 0)


def put(log: PartitionLog, key: bytes, value: bytes | None, ts: int = T0, **kw: object) -> int:
    return log.append(encode_batch([(key, value, None, ts)], **kw)).base_offset  # type: ignore[arg-type]


def seal(log: PartitionLog, n: int = 8, prefix: bytes = b"fill") -> None:
    """Unique keys that push everything before them into sealed segments; then flush (the cleaner
    reads only what is on disk)."""
    for i in range(n):
        put(log, b"%s-%d-%d" % (prefix, log.log_end_offset, i), b"x" * 60)
    log.flush()


def run_pass(lm: LogManager) -> int:
    lm.request_cleaning()
    assert lm.cleaner.wait_idle(30)
    return lm.apply_cleaned()


def contents(log: PartitionLog) -> dict[int, tuple[bytes | None, bytes | None]]:
    return {r.offset: (r.key, r.value) for _, data in log.iter_batches(0) for r in decode_batch(data)[1]}


def test_a_tombstone_is_kept_for_delete_retention_ms_after_its_first_cleaning(tmp_path: Path) -> None:
    clock = FakeClock(T0)
    lm, log = setup(tmp_path, clock, delete_retention_ms="1000")
    with lm:
        put(log, b"k1", b"v1")
        tomb = put(log, b"k1", None)
        k2 = put(log, b"k2", b"v2")
        seal(log)
        assert run_pass(lm) == 1
        got = contents(log)
        assert 0 not in got and got[tomb] == (b"k1", None) and got[k2] == (b"k2", b"v2")
        hdr = next(h for h, _ in log.iter_batches(tomb) if h.base_offset == tomb)
        assert hdr.attributes & DELETE_HORIZON_MASK and hdr.base_timestamp == T0 + 1000
        clock.advance(999)
        assert not lm.cleaner.needs_cleaning(log)  # nothing dirty, the horizon not reached
        clock.advance(1)
        assert lm.cleaner.needs_cleaning(log)
        assert run_pass(lm) == 1
        got = contents(log)
        assert tomb not in got and got[k2] == (b"k2", b"v2")
        assert not lm.cleaner.needs_cleaning(log)


def test_the_key_map_is_bounded_and_a_pass_stops_where_it_is_full(tmp_path: Path) -> None:
    clock = FakeClock(T0)
    capacity = 10
    lm, log = setup(tmp_path, clock, settings=CleanerSettings(dedupe_buffer_size=capacity * MAP_ENTRY_BYTES),
                    min_cleanable_dirty_ratio="0.01")
    with lm:
        keys = [b"key-%02d" % i for i in range(30)]
        for rnd in range(2):
            for k in keys:
                put(log, k, b"round-%d" % rnd)
        seal(log, 2)
        end = cleanable_segments(log, clock())[-1].next_offset
        expected = {off: kv for off, kv in contents(log).items() if off >= 30}  # the second round, the fill
        passes = []
        while lm.cleaner.needs_cleaning(log):
            run_pass(lm)
            passes.append(log.cleaner_offset)
            assert len(passes) < 20
        assert passes[0] == capacity  # the first pass mapped 10 keys and stopped there
        assert passes == sorted(passes) and passes[-1] == end
        assert contents(log) == expected


def test_a_segment_that_loses_nothing_is_not_rewritten(tmp_path: Path) -> None:
    clock = FakeClock(T0)
    lm, log = setup(tmp_path, clock, min_cleanable_dirty_ratio="0.01")
    with lm:
        seal(log, 30, b"unique")
        before = log.segments
        assert run_pass(lm) == 1
        assert log.segments == before and all(a is b for a, b in zip(log.segments, before, strict=True))
        assert log.cleaner_offset == before[-2].next_offset
        assert not [n for n in os.listdir(log.directory) if n.startswith("cleaning")]
        # one overwrite of a key of the first segment: only that segment is written again
        first_key = decode_batch(next(log.iter_batches(0))[1])[1][0].key
        put(log, first_key, b"newer")
        seal(log, 10)
        before = log.segments
        assert run_pass(lm) == 1
        replaced = [i for i, (a, b) in enumerate(zip(log.segments, before, strict=True)) if a is not b]
        assert replaced == [0]


def test_min_cleanable_dirty_ratio_decides_when_a_pass_is_due(tmp_path: Path) -> None:
    clock = FakeClock(T0)
    lm, log = setup(tmp_path, clock, min_cleanable_dirty_ratio="0.6")
    with lm:
        seal(log, 30)
        assert lm.cleaner.needs_cleaning(log)  # all of it is dirty
        run_pass(lm)
        seal(log, 8)  # a little new data: the dirty share stays below 0.6
        assert not lm.cleaner.needs_cleaning(log)
        seal(log, 60)
        assert lm.cleaner.needs_cleaning(log)


def test_min_compaction_lag_keeps_recent_segments_out_of_a_pass(tmp_path: Path) -> None:
    clock = FakeClock(T0)
    lm, log = setup(tmp_path, clock, min_compaction_lag_ms="10000")
    with lm:
        for i in range(20):
            put(log, b"k", b"v%d" % i, ts=T0 + i)
        log.flush()
        assert cleanable_segments(log, clock()) == []
        assert not lm.cleaner.needs_cleaning(log)
        clock.advance(10_000 + 20)
        assert lm.cleaner.needs_cleaning(log)
        run_pass(lm)
        assert len([v for k, v in contents(log).values() if k == b"k"]) < 20


def test_max_compaction_lag_forces_a_pass_and_rolls_the_active_segment(tmp_path: Path) -> None:
    clock = FakeClock(T0)
    lm, log = setup(tmp_path, clock, min_cleanable_dirty_ratio="0.99", max_compaction_lag_ms="5000",
                    segment_bytes="100000")
    with lm:
        put(log, b"k", b"v0", ts=T0)
        clock.advance(5001)
        put(log, b"k", b"v1", ts=clock())  # the active segment is older than the lag: it rolls first
        assert len(log.segments) == 2
        log.flush()
        seal(log, 40)  # a big clean share keeps the ratio low...
        run_pass(lm)
        put(log, b"k", b"v2", ts=clock())
        clock.advance(5001)
        put(log, b"k", b"v3", ts=clock())
        log.flush()
        segments = cleanable_segments(log, clock())
        dirty = sum(s.size for s in segments if s.next_offset > log.cleaner_offset)
        assert dirty / sum(s.size for s in segments) < 0.99
        clock.advance(5001)
        assert lm.cleaner.needs_cleaning(log)  # ...but the oldest dirty record is past the lag


def test_an_idempotent_producers_last_batch_survives_empty_and_keeps_its_sequence(tmp_path: Path) -> None:
    clock = FakeClock(T0)
    lm, log = setup(tmp_path, clock)
    pid = 4242
    with lm:
        for seq in range(3):
            put(log, b"k%d" % seq, b"idem", producer_id=pid, producer_epoch=0, base_sequence=seq)
        for seq in range(3):
            put(log, b"k%d" % seq, b"overwritten")  # every record of the producer is superseded
        seal(log)
        run_pass(lm)
        batches = [h for h, _ in log.iter_batches(0)]
        mine = [h for h in batches if h.producer_id == pid]
        assert [(h.base_offset, h.base_sequence, h.records_count) for h in mine] == [(2, 2, 0)]
        assert all(k != b"idem" for k, v in contents(log).values() if v == b"idem") and \
            not [kv for kv in contents(log).values() if kv[1] == b"idem"]
    for name in os.listdir(log.directory):
        if name.endswith(".snapshot"):
            os.unlink(os.path.join(log.directory, name))  # state is rebuilt from the log alone
    with open_manager(tmp_path, clock) as lm:
        log = lm.get_log(TOPIC, 0)
        with pytest.raises(OutOfOrderSequenceError):
            put(log, b"k9", b"gap", producer_id=pid, producer_epoch=0, base_sequence=5)
        assert put(log, b"k9", b"next", producer_id=pid, producer_epoch=0, base_sequence=3) == log.log_end_offset - 1


def test_the_cleaner_offset_survives_a_restart(tmp_path: Path) -> None:
    clock = FakeClock(T0)
    lm, log = setup(tmp_path, clock)
    with lm:
        for i in range(20):
            put(log, b"k%d" % (i % 4), b"v%d" % i)
        seal(log)
        run_pass(lm)
        done = log.cleaner_offset
        assert done > 20
    with open_manager(tmp_path, clock) as lm:
        log = lm.get_log(TOPIC, 0)
        assert log.cleaner_offset == done
        assert not lm.cleaner.needs_cleaning(log)


def test_the_key_map_stays_within_its_memory_budget() -> None:
    capacity = 20_000
    tracemalloc.start()
    try:
        offsets = OffsetMap(capacity)
        for i in range(capacity + 500):
            offsets.put(b"a-rather-long-key-%0100d" % i, 10**12 + i)
        used, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(offsets) == capacity
    assert used <= capacity * MAP_ENTRY_BYTES
    assert offsets.get(b"a-rather-long-key-%0100d" % 5) == 10**12 + 5
    assert offsets.get(b"a-rather-long-key-%0100d" % (capacity + 1)) == -1  # not mapped: the map was full


def test_segment_index_bytes_and_jitter_roll_segments(tmp_path: Path) -> None:
    clock = FakeClock(T0)
    log = open_log(tmp_path / "a", clock, segment_index_bytes="16", index_interval_bytes="0")
    for i in range(7):
        log.append(encode_batch([(b"k", b"v%d" % i, None, T0)]))
    # an index entry per batch after the first; the 12-byte time index has room for one: two per segment
    assert [s.next_offset - s.base_offset for s in log.segments] == [2, 2, 2, 1]
    log.close()
    log = open_log(tmp_path / "b", clock, segment_ms="1000", segment_jitter_ms="999")
    log.append(encode_batch([(b"k", b"v", None, T0)]))
    clock.advance(999)
    log.append(encode_batch([(b"k", b"v", None, clock())]))
    jittered = len(log.segments) == 2  # the jitter of this segment is one of 0..998 ms: it rolled early
    assert jittered
    log.close()
