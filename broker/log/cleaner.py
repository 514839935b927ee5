"""Log compaction for ``cleanup.policy=compact`` topics (``__consumer_offsets``) — deliberately simple.

Granularity is the *batch*: a sealed segment is rewritten without the batches
whose every record is superseded by a later record with the same key (or is a
tombstone older than ``delete.retention.ms`` with nothing newer).  Batches are
copied byte-for-byte, keeping their offsets, so readers see gaps, exactly as
with Kafka's cleaner.  The group coordinator writes one or a few records per
batch, so batch granularity reclaims nearly everything there.  Batches from
idempotent producers and control batches are always kept.

Records are decoded here (never on the produce/fetch path).  The swap is
crash-safe: old indexes are unlinked first (so a crash leaves them to be
rebuilt), then the new ``.log`` replaces the old one atomically, then the new
indexes are moved into place.
"""

from __future__ import annotations

import logging
import os
import shutil
from typing import TYPE_CHECKING

from broker.log._fs import fsync_dir
from broker.log.segment import Segment, segment_file_name
from protocol.records import BatchHeader, CorruptRecordError, decode_batch

if TYPE_CHECKING:
    from broker.log.partition_log import PartitionLog

logger = logging.getLogger("kbroker.log")
CLEANING_DIR = "cleaning"


def compact_log(log: PartitionLog, now_ms: int) -> int:
    """Compact the sealed segments of ``log`` if new data was sealed since last time.

    Returns the number of bytes reclaimed.
    """
    segments = log.segments
    sealed = segments[:-1]
    if not sealed:
        return 0
    cleaned_upto = getattr(log, "_cleaned_upto", -1)
    if sealed[-1].next_offset <= cleaned_upto:
        return 0
    latest: dict[bytes, int] = {}
    for hdr, data in log.iter_batches(log.log_start_offset):
        if hdr.is_control:
            continue
        try:
            _, records = decode_batch(data)
        except CorruptRecordError:
            continue
        for r in records:
            if r.key is not None:
                latest[r.key] = r.offset
    work = os.path.join(log.directory, CLEANING_DIR)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    reclaimed = 0
    horizon = now_ms - log.config.delete_retention_ms
    for old in sealed:
        new = Segment(work, old.base_offset, index_interval_bytes=old.index_interval_bytes)
        for pos, hdr in old.iter_headers(0):
            data = os.pread(old.fd, hdr.size, pos)
            if _keep(hdr, data, latest, horizon):
                new.append(data, hdr.base_offset, hdr.next_offset, hdr.max_timestamp, now_ms)
        if new.size == old.size:
            new.close()
            continue
        new.next_offset = old.next_offset
        new.seal()
        new.fsync()
        reclaimed += old.size - new.size
        _swap(log, old, new)
    shutil.rmtree(work, ignore_errors=True)
    log._cleaned_upto = sealed[-1].next_offset  # type: ignore[attr-defined]
    if reclaimed:
        logger.info("%s: compaction reclaimed %d bytes", log.name, reclaimed)
    return reclaimed


def _keep(hdr: BatchHeader, data: bytes, latest: dict[bytes, int], horizon: int) -> bool:
    if hdr.is_control or hdr.producer_id >= 0:
        return True
    try:
        _, records = decode_batch(data)
    except CorruptRecordError:
        return True
    for r in records:
        if r.key is None:
            return True  # keyless records cannot be compacted away
        if latest.get(r.key, -1) > r.offset:
            continue  # superseded
        if r.value is None and hdr.max_timestamp < horizon:
            continue  # old tombstone, nothing newer
        return True
    return False


def _swap(log: PartitionLog, old: Segment, new: Segment) -> None:
    directory = log.directory
    for idx in (old.offset_index, old.time_index):
        idx.close()
        os.unlink(idx.path)
    fsync_dir(directory)
    os.replace(new.log_path, old.log_path)
    new.log_path = old.log_path
    for idx in (new.offset_index, new.time_index):
        idx.rename_base(os.path.join(directory, os.path.basename(idx.path)))
    new.directory = directory
    fsync_dir(directory)
    # The old .log inode stays reachable through its open file object for in-flight reads;
    # the new files now own the names, so the old segment must not unlink anything.
    i = log._segments.index(old)
    log._segments[i] = new
    log._retired.append((log.clock(), old))
    assert segment_file_name(new.base_offset, ".log") == os.path.basename(new.log_path)
