"""ConsumerGroupHeartbeat (68): a KIP-848 member's heartbeat — joining, subscribing (by names or a
regular expression), reconciling its assignment, leaving.  A member may subscribe only to topics
its principal may DESCRIBE: the authorization pass refuses named ones, and its regular expression
resolves only over the describable ones (the view given to the coordinator)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from broker.handlers.registry import Reply, handles
from protocol.api import ApiKey
from protocol.primitives import Obj

if TYPE_CHECKING:
    from collections.abc import Awaitable

    from broker.handlers.context import RequestContext
    from broker.handlers.services import Services


@handles(ApiKey.CONSUMER_GROUP_HEARTBEAT, versions=(0, 1))
def consumer_group_heartbeat(s: Services, ctx: RequestContext, req: Obj) -> Reply | Awaitable[Reply]:
    return s.groups.request(ApiKey.CONSUMER_GROUP_HEARTBEAT, ctx.version, req, client_id=ctx.client_id,
                            client_host=ctx.client_host, topic_view=s.authz.describable_topics(ctx.conn.session))
