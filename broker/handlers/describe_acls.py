"""DescribeAcls (29): the ACL bindings matching a filter."""

from __future__ import annotations

from typing import TYPE_CHECKING

from broker.handlers.common import security_disabled
from broker.handlers.registry import Reply, handles
from broker.security.acl import AclBindingFilter, describe_acls_resources
from protocol.api import ApiKey
from protocol.error_codes import ErrorCode
from protocol.primitives import Obj

if TYPE_CHECKING:
    from broker.handlers.context import RequestContext
    from broker.handlers.services import Services

E = ErrorCode


@handles(ApiKey.DESCRIBE_ACLS, versions=(1, 3))
def describe_acls(s: Services, ctx: RequestContext, req: Obj) -> Reply:
    disabled = security_disabled(s.config)
    if disabled is not None:
        return Obj(throttle_time_ms=0, error_code=E.SECURITY_DISABLED, error_message=disabled, resources=[])
    acl_filter = AclBindingFilter.from_request(req)
    invalid = acl_filter.validation_error()
    if invalid is not None:
        return Obj(throttle_time_ms=0, error_code=E.INVALID_REQUEST, error_message=invalid, resources=[])
    return Obj(throttle_time_ms=0, error_code=0, error_message=None,
               resources=describe_acls_resources(s.security.describe_acls(acl_filter)))
