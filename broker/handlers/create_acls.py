"""CreateAcls (30): ACL bindings added to the cluster's metadata store (SECURITY_DISABLED without an
authorizer, as Kafka answers)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from broker.handlers.common import security_disabled
from broker.handlers.registry import Reply, handles
from broker.security.acl import AclBinding
from protocol.api import ApiKey
from protocol.error_codes import ErrorCode
from protocol.primitives import Obj

if TYPE_CHECKING:
    from collections.abc import Awaitable

    from broker.handlers.context import RequestContext
    from broker.handlers.services import Services

E = ErrorCode


@handles(ApiKey.CREATE_ACLS, versions=(1, 3))
def create_acls(s: Services, ctx: RequestContext, req: Obj) -> Reply | Awaitable[Reply]:
    disabled = security_disabled(s.config)
    if disabled is not None:
        return Obj(throttle_time_ms=0, results=[{"error_code": E.SECURITY_DISABLED, "error_message": disabled}
                                                for _ in req.creations])
    return _create(s, req)


async def _create(s: Services, req: Obj) -> Reply:
    results = await s.security.create_acls([AclBinding.from_creation(c) for c in req.creations])
    return Obj(throttle_time_ms=0, results=[{"error_code": int(code), "error_message": message}
                                            for code, message in results])
