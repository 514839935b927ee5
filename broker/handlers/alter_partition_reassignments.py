"""AlterPartitionReassignments (45): partitions moved to new replica lists, or their reassignments
cancelled (``replicas`` null), KIP-455.  The new records are written by compare-and-set
(:mod:`broker.cluster.reassignment` decides them); the controller and the leaders carry them to
completion.  Any broker takes the request, as the controller's work is done through the store."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from broker.cluster import reassignment
from broker.cluster.controller import unclean_allowed
from broker.cluster.reassignment import ReassignmentError
from broker.handlers.registry import Reply, handles
from protocol.api import ApiKey
from protocol.error_codes import ErrorCode
from protocol.primitives import Obj

if TYPE_CHECKING:
    from broker.cluster.records import PartitionChange
    from broker.handlers.context import RequestContext
    from broker.handlers.services import Services

E = ErrorCode
#: how often a partition changed meanwhile is planned again before the request gives up on it
ATTEMPTS = 5


@handles(ApiKey.ALTER_PARTITION_REASSIGNMENTS, versions=(0, 1))
async def alter_partition_reassignments(s: Services, ctx: RequestContext, req: Obj) -> Reply:
    allow_rf_change = req.get("allow_replication_factor_change", True) if ctx.version >= 1 else True
    #: partition -> (its answer, the target replicas or None to cancel)
    asked: dict[tuple[str, int], tuple[dict[str, Any], list[int] | None]] = {}
    topics = []
    for t in req.topics:
        parts = []
        for p in t.partitions:
            entry = {"partition_index": p.partition_index, "error_code": 0, "error_message": None}
            parts.append(entry)
            asked[(t.name, p.partition_index)] = (entry, p.replicas)
        topics.append({"name": t.name, "partitions": parts})
    pending = dict(asked)
    for _ in range(ATTEMPTS):
        changes: list[PartitionChange] = []
        for (topic, index), (entry, target) in pending.items():
            try:
                changes.append(_plan(s, topic, index, target, allow_rf_change))
            except ReassignmentError as exc:
                entry.update(error_code=exc.code, error_message=exc.message)
        if not changes:
            pending = {}
            break
        written = await s.metadata.reassign(changes)
        pending = {(c.topic, c.partition): asked[(c.topic, c.partition)] for c in changes
                   if (c.topic, c.partition) not in written}
        if not pending:
            break
        await s.metadata.wait_for_revision(s.image.revision + 1, 1.0)  # someone changed it: look again
    for entry, _ in pending.values():
        entry.update(error_code=E.REQUEST_TIMED_OUT, error_message="the partition kept changing")
    return Obj(throttle_time_ms=0, error_code=0, error_message=None,
               allow_replication_factor_change=allow_rf_change, responses=topics)


def _plan(s: Services, topic: str, index: int, target: list[int] | None, allow_rf_change: bool) -> PartitionChange:
    image = s.image
    p = image.partition(topic, index)
    if p is None:
        raise ReassignmentError(E.UNKNOWN_TOPIC_OR_PARTITION, f"unknown partition {topic}-{index}")
    if target is None:
        unclean = unclean_allowed(image, topic, s.config.unclean_leader_election_enable)
        return reassignment.cancel(image, p, unclean_allowed=unclean)
    return reassignment.start(image, p, [int(b) for b in target], allow_replication_factor_change=allow_rf_change)
