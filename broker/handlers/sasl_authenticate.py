"""SaslAuthenticate (36): one SASL token exchanged (KIP-152); the state lives on the connection."""

from __future__ import annotations

from typing import TYPE_CHECKING

from broker.handlers.registry import Reply, handles
from protocol.api import ApiKey
from protocol.error_codes import ErrorCode
from protocol.primitives import Obj

if TYPE_CHECKING:
    from collections.abc import Awaitable

    from broker.handlers.context import RequestContext
    from broker.handlers.services import Services

E = ErrorCode


@handles(ApiKey.SASL_AUTHENTICATE, versions=(0, 2))
def sasl_authenticate(s: Services, ctx: RequestContext, req: Obj) -> Reply | Awaitable[Reply]:
    conn = ctx.conn
    if conn.sasl is None:
        return Obj(error_code=E.ILLEGAL_SASL_STATE, error_message="SASL is not enabled on this listener",
                   auth_bytes=b"", session_lifetime_ms=0)
    version, token = ctx.version, req.auth_bytes
    return conn.sasl_step(lambda sasl: Obj(sasl.authenticate(version, token)))
