"""The log side of transactions: open transactions, markers, the last stable offset, the aborted-transaction
index, and how they survive recovery, truncation, followers, compaction and retention."""

from __future__ import annotations

import os
import signal

import pytest

from broker.log import InvalidProducerEpochError, InvalidRecordError, InvalidTxnStateError, PartitionLog
from broker.log.cleaner import LogCleaner
from broker.log.config import LogConfig
from broker.log.errors import TransactionCoordinatorFencedError
from broker.log.testing import FakeClock, make_batch, open_log
from broker.log.txn_index import ENTRY_SIZE, AbortedTxn
from protocol.records import decode_control_marker, decode_record_set, iter_batch_headers

A, B = 1001, 2002


def txn_batch(pid: int, seq: int, n: int = 2, epoch: int = 0) -> bytes:
    return make_batch(n, producer_id=pid, producer_epoch=epoch, base_sequence=seq, is_transactional=True)


def open_txn(log: PartitionLog, pid: int, seq: int = 0, n: int = 2, epoch: int = 0) -> int:
    """Append the batch that opens ``pid``'s transaction, verified as the leader does it."""
    guard = log.producer_state.start_verification(pid)
    return log.append(txn_batch(pid, seq, n, epoch), verification=guard).base_offset


def test_lso_stops_at_the_oldest_open_transaction_and_markers_release_it(tmp_path):
    log = open_log(tmp_path, FakeClock())
    log.append(make_batch(3))                       # 0-2 plain records
    assert open_txn(log, A) == 3                    # A: 3-4
    log.append(make_batch(1))                       # 5
    assert open_txn(log, B) == 6                    # B: 6-7
    assert log.high_watermark == 8 and log.last_stable_offset == 3
    log.append(txn_batch(A, 2))                     # A continues (already open: no verification needed)
    log.append_marker(A, 0, False, 5)               # abort A: marker at 10
    assert log.last_stable_offset == 6              # B is still open
    log.append_marker(B, 0, True, 5)                # commit B: marker at 11
    assert log.last_stable_offset == log.high_watermark == 12
    assert log.aborted_transactions(0, 12) == [AbortedTxn(A, 3, 10, 6)]
    assert log.aborted_transactions(11, 12) == []   # the fetch starts after A's marker
    markers = [(h.base_offset, decode_control_marker(log.read_bytes(h.base_offset, 1 << 20)))
               for _, h in iter_batch_headers(log.read_bytes(0, 1 << 20)) if h.is_control]
    assert [(o, m.commit, m.coordinator_epoch) for o, m in markers] == [(10, False, 5), (11, True, 5)]
    # consumers decode data records only
    assert len(list(decode_record_set(log.read_bytes(0, 1 << 20)))) == 10
    log.close()


def test_a_transactional_batch_needs_a_current_verification(tmp_path):
    log = open_log(tmp_path, FakeClock())
    with pytest.raises(InvalidTxnStateError):
        log.append(txn_batch(A, 0))                 # nobody asked the coordinator
    guard = log.producer_state.start_verification(A)
    log.append_marker(A, 0, False, 0)               # the transaction ended while verifying
    with pytest.raises(InvalidTxnStateError):
        log.append(txn_batch(A, 0), verification=guard)
    assert log.log_end_offset == 1 and log.last_stable_offset == 1   # just the marker: nothing half-written
    open_txn(log, A)
    with pytest.raises(InvalidTxnStateError):      # a plain batch while its transaction is open
        log.append(make_batch(1, producer_id=A, producer_epoch=0, base_sequence=2))
    with pytest.raises(InvalidRecordError):
        log.append(make_batch(1, is_transactional=True))   # transactional without a producer id
    log.close()


def test_markers_are_fenced_by_producer_and_coordinator_epochs(tmp_path):
    log = open_log(tmp_path, FakeClock())
    open_txn(log, A, epoch=3)
    with pytest.raises(InvalidProducerEpochError):
        log.append_marker(A, 2, True, 7)
    log.append_marker(A, 4, False, 7)               # a bumped epoch (the coordinator fenced the producer)
    with pytest.raises(TransactionCoordinatorFencedError):
        log.append_marker(A, 4, False, 6)
    with pytest.raises(InvalidProducerEpochError):   # the producer's old epoch is fenced for data too
        log.append(txn_batch(A, 2, epoch=3), verification=log.producer_state.start_verification(A))
    assert log.last_stable_offset == log.log_end_offset
    log.close()


def test_recovery_after_kill_keeps_open_transactions_and_the_index(tmp_path):
    clock = FakeClock()
    log = open_log(tmp_path, clock)
    open_txn(log, A)
    open_txn(log, B)
    log.append_marker(A, 0, False, 1)               # abort A (marker 4)
    log.flush()                                     # snapshot at 5: B open, A's index entry durable
    log.append(make_batch(2))                       # 5-6
    C = 3003
    open_txn(log, C)                                # 7-8 (after the snapshot)
    log.append_marker(C, 0, False, 1)               # 9: indexed again on replay, exactly once
    # no close: as after kill -9 (the page cache has it, no snapshot, no checkpoint past the flush)
    reopened = open_log(tmp_path, clock)
    assert reopened.recovery_report.producer_snapshot == 5
    assert reopened.producer_state.ongoing == {B: 2}
    assert reopened.last_stable_offset == 2
    assert reopened.aborted_transactions(0, 100) == [AbortedTxn(A, 0, 4, 2), AbortedTxn(C, 7, 9, 2)]
    reopened.append_marker(B, 0, True, 1)
    assert reopened.last_stable_offset == reopened.log_end_offset == 11
    reopened.close()
    again = open_log(tmp_path, clock)               # a clean close: snapshot at the end, nothing replayed
    assert again.recovery_report.producer_batches_replayed == 0
    assert again.producer_state.ongoing == {} and len(again.aborted_transactions(0, 100)) == 2
    again.close()


def test_torn_index_entry_and_lost_index_are_rebuilt(tmp_path):
    clock = FakeClock()
    log = open_log(tmp_path, clock)
    open_txn(log, A)
    log.append_marker(A, 0, False, 1)
    path = log.active_segment.txn_index.path
    with open(path, "ab") as f:                     # a torn second entry
        f.write(b"\x00" * (ENTRY_SIZE // 2))
    reopened = open_log(tmp_path, clock)
    assert reopened.aborted_transactions(0, 10) == [AbortedTxn(A, 0, 2, 3)]
    assert os.path.getsize(path) == ENTRY_SIZE
    reopened.close()
    os.unlink(path)                                 # a lost index: no snapshot covers it, the replay rebuilds it
    for name in os.listdir(os.path.join(tmp_path, "t-0")):
        if name.endswith(".snapshot"):
            os.unlink(os.path.join(tmp_path, "t-0", name))
    rebuilt = open_log(tmp_path, clock)
    assert rebuilt.aborted_transactions(0, 10) == [AbortedTxn(A, 0, 2, 3)]
    rebuilt.close()


def test_truncation_reopens_a_transaction_whose_marker_is_cut(tmp_path):
    log = open_log(tmp_path, FakeClock())
    open_txn(log, A)                                # 0-1
    log.append_marker(A, 0, False, 1)               # 2
    open_txn(log, B)                                # 3-4
    log.append_marker(B, 0, True, 1)                # 5
    log.truncate_to(5)                              # B's commit marker is cut: B is open again
    assert log.producer_state.ongoing == {B: 3}
    assert log.aborted_transactions(0, 10) == [AbortedTxn(A, 0, 2, 3)]
    log.truncate_to(2)                              # A's abort marker too: its index entry goes
    assert log.producer_state.ongoing == {A: 0}
    assert log.aborted_transactions(0, 10) == []
    log.close()


def test_follower_copies_markers_and_keeps_the_same_state(tmp_path):
    clock = FakeClock()
    leader = open_log(tmp_path / "leader", clock)
    open_txn(leader, A)
    leader.append(make_batch(1))
    open_txn(leader, B)
    leader.append_marker(A, 0, False, 2)
    follower = PartitionLog(str(tmp_path / "follower" / "t-0"), "t", 0, LogConfig.from_dict({}), clock)
    assert follower.append_as_follower(leader.read_bytes(0, 1 << 20, True)) == 4
    follower.high_watermark = follower.log_end_offset
    assert follower.producer_state.ongoing == leader.producer_state.ongoing == {B: 3}
    assert follower.aborted_transactions(0, 10) == leader.aborted_transactions(0, 10)
    assert follower.last_stable_offset == leader.last_stable_offset == 3
    leader.close()
    follower.close()


def test_compaction_keeps_the_index_of_cleaned_segments(tmp_path):
    clock = FakeClock()
    log = open_log(tmp_path, clock, segment_bytes="600", cleanup_policy="compact")
    open_txn(log, A)
    log.append_marker(A, 0, False, 1)
    for i in range(40):                             # superseded plain records: something to reclaim
        log.append(make_batch(1, key=b"k", value=b"v%d" % i))
    log.flush()
    before = log.aborted_transactions(0, 1000)
    cleaner = LogCleaner(clock)
    assert cleaner.request(log)
    assert cleaner.wait_idle(30)
    cleaner.apply_completed()
    assert cleaner.passes_applied == 1
    assert log.aborted_transactions(0, 1000) == before == [AbortedTxn(A, 0, 2, 3)]
    cleaner.close()
    log.close()
    reopened = open_log(tmp_path, clock)
    assert reopened.aborted_transactions(0, 1000) == before
    reopened.close()


def test_retention_drops_index_files_with_their_segments(tmp_path):
    clock = FakeClock()
    log = open_log(tmp_path, clock, segment_bytes="300", retention_ms="1000")
    open_txn(log, A)
    log.append_marker(A, 0, False, 1)
    first = log.segments[0].txn_index.path
    assert os.path.exists(first)
    log.roll()
    for _ in range(10):
        log.append(make_batch(2, ts=clock.now + 10_000))
    clock.advance(5_000)
    log.apply_retention()
    assert not os.path.exists(first) and log.aborted_transactions(log.log_start_offset, 1000) == []
    log.close()


def test_snapshot_without_transactions_still_loads(tmp_path):
    """A snapshot written before transactions were tracked (version 1) loads with none open."""
    import json

    clock = FakeClock()
    log = open_log(tmp_path, clock)
    log.append(make_batch(2, producer_id=A, producer_epoch=0, base_sequence=0))
    log.close()
    snaps = [n for n in os.listdir(tmp_path / "t-0") if n.endswith(".snapshot")]
    path = tmp_path / "t-0" / snaps[-1]
    doc = json.loads(path.read_text())
    doc["version"] = 1
    for p in doc["producers"]:
        p.pop("txn_first_offset")
        p.pop("coordinator_epoch")
    path.write_text(json.dumps(doc))
    reopened = open_log(tmp_path, clock)
    assert reopened.producer_state.producers[A].txn_first_offset == -1 and not reopened.producer_state.ongoing
    reopened.close()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_kill_9_mid_transaction_keeps_it_open(tmp_path):
    """A process killed with SIGKILL after appending half a transaction: the reopened log holds it open."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        try:
            log = open_log(tmp_path, FakeClock())
            open_txn(log, A, n=3)
            log.append(make_batch(1))
            os.kill(os.getpid(), signal.SIGKILL)
        finally:
            os._exit(1)
    _, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
    log = open_log(tmp_path, FakeClock())
    assert log.log_end_offset == 4 and log.producer_state.ongoing == {A: 0} and log.last_stable_offset == 0
    log.append_marker(A, 0, True, 0)
    assert log.last_stable_offset == 5
    log.close()
