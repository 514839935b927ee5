"""Authorization of requests: Kafka's checks (:data:`broker.security.acl.API_ACL_CHECKS`) applied to the
decoded requests and responses of the APIs this broker serves.

:meth:`RequestAuthorizer.check` runs before a request's handler (only when ``authorizer.enabled``;
otherwise connections carry no authorization session and nothing here runs) and returns one of:

* ``None`` — everything the request names is allowed: handle it as it is (the common case, costing
  one cached lookup per resource in the connection's
  :class:`~broker.security.acl.AuthorizationSession`);
* :class:`Deny` — the whole request is refused: answer this body instead (a group request without
  READ on the group, ElectLeaders without ALTER on the cluster, ...);
* :class:`Partial` — handle ``request`` (the denied topics, groups or resources taken out) and pass
  the handler's response through ``merge``, which adds an error entry for each of them
  (TOPIC_AUTHORIZATION_FAILED, GROUP_AUTHORIZATION_FAILED, ...) or, where Kafka filters silently
  (ListGroups, OffsetFetch of all topics), drops what may not be described.

Metadata is authorized inside its handler (listing all topics leaves out what the principal may
not DESCRIBE, named topics answer TOPIC_AUTHORIZATION_FAILED, a topic asked for by id is not named,
auto-creation needs CREATE): see :meth:`RequestAuthorizer.visible_topic` and
:meth:`RequestAuthorizer.may_create_topic`.  A KIP-848 member's regular expression is resolved by the
group coordinator over the topics its principal may DESCRIBE: the coordinator is handed that
predicate (:meth:`RequestAuthorizer.describable_topics`), never the authorizer.  Classic groups'
member metadata and assignments (DescribeGroups) are the clients' own bytes and pass unfiltered, as
in Kafka.  Share groups (KIP-932) are checked as Kafka does: READ on the group and DESCRIBE on the
subscribed topics for a heartbeat, READ on the group and the topics for ShareFetch/ShareAcknowledge,
CLUSTER_ACTION for the brokers' share-state requests; ShareGroupDescribe and DescribeShareGroupOffsets
never name a topic the principal may not DESCRIBE.  Every refusal is counted (``AuthEvents.denied``).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import partial
from typing import Any

from broker.security.acl import (
    CLUSTER_NAME,
    AclOperation,
    AuthorizationSession,
    ResourceType,
)
from broker.security.connection import AuthEvents
from protocol.api import APIS, ApiKey
from protocol.error_codes import ErrorCode
from protocol.error_response import error_response
from protocol.primitives import Obj

__all__ = ["Deny", "Partial", "RequestAuthorizer"]

E = ErrorCode
Op = AclOperation
TOPIC, GROUP, CLUSTER, TXN = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER, ResourceType.TRANSACTIONAL_ID
#: DescribeConfigs / AlterConfigs resource types (ConfigResource.Type)
_CONFIG_TOPIC, _CONFIG_BROKER, _CONFIG_BROKER_LOGGER, _CONFIG_GROUP = 2, 4, 8, 32
_NO_OPERATIONS = -2147483648


@dataclass(frozen=True, slots=True)
class Deny:
    """Answer ``body`` without running the handler."""

    body: Obj


@dataclass(frozen=True, slots=True)
class Partial:
    """Run the handler on ``request``; ``merge`` turns its response into the answer."""

    request: Obj
    merge: Callable[[Any], Any]


Verdict = Deny | Partial | None
Check = Callable[["_Request"], Verdict]


class _Request:
    """One request being checked: the session, the API and version, the decoded body."""

    __slots__ = ("api_key", "authz", "req", "session", "version")

    def __init__(self, authz: RequestAuthorizer, session: AuthorizationSession, api_key: int, version: int,
                 req: Obj) -> None:
        self.authz = authz
        self.session = session
        self.api_key = api_key
        self.version = version
        self.req = req

    def allowed(self, op: AclOperation, resource_type: ResourceType, name: str) -> bool:
        if self.session.authorize(op, resource_type, name):
            return True
        self.authz.events.denied(APIS[self.api_key].name, resource_type.name)
        return False

    def cluster(self, op: AclOperation) -> bool:
        return self.allowed(op, CLUSTER, CLUSTER_NAME)

    def quietly(self, op: AclOperation, resource_type: ResourceType, name: str) -> bool:
        """A check that is not a refusal when it fails (an alternative, a filter of what is shown)."""
        return self.session.authorize(op, resource_type, name)

    def error_body(self, code: int) -> Obj:
        return error_response(self.api_key, self.version, self.req, code)


def _with(req: Obj, **fields: Any) -> Obj:
    copy = Obj(req)
    copy.update(fields)
    return copy


def _split(items: Iterable[Any], allowed: Callable[[Any], bool]) -> tuple[list[Any], list[Any]]:
    kept: list[Any] = []
    denied: list[Any] = []
    for item in items:
        (kept if allowed(item) else denied).append(item)
    return kept, denied


def _merge_list(field: str, extra: list[dict[str, Any]]) -> Callable[[Any], Any]:
    """A merge that appends ``extra`` entries to the response's ``field`` list."""

    def merge(body: Any) -> Any:
        if body is not None:
            body[field] = list(body.get(field) or []) + extra
        return body

    return merge


class RequestAuthorizer:
    """Applies Kafka's per-API checks (see the module docstring).

    ``topic_name(topic_id)`` resolves topic ids (Fetch v13+, DeleteTopics v6+) from the metadata image.
    """

    def __init__(self, *, topic_name: Callable[[uuid.UUID], str | None], events: AuthEvents | None = None) -> None:
        self.topic_name = topic_name
        self.events = events or AuthEvents()
        self._checks: dict[int, Check] = {
            ApiKey.PRODUCE: _produce,
            ApiKey.FETCH: self._fetch,
            ApiKey.LIST_OFFSETS: _list_offsets,
            ApiKey.OFFSET_FOR_LEADER_EPOCH: _offset_for_leader_epoch,
            ApiKey.DELETE_RECORDS: _delete_records,
            ApiKey.CREATE_TOPICS: _create_topics,
            ApiKey.DELETE_TOPICS: self._delete_topics,
            ApiKey.CREATE_PARTITIONS: _create_partitions,
            ApiKey.DESCRIBE_CONFIGS: _describe_configs,
            ApiKey.ELECT_LEADERS: _cluster_request(Op.ALTER),
            ApiKey.INIT_PRODUCER_ID: _init_producer_id,
            ApiKey.FIND_COORDINATOR: _find_coordinator,
            ApiKey.JOIN_GROUP: _group_request(Op.READ),
            ApiKey.SYNC_GROUP: _group_request(Op.READ),
            ApiKey.HEARTBEAT: _group_request(Op.READ),
            ApiKey.LEAVE_GROUP: _group_request(Op.READ),
            ApiKey.OFFSET_COMMIT: _offset_commit,
            ApiKey.OFFSET_FETCH: _offset_fetch,
            ApiKey.DESCRIBE_GROUPS: _describe_groups,
            ApiKey.CONSUMER_GROUP_HEARTBEAT: _consumer_group_heartbeat,
            ApiKey.CONSUMER_GROUP_DESCRIBE: _consumer_group_describe,
            ApiKey.LIST_GROUPS: _list_groups,
            ApiKey.DELETE_GROUPS: _delete_groups,
            ApiKey.OFFSET_DELETE: _offset_delete,
            ApiKey.DESCRIBE_ACLS: _cluster_request(Op.DESCRIBE),
            ApiKey.CREATE_ACLS: _create_acls,
            ApiKey.DELETE_ACLS: _delete_acls,
            ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: _cluster_request(Op.DESCRIBE),
            ApiKey.ALTER_USER_SCRAM_CREDENTIALS: _alter_user_scram_credentials,
            ApiKey.ALTER_CONFIGS: _alter_configs,
            ApiKey.INCREMENTAL_ALTER_CONFIGS: _alter_configs,
            ApiKey.DESCRIBE_LOG_DIRS: _describe_log_dirs,
            ApiKey.ADD_PARTITIONS_TO_TXN: _add_partitions_to_txn,
            ApiKey.ADD_OFFSETS_TO_TXN: _add_offsets_to_txn,
            ApiKey.END_TXN: _txn_request,
            ApiKey.TXN_OFFSET_COMMIT: _txn_offset_commit,
            ApiKey.WRITE_TXN_MARKERS: _write_txn_markers,
            ApiKey.DESCRIBE_TRANSACTIONS: _describe_transactions,
            ApiKey.LIST_TRANSACTIONS: _list_transactions,
            ApiKey.DESCRIBE_PRODUCERS: _describe_producers,
            ApiKey.SHARE_GROUP_HEARTBEAT: _consumer_group_heartbeat,
            ApiKey.SHARE_GROUP_DESCRIBE: _share_group_describe,
            ApiKey.SHARE_FETCH: self._share_fetch,
            ApiKey.SHARE_ACKNOWLEDGE: self._share_fetch,
            ApiKey.INITIALIZE_SHARE_GROUP_STATE: _cluster_request(Op.CLUSTER_ACTION),
            ApiKey.READ_SHARE_GROUP_STATE: _cluster_request(Op.CLUSTER_ACTION),
            ApiKey.WRITE_SHARE_GROUP_STATE: _cluster_request(Op.CLUSTER_ACTION),
            ApiKey.DELETE_SHARE_GROUP_STATE: _cluster_request(Op.CLUSTER_ACTION),
            ApiKey.READ_SHARE_GROUP_STATE_SUMMARY: _cluster_request(Op.CLUSTER_ACTION),
            ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS: _describe_share_group_offsets,
            ApiKey.ALTER_SHARE_GROUP_OFFSETS: _share_group_offsets(Op.READ, partitions=True),
            ApiKey.DELETE_SHARE_GROUP_OFFSETS: _share_group_offsets(Op.DELETE, partitions=False),
        }

    def check(self, session: AuthorizationSession, api_key: int, version: int, req: Obj) -> Verdict:
        """What to do with a request (see the module docstring); APIs without a check pass."""
        check = self._checks.get(api_key)
        if check is None:
            return None
        return check(_Request(self, session, api_key, version, req))

    # -- Metadata and DescribeCluster (called by their handlers) ------------------------
    def visible_topic(self, session: AuthorizationSession, name: str) -> bool:
        """Whether a topic is listed when all topics are requested (no refusal counted)."""
        return session.authorize(Op.DESCRIBE, TOPIC, name)

    def named_topic(self, session: AuthorizationSession, name: str) -> bool:
        """Whether a topic named in a Metadata request may be described."""
        if session.authorize(Op.DESCRIBE, TOPIC, name):
            return True
        self.events.denied(APIS[ApiKey.METADATA].name, TOPIC.name)
        return False

    def may_create_topic(self, session: AuthorizationSession, name: str) -> bool:
        """Auto-creation: CREATE on the cluster, or on the topic."""
        if session.authorize_cluster(Op.CREATE) or session.authorize(Op.CREATE, TOPIC, name):
            return True
        self.events.denied(APIS[ApiKey.METADATA].name, TOPIC.name)
        return False

    @staticmethod
    def describable_topics(session: AuthorizationSession | None) -> Callable[[str], bool] | None:
        """Whether the session's principal may DESCRIBE a topic, as a predicate (None: authorization is
        off, every topic may be described) — what a consumer group resolves a member's regex with."""
        if session is None:
            return None
        return partial(session.authorize, Op.DESCRIBE, TOPIC)

    @staticmethod
    def authorized_operations(session: AuthorizationSession, resource_type: ResourceType, name: str) -> int:
        """The ``*_authorized_operations`` bits of a resource for the session's principal."""
        return session.authorizer.authorized_operations(session.principal, session.host, resource_type, name)

    # -- checks that need the image ----------------------------------------------------
    def _fetch(self, r: _Request) -> Verdict:
        req, version = r.req, r.version
        replica_id = req.replica_state.replica_id if version >= 15 and req.get("replica_state") else \
            req.get("replica_id", -1)
        if replica_id is not None and replica_id >= 0:
            return None if r.cluster(Op.CLUSTER_ACTION) else Deny(r.error_body(E.TOPIC_AUTHORIZATION_FAILED))

        def name_of(t: Any) -> str | None:
            return t.topic if version < 13 else self.topic_name(t.topic_id)

        def allowed(t: Any) -> bool:
            name = name_of(t)
            return name is None or r.allowed(Op.READ, TOPIC, name)  # unknown ids: the handler says so

        kept, denied = _split(req.topics, allowed)
        if not denied:
            return None
        extra = [{"topic": name_of(t) or "", "topic_id": t.get("topic_id"), "partitions": [
            {"partition_index": p.partition, "error_code": E.TOPIC_AUTHORIZATION_FAILED, "high_watermark": -1,
             "last_stable_offset": -1, "log_start_offset": -1, "preferred_read_replica": -1, "records": b""}
            for p in t.partitions]} for t in denied]
        return Partial(_with(req, topics=kept), _merge_list("responses", extra))

    def _share_fetch(self, r: _Request) -> Verdict:
        """ShareFetch and ShareAcknowledge: READ on the group for the whole request, READ on each topic (a
        refused topic's partitions answer TOPIC_AUTHORIZATION_FAILED and stay out of the share session)."""
        req = r.req
        if not r.allowed(Op.READ, GROUP, req.group_id or ""):
            return Deny(r.error_body(E.GROUP_AUTHORIZATION_FAILED))

        def allowed(t: Any) -> bool:
            name = self.topic_name(t.topic_id)
            return name is None or r.allowed(Op.READ, TOPIC, name)  # unknown ids: the handler says so

        kept, denied = _split(req.topics, allowed)
        if not denied:
            return None
        fetch = r.api_key == ApiKey.SHARE_FETCH
        extra = [{"topic_id": t.topic_id, "partitions": [
            {"partition_index": p.partition_index, "error_code": E.TOPIC_AUTHORIZATION_FAILED, "error_message": None,
             "current_leader": {"leader_id": -1, "leader_epoch": -1},
             **({"acknowledge_error_code": E.TOPIC_AUTHORIZATION_FAILED, "records": b"", "acquired_records": []}
                if fetch else {})}
            for p in t.partitions]} for t in denied]
        append = _merge_list("responses", extra)

        def merge(body: Any) -> Any:
            return body if body.get("error_code") else append(body)

        return Partial(_with(req, topics=kept), merge)

    def _delete_topics(self, r: _Request) -> Verdict:
        req = r.req
        if r.version < 6:
            kept, denied = _split(req.topic_names, lambda n: r.allowed(Op.DELETE, TOPIC, n))
            if not denied:
                return None
            extra = [{"name": n, "error_code": E.TOPIC_AUTHORIZATION_FAILED, "error_message": None} for n in denied]
            return Partial(_with(req, topic_names=kept), _merge_list("responses", extra))
        entries: list[dict[str, Any]] = []
        kept = []
        for t in req.topics:
            name = t.name
            if name is None and t.topic_id is not None:
                name = self.topic_name(t.topic_id)
                if name is None:
                    kept.append(t)  # the handler answers UNKNOWN_TOPIC_ID
                    continue
                if not r.allowed(Op.DESCRIBE, TOPIC, name):  # the name of a topic it may not see stays hidden
                    entries.append({"name": None, "topic_id": t.topic_id, "error_code": E.TOPIC_AUTHORIZATION_FAILED,
                                    "error_message": None})
                    continue
            if name is not None and not r.allowed(Op.DELETE, TOPIC, name):
                entries.append({"name": name, "topic_id": t.topic_id, "error_code": E.TOPIC_AUTHORIZATION_FAILED,
                                "error_message": None})
                continue
            kept.append(t)
        if not entries:
            return None
        return Partial(_with(req, topics=kept), _merge_list("responses", entries))


# -- produce and the log APIs ------------------------------------------------------------


def _produce(r: _Request) -> Verdict:
    req = r.req
    if req.get("transactional_id") is not None and not r.allowed(Op.WRITE, TXN, req.transactional_id):
        return Deny(_produce_all(req, E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED))
    kept, denied = _split(req.topic_data, lambda t: r.allowed(Op.WRITE, TOPIC, t.name))
    if not denied:
        return None
    extra = [{"name": t.name, "partition_responses": [
        {"index": p.index, "error_code": E.TOPIC_AUTHORIZATION_FAILED, "base_offset": -1, "log_append_time_ms": -1,
         "log_start_offset": -1, "record_errors": [], "error_message": None} for p in t.partition_data]}
        for t in denied]
    append = _merge_list("responses", extra)

    def merge(body: Any) -> Any:
        if body is None:
            return None  # acks=0: nothing is answered (the partitions it could write were written)
        return append(body)

    return Partial(_with(req, topic_data=kept), merge)


def _topics_check(op: AclOperation, name_field: str, partition_entry: Callable[[Any], dict[str, Any]],
                  *, alternative: AclOperation | None = None) -> Check:
    """Per-topic check of a ``topics: [{<name_field>, partitions: [...]}]`` request and response."""

    def check(r: _Request) -> Verdict:
        if alternative is not None and r.session.authorize_cluster(alternative):
            return None
        req = r.req
        kept, denied = _split(req.topics, lambda t: r.allowed(op, TOPIC, t[name_field]))
        if not denied:
            return None
        extra = [{name_field: t[name_field], "partitions": [partition_entry(p) for p in t.partitions]}
                 for t in denied]
        return Partial(_with(req, topics=kept), _merge_list("topics", extra))

    return check


_list_offsets = _topics_check(Op.DESCRIBE, "name", lambda p: {
    "partition_index": p.partition_index, "error_code": E.TOPIC_AUTHORIZATION_FAILED, "timestamp": -1,
    "offset": -1, "leader_epoch": -1})
_offset_for_leader_epoch = _topics_check(Op.DESCRIBE, "topic", lambda p: {
    "partition": p.partition, "error_code": E.TOPIC_AUTHORIZATION_FAILED, "leader_epoch": -1, "end_offset": -1},
    alternative=Op.CLUSTER_ACTION)
_delete_records = _topics_check(Op.DELETE, "name", lambda p: {
    "partition_index": p.partition_index, "low_watermark": -1, "error_code": E.TOPIC_AUTHORIZATION_FAILED})


# -- topic administration ----------------------------------------------------------------


def _create_topics(r: _Request) -> Verdict:
    req = r.req
    if r.session.authorize_cluster(Op.CREATE):
        kept, denied = list(req.topics), []
    else:
        kept, denied = _split(req.topics, lambda t: r.allowed(Op.CREATE, TOPIC, t.name))
    hide_configs = {t.name for t in kept if r.version >= 5 and not r.quietly(Op.DESCRIBE_CONFIGS, TOPIC, t.name)}
    if not denied and not hide_configs:
        return None
    extra = [{"name": t.name, "error_code": E.TOPIC_AUTHORIZATION_FAILED, "error_message": "Authorization failed.",
              "num_partitions": -1, "replication_factor": -1, "configs": None} for t in denied]

    def merge(body: Any) -> Any:
        for entry in body.get("topics") or []:
            if entry.get("name") in hide_configs and not entry.get("error_code"):
                entry.update(topic_config_error_code=E.TOPIC_AUTHORIZATION_FAILED, num_partitions=-1,
                             replication_factor=-1, configs=None)
        body["topics"] = list(body.get("topics") or []) + extra
        return body

    return Partial(_with(req, topics=kept), merge)


def _create_partitions(r: _Request) -> Verdict:
    req = r.req
    kept, denied = _split(req.topics, lambda t: r.allowed(Op.ALTER, TOPIC, t.name))
    if not denied:
        return None
    extra = [{"name": t.name, "error_code": E.TOPIC_AUTHORIZATION_FAILED, "error_message": None} for t in denied]
    return Partial(_with(req, topics=kept), _merge_list("results", extra))


def _config_resources(op: AclOperation, results: str, entry: Callable[[Any, int], dict[str, Any]]) -> Check:
    """DescribeConfigs / AlterConfigs / IncrementalAlterConfigs: ``op`` on each topic or group, on the
    cluster for brokers and broker loggers; a refused resource gets ``entry(resource, error)`` in
    ``results``, the others are handled."""

    def check(r: _Request) -> Verdict:
        def refusal(res: Any) -> int | None:
            rtype, name = res.resource_type, res.resource_name
            if rtype in (_CONFIG_BROKER, _CONFIG_BROKER_LOGGER):
                return None if r.cluster(op) else E.CLUSTER_AUTHORIZATION_FAILED
            if rtype == _CONFIG_TOPIC:
                return None if r.allowed(op, TOPIC, name) else E.TOPIC_AUTHORIZATION_FAILED
            if rtype == _CONFIG_GROUP:
                return None if r.allowed(op, GROUP, name) else E.GROUP_AUTHORIZATION_FAILED
            return None

        kept, extra = [], []
        for res in r.req.resources:
            code = refusal(res)
            if code is None:
                kept.append(res)
            else:
                extra.append(entry(res, code))
        if not extra:
            return None
        return Partial(_with(r.req, resources=kept), _merge_list(results, extra))

    return check


_describe_configs = _config_resources(Op.DESCRIBE_CONFIGS, "results", lambda res, code: {
    "error_code": code, "error_message": None, "resource_type": res.resource_type,
    "resource_name": res.resource_name, "configs": []})
_alter_configs = _config_resources(Op.ALTER_CONFIGS, "responses", lambda res, code: {
    "error_code": code, "error_message": None, "resource_type": res.resource_type,
    "resource_name": res.resource_name})


def _describe_log_dirs(r: _Request) -> Verdict:
    if r.cluster(Op.DESCRIBE):
        return None
    return Deny(Obj(throttle_time_ms=0, error_code=E.CLUSTER_AUTHORIZATION_FAILED, results=[]))


def _cluster_request(op: AclOperation) -> Check:
    def check(r: _Request) -> Verdict:
        return None if r.cluster(op) else Deny(r.error_body(E.CLUSTER_AUTHORIZATION_FAILED))

    return check


def _init_producer_id(r: _Request) -> Verdict:
    req = r.req
    if req.transactional_id is not None:
        ok = r.allowed(Op.WRITE, TXN, req.transactional_id)
        return None if ok else Deny(r.error_body(E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED))
    session = r.session
    if session.authorize_cluster(Op.IDEMPOTENT_WRITE) or session.authorizer.authorize_any(
            session.principal, session.host, Op.WRITE, TOPIC):
        return None
    r.authz.events.denied(APIS[r.api_key].name, CLUSTER.name)
    return Deny(r.error_body(E.CLUSTER_AUTHORIZATION_FAILED))


# -- transactions ------------------------------------------------------------------------


def _produce_all(req: Obj, code: int) -> Obj:
    """A Produce answer giving every partition ``code``."""
    return Obj(throttle_time_ms=0, responses=[{"name": t.name, "partition_responses": [
        {"index": p.index, "error_code": code, "base_offset": -1, "log_append_time_ms": -1,
         "log_start_offset": -1, "record_errors": [], "error_message": None} for p in t.partition_data]}
        for t in req.topic_data])


def _txn_request(r: _Request) -> Verdict:
    """EndTxn (and the first step of the others): WRITE on the transactional id."""
    if r.allowed(Op.WRITE, TXN, r.req.transactional_id):
        return None
    return Deny(r.error_body(E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED))


def _add_partitions_to_txn(r: _Request) -> Verdict:
    """v4+ is the brokers' batched form (CLUSTER_ACTION); v0-3: WRITE on the transactional id, then
    WRITE on every topic — when one is refused nothing is added (the others: OPERATION_NOT_ATTEMPTED)."""
    req = r.req
    if r.version >= 4:
        if r.cluster(Op.CLUSTER_ACTION):
            return None
        return Deny(r.error_body(E.CLUSTER_AUTHORIZATION_FAILED))
    topics = req.v3_and_below_topics

    def answer(code_of: Callable[[str], int]) -> Deny:
        return Deny(Obj(throttle_time_ms=0, results_by_topic_v3_and_below=[
            {"name": t.name, "results_by_partition": [
                {"partition_index": p, "partition_error_code": code_of(t.name)} for p in t.partitions]}
            for t in topics]))

    if not r.allowed(Op.WRITE, TXN, req.v3_and_below_transactional_id):
        return answer(lambda _name: E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    denied = {t.name for t in topics if not r.allowed(Op.WRITE, TOPIC, t.name)}
    if not denied:
        return None
    return answer(lambda name: E.TOPIC_AUTHORIZATION_FAILED if name in denied else E.OPERATION_NOT_ATTEMPTED)


def _add_offsets_to_txn(r: _Request) -> Verdict:
    refused = _txn_request(r)
    if refused is not None:
        return refused
    return None if r.allowed(Op.READ, GROUP, r.req.group_id) else Deny(r.error_body(E.GROUP_AUTHORIZATION_FAILED))


def _txn_offset_commit(r: _Request) -> Verdict:
    """WRITE on the transactional id and READ on the group (or nothing is committed), READ on each topic."""
    req = r.req

    def answer(code_of: Callable[[str], int], topics: list[Any]) -> list[dict[str, Any]]:
        return [{"name": t.name, "partitions": [{"partition_index": p.partition_index, "error_code": code_of(t.name)}
                                                 for p in t.partitions]} for t in topics]

    if not r.allowed(Op.WRITE, TXN, req.transactional_id):
        return Deny(Obj(throttle_time_ms=0,
                        topics=answer(lambda _n: E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, req.topics)))
    if not r.allowed(Op.READ, GROUP, req.group_id):
        return Deny(Obj(throttle_time_ms=0, topics=answer(lambda _n: E.GROUP_AUTHORIZATION_FAILED, req.topics)))
    kept, denied = _split(req.topics, lambda t: r.allowed(Op.READ, TOPIC, t.name))
    if not denied:
        return None
    return Partial(_with(req, topics=kept),
                   _merge_list("topics", answer(lambda _n: E.TOPIC_AUTHORIZATION_FAILED, denied)))


def _write_txn_markers(r: _Request) -> Verdict:
    """Brokers only: CLUSTER_ACTION."""
    if r.cluster(Op.CLUSTER_ACTION):
        return None
    return Deny(Obj(markers=[{"producer_id": m.producer_id, "topics": [
        {"name": t.name, "partitions": [{"partition_index": p, "error_code": E.CLUSTER_AUTHORIZATION_FAILED}
                                        for p in t.partition_indexes]} for t in m.topics]} for m in r.req.markers]))


def _describe_transactions(r: _Request) -> Verdict:
    req = r.req
    kept, denied = _split(req.transactional_ids, lambda t: r.allowed(Op.DESCRIBE, TXN, t))
    if not denied:
        return None
    extra = [{"error_code": E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, "transactional_id": t, "transaction_state": "",
              "transaction_timeout_ms": 0, "transaction_start_time_ms": -1, "producer_id": -1, "producer_epoch": -1,
              "topics": []} for t in denied]
    return Partial(_with(req, transactional_ids=kept), _merge_list("transaction_states", extra))


def _list_transactions(r: _Request) -> Verdict:
    """Only the transactional ids the principal may DESCRIBE are listed (silently, as Kafka filters)."""

    def merge(body: Any) -> Any:
        body["transaction_states"] = [t for t in body.get("transaction_states") or []
                                      if r.quietly(Op.DESCRIBE, TXN, t["transactional_id"])]
        return body

    return Partial(r.req, merge)


def _describe_producers(r: _Request) -> Verdict:
    req = r.req
    kept, denied = _split(req.topics, lambda t: r.allowed(Op.READ, TOPIC, t.name))
    if not denied:
        return None
    extra = [{"name": t.name, "partitions": [
        {"partition_index": p, "error_code": E.TOPIC_AUTHORIZATION_FAILED, "error_message": None,
         "active_producers": []} for p in t.partition_indexes]} for t in denied]
    return Partial(_with(req, topics=kept), _merge_list("topics", extra))


# -- groups ------------------------------------------------------------------------------


def _group_request(op: AclOperation) -> Check:
    """JoinGroup, SyncGroup, Heartbeat, LeaveGroup: the whole request needs ``op`` on the group."""

    def check(r: _Request) -> Verdict:
        return None if r.allowed(op, GROUP, r.req.group_id) else Deny(r.error_body(E.GROUP_AUTHORIZATION_FAILED))

    return check


def _find_coordinator(r: _Request) -> Verdict:
    req = r.req
    key_type = req.get("key_type", 0)
    if key_type == 0:
        resource, code = GROUP, E.GROUP_AUTHORIZATION_FAILED
    elif key_type == 1:
        resource, code = TXN, E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    else:
        return None if r.cluster(Op.CLUSTER_ACTION) else Deny(r.error_body(E.CLUSTER_AUTHORIZATION_FAILED))
    if r.version < 4:
        return None if r.allowed(Op.DESCRIBE, resource, req.key) else Deny(r.error_body(code))
    kept, denied = _split(req.coordinator_keys, lambda k: r.allowed(Op.DESCRIBE, resource, k))
    if not denied:
        return None
    extra = [{"key": k, "node_id": -1, "host": "", "port": -1, "error_code": code, "error_message": None}
             for k in denied]
    return Partial(_with(req, coordinator_keys=kept), _merge_list("coordinators", extra))


def _group_and_topics(group_op: AclOperation) -> Check:
    """OffsetCommit (READ) and OffsetDelete (DELETE): ``group_op`` on the group for the whole request,
    then READ on each topic."""

    def check(r: _Request) -> Verdict:
        req = r.req
        if not r.allowed(group_op, GROUP, req.group_id):
            return Deny(r.error_body(E.GROUP_AUTHORIZATION_FAILED))
        kept, denied = _split(req.topics, lambda t: r.allowed(Op.READ, TOPIC, t.name))
        if not denied:
            return None
        extra = [{"name": t.name, "partitions": [
            {"partition_index": p.partition_index, "error_code": E.TOPIC_AUTHORIZATION_FAILED}
            for p in t.partitions]} for t in denied]
        return Partial(_with(req, topics=kept), _merge_list("topics", extra))

    return check


_offset_commit = _group_and_topics(Op.READ)
_offset_delete = _group_and_topics(Op.DELETE)


def _offset_fetch_topics(r: _Request, topics: list[Any] | None
                         ) -> tuple[list[Any] | None, Callable[[list[Any]], list[Any]] | None]:
    """The topics to ask for, and how to fix the answer's topics (None: nothing to fix)."""
    if topics is None:  # every committed topic: silently leave out what may not be described
        return None, lambda answered: [t for t in answered if r.quietly(Op.DESCRIBE, TOPIC, t["name"])]
    kept, denied = _split(topics, lambda t: r.allowed(Op.DESCRIBE, TOPIC, t.name))
    if not denied:
        return topics, None
    extra = [{"name": t.name, "partitions": [
        {"partition_index": p, "committed_offset": -1, "committed_leader_epoch": -1, "metadata": "",
         "error_code": E.TOPIC_AUTHORIZATION_FAILED} for p in t.partition_indexes]} for t in denied]
    return kept, lambda answered: list(answered) + extra


def _offset_fetch(r: _Request) -> Verdict:
    req = r.req
    if r.version < 8:
        if not r.allowed(Op.DESCRIBE, GROUP, req.group_id):
            return Deny(r.error_body(E.GROUP_AUTHORIZATION_FAILED))
        topics, fix = _offset_fetch_topics(r, req.topics)
        if fix is None:
            return None

        def merge_one(body: Any) -> Any:
            if not body.get("error_code"):
                body["topics"] = fix(body.get("topics") or [])
            return body

        return Partial(_with(req, topics=topics), merge_one)
    groups: list[Any] = []
    denied: list[dict[str, Any]] = []
    fixes: dict[str, Callable[[list[Any]], list[Any]]] = {}
    for g in req.groups:
        if not r.allowed(Op.DESCRIBE, GROUP, g.group_id):
            denied.append({"group_id": g.group_id, "topics": [], "error_code": E.GROUP_AUTHORIZATION_FAILED})
            continue
        topics, fix = _offset_fetch_topics(r, g.topics)
        if fix is not None:
            fixes[g.group_id] = fix
            g = _with(g, topics=topics)
        groups.append(g)
    if not denied and not fixes:
        return None

    def merge(body: Any) -> Any:
        for g in body.get("groups") or []:
            fix = fixes.get(g["group_id"])
            if fix is not None and not g.get("error_code"):
                g["topics"] = fix(g.get("topics") or [])
        body["groups"] = list(body.get("groups") or []) + denied
        return body

    return Partial(_with(req, groups=groups), merge)


def _describe_groups(r: _Request) -> Verdict:
    req = r.req
    kept, denied = _split(req.groups, lambda g: r.allowed(Op.DESCRIBE, GROUP, g))
    with_operations = r.version >= 3 and req.get("include_authorized_operations")
    if not denied and not with_operations:
        return None
    extra = [{"error_code": E.GROUP_AUTHORIZATION_FAILED, "error_message": None, "group_id": g, "group_state": "",
              "protocol_type": "", "protocol_data": "", "members": [], "authorized_operations": _NO_OPERATIONS}
             for g in denied]
    session = r.session

    def merge(body: Any) -> Any:
        if with_operations:
            for g in body.get("groups") or []:
                g["authorized_operations"] = RequestAuthorizer.authorized_operations(session, GROUP, g["group_id"])
        body["groups"] = list(body.get("groups") or []) + extra
        return body

    return Partial(_with(req, groups=kept), merge)


def _consumer_group_heartbeat(r: _Request) -> Verdict:
    """ConsumerGroupHeartbeat and ShareGroupHeartbeat: READ on the group, and DESCRIBE on every topic the
    member subscribes to by name (a topic it may not see is never assigned to it, nor its id and
    partitions shown)."""
    req = r.req
    if not r.allowed(Op.READ, GROUP, req.group_id):
        return Deny(r.error_body(E.GROUP_AUTHORIZATION_FAILED))
    names = dict.fromkeys(req.subscribed_topic_names or ())
    if not all([r.allowed(Op.DESCRIBE, TOPIC, name) for name in names]):  # every refusal counted
        return Deny(r.error_body(E.TOPIC_AUTHORIZATION_FAILED))
    return None


#: ConsumerGroupDescribe's answer for a group whose assignments name a topic the principal may not see
_HIDDEN_TOPICS = "The group has described topic(s) that the client is not authorized to describe."


def _consumer_group_describe(r: _Request) -> Verdict:
    """ConsumerGroupDescribe: DESCRIBE on each group (the others get GROUP_AUTHORIZATION_FAILED); a group
    whose members' assignments (current or target) name a topic the principal may not DESCRIBE is
    answered TOPIC_AUTHORIZATION_FAILED without its members, as Kafka does; the groups' authorized
    operations when asked for."""
    kept, denied = _split(r.req.group_ids, lambda g: r.allowed(Op.DESCRIBE, GROUP, g))
    extra = [{"error_code": E.GROUP_AUTHORIZATION_FAILED, "error_message": None, "group_id": g, "group_state": "",
              "group_epoch": -1, "assignment_epoch": -1, "assignor_name": "", "members": [],
              "authorized_operations": _NO_OPERATIONS} for g in denied]
    with_operations = bool(r.req.get("include_authorized_operations"))
    session = r.session

    def visible(group: Any) -> bool:
        names = {tp["topic_name"] for m in group.get("members") or ()
                 for assignment in (m["assignment"], m["target_assignment"])
                 for tp in assignment["topic_partitions"]}
        return all([r.allowed(Op.DESCRIBE, TOPIC, name) for name in sorted(names) if name])

    def merge(body: Any) -> Any:
        groups = []
        for g in body.get("groups") or []:
            if g.get("error_code"):
                groups.append(g)
                continue
            if not visible(g):
                g = {"error_code": E.TOPIC_AUTHORIZATION_FAILED, "error_message": _HIDDEN_TOPICS,
                     "group_id": g["group_id"], "group_state": "", "group_epoch": 0, "assignment_epoch": 0,
                     "assignor_name": "", "members": [], "authorized_operations": _NO_OPERATIONS}
            elif with_operations:
                g["authorized_operations"] = RequestAuthorizer.authorized_operations(session, GROUP, g["group_id"])
            groups.append(g)
        body["groups"] = groups + extra
        return body

    return Partial(_with(r.req, group_ids=kept), merge)


def _share_group_describe(r: _Request) -> Verdict:
    """ShareGroupDescribe: DESCRIBE on each group; a group whose members subscribe to or are assigned a topic
    the principal may not DESCRIBE is answered TOPIC_AUTHORIZATION_FAILED without its members (no topic
    name leaks), as Kafka does; the groups' authorized operations when asked for."""
    kept, denied = _split(r.req.group_ids, lambda g: r.allowed(Op.DESCRIBE, GROUP, g))
    extra = [{"error_code": E.GROUP_AUTHORIZATION_FAILED, "error_message": None, "group_id": g, "group_state": "",
              "group_epoch": -1, "assignment_epoch": -1, "assignor_name": "", "members": [],
              "authorized_operations": _NO_OPERATIONS} for g in denied]
    with_operations = bool(r.req.get("include_authorized_operations"))
    session = r.session

    def visible(group: Any) -> bool:
        names = {tp["topic_name"] for m in group.get("members") or () for tp in m["assignment"]["topic_partitions"]}
        names.update(n for m in group.get("members") or () for n in m.get("subscribed_topic_names") or ())
        return all([r.allowed(Op.DESCRIBE, TOPIC, name) for name in sorted(names) if name])

    def merge(body: Any) -> Any:
        groups = []
        for g in body.get("groups") or []:
            if not g.get("error_code") and not visible(g):
                g = {"error_code": E.TOPIC_AUTHORIZATION_FAILED, "error_message": _HIDDEN_TOPICS,
                     "group_id": g["group_id"], "group_state": "", "group_epoch": -1, "assignment_epoch": -1,
                     "assignor_name": "", "members": [], "authorized_operations": _NO_OPERATIONS}
            elif not g.get("error_code") and with_operations:
                g["authorized_operations"] = RequestAuthorizer.authorized_operations(session, GROUP, g["group_id"])
            groups.append(g)
        body["groups"] = groups + extra
        return body

    return Partial(_with(r.req, group_ids=kept), merge)


def _describe_share_group_offsets(r: _Request) -> Verdict:
    """DescribeShareGroupOffsets: DESCRIBE on each group, DESCRIBE on each topic named (TOPIC_AUTHORIZATION_FAILED
    per partition); all of a group's topics (none named): those the principal may not DESCRIBE are left out."""
    groups, denied, fixes = [], [], {}
    for g in r.req.groups:
        if not r.allowed(Op.DESCRIBE, GROUP, g.group_id):
            denied.append({"group_id": g.group_id, "topics": [], "error_code": E.GROUP_AUTHORIZATION_FAILED,
                           "error_message": None})
            continue
        if g.topics is None:
            fixes[g.group_id] = None
            groups.append(g)
            continue
        kept, refused = _split(g.topics, lambda t: r.allowed(Op.DESCRIBE, TOPIC, t.topic_name))
        if refused:
            fixes[g.group_id] = [{"topic_name": t.topic_name, "topic_id": uuid.UUID(int=0), "partitions": [
                {"partition_index": p, "start_offset": -1, "leader_epoch": -1, "lag": -1,
                 "error_code": E.TOPIC_AUTHORIZATION_FAILED, "error_message": None} for p in t.partitions]}
                for t in refused]
            g = _with(g, topics=kept)
        groups.append(g)
    if not denied and not fixes:
        return None

    def merge(body: Any) -> Any:
        for g in body.get("groups") or []:
            if g["group_id"] not in fixes or g.get("error_code"):
                continue
            extra = fixes[g["group_id"]]
            if extra is None:
                g["topics"] = [t for t in g.get("topics") or [] if r.quietly(Op.DESCRIBE, TOPIC, t["topic_name"])]
            else:
                g["topics"] = list(g.get("topics") or []) + extra
        body["groups"] = list(body.get("groups") or []) + denied
        return body

    return Partial(_with(r.req, groups=groups), merge)


def _share_group_offsets(group_op: AclOperation, *, partitions: bool) -> Check:
    """AlterShareGroupOffsets (READ on the group) and DeleteShareGroupOffsets (DELETE on the group): the whole
    request needs ``group_op`` on the group; each topic needs READ (TOPIC_AUTHORIZATION_FAILED)."""

    def check(r: _Request) -> Verdict:
        req = r.req
        if not r.allowed(group_op, GROUP, req.group_id):
            return Deny(Obj(throttle_time_ms=0, error_code=E.GROUP_AUTHORIZATION_FAILED, error_message=None,
                            responses=[]))
        kept, denied = _split(req.topics, lambda t: r.allowed(Op.READ, TOPIC, t.topic_name))
        if not denied:
            return None
        if partitions:
            extra = [{"topic_name": t.topic_name, "topic_id": uuid.UUID(int=0), "partitions": [
                {"partition_index": p.partition_index, "error_code": E.TOPIC_AUTHORIZATION_FAILED,
                 "error_message": None} for p in t.partitions]} for t in denied]
        else:
            extra = [{"topic_name": t.topic_name, "topic_id": uuid.UUID(int=0),
                      "error_code": E.TOPIC_AUTHORIZATION_FAILED, "error_message": None} for t in denied]
        append = _merge_list("responses", extra)
        return Partial(_with(req, topics=kept), lambda body: body if body.get("error_code") else append(body))

    return check


def _list_groups(r: _Request) -> Verdict:
    if r.session.authorize_cluster(Op.DESCRIBE):
        return None

    def merge(body: Any) -> Any:
        body["groups"] = [g for g in body.get("groups") or [] if r.quietly(Op.DESCRIBE, GROUP, g["group_id"])]
        return body

    return Partial(r.req, merge)


def _delete_groups(r: _Request) -> Verdict:
    req = r.req
    kept, denied = _split(req.groups_names, lambda g: r.allowed(Op.DELETE, GROUP, g))
    if not denied:
        return None
    extra = [{"group_id": g, "error_code": E.GROUP_AUTHORIZATION_FAILED} for g in denied]
    return Partial(_with(req, groups_names=kept), _merge_list("results", extra))


# -- ACLs and users ----------------------------------------------------------------------


def _create_acls(r: _Request) -> Verdict:
    if r.cluster(Op.ALTER):
        return None
    return Deny(Obj(throttle_time_ms=0, results=[
        {"error_code": E.CLUSTER_AUTHORIZATION_FAILED, "error_message": "Authorization failed."}
        for _ in r.req.creations]))


def _delete_acls(r: _Request) -> Verdict:
    if r.cluster(Op.ALTER):
        return None
    return Deny(Obj(throttle_time_ms=0, filter_results=[
        {"error_code": E.CLUSTER_AUTHORIZATION_FAILED, "error_message": "Authorization failed.", "matching_acls": []}
        for _ in r.req.filters]))


def _alter_user_scram_credentials(r: _Request) -> Verdict:
    if r.cluster(Op.ALTER):
        return None
    req = r.req
    names = dict.fromkeys([d.name for d in req.deletions] + [u.name for u in req.upsertions])
    return Deny(Obj(throttle_time_ms=0, results=[
        {"user": name, "error_code": E.CLUSTER_AUTHORIZATION_FAILED, "error_message": "Authorization failed."}
        for name in names]))
