"""EndTxn (26): a transaction committed or aborted (the coordinator's two-phase commit: the
decision is stored, then markers go to every partition)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from broker.handlers.registry import Reply, handles
from protocol.api import ApiKey
from protocol.primitives import Obj

if TYPE_CHECKING:
    from collections.abc import Awaitable

    from broker.handlers.context import RequestContext
    from broker.handlers.services import Services


@handles(ApiKey.END_TXN, versions=(0, 5))
def end_txn(s: Services, ctx: RequestContext, req: Obj) -> Reply | Awaitable[Reply]:
    return s.txns.end_txn(ctx.version, req)
