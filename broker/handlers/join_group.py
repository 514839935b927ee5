"""JoinGroup (11): a member joins a classic group (the group coordinator,
:mod:`broker.coordinator.group.coordinator`; the answer waits for the rebalance)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from broker.handlers.registry import Reply, handles
from protocol.api import ApiKey
from protocol.primitives import Obj

if TYPE_CHECKING:
    from collections.abc import Awaitable

    from broker.handlers.context import RequestContext
    from broker.handlers.services import Services


@handles(ApiKey.JOIN_GROUP, versions=(2, 9))
def join_group(s: Services, ctx: RequestContext, req: Obj) -> Reply | Awaitable[Reply]:
    return s.groups.request(ApiKey.JOIN_GROUP, ctx.version, req, client_id=ctx.client_id,
                            client_host=ctx.client_host)
