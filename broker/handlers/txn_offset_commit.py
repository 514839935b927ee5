"""TxnOffsetCommit (28): a transactional producer's offsets, made visible by the transaction's
COMMIT marker (checked first with its transaction coordinator, KIP-890)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from broker.handlers.registry import Reply, handles
from protocol.api import ApiKey
from protocol.primitives import Obj

if TYPE_CHECKING:
    from collections.abc import Awaitable

    from broker.handlers.context import RequestContext
    from broker.handlers.services import Services


@handles(ApiKey.TXN_OFFSET_COMMIT, versions=(0, 5))
def txn_offset_commit(s: Services, ctx: RequestContext, req: Obj) -> Reply | Awaitable[Reply]:
    return s.groups.txn_offset_commit(ctx.version, req)
