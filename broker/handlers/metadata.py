"""Metadata (3): brokers, the controller, and topics with their partitions' leaders, replicas and
ISRs; topics named but missing are created when ``auto.create.topics.enable`` (and the client) allow.

With an authorizer, a topic the principal may not DESCRIBE is left out of a full listing and
answered TOPIC_AUTHORIZATION_FAILED when named (by id: with a null name, as Kafka does)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from broker.admin.topics import TopicError
from broker.cluster.internal_topics import is_internal_topic
from broker.handlers.common import NO_OPERATIONS, broker_entries, valid_topic_name
from broker.handlers.registry import Reply, handles
from broker.security.acl import ResourceType
from protocol.api import ApiKey
from protocol.error_codes import ErrorCode
from protocol.primitives import Obj
from protocol.schema import ZERO_UUID

if TYPE_CHECKING:
    from collections.abc import Awaitable

    from broker.cluster.image import MetadataImage
    from broker.handlers.context import RequestContext
    from broker.handlers.services import Services

E = ErrorCode
#: how long Metadata waits for the topics it auto-creates to get leaders
AUTO_CREATE_WAIT_S = 5.0


@handles(ApiKey.METADATA, versions=(0, 13))
def metadata(s: Services, ctx: RequestContext, req: Obj) -> Reply | Awaitable[Reply]:
    version = ctx.version
    requested = req.topics
    image = s.image
    session = ctx.conn.session
    denied: set[str] = set()
    #: v12+: the topics asked for by id (name -> id), and the ids that name no topic
    by_id: dict[str, Any] = {}
    unknown_ids: list[Any] = []
    if requested is None or (version == 0 and not requested):
        names = sorted(image.topics)
        if session is not None:  # listing all: leave out what the principal may not describe
            names = [n for n in names if s.authz.visible_topic(session, n)]
        auto_create = False
    elif version < 12 and any(t.get("name") is None or t.get("topic_id") not in (None, ZERO_UUID)
                              for t in requested):
        # v10-11 carry a topic id and a nullable name, but no broker ever served them: Kafka refuses
        # such a request as invalid, every topic named as asked (a null name as "")
        return Obj(throttle_time_ms=0, brokers=[], cluster_id=None, controller_id=-1, topics=[
            {"error_code": E.INVALID_REQUEST, "name": t.get("name") or "", "topic_id": t.get("topic_id"),
             "is_internal": False, "partitions": []} for t in requested])
    else:
        names = []
        for t in requested:
            name = t.get("name")
            if name is None and t.get("topic_id") is not None:
                name = image.topic_name(t["topic_id"])
                if name is None:
                    unknown_ids.append(t["topic_id"])
                    continue
                by_id[name] = t["topic_id"]
            names.append(name)
        if session is not None:
            denied = {n for n in dict.fromkeys(names) if valid_topic_name(n)
                      and not s.authz.named_topic(session, n)}
        auto_create = s.config.auto_create_topics_enable and (version < 4 or req.allow_auto_topic_creation)
    missing = [n for n in dict.fromkeys(names) if auto_create and n not in denied and image.topic(n) is None
               and valid_topic_name(n) and not is_internal_topic(n)]
    if session is not None and missing:
        refused = {n for n in missing if not s.authz.may_create_topic(session, n)}
        denied |= refused
        missing = [n for n in missing if n not in refused]
    errors = dict.fromkeys(denied, int(E.TOPIC_AUTHORIZATION_FAILED))
    # asked for by id: an unknown id is said so, and a topic the principal may not describe keeps
    # its name (Kafka answers the id it was asked for, with a null name)
    first = [{"error_code": E.UNKNOWN_TOPIC_ID, "name": None, "topic_id": topic_id, "partitions": [],
              "is_internal": False} for topic_id in unknown_ids]
    for name in [n for n in dict.fromkeys(names) if n in by_id and n in denied]:
        first.append({"error_code": E.TOPIC_AUTHORIZATION_FAILED, "name": None, "topic_id": by_id[name],
                      "partitions": [], "is_internal": False})
        names = [n for n in names if n != name]
    if not missing:
        return _body(s, ctx, req, names, errors, first)
    return _after_create(s, ctx, req, names, missing, errors)


async def _after_create(s: Services, ctx: RequestContext, req: Obj, names: list[str], missing: list[str],
                        errors: dict[str, int]) -> Obj:
    for name in missing:
        try:
            record = s.topics.plan(name, s.config.num_partitions, s.config.default_replication_factor, None, {})
            await s.topics.create(record, AUTO_CREATE_WAIT_S)
        except TopicError as exc:
            if exc.code != E.TOPIC_ALREADY_EXISTS:
                errors[name] = exc.code
    return _body(s, ctx, req, names, errors)


def _body(s: Services, ctx: RequestContext, req: Obj, names: list[str], errors: dict[str, int],
          first: list[dict[str, Any]] | None = None) -> Obj:
    """The answer: ``first`` (entries already made), then each of ``names``."""
    session = ctx.conn.session
    image = s.image
    cluster_ops = NO_OPERATIONS
    if session is not None and req.get("include_cluster_authorized_operations"):
        cluster_ops = s.authz.authorized_operations(session, ResourceType.CLUSTER, "kafka-cluster")
    topic_ops = session is not None and bool(req.get("include_topic_authorized_operations"))
    topics = list(first or ())
    for name in names:
        entry = topic_metadata(image, name, errors.get(name))
        if topic_ops and not entry["error_code"] and session is not None:
            entry["topic_authorized_operations"] = s.authz.authorized_operations(session, ResourceType.TOPIC, name)
        topics.append(entry)
    return Obj(throttle_time_ms=0, brokers=broker_entries(image, ctx.listener), cluster_id=image.cluster_id or "",
               controller_id=image.controller_id, topics=topics, cluster_authorized_operations=cluster_ops,
               error_code=0)


def topic_metadata(image: MetadataImage, name: str, error: int | None) -> dict[str, Any]:
    """One topic's entry: its partitions' leaders, replicas, ISRs and offline replicas."""
    if error == E.TOPIC_AUTHORIZATION_FAILED:  # nothing about a topic it may not see, not even whether it exists
        return {"error_code": error, "name": name, "partitions": [], "is_internal": False}
    if not valid_topic_name(name):
        return {"error_code": E.INVALID_TOPIC_EXCEPTION, "name": name, "partitions": [], "is_internal": False}
    t = image.topic(name)
    if t is None:
        return {"error_code": error or E.UNKNOWN_TOPIC_OR_PARTITION, "name": name, "partitions": [],
                "is_internal": False}
    alive = image.is_alive
    partitions = []
    for p, assigned in enumerate(t.record.assignment):
        part = t.partitions.get(p)
        replicas = assigned if part is None else part.replicas
        if part is None:
            partitions.append({"error_code": E.LEADER_NOT_AVAILABLE, "partition_index": p, "leader_id": -1,
                               "leader_epoch": -1, "replica_nodes": list(replicas), "isr_nodes": [],
                               "offline_replicas": [r for r in replicas if not alive(r)]})
            continue
        leader = part.leader if part.leader >= 0 and alive(part.leader) else -1
        partitions.append({
            "error_code": 0 if leader >= 0 else E.LEADER_NOT_AVAILABLE, "partition_index": p,
            "leader_id": leader, "leader_epoch": part.leader_epoch, "replica_nodes": list(replicas),
            "isr_nodes": list(part.isr), "offline_replicas": [r for r in replicas if not alive(r)]})
    return {"error_code": 0, "name": name, "topic_id": t.topic_id, "is_internal": is_internal_topic(name),
            "partitions": partitions, "topic_authorized_operations": NO_OPERATIONS}
