"""LogManager: topics and their metadata, partitions, the lock file, maintenance; compaction."""

from __future__ import annotations

import json
import os
import uuid

import pytest

from broker.log import (
    InvalidConfigError,
    InvalidPartitionsError,
    InvalidTopicError,
    LogDirLockedError,
    LogManager,
    TopicAlreadyExistsError,
    UnknownTopicOrPartitionError,
)
from broker.log.testing import FakeClock, make_batch
from protocol.records import decode_record_set, encode_batch

T0 = 1_700_000_000_000


def test_create_list_reopen(tmp_path):
    clock = FakeClock(T0)
    with LogManager(tmp_path, clock) as lm:
        tid = lm.create_topic("orders", 3, {"retention.ms": "1000"})
        assert isinstance(tid, uuid.UUID)
        assert [t.name for t in lm.list_topics()] == ["orders"]
        assert lm.topic_id("orders") == tid and lm.topic_name(tid) == "orders"
        assert lm.get_log("orders", 2).config.retention_ms == 1000
        lm.get_log("orders", 1).append(make_batch(2))
        with pytest.raises(UnknownTopicOrPartitionError):
            lm.get_log("orders", 3)
        with pytest.raises(TopicAlreadyExistsError) as ei:
            lm.create_topic("orders", 1)
        assert ei.value.error_code == 36
    meta = json.loads((tmp_path / "__topics" / "orders.json").read_text())
    assert meta["topic_id"] == str(tid) and meta["partitions"] == 3
    assert meta["configs"] == {"retention.ms": "1000"}
    with LogManager(tmp_path, clock) as lm:
        assert lm.topic_id("orders") == tid
        assert lm.get_log("orders", 1).log_end_offset == 2
        assert lm.topic_configs("orders")["retention.ms"] == ("1000", False)
        assert lm.topic_configs("orders")["segment.bytes"] == ("1073741824", True)


def test_create_validation(tmp_path):
    with LogManager(tmp_path, FakeClock()) as lm:
        for bad in ("", ".", "..", "a/b", "x" * 250, "sp ace"):
            with pytest.raises(InvalidTopicError):
                lm.create_topic(bad, 1)
        with pytest.raises(InvalidPartitionsError):
            lm.create_topic("t", 0)
        with pytest.raises(InvalidConfigError) as ei:
            lm.create_topic("t", 1, {"retention.ms": "soon"})
        assert ei.value.error_name == "INVALID_CONFIG"
        assert lm.list_topics() == []
        assert not any(n.startswith("t-") for n in os.listdir(tmp_path))


def test_add_partitions_and_alter_configs(tmp_path):
    with LogManager(tmp_path, FakeClock()) as lm:
        lm.create_topic("t", 1)
        with pytest.raises(InvalidPartitionsError):
            lm.add_partitions("t", 1)
        lm.add_partitions("t", 3)
        lm.get_log("t", 2).append(make_batch(1))
        lm.alter_topic_configs("t", {"max.message.bytes": "100"})
        assert lm.get_log("t", 0).config.max_message_bytes == 100
        lm.alter_topic_configs("t", {"max.message.bytes": None})
        assert lm.get_log("t", 0).config.max_message_bytes == 1048588
    with LogManager(tmp_path, FakeClock()) as lm:
        assert lm.get_topic("t").partitions == 3
        assert lm.get_log("t", 2).log_end_offset == 1


def test_delete_topic_and_orphans(tmp_path):
    with LogManager(tmp_path, FakeClock()) as lm:
        tid = lm.create_topic("gone", 2)
        lm.get_log("gone", 0).append(make_batch(1))
        lm.delete_topic("gone")
        assert lm.topic_id("gone") is None and lm.topic_name(tid) is None
        assert not any(n.startswith("gone") for n in os.listdir(tmp_path))
        with pytest.raises(UnknownTopicOrPartitionError):
            lm.delete_topic("gone")
        lm.create_topic("gone", 1)  # recreated: starts empty
        assert lm.get_log("gone", 0).log_end_offset == 0
    os.makedirs(tmp_path / "stale-0")  # orphan left by a crash mid-create/delete
    (tmp_path / "stale-0" / "00000000000000000000.log").write_bytes(b"junk")
    with LogManager(tmp_path, FakeClock()) as lm:
        assert not (tmp_path / "stale-0").exists()
        assert [t.name for t in lm.list_topics()] == ["gone"]


def test_lock_file_prevents_second_broker(tmp_path):
    lm = LogManager(tmp_path, FakeClock())
    with pytest.raises(LogDirLockedError) as ei:
        LogManager(tmp_path, FakeClock())
    assert ei.value.error_name == "KAFKA_STORAGE_ERROR"
    lm.close()
    LogManager(tmp_path, FakeClock()).close()


def test_maintenance_retention_and_flush(tmp_path):
    clock = FakeClock(T0)
    with LogManager(tmp_path, clock) as lm:
        lm.create_topic("t", 1, {"retention.ms": "60000", "segment.bytes": "500", "flush.ms": "100"})
        log = lm.get_log("t", 0)
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
    with LogManager(tmp_path, clock) as lm:
        lm.create_topic("__consumer_offsets", 1, {"cleanup.policy": "compact", "segment.bytes": "400"})
        log = lm.get_log("__consumer_offsets", 0)
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
        first = [r.offset for r in decode_record_set(log.read_bytes(0))]
        assert first and first[0] >= 0
        assert log.append(encode_batch([(b"group-0", b"x", None, T0)])).base_offset == 30
    with LogManager(tmp_path, clock) as lm:
        log = lm.get_log("__consumer_offsets", 0)
        assert not log.recovery_report.repaired
        offsets = [r.offset for _, d in log.iter_batches(0) for r in decode_record_set(d)]
        assert offsets[-1] == 30 and offsets == sorted(offsets)
