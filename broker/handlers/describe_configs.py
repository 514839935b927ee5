"""DescribeConfigs (32): the configs of topics, brokers, groups and broker loggers, with their
sources, synonyms and documentation (:mod:`broker.admin.describe_configs`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from broker.admin.describe_configs import ConfigView, describe_resource
from broker.handlers.registry import Reply, handles
from protocol.api import ApiKey
from protocol.primitives import Obj

if TYPE_CHECKING:
    from broker.handlers.context import RequestContext
    from broker.handlers.services import Services


@handles(ApiKey.DESCRIBE_CONFIGS, versions=(1, 4))
def describe_configs(s: Services, ctx: RequestContext, req: Obj) -> Reply:
    view = ConfigView(s.config, s.dynamic, s.logs, s.image, ctx.listener)
    return Obj(throttle_time_ms=0, results=[describe_resource(view, r, req.include_synonyms,
                                                              req.include_documentation) for r in req.resources])
