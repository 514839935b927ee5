"""ElectLeaders (43): preferred-replica elections (the first replica takes leadership back when it
is alive and in sync) and unclean ones (an offline partition's first live replica), written by
compare-and-set like the controller's own decisions."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from broker.cluster.controller import elect_preferred, elect_unclean
from broker.handlers.registry import Reply, handles
from protocol.api import ApiKey
from protocol.error_codes import ErrorCode
from protocol.primitives import Obj

if TYPE_CHECKING:
    from broker.handlers.context import RequestContext
    from broker.handlers.services import Services

E = ErrorCode
UNCLEAN = 1


@handles(ApiKey.ELECT_LEADERS, versions=(0, 2))
async def elect_leaders(s: Services, ctx: RequestContext, req: Obj) -> Reply:
    image = s.image
    unclean = ctx.version >= 1 and req.election_type == UNCLEAN
    if req.topic_partitions is None:
        wanted = [(p.topic, p.partition) for p in image.partitions()]
    else:
        wanted = [(t.topic, p) for t in req.topic_partitions for p in t.partitions]
    results: dict[str, list[dict[str, Any]]] = {}
    changes = []
    for topic, p in wanted:
        part = image.partition(topic, p)
        entry = {"partition_id": p, "error_code": 0, "error_message": None}
        results.setdefault(topic, []).append(entry)
        if part is None:
            entry.update(error_code=E.UNKNOWN_TOPIC_OR_PARTITION, error_message="unknown partition")
            continue
        change = elect_unclean(image, part) if unclean else elect_preferred(image, part)
        if change is None:
            if unclean or part.leader == part.replicas[0]:
                entry.update(error_code=E.ELECTION_NOT_NEEDED, error_message="leader is already elected")
            else:
                entry.update(error_code=E.PREFERRED_LEADER_NOT_AVAILABLE,
                             error_message="the preferred replica is not alive or not in sync")
            continue
        changes.append((entry, change))
    if changes:
        written = await s.metadata.elect([c for _, c in changes])
        for entry, change in changes:
            if (change.topic, change.partition) not in written:
                entry.update(error_code=E.ELIGIBLE_LEADERS_NOT_AVAILABLE if unclean else
                             E.PREFERRED_LEADER_NOT_AVAILABLE, error_message="the partition changed meanwhile")
    return Obj(throttle_time_ms=0, error_code=0, replica_election_results=[
        {"topic": t, "partition_result": parts} for t, parts in results.items()])
