"""DeleteAcls (31): the ACL bindings matching each filter removed; each filter answers what it removed."""

from __future__ import annotations

from typing import TYPE_CHECKING

from broker.handlers.common import security_disabled
from broker.handlers.registry import Reply, handles
from broker.security.acl import AclBindingFilter
from protocol.api import ApiKey
from protocol.error_codes import ErrorCode
from protocol.primitives import Obj

if TYPE_CHECKING:
    from collections.abc import Awaitable

    from broker.handlers.context import RequestContext
    from broker.handlers.services import Services

E = ErrorCode


@handles(ApiKey.DELETE_ACLS, versions=(1, 3))
def delete_acls(s: Services, ctx: RequestContext, req: Obj) -> Reply | Awaitable[Reply]:
    disabled = security_disabled(s.config)
    if disabled is not None:
        return Obj(throttle_time_ms=0, filter_results=[
            {"error_code": E.SECURITY_DISABLED, "error_message": disabled, "matching_acls": []} for _ in req.filters])
    return _delete(s, req)


async def _delete(s: Services, req: Obj) -> Reply:
    results = await s.security.delete_acls([AclBindingFilter.from_request(f) for f in req.filters])
    return Obj(throttle_time_ms=0, filter_results=[
        {"error_code": int(code), "error_message": message, "matching_acls": [b.deleted_entry() for b in matched]}
        for code, message, matched in results])
