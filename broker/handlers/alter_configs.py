"""AlterConfigs (33): the whole set of a resource's config overrides replaced (the config admin,
:mod:`broker.admin.configs`, validates and writes them)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from broker.handlers.registry import Reply, handles
from protocol.api import ApiKey
from protocol.primitives import Obj

if TYPE_CHECKING:
    from broker.handlers.context import RequestContext
    from broker.handlers.services import Services


@handles(ApiKey.ALTER_CONFIGS, versions=(0, 2))
async def alter_configs(s: Services, ctx: RequestContext, req: Obj) -> Reply:
    responses = await s.configs.alter(list(req.resources), req.validate_only, incremental=False)
    return Obj(throttle_time_ms=0, responses=responses)
