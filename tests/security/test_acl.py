"""Tests for broker.security.acl: Kafka's ACL decisions, filters, admin APIs over the wire codecs,
records, the session cache and the per-API check table."""

from __future__ import annotations

import json
from typing import Any

import pytest

import broker.security.acl as acl_module
from broker.security.acl import (
    API_ACL_CHECKS,
    CLUSTER_NAME,
    SUPPORTED_OPERATIONS,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    Authorizer,
    CheckScope,
    PatternType,
    ResourceType,
    describe_acls_resources,
    parse_principal,
    parse_super_users,
    validate_binding,
)
from protocol.api import APIS, ApiKey
from protocol.error_codes import ErrorCode

Op, RT, PT, Perm = AclOperation, ResourceType, PatternType, AclPermissionType
TOPIC, GROUP, CLUSTER = RT.TOPIC, RT.GROUP, RT.CLUSTER
ALLOW, DENY = Perm.ALLOW, Perm.DENY
LIT, PRE = PT.LITERAL, PT.PREFIXED


def b(name: str, op: AclOperation = Op.READ, perm: AclPermissionType = ALLOW, *, rt: ResourceType = TOPIC,
      pt: PatternType = LIT, principal: str = "User:alice", host: str = "*") -> AclBinding:
    return AclBinding(rt, name, pt, principal, host, op, perm)


def test_codes_are_kafkas() -> None:
    assert [int(x) for x in (RT.TOPIC, RT.GROUP, RT.CLUSTER, RT.TRANSACTIONAL_ID, RT.DELEGATION_TOKEN, RT.USER)] == \
        [2, 3, 4, 5, 6, 7]
    assert [int(x) for x in (PT.ANY, PT.MATCH, PT.LITERAL, PT.PREFIXED)] == [1, 2, 3, 4]
    assert [op.name for op in Op] == ["UNKNOWN", "ANY", "ALL", "READ", "WRITE", "CREATE", "DELETE", "ALTER",
                                      "DESCRIBE", "CLUSTER_ACTION", "DESCRIBE_CONFIGS", "ALTER_CONFIGS",
                                      "IDEMPOTENT_WRITE", "CREATE_TOKENS", "DESCRIBE_TOKENS"]
    assert [int(x) for x in (Perm.ANY, Perm.DENY, Perm.ALLOW)] == [1, 2, 3]
    assert Op.from_code(99) is Op.UNKNOWN and RT.from_code(-1) is RT.UNKNOWN and Perm.from_code(7) is Perm.UNKNOWN


# ---------------------------------------------------------------------------
# decisions
# ---------------------------------------------------------------------------

ALICE, BOB = "User:alice", "User:bob"

DECISIONS: list[tuple[str, list[AclBinding], tuple[str, str, AclOperation, ResourceType, str], bool]] = [
    ("literal allow", [b("orders")], (ALICE, "10.0.0.1", Op.READ, TOPIC, "orders"), True),
    ("literal is exact", [b("orders")], (ALICE, "10.0.0.1", Op.READ, TOPIC, "orders-eu"), False),
    ("literal is not a prefix", [b("ord")], (ALICE, "10.0.0.1", Op.READ, TOPIC, "orders"), False),
    ("other operation", [b("orders")], (ALICE, "h", Op.WRITE, TOPIC, "orders"), False),
    ("other principal", [b("orders")], (BOB, "h", Op.READ, TOPIC, "orders"), False),
    ("principals are case-sensitive", [b("orders")], ("User:Alice", "h", Op.READ, TOPIC, "orders"), False),
    ("other resource type", [b("orders", rt=GROUP)], (ALICE, "h", Op.READ, TOPIC, "orders"), False),
    ("wildcard name", [b("*")], (ALICE, "h", Op.READ, TOPIC, "anything"), True),
    ("wildcard name, other type", [b("*", rt=GROUP)], (ALICE, "h", Op.READ, TOPIC, "anything"), False),
    ("a topic named *", [b("*")], (ALICE, "h", Op.READ, TOPIC, "*"), True),
    ("prefixed", [b("ord", pt=PRE)], (ALICE, "h", Op.READ, TOPIC, "orders"), True),
    ("prefixed, whole name", [b("orders", pt=PRE)], (ALICE, "h", Op.READ, TOPIC, "orders"), True),
    ("prefixed, longer than the name", [b("orders-", pt=PRE)], (ALICE, "h", Op.READ, TOPIC, "orders"), False),
    ("prefixed * is literal text", [b("*", pt=PRE)], (ALICE, "h", Op.READ, TOPIC, "orders"), False),
    ("wildcard principal", [b("orders", principal="User:*")], (BOB, "h", Op.READ, TOPIC, "orders"), True),
    ("deny wins over allow", [b("orders"), b("orders", perm=DENY)], (ALICE, "h", Op.READ, TOPIC, "orders"), False),
    ("prefixed deny wins over literal allow", [b("orders"), b("o", perm=DENY, pt=PRE)],
     (ALICE, "h", Op.READ, TOPIC, "orders"), False),
    ("wildcard deny wins", [b("orders"), b("*", perm=DENY)], (ALICE, "h", Op.READ, TOPIC, "orders"), False),
    ("deny for everyone wins", [b("orders"), b("orders", perm=DENY, principal="User:*")],
     (ALICE, "h", Op.READ, TOPIC, "orders"), False),
    ("deny of another operation", [b("orders"), b("orders", Op.WRITE, DENY)],
     (ALICE, "h", Op.READ, TOPIC, "orders"), True),
    ("deny ALL denies everything", [b("orders", Op.ALL), b("orders", Op.ALL, DENY)],
     (ALICE, "h", Op.DESCRIBE, TOPIC, "orders"), False),
    ("allow ALL allows everything", [b("orders", Op.ALL)], (ALICE, "h", Op.DELETE, TOPIC, "orders"), True),
    ("READ implies DESCRIBE", [b("orders", Op.READ)], (ALICE, "h", Op.DESCRIBE, TOPIC, "orders"), True),
    ("WRITE implies DESCRIBE", [b("orders", Op.WRITE)], (ALICE, "h", Op.DESCRIBE, TOPIC, "orders"), True),
    ("DELETE implies DESCRIBE", [b("orders", Op.DELETE)], (ALICE, "h", Op.DESCRIBE, TOPIC, "orders"), True),
    ("ALTER implies DESCRIBE", [b("orders", Op.ALTER)], (ALICE, "h", Op.DESCRIBE, TOPIC, "orders"), True),
    ("CREATE does not imply DESCRIBE", [b("orders", Op.CREATE)], (ALICE, "h", Op.DESCRIBE, TOPIC, "orders"), False),
    ("DESCRIBE does not imply READ", [b("orders", Op.DESCRIBE)], (ALICE, "h", Op.READ, TOPIC, "orders"), False),
    ("ALTER_CONFIGS implies DESCRIBE_CONFIGS", [b("orders", Op.ALTER_CONFIGS)],
     (ALICE, "h", Op.DESCRIBE_CONFIGS, TOPIC, "orders"), True),
    ("ALTER_CONFIGS does not imply ALTER", [b("orders", Op.ALTER_CONFIGS)], (ALICE, "h", Op.ALTER, TOPIC, "orders"),
     False),
    ("a DENY of READ does not deny DESCRIBE", [b("orders", Op.ALL), b("orders", Op.READ, DENY)],
     (ALICE, "h", Op.DESCRIBE, TOPIC, "orders"), True),
    ("a DENY of ALTER_CONFIGS does not deny DESCRIBE_CONFIGS", [b("orders", Op.ALL), b("orders", Op.ALTER_CONFIGS, DENY)],
     (ALICE, "h", Op.DESCRIBE_CONFIGS, TOPIC, "orders"), True),
    ("host matches", [b("orders", host="10.0.0.1")], (ALICE, "10.0.0.1", Op.READ, TOPIC, "orders"), True),
    ("host differs", [b("orders", host="10.0.0.1")], (ALICE, "10.0.0.2", Op.READ, TOPIC, "orders"), False),
    ("IPv6 spellings are one host", [b("orders", host="::1")], (ALICE, "0:0:0:0:0:0:0:1", Op.READ, TOPIC, "orders"),
     True),
    ("an IPv4-mapped peer is its IPv4 address", [b("orders", host="10.0.0.1")],
     (ALICE, "::ffff:10.0.0.1", Op.READ, TOPIC, "orders"), True),
    ("host deny only from that host", [b("orders"), b("orders", perm=DENY, host="10.9.9.9")],
     (ALICE, "10.0.0.1", Op.READ, TOPIC, "orders"), True),
    ("cluster", [b(CLUSTER_NAME, Op.CREATE, rt=CLUSTER)], (ALICE, "h", Op.CREATE, CLUSTER, CLUSTER_NAME), True),
]


@pytest.mark.parametrize(("bindings", "request_", "expected"), [d[1:] for d in DECISIONS], ids=[d[0] for d in DECISIONS])
def test_decisions(bindings: list[AclBinding], request_: tuple[str, str, AclOperation, ResourceType, str],
                   expected: bool) -> None:
    principal, host, op, rt, name = request_
    has_acls = any(x.matches_resource(rt, name) for x in bindings)
    for everyone in (False, True):  # the default applies only to a resource without any ACL
        want = expected if has_acls or not everyone else True
        authorizer = Authorizer(allow_everyone_if_no_acl_found=everyone)
        authorizer.add(bindings)
        assert authorizer.authorize(*request_) is want
        assert authorizer.session(principal, host).authorize(op, rt, name) is want


def test_no_acl_for_the_resource_uses_the_default_both_ways() -> None:
    for everyone in (False, True):
        authorizer = Authorizer(allow_everyone_if_no_acl_found=everyone)
        assert authorizer.authorize(ALICE, "h", Op.READ, TOPIC, "orders") is everyone
        authorizer.add([b("payments")])                     # another resource's ACL changes nothing
        assert authorizer.authorize(ALICE, "h", Op.READ, TOPIC, "orders") is everyone
        authorizer.add([b("orders", principal=BOB)])         # an ACL on it for someone else: no
        assert authorizer.authorize(ALICE, "h", Op.READ, TOPIC, "orders") is False
        authorizer.add([b("pay", Op.WRITE, pt=PRE, principal=BOB)])
        assert authorizer.authorize(ALICE, "h", Op.READ, TOPIC, "payroll") is False


def test_super_users_are_always_allowed() -> None:
    authorizer = Authorizer(super_users="User:admin; User:ops")
    authorizer.add([b("orders", Op.ALL, DENY, principal="User:*")])
    assert authorizer.authorize("User:admin", "h", Op.DELETE, TOPIC, "orders")
    assert authorizer.authorize("User:ops", "h", Op.ALTER, CLUSTER, CLUSTER_NAME)
    assert not authorizer.authorize(ALICE, "h", Op.READ, TOPIC, "orders")
    assert authorizer.session("User:ops", "h").authorize(Op.READ, TOPIC, "orders")


def test_parse_super_users_and_principals() -> None:
    assert parse_super_users(" User:admin ;;User:ops;") == {"User:admin", "User:ops"}
    assert parse_super_users(["User:a"]) == {"User:a"} and parse_super_users(None) == frozenset()
    with pytest.raises(ValueError, match=r"super\.users"):
        parse_super_users("User:admin;ops")
    assert parse_principal("User:CN=a:b") == ("User", "CN=a:b")
    for bad in ("alice", ":alice", "User:", ""):
        with pytest.raises(ValueError):
            parse_principal(bad)


def test_authorize_any_follows_kafkas_authorize_by_resource_type() -> None:
    def any_write(*bindings: AclBinding, everyone: bool = False, principal: str = ALICE) -> bool:
        authorizer = Authorizer(super_users="User:admin", allow_everyone_if_no_acl_found=everyone)
        authorizer.add(bindings)
        return authorizer.authorize_any(principal, "10.0.0.1", Op.WRITE, TOPIC)

    assert not any_write()
    assert any_write(everyone=True)  # the made-up name has no ACL
    assert any_write(principal="User:admin")
    assert any_write(b("orders", Op.WRITE))
    assert any_write(b("ord", Op.WRITE, pt=PRE))
    assert any_write(b("orders", Op.ALL))
    assert any_write(b("*", Op.WRITE))
    assert any_write(b("orders", Op.WRITE, principal="User:*"))
    assert not any_write(b("orders", Op.READ))
    assert not any_write(b("orders", Op.WRITE, principal=BOB))
    assert not any_write(b("orders", Op.WRITE, host="10.0.0.2"))
    assert not any_write(b("orders", Op.WRITE, rt=GROUP))
    assert not any_write(b("orders", Op.WRITE), b("orders", Op.WRITE, DENY))
    assert not any_write(b("orders", Op.WRITE), b("or", Op.WRITE, DENY, pt=PRE))
    assert not any_write(b("ord", Op.WRITE, pt=PRE), b("o", Op.ALL, DENY, pt=PRE))
    assert not any_write(b("orders", Op.WRITE), b("*", Op.WRITE, DENY))
    assert any_write(b("orders", Op.WRITE), b("payments", Op.WRITE, DENY))
    assert any_write(b("orders", Op.WRITE), b("ordersx", Op.WRITE, DENY, pt=PRE))  # not a prefix of it
    assert any_write(b("orders", Op.WRITE), b("orders", Op.WRITE, DENY, pt=PRE), b("payments", Op.WRITE))


def test_authorized_operations_bit_field() -> None:
    authorizer = Authorizer(super_users="User:admin")
    authorizer.add([b("orders", Op.READ), b("orders", Op.ALTER_CONFIGS)])
    bits = authorizer.authorized_operations(ALICE, "h", TOPIC, "orders")
    assert bits == sum(1 << op for op in (Op.READ, Op.DESCRIBE, Op.ALTER_CONFIGS, Op.DESCRIBE_CONFIGS))
    assert authorizer.authorized_operations("User:admin", "h", GROUP, "g") == sum(
        1 << op for op in SUPPORTED_OPERATIONS[GROUP])
    assert authorizer.authorized_operations(BOB, "h", TOPIC, "orders") == 0


# ---------------------------------------------------------------------------
# the hot path and the cache
# ---------------------------------------------------------------------------


def test_a_decision_looks_only_at_the_bindings_that_can_match(monkeypatch: pytest.MonkeyPatch) -> None:
    authorizer = Authorizer()
    authorizer.add(b(f"topic-{i}", principal=f"User:u{i}") for i in range(5000))
    authorizer.add(b("x" * n, pt=PRE) for n in range(1, 40))  # 39 prefix lengths in use
    authorizer.add([b("topic-4", Op.WRITE), b("topic-", Op.DESCRIBE, pt=PRE), b("*", Op.CREATE)])
    looked_at = []
    real = acl_module._grants
    monkeypatch.setattr(acl_module, "_grants", lambda rule, op: looked_at.append(rule) or real(rule, op))
    assert authorizer.authorize(ALICE, "h", Op.WRITE, TOPIC, "topic-4")
    # topic-4's literal ALLOW, the topic- prefix and the * wildcard (u4's binding fails on its principal),
    # never the 5000 other topics' or the 39 other prefixes'
    assert len(looked_at) == 3


def test_the_session_cache_follows_acl_changes() -> None:
    authorizer = Authorizer()
    session = authorizer.session(ALICE, "10.0.0.1")
    assert not session.authorize(Op.READ, TOPIC, "orders")
    allow = b("orders")
    assert authorizer.add([allow]) == [allow]
    assert session.authorize(Op.READ, TOPIC, "orders")       # a stale cache would still say no
    assert authorizer.add([allow]) == []                     # nothing new: no invalidation needed
    deny = b("ord", perm=DENY, pt=PRE)
    authorizer.add([deny])
    assert not session.authorize(Op.READ, TOPIC, "orders")
    assert authorizer.remove([deny, deny]) == [deny]
    assert session.authorize(Op.READ, TOPIC, "orders")
    authorizer.remove([allow])
    assert not session.authorize(Op.READ, TOPIC, "orders")
    authorizer.set_config(allow_everyone_if_no_acl_found=True)
    assert session.authorize(Op.READ, TOPIC, "orders")
    authorizer.set_config(super_users="User:alice")
    authorizer.add([b("orders", perm=DENY)])
    assert session.authorize(Op.READ, TOPIC, "orders") and session.authorize_cluster(Op.ALTER)


def test_the_session_cache_is_bounded() -> None:
    authorizer = Authorizer()
    authorizer.add([b("t-1")])
    session = authorizer.session(ALICE, "h", max_entries=8)
    for i in range(100):
        assert session.authorize(Op.READ, TOPIC, f"t-{i}") is (i == 1)
    assert len(session._cache) == 8
    assert session.authorize(Op.READ, TOPIC, "t-1")
    with pytest.raises(ValueError):
        authorizer.session(ALICE, "h", max_entries=0)


def test_prefix_index_survives_removals() -> None:
    authorizer = Authorizer()
    p1, p2, p3 = b("ab", pt=PRE), b("ab", Op.WRITE, pt=PRE), b("abc", pt=PRE)
    authorizer.add([p1, p2, p3])
    authorizer.remove([p1])
    assert authorizer.authorize(ALICE, "h", Op.WRITE, TOPIC, "abz") and not authorizer.authorize(
        ALICE, "h", Op.READ, TOPIC, "abz")
    authorizer.remove([p2])
    assert authorizer.authorize(ALICE, "h", Op.READ, TOPIC, "abcd") and not authorizer.authorize(
        ALICE, "h", Op.WRITE, TOPIC, "abz")
    authorizer.remove([p3])
    assert len(authorizer) == 0 and not authorizer._prefixed and not authorizer._prefix_lengths[TOPIC]
    authorizer.replace_all([p3, b("x")])
    assert set(authorizer.acls()) == {p3, b("x")}


# ---------------------------------------------------------------------------
# filters (DescribeAcls / DeleteAcls)
# ---------------------------------------------------------------------------

STORED = {
    "lit": b("orders"), "wild": b("*"), "pre": b("ord", pt=PRE), "pre-long": b("orders-", pt=PRE),
    "lit-short": b("ord"), "group": b("orders", rt=GROUP), "bob-write": b("orders", Op.WRITE, DENY, principal=BOB,
                                                                           host="10.0.0.1"),
}

FILTERS: list[tuple[str, AclBindingFilter, set[str]]] = [
    ("everything", AclBindingFilter(), set(STORED)),
    ("type", AclBindingFilter(GROUP), {"group"}),
    ("ANY pattern, name is exact", AclBindingFilter(TOPIC, "orders"), {"lit", "bob-write"}),
    ("ANY pattern, name of a prefix", AclBindingFilter(TOPIC, "ord"), {"pre", "lit-short"}),
    ("MATCH", AclBindingFilter(TOPIC, "orders", PT.MATCH), {"lit", "wild", "pre", "bob-write"}),
    ("MATCH, any type", AclBindingFilter(RT.ANY, "orders", PT.MATCH), {"lit", "wild", "pre", "bob-write", "group"}),
    ("MATCH without a name", AclBindingFilter(TOPIC, None, PT.MATCH), set(STORED) - {"group"}),
    ("LITERAL", AclBindingFilter(TOPIC, None, LIT), {"lit", "wild", "lit-short", "bob-write"}),
    ("LITERAL *", AclBindingFilter(TOPIC, "*", LIT), {"wild"}),
    ("PREFIXED", AclBindingFilter(TOPIC, "ord", PRE), {"pre"}),
    ("principal", AclBindingFilter(principal=BOB), {"bob-write"}),
    ("principal is exact, not a wildcard", AclBindingFilter(principal="User:*"), set()),
    ("host", AclBindingFilter(host="10.0.0.1"), {"bob-write"}),
    ("host * is literal", AclBindingFilter(host="*"), set(STORED) - {"bob-write"}),
    ("operation, no implication", AclBindingFilter(operation=Op.DESCRIBE), set()),
    ("operation", AclBindingFilter(operation=Op.WRITE), {"bob-write"}),
    ("permission", AclBindingFilter(permission_type=DENY), {"bob-write"}),
]


@pytest.mark.parametrize(("acl_filter", "expected"), [f[1:] for f in FILTERS], ids=[f[0] for f in FILTERS])
def test_filters(acl_filter: AclBindingFilter, expected: set[str]) -> None:
    authorizer = Authorizer()
    authorizer.add(STORED.values())
    assert set(authorizer.acls(acl_filter)) == {STORED[k] for k in expected}


@pytest.mark.parametrize(("acl_filter", "message"), [
    (AclBindingFilter(RT.UNKNOWN), "Unknown patternFilter."),
    (AclBindingFilter(pattern_type=PT.UNKNOWN), "Unknown patternFilter."),
    (AclBindingFilter(operation=Op.UNKNOWN), "Unknown entryFilter."),
    (AclBindingFilter(permission_type=Perm.UNKNOWN), "Unknown entryFilter."),
])
def test_unknown_filter_fields_are_invalid(acl_filter: AclBindingFilter, message: str) -> None:
    assert acl_filter.validation_error() == message
    assert AclBindingFilter().validation_error() is None


# ---------------------------------------------------------------------------
# admin APIs over the wire codecs
# ---------------------------------------------------------------------------


def wire(api: ApiKey, version: int, side: str, body: dict[str, Any]) -> Any:
    message = getattr(APIS[api], side)
    return message.decode(version, message.encode(version, body))


def creation(name: str, rt: int = 2, pt: int = 3, principal: str = "User:alice", host: str = "*", op: int = 3,
             perm: int = 3) -> dict[str, Any]:
    return {"resource_type": rt, "resource_name": name, "resource_pattern_type": pt, "principal": principal,
            "host": host, "operation": op, "permission_type": perm}


INVALID_CREATIONS = [
    (creation("t", rt=0), "Invalid resourceType UNKNOWN"),
    (creation("t", rt=1), "Invalid resourceType ANY"),
    (creation("t", rt=99), "Invalid resourceType UNKNOWN"),
    (creation("t", pt=0), "Invalid patternType UNKNOWN"),
    (creation("t", pt=1), "Invalid patternType ANY"),
    (creation("t", pt=2), "Invalid patternType MATCH"),
    (creation("t", op=0), "Invalid operation UNKNOWN"),
    (creation("t", op=1), "Invalid operation ANY"),
    (creation("t", op=15), "Invalid operation UNKNOWN"),
    (creation("t", perm=1), "Invalid permissionType ANY"),
    (creation("t", perm=0), "Invalid permissionType UNKNOWN"),
    (creation("my-cluster", rt=4), "The only valid name for the CLUSTER resource is kafka-cluster"),
    (creation(""), "Invalid empty resource name"),
    (creation("t", principal="alice"), "Could not parse principal"),
    (creation("t", principal="User:"), "Could not parse principal"),
]


@pytest.mark.parametrize("version", [1, 2, 3])
def test_create_acls(version: int) -> None:
    authorizer = Authorizer()
    creations = [creation("orders"), creation("orders"), creation("kafka-cluster", rt=4, op=7),
                 *(c for c, _ in INVALID_CREATIONS)]
    request = wire(ApiKey.CREATE_ACLS, version, "request", {"creations": creations})
    results = authorizer.create([AclBinding.from_creation(c) for c in request["creations"]])
    response = wire(ApiKey.CREATE_ACLS, version, "response", {"throttle_time_ms": 0, "results": [
        {"error_code": int(code), "error_message": message} for code, message in results]})
    got = [(r["error_code"], r["error_message"]) for r in response["results"]]
    assert got[:3] == [(0, None)] * 3  # creating an existing binding succeeds
    for (code, message), (_, expected) in zip(got[3:], INVALID_CREATIONS, strict=True):
        assert code == ErrorCode.INVALID_REQUEST and message.startswith(expected)
    assert set(authorizer.acls()) == {b("orders"), b(CLUSTER_NAME, Op.ALTER, rt=CLUSTER)}


def test_plan_create_changes_nothing() -> None:
    authorizer = Authorizer()
    results, to_add = authorizer.plan_create([b("a"), b("a"), b("", Op.READ)])
    assert [code for code, _ in results] == [0, 0, ErrorCode.INVALID_REQUEST] and to_add == [b("a")]
    assert len(authorizer) == 0 and authorizer.generation == 0


@pytest.mark.parametrize("version", [1, 2, 3])
def test_describe_acls_groups_by_resource(version: int) -> None:
    authorizer = Authorizer()
    authorizer.add([b("orders"), b("orders", Op.WRITE, DENY, host="10.0.0.1"), b("ord", pt=PRE), b("x", rt=GROUP)])
    request = wire(ApiKey.DESCRIBE_ACLS, version, "request", {
        "resource_type_filter": 2, "resource_name_filter": "orders", "pattern_type_filter": 2,
        "principal_filter": None, "host_filter": None, "operation": 1, "permission_type": 1})
    acl_filter = AclBindingFilter.from_request(request)
    assert acl_filter.validation_error() is None
    response = wire(ApiKey.DESCRIBE_ACLS, version, "response", {
        "throttle_time_ms": 0, "error_code": 0, "error_message": None,
        "resources": describe_acls_resources(authorizer.acls(acl_filter))})
    got = {(r["resource_type"], r["resource_name"], r["pattern_type"]):
           [(a["principal"], a["host"], a["operation"], a["permission_type"]) for a in r["acls"]]
           for r in response["resources"]}
    assert got == {(2, "orders", 3): [("User:alice", "*", 3, 3), ("User:alice", "10.0.0.1", 4, 2)],
                   (2, "ord", 4): [("User:alice", "*", 3, 3)]}


@pytest.mark.parametrize("version", [1, 2, 3])
def test_delete_acls(version: int) -> None:
    authorizer = Authorizer()
    authorizer.add([b("orders"), b("orders", Op.WRITE), b("payments")])
    any_filter = {"resource_type_filter": 1, "resource_name_filter": None, "pattern_type_filter": 1,
                  "principal_filter": None, "host_filter": None, "operation": 1, "permission_type": 1}
    filters = [{**any_filter, "resource_name_filter": "orders"}, {**any_filter, "operation": 3},
               {**any_filter, "operation": 0}]
    request = wire(ApiKey.DELETE_ACLS, version, "request", {"filters": filters})
    generation = authorizer.generation
    results = authorizer.delete([AclBindingFilter.from_request(f) for f in request["filters"]])
    response = wire(ApiKey.DELETE_ACLS, version, "response", {"throttle_time_ms": 0, "filter_results": [
        {"error_code": int(code), "error_message": message, "matching_acls": [m.deleted_entry() for m in matched]}
        for code, message, matched in results]})
    got = [(r["error_code"], r["error_message"], sorted((m["resource_name"], m["operation"]) for m in r["matching_acls"]))
           for r in response["filter_results"]]
    assert got == [(0, None, [("orders", 3), ("orders", 4)]),
                   (0, None, [("orders", 3), ("payments", 3)]),  # orders READ is listed by both filters
                   (ErrorCode.INVALID_REQUEST, "Unknown entryFilter.", [])]
    assert authorizer.acls() == [] and authorizer.generation == generation + 1


# ---------------------------------------------------------------------------
# records
# ---------------------------------------------------------------------------


def test_records_round_trip_with_one_key_per_binding() -> None:
    bindings = [b("orders"), b("orders", Op.WRITE), b("a/b %c", rt=GROUP, pt=PRE), b("orders", host="10.0.0.1"),
                b(CLUSTER_NAME, Op.ALTER, DENY, rt=CLUSTER, principal="User:*")]
    keys = [x.key() for x in bindings]
    assert len(set(keys)) == len(keys)
    assert keys[0].startswith("acls/TOPIC/LITERAL/orders/") and keys[2].startswith("acls/GROUP/PREFIXED/a%2Fb%20%25c/")
    assert keys[0] == b("orders").key()  # stable
    for x in bindings:
        assert AclBinding.decode(x.encode()) == x
    assert json.loads(bindings[0].encode())["operation"] == "READ"


@pytest.mark.parametrize("data", [
    b"", b"null", b"[]", b"{}", b"{bad json",
    json.dumps({**json.loads(b("t").encode()), "operation": "FLY"}).encode(),
    json.dumps({**json.loads(b("t").encode()), "pattern_type": "MATCH"}).encode(),
    json.dumps({**json.loads(b("t").encode()), "resource_name": 5}).encode(),
    json.dumps({**json.loads(b("t").encode()), "principal": "nobody"}).encode(),
    json.dumps({**json.loads(b("t").encode()), "resource_type": None}).encode(),
])
def test_malformed_records_are_refused(data: bytes) -> None:
    with pytest.raises(ValueError, match="malformed ACL record"):
        AclBinding.decode(data)


def test_validate_binding_accepts_good_ones() -> None:
    assert validate_binding(b("t")) is None and validate_binding(b("t", Op.ALL, DENY, pt=PRE)) is None


# ---------------------------------------------------------------------------
# the per-API table
# ---------------------------------------------------------------------------

_ERROR_OF = {TOPIC: ErrorCode.TOPIC_AUTHORIZATION_FAILED, GROUP: ErrorCode.GROUP_AUTHORIZATION_FAILED,
             CLUSTER: ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
             RT.TRANSACTIONAL_ID: ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED}


def test_api_checks_are_consistent() -> None:
    for api, checks in API_ACL_CHECKS.items():
        assert api in APIS and checks
        for check in checks:
            for c in (check, check.alternative):
                if c is None:
                    continue
                assert c.operation in SUPPORTED_OPERATIONS[c.resource_type], (api, c)
                assert (c.error is None) == (c.scope is CheckScope.FILTER or c is check.alternative
                                             or "authorized_operations" in c.when), (api, c)
                # the error names the resource type, except a follower Fetch without CLUSTER_ACTION
                if c.error is not None and not (api == ApiKey.FETCH and c.resource_type is CLUSTER):
                    assert c.error == _ERROR_OF[c.resource_type], (api, c)
                if c.resource_type is CLUSTER and not c.any_name:
                    assert c.name == CLUSTER_NAME
    assert {(c.operation, c.resource_type) for c in API_ACL_CHECKS[ApiKey.PRODUCE]} == {
        (Op.WRITE, RT.TRANSACTIONAL_ID), (Op.WRITE, TOPIC)}
    assert [(c.operation, c.resource_type) for c in API_ACL_CHECKS[ApiKey.JOIN_GROUP]] == [(Op.READ, GROUP)]
    idempotent = API_ACL_CHECKS[ApiKey.INIT_PRODUCER_ID][1]
    assert idempotent.operation is Op.IDEMPOTENT_WRITE and idempotent.alternative is not None
    assert idempotent.alternative.any_name and idempotent.alternative.operation is Op.WRITE
    for api in (ApiKey.API_VERSIONS, ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE, ApiKey.DESCRIBE_CLUSTER):
        assert api not in API_ACL_CHECKS
