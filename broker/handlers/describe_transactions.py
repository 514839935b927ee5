"""DescribeTransactions (65): transactional ids' state, timeout, start time, producer and partitions."""

from __future__ import annotations

from typing import TYPE_CHECKING

from broker.handlers.registry import Reply, handles
from protocol.api import ApiKey
from protocol.primitives import Obj

if TYPE_CHECKING:
    from broker.handlers.context import RequestContext
    from broker.handlers.services import Services


@handles(ApiKey.DESCRIBE_TRANSACTIONS, versions=(0, 0))
def describe_transactions(s: Services, ctx: RequestContext, req: Obj) -> Reply:
    return s.txns.describe_transactions(req)
