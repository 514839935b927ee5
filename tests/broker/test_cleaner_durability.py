"""Compaction never makes a record's removal durable before the record that supersedes it.

A cleaning pass fsyncs its cleaned segments.  If the key map held records that are not on disk
yet (above the recovery point), a power loss right after the swap would keep the removal and lose
the newer record: the key would vanish instead of falling back to its last durable value (for
``__consumer_offsets``, a group's committed offset would be gone).  The power loss is simulated
on a copy of the data directory: exactly what was fsynced survives (the data below the recovery
point and the cleaned segments), everything above the recovery point is lost.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from broker.log import LogManager, PartitionLog
from broker.log.testing import FakeClock, create_logs, open_manager
from protocol.records import decode_record_set, encode_batch

T0 = 1_700_000_000_000
TOPIC = "__consumer_offsets"
GROUPS = [b"group-%d" % i for i in range(3)]


def commit(log: PartitionLog, key: bytes, value: bytes) -> None:
    log.append(encode_batch([(key, value, None, T0)]))


def latest_values(log: PartitionLog) -> dict[bytes, bytes | None]:
    latest: dict[bytes, bytes | None] = {}
    for _, data in log.iter_batches(log.log_start_offset):
        for r in decode_record_set(data):
            if r.key is not None:
                latest[r.key] = r.value
    return latest


def power_loss_copy(lm: LogManager, log: PartitionLog, fsynced: set[int], target: Path) -> None:
    """Copy the data directory as a power loss would leave it: of the segments not in ``fsynced``
    (ids of segment objects whose files were fsynced whole: the cleaned copies), nothing above
    the recovery point survives."""
    shutil.copytree(lm.data_dir, target, ignore=shutil.ignore_patterns(".lock"))
    rp = log.recovery_point
    for seg in log.segments:
        if id(seg) in fsynced or seg.next_offset <= rp:
            continue
        copy = target / os.path.relpath(seg.log_path, lm.data_dir)
        position = seg.lookup(rp) if seg.base_offset < rp else 0
        if position == 0:
            for suffix in (".log", ".index", ".timeindex"):
                copy.with_suffix(suffix).unlink()
        elif position is not None:
            os.truncate(copy, position)
            copy.with_suffix(".index").unlink()  # rebuilt on open
            copy.with_suffix(".timeindex").unlink()


def test_a_pass_only_uses_records_that_are_on_disk(tmp_path):
    clock = FakeClock(T0)
    live = tmp_path / "live"
    with open_manager(live, clock) as lm:
        create_logs(lm, TOPIC, 1, {"cleanup.policy": "compact", "segment.bytes": "400"})
        log = lm.get_log(TOPIC, 0)
        for i in range(30):
            commit(log, GROUPS[i % 3], b"durable-%d" % i)
        log.flush()
        durable = latest_values(log)
        assert durable == {b"group-0": b"durable-27", b"group-1": b"durable-28", b"group-2": b"durable-29"}
        rp = log.recovery_point
        # Newer commits of the same groups, written but not fsynced, in segments that get sealed.
        for i in range(12):
            commit(log, GROUPS[i % 3], b"unflushed-%d" % i)
        assert log.recovery_point == rp < log.segments[-2].next_offset
        assert any(seg.next_offset <= rp for seg in log.segments[:-1])
        size_on_disk = sum(seg.size for seg in log.segments if seg.next_offset <= rp)

        originals = {id(seg) for seg in log.segments}
        lm.maintenance(flush=False)  # the broker flushes off the loop, not in maintenance
        assert lm.cleaner.wait_idle(30)
        lm.apply_cleaned()
        assert log.recovery_point == rp  # the pass itself flushed nothing of the log
        # The pass still did its job on the data that is on disk.
        assert sum(seg.size for seg in log.segments if seg.next_offset <= rp) < size_on_disk
        assert latest_values(log) == {key: b"unflushed-%d" % (9 + i) for i, key in enumerate(GROUPS)}
        cleaned = {id(seg) for seg in log.segments} - originals
        power_loss_copy(lm, log, cleaned, tmp_path / "after-power-loss")

    with open_manager(tmp_path / "after-power-loss", clock) as lm:
        log = lm.get_log(TOPIC, 0)
        assert log.log_end_offset == rp
        assert latest_values(log) == durable  # every group is back at its last durable commit
