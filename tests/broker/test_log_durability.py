"""Durability of the flush path: a failed fsync advances nothing, leaks nothing and takes the
log directory offline; the broker then stops, and a restart re-verifies the unflushed tail.

fsync failures are injected by replacing ``os.fsync`` with one that raises EIO for the segment
files of the test's directory (``FailingFsync``); open descriptors are counted in /proc/self/fd.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import socket
import struct
import time
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from broker.core import BrokerCore
from broker.log import KafkaStorageError, LogManager, PartitionLog
from broker.log.testing import FakeClock, create_logs, delete_logs, make_batch, open_log, open_manager
from protocol.api import ApiKey, decode_response, encode_request
from protocol.records import decode_record_set, encode_batch

T0 = 1_700_000_000_000
SEGMENT_SUFFIXES = (".log", ".index", ".timeindex")
_REAL_FSYNC = os.fsync


def open_files_under(root: str | os.PathLike[str]) -> list[str]:
    """Paths of this process's open descriptors that point under ``root``."""
    root = os.fspath(root)
    out = []
    for name in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{name}")
        except OSError:
            continue
        if target.startswith(root):
            out.append(target)
    return sorted(out)


class FailingFsync:
    """``os.fsync`` that, while ``armed``, fails with EIO for segment files under ``root``."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = os.fspath(root)
        self.armed = False
        self.failures: list[str] = []
        self.synced: list[str] = []

    def __call__(self, fd: int) -> None:
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            target = ""
        if target.startswith(self.root) and target.endswith(SEGMENT_SUFFIXES):
            if self.armed:
                self.failures.append(target)
                raise OSError(errno.EIO, "Input/output error")
            self.synced.append(target)
        _REAL_FSYNC(fd)


def read_checkpoint(log: PartitionLog) -> dict[str, int]:
    with open(os.path.join(log.directory, "partition.checkpoint")) as f:
        return json.load(f)


def crash(log: PartitionLog) -> None:
    """What a process crash does to a log: its descriptors are closed, nothing is flushed or written."""
    for seg in log.segments:
        seg.file.close()
        for index in (seg.offset_index, seg.time_index):
            os.close(index._fd)
            index._fd = -1


# ------------------------------------------------------------------------- partition log
def test_failed_fsync_advances_nothing_and_takes_the_directory_offline(tmp_path, monkeypatch):
    log = open_log(tmp_path, FakeClock(), flush_ms="1000")
    log.append(make_batch(2))
    log.flush()
    assert log.recovery_point == 2
    saved = read_checkpoint(log)
    log.append(make_batch(3))
    fsync = FailingFsync(tmp_path)
    monkeypatch.setattr(os, "fsync", fsync)
    fsync.armed = True
    before = open_files_under(tmp_path)

    ticket = log.prepare_flush()
    ticket.run()  # never raises: the error is kept in the ticket
    assert ticket.error is not None and ticket.error.errno == errno.EIO
    assert ticket.failed_path is not None and ticket.failed_path.endswith(".log")
    assert open_files_under(tmp_path) == before  # its duplicated descriptors are closed
    with pytest.raises(KafkaStorageError) as ei:
        log.complete_flush(ticket)
    assert ei.value.error_code == 56
    assert log.recovery_point == 2 and read_checkpoint(log) == saved
    assert log.active_segment.dirty and log.dirty  # still counted as unflushed
    assert log.dir_failure.offline and log.dir_failure.failure is not None
    assert log.dir_failure.failure.errno == errno.EIO

    # A later flush does not "succeed" on pages the kernel may have dropped: nothing advances.
    fsync.armed = False
    with pytest.raises(KafkaStorageError):
        log.flush()
    assert log.recovery_point == 2 and read_checkpoint(log) == saved
    for call in (lambda: log.append(make_batch(1)), lambda: log.read(0, 1000),
                 lambda: log.delete_records_before(1), lambda: log.list_offset(-1)):
        with pytest.raises(KafkaStorageError):
            call()
    log.close()  # no flush, no checkpoint, no producer snapshot of an offline directory
    assert read_checkpoint(log) == saved
    assert open_files_under(tmp_path) == []

    # After a restart, the data above the recovery point is verified and synced again.
    log = open_log(tmp_path, FakeClock(), flush_ms="1000")
    assert log.recovery_point == 2 and log.log_end_offset == 5
    assert log.active_segment.dirty
    log.flush()
    assert log.active_segment.log_path in fsync.synced
    assert log.recovery_point == 5
    log.close()


def test_a_flush_ticket_writes_checkpoint_and_snapshot_in_its_thread_after_the_fsync(tmp_path, monkeypatch):
    """The round's files are written by ``run`` (the flush thread), only after every fsync succeeded;
    ``complete_flush`` on the event loop does no file I/O."""
    import threading

    import broker.log._fs as fs
    import broker.log.partition_log as pl

    log = open_log(tmp_path, FakeClock(), flush_ms="1000")
    log.append(make_batch(2, producer_id=7, producer_epoch=0, base_sequence=0))
    writes: list[tuple[str, str]] = []
    real = fs.atomic_write

    def recording(path: str, data: bytes, **kw: Any) -> None:
        writes.append((threading.current_thread().name, os.path.basename(path)))
        real(path, data, **kw)

    monkeypatch.setattr(pl, "atomic_write", recording)
    ticket = log.prepare_flush()
    assert writes == [] and read_checkpoint(log)["recovery_point"] == 0
    thread = threading.Thread(target=ticket.run, name="flusher")
    thread.start()
    thread.join()
    assert [w[0] for w in writes] == ["flusher", "flusher"]
    assert writes[0][1].endswith(".snapshot") and writes[1][1] == "partition.checkpoint"
    assert read_checkpoint(log)["recovery_point"] == 2  # written after the fsync covered offsets 0-1
    log.complete_flush(ticket)
    assert len(writes) == 2 and log.recovery_point == 2  # nothing more on the loop
    log.close()


def test_a_failed_fsync_writes_no_checkpoint_in_the_thread_either(tmp_path, monkeypatch):
    log = open_log(tmp_path, FakeClock(), flush_ms="1000")
    log.append(make_batch(2))
    log.flush()
    saved = read_checkpoint(log)
    log.append(make_batch(1, producer_id=7, producer_epoch=0, base_sequence=0))
    fsync = FailingFsync(tmp_path)
    monkeypatch.setattr(os, "fsync", fsync)
    fsync.armed = True
    ticket = log.prepare_flush()
    ticket.run()
    assert not ticket.written and read_checkpoint(log) == saved
    assert [n for n in os.listdir(log.directory) if n.endswith(".snapshot")] == []
    with pytest.raises(KafkaStorageError):
        log.complete_flush(ticket)
    assert log.recovery_point == 2 and log.dir_failure.offline
    log.close()
    assert read_checkpoint(log) == saved


def test_a_checkpoint_written_on_the_loop_meanwhile_is_not_overwritten_by_an_older_ticket(tmp_path):
    """A truncation while a flush is in flight writes a lower recovery point; the ticket, captured
    before, must not put its higher one back (the cut tail would escape verification)."""
    log = open_log(tmp_path, FakeClock(), flush_ms="1000")
    log.append(make_batch(3))
    log.flush()
    log.append(make_batch(3))  # offsets 3-5, not flushed
    ticket = log.prepare_flush()  # captures recovery point 6
    log.truncate_to(4)  # on the loop, meanwhile (the whole batch 3-5 goes): writes the checkpoint itself
    assert log.log_end_offset == 3 and read_checkpoint(log)["recovery_point"] == 3
    ticket.run()
    assert not ticket.written and read_checkpoint(log)["recovery_point"] == 3
    log.complete_flush(ticket)
    assert log.recovery_point == 3 and read_checkpoint(log)["recovery_point"] == 3
    log.append(make_batch(2))
    log.flush()
    assert read_checkpoint(log)["recovery_point"] == 5
    log.close()


def test_flush_messages_failure_fails_the_append(tmp_path, monkeypatch):
    log = open_log(tmp_path, FakeClock(), flush_messages="1")
    log.append(make_batch(1))
    assert log.recovery_point == 1
    saved = read_checkpoint(log)
    fsync = FailingFsync(tmp_path)
    monkeypatch.setattr(os, "fsync", fsync)
    fsync.armed = True
    before = open_files_under(tmp_path)
    with pytest.raises(KafkaStorageError) as ei:
        log.append(make_batch(1))
    assert ei.value.error_code == 56
    assert fsync.failures
    assert log.recovery_point == 1 and read_checkpoint(log) == saved
    assert open_files_under(tmp_path) == before
    log.close()
    assert read_checkpoint(log) == saved


def test_reopen_after_a_crash_fsyncs_the_tail_it_verified(tmp_path, monkeypatch):
    """Data a crashed process left in the page cache is not durable until fsynced again."""
    log = open_log(tmp_path, FakeClock(), flush_ms="1000")
    log.append(make_batch(2))
    log.flush()
    log.append(make_batch(2))  # written, never fsynced
    crash(log)
    fsync = FailingFsync(tmp_path)
    monkeypatch.setattr(os, "fsync", fsync)
    log = open_log(tmp_path, FakeClock(), flush_ms="1000")
    assert log.recovery_point == 2 and log.log_end_offset == 4
    log.flush()
    assert log.active_segment.log_path in fsync.synced
    assert log.recovery_point == 4
    log.close()


# ---------------------------------------------------------------------- manager / core
def _manager_with_logs(tmp_path: Path, clock: FakeClock, topics: int) -> LogManager:
    lm = open_manager(tmp_path, clock)
    for i in range(topics):
        create_logs(lm, f"t{i}", 1, {"flush.ms": "100"})
    return lm


async def test_flush_round_failure_leaks_no_descriptor_and_advances_no_log(tmp_path, monkeypatch):
    import asyncio

    clock = FakeClock(T0)
    lm = _manager_with_logs(tmp_path, clock, 3)
    logs = [lm.get_log(f"t{i}", 0) for i in range(3)]
    for log in logs:
        log.append(make_batch(2))
    clock.advance(100)
    core = SimpleNamespace(logs=lm)  # _flush_due_logs needs only the log manager
    baseline = open_files_under(tmp_path)
    fsync = FailingFsync(tmp_path / "t0-0")  # the first log's fsync fails, the others' succeed
    monkeypatch.setattr(os, "fsync", fsync)
    fsync.armed = True
    with pytest.raises(KafkaStorageError):
        await BrokerCore._flush_due_logs(core, asyncio.get_running_loop())  # type: ignore[arg-type]
    assert fsync.failures
    assert open_files_under(tmp_path) == baseline  # every ticket closed its descriptors
    assert lm.offline and lm.failure is not None and lm.failure.path.startswith(str(tmp_path / "t0-0"))
    assert [log.recovery_point for log in logs] == [0, 0, 0]
    clock.advance(1000)
    assert lm.logs_due_for_flush(clock()) == []  # offline: nothing is flushed any more
    lm.close()
    assert open_files_under(tmp_path) == []
    for i in range(3):
        with open(tmp_path / f"t{i}-0" / "partition.checkpoint") as f:
            assert json.load(f)["recovery_point"] == 0
    open_manager(tmp_path, clock).close()  # the lock was released


async def test_flush_round_looks_only_at_logs_with_unflushed_data(tmp_path, monkeypatch):
    import asyncio

    clock = FakeClock(T0)
    with open_manager(tmp_path, clock) as lm:
        create_logs(lm, "many", 300, {"flush.ms": "100"})
        busy = lm.get_log("many", 7)
        busy.append(make_batch(1))
        looked_at: list[PartitionLog] = []
        listed = [0]
        real_flush_due, real_logs = PartitionLog.flush_due, LogManager.logs

        def counting_flush_due(self: PartitionLog, now_ms: int) -> bool:
            looked_at.append(self)
            return real_flush_due(self, now_ms)

        def counting_logs(self: LogManager) -> list[PartitionLog]:
            listed[0] += 1
            return real_logs(self)

        monkeypatch.setattr(PartitionLog, "flush_due", counting_flush_due)
        monkeypatch.setattr(LogManager, "logs", counting_logs)
        core = SimpleNamespace(logs=lm)  # _flush_due_logs needs only the log manager
        loop = asyncio.get_running_loop()

        async def flush_round() -> None:
            looked_at.clear()
            clock.advance(100)
            await BrokerCore._flush_due_logs(core, loop)  # type: ignore[arg-type]

        await flush_round()
        assert busy.recovery_point == 1
        assert looked_at == [busy] and listed[0] == 0  # not one look at the 299 idle logs
        await flush_round()
        assert looked_at == []  # a clean log leaves the set
        other = lm.get_log("many", 3)
        other.append(make_batch(1))
        await flush_round()
        assert looked_at == [other] and other.recovery_point == 1
        delete_logs(lm, "many")
        await flush_round()
        assert looked_at == []


# ---------------------------------------------------------------------------- the broker
def _recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("connection closed")
        buf += chunk
    return bytes(buf)


def _request(port: int, api_key: int, version: int, body: dict[str, Any]) -> Any:
    with socket.create_connection(("127.0.0.1", port), timeout=15) as sock:
        sock.sendall(encode_request(api_key, version, 1, "durability-test", body))
        (size,) = struct.unpack(">i", _recv_exact(sock, 4))
        _, resp = decode_response(api_key, version, _recv_exact(sock, size))
        return resp


def _produce(port: int, topic: str, batch: bytes) -> Any:
    resp = _request(port, ApiKey.PRODUCE, 9, {
        "transactional_id": None, "acks": 1, "timeout_ms": 10_000,
        "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": batch}]}]})
    return resp.responses[0].partition_responses[0]


def _fetch_all(port: int, topic: str) -> list[bytes]:
    resp = _request(port, ApiKey.FETCH, 12, {
        "replica_id": -1, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": 8 << 20, "isolation_level": 0,
        "session_id": 0, "session_epoch": -1, "rack_id": "", "forgotten_topics_data": [],
        "topics": [{"topic": topic, "partitions": [
            {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 8 << 20, "current_leader_epoch": -1,
             "log_start_offset": -1, "last_fetched_epoch": -1}]}]})
    part = resp.responses[0].partitions[0]
    assert part.error_code == 0, part
    return [r.value for r in decode_record_set(bytes(part.records or b""))]


def _wait_for(predicate: Callable[[], bool], what: str, timeout: float = 30.0) -> None:
    # a bound so a broken broker fails the test instead of hanging it; not a timing assertion
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def test_broker_stops_on_a_failed_periodic_fsync_and_restart_reverifies_the_tail(tmp_path, monkeypatch, caplog):
    from broker.testing.embedded import BrokerThread

    data = tmp_path / "data"
    fsync = FailingFsync(data / "t-0")
    monkeypatch.setattr(os, "fsync", fsync)
    caplog.set_level(logging.INFO, logger="kbroker")
    hour = "3600000"
    # flush.ms is an hour except when the test lowers it: flushes happen exactly when it says so
    bt = BrokerThread(data_dir=str(data), log_flush_interval_ms=int(hour)).start()
    try:
        core = bt.core
        bt.call(lambda: core.create_topic("t", 1, {"flush.ms": hour}))
        plog = bt.call(lambda: core.logs.get_log("t", 0))
        assert _produce(bt.port, "t", encode_batch([(b"k", b"a", None, int(time.time() * 1000))])).error_code == 0

        def flush_now() -> None:
            bt.call(lambda: core.alter_topic_configs("t", {"flush.ms": "0"}))

        flush_now()
        _wait_for(lambda: bt.call(lambda: plog.recovery_point) == 1, "the first flush")
        bt.call(lambda: core.alter_topic_configs("t", {"flush.ms": hour}))
        durable = bt.call(lambda: read_checkpoint(plog))
        assert durable["recovery_point"] == 1
        now = int(time.time() * 1000)
        tail = [encode_batch([(b"k", b"b" * 6000, None, now)]), encode_batch([(b"k", b"c", None, now)])]
        for batch in tail:
            assert _produce(bt.port, "t", batch).error_code == 0

        fsync.armed = True
        flush_now()
        _wait_for(lambda: not core.started, "the broker to stop")
        _wait_for(lambda: core._stopped.is_set(), "the broker to finish stopping")
        assert core.failure is not None and core.failure.errno == errno.EIO
        assert fsync.failures
        critical = [r for r in caplog.records if r.levelno == logging.CRITICAL]
        assert len(critical) == 1
        assert "errno 5" in critical[0].getMessage() and str(data / "t-0") in critical[0].getMessage()
        assert not core.started
        with pytest.raises(OSError):
            socket.create_connection(("127.0.0.1", bt.port), timeout=5).close()
        with open(data / "t-0" / "partition.checkpoint") as f:
            assert json.load(f) == durable  # the recovery point never moved
        assert open_files_under(data / "t-0") == []
    finally:
        bt.stop()

    fsync.armed = False
    with BrokerThread(data_dir=str(data)) as bt:
        report = bt.call(lambda: bt.core.logs.recovery_reports[("t", 0)])
        assert len(report.segments) == 1
        assert report.segments[-1].verified_bytes >= sum(len(b) for b in tail)  # checked from offset 1
        assert report.segments[-1].truncated_at is None
        assert _fetch_all(bt.port, "t") == [b"a", b"b" * 6000, b"c"]


def test_broker_answers_storage_error_when_a_flush_messages_fsync_fails(tmp_path, monkeypatch):
    from broker.testing.embedded import BrokerThread

    data = tmp_path / "data"
    fsync = FailingFsync(data / "t-0")
    monkeypatch.setattr(os, "fsync", fsync)
    with BrokerThread(data_dir=str(data)) as bt:
        bt.call(lambda: bt.core.create_topic("t", 1, {"flush.messages": "1"}))
        assert _produce(bt.port, "t", encode_batch([(b"k", b"a", None, T0)])).error_code == 0
        fsync.armed = True
        part = _produce(bt.port, "t", encode_batch([(b"k", b"b", None, T0)]))
        assert part.error_code == 56  # KAFKA_STORAGE_ERROR: retriable, clients move on
        _wait_for(lambda: bt.core._stopped.is_set(), "the broker to stop")
        assert bt.core.failure is not None and bt.core.failure.errno == errno.EIO
        with open(data / "t-0" / "partition.checkpoint") as f:
            assert json.load(f)["recovery_point"] == 1


# ---------------------------------------------------------------------- python -m broker
_FAILING_FSYNC_MAIN = """
import errno, os, sys
real_fsync = os.fsync
trigger = sys.argv[1]

def fsync(fd):
    if os.path.exists(trigger):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            target = ""
        if "/t-0/" in target and target.endswith(".log"):
            raise OSError(errno.EIO, "Input/output error")
    real_fsync(fd)

os.fsync = fsync
from broker.__main__ import main
sys.exit(main(sys.argv[2:]))
"""


@pytest.mark.slow
def test_python_m_broker_exits_74_when_its_data_directory_fails(tmp_path):
    import subprocess

    from broker.testing.harness import BrokerProcess

    trigger = tmp_path / "fail-fsync"

    class FailingFsyncBroker(BrokerProcess):
        def command(self) -> list[str]:
            python, _, module, *args = super().command()
            assert module == "broker"
            return [python, "-c", _FAILING_FSYNC_MAIN, str(trigger), *args]

    bp = FailingFsyncBroker(tmp_path / "data")
    bp.start()
    try:
        resp = _request(bp.port, ApiKey.CREATE_TOPICS, 5, {
            "topics": [{"name": "t", "num_partitions": 1, "replication_factor": 1, "assignments": [],
                        "configs": [{"name": "flush.messages", "value": "1"}]}],
            "timeout_ms": 10_000, "validate_only": False})
        assert resp.topics[0].error_code == 0
        assert _produce(bp.port, "t", encode_batch([(b"k", b"a", None, None)])).error_code == 0
        trigger.touch()
        assert _produce(bp.port, "t", encode_batch([(b"k", b"b", None, None)])).error_code == 56
        assert bp.proc is not None
        try:
            code = bp.proc.wait(30)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"the broker kept running:\n{bp.log_tail()}") from None
        assert code == 74, bp.log_tail()
        critical = [line for line in bp.log_tail(200).splitlines() if "CRITICAL" in line]
        assert len(critical) == 1 and "errno 5" in critical[0] and "t-0" in critical[0], bp.log_tail()
    finally:
        if bp.alive():
            bp.kill9()
