"""ShareGroupHeartbeat (76): a share group member's heartbeat — joining with its subscription, getting its
assignment (partitions it may share with other members), leaving (KIP-932).  The authorization pass
refuses the request unless the principal may READ the group and DESCRIBE every subscribed topic."""

from __future__ import annotations

from typing import TYPE_CHECKING

from broker.handlers.registry import Reply, handles
from protocol.api import ApiKey
from protocol.primitives import Obj

if TYPE_CHECKING:
    from collections.abc import Awaitable

    from broker.handlers.context import RequestContext
    from broker.handlers.services import Services


@handles(ApiKey.SHARE_GROUP_HEARTBEAT, versions=(1, 1))
def share_group_heartbeat(s: Services, ctx: RequestContext, req: Obj) -> Reply | Awaitable[Reply]:
    return s.groups.request(ApiKey.SHARE_GROUP_HEARTBEAT, ctx.version, req, client_id=ctx.client_id,
                            client_host=ctx.client_host)
