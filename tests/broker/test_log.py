"""broker.log: segments, indexes, reads, retention, recovery (real files in tmp_path, fake clock)."""

from __future__ import annotations

import json
import os
import shutil
import socket
from pathlib import Path

import pytest

from broker.log import (
    CorruptMessageError,
    InvalidRecordError,
    InvalidTimestampError,
    LogConfig,
    MessageTooLargeError,
    OffsetOutOfRangeError,
    PartitionLog,
)
from broker.log.segment import Segment
from broker.log.testing import FakeClock, make_batch, open_log
from protocol.records import (
    LOG_APPEND_TIME,
    crc_ok,
    decode_record_set,
    encode_batch,
    iter_batch_headers,
    parse_batch_header,
)

T0 = 1_700_000_000_000


def offsets_of(data: bytes) -> list[int]:
    return [r.offset for r in decode_record_set(data)]


def fill(log: PartitionLog, n: int, records: int = 1, ts: int = T0, value: bytes = b"v" * 50) -> list[int]:
    return [log.append(make_batch(records, ts=ts + i * records, value=value)).base_offset for i in range(n)]


# --------------------------------------------------------------------------------- append / read
def test_append_assigns_offsets_and_reads_back(tmp_path):
    clock = FakeClock(T0)
    log = open_log(tmp_path, clock)
    r1 = log.append(make_batch(3))
    r2 = log.append(bytearray(make_batch(2)))
    assert (r1.base_offset, r1.last_offset, r1.log_append_time, r1.log_start_offset) == (0, 2, -1, 0)
    assert (r2.base_offset, r2.last_offset) == (3, 4)
    assert log.log_end_offset == log.high_watermark == 5
    data = log.read(0, 1 << 20).to_bytes()
    assert offsets_of(data) == [0, 1, 2, 3, 4]
    for pos, h in iter_batch_headers(data):
        assert crc_ok(data, pos, h)
    log.close()


def test_read_starts_at_containing_batch_and_respects_max_bytes(tmp_path):
    log = open_log(tmp_path, FakeClock())
    for _ in range(4):
        log.append(make_batch(5, value=b"x" * 100))  # offsets 0-4, 5-9, 10-14, 15-19
    batch_size = parse_batch_header(log.read_bytes(0)).size
    r = log.read(7, batch_size * 2 + batch_size // 2)
    data = r.to_bytes()
    assert offsets_of(data)[0] == 5  # the batch containing 7
    assert len(data) == 2 * batch_size  # whole batches only
    assert (r.high_watermark, r.log_start_offset, r.log_end_offset) == (20, 0, 20)
    # first batch whole even if bigger than max_bytes (KIP-74) ...
    assert len(log.read(0, 10).to_bytes()) == batch_size
    # ... unless min_one_message is off
    assert log.read(0, 10, min_one_message=False).slices == []
    # at the log end: empty, no error; beyond it or below log start: OFFSET_OUT_OF_RANGE
    assert log.read(20, 1000).slices == []
    with pytest.raises(OffsetOutOfRangeError) as ei:
        log.read(21, 1000)
    assert ei.value.error_name == "OFFSET_OUT_OF_RANGE" and ei.value.error_code == 1
    # max_offset caps the read (e.g. a last-stable-offset)
    assert offsets_of(log.read(0, 1 << 20, max_offset=10).to_bytes())[-1] == 9
    log.close()


def test_file_slice_supports_sendfile(tmp_path):
    log = open_log(tmp_path, FakeClock())
    fill(log, 10)
    r = log.read(3, 1 << 20)
    a, b = socket.socketpair()
    try:
        for s in r.slices:
            sent = 0
            while sent < s.length:
                sent += os.sendfile(a.fileno(), s.fileno(), s.position + sent, s.length - sent)
        got = b""
        while len(got) < r.size:
            got += b.recv(1 << 16)
    finally:
        a.close()
        b.close()
    assert got == r.to_bytes()
    assert offsets_of(got) == list(range(3, 10))
    log.close()


# --------------------------------------------------------------------------------- validation
def _bad(buf: bytes, offset: int, data: bytes) -> bytearray:
    b = bytearray(buf)
    b[offset:offset + len(data)] = data
    return b


@pytest.mark.parametrize(
    ("mutate", "exc", "name"),
    [
        (lambda b: _bad(b, len(b) - 1, b"\xff"), CorruptMessageError, "CORRUPT_MESSAGE"),  # CRC
        (lambda b: b[:-5], CorruptMessageError, "CORRUPT_MESSAGE"),  # truncated
        (lambda b: b[:30], CorruptMessageError, "CORRUPT_MESSAGE"),  # not even a header
        (lambda b: _bad(b, 0, (7).to_bytes(8, "big")), InvalidRecordError, "INVALID_RECORD"),  # base offset
        (lambda b: _bad(b, 16, b"\x01"), InvalidRecordError, "INVALID_RECORD"),  # magic
        (lambda b: b + b, InvalidRecordError, "INVALID_RECORD"),  # two batches
    ],
)
def test_bad_batches_are_rejected_and_nothing_is_written(tmp_path, mutate, exc, name):
    log = open_log(tmp_path, FakeClock())
    log.append(make_batch(2))
    size = log.active_segment.size
    with pytest.raises(exc) as ei:
        log.append(mutate(make_batch(2)))
    assert ei.value.error_name == name
    assert log.log_end_offset == 2 and log.active_segment.size == size
    assert os.path.getsize(log.active_segment.log_path) == size
    log.close()


def test_rule_violations(tmp_path):
    log = open_log(tmp_path, FakeClock(), max_message_bytes="200")
    with pytest.raises(MessageTooLargeError) as ei:
        log.append(make_batch(1, value=b"x" * 300))
    assert ei.value.error_code == 10
    ctrl = encode_batch([(b"\x00\x00\x00\x01", b"\x00\x00\x00\x00\x00\x00", None, T0)],
                        is_control=True, is_transactional=True, producer_id=1, producer_epoch=0,
                        base_sequence=0)
    with pytest.raises(InvalidRecordError, match="control"):
        log.append(ctrl)
    with pytest.raises(InvalidRecordError, match="sequence"):
        log.append(make_batch(1, producer_id=5, producer_epoch=0, base_sequence=-1))
    with pytest.raises(InvalidTimestampError):
        log.append(make_batch(1, timestamp_type=LOG_APPEND_TIME))
    assert log.log_end_offset == 0
    log.close()


def test_log_append_time_topic_stamps_batches(tmp_path):
    clock = FakeClock(T0 + 5000)
    log = open_log(tmp_path, clock, message_timestamp_type="LogAppendTime")
    r = log.append(make_batch(3, ts=T0))
    assert r.log_append_time == T0 + 5000
    data = log.read_bytes(0)
    h = parse_batch_header(data)
    assert h.timestamp_type == 1 and h.max_timestamp == T0 + 5000 and crc_ok(data, 0, h)
    assert [rec.timestamp for rec in decode_record_set(data)] == [T0 + 5000] * 3
    assert log.offset_for_timestamp(T0 + 4000) == (0, T0 + 5000)
    log.close()


# --------------------------------------------------------------------------------- segments / indexes
def test_roll_by_size_and_reads_across_segments(tmp_path):
    log = open_log(tmp_path, FakeClock(), segment_bytes="1000")
    fill(log, 40)
    bases = [s.base_offset for s in log.segments]
    assert len(bases) > 3 and bases[0] == 0
    for s in log.segments[:-1]:
        assert s.size <= 1000
        assert os.path.exists(os.path.join(log.directory, f"{s.base_offset:020d}.log"))
        assert os.path.exists(os.path.join(log.directory, f"{s.base_offset:020d}.index"))
        assert os.path.exists(os.path.join(log.directory, f"{s.base_offset:020d}.timeindex"))
    # consume the whole log fetch by fetch
    pos, seen = 0, []
    while pos < log.log_end_offset:
        got = offsets_of(log.read(pos, 500).to_bytes())
        seen += [o for o in got if o >= pos]
        pos = got[-1] + 1
    assert seen == list(range(40))
    log.close()


def test_roll_by_age(tmp_path):
    clock = FakeClock(T0)
    log = open_log(tmp_path, clock, segment_ms="60000")
    log.append(make_batch(1, ts=T0))
    clock.advance(30_000)
    log.append(make_batch(1, ts=clock.now))
    assert len(log.segments) == 1
    clock.advance(30_000)
    log.maintenance()
    assert [s.base_offset for s in log.segments] == [0, 2]
    log.maintenance()  # the new segment is empty: no further roll
    assert len(log.segments) == 2
    clock.advance(60_000)
    log.append(make_batch(1, ts=clock.now))
    clock.advance(60_000)
    log.append(make_batch(1, ts=clock.now))  # rolled on append
    assert [s.base_offset for s in log.segments] == [0, 2, 3]
    log.close()


def test_sparse_offset_index_lookup(tmp_path):
    log = open_log(tmp_path, FakeClock(), index_interval_bytes="1000")
    fill(log, 200, records=2, value=b"y" * 60)
    seg = log.active_segment
    idx = seg.offset_index
    assert 5 < len(idx.offsets) < 200  # sparse
    # every indexed position holds the batch with that base offset
    for off, pos in zip(idx.offsets, idx.positions, strict=True):
        assert seg.read_header(pos).base_offset == off
    for target in range(0, 400, 7):
        pos = seg.lookup(target)
        h = seg.read_header(pos)
        assert h.base_offset <= target <= h.last_offset
    assert seg.lookup(400) is None
    log.close()


def test_time_index_lookup(tmp_path):
    log = open_log(tmp_path, FakeClock(T0 + 10**6), segment_bytes="2000", index_interval_bytes="300")
    for i in range(60):  # batch i holds offsets 2i, 2i+1 with timestamps T0+100i, T0+100i+1
        log.append(make_batch(2, ts=T0 + 100 * i))
    assert len(log.segments) > 2
    assert any(len(s.time_index.timestamps) > 1 for s in log.segments)
    for i in range(60):
        assert log.offset_for_timestamp(T0 + 100 * i) == (2 * i, T0 + 100 * i)
        assert log.offset_for_timestamp(T0 + 100 * i + 1) == (2 * i + 1, T0 + 100 * i + 1)
        if i < 59:
            assert log.offset_for_timestamp(T0 + 100 * i + 50) == (2 * i + 2, T0 + 100 * i + 100)
    assert log.offset_for_timestamp(0) == (0, T0)
    assert log.offset_for_timestamp(T0 + 6000) == (-1, -1)
    assert log.max_timestamp_offset() == (119, T0 + 5901)
    assert log.list_offset(-1) == (120, -1)
    assert log.list_offset(-2) == (0, -1)
    assert log.list_offset(-3) == (119, T0 + 5901)
    log.close()


def test_max_timestamp_not_last(tmp_path):
    log = open_log(tmp_path, FakeClock(T0 + 10**6))
    log.append(make_batch(1, ts=T0))
    log.append(encode_batch([(b"k", b"a", None, T0 + 10), (b"k", b"b", None, T0 + 500),
                             (b"k", b"c", None, T0 + 20)]))
    log.append(make_batch(1, ts=T0 + 30))
    assert log.max_timestamp_offset() == (2, T0 + 500)
    log.close()


# --------------------------------------------------------------------------------- retention
def test_retention_by_time(tmp_path):
    clock = FakeClock(T0)
    log = open_log(tmp_path, clock, segment_bytes="1000", retention_ms="3600000")
    fill(log, 20, ts=T0)  # old data
    old_segments = len(log.segments)
    clock.advance(2 * 3600_000)
    fill(log, 5, ts=clock.now)  # fresh data, in a new segment after a roll
    assert len(log.segments) >= old_segments
    log.maintenance()
    assert log.log_start_offset >= 15
    assert all(s.max_timestamp >= clock.now for s in log.segments)
    with pytest.raises(OffsetOutOfRangeError):
        log.read(0, 100)
    assert offsets_of(log.read_bytes(log.log_start_offset))[0] == log.log_start_offset
    assert [h.last_offset for h, _ in log.iter_batches(log.log_start_offset)][-1] == 24
    # everything expired, including the active segment: roll, delete, keep the LEO
    clock.advance(2 * 3600_000)
    log.maintenance()
    assert len(log.segments) == 1 and log.active_segment.size == 0
    assert log.log_start_offset == log.log_end_offset == 25
    assert log.append(make_batch(1, ts=clock.now)).base_offset == 25
    log.close()
    log = open_log(tmp_path, clock, segment_bytes="1000", retention_ms="3600000")
    assert (log.log_start_offset, log.log_end_offset) == (25, 26)
    log.close()


def test_retention_infinite(tmp_path):
    clock = FakeClock(T0)
    log = open_log(tmp_path, clock, segment_bytes="500", retention_ms="-1")
    fill(log, 20)
    clock.advance(10**12)
    log.maintenance()
    assert log.log_start_offset == 0
    log.close()


def test_retention_by_size(tmp_path):
    clock = FakeClock(T0)
    log = open_log(tmp_path, clock, segment_bytes="1000", retention_bytes="2500")
    fill(log, 60)
    assert log.size_bytes > 2500
    log.maintenance()
    assert log.size_bytes <= 2500 + 1000
    assert log.size_bytes - log.segments[0].size < 2500
    assert log.log_start_offset == log.segments[0].base_offset > 0
    log.close()


def test_retention_leaves_its_checkpoint_to_the_next_flush_and_a_crash_before_it_loses_nothing(tmp_path):
    """The directory fsync of a checkpoint written on the event loop waits for every dirty file on ext4:
    retention leaves the new log start to the next flush (off the loop).  A log opened from the files
    before that flush (a crash) still starts at its first segment."""
    clock = FakeClock(T0)
    log = open_log(tmp_path, clock, segment_bytes="1000", retention_bytes="2500")
    fill(log, 60)
    log.flush()
    checkpoint = Path(log.directory, "partition.checkpoint")
    before = _checkpointed_start(checkpoint)
    assert log.apply_retention() > 0
    start = log.log_start_offset
    assert start > before
    assert _checkpointed_start(checkpoint) == before  # not written by retention
    # what a restart after a crash here would read: a copy of the files as they are now
    shutil.copytree(log.directory, tmp_path / "crash" / "t-0")
    reopened = open_log(tmp_path / "crash", FakeClock(T0))
    try:
        assert reopened.log_start_offset == start == reopened.segments[0].base_offset
        assert reopened.log_end_offset == log.log_end_offset
    finally:
        reopened.close()
    log.flush()
    assert _checkpointed_start(checkpoint) == start
    log.close()


def _checkpointed_start(path: Path) -> int:
    return json.loads(path.read_text())["log_start_offset"]


def test_delete_records_before(tmp_path):
    log = open_log(tmp_path, FakeClock(), segment_bytes="1000")
    fill(log, 40)
    second = log.segments[1]
    assert log.delete_records_before(second.base_offset + 1) == second.base_offset + 1
    assert log.segments[0] is second  # whole segments below the new start are gone
    with pytest.raises(OffsetOutOfRangeError):
        log.read(second.base_offset, 100)
    data = log.read(second.base_offset + 1, 1 << 20).to_bytes()
    assert second.base_offset + 1 in offsets_of(data)
    with pytest.raises(OffsetOutOfRangeError):
        log.delete_records_before(41)
    assert log.delete_records_before(3) == second.base_offset + 1  # never moves backwards
    log.close()
    log = open_log(tmp_path, FakeClock(), segment_bytes="1000")
    assert log.log_start_offset == second.base_offset + 1
    assert log.delete_records_before(-1) == 40
    assert log.read(40, 100).slices == []
    log.close()


# --------------------------------------------------------------------------------- restart / recovery
def test_reopen_reads_same_bytes(tmp_path):
    clock = FakeClock()
    log = open_log(tmp_path, clock, segment_bytes="3000", index_interval_bytes="200")
    fill(log, 50, records=3)
    before = [log.read_bytes(o, 1 << 20) for o in range(0, 150, 11)]
    segs = [(s.base_offset, s.size, list(s.offset_index.offsets)) for s in log.segments]
    log.close()
    log = open_log(tmp_path, clock, segment_bytes="3000", index_interval_bytes="200")
    assert not log.recovery_report.repaired
    assert log.log_end_offset == 150
    assert [(s.base_offset, s.size, list(s.offset_index.offsets)) for s in log.segments] == segs
    assert [log.read_bytes(o, 1 << 20) for o in range(0, 150, 11)] == before
    assert log.append(make_batch(1)).base_offset == 150
    log.close()


def _torn_setup(tmp_path):
    clock = FakeClock()
    log = open_log(tmp_path, clock, index_interval_bytes="500")
    fill(log, 30)
    path = log.active_segment.log_path
    sizes = [h.size for _, h in log.active_segment.iter_headers(0)]
    log.close()
    return clock, path, sizes


def test_torn_tail_truncated_mid_batch(tmp_path, caplog):
    clock, path, sizes = _torn_setup(tmp_path)
    full = os.path.getsize(path)
    with open(path, "r+b") as f:
        f.truncate(full - sizes[-1] // 2)
    with caplog.at_level("WARNING", logger="kbroker.log"):
        log = open_log(tmp_path, clock, index_interval_bytes="500")
    rep = log.recovery_report
    assert rep.repaired and rep.segments[-1].truncated_at == full - sizes[-1]
    assert "truncated" in caplog.text
    assert log.log_end_offset == 29
    assert os.path.getsize(path) == full - sizes[-1]
    assert log.append(make_batch(1)).base_offset == 29
    assert offsets_of(log.read_bytes(0, 1 << 20)) == list(range(30))
    log.close()


@pytest.mark.parametrize("garbage", [b"\x00" * 100, os.urandom(37), b"\xff" * 4096])
def test_garbage_tail_truncated(tmp_path, garbage):
    clock, path, _ = _torn_setup(tmp_path)
    full = os.path.getsize(path)
    with open(path, "ab") as f:
        f.write(garbage)
    log = open_log(tmp_path, clock, index_interval_bytes="500")
    seg_rep = log.recovery_report.segments[-1]
    assert seg_rep.truncated_at == full and seg_rep.truncated_bytes == len(garbage)
    assert log.log_end_offset == 30
    log.close()


def test_corrupt_last_batch_detected_by_crc(tmp_path):
    clock, path, _ = _torn_setup(tmp_path)
    full = os.path.getsize(path)
    with open(path, "r+b") as f:
        f.seek(full - 3)
        f.write(b"\x99\x98\x97")
    log = open_log(tmp_path, clock, index_interval_bytes="500")
    assert log.recovery_report.segments[-1].reason == "CRC mismatch"
    assert log.log_end_offset == 29
    log.close()


def test_unflushed_region_is_verified_from_recovery_point(tmp_path):
    """Damage far before the last index entry is caught when it lies above the recovery point."""
    clock = FakeClock()
    log = open_log(tmp_path, clock, index_interval_bytes="200")
    fill(log, 5)
    log.flush()
    rp = log.recovery_point
    fill(log, 30)
    path = log.active_segment.log_path
    pos = log.active_segment.lookup(rp + 2)
    # simulate a crash: drop the object without close() (no flush, no checkpoint update)
    for s in log.segments:
        s.flush_pending_indexes()
        s.file.close()
        os.close(s.offset_index._fd)
        os.close(s.time_index._fd)
    del log
    with open(path, "r+b") as f:
        f.seek(pos + 70)
        f.write(b"\x00\x01\x02")
    log = open_log(tmp_path, clock, index_interval_bytes="200")
    assert log.recovery_report.segments[-1].truncated_at == pos
    assert log.log_end_offset == rp + 2
    log.close()


def test_torn_segment_drops_later_segments(tmp_path):
    clock = FakeClock()
    log = open_log(tmp_path, clock, segment_bytes="600")
    fill(log, 20)
    bases = [s.base_offset for s in log.segments]
    assert len(bases) >= 3
    middle = log.segments[1].log_path
    log._recovery_point = 0  # pretend nothing was ever flushed
    log._write_checkpoint()
    for s in log.segments:
        s.close()
    with open(middle, "r+b") as f:
        f.truncate(os.path.getsize(middle) - 10)
    log = open_log(tmp_path, clock, segment_bytes="600")
    assert log.recovery_report.deleted_segments == bases[2:]
    assert [s.base_offset for s in log.segments] == bases[:2]
    assert log.log_end_offset == bases[2] - 1
    log.close()


@pytest.mark.parametrize("damage", ["missing", "corrupt", "stale"])
def test_index_rebuilt(tmp_path, damage):
    clock = FakeClock()
    log = open_log(tmp_path, clock, index_interval_bytes="300", segment_bytes="4000")
    fill(log, 60)
    seg = log.segments[0]
    idx_path, tidx_path = seg.offset_index.path, seg.time_index.path
    entries = list(seg.offset_index.offsets)
    assert len(entries) > 3
    with open(idx_path, "rb") as f:
        original = f.read()
    log.close()
    if damage == "missing":
        os.unlink(idx_path)
    elif damage == "corrupt":
        with open(idx_path, "ab") as f:
            f.write(b"\x01\x02\x03")  # not a whole entry
    else:
        with open(idx_path, "r+b") as f:  # last entry points one batch off
            f.seek(len(original) - 8)
            f.write((entries[-1] - seg.base_offset + 1).to_bytes(4, "big"))
    log = open_log(tmp_path, clock, index_interval_bytes="300", segment_bytes="4000")
    rep = log.recovery_report.segments[0]
    assert rep.index_rebuilt == damage and rep.truncated_at is None
    assert list(log.segments[0].offset_index.offsets) == entries
    with open(idx_path, "rb") as f:
        assert f.read() == original
    assert os.path.exists(tidx_path)
    for o in range(0, 60, 5):
        assert offsets_of(log.read_bytes(o, 100))[0] == o
    log.close()


def test_process_kill_loses_no_acknowledged_record(tmp_path):
    """kill -9 right after appends (no flush, no close): every acknowledged offset survives."""
    import subprocess
    import sys
    import textwrap

    import broker

    root = os.path.dirname(os.path.dirname(os.path.abspath(broker.__file__)))
    script = textwrap.dedent(f"""
        import os, signal, sys
        sys.path.insert(0, {root!r})
        from broker.log.testing import FakeClock, make_batch, open_log
        log = open_log({str(tmp_path)!r}, FakeClock(), index_interval_bytes="100", flush_ms="{10**12}")
        for i in range(200):
            r = log.append(make_batch(2, value=b"z" * 40))
            print(r.last_offset, flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert proc.returncode == -9, proc.stderr
    acked = [int(x) for x in proc.stdout.split()]
    assert acked[-1] == 399
    log = open_log(tmp_path, FakeClock())
    assert log.log_end_offset == 400
    assert offsets_of(log.read_bytes(0, 1 << 30)) == list(range(400))
    log.close()


# --------------------------------------------------------------------------------- flushing
def test_flush_messages_fsyncs_on_append(tmp_path):
    log = open_log(tmp_path, FakeClock(), flush_messages="1")
    log.append(make_batch(2))
    assert log.recovery_point == 2 and not log.dirty
    log.close()


def test_flush_ms_via_maintenance_and_threaded_ticket(tmp_path):
    clock = FakeClock()
    log = open_log(tmp_path, clock, flush_ms="1000")
    log.append(make_batch(2))
    log.maintenance()
    assert log.recovery_point == 0 and log.dirty
    clock.advance(1000)
    log.maintenance()
    assert log.recovery_point == 2 and not log.dirty
    log.append(make_batch(1))
    ticket = log.prepare_flush()
    import threading

    t = threading.Thread(target=ticket.run)
    t.start()
    t.join()
    log.append(make_batch(1))  # appended while "flushing": not covered by the ticket
    log.complete_flush(ticket)
    assert log.recovery_point == 3 and log.dirty
    log.close()
    with open(os.path.join(log.directory, "partition.checkpoint")) as f:
        assert '"recovery_point": 4' in f.read()


def test_segment_direct_use(tmp_path):
    seg = Segment(str(tmp_path), 100, index_interval_bytes=0)
    from protocol.records import stamp_base_offset

    for i in range(5):
        b = bytearray(make_batch(2, ts=T0 + 2 * i))
        stamp_base_offset(b, 0, 100 + 2 * i)
        seg.append(b, 100 + 2 * i, 102 + 2 * i, T0 + 2 * i + 1, T0)
    assert seg.next_offset == 110 and list(seg.offset_index.offsets) == [102, 104, 106, 108]
    assert seg.read_header(seg.lookup(105)).base_offset == 104
    _, h = seg.find_by_timestamp(T0 + 6)
    assert h.base_offset == 106
    seg.truncate_to(seg.lookup(104))
    assert seg.next_offset == 104 and list(seg.offset_index.offsets) == [102]
    seg.close()
    assert sorted(os.listdir(tmp_path)) == [f"{100:020d}.index", f"{100:020d}.log", f"{100:020d}.timeindex"]


def test_config_validation():
    from broker.log import TOPIC_CONFIG_DEFAULTS, InvalidConfigError, validate_topic_configs

    assert TOPIC_CONFIG_DEFAULTS["max.message.bytes"] == "1048588"
    assert TOPIC_CONFIG_DEFAULTS["retention.ms"] == "604800000"
    assert TOPIC_CONFIG_DEFAULTS["cleanup.policy"] == "delete"
    LogConfig.from_dict({})
    assert validate_topic_configs({"cleanup.policy": "delete,compact"}) == {"cleanup.policy": "compact,delete"}
    for bad in ({"retention.ms": "-2"}, {"segment.bytes": "x"}, {"cleanup.policy": "keep"},
                {"message.timestamp.type": "Now"}, {"no.such.config": "1"}, {"compression.type": "brotli"}):
        with pytest.raises(InvalidConfigError) as ei:
            validate_topic_configs(bad)
        assert ei.value.error_name == "INVALID_CONFIG" and ei.value.error_code == 40
