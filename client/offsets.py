"""Offset requests shared by Consumer and Admin: ListOffsets, OffsetFetch, OffsetCommit bodies.

Each helper groups partitions by the node that must answer (leader or coordinator), builds
version-appropriate bodies, and maps the answers back to :class:`~client.types.TopicPartition`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping
from typing import Any

from client.errors import KafkaError, KafkaTimeoutError
from client.net import NetworkClient
from client.types import OffsetAndMetadata, TopicPartition
from protocol.api import ApiKey
from protocol.error_codes import ErrorCode

EARLIEST = -2
LATEST = -1


def _by_topic(tps: Iterable[TopicPartition]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for tp in tps:
        out.setdefault(tp.topic, []).append(tp.partition)
    return out


async def list_offsets(net: NetworkClient, timestamps: Mapping[TopicPartition, int], *,
                       isolation_level: int = 0, timeout_ms: int | None = None) -> dict[TopicPartition, tuple[int, int]]:
    """``tp -> (offset, timestamp)`` for a timestamp (or EARLIEST/LATEST) per partition; offset -1 = none."""
    timeout_ms = timeout_ms if timeout_ms is not None else net.config.request_timeout_ms
    deadline = net.timers.now_ms() + timeout_ms
    remaining = dict(timestamps)
    result: dict[TopicPartition, tuple[int, int]] = {}
    while remaining:
        for tp in remaining:
            await net.wait_for_partitions(tp.topic, max(1, int(deadline - net.timers.now_ms())))
        by_leader: dict[int, dict[TopicPartition, int]] = {}
        for tp, ts in remaining.items():
            leader = net.metadata.leader_for(tp.topic, tp.partition)
            if leader is None:
                if net.metadata.partition_count(tp.topic) is not None and tp.partition >= (
                        net.metadata.partition_count(tp.topic) or 0):
                    raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"{tp}")
                continue
            by_leader.setdefault(leader, {})[tp] = ts
        answers = await asyncio.gather(*(_list_on(net, node, req, isolation_level) for node, req in by_leader.items()))
        retry = False
        for answer in answers:
            for tp, (code, offset, ts) in answer.items():
                if code == 0:
                    result[tp] = (offset, ts)
                    remaining.pop(tp, None)
                elif ErrorCode.from_code(code).retriable:
                    retry = True
                else:
                    raise KafkaError(code, f"ListOffsets {tp.topic}-{tp.partition}")
        if remaining:
            if net.timers.now_ms() >= deadline:
                raise KafkaTimeoutError(f"ListOffsets did not complete for {sorted(remaining)}")
            if retry or not by_leader:
                await net.refresh_metadata()
                await asyncio.sleep(net.config.retry_backoff_ms / 1000)
    return result


async def _list_on(net: NetworkClient, node: int, req: dict[TopicPartition, int],
                   isolation_level: int) -> dict[TopicPartition, tuple[int, int, int]]:
    body = {"replica_id": -1, "isolation_level": isolation_level, "timeout_ms": net.config.request_timeout_ms,
            "topics": [{"name": topic, "partitions": [{"partition_index": p, "timestamp": req[TopicPartition(topic, p)]}
                                                      for p in parts]}
                       for topic, parts in _by_topic(req).items()]}
    resp = await net.send(node, ApiKey.LIST_OFFSETS, body)
    out: dict[TopicPartition, tuple[int, int, int]] = {}
    for t in resp.topics:
        for p in t.partitions:
            out[TopicPartition(t.name, p.partition_index)] = (p.error_code, p.offset, p.timestamp)
    return out


async def fetch_committed(net: NetworkClient, node: int, group_id: str,
                          tps: Iterable[TopicPartition] | None,
                          require_stable: bool = False) -> dict[TopicPartition, OffsetAndMetadata | None]:
    """The group's committed offsets (``None`` where nothing is committed); ``tps=None`` = all.
    ``require_stable`` (KIP-447): a partition with transactional offsets not yet decided is answered
    UNSTABLE_OFFSET_COMMIT (raised; retriable) instead of the offset before them."""
    topics = None if tps is None else [{"name": t, "partition_indexes": ps} for t, ps in _by_topic(tps).items()]

    def build(version: int) -> dict[str, Any]:
        if version >= 8:
            return {"groups": [{"group_id": group_id, "topics": topics}], "require_stable": require_stable}
        return {"group_id": group_id, "topics": topics, "require_stable": require_stable}

    resp = await net.send(node, ApiKey.OFFSET_FETCH, {}, build=build)
    if resp.groups:
        g = resp.groups[0]
        code, rtopics = g.error_code, g.topics
        meta_field = "metadata"
    else:
        code, rtopics = resp.error_code, resp.topics
        meta_field = "metadata"
    if code:
        raise KafkaError(code, f"OffsetFetch({group_id})")
    out: dict[TopicPartition, OffsetAndMetadata | None] = {}
    for t in rtopics:
        for p in t.partitions:
            if p.error_code:
                raise KafkaError(p.error_code, f"OffsetFetch {t.name}-{p.partition_index}")
            tp = TopicPartition(t.name, p.partition_index)
            out[tp] = None if p.committed_offset < 0 else OffsetAndMetadata(p.committed_offset, p[meta_field] or "")
    return out


async def commit(net: NetworkClient, node: int, group_id: str, offsets: Mapping[TopicPartition, OffsetAndMetadata],
                 *, generation: int, member_id: str, group_instance_id: str | None) -> dict[TopicPartition, int]:
    """OffsetCommit; returns the error code per partition."""
    by_topic: dict[str, list[dict[str, Any]]] = {}
    for tp, om in offsets.items():
        by_topic.setdefault(tp.topic, []).append(
            {"partition_index": tp.partition, "committed_offset": om.offset, "committed_metadata": om.metadata})
    body = {"group_id": group_id, "generation_id_or_member_epoch": generation, "member_id": member_id,
            "group_instance_id": group_instance_id, "retention_time_ms": -1,
            "topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()]}
    resp = await net.send(node, ApiKey.OFFSET_COMMIT, body)
    return {TopicPartition(t.name, p.partition_index): p.error_code for t in resp.topics for p in t.partitions}


def normalize_offsets(offsets: Mapping[TopicPartition, Any]) -> dict[TopicPartition, OffsetAndMetadata]:
    """Offsets as callers give them (an int, ``OffsetAndMetadata`` or ``(offset, metadata)`` per
    partition; partitions as ``TopicPartition`` or ``(topic, partition)``) as ``OffsetAndMetadata``."""
    out: dict[TopicPartition, OffsetAndMetadata] = {}
    for tp, v in offsets.items():
        tp = TopicPartition(*tp)
        if isinstance(v, int):
            out[tp] = OffsetAndMetadata(v, "")
        else:
            out[tp] = OffsetAndMetadata(int(v[0]), v[1] if len(v) > 1 and v[1] is not None else "")
    return out
