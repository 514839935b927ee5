"""DeleteGroups (42): empty groups and their offsets deleted."""

from __future__ import annotations

from typing import TYPE_CHECKING

from broker.handlers.registry import Reply, handles
from protocol.api import ApiKey
from protocol.primitives import Obj

if TYPE_CHECKING:
    from collections.abc import Awaitable

    from broker.handlers.context import RequestContext
    from broker.handlers.services import Services


@handles(ApiKey.DELETE_GROUPS, versions=(0, 2))
def delete_groups(s: Services, ctx: RequestContext, req: Obj) -> Reply | Awaitable[Reply]:
    return s.groups.delete_groups(ctx.version, req)
