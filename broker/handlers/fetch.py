"""Fetch (1): records from the partitions this broker leads, for consumers (up to the high
watermark, or the last stable offset) and followers (up to the log end, recording their progress);
long polls wait in the fetch purgatory (:meth:`ReplicaManager.fetch
<broker.replication.replica_manager.ReplicaManager.fetch>`).  Record data is sent with sendfile."""

from __future__ import annotations

from typing import TYPE_CHECKING

from broker.handlers.registry import Reply, handles
from protocol.api import ApiKey
from protocol.primitives import Obj

if TYPE_CHECKING:
    from collections.abc import Awaitable

    from broker.handlers.context import RequestContext
    from broker.handlers.services import Services



@handles(ApiKey.FETCH, versions=(4, 17))
def fetch(s: Services, ctx: RequestContext, req: Obj) -> Reply | Awaitable[Reply]:
    return s.replica.fetch(ctx.version, req, ctx.listener)
