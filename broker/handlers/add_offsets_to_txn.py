"""AddOffsetsToTxn (25): a group's offsets partition added to a producer's ongoing transaction."""

from __future__ import annotations

from typing import TYPE_CHECKING

from broker.handlers.registry import Reply, handles
from protocol.api import ApiKey
from protocol.primitives import Obj

if TYPE_CHECKING:
    from collections.abc import Awaitable

    from broker.handlers.context import RequestContext
    from broker.handlers.services import Services


@handles(ApiKey.ADD_OFFSETS_TO_TXN, versions=(0, 4))
def add_offsets_to_txn(s: Services, ctx: RequestContext, req: Obj) -> Reply | Awaitable[Reply]:
    return s.txns.add_offsets(ctx.version, req)
