"""Heartbeat (12): a classic group's member says it is alive (REBALANCE_IN_PROGRESS when it must rejoin)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from broker.handlers.registry import Reply, handles
from protocol.api import ApiKey
from protocol.primitives import Obj

if TYPE_CHECKING:
    from collections.abc import Awaitable

    from broker.handlers.context import RequestContext
    from broker.handlers.services import Services


@handles(ApiKey.HEARTBEAT, versions=(0, 4))
def heartbeat(s: Services, ctx: RequestContext, req: Obj) -> Reply | Awaitable[Reply]:
    return s.groups.heartbeat(ctx.version, req)
