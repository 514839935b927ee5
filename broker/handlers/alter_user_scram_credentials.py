"""AlterUserScramCredentials (51): SCRAM credentials created, changed or deleted (KIP-554), in the
cluster's metadata store."""

from __future__ import annotations

from typing import TYPE_CHECKING

from broker.handlers.registry import Reply, handles
from protocol.api import ApiKey
from protocol.primitives import Obj

if TYPE_CHECKING:
    from broker.handlers.context import RequestContext
    from broker.handlers.services import Services


@handles(ApiKey.ALTER_USER_SCRAM_CREDENTIALS, versions=(0, 0))
async def alter_user_scram_credentials(s: Services, ctx: RequestContext, req: Obj) -> Reply:
    results = await s.security.alter_user_scram_credentials(req.deletions, req.upsertions)
    return Obj(throttle_time_ms=0, results=results)
