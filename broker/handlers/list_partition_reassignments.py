"""ListPartitionReassignments (46): the partitions being reassigned (all, or those named) with their
full replica list, the replicas being added and those being removed."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from broker.handlers.registry import Reply, handles
from protocol.api import ApiKey
from protocol.primitives import Obj

if TYPE_CHECKING:
    from broker.handlers.context import RequestContext
    from broker.handlers.services import Services


@handles(ApiKey.LIST_PARTITION_REASSIGNMENTS, versions=(0, 0))
def list_partition_reassignments(s: Services, ctx: RequestContext, req: Obj) -> Reply:
    image = s.image
    if req.topics is None:
        wanted = [(p.topic, p.partition) for p in image.partitions() if p.record.reassigning]
    else:
        wanted = [(t.name, i) for t in req.topics for i in t.partition_indexes]
    topics: dict[str, list[dict[str, Any]]] = {}
    for topic, index in sorted(wanted):
        p = image.partition(topic, index)
        if p is None or not p.record.reassigning:
            continue
        topics.setdefault(topic, []).append({
            "partition_index": index, "replicas": list(p.replicas), "adding_replicas": list(p.record.adding),
            "removing_replicas": list(p.record.removing)})
    return Obj(throttle_time_ms=0, error_code=0, error_message=None,
               topics=[{"name": name, "partitions": parts} for name, parts in topics.items()])
