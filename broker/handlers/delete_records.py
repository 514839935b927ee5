"""DeleteRecords (21): each partition's log start moved up to an offset (-1: the high watermark),
never past the high watermark."""

from __future__ import annotations

from typing import TYPE_CHECKING

from broker.handlers.registry import Reply, handles
from broker.log.errors import LogError, OffsetOutOfRangeError
from protocol.api import ApiKey
from protocol.primitives import Obj

if TYPE_CHECKING:
    from broker.handlers.context import RequestContext
    from broker.handlers.services import Services



@handles(ApiKey.DELETE_RECORDS, versions=(0, 2))
def delete_records(s: Services, ctx: RequestContext, req: Obj) -> Reply:
    topics = []
    for t in req.topics:
        parts = []
        for p in t.partitions:
            entry = {"partition_index": p.partition_index, "low_watermark": -1, "error_code": 0}
            try:
                plog = s.replica.writable_partition(t.name, p.partition_index).log
                offset = plog.high_watermark if p.offset == -1 else p.offset
                if offset < 0 or offset > plog.high_watermark:
                    raise OffsetOutOfRangeError(f"offset {offset} beyond the high watermark")
                entry["low_watermark"] = plog.delete_records_before(offset)
            except LogError as exc:
                entry["error_code"] = exc.error_code
            parts.append(entry)
        topics.append({"name": t.name, "partitions": parts})
    return Obj(throttle_time_ms=0, topics=topics)
