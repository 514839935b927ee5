"""InitProducerId (22): a producer id and epoch — from the transaction coordinator for a
transactional producer (fencing its earlier incarnations), otherwise a fresh id at epoch 0."""

from __future__ import annotations

from typing import TYPE_CHECKING

from broker.cluster.kv import KVError
from broker.handlers.registry import Reply, handles
from protocol.api import ApiKey
from protocol.error_codes import ErrorCode
from protocol.primitives import Obj

if TYPE_CHECKING:
    from collections.abc import Awaitable

    from broker.handlers.context import RequestContext
    from broker.handlers.services import Services

E = ErrorCode


@handles(ApiKey.INIT_PRODUCER_ID, versions=(0, 6))
def init_producer_id(s: Services, ctx: RequestContext, req: Obj) -> Reply | Awaitable[Reply]:
    if req.transactional_id is not None:
        return s.txns.init_producer_id(ctx.version, req)
    # As Kafka's TransactionCoordinator: a non-transactional producer always gets a fresh producer id
    # at epoch 0, whatever id/epoch it names (bumping a named id would let any client fence another's).
    pid = s.producer_ids.try_next()
    if pid is not None:
        return Obj(throttle_time_ms=0, error_code=0, producer_id=pid, producer_epoch=0)
    return _later(s)


async def _later(s: Services) -> Reply:
    try:
        pid = await s.producer_ids.next_id()
    except KVError:
        return Obj(throttle_time_ms=0, error_code=E.COORDINATOR_NOT_AVAILABLE, producer_id=-1, producer_epoch=-1)
    return Obj(throttle_time_ms=0, error_code=0, producer_id=pid, producer_epoch=0)
