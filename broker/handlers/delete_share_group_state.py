"""DeleteShareGroupState (86): a share-partition's state is deleted (its group or offsets are).  Brokers' request to the share coordinator (the leader of the share-partition's
``__share_group_state`` partition); ClusterAction on the cluster.  See :mod:`broker.coordinator.share`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from broker.handlers.registry import Reply, handles
from protocol.api import ApiKey
from protocol.primitives import Obj

if TYPE_CHECKING:
    from collections.abc import Awaitable

    from broker.handlers.context import RequestContext
    from broker.handlers.services import Services


@handles(ApiKey.DELETE_SHARE_GROUP_STATE, versions=(0, 0))
def delete_share_group_state(s: Services, ctx: RequestContext, req: Obj) -> Reply | Awaitable[Reply]:
    return s.share_state.request(ApiKey.DELETE_SHARE_GROUP_STATE, ctx.version, req)
