"""CreateTopics (19): topics planned (partitions, replication factor or an explicit assignment,
configs validated) and created in the cluster's metadata store; answered once they have leaders.
Internal topics are the broker's own to create."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from broker.admin.topics import TopicError
from broker.cluster.internal_topics import is_internal_topic
from broker.handlers.common import too_many_partitions
from broker.handlers.registry import Reply, handles
from protocol.api import ApiKey
from protocol.error_codes import ErrorCode
from protocol.primitives import Obj

if TYPE_CHECKING:
    from broker.handlers.context import RequestContext
    from broker.handlers.services import Services

E = ErrorCode


@handles(ApiKey.CREATE_TOPICS, versions=(2, 7))
async def create_topics(s: Services, ctx: RequestContext, req: Obj) -> Reply:
    timeout_s = max(0, req.timeout_ms) / 1000
    asked = sum(len(t.assignments) if t.assignments else
                max(0, s.config.num_partitions if t.num_partitions == -1 else t.num_partitions) for t in req.topics)
    if asked > s.config.max_partitions_per_request:
        return Obj(throttle_time_ms=0, topics=[
            {"name": t.name, "num_partitions": -1, "replication_factor": -1, "configs": None,
             "error_code": E.POLICY_VIOLATION, "error_message": too_many_partitions(asked, s.config)} for t in req.topics])
    results = [await _create_one(s, t, req.validate_only, timeout_s) for t in req.topics]
    return Obj(throttle_time_ms=0, topics=results)


async def _create_one(s: Services, t: Obj, validate_only: bool, timeout_s: float) -> dict[str, Any]:
    name = t.name
    base = {"name": name, "num_partitions": -1, "replication_factor": -1, "configs": None}
    if is_internal_topic(name):
        # only the broker creates its internal topics (an admin-made one could never be written to
        # nor deleted); Kafka's answer to creating its own internal metadata topic
        return {**base, "error_code": E.INVALID_REQUEST,
                "error_message": f"Creation of internal topic {name} is prohibited."}
    if t.assignments and (t.num_partitions != -1 or t.replication_factor != -1):
        return {**base, "error_code": E.INVALID_REQUEST,
                "error_message": "Both assignments and numPartitions/replicationFactor were set"}
    assignment = None
    if t.assignments:
        ordered = sorted(t.assignments, key=lambda a: a.partition_index)
        if [a.partition_index for a in ordered] != list(range(len(ordered))):
            return {**base, "error_code": E.INVALID_REPLICA_ASSIGNMENT,
                    "error_message": "Partitions must be numbered 0..n-1"}
        assignment = [list(a.broker_ids) for a in ordered]
    partitions = s.config.num_partitions if t.num_partitions == -1 else t.num_partitions
    rf = s.config.default_replication_factor if t.replication_factor == -1 else t.replication_factor
    try:
        record = s.topics.plan(name, partitions, rf, assignment, {c.name: c.value for c in t.configs})
        if not validate_only:
            await s.topics.create(record, timeout_s)
    except TopicError as exc:
        return {**base, "error_code": exc.code, "error_message": exc.message}
    result = {**base, "error_code": 0, "error_message": None, "num_partitions": record.partitions,
              "replication_factor": len(record.assignment[0]), "configs": _config_entries(s, record.configs)}
    if not validate_only:
        result["topic_id"] = record.topic_id
    return result


def _config_entries(s: Services, configs: dict[str, str]) -> list[dict[str, Any]]:
    """The new topic's effective configs (v5+ answers them)."""
    return [{"name": name, "value": value, "read_only": False, "config_source": 5 if is_default else 1,
             "is_sensitive": False} for name, (value, is_default) in s.logs.effective_configs(configs).items()]
