"""WriteTxnMarkers (27, from a transaction coordinator): a COMMIT/ABORT marker in each named
partition this broker leads, answered once replicated; on an offsets partition the marker goes
through that partition's group coordinator shard, which applies or drops the transaction's offsets."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from broker.cluster.internal_topics import OFFSETS_TOPIC
from broker.handlers.registry import Reply, handles
from protocol.api import ApiKey
from protocol.primitives import Obj

if TYPE_CHECKING:
    from collections.abc import Awaitable

    from broker.handlers.context import RequestContext
    from broker.handlers.services import Services


@handles(ApiKey.WRITE_TXN_MARKERS, versions=(1, 1))
async def write_txn_markers(s: Services, ctx: RequestContext, req: Obj) -> Reply:
    timeout = s.config.transaction_marker_request_timeout_ms
    writes: list[tuple[dict[str, Any], Awaitable[Any]]] = []
    markers = []
    for m in req.markers:
        topics = []
        for t in m.topics:
            parts = []
            for index in t.partition_indexes:
                entry: dict[str, Any] = {"partition_index": index, "error_code": 0}
                parts.append(entry)
                if t.name == OFFSETS_TOPIC:
                    pending: Awaitable[Any] = s.groups.complete_transaction(
                        index, m.producer_id, m.producer_epoch, m.transaction_result, m.coordinator_epoch)
                else:
                    pending = s.replica.write_marker(t.name, index, m.producer_id, m.producer_epoch,
                                                     m.transaction_result, m.coordinator_epoch, timeout)
                writes.append((entry, pending))
            topics.append({"name": t.name, "partitions": parts})
        markers.append({"producer_id": m.producer_id, "topics": topics})
    for entry, pending in writes:
        result = await pending
        entry["error_code"] = result[0] if isinstance(result, tuple) else result
    return Obj(markers=markers)
