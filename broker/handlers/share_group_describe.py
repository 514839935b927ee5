"""ShareGroupDescribe (77): share groups' epochs, assignor and members with their assignments."""

from __future__ import annotations

from typing import TYPE_CHECKING

from broker.handlers.registry import Reply, handles
from protocol.api import ApiKey
from protocol.primitives import Obj

if TYPE_CHECKING:
    from collections.abc import Awaitable

    from broker.handlers.context import RequestContext
    from broker.handlers.services import Services


@handles(ApiKey.SHARE_GROUP_DESCRIBE, versions=(1, 1))
def share_group_describe(s: Services, ctx: RequestContext, req: Obj) -> Reply | Awaitable[Reply]:
    return s.groups.share_group_describe(ctx.version, req)
