"""DeleteTopics (20): topics (by name, or by id from v6) deleted from the cluster's metadata store;
every replica then deletes its logs.  TOPIC_DELETION_DISABLED unless ``delete.topic.enable``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from broker.admin.topics import TopicError
from broker.handlers.registry import Reply, handles
from protocol.api import ApiKey
from protocol.error_codes import ErrorCode
from protocol.primitives import Obj

if TYPE_CHECKING:
    from broker.handlers.context import RequestContext
    from broker.handlers.services import Services

E = ErrorCode


@handles(ApiKey.DELETE_TOPICS, versions=(1, 6))
async def delete_topics(s: Services, ctx: RequestContext, req: Obj) -> Reply:
    image = s.image
    results = []
    if ctx.version >= 6:
        wanted = [(t.name, t.topic_id) for t in req.topics]
    else:
        wanted = [(name, None) for name in req.topic_names]
    for name, topic_id in wanted:
        if name is None and topic_id is not None:
            name = image.topic_name(topic_id)
            if name is None:
                results.append({"name": None, "topic_id": topic_id, "error_code": E.UNKNOWN_TOPIC_ID,
                                "error_message": "unknown topic id"})
                continue
        entry: dict[str, Any] = {"name": name, "error_code": 0, "error_message": None}
        t = image.topic(name) if name else None
        if t is not None and not s.config.delete_topic_enable:
            entry["error_code"] = E.TOPIC_DELETION_DISABLED
            results.append(entry)
            continue
        try:
            if t is not None:
                entry["topic_id"] = t.topic_id
            await s.topics.delete(name or "")
        except TopicError as exc:
            entry.update(error_code=exc.code, error_message=exc.message)
        results.append(entry)
    return Obj(throttle_time_ms=0, responses=results)
