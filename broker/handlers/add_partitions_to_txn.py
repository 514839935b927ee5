"""AddPartitionsToTxn (24): partitions added to a producer's ongoing transaction (v4+: checks from
partition leaders, batched over transactional ids, KIP-890)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from broker.handlers.registry import Reply, handles
from protocol.api import ApiKey
from protocol.primitives import Obj

if TYPE_CHECKING:
    from collections.abc import Awaitable

    from broker.handlers.context import RequestContext
    from broker.handlers.services import Services


@handles(ApiKey.ADD_PARTITIONS_TO_TXN, versions=(0, 5))
def add_partitions_to_txn(s: Services, ctx: RequestContext, req: Obj) -> Reply | Awaitable[Reply]:
    return s.txns.add_partitions(ctx.version, req)
