"""FindCoordinator (10): the broker coordinating a group (the leader of its ``__consumer_offsets``
partition), a transactional id (of its ``__transaction_state`` partition) or, v6+, a share-partition
(key type 2, ``groupId:topicId:partition``: the leader of its ``__share_group_state`` partition; asked by
brokers); the internal topic is created on first use."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from broker.cluster.internal_topics import (
    OFFSETS_TOPIC,
    SHARE_GROUP_STATE_TOPIC,
    TRANSACTION_STATE_TOPIC,
    internal_topic_spec,
)
from broker.coordinator.group.partitioning import coordinator_partition
from broker.handlers.common import endpoint
from broker.handlers.registry import Reply, handles
from protocol.api import ApiKey
from protocol.error_codes import ErrorCode
from protocol.primitives import Obj

if TYPE_CHECKING:
    from broker.handlers.context import RequestContext
    from broker.handlers.services import Services

E = ErrorCode
#: how long FindCoordinator waits for the internal topic to get leaders
COORDINATOR_WAIT_S = 5.0
GROUP, TRANSACTION, SHARE = 0, 1, 2


@handles(ApiKey.FIND_COORDINATOR, versions=(0, 6))
async def find_coordinator(s: Services, ctx: RequestContext, req: Obj) -> Reply:
    keys = list(req.coordinator_keys) if ctx.version >= 4 else [req.key]
    if req.key_type == SHARE and ctx.version < 6:
        entries = [{"key": key, "node_id": -1, "host": "", "port": -1, "error_code": E.INVALID_REQUEST,
                    "error_message": "Share coordinators need FindCoordinator v6"} for key in keys]
    else:
        entries = [await _entry(s, req.key_type, key, ctx.listener) for key in keys]
    if ctx.version >= 4:
        return Obj(throttle_time_ms=0, coordinators=entries)
    one = entries[0]
    return Obj(throttle_time_ms=0, error_code=one["error_code"], error_message=one["error_message"],
               node_id=one["node_id"], host=one["host"], port=one["port"])


async def _entry(s: Services, key_type: int, key: str, listener: str) -> dict[str, Any]:
    def fail(code: int, message: str) -> dict[str, Any]:
        return {"key": key, "node_id": -1, "host": "", "port": -1, "error_code": code, "error_message": message}

    if key_type == GROUP:
        topic, partition = OFFSETS_TOPIC, s.groups.partition_for
    elif key_type == TRANSACTION:
        topic, partition = TRANSACTION_STATE_TOPIC, s.txns.partition_for
        if not key:
            return fail(E.INVALID_REQUEST, "empty transactional id")
    elif key_type == SHARE:
        parts = key.rsplit(":", 2)  # group ids may hold ':' (parsed from the right, as Kafka 4.2.1)
        if len(parts) != 3 or not parts[0] or not parts[2].lstrip("-").isdigit():
            return fail(E.INVALID_REQUEST, f"malformed share coordinator key {key!r}")
        topic = SHARE_GROUP_STATE_TOPIC

        def partition(k: str) -> int:
            return coordinator_partition(k, s.share_state.num_partitions)
    else:
        return fail(E.INVALID_REQUEST, f"unsupported coordinator key type {key_type}")
    spec = internal_topic_spec(topic, s.config)
    code = await s.topics.ensure_internal_topic(spec, COORDINATOR_WAIT_S)
    if code != E.NONE:
        return fail(code, f"{topic} needs {spec.replication_factor} live brokers")
    index = partition(key)
    part = s.image.partition(topic, index)
    ep = endpoint(s.image, part.leader, listener) if part is not None and part.leader >= 0 else None
    if part is None or ep is None:
        return fail(E.COORDINATOR_NOT_AVAILABLE, f"{topic}-{index} has no leader")
    return {"key": key, "node_id": part.leader, "host": ep[0], "port": ep[1], "error_code": 0, "error_message": None}
