"""Reference-counted segment files: a queued response keeps reading the bytes it was built from."""

from __future__ import annotations

import os
import shutil
import threading

import pytest

from broker.log.config import LogConfig
from broker.log.reaper import FileReaper
from broker.log.region import FileRegion
from broker.log.segment import SegmentFile
from broker.log.testing import FakeClock, SoleReplicaLog, create_logs, make_batch, open_log, open_manager
from protocol.records import encode_batch


def test_last_release_closes_the_file(tmp_path) -> None:
    path = tmp_path / "f.log"
    path.write_bytes(b"abc")
    with open(path, "r+b", buffering=0) as f:
        handle = SegmentFile(f, str(path))
        assert handle.retain() is handle
        assert handle.refs == 2
        handle.release()
        assert not handle.closed and not f.closed
        handle.release()
        assert handle.closed and f.closed
        with pytest.raises(ValueError):
            handle.retain()
        with pytest.raises(ValueError):
            handle.release()


def test_region_keeps_a_deleted_partition_readable_until_released(tmp_path) -> None:
    log = open_log(tmp_path, FakeClock())
    for i in range(5):
        log.append(make_batch(1, value=b"value-%d" % i))
    result = log.read(0, 1 << 20)
    expected = result.to_bytes()
    region = FileRegion([(s.handle, s.position, s.length) for s in result.slices])
    handle = result.slices[0].handle
    fd = handle.fileno()
    log.delete()  # the topic is deleted (as LogManager.delete_topic does: then its directory goes)
    shutil.rmtree(log.directory)
    assert not handle.closed and handle.refs == 1
    # a file opened now cannot take the descriptor number the region still uses
    with open(tmp_path / "newcomer.log", "wb") as other:
        assert other.fileno() != fd
    chunk_handle, position, length = region.chunks[0]
    assert os.pread(chunk_handle.fileno(), length, position) == expected
    region.release()
    assert handle.closed
    region.release()  # idempotent


def test_retired_segment_stays_open_for_a_region_after_its_own_reference_goes(tmp_path) -> None:
    clock = FakeClock()
    log = open_log(tmp_path, clock, segment_bytes="1024")
    for i in range(40):
        log.append(make_batch(1, value=b"x" * 100 + b"%d" % i))
    first = log.segments[0]
    result = log.read(first.base_offset, 1 << 20)
    expected = result.to_bytes()
    region = FileRegion([(s.handle, s.position, s.length) for s in result.slices])
    log.delete_records_before(log.segments[2].base_offset)
    log.close_retired(clock(), force=True)
    assert first.handle.refs == 1  # only the region's reference is left
    handle, position, length = region.chunks[0]
    assert os.pread(handle.fileno(), length, position) == expected
    region.release()
    assert first.handle.closed
    log.close()


def test_region_keeps_reading_a_segment_replaced_by_compaction(tmp_path) -> None:
    clock = FakeClock()
    t0 = clock()
    with open_manager(tmp_path, clock) as lm:
        create_logs(lm, "compacted", 1, {"cleanup.policy": "compact", "segment.bytes": "1500",
                                         "delete.retention.ms": "1000", "file.delete.delay.ms": "0"})
        log = lm.get_log("compacted", 0)
        for i in range(200):
            log.append(encode_batch([(b"k%d" % (i % 5), b"v-%d" % i, None, t0 + i)]))
        clock.advance(200_000)
        first = log.segments[0]
        result = log.read(first.base_offset, 1 << 20)  # the first segment's batches
        expected = result.to_bytes()
        region = FileRegion([(s.handle, s.position, s.length) for s in result.slices])
        lm.maintenance()
        assert lm.cleaner.wait_idle(30)
        assert lm.apply_cleaned() == 1
        assert log.segments[0] is not first  # swapped: the compacted copy now has the file's name
        assert log.read(first.base_offset, 1 << 20).to_bytes() != expected
        log.close_retired(clock(), force=True)
        assert first.handle.refs == 1  # only the region's reference is left
        handle, position, length = region.chunks[0]
        assert os.pread(handle.fileno(), length, position) == expected
        region.release()
        assert first.handle.closed


class _HeldReaper(FileReaper):
    """Records what it is handed and does none of it until ``run()`` (the reaper's thread, later)."""

    def __init__(self) -> None:
        super().__init__()
        self.files: list[object] = []
        self.removals: list[list[str]] = []

    def close_file(self, file) -> None:
        self.files.append(file)

    def remove_files(self, paths: list[str]) -> None:
        self.removals.append(list(paths))

    def run(self) -> None:
        for paths in self.removals:
            for path in paths:
                if os.path.exists(path):
                    os.unlink(path)
        self.removals = []


def test_a_removed_segments_last_close_goes_to_the_logs_reaper(tmp_path) -> None:
    """Retention's segments, once past file.delete.delay.ms, are closed by the reaper the owner gave the
    log (off the event loop), not where their last reference goes — a reader's late release included."""
    clock = FakeClock()
    closer = _HeldReaper()
    log = SoleReplicaLog(os.path.join(tmp_path, "t-0"), "t", 0,
                         LogConfig.from_dict({"segment.bytes": "1024", "retention.bytes": "2048",
                                              "file.delete.delay.ms": "1000"}), clock, reaper=closer)
    for i in range(40):
        log.append(make_batch(1, value=b"x" * 100 + b"%d" % i))
    first, second = log.segments[0], log.segments[1]
    result = log.read(first.base_offset, 1 << 20)
    region = FileRegion([(s.handle, s.position, s.length) for s in result.slices])
    assert log.apply_retention() > 1
    log.close_retired(clock())
    assert closer.files == [] and not first.file.closed  # file.delete.delay.ms has not passed
    clock.advance(1000)
    log.close_retired(clock())
    assert closer.files[0] is second.file and not second.file.closed  # handed over, not closed here
    assert first.file not in closer.files  # the region still reads it
    region.release()
    assert closer.files[-1] is first.file and not first.file.closed
    log.close()


def test_the_managers_reaper_closes_removed_segments_off_the_callers_thread(tmp_path) -> None:
    clock = FakeClock()
    with open_manager(tmp_path, clock) as lm:
        create_logs(lm, "r", 1, {"segment.bytes": "1024", "retention.bytes": "2048", "file.delete.delay.ms": "0"})
        log = lm.get_log("r", 0)
        for i in range(40):
            log.append(make_batch(1, value=b"x" * 100 + b"%d" % i))
        gone = [seg.file for seg in log.segments[:-3]]
        closed_on: list[str] = []
        for f in gone:
            real_close = f.close

            def close(real_close=real_close) -> None:
                closed_on.append(threading.current_thread().name)
                real_close()

            f.close = close
        lm.maintenance(clock())
        lm.reaper.close()  # waits for what it was handed
        assert all(f.closed for f in gone)
        assert closed_on and set(closed_on) == {"kbroker-file-reaper"}


def test_the_reaper_closes_in_order_and_at_once_after_it_is_closed(tmp_path) -> None:
    reaper = FileReaper()
    files = [open(tmp_path / f"f{i}", "wb") for i in range(5)]  # noqa: SIM115 - the reaper closes them
    for f in files:
        reaper.close_file(f)
    reaper.close()
    assert all(f.closed for f in files)
    late = open(tmp_path / "late", "wb")  # noqa: SIM115
    reaper.close_file(late)
    assert late.closed
    reaper.close()  # idempotent


def test_a_deleted_partitions_directory_is_renamed_at_once_and_removed_by_the_reaper(tmp_path) -> None:
    with open_manager(tmp_path) as lm:
        create_logs(lm, "d", 1)
        lm.get_log("d", 0).append(make_batch(3))
        lm.delete_log("d", 0)
        assert not os.path.exists(lm.partition_dir("d", 0))  # gone from its name before the call returns
        lm.reaper.close()
        assert not [n for n in os.listdir(tmp_path) if n.startswith("d-0")]  # the renamed copy too


def _names(directory: str) -> set[str]:
    return set(os.listdir(directory))


def test_removed_segments_are_renamed_aside_at_once_and_unlinked_by_the_reaper(tmp_path) -> None:
    """Unlinking a closed index frees its blocks on the caller's thread: retention only renames a removed
    segment's files (``.deleted``) and the reaper unlinks them."""
    clock = FakeClock()
    reaper = _HeldReaper()
    log = SoleReplicaLog(os.path.join(tmp_path, "t-0"), "t", 0,
                         LogConfig.from_dict({"segment.bytes": "1024", "retention.bytes": "2048"}), clock,
                         reaper=reaper)
    for i in range(40):
        log.append(make_batch(1, value=b"x" * 100 + b"%d" % i))
    log.flush()
    first = log.segments[0]
    stem = os.path.basename(first.log_path)[:-len(".log")]
    assert log.apply_retention() > 1
    names = _names(log.directory)
    assert not {stem + ".log", stem + ".index", stem + ".timeindex"} & names  # gone from their names at once
    assert {stem + ".log.deleted", stem + ".index.deleted", stem + ".timeindex.deleted"} <= names
    assert os.path.join(log.directory, stem + ".log.deleted") in reaper.removals[0]
    reaper.run()
    assert not [n for n in _names(log.directory) if n.endswith(".deleted")]
    log.close()


def test_deleted_files_a_crash_left_are_removed_when_the_log_opens(tmp_path) -> None:
    clock = FakeClock()
    reaper = _HeldReaper()
    directory = os.path.join(tmp_path, "t-0")
    config = LogConfig.from_dict({"segment.bytes": "1024", "retention.bytes": "2048"})
    log = SoleReplicaLog(directory, "t", 0, config, clock, reaper=reaper)
    for i in range(40):
        log.append(make_batch(1, value=b"x" * 100 + b"%d" % i))
    assert log.apply_retention() > 1
    start, end = log.log_start_offset, log.log_end_offset
    log.flush()
    shutil.copytree(directory, os.path.join(tmp_path, "crash", "t-0"))  # the reaper never ran
    log.close()
    reopened = SoleReplicaLog(os.path.join(tmp_path, "crash", "t-0"), "t", 0, config, clock)
    try:
        assert (reopened.log_start_offset, reopened.log_end_offset) == (start, end)
        assert not [n for n in _names(reopened.directory) if n.endswith(".deleted")]
    finally:
        reopened.close()


def test_a_truncated_segments_name_is_free_for_a_new_segment_before_the_reaper_runs(tmp_path) -> None:
    """A follower truncating below a segment and writing on rolls a new segment of the same base offset:
    it must get a new file, and the reaper's late unlink must not touch it."""
    clock = FakeClock()
    reaper = _HeldReaper()
    log = SoleReplicaLog(os.path.join(tmp_path, "t-0"), "t", 0,
                         LogConfig.from_dict({"segment.bytes": "1024"}), clock, reaper=reaper)
    for i in range(20):
        log.append(make_batch(1, value=b"x" * 100 + b"%d" % i))
    last = log.segments[-1]
    base = last.base_offset
    log.truncate_to(base)
    assert log.log_end_offset == base and log.segments[-1].base_offset < base
    log.roll()
    assert log.segments[-1].base_offset == base
    log.append(make_batch(1, value=b"new"))
    reaper.run()  # unlinks the truncated segment's files, renamed aside
    again = log.read(base, 1 << 20)
    assert again.slices and log.log_end_offset == base + 1
    assert os.path.exists(log.segments[-1].log_path)
    assert os.path.getsize(log.segments[-1].log_path) == log.segments[-1].size
    log.close()
