"""ListTransactions (66): the transactional ids this broker coordinates, filtered by state,
producer id and (v1+) how long they have run."""

from __future__ import annotations

from typing import TYPE_CHECKING

from broker.handlers.registry import Reply, handles
from protocol.api import ApiKey
from protocol.primitives import Obj

if TYPE_CHECKING:
    from broker.handlers.context import RequestContext
    from broker.handlers.services import Services


@handles(ApiKey.LIST_TRANSACTIONS, versions=(0, 1))
def list_transactions(s: Services, ctx: RequestContext, req: Obj) -> Reply:
    return s.txns.list_transactions(ctx.version, req)
