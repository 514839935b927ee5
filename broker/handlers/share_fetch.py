"""ShareFetch (78, v1-2): a share group member's fetch from the partitions this broker leads — its share
session, piggy-backed acknowledgements, records acquired for it (with their delivery counts), long
polling; v2 adds the record_limit acquire mode and RENEW acknowledgements (KIP-1206, KIP-1222).  See
:mod:`broker.replication.share.manager`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from broker.handlers.registry import Reply, handles
from broker.handlers.share_acknowledge import session_connection
from protocol.api import ApiKey
from protocol.primitives import Obj

if TYPE_CHECKING:
    from collections.abc import Awaitable

    from broker.handlers.context import RequestContext
    from broker.handlers.services import Services


@handles(ApiKey.SHARE_FETCH, versions=(1, 2))
def share_fetch(s: Services, ctx: RequestContext, req: Obj) -> Reply | Awaitable[Reply]:
    return s.shares.share_fetch(ctx.version, req, session_connection(s, ctx), ctx.listener)
