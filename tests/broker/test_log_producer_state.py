"""Idempotent producer state: duplicates, sequencing, epochs, wrap-around, persistence across restarts."""

from __future__ import annotations

import os

import pytest

from broker.log import InvalidProducerEpochError, OutOfOrderSequenceError
from broker.log.producer_state import INT32_MAX, last_sequence
from broker.log.testing import FakeClock, make_batch, open_log

PID = 4242


def pb(seq: int, n: int = 2, epoch: int = 0, pid: int = PID) -> bytes:
    return make_batch(n, producer_id=pid, producer_epoch=epoch, base_sequence=seq)


def test_duplicate_returns_original_offsets_without_appending(tmp_path):
    log = open_log(tmp_path, FakeClock())
    first = log.append(pb(0))
    log.append(make_batch(1))  # someone else's record in between
    second = log.append(pb(2))
    size = log.active_segment.size
    dup = log.append(pb(0))
    assert dup.duplicate and (dup.base_offset, dup.last_offset) == (first.base_offset, first.last_offset)
    dup2 = log.append(pb(2))
    assert dup2.duplicate and dup2.base_offset == second.base_offset
    assert log.active_segment.size == size and log.log_end_offset == 5
    log.close()


def test_out_of_order_and_fencing(tmp_path):
    log = open_log(tmp_path, FakeClock())
    log.append(pb(0))
    with pytest.raises(OutOfOrderSequenceError) as ei:
        log.append(pb(5))  # gap
    assert ei.value.error_name == "OUT_OF_ORDER_SEQUENCE_NUMBER" and ei.value.error_code == 45
    log.append(pb(2))
    log.append(pb(0, epoch=1))  # a new epoch restarts at 0
    with pytest.raises(InvalidProducerEpochError) as ei2:
        log.append(pb(4, epoch=0))
    assert ei2.value.error_name == "INVALID_PRODUCER_EPOCH" and ei2.value.error_code == 47
    with pytest.raises(OutOfOrderSequenceError):
        log.append(pb(7, epoch=2))  # a new epoch must start at 0
    assert log.log_end_offset == 6
    # an unknown producer id may start anywhere (its state may have expired)
    log.append(pb(1000, pid=7))
    log.close()


def test_only_last_five_batches_are_deduplicated(tmp_path):
    log = open_log(tmp_path, FakeClock())
    for i in range(7):
        log.append(pb(2 * i))
    assert log.append(pb(4)).duplicate  # batch #3 of 7: still cached
    with pytest.raises(OutOfOrderSequenceError):
        log.append(pb(0))  # batch #1: evicted, looks out of order
    log.close()


def test_sequence_wraps_at_int32_max(tmp_path):
    assert last_sequence(INT32_MAX - 1, 3) == 1
    log = open_log(tmp_path, FakeClock())
    log.append(pb(INT32_MAX - 3, n=4))  # last sequence == INT32_MAX
    r = log.append(pb(0, n=2))
    assert not r.duplicate and r.base_offset == 4
    with pytest.raises(OutOfOrderSequenceError):
        log.append(pb(INT32_MAX - 1, n=4))  # an old, evicted-looking sequence: not next in line
    log.close()


def test_sequence_spanning_wrap(tmp_path):
    log = open_log(tmp_path, FakeClock())
    log.append(pb(INT32_MAX - 1, n=4))  # MAX-1, MAX, 0, 1
    log.append(pb(2))
    assert log.append(pb(INT32_MAX - 1, n=4)).duplicate
    log.close()


def test_state_survives_clean_restart_via_snapshot(tmp_path):
    clock = FakeClock()
    log = open_log(tmp_path, clock)
    r = log.append(pb(0))
    log.append(pb(2))
    log.close()
    assert any(n.endswith(".snapshot") for n in os.listdir(log.directory))
    log = open_log(tmp_path, clock)
    assert log.recovery_report.producer_snapshot == 4
    assert log.recovery_report.producer_batches_replayed == 0
    dup = log.append(pb(0))
    assert dup.duplicate and dup.base_offset == r.base_offset
    with pytest.raises(OutOfOrderSequenceError):
        log.append(pb(9))
    assert log.append(pb(4)).base_offset == 4
    log.close()


def test_state_rebuilt_from_log_tail_after_crash(tmp_path):
    clock = FakeClock()
    log = open_log(tmp_path, clock)
    log.append(pb(0))
    log.flush()  # snapshot at offset 2
    log.append(pb(2))
    log.append(pb(0, pid=99))
    for s in log.segments:  # crash: nothing else reaches the disk
        s.file.close()
        os.close(s.offset_index._fd)
        os.close(s.time_index._fd)
    log = open_log(tmp_path, clock)
    assert log.recovery_report.producer_snapshot == 2
    assert log.recovery_report.producer_batches_replayed == 2
    assert log.append(pb(2)).duplicate
    assert log.append(pb(0, pid=99)).duplicate
    assert log.append(pb(4)).base_offset == 6
    log.close()


def test_state_rebuilt_without_any_snapshot(tmp_path):
    clock = FakeClock()
    log = open_log(tmp_path, clock)
    log.append(pb(0))
    log.append(pb(2))
    log.close()
    for n in os.listdir(log.directory):
        if n.endswith(".snapshot"):
            os.unlink(os.path.join(log.directory, n))
    log = open_log(tmp_path, clock)
    assert log.recovery_report.producer_snapshot is None
    assert log.append(pb(2)).duplicate
    log.close()
