"""SaslHandshake (17): the client names its SASL mechanism; the state lives on the connection
(:mod:`broker.security.sasl`).  ILLEGAL_SASL_STATE on a listener without SASL, as Kafka answers."""

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


@handles(ApiKey.SASL_HANDSHAKE, versions=(0, 1))
def sasl_handshake(s: Services, ctx: RequestContext, req: Obj) -> Reply | Awaitable[Reply]:
    conn = ctx.conn
    if conn.sasl is None:
        return Obj(error_code=E.ILLEGAL_SASL_STATE, mechanisms=[])
    version, mechanism = ctx.version, req.mechanism
    return conn.sasl_step(lambda sasl: Obj(sasl.handshake(version, mechanism)))
