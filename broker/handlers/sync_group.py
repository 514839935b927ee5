"""SyncGroup (14): the leader's assignment stored and handed to every member of a classic group."""

from __future__ import annotations

from typing import TYPE_CHECKING

from broker.handlers.registry import Reply, handles
from protocol.api import ApiKey
from protocol.primitives import Obj

if TYPE_CHECKING:
    from collections.abc import Awaitable

    from broker.handlers.context import RequestContext
    from broker.handlers.services import Services


@handles(ApiKey.SYNC_GROUP, versions=(0, 5))
def sync_group(s: Services, ctx: RequestContext, req: Obj) -> Reply | Awaitable[Reply]:
    return s.groups.request(ApiKey.SYNC_GROUP, ctx.version, req)
