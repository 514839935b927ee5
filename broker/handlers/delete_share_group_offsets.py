"""DeleteShareGroupOffsets (92): an Empty share group's state for some topics deleted.  See :mod:`broker.coordinator.group.share_service`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from broker.handlers.registry import Reply, handles
from protocol.api import ApiKey
from protocol.primitives import Obj

if TYPE_CHECKING:
    from collections.abc import Awaitable

    from broker.handlers.context import RequestContext
    from broker.handlers.services import Services


@handles(ApiKey.DELETE_SHARE_GROUP_OFFSETS, versions=(0, 0))
def delete_share_group_offsets(s: Services, ctx: RequestContext, req: Obj) -> Reply | Awaitable[Reply]:
    return s.share_groups.delete_offsets(ctx.version, req)
