"""DescribeUserScramCredentials (50): which SCRAM mechanisms (and iterations) each user has (KIP-554)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from broker.handlers.registry import Reply, handles
from protocol.api import ApiKey
from protocol.primitives import Obj

if TYPE_CHECKING:
    from broker.handlers.context import RequestContext
    from broker.handlers.services import Services


@handles(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, versions=(0, 0))
def describe_user_scram_credentials(s: Services, ctx: RequestContext, req: Obj) -> Reply:
    return Obj(throttle_time_ms=0, error_code=0, error_message=None,
               results=s.security.describe_user_scram_credentials(req.users))
