"""ConsumerGroupDescribe (69): KIP-848 groups' members, their assignments and the group's target
(topics the asker may not DESCRIBE are refused, as Kafka does)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from broker.handlers.registry import Reply, handles
from protocol.api import ApiKey
from protocol.primitives import Obj

if TYPE_CHECKING:
    from collections.abc import Awaitable

    from broker.handlers.context import RequestContext
    from broker.handlers.services import Services


@handles(ApiKey.CONSUMER_GROUP_DESCRIBE, versions=(0, 1))
def consumer_group_describe(s: Services, ctx: RequestContext, req: Obj) -> Reply | Awaitable[Reply]:
    return s.groups.consumer_group_describe(ctx.version, req)
