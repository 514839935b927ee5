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


class _Closer:
    """Records the files handed to it (the reaper's place), closing none."""

    def __init__(self) -> None:
        self.files: list[object] = []

    def __call__(self, file: object) -> None:
        self.files.append(file)


def test_a_removed_segments_last_close_goes_to_the_logs_file_closer(tmp_path) -> None:
    """Retention's segments, once past file.delete.delay.ms, are closed by the closer the owner gave the
    log (off the event loop), not where their last reference goes — a reader's late release included."""
    clock = FakeClock()
    closer = _Closer()
    log = SoleReplicaLog(os.path.join(tmp_path, "t-0"), "t", 0,
                         LogConfig.from_dict({"segment.bytes": "1024", "retention.bytes": "2048",
                                              "file.delete.delay.ms": "1000"}), clock, file_closer=closer)
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
