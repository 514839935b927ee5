"""ShareAcknowledge (79, v1-2): a share group member's acknowledgements without a fetch, in its share
session (epoch -1 also closes the session, releasing what the member still holds)."""

from __future__ import annotations

from collections.abc import Hashable
from typing import TYPE_CHECKING

from broker.handlers.registry import Reply, handles
from protocol.api import ApiKey
from protocol.primitives import Obj

if TYPE_CHECKING:
    from collections.abc import Awaitable

    from broker.handlers.context import RequestContext
    from broker.handlers.services import Services


def session_connection(s: Services, ctx: RequestContext) -> Hashable:
    """The connection a share session belongs to; when it closes, its sessions end."""
    conn = ctx.conn
    key = id(conn)
    callbacks = getattr(conn, "close_callbacks", None)
    if callbacks is not None and not conn.state.get("share_sessions"):
        conn.state["share_sessions"] = True
        callbacks.append(lambda: s.shares.connection_closed(key))
    return key


@handles(ApiKey.SHARE_ACKNOWLEDGE, versions=(1, 2))
def share_acknowledge(s: Services, ctx: RequestContext, req: Obj) -> Reply | Awaitable[Reply]:
    return s.shares.share_acknowledge(ctx.version, req, session_connection(s, ctx), ctx.listener)
