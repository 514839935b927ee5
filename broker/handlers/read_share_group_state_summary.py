"""ReadShareGroupStateSummary (87): a share-partition's start offset, epochs and completed records.  Brokers' request to the share coordinator (the leader of the share-partition's
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


@handles(ApiKey.READ_SHARE_GROUP_STATE_SUMMARY, versions=(0, 1))
def read_share_group_state_summary(s: Services, ctx: RequestContext, req: Obj) -> Reply | Awaitable[Reply]:
    return s.share_state.request(ApiKey.READ_SHARE_GROUP_STATE_SUMMARY, ctx.version, req)
