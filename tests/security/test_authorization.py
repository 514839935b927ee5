"""Request authorization (broker.handlers.authorization): Kafka's per-API checks on decoded requests, and the
responses they merge — checked against the wire codecs (every merged body must encode and decode)."""

from __future__ import annotations

import uuid
from collections import Counter
from typing import Any

import pytest

from broker.handlers.authorization import Deny, Partial, RequestAuthorizer
from broker.security.acl import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    Authorizer,
    PatternType,
    ResourceType,
)
from broker.security.connection import AuthEvents
from protocol.api import (
    ApiKey,
    decode_request_body,
    decode_request_header,
    decode_response,
    encode_request,
    encode_response_parts,
)
from protocol.error_codes import ErrorCode
from protocol.primitives import Obj

E = ErrorCode
TOPIC_ID = uuid.UUID(int=7)
SECRET_ID = uuid.UUID(int=8)
IDS = {TOPIC_ID: "orders", SECRET_ID: "secret"}


def allow(resource_type: ResourceType, name: str, op: AclOperation, principal: str = "User:alice",
          pattern: PatternType = PatternType.LITERAL, deny: bool = False) -> AclBinding:
    return AclBinding(resource_type, name, pattern, principal, "*", op,
                      AclPermissionType.DENY if deny else AclPermissionType.ALLOW)


@pytest.fixture
def setup() -> tuple[Authorizer, RequestAuthorizer, Counter[tuple[str, str]]]:
    authorizer = Authorizer(super_users="User:admin")
    denials: Counter[tuple[str, str]] = Counter()
    authz = RequestAuthorizer(topic_name=IDS.get, events=AuthEvents(denied=lambda api, rt: denials.update([(api, rt)])))
    return authorizer, authz, denials


def request(api_key: ApiKey, version: int, body: dict[str, Any]) -> Obj:
    """A request as the broker sees it: encoded by our client codec, decoded by the broker's."""
    frame = encode_request(api_key, version, 1, "test", body)[4:]
    return decode_request_body(decode_request_header(frame), frame)


def wire(api_key: ApiKey, version: int, body: Any) -> Obj:
    """Encode a response body and decode it again (a merged response must be a valid one)."""
    data = b"".join(bytes(p) for p in encode_response_parts(api_key, version, 1, body))
    return decode_response(api_key, version, data[4:])[1]


def check(setup: Any, api_key: ApiKey, version: int, req: Obj, principal: str = "User:alice") -> Any:
    authorizer, authz, _ = setup
    return authz.check(authorizer.session(principal, "127.0.0.1"), api_key, version, req)


def produce_request(*topics: str) -> Obj:
    return request(ApiKey.PRODUCE, 9, {"transactional_id": None, "acks": -1, "timeout_ms": 1000, "topic_data": [
        {"name": t, "partition_data": [{"index": 0, "records": None}, {"index": 1, "records": None}]} for t in topics]})


def test_produce_to_a_topic_without_write_is_refused_per_partition(setup) -> None:
    authorizer, _, denials = setup
    authorizer.add([allow(ResourceType.TOPIC, "ord", AclOperation.WRITE, pattern=PatternType.PREFIXED)])
    assert check(setup, ApiKey.PRODUCE, 9, produce_request("orders")) is None
    verdict = check(setup, ApiKey.PRODUCE, 9, produce_request("orders", "secret"))
    assert isinstance(verdict, Partial)
    assert [t.name for t in verdict.request.topic_data] == ["orders"]
    handled = Obj(responses=[{"name": "orders", "partition_responses": [
        {"index": 0, "error_code": 0, "base_offset": 5}, {"index": 1, "error_code": 0, "base_offset": 9}]}],
        throttle_time_ms=0)
    answer = wire(ApiKey.PRODUCE, 9, verdict.merge(handled))
    codes = {(t.name, p.index): p.error_code for t in answer.responses for p in t.partition_responses}
    assert codes == {("orders", 0): 0, ("orders", 1): 0, ("secret", 0): E.TOPIC_AUTHORIZATION_FAILED,
                     ("secret", 1): E.TOPIC_AUTHORIZATION_FAILED}
    assert verdict.merge(None) is None  # acks=0: nothing to answer
    assert denials == {("Produce", "TOPIC"): 1}


def test_a_deny_wins_over_a_prefixed_allow_and_super_users_pass(setup) -> None:
    authorizer, _, _ = setup
    authorizer.add([allow(ResourceType.TOPIC, "ord", AclOperation.WRITE, pattern=PatternType.PREFIXED),
                    allow(ResourceType.TOPIC, "orders", AclOperation.WRITE, deny=True)])
    verdict = check(setup, ApiKey.PRODUCE, 9, produce_request("orders", "ordinary"))
    assert isinstance(verdict, Partial) and [t.name for t in verdict.request.topic_data] == ["ordinary"]
    assert check(setup, ApiKey.PRODUCE, 9, produce_request("orders", "secret"), principal="User:admin") is None


def fetch_request(version: int, replica_id: int = -1) -> Obj:
    def topic(name: str, topic_id: uuid.UUID) -> dict[str, Any]:
        return {"topic": name, "topic_id": topic_id, "partitions": [
            {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1000}]}

    body: dict[str, Any] = {"replica_id": replica_id, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": 1000,
                            "isolation_level": 0, "session_id": 0, "session_epoch": -1,
                            "topics": [topic("orders", TOPIC_ID), topic("secret", SECRET_ID)],
                            "forgotten_topics_data": [], "rack_id": ""}
    if version >= 15:
        body["replica_state"] = {"replica_id": replica_id, "replica_epoch": 1}
    return request(ApiKey.FETCH, version, body)


@pytest.mark.parametrize("version", [12, 13, 17])
def test_fetch_needs_read_per_topic_named_or_by_id(setup, version: int) -> None:
    authorizer, _, _ = setup
    authorizer.add([allow(ResourceType.TOPIC, "orders", AclOperation.READ)])
    verdict = check(setup, ApiKey.FETCH, version, fetch_request(version))
    assert isinstance(verdict, Partial) and len(verdict.request.topics) == 1
    handled = Obj(throttle_time_ms=0, error_code=0, session_id=0, responses=[
        {"topic": "orders", "topic_id": TOPIC_ID, "partitions": [
            {"partition_index": 0, "error_code": 0, "high_watermark": 3, "records": b""}]}])
    answer = wire(ApiKey.FETCH, version, verdict.merge(handled))
    by_topic = {(t.topic if version < 13 else IDS[t.topic_id]): t.partitions[0].error_code for t in answer.responses}
    assert by_topic == {"orders": 0, "secret": E.TOPIC_AUTHORIZATION_FAILED}


def test_a_follower_fetch_needs_cluster_action(setup) -> None:
    authorizer, _, _ = setup
    authorizer.add([allow(ResourceType.TOPIC, "*", AclOperation.ALL)])
    verdict = check(setup, ApiKey.FETCH, 17, fetch_request(17, replica_id=2))
    assert isinstance(verdict, Deny)
    answer = wire(ApiKey.FETCH, 17, verdict.body)
    assert {p.error_code for t in answer.responses for p in t.partitions} == {E.TOPIC_AUTHORIZATION_FAILED}
    authorizer.add([allow(ResourceType.CLUSTER, "kafka-cluster", AclOperation.CLUSTER_ACTION)])
    assert check(setup, ApiKey.FETCH, 17, fetch_request(17, replica_id=2)) is None


def test_group_requests_need_read_on_the_group(setup) -> None:
    authorizer, _, _ = setup
    join = request(ApiKey.JOIN_GROUP, 9, {"group_id": "billing", "session_timeout_ms": 10000,
                                          "rebalance_timeout_ms": 10000, "member_id": "", "protocol_type": "consumer",
                                          "protocols": [{"name": "range", "metadata": b""}]})
    verdict = check(setup, ApiKey.JOIN_GROUP, 9, join)
    assert isinstance(verdict, Deny) and wire(ApiKey.JOIN_GROUP, 9, verdict.body).error_code == \
        E.GROUP_AUTHORIZATION_FAILED
    authorizer.add([allow(ResourceType.GROUP, "bill", AclOperation.READ, pattern=PatternType.PREFIXED)])
    assert check(setup, ApiKey.JOIN_GROUP, 9, join) is None


def test_offset_commit_needs_the_group_and_each_topic(setup) -> None:
    authorizer, _, _ = setup
    authorizer.add([allow(ResourceType.GROUP, "g", AclOperation.READ),
                    allow(ResourceType.TOPIC, "orders", AclOperation.READ)])
    commit = request(ApiKey.OFFSET_COMMIT, 8, {"group_id": "g", "generation_id_or_member_epoch": 1, "member_id": "m",
                                               "group_instance_id": None, "topics": [
        {"name": t, "partitions": [{"partition_index": 0, "committed_offset": 1, "committed_metadata": ""}]}
        for t in ("orders", "secret")]})
    verdict = check(setup, ApiKey.OFFSET_COMMIT, 8, commit)
    assert isinstance(verdict, Partial) and [t.name for t in verdict.request.topics] == ["orders"]
    handled = Obj(throttle_time_ms=0, topics=[{"name": "orders", "partitions": [
        {"partition_index": 0, "error_code": 0}]}])
    answer = wire(ApiKey.OFFSET_COMMIT, 8, verdict.merge(handled))
    assert {t.name: t.partitions[0].error_code for t in answer.topics} == {
        "orders": 0, "secret": E.TOPIC_AUTHORIZATION_FAILED}
    other = request(ApiKey.OFFSET_COMMIT, 8, {**commit, "group_id": "other"})
    denied = check(setup, ApiKey.OFFSET_COMMIT, 8, other)
    assert isinstance(denied, Deny)
    assert {p.error_code for t in wire(ApiKey.OFFSET_COMMIT, 8, denied.body).topics for p in t.partitions} == {
        E.GROUP_AUTHORIZATION_FAILED}


def test_offset_fetch_of_all_topics_leaves_out_what_may_not_be_described(setup) -> None:
    authorizer, _, _ = setup
    authorizer.add([allow(ResourceType.GROUP, "g", AclOperation.DESCRIBE),
                    allow(ResourceType.TOPIC, "orders", AclOperation.READ)])  # READ implies DESCRIBE
    committed = [{"name": t, "partitions": [{"partition_index": 0, "committed_offset": 4, "metadata": "",
                                             "error_code": 0}]} for t in ("orders", "secret")]
    old = check(setup, ApiKey.OFFSET_FETCH, 7, request(ApiKey.OFFSET_FETCH, 7, {"group_id": "g", "topics": None}))
    assert isinstance(old, Partial)
    answer = wire(ApiKey.OFFSET_FETCH, 7, old.merge(Obj(throttle_time_ms=0, error_code=0, topics=list(committed))))
    assert [t.name for t in answer.topics] == ["orders"]
    new = check(setup, ApiKey.OFFSET_FETCH, 9, request(ApiKey.OFFSET_FETCH, 9, {"groups": [
        {"group_id": "g", "member_id": None, "member_epoch": -1, "topics": None},
        {"group_id": "h", "member_id": None, "member_epoch": -1,
         "topics": [{"name": "orders", "partition_indexes": [0]}]}], "require_stable": False}))
    assert isinstance(new, Partial) and [g.group_id for g in new.request.groups] == ["g"]
    answer = wire(ApiKey.OFFSET_FETCH, 9, new.merge(Obj(throttle_time_ms=0, groups=[
        {"group_id": "g", "topics": list(committed), "error_code": 0}])))
    assert {g.group_id: (g.error_code, [t.name for t in g.topics]) for g in answer.groups} == {
        "g": (0, ["orders"]), "h": (E.GROUP_AUTHORIZATION_FAILED, [])}


def test_list_groups_shows_only_describable_groups_unless_cluster_describe(setup) -> None:
    authorizer, _, _ = setup
    authorizer.add([allow(ResourceType.GROUP, "mine", AclOperation.DESCRIBE, pattern=PatternType.PREFIXED)])
    listed = Obj(throttle_time_ms=0, error_code=0, groups=[{"group_id": g, "protocol_type": "consumer"}
                                                           for g in ("mine-1", "theirs")])
    verdict = check(setup, ApiKey.LIST_GROUPS, 4, request(ApiKey.LIST_GROUPS, 4, {"states_filter": []}))
    assert isinstance(verdict, Partial)
    assert [g.group_id for g in wire(ApiKey.LIST_GROUPS, 4, verdict.merge(Obj(listed))).groups] == ["mine-1"]
    authorizer.add([allow(ResourceType.CLUSTER, "kafka-cluster", AclOperation.DESCRIBE)])
    assert check(setup, ApiKey.LIST_GROUPS, 4, request(ApiKey.LIST_GROUPS, 4, {"states_filter": []})) is None


def test_create_topics_needs_create_and_hides_configs_without_describe_configs(setup) -> None:
    authorizer, _, _ = setup
    authorizer.add([allow(ResourceType.TOPIC, "orders", AclOperation.CREATE)])
    create = request(ApiKey.CREATE_TOPICS, 7, {"topics": [
        {"name": t, "num_partitions": 1, "replication_factor": 1, "assignments": [], "configs": []}
        for t in ("orders", "secret")], "timeout_ms": 1000, "validate_only": False})
    verdict = check(setup, ApiKey.CREATE_TOPICS, 7, create)
    assert isinstance(verdict, Partial) and [t.name for t in verdict.request.topics] == ["orders"]
    handled = Obj(throttle_time_ms=0, topics=[{"name": "orders", "topic_id": TOPIC_ID, "error_code": 0,
                                               "num_partitions": 1, "replication_factor": 1,
                                               "configs": [{"name": "retention.ms", "value": "1"}]}])
    answer = {t.name: t for t in wire(ApiKey.CREATE_TOPICS, 7, verdict.merge(handled)).topics}
    assert answer["orders"].error_code == 0 and answer["orders"].topic_config_error_code == \
        E.TOPIC_AUTHORIZATION_FAILED and answer["orders"].configs is None
    assert answer["secret"].error_code == E.TOPIC_AUTHORIZATION_FAILED
    authorizer.add([allow(ResourceType.CLUSTER, "kafka-cluster", AclOperation.CREATE),
                    allow(ResourceType.TOPIC, "*", AclOperation.DESCRIBE_CONFIGS)])
    assert check(setup, ApiKey.CREATE_TOPICS, 7, create) is None


def test_acl_and_user_admin_need_the_cluster(setup) -> None:
    authorizer, _, _ = setup
    creations = request(ApiKey.CREATE_ACLS, 3, {"creations": [
        {"resource_type": 2, "resource_name": "t", "resource_pattern_type": 3, "principal": "User:bob",
         "host": "*", "operation": 3, "permission_type": 3}] * 2})
    verdict = check(setup, ApiKey.CREATE_ACLS, 3, creations)
    assert isinstance(verdict, Deny)
    assert [r.error_code for r in wire(ApiKey.CREATE_ACLS, 3, verdict.body).results] == \
        [E.CLUSTER_AUTHORIZATION_FAILED] * 2
    alter = request(ApiKey.ALTER_USER_SCRAM_CREDENTIALS, 0, {"deletions": [{"name": "bob", "mechanism": 1}],
                                                             "upsertions": []})
    denied = check(setup, ApiKey.ALTER_USER_SCRAM_CREDENTIALS, 0, alter)
    assert isinstance(denied, Deny) and [(r.user, r.error_code) for r in wire(
        ApiKey.ALTER_USER_SCRAM_CREDENTIALS, 0, denied.body).results] == [("bob", E.CLUSTER_AUTHORIZATION_FAILED)]
    authorizer.add([allow(ResourceType.CLUSTER, "kafka-cluster", AclOperation.ALTER)])
    assert check(setup, ApiKey.CREATE_ACLS, 3, creations) is None
    assert check(setup, ApiKey.DESCRIBE_ACLS, 3, request(ApiKey.DESCRIBE_ACLS, 3, {
        "resource_type_filter": 1, "resource_name_filter": None, "pattern_type_filter": 1, "principal_filter": None,
        "host_filter": None, "operation": 1, "permission_type": 1})) is None  # ALTER implies DESCRIBE


def test_idempotent_producers_need_idempotent_write_or_write_on_some_topic(setup) -> None:
    authorizer, _, _ = setup
    init = request(ApiKey.INIT_PRODUCER_ID, 4, {"transactional_id": None, "transaction_timeout_ms": 1000,
                                               "producer_id": -1, "producer_epoch": -1})
    verdict = check(setup, ApiKey.INIT_PRODUCER_ID, 4, init)
    assert isinstance(verdict, Deny) and wire(ApiKey.INIT_PRODUCER_ID, 4, verdict.body).error_code == \
        E.CLUSTER_AUTHORIZATION_FAILED
    authorizer.add([allow(ResourceType.TOPIC, "orders", AclOperation.WRITE)])
    assert check(setup, ApiKey.INIT_PRODUCER_ID, 4, init) is None


def test_decisions_follow_acl_changes(setup) -> None:
    """The per-connection cache is dropped when the ACLs change (no stale allow after a removal)."""
    authorizer, authz, _ = setup
    session = authorizer.session("User:alice", "127.0.0.1")
    binding = allow(ResourceType.TOPIC, "orders", AclOperation.WRITE)
    authorizer.add([binding])
    assert authz.check(session, ApiKey.PRODUCE, 9, produce_request("orders")) is None
    authorizer.remove([binding])
    assert isinstance(authz.check(session, ApiKey.PRODUCE, 9, produce_request("orders")), Partial)


# -- transactions, configs, log dirs -----------------------------------------------------


def test_transactional_produce_needs_write_on_the_transactional_id(setup) -> None:
    authorizer, _, _ = setup
    authorizer.add([allow(ResourceType.TOPIC, "orders", AclOperation.WRITE)])
    req = request(ApiKey.PRODUCE, 9, {"transactional_id": "tx", "acks": -1, "timeout_ms": 1000, "topic_data": [
        {"name": "orders", "partition_data": [{"index": 0, "records": None}]}]})
    verdict = check(setup, ApiKey.PRODUCE, 9, req)
    assert isinstance(verdict, Deny)
    body = wire(ApiKey.PRODUCE, 9, verdict.body)
    assert [p.error_code for p in body.responses[0].partition_responses] == [E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED]
    authorizer.add([allow(ResourceType.TRANSACTIONAL_ID, "tx", AclOperation.WRITE)])
    assert check(setup, ApiKey.PRODUCE, 9, req) is None


def test_add_partitions_to_txn_needs_the_id_and_every_topic(setup) -> None:
    authorizer, _, _ = setup
    req = request(ApiKey.ADD_PARTITIONS_TO_TXN, 3, {
        "v3_and_below_transactional_id": "tx", "v3_and_below_producer_id": 1, "v3_and_below_producer_epoch": 0,
        "v3_and_below_topics": [{"name": "orders", "partitions": [0, 1]}, {"name": "secret", "partitions": [0]}]})

    def codes(verdict: Any) -> dict[tuple[str, int], int]:
        assert isinstance(verdict, Deny)
        body = wire(ApiKey.ADD_PARTITIONS_TO_TXN, 3, verdict.body)
        return {(t.name, p.partition_index): p.partition_error_code
                for t in body.results_by_topic_v3_and_below for p in t.results_by_partition}

    assert set(codes(check(setup, ApiKey.ADD_PARTITIONS_TO_TXN, 3, req)).values()) == {
        E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED}
    authorizer.add([allow(ResourceType.TRANSACTIONAL_ID, "tx", AclOperation.WRITE),
                    allow(ResourceType.TOPIC, "orders", AclOperation.WRITE)])
    assert codes(check(setup, ApiKey.ADD_PARTITIONS_TO_TXN, 3, req)) == {
        ("orders", 0): E.OPERATION_NOT_ATTEMPTED, ("orders", 1): E.OPERATION_NOT_ATTEMPTED,
        ("secret", 0): E.TOPIC_AUTHORIZATION_FAILED}
    authorizer.add([allow(ResourceType.TOPIC, "secret", AclOperation.WRITE)])
    assert check(setup, ApiKey.ADD_PARTITIONS_TO_TXN, 3, req) is None
    batched = request(ApiKey.ADD_PARTITIONS_TO_TXN, 5, {"transactions": [
        {"transactional_id": "tx", "producer_id": 1, "producer_epoch": 0, "verify_only": True,
         "topics": [{"name": "orders", "partitions": [0]}]}]})
    verdict = check(setup, ApiKey.ADD_PARTITIONS_TO_TXN, 5, batched)  # the brokers' form
    assert isinstance(verdict, Deny)
    assert wire(ApiKey.ADD_PARTITIONS_TO_TXN, 5, verdict.body).error_code == E.CLUSTER_AUTHORIZATION_FAILED
    assert check(setup, ApiKey.ADD_PARTITIONS_TO_TXN, 5, batched, principal="User:admin") is None


def test_txn_offset_commit_needs_the_id_the_group_and_read_on_each_topic(setup) -> None:
    authorizer, _, _ = setup
    req = request(ApiKey.TXN_OFFSET_COMMIT, 4, {
        "transactional_id": "tx", "group_id": "g", "producer_id": 1, "producer_epoch": 0, "generation_id": -1,
        "member_id": "", "group_instance_id": None, "topics": [
            {"name": t, "partitions": [{"partition_index": 0, "committed_offset": 5, "committed_leader_epoch": -1,
                                        "committed_metadata": None}]} for t in ("orders", "secret")]})

    def codes(verdict: Any, body: Any = None) -> dict[str, int]:
        if isinstance(verdict, Deny):
            body = verdict.body
        out = wire(ApiKey.TXN_OFFSET_COMMIT, 4, body)
        return {t.name: t.partitions[0].error_code for t in out.topics}

    assert codes(check(setup, ApiKey.TXN_OFFSET_COMMIT, 4, req)) == {
        "orders": E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, "secret": E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED}
    authorizer.add([allow(ResourceType.TRANSACTIONAL_ID, "tx", AclOperation.WRITE)])
    assert codes(check(setup, ApiKey.TXN_OFFSET_COMMIT, 4, req)) == {
        "orders": E.GROUP_AUTHORIZATION_FAILED, "secret": E.GROUP_AUTHORIZATION_FAILED}
    authorizer.add([allow(ResourceType.GROUP, "g", AclOperation.READ),
                    allow(ResourceType.TOPIC, "orders", AclOperation.READ)])
    verdict = check(setup, ApiKey.TXN_OFFSET_COMMIT, 4, req)
    assert isinstance(verdict, Partial) and [t.name for t in verdict.request.topics] == ["orders"]
    handled = Obj(throttle_time_ms=0, topics=[{"name": "orders", "partitions": [
        {"partition_index": 0, "error_code": 0}]}])
    assert codes(None, verdict.merge(handled)) == {"orders": E.NONE, "secret": E.TOPIC_AUTHORIZATION_FAILED}


def test_end_txn_add_offsets_and_markers(setup) -> None:
    authorizer, _, _ = setup
    end = request(ApiKey.END_TXN, 4, {"transactional_id": "tx", "producer_id": 1, "producer_epoch": 0,
                                      "committed": True})
    verdict = check(setup, ApiKey.END_TXN, 4, end)
    assert isinstance(verdict, Deny)
    assert wire(ApiKey.END_TXN, 4, verdict.body).error_code == E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    offsets = request(ApiKey.ADD_OFFSETS_TO_TXN, 4, {"transactional_id": "tx", "producer_id": 1,
                                                    "producer_epoch": 0, "group_id": "g"})
    authorizer.add([allow(ResourceType.TRANSACTIONAL_ID, "tx", AclOperation.WRITE)])
    assert check(setup, ApiKey.END_TXN, 4, end) is None
    verdict = check(setup, ApiKey.ADD_OFFSETS_TO_TXN, 4, offsets)
    assert isinstance(verdict, Deny)
    assert wire(ApiKey.ADD_OFFSETS_TO_TXN, 4, verdict.body).error_code == E.GROUP_AUTHORIZATION_FAILED
    markers = request(ApiKey.WRITE_TXN_MARKERS, 1, {"markers": [
        {"producer_id": 1, "producer_epoch": 0, "transaction_result": True, "coordinator_epoch": 0,
         "topics": [{"name": "orders", "partition_indexes": [0, 2]}]}]})
    verdict = check(setup, ApiKey.WRITE_TXN_MARKERS, 1, markers)
    assert isinstance(verdict, Deny)
    body = wire(ApiKey.WRITE_TXN_MARKERS, 1, verdict.body)
    assert [p.error_code for p in body.markers[0].topics[0].partitions] == [E.CLUSTER_AUTHORIZATION_FAILED] * 2
    assert check(setup, ApiKey.WRITE_TXN_MARKERS, 1, markers, principal="User:admin") is None


def test_describing_transactions_and_producers_is_filtered(setup) -> None:
    authorizer, _, _ = setup
    authorizer.add([allow(ResourceType.TRANSACTIONAL_ID, "tx", AclOperation.DESCRIBE),
                    allow(ResourceType.TOPIC, "orders", AclOperation.READ)])
    verdict = check(setup, ApiKey.DESCRIBE_TRANSACTIONS, 0,
                    request(ApiKey.DESCRIBE_TRANSACTIONS, 0, {"transactional_ids": ["tx", "other"]}))
    assert isinstance(verdict, Partial) and verdict.request.transactional_ids == ["tx"]
    body = wire(ApiKey.DESCRIBE_TRANSACTIONS, 0, verdict.merge(Obj(throttle_time_ms=0, transaction_states=[])))
    assert [(s.transactional_id, s.error_code) for s in body.transaction_states] == [
        ("other", E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)]
    verdict = check(setup, ApiKey.LIST_TRANSACTIONS, 1, request(ApiKey.LIST_TRANSACTIONS, 1, {}))
    assert isinstance(verdict, Partial)
    listed = Obj(throttle_time_ms=0, error_code=0, unknown_state_filters=[], transaction_states=[
        {"transactional_id": t, "producer_id": 1, "transaction_state": "Ongoing"} for t in ("tx", "other")])
    assert [s["transactional_id"] for s in verdict.merge(listed)["transaction_states"]] == ["tx"]
    verdict = check(setup, ApiKey.DESCRIBE_PRODUCERS, 0, request(ApiKey.DESCRIBE_PRODUCERS, 0, {"topics": [
        {"name": "orders", "partition_indexes": [0]}, {"name": "secret", "partition_indexes": [0, 1]}]}))
    assert isinstance(verdict, Partial) and [t.name for t in verdict.request.topics] == ["orders"]
    body = wire(ApiKey.DESCRIBE_PRODUCERS, 0, verdict.merge(Obj(throttle_time_ms=0, topics=[])))
    assert [(t.name, [p.error_code for p in t.partitions]) for t in body.topics] == [
        ("secret", [E.TOPIC_AUTHORIZATION_FAILED] * 2)]


@pytest.mark.parametrize("api_key", [ApiKey.ALTER_CONFIGS, ApiKey.INCREMENTAL_ALTER_CONFIGS])
def test_altering_configs_needs_alter_configs(setup, api_key: ApiKey) -> None:
    authorizer, _, _ = setup
    authorizer.add([allow(ResourceType.TOPIC, "orders", AclOperation.ALTER_CONFIGS)])
    req = request(api_key, 1, {"validate_only": False, "resources": [
        {"resource_type": 2, "resource_name": "orders", "configs": []},
        {"resource_type": 2, "resource_name": "secret", "configs": []},
        {"resource_type": 4, "resource_name": "1", "configs": []}]})
    verdict = check(setup, api_key, 1, req)
    assert isinstance(verdict, Partial) and [r.resource_name for r in verdict.request.resources] == ["orders"]
    body = wire(api_key, 1, verdict.merge(Obj(throttle_time_ms=0, responses=[
        {"error_code": 0, "error_message": None, "resource_type": 2, "resource_name": "orders"}])))
    assert [(r.resource_name, r.error_code) for r in body.responses] == [
        ("orders", E.NONE), ("secret", E.TOPIC_AUTHORIZATION_FAILED), ("1", E.CLUSTER_AUTHORIZATION_FAILED)]
    verdict = check(setup, ApiKey.DESCRIBE_LOG_DIRS, 4, request(ApiKey.DESCRIBE_LOG_DIRS, 4, {"topics": None}))
    assert isinstance(verdict, Deny)
    assert wire(ApiKey.DESCRIBE_LOG_DIRS, 4, verdict.body).error_code == E.CLUSTER_AUTHORIZATION_FAILED


def consumer_heartbeat(topics: list[str] | None) -> Obj:
    return request(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, {
        "group_id": "g", "member_id": "m", "member_epoch": 0, "instance_id": None, "rack_id": None,
        "rebalance_timeout_ms": 1000, "subscribed_topic_names": topics, "subscribed_topic_regex": None,
        "server_assignor": None, "topic_partitions": []})


def test_a_consumer_group_heartbeat_needs_describe_on_every_topic_it_names(setup) -> None:
    authorizer, authz, denials = setup
    authorizer.add([allow(ResourceType.GROUP, "g", AclOperation.READ),
                    allow(ResourceType.TOPIC, "orders", AclOperation.DESCRIBE)])
    assert check(setup, ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, consumer_heartbeat(["orders"])) is None
    assert check(setup, ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, consumer_heartbeat(None)) is None  # unchanged
    verdict = check(setup, ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, consumer_heartbeat(["orders", "secret"]))
    assert isinstance(verdict, Deny)
    answer = wire(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, verdict.body)
    assert (answer.error_code, answer.assignment) == (E.TOPIC_AUTHORIZATION_FAILED, None)
    assert denials[("ConsumerGroupHeartbeat", "TOPIC")] == 1
    # the predicate a member's regex is resolved with
    view = authz.describable_topics(authorizer.session("User:alice", "127.0.0.1"))
    assert (view("orders"), view("secret")) == (True, False)
    assert authz.describable_topics(None) is None


def test_consumer_group_describe_hides_groups_with_topics_it_may_not_see(setup) -> None:
    authorizer, _, _ = setup
    authorizer.add([allow(ResourceType.GROUP, "g", AclOperation.DESCRIBE, pattern=PatternType.PREFIXED),
                    allow(ResourceType.TOPIC, "orders", AclOperation.DESCRIBE)])
    req = request(ApiKey.CONSUMER_GROUP_DESCRIBE, 1, {"group_ids": ["g1", "g2", "other"],
                                                      "include_authorized_operations": True})
    verdict = check(setup, ApiKey.CONSUMER_GROUP_DESCRIBE, 1, req)
    assert isinstance(verdict, Partial) and list(verdict.request.group_ids) == ["g1", "g2"]

    def group(gid: str, *topics: tuple[uuid.UUID, str]) -> dict[str, Any]:
        assignment = {"topic_partitions": [{"topic_id": tid, "topic_name": name, "partitions": [0]}
                                           for tid, name in topics]}
        return {"error_code": 0, "error_message": None, "group_id": gid, "group_state": "Stable", "group_epoch": 3,
                "assignment_epoch": 3, "assignor_name": "uniform", "authorized_operations": -2147483648,
                "members": [{"member_id": "m", "instance_id": None, "rack_id": None, "member_epoch": 3,
                             "client_id": "c", "client_host": "h", "subscribed_topic_names": [],
                             "subscribed_topic_regex": None, "assignment": assignment,
                             "target_assignment": {"topic_partitions": []}, "member_type": 1}]}

    handled = Obj(throttle_time_ms=0, groups=[group("g1", (TOPIC_ID, "orders")),
                                              group("g2", (TOPIC_ID, "orders"), (SECRET_ID, "secret"))])
    answer = wire(ApiKey.CONSUMER_GROUP_DESCRIBE, 1, verdict.merge(handled))
    by_id = {g.group_id: g for g in answer.groups}
    assert by_id["g1"].error_code == 0 and by_id["g1"].authorized_operations == (
        1 << AclOperation.DESCRIBE)
    hidden = by_id["g2"]
    assert (hidden.error_code, list(hidden.members), hidden.authorized_operations) == (
        E.TOPIC_AUTHORIZATION_FAILED, [], -2147483648)
    assert by_id["other"].error_code == E.GROUP_AUTHORIZATION_FAILED


@pytest.mark.parametrize("version", [1, 3])
def test_a_refused_find_coordinator_names_no_node(setup, version: int) -> None:
    req = request(ApiKey.FIND_COORDINATOR, version, {"key": "g", "key_type": 0})
    verdict = check(setup, ApiKey.FIND_COORDINATOR, version, req)
    assert isinstance(verdict, Deny)
    answer = wire(ApiKey.FIND_COORDINATOR, version, verdict.body)
    assert (answer.error_code, answer.node_id, answer.host, answer.port) == (E.GROUP_AUTHORIZATION_FAILED, -1, "",
                                                                             -1)


# -- share groups (KIP-932) ------------------------------------------------------------------


def share_heartbeat(topics: list[str] | None) -> Obj:
    return request(ApiKey.SHARE_GROUP_HEARTBEAT, 1, {"group_id": "g", "member_id": "m", "member_epoch": 0,
                                                     "rack_id": None, "subscribed_topic_names": topics})


def test_a_share_group_heartbeat_needs_read_on_the_group_and_describe_on_its_topics(setup) -> None:
    authorizer, _, denials = setup
    assert isinstance(check(setup, ApiKey.SHARE_GROUP_HEARTBEAT, 1, share_heartbeat(["orders"])), Deny)
    authorizer.add([allow(ResourceType.GROUP, "g", AclOperation.READ),
                    allow(ResourceType.TOPIC, "orders", AclOperation.DESCRIBE)])
    assert check(setup, ApiKey.SHARE_GROUP_HEARTBEAT, 1, share_heartbeat(["orders"])) is None
    verdict = check(setup, ApiKey.SHARE_GROUP_HEARTBEAT, 1, share_heartbeat(["orders", "secret"]))
    assert isinstance(verdict, Deny)
    answer = wire(ApiKey.SHARE_GROUP_HEARTBEAT, 1, verdict.body)
    assert (answer.error_code, answer.assignment) == (E.TOPIC_AUTHORIZATION_FAILED, None)
    assert denials[("ShareGroupHeartbeat", "TOPIC")] == 1


@pytest.mark.parametrize(("api_key", "version"), [(ApiKey.SHARE_FETCH, 1), (ApiKey.SHARE_FETCH, 2),
                                                  (ApiKey.SHARE_ACKNOWLEDGE, 1), (ApiKey.SHARE_ACKNOWLEDGE, 2)])
def test_share_fetch_and_acknowledge_need_read_on_the_group_and_each_topic(setup, api_key: ApiKey,
                                                                           version: int) -> None:
    authorizer, _, _ = setup
    topics = [{"topic_id": tid, "partitions": [{"partition_index": 0, "acknowledgement_batches": []}]}
              for tid in (TOPIC_ID, SECRET_ID)]
    body: dict[str, Any] = {"group_id": "g", "member_id": "m", "share_session_epoch": 0, "topics": topics}
    if api_key == ApiKey.SHARE_FETCH:
        body.update(max_wait_ms=0, min_bytes=1, max_bytes=1000, max_records=10, batch_size=10,
                    forgotten_topics_data=[])
    req = request(api_key, version, body)
    refused = check(setup, api_key, version, req)
    assert isinstance(refused, Deny) and wire(api_key, version, refused.body).error_code == \
        E.GROUP_AUTHORIZATION_FAILED
    authorizer.add([allow(ResourceType.GROUP, "g", AclOperation.READ),
                    allow(ResourceType.TOPIC, "orders", AclOperation.READ)])
    verdict = check(setup, api_key, version, req)
    assert isinstance(verdict, Partial) and [t.topic_id for t in verdict.request.topics] == [TOPIC_ID]
    handled = Obj(throttle_time_ms=0, error_code=0, error_message=None, acquisition_lock_timeout_ms=30000,
                  responses=[], node_endpoints=[])
    answer = wire(api_key, version, verdict.merge(handled))
    [denied] = answer.responses
    assert denied.topic_id == SECRET_ID and denied.partitions[0].error_code == E.TOPIC_AUTHORIZATION_FAILED


@pytest.mark.parametrize("api_key", [ApiKey.INITIALIZE_SHARE_GROUP_STATE, ApiKey.READ_SHARE_GROUP_STATE,
                                     ApiKey.WRITE_SHARE_GROUP_STATE, ApiKey.DELETE_SHARE_GROUP_STATE,
                                     ApiKey.READ_SHARE_GROUP_STATE_SUMMARY])
def test_share_state_requests_are_brokers_only(setup, api_key: ApiKey) -> None:
    authorizer, _, _ = setup
    fields = {"partition": 3, "state_epoch": 1, "leader_epoch": 0, "start_offset": 0, "state_batches": []}
    wanted = {ApiKey.INITIALIZE_SHARE_GROUP_STATE: ("partition", "state_epoch", "start_offset"),
              ApiKey.READ_SHARE_GROUP_STATE: ("partition", "leader_epoch"),
              ApiKey.WRITE_SHARE_GROUP_STATE: tuple(fields),
              ApiKey.DELETE_SHARE_GROUP_STATE: ("partition",),
              ApiKey.READ_SHARE_GROUP_STATE_SUMMARY: ("partition", "leader_epoch")}[api_key]
    partition = {name: fields[name] for name in wanted}
    req = request(api_key, 0, {"group_id": "g", "topics": [{"topic_id": TOPIC_ID, "partitions": [partition]}]})
    verdict = check(setup, api_key, 0, req)
    assert isinstance(verdict, Deny)
    [result] = wire(api_key, 0, verdict.body).results
    assert (result.partitions[0].partition, result.partitions[0].error_code) == (3, E.CLUSTER_AUTHORIZATION_FAILED)
    authorizer.add([allow(ResourceType.CLUSTER, "kafka-cluster", AclOperation.CLUSTER_ACTION, principal="User:broker")])
    assert check(setup, api_key, 0, req, principal="User:broker") is None


def test_share_group_describe_hides_groups_with_topics_it_may_not_see(setup) -> None:
    authorizer, _, _ = setup
    authorizer.add([allow(ResourceType.GROUP, "g", AclOperation.DESCRIBE, pattern=PatternType.PREFIXED),
                    allow(ResourceType.TOPIC, "orders", AclOperation.DESCRIBE)])
    req = request(ApiKey.SHARE_GROUP_DESCRIBE, 1, {"group_ids": ["g1", "g2", "g3", "other"],
                                                   "include_authorized_operations": False})
    verdict = check(setup, ApiKey.SHARE_GROUP_DESCRIBE, 1, req)
    assert isinstance(verdict, Partial)

    def group(gid: str, subscribed: list[str], *topics: tuple[uuid.UUID, str]) -> dict[str, Any]:
        return {"error_code": 0, "error_message": None, "group_id": gid, "group_state": "Stable", "group_epoch": 3,
                "assignment_epoch": 3, "assignor_name": "simple", "authorized_operations": -2147483648,
                "members": [{"member_id": "m", "rack_id": None, "member_epoch": 3, "client_id": "c",
                             "client_host": "h", "subscribed_topic_names": subscribed,
                             "assignment": {"topic_partitions": [{"topic_id": tid, "topic_name": name,
                                                                  "partitions": [0]} for tid, name in topics]}}]}

    handled = Obj(throttle_time_ms=0, groups=[group("g1", ["orders"], (TOPIC_ID, "orders")),
                                              group("g2", ["orders"], (SECRET_ID, "secret")),
                                              group("g3", ["orders", "secret"], (TOPIC_ID, "orders"))])
    by_id = {g.group_id: g for g in wire(ApiKey.SHARE_GROUP_DESCRIBE, 1, verdict.merge(handled)).groups}
    assert by_id["g1"].error_code == 0 and by_id["g1"].members[0].subscribed_topic_names == ["orders"]
    for gid in ("g2", "g3"):  # neither an assigned nor a subscribed name leaks
        assert (by_id[gid].error_code, list(by_id[gid].members)) == (E.TOPIC_AUTHORIZATION_FAILED, [])
    assert by_id["other"].error_code == E.GROUP_AUTHORIZATION_FAILED


def test_describe_share_group_offsets_leaves_out_topics_it_may_not_see(setup) -> None:
    authorizer, _, _ = setup
    authorizer.add([allow(ResourceType.GROUP, "g", AclOperation.DESCRIBE),
                    allow(ResourceType.TOPIC, "orders", AclOperation.DESCRIBE)])
    req = request(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, 1, {"groups": [
        {"group_id": "g", "topics": None}, {"group_id": "other", "topics": None}]})
    verdict = check(setup, ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, 1, req)
    assert isinstance(verdict, Partial)

    def partitions(start: int) -> list[dict[str, Any]]:
        return [{"partition_index": 0, "start_offset": start, "leader_epoch": 0, "lag": 1, "error_code": 0,
                 "error_message": None}]

    handled = Obj(throttle_time_ms=0, groups=[{"group_id": "g", "error_code": 0, "error_message": None, "topics": [
        {"topic_name": "orders", "topic_id": TOPIC_ID, "partitions": partitions(5)},
        {"topic_name": "secret", "topic_id": SECRET_ID, "partitions": partitions(7)}]}])
    by_id = {g.group_id: g for g in wire(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, 1, verdict.merge(handled)).groups}
    assert [t.topic_name for t in by_id["g"].topics] == ["orders"]
    assert by_id["other"].error_code == E.GROUP_AUTHORIZATION_FAILED
    named = request(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, 1, {"groups": [
        {"group_id": "g", "topics": [{"topic_name": "secret", "partitions": [0]}]}]})
    verdict = check(setup, ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, 1, named)
    assert isinstance(verdict, Partial) and list(verdict.request.groups[0].topics) == []
    answer = wire(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, 1, verdict.merge(Obj(throttle_time_ms=0, groups=[
        {"group_id": "g", "error_code": 0, "error_message": None, "topics": []}])))
    assert answer.groups[0].topics[0].partitions[0].error_code == E.TOPIC_AUTHORIZATION_FAILED


@pytest.mark.parametrize(("api_key", "group_op"), [(ApiKey.ALTER_SHARE_GROUP_OFFSETS, AclOperation.READ),
                                                   (ApiKey.DELETE_SHARE_GROUP_OFFSETS, AclOperation.DELETE)])
def test_altering_and_deleting_share_group_offsets(setup, api_key: ApiKey, group_op: AclOperation) -> None:
    authorizer, _, _ = setup
    if api_key == ApiKey.ALTER_SHARE_GROUP_OFFSETS:
        topics = [{"topic_name": n, "partitions": [{"partition_index": 0, "start_offset": 0}]}
                  for n in ("orders", "secret")]
    else:
        topics = [{"topic_name": n} for n in ("orders", "secret")]
    req = request(api_key, 0, {"group_id": "g", "topics": topics})
    refused = check(setup, api_key, 0, req)
    assert isinstance(refused, Deny) and wire(api_key, 0, refused.body).error_code == E.GROUP_AUTHORIZATION_FAILED
    authorizer.add([allow(ResourceType.GROUP, "g", group_op), allow(ResourceType.TOPIC, "orders", AclOperation.READ)])
    verdict = check(setup, api_key, 0, req)
    assert isinstance(verdict, Partial) and [t.topic_name for t in verdict.request.topics] == ["orders"]
    answer = wire(api_key, 0, verdict.merge(Obj(throttle_time_ms=0, error_code=0, error_message=None,
                                                responses=[])))
    [denied] = answer.responses
    code = denied.partitions[0].error_code if api_key == ApiKey.ALTER_SHARE_GROUP_OFFSETS else denied.error_code
    assert (denied.topic_name, code) == ("secret", E.TOPIC_AUTHORIZATION_FAILED)
