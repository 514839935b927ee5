"""ListOffsets (2): the offset of a timestamp in each partition this broker leads — the earliest,
the latest (or last stable for read_committed), the one with the largest timestamp (v7+), or the
first at or after a time — with its leader epoch."""

from __future__ import annotations

from typing import TYPE_CHECKING

from broker.handlers.registry import Reply, handles
from broker.log.errors import LogError
from protocol.api import ApiKey
from protocol.error_codes import ErrorCode
from protocol.primitives import Obj

if TYPE_CHECKING:
    from broker.handlers.context import RequestContext
    from broker.handlers.services import Services

E = ErrorCode

LATEST, EARLIEST, MAX_TIMESTAMP, EARLIEST_LOCAL, LATEST_TIERED = -1, -2, -3, -4, -5
READ_COMMITTED = 1


@handles(ApiKey.LIST_OFFSETS, versions=(1, 10))
def list_offsets(s: Services, ctx: RequestContext, req: Obj) -> Reply:
    version = ctx.version
    topics = []
    for t in req.topics:
        parts = []
        for p in t.partitions:
            entry = {"partition_index": p.partition_index, "error_code": 0, "timestamp": -1, "offset": -1,
                     "leader_epoch": -1}
            parts.append(entry)
            try:
                partition = s.replica.leader_partition(t.name, p.partition_index)
                code = partition.check_leader_epoch(p.get("current_leader_epoch", -1))
                if code != E.NONE:
                    entry["error_code"] = code
                    continue
                plog = partition.log
                ts = p.timestamp
                if ts == LATEST_TIERED:
                    offset, found_ts = -1, -1
                elif ts == LATEST and version >= 2 and req.isolation_level == READ_COMMITTED:
                    offset, found_ts = plog.last_stable_offset, -1
                elif ts == EARLIEST_LOCAL:
                    offset, found_ts = plog.list_offset(EARLIEST)
                elif ts == MAX_TIMESTAMP and version < 7:
                    raise LogError("max timestamp needs ListOffsets v7")
                else:
                    offset, found_ts = plog.list_offset(ts)
                entry["offset"], entry["timestamp"] = offset, found_ts
                if offset >= 0:
                    entry["leader_epoch"] = (partition.leader_epoch if ts == LATEST
                                             else max(plog.epoch_cache.epoch_for_offset(offset), -1))
            except LogError as exc:
                entry["error_code"] = exc.error_code if exc.error_code != -1 else E.INVALID_REQUEST
        topics.append({"name": t.name, "partitions": parts})
    return Obj(throttle_time_ms=0, topics=topics)
