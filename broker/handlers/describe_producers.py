"""DescribeProducers (61): the producers a partition's leader knows, with their open transactions."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from broker.handlers.registry import Reply, handles
from broker.log.errors import LogError
from protocol.api import ApiKey
from protocol.primitives import Obj

if TYPE_CHECKING:
    from broker.handlers.context import RequestContext
    from broker.handlers.services import Services



@handles(ApiKey.DESCRIBE_PRODUCERS, versions=(0, 0))
def describe_producers(s: Services, ctx: RequestContext, req: Obj) -> Reply:
    topics = []
    for t in req.topics:
        parts = []
        for index in t.partition_indexes:
            entry: dict[str, Any] = {"partition_index": index, "error_code": 0, "error_message": None,
                                     "active_producers": []}
            parts.append(entry)
            try:
                state = s.replica.leader_partition(t.name, index).log.producer_state
            except LogError as exc:
                entry["error_code"] = exc.error_code
                continue
            for pid, producer in sorted(state.producers.items()):
                entry["active_producers"].append({
                    "producer_id": pid, "producer_epoch": producer.epoch, "last_sequence": producer.last_seq,
                    "last_timestamp": producer.last_timestamp, "coordinator_epoch": producer.coordinator_epoch,
                    "current_txn_start_offset": producer.txn_first_offset})
        topics.append({"name": t.name, "partitions": parts})
    return Obj(throttle_time_ms=0, topics=topics)
