"""OffsetForLeaderEpoch (23): where each requested leader epoch ends in the leader's log
(KIP-101/279/320) — for followers up to the log end, for consumers up to the high watermark."""

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


@handles(ApiKey.OFFSET_FOR_LEADER_EPOCH, versions=(2, 4))
def offset_for_leader_epoch(s: Services, ctx: RequestContext, req: Obj) -> Reply:
    replica_id = req.get("replica_id", -2)
    topics = []
    for t in req.topics:
        parts = []
        for p in t.partitions:
            entry = {"error_code": 0, "partition": p.partition, "leader_epoch": -1, "end_offset": -1}
            try:
                partition = s.replica.leader_partition(t.topic, p.partition)
                code = partition.check_leader_epoch(p.current_leader_epoch)
                if code != E.NONE:
                    entry["error_code"] = code
                else:
                    plog = partition.log
                    epoch, end = plog.epoch_cache.end_offset_for(p.leader_epoch, plog.log_end_offset)
                    if replica_id < 0 and end >= 0:
                        end = min(end, plog.high_watermark)
                    entry["leader_epoch"], entry["end_offset"] = epoch, end
            except LogError as exc:
                entry["error_code"] = exc.error_code
            parts.append(entry)
        topics.append({"topic": t.topic, "partitions": parts})
    return Obj(throttle_time_ms=0, topics=topics)
