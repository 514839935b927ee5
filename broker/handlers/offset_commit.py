"""OffsetCommit (8): a group's committed offsets stored in ``__consumer_offsets``; answered once replicated."""

from __future__ import annotations

from typing import TYPE_CHECKING

from broker.handlers.registry import Reply, handles
from protocol.api import ApiKey
from protocol.primitives import Obj

if TYPE_CHECKING:
    from collections.abc import Awaitable

    from broker.handlers.context import RequestContext
    from broker.handlers.services import Services


@handles(ApiKey.OFFSET_COMMIT, versions=(2, 9))
def offset_commit(s: Services, ctx: RequestContext, req: Obj) -> Reply | Awaitable[Reply]:
    return s.groups.request(ApiKey.OFFSET_COMMIT, ctx.version, req)
