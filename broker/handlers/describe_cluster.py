"""DescribeCluster (60): the cluster id, the controller and the live brokers (addresses on the
listener the client came in on)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from broker.handlers.common import NO_OPERATIONS, broker_entries
from broker.handlers.registry import Reply, handles
from broker.security.acl import ResourceType
from protocol.api import ApiKey
from protocol.primitives import Obj

if TYPE_CHECKING:
    from broker.handlers.context import RequestContext
    from broker.handlers.services import Services


@handles(ApiKey.DESCRIBE_CLUSTER, versions=(0, 2))
def describe_cluster(s: Services, ctx: RequestContext, req: Obj) -> Reply:
    image = s.image
    brokers = [{"broker_id": b["node_id"], "host": b["host"], "port": b["port"], "rack": b["rack"],
                "is_fenced": False} for b in broker_entries(image, ctx.listener)]
    session = ctx.conn.session
    cluster_ops = NO_OPERATIONS
    if session is not None and req.get("include_cluster_authorized_operations"):
        cluster_ops = s.authz.authorized_operations(session, ResourceType.CLUSTER, "kafka-cluster")
    return Obj(throttle_time_ms=0, error_code=0, error_message=None, endpoint_type=1,
               cluster_id=image.cluster_id or "", controller_id=image.controller_id, brokers=brokers,
               cluster_authorized_operations=cluster_ops)
