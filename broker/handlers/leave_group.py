"""LeaveGroup (13): members leave a classic group (a rebalance follows)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from broker.handlers.registry import Reply, handles
from protocol.api import ApiKey
from protocol.primitives import Obj

if TYPE_CHECKING:
    from collections.abc import Awaitable

    from broker.handlers.context import RequestContext
    from broker.handlers.services import Services


@handles(ApiKey.LEAVE_GROUP, versions=(0, 5))
def leave_group(s: Services, ctx: RequestContext, req: Obj) -> Reply | Awaitable[Reply]:
    return s.groups.request(ApiKey.LEAVE_GROUP, ctx.version, req)
