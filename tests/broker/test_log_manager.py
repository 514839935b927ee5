"""LogManager: hosted partition logs and their topic ids, strays, legacy migration, the lock file, maintenance."""

from __future__ import annotations

import json
import os
import uuid

import pytest

from broker.log import (
    InvalidConfigError,
    InvalidTopicError,
    LogDirLockedError,
    UnknownTopicOrPartitionError,
)
from broker.log.manager import validate_topic_name
from broker.log.testing import FakeClock, make_batch, open_manager
from protocol.records import decode_record_set, encode_batch

T0 = 1_700_000_000_000


def test_hosted_logs_reopen_with_their_topic_ids(tmp_path):
    clock = FakeClock(T0)
    tid = uuid.uuid4()
    with open_manager(tmp_path, clock) as lm:
        for p in range(3):
            lm.ensure_log("orders", p, tid, {"retention.ms": "1000"})
        assert lm.get_log("orders", 2).config.retention_ms == 1000
        lm.get_log("orders", 1).append(make_batch(2))
        assert lm.ensure_log("orders", 1, tid).log_end_offset == 2  # the same log again
        with pytest.raises(UnknownTopicOrPartitionError):
            lm.get_log("orders", 3)
    meta = json.loads((tmp_path / "orders-0" / "partition.metadata").read_text())
    assert meta["topic_id"] == str(tid)
    with open_manager(tmp_path, clock) as lm:
        assert sorted(lm.hosted()) == [("orders", 0), ("orders", 1), ("orders", 2)]
        assert lm.topic_id_of("orders", 1) == tid
        assert lm.get_log("orders", 1).log_end_offset == 2
        lm.set_topic_configs("orders", {"max.message.bytes": "100"})
        assert lm.get_log("orders", 0).config.max_message_bytes == 100
        assert lm.effective_configs({"retention.ms": "1000"})["retention.ms"] == ("1000", False)
        assert lm.effective_configs({})["segment.bytes"] == ("1073741824", True)


def test_validation(tmp_path):
    with open_manager(tmp_path, FakeClock()) as lm:
        for bad in ("", ".", "..", "a/b", "x" * 250, "sp ace"):
            with pytest.raises(InvalidTopicError):
                validate_topic_name(bad)
        with pytest.raises(InvalidConfigError) as ei:
            lm.validate_configs({"retention.ms": "soon"})
        assert ei.value.error_name == "INVALID_CONFIG"


def test_a_recreated_topic_replaces_the_old_log_and_orphans_go(tmp_path):
    with open_manager(tmp_path, FakeClock()) as lm:
        old = uuid.uuid4()
        lm.ensure_log("gone", 0, old).append(make_batch(1))
        lm.ensure_log("gone", 1, old)
        lm.delete_log("gone", 1)
        assert not (tmp_path / "gone-1").exists()
        fresh = lm.ensure_log("gone", 0, uuid.uuid4())  # same name, new topic: starts empty
        assert fresh.log_end_offset == 0
    os.makedirs(tmp_path / "stale-0")  # no partition.metadata: left by a crash mid-create
    (tmp_path / "stale-0" / "00000000000000000000.log").write_bytes(b"junk")
    with open_manager(tmp_path, FakeClock()) as lm:
        assert not (tmp_path / "stale-0").exists()
        assert sorted(lm.hosted()) == [("gone", 0)]


def test_strays_are_set_aside_not_deleted(tmp_path):
    with open_manager(tmp_path, FakeClock()) as lm:
        lm.ensure_log("s", 0, uuid.uuid4()).append(make_batch(1))
        lm.set_aside("s", 0)
        assert lm.hosted() == {}
    strays = [n for n in os.listdir(tmp_path) if n.endswith("-stray")]
    assert len(strays) == 1
    with open_manager(tmp_path, FakeClock()) as lm:
        assert lm.hosted() == {}
        assert (tmp_path / strays[0]).exists()


def test_legacy_topics_are_read_for_migration(tmp_path):
    tid = uuid.uuid4()
    (tmp_path / "__topics").mkdir()
    (tmp_path / "__topics" / "old.json").write_text(json.dumps(
        {"version": 1, "name": "old", "topic_id": str(tid), "partitions": 2, "configs": {"retention.ms": "5"}}))
    (tmp_path / "old-0").mkdir()
    (tmp_path / "old-1").mkdir()
    with open_manager(tmp_path, FakeClock()) as lm:
        [info] = lm.legacy_topics()
        assert (info.name, info.topic_id, info.partitions, info.configs) == ("old", tid, 2, {"retention.ms": "5"})
        assert lm.topic_id_of("old", 1) == tid and lm.get_log("old", 0).config.retention_ms == 5
        lm.retire_legacy_topics()
    with open_manager(tmp_path, FakeClock()) as lm:
        assert lm.legacy_topics() == [] and lm.topic_id_of("old", 0) == tid


def test_lock_file_prevents_second_broker(tmp_path):
    lm = open_manager(tmp_path, FakeClock())
    with pytest.raises(LogDirLockedError) as ei:
        open_manager(tmp_path, FakeClock())
    assert ei.value.error_name == "KAFKA_STORAGE_ERROR"
    lm.close()
    open_manager(tmp_path, FakeClock()).close()


def test_maintenance_retention_and_flush(tmp_path):
    clock = FakeClock(T0)
    with open_manager(tmp_path, clock) as lm:
        log = lm.ensure_log("t", 0, uuid.uuid4(), {"retention.ms": "60000", "segment.bytes": "500",
                                                     "flush.ms": "100"})
        for i in range(20):
            log.append(make_batch(1, ts=T0 + i, value=b"q" * 40))
        assert log.recovery_point == 0
        clock.advance(100)
        lm.maintenance()
        assert log.recovery_point == 20 and log.log_start_offset == 0
        clock.advance(120_000)
        lm.maintenance()
        assert log.log_start_offset == log.log_end_offset == 20


def test_compaction_keeps_latest_value_per_key(tmp_path):
    clock = FakeClock(T0)
    with open_manager(tmp_path, clock) as lm:
        log = lm.ensure_log("__consumer_offsets", 0, uuid.uuid4(), {"cleanup.policy": "compact",
                                                                     "segment.bytes": "400"})
        for i in range(30):
            key = b"group-%d" % (i % 3)
            log.append(encode_batch([(key, b"commit-%d" % i, None, T0 + i)]))
        before = log.size_bytes
        log.flush()  # a pass reads only what is on disk (below the recovery point)
        lm.maintenance()  # plans the pass; the cleaner's worker thread cleans
        assert lm.cleaner.wait_idle(30)
        lm.apply_cleaned()  # the swap, on the owning thread
        assert log.size_bytes < before
        latest = {}
        for _, data in log.iter_batches(0):
            for r in decode_record_set(data):
                latest[r.key] = (r.offset, r.value)
        assert latest == {b"group-0": (27, b"commit-27"), b"group-1": (28, b"commit-28"),
                          b"group-2": (29, b"commit-29")}
        assert log.log_end_offset == 30
        # fetch from an offset inside a compacted-away gap lands on the next surviving batch
        log.high_watermark = log.log_end_offset
        first = [r.offset for r in decode_record_set(log.read_bytes(0))]
        assert first and first[0] >= 0
        assert log.append(encode_batch([(b"group-0", b"x", None, T0)])).base_offset == 30
    with open_manager(tmp_path, clock) as lm:
        log = lm.get_log("__consumer_offsets", 0)
        assert not log.recovery_report.repaired
        offsets = [r.offset for _, d in log.iter_batches(0) for r in decode_record_set(d)]
        assert offsets[-1] == 30 and offsets == sorted(offsets)
