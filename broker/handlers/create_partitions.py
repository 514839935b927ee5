"""CreatePartitions (37): partitions added to topics (placed by the broker, or as assigned)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from broker.admin.topics import TopicError
from broker.handlers.common import too_many_partitions
from broker.handlers.registry import Reply, handles
from protocol.api import ApiKey
from protocol.error_codes import ErrorCode
from protocol.primitives import Obj

if TYPE_CHECKING:
    from broker.handlers.context import RequestContext
    from broker.handlers.services import Services


@handles(ApiKey.CREATE_PARTITIONS, versions=(0, 3))
async def create_partitions(s: Services, ctx: RequestContext, req: Obj) -> Reply:
    added = 0
    for t in req.topics:
        topic = s.image.topic(t.name)
        if topic is not None:
            added += max(0, t.count - topic.partition_count)
    if added > s.config.max_partitions_per_request:
        return Obj(throttle_time_ms=0, results=[
            {"name": t.name, "error_code": ErrorCode.POLICY_VIOLATION,
             "error_message": too_many_partitions(added, s.config)} for t in req.topics])
    results = []
    for t in req.topics:
        entry: dict[str, Any] = {"name": t.name, "error_code": 0, "error_message": None}
        try:
            assignment = None if t.assignments is None else [list(a.broker_ids) for a in t.assignments]
            record = s.topics.plan_partitions(t.name, t.count, assignment)
            if not req.validate_only:
                await s.topics.add_partitions(record, max(0, req.timeout_ms) / 1000)
        except TopicError as exc:
            entry.update(error_code=exc.code, error_message=exc.message)
        results.append(entry)
    return Obj(throttle_time_ms=0, results=results)
