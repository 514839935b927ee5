"""The log cleaner: compaction planned on the owner thread, cleaned on a worker, swapped crash-safely.

``ManualExecutor`` stands in for the cleaner's worker thread so a test decides when (and on
which thread) a pass runs; ``crash`` drops a log manager the way a killed process would.
"""

from __future__ import annotations

import os
import random
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import broker.log.cleaner as cleaner
from broker.log import KafkaStorageError, LogManager, PartitionLog
from broker.log.testing import FakeClock, create_logs, delete_logs, open_manager
from protocol.records import BatchHeader, decode_batch, encode_batch

T0 = 1_700_000_000_000
TOPIC = "compacted"
CONFIGS = {"cleanup.policy": "compact", "segment.bytes": "1500", "delete.retention.ms": "1000",
           "index.interval.bytes": "200"}


class ManualExecutor:
    """Keeps submitted passes until the test runs them, on a thread of its own."""

    def __init__(self) -> None:
        self.jobs: list[Callable[[], None]] = []

    def submit(self, fn: Callable[..., None], *args: Any) -> None:
        self.jobs.append(lambda: fn(*args))

    def run_in_thread(self) -> int:
        """Run the pending passes on a new thread; returns that thread's ident."""
        jobs, self.jobs = self.jobs, []
        idents: list[int] = []

        def work() -> None:
            idents.append(threading.get_ident())
            for job in jobs:
                job()

        t = threading.Thread(target=work)
        t.start()
        t.join()
        return idents[0]


def fill(log: PartitionLog, n: int = 240, seed: int = 7) -> None:
    """Keyed updates, multi-record batches, old and recent tombstones, keyless records and
    idempotent batches — the cases the cleaner treats differently."""
    rng = random.Random(seed)
    seq = 0
    for i in range(n):
        ts = T0 + i
        kind = rng.random()
        if kind < 0.05:
            batch = encode_batch([(None, b"keyless-%d" % i, None, ts)])
        elif kind < 0.1:
            batch = encode_batch([(b"k%d" % rng.randrange(12), b"idem-%d" % i, None, ts)],
                                 producer_id=77, producer_epoch=0, base_sequence=seq)
            seq += 1
        elif kind < 0.2:
            tomb_ts = ts if rng.random() < 0.5 else T0 + 100_000  # old (past the horizon) or recent
            batch = encode_batch([(b"k%d" % rng.randrange(12), None, None, tomb_ts)])
        elif kind < 0.35:
            batch = encode_batch([(b"k%d" % rng.randrange(12), b"multi-%d-%d" % (i, j), None, ts)
                                  for j in range(rng.randrange(2, 4))])
        else:
            batch = encode_batch([(b"k%d" % rng.randrange(12), b"v-%d" % i, None, ts)])
        log.append(batch)


def batches(log: PartitionLog) -> list[tuple[BatchHeader, bytes]]:
    return list(log.iter_batches(0))


def expected_after_cleaning(before: list[tuple[BatchHeader, bytes]], sealed_end: int,
                            now_ms: int) -> list[tuple[int, bytes | None, bytes | None]]:
    """Kafka's compaction rule written out record by record, independently of the cleaner: the
    (offset, key, value) of every record a first pass over the sealed data keeps."""
    latest: dict[bytes, int] = {}
    for hdr, data in before:
        if not hdr.is_control and hdr.base_offset < sealed_end:  # a pass reads sealed segments only
            for r in decode_batch(data)[1]:
                if r.key is not None:
                    latest[r.key] = r.offset
    out = []
    for hdr, data in before:
        for r in decode_batch(data)[1]:
            if hdr.base_offset >= sealed_end or (r.key is not None and latest[r.key] == r.offset):
                out.append((r.offset, r.key, r.value))  # a first pass stamps tombstones, drops none
    return out


def records(log: PartitionLog) -> list[tuple[int, bytes | None, bytes | None]]:
    return [(r.offset, r.key, r.value) for _, data in batches(log) for r in decode_batch(data)[1]]


def compacted_manager(tmp_path: Path, clock: FakeClock, executor: Any = None) -> tuple[LogManager, PartitionLog]:
    lm = open_manager(tmp_path, clock, cleaner_executor=executor)
    create_logs(lm, TOPIC, 1, CONFIGS)
    log = lm.get_log(TOPIC, 0)
    fill(log)
    clock.advance(200_000)
    return lm, log


def crash(lm: LogManager, *extra: Any) -> None:
    """Drop ``lm`` as a killed process would: descriptors closed, nothing flushed or written."""
    segments = [seg for log in lm.logs() for seg in log.segments] + list(extra)
    for seg in segments:
        seg.file.close()
        for index in (seg.offset_index, seg.time_index):
            if index._fd >= 0:
                os.close(index._fd)
                index._fd = -1
    os.close(lm._lock_fd)
    lm._lock_fd = -1


def leftovers(directory: str) -> list[str]:
    return [n for n in os.listdir(directory) if n.endswith(".swap") or n.startswith("cleaning")]


# ----------------------------------------------------------------------------------- results
def test_cleaning_keeps_the_latest_record_per_key_byte_for_byte(tmp_path):
    clock = FakeClock(T0)
    lm, log = compacted_manager(tmp_path, clock)
    with lm:
        before = batches(log)
        leo = log.log_end_offset
        sealed_end = log.segments[-2].next_offset
        assert len(log.segments) > 4
        lm.maintenance()
        assert lm.cleaner.wait_idle(30)
        assert lm.apply_cleaned() == 1
        after = [data for _, data in batches(log)]
        assert records(log) == expected_after_cleaning(before, sealed_end, clock())
        assert len(after) < len(before)
        # batches that lost nothing and hold no tombstone are kept byte for byte
        originals = {data for _, data in before}
        untouched = [data for hdr, data in batches(log) if data in originals]
        assert untouched and all(hdr.base_offset >= sealed_end or all(r.value is not None for r in
                                 decode_batch(data)[1]) for hdr, data in batches(log) if data in originals)
        assert log.log_end_offset == leo
        assert [s.base_offset for s in log.segments] == sorted({s.base_offset for s in log.segments})
        assert leftovers(log.directory) == []
        # every surviving batch is found through the (new) offset index
        for hdr, data in batches(log):
            assert log.read_bytes(hdr.base_offset, 1).startswith(data)
        # nothing new sealed: the next round plans nothing
        lm.maintenance()
        assert not lm.cleaner.running(log)
    with open_manager(tmp_path, clock) as lm:
        log = lm.get_log(TOPIC, 0)
        assert not log.recovery_report.repaired
        assert [data for _, data in batches(log)] == after
        assert log.append(encode_batch([(b"k1", b"x", None, T0)])).base_offset == leo


def test_maintenance_never_decodes_on_the_calling_thread(tmp_path, monkeypatch):
    caller = threading.get_ident()
    decoded_on: list[int] = []
    real_decode = cleaner.decode_batch

    def counting_decode(*args: Any, **kwargs: Any) -> Any:
        decoded_on.append(threading.get_ident())
        return real_decode(*args, **kwargs)

    monkeypatch.setattr(cleaner, "decode_batch", counting_decode)
    clock = FakeClock(T0)
    lm = open_manager(tmp_path, clock)
    with lm:
        create_logs(lm, TOPIC, 1, CONFIGS)
        log = lm.get_log(TOPIC, 0)
        fill(log)
        clock.advance(200_000)
        lm.maintenance()
        assert caller not in decoded_on
        assert lm.cleaner.wait_idle(30)
        assert decoded_on and caller not in decoded_on


def test_maintenance_plans_without_decoding_and_the_worker_does_the_work(tmp_path, monkeypatch):
    decoded_on: list[int] = []
    real_decode = cleaner.decode_batch

    def counting_decode(*args: Any, **kwargs: Any) -> Any:
        decoded_on.append(threading.get_ident())
        return real_decode(*args, **kwargs)

    monkeypatch.setattr(cleaner, "decode_batch", counting_decode)
    clock = FakeClock(T0)
    executor = ManualExecutor()
    lm, log = compacted_manager(tmp_path, clock, executor)
    with lm:
        before = batches(log)
        lm.maintenance()
        assert decoded_on == []  # the owner thread only planned the pass
        assert len(executor.jobs) == 1 and lm.cleaner.running(log)
        lm.maintenance()
        assert len(executor.jobs) == 1  # one pass per log at a time
        worker = executor.run_in_thread()
        assert decoded_on and set(decoded_on) == {worker}
        assert batches(log) == before  # nothing changes until the swap on the owner thread
        assert lm.apply_cleaned() == 1
        assert len(batches(log)) < len(before)


def test_logs_are_cleaned_one_pass_at_a_time(tmp_path):
    clock = FakeClock(T0)
    executor = ManualExecutor()
    with open_manager(tmp_path, clock, cleaner_executor=executor) as lm:
        create_logs(lm, TOPIC, 3, CONFIGS)
        logs = [lm.get_log(TOPIC, p) for p in range(3)]
        for i, log in enumerate(logs):
            fill(log, seed=i)
        sizes = [log.size_bytes for log in logs]
        clock.advance(200_000)
        lm.maintenance()
        cleaned = []
        for _ in range(3):
            assert len(executor.jobs) == 1  # only one log's segments are held by the cleaner
            current = lm.cleaner.current
            assert current is not None
            cleaned.append(current.log)
            executor.run_in_thread()
            lm.apply_cleaned()  # swaps, then plans the next queued log
        assert executor.jobs == [] and lm.cleaner.current is None
        assert cleaned == logs
        assert all(log.size_bytes < size for log, size in zip(logs, sizes, strict=True))


# ----------------------------------------------------------------------------- abandoning
def test_pass_is_abandoned_when_retention_deleted_a_segment_meanwhile(tmp_path):
    clock = FakeClock(T0)
    executor = ManualExecutor()
    lm, log = compacted_manager(tmp_path, clock, executor)
    with lm:
        lm.maintenance()
        log.delete_records_before(log.segments[1].base_offset)  # deletes the first segment
        executor.run_in_thread()
        current = batches(log)
        assert lm.apply_cleaned() == 1
        assert lm.cleaner.passes_abandoned == 1 and lm.cleaner.passes_applied == 0
        assert batches(log) == current and leftovers(log.directory) == []
        lm.maintenance()  # the next round cleans what is there now
        executor.run_in_thread()
        lm.apply_cleaned()
        assert lm.cleaner.passes_applied == 1 and len(batches(log)) < len(current)


def test_pass_is_abandoned_when_the_topic_is_deleted_meanwhile(tmp_path):
    clock = FakeClock(T0)
    executor = ManualExecutor()
    lm, log = compacted_manager(tmp_path, clock, executor)
    with lm:
        directory = log.directory
        lm.maintenance()
        delete_logs(lm, TOPIC)
        executor.run_in_thread()
        assert lm.apply_cleaned() == 1
        assert lm.cleaner.passes_abandoned == 1
        assert not os.path.exists(directory)  # the worker did not recreate it


def test_worker_io_failure_takes_the_directory_offline(tmp_path, monkeypatch):
    clock = FakeClock(T0)
    executor = ManualExecutor()
    lm, log = compacted_manager(tmp_path, clock, executor)
    with lm:
        lm.maintenance()
        real_fsync = os.fsync

        def failing(fd: int) -> None:
            if "/cleaning." in os.readlink(f"/proc/self/fd/{fd}"):
                raise OSError(5, "Input/output error")
            real_fsync(fd)

        monkeypatch.setattr(os, "fsync", failing)
        executor.run_in_thread()
        monkeypatch.setattr(os, "fsync", real_fsync)
        lm.apply_cleaned()
        assert lm.offline and lm.failure is not None and lm.failure.operation == "compaction"
        with pytest.raises(KafkaStorageError):
            log.read(0, 100)
        assert leftovers(log.directory) == []


# -------------------------------------------------------------------------------- crashes
class Crash(Exception):
    pass


def _segment_bytes(log: PartitionLog) -> dict[int, bytes]:
    return {seg.base_offset: os.pread(seg.fd, seg.size, 0) for seg in log.segments}


def _cleaned_reference(tmp_path: Path) -> tuple[dict[int, bytes], dict[int, bytes], int, int]:
    """(segment bytes before, after a complete pass, number of file moves the swap makes, the base
    offset of the first cleaned segment)."""
    clock = FakeClock(T0)
    lm, log = compacted_manager(tmp_path, clock)
    with lm:
        old = _segment_bytes(log)
        lm.maintenance()
        assert lm.cleaner.wait_idle(30)
        cleaned = lm.cleaner._done[0].cleaned
        moves = 2 * len(cleaner._FILE_SUFFIXES) * len(cleaned)
        lm.apply_cleaned()
        return old, _segment_bytes(log), moves, cleaned[0][1].base_offset


def _crash_in_swap(root: Path, make: Callable[..., tuple[LogManager, PartitionLog]], crash_at: int, moves: int,
                   monkeypatch: pytest.MonkeyPatch) -> int:
    """Run a pass whose swap crashes after ``crash_at`` file moves (none when ``crash_at == moves``),
    then drop the manager as a killed process would; returns the log end offset before."""
    clock = FakeClock(T0)
    executor = ManualExecutor()
    lm, log = make(root, clock, executor)
    leo = log.log_end_offset
    lm.maintenance()
    job = lm.cleaner.current
    executor.run_in_thread()
    real_move = cleaner._move
    count = [0]

    def move(*args: Any) -> None:
        if count[0] == crash_at:
            raise Crash
        count[0] += 1
        real_move(*args)

    monkeypatch.setattr(cleaner, "_move", move)
    try:
        if crash_at < moves:
            with pytest.raises(Crash):
                lm.apply_cleaned()
        else:
            lm.apply_cleaned()  # the crash comes after the swap
    finally:
        monkeypatch.setattr(cleaner, "_move", real_move)
    crash(lm, *[seg for _, seg in job.cleaned])
    return leo


def test_a_crash_at_any_point_of_the_swap_recovers_to_a_consistent_log(tmp_path, monkeypatch):
    old, new, moves, first = _cleaned_reference(tmp_path / "reference")
    assert moves >= 6
    for crash_at in range(moves + 1):
        root = tmp_path / f"crash-{crash_at}"
        leo = _crash_in_swap(root, compacted_manager, crash_at, moves, monkeypatch)
        clock = FakeClock(T0)
        with open_manager(root, clock) as lm2:
            log2 = lm2.get_log(TOPIC, 0)
            assert leftovers(log2.directory) == [], crash_at
            assert log2.log_end_offset == leo
            got = _segment_bytes(log2)
            assert sorted(got) == sorted(old)
            for base, data in got.items():
                assert data in (old[base], new[base]), (crash_at, base)
            if crash_at >= len(cleaner._FILE_SUFFIXES):  # the first cleaned segment's .log.swap was in place: committed
                assert got[first] == new[first]
            if crash_at == moves:
                assert got == new
            for hdr, data in batches(log2):
                assert log2.read_bytes(hdr.base_offset, 1).startswith(data), crash_at


def test_recovery_finishes_a_committed_swap_and_drops_an_uncommitted_one(tmp_path):
    """The file states a crash can leave, built by hand: a committed segment (its .log.swap is
    there, its index already renamed) and an uncommitted one (index .swap files only)."""
    clock = FakeClock(T0)
    executor = ManualExecutor()
    lm, log = compacted_manager(tmp_path, clock, executor)
    old = _segment_bytes(log)
    lm.maintenance()
    job = lm.cleaner.current
    executor.run_in_thread()
    assert len(job.cleaned) >= 2
    directory = log.directory
    (_, committed), (_, uncommitted) = job.cleaned[0], job.cleaned[1]
    for seg in (committed, uncommitted):
        seg.seal()

    def name(seg: Any, suffix: str) -> str:
        return cleaner.segment_file_name(seg.base_offset, suffix)

    os.replace(committed.offset_index.path, os.path.join(directory, name(committed, ".index")))
    os.replace(committed.time_index.path, os.path.join(directory, name(committed, ".timeindex.swap")))
    os.replace(committed.log_path, os.path.join(directory, name(committed, ".log.swap")))
    os.replace(uncommitted.offset_index.path, os.path.join(directory, name(uncommitted, ".index.swap")))
    committed_bytes = os.pread(committed.fd, committed.size, 0)
    crash(lm, committed, uncommitted)

    with open_manager(tmp_path, clock) as lm2:
        log2 = lm2.get_log(TOPIC, 0)
        assert log2.recovery_report.interrupted_swaps == [committed.base_offset]
        assert leftovers(directory) == []
        got = _segment_bytes(log2)
        assert got[committed.base_offset] == committed_bytes != old[committed.base_offset]
        assert got[uncommitted.base_offset] == old[uncommitted.base_offset]
        for hdr, data in batches(log2):
            assert log2.read_bytes(hdr.base_offset, 1).startswith(data)


# ------------------------------------------------------------------------ merged segments
def _records_by_offset(log: PartitionLog) -> dict[int, tuple[bytes | None, bytes | None]]:
    return {r.offset: (r.key, r.value) for _, data in batches(log) for r in decode_batch(data)[1]}


def _merging_manager(root: Path, clock: FakeClock, executor: Any = None) -> tuple[LogManager, PartitionLog]:
    """Many small sealed segments, then a larger segment.bytes: a pass merges them in groups."""
    lm, log = compacted_manager(root, clock, executor)
    lm.set_topic_configs(TOPIC, {**CONFIGS, "segment.bytes": "6000"})
    return lm, log


def test_small_segments_are_merged_into_groups_within_segment_bytes(tmp_path):
    clock = FakeClock(T0)
    lm, log = _merging_manager(tmp_path, clock)
    with lm:
        before = log.segments
        sealed_end = before[-2].next_offset
        expected = {o: kv for o, kv in _records_by_offset(log).items()}
        lm.maintenance()
        assert lm.cleaner.wait_idle(30)
        lm.apply_cleaned()
        after = log.segments
        assert len(after) < len(before) / 2
        assert all(s.size <= 6000 for s in after)
        assert [s.base_offset for s in after] == sorted({s.base_offset for s in after})
        got = _records_by_offset(log)
        assert set(got) <= set(expected) and all(expected[o] == kv for o, kv in got.items())
        assert sorted(n for n in os.listdir(log.directory) if n.endswith(".log")) == \
            [cleaner.segment_file_name(s.base_offset, ".log") for s in after]
        latest = {}
        for o in sorted(expected):
            if o < sealed_end and expected[o][0] is not None:
                latest[expected[o][0]] = o
        assert all(o in got for o in latest.values())  # the latest record of every key survives
    with open_manager(tmp_path, clock) as lm2:
        assert _records_by_offset(lm2.get_log(TOPIC, 0)) == got


def test_a_crash_at_any_point_of_a_merging_swap_recovers_to_a_consistent_log(tmp_path, monkeypatch):
    clock = FakeClock(T0)
    lm, log = _merging_manager(tmp_path / "reference", clock)
    with lm:
        old = _records_by_offset(log)
        lm.maintenance()
        assert lm.cleaner.wait_idle(30)
        groups = lm.cleaner._done[0].cleaned
        assert any(len(group) > 1 for group, _ in groups)
        moves = 2 * len(cleaner._FILE_SUFFIXES) * len(groups)  # each file moved to .swap, then into place
        lm.apply_cleaned()
        new = _records_by_offset(log)
    for crash_at in range(0, moves + 1, 2):
        root = tmp_path / f"crash-{crash_at}"
        leo = _crash_in_swap(root, _merging_manager, crash_at, moves, monkeypatch)
        with open_manager(root, FakeClock(T0)) as lm2:
            log2 = lm2.get_log(TOPIC, 0)
            assert leftovers(log2.directory) == [], crash_at
            assert log2.log_end_offset == leo
            got = _records_by_offset(log2)
            # every record is one the log had, at its offset; everything the pass keeps is there
            assert set(new) <= set(got) <= set(old), crash_at
            assert all(old[o] == kv for o, kv in got.items()), crash_at
            offsets = [h.base_offset for h, _ in batches(log2)]
            assert offsets == sorted(set(offsets)), crash_at  # no segment overlaps another
            if crash_at == moves:
                assert got == new
            for hdr, data in batches(log2):
                assert log2.read_bytes(hdr.base_offset, 1).startswith(data), crash_at
