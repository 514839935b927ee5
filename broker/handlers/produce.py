"""Produce (0): record batches appended to the partitions this broker leads
(:meth:`ReplicaManager.produce <broker.replication.replica_manager.ReplicaManager.produce>`:
validation, acks, min.insync.replicas, transactional verification).

acks=0 gets no response; after an error the connection is closed instead, as Kafka does (the
client learns of it by reconnecting).  Version 0 is advertised though only 3+ is served
(KAFKA-18659: librdkafka turns compression off unless Produce's minimum is 0)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from broker.handlers.registry import Reply, handles
from protocol.api import ApiKey
from protocol.primitives import Obj

if TYPE_CHECKING:
    from collections.abc import Awaitable

    from broker.handlers.context import RequestContext
    from broker.handlers.services import Services



@handles(ApiKey.PRODUCE, versions=(3, 12), advertise_from=0)
def produce(s: Services, ctx: RequestContext, req: Obj) -> Reply | Awaitable[Reply]:
    result = s.replica.produce(ctx.version, req)
    if req["acks"] != 0:
        return result
    if isinstance(result, dict):
        return _no_answer(ctx, result)
    return _no_answer_later(ctx, result)


def _no_answer(ctx: RequestContext, body: Obj) -> None:
    if any(p["error_code"] for t in body["responses"] for p in t["partition_responses"]):
        ctx.conn.close_after_flush()


async def _no_answer_later(ctx: RequestContext, pending: Awaitable[Obj]) -> None:
    _no_answer(ctx, await pending)
