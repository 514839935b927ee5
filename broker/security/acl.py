"""Kafka's ACL model and the authorizer core (pure, in memory; persistence goes through records).

Model (codes as on the wire, from Kafka's ``ResourceType``, ``PatternType``, ``AclOperation`` and
``AclPermissionType``): an :class:`AclBinding` says that ``principal`` (``User:name``, or ``User:*``
for everyone) connecting from ``host`` (an address, or ``*``) is ALLOWed or DENYed ``operation`` on
the resources that a pattern names: LITERAL (one name, or ``*`` for every name of the type) or
PREFIXED (every name that starts with it).

Decisions (:meth:`Authorizer.authorize`) follow Kafka's ``StandardAuthorizerData``:

* principals in ``super.users`` (``User:admin;User:ops``) are always allowed;
* of the bindings whose pattern matches the resource and whose principal and host match the caller,
  any DENY of the operation (or of ALL) wins;
* otherwise an ALLOW of the operation, of ALL, or of an operation that implies it allows: READ,
  WRITE, DELETE and ALTER imply DESCRIBE; ALTER_CONFIGS implies DESCRIBE_CONFIGS (only for ALLOW:
  a DENY of READ does not deny DESCRIBE);
* when no binding at all matches the resource (whoever it is for), ``allow.everyone.if.no.acl.found``
  decides (default false); when some do but none applies to the caller, the answer is no.

Hosts are compared as addresses (``::1`` and ``0:0:0:0:0:0:0:1`` are one host, an IPv4-mapped IPv6
peer is its IPv4 address); other host strings compare as they are.

The hot path: bindings are indexed by (resource type, literal name) and by (resource type, prefix)
with the set of prefix lengths in use, so a decision costs a few dict lookups, not a scan.  Every
change bumps :attr:`Authorizer.generation`; an :class:`AuthorizationSession` (one per connection)
caches its decisions and drops them when the generation moves.

Admin APIs: :class:`AclBindingFilter` has Kafka's DescribeAcls / DeleteAcls semantics (ANY and MATCH
pattern filters, null fields match anything); :func:`validate_binding` has CreateAcls' rules (answered
with INVALID_REQUEST); :meth:`AclBinding.encode` / :meth:`AclBinding.decode` are the record stored
under :meth:`AclBinding.key`.  :data:`API_ACL_CHECKS` lists, per API, the checks Kafka's request
handlers make.
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any
from urllib.parse import quote

from protocol.api import ApiKey
from protocol.error_codes import ErrorCode
from protocol.security_types import AclOperation, AclPermissionType, PatternType, ResourceType

__all__ = [
    "ACLS_PREFIX",
    "ANONYMOUS",
    "API_ACL_CHECKS",
    "CLUSTER_NAME",
    "SUPPORTED_OPERATIONS",
    "WILDCARD",
    "WILDCARD_PRINCIPAL",
    "AclBinding",
    "AclBindingFilter",
    "AclCheck",
    "AclOperation",
    "AclPermissionType",
    "AuthorizationSession",
    "Authorizer",
    "CheckScope",
    "PatternType",
    "ResourceType",
    "describe_acls_resources",
    "parse_principal",
    "parse_super_users",
    "user_principal",
    "validate_binding",
]

WILDCARD = "*"
WILDCARD_PRINCIPAL = "User:*"
ANONYMOUS = "User:ANONYMOUS"
CLUSTER_NAME = "kafka-cluster"
ACLS_PREFIX = "acls/"


_Op = AclOperation

#: The operations each resource type supports (Kafka's ``AclEntry.supportedOperations``): the bits of
#: the ``*_authorized_operations`` fields of Metadata, DescribeGroups and DescribeCluster.
SUPPORTED_OPERATIONS: dict[ResourceType, tuple[AclOperation, ...]] = {
    ResourceType.TOPIC: (_Op.READ, _Op.WRITE, _Op.CREATE, _Op.DESCRIBE, _Op.DELETE, _Op.ALTER,
                         _Op.DESCRIBE_CONFIGS, _Op.ALTER_CONFIGS),
    ResourceType.GROUP: (_Op.READ, _Op.DESCRIBE, _Op.DELETE, _Op.DESCRIBE_CONFIGS, _Op.ALTER_CONFIGS),
    ResourceType.CLUSTER: (_Op.CREATE, _Op.CLUSTER_ACTION, _Op.DESCRIBE_CONFIGS, _Op.ALTER_CONFIGS,
                           _Op.IDEMPOTENT_WRITE, _Op.ALTER, _Op.DESCRIBE),
    ResourceType.TRANSACTIONAL_ID: (_Op.DESCRIBE, _Op.WRITE),
    ResourceType.DELEGATION_TOKEN: (_Op.DESCRIBE,),
    ResourceType.USER: (_Op.CREATE_TOKENS, _Op.DESCRIBE_TOKENS),
}

# An ALLOW of any of these grants the key operation too (StandardAuthorizerData.IMPLIES_*).
_IMPLIED_BY: dict[AclOperation, frozenset[AclOperation]] = {
    _Op.DESCRIBE: frozenset((_Op.DESCRIBE, _Op.READ, _Op.WRITE, _Op.DELETE, _Op.ALTER)),
    _Op.DESCRIBE_CONFIGS: frozenset((_Op.DESCRIBE_CONFIGS, _Op.ALTER_CONFIGS)),
}


# ---------------------------------------------------------------------------
# principals and hosts
# ---------------------------------------------------------------------------


def user_principal(name: str) -> str:
    return f"User:{name}"


def parse_principal(text: str) -> tuple[str, str]:
    """``(type, name)`` of ``Type:name`` (split at the first colon); ValueError when malformed."""
    kind, sep, name = text.partition(":")
    if not sep or not kind or not name:
        raise ValueError(f"expected a string in format principalType:principalName but got {text!r}")
    return kind, name


def parse_super_users(value: str | Iterable[str] | None) -> frozenset[str]:
    """``super.users``: ``User:admin;User:ops`` (or an iterable of principals)."""
    if value is None:
        return frozenset()
    items = value.split(";") if isinstance(value, str) else list(value)
    users = [item.strip() for item in items if item.strip()]
    for user in users:
        try:
            parse_principal(user)
        except ValueError as exc:
            raise ValueError(f"super.users: {exc}") from None
    return frozenset(users)


def _canonical_host(host: str) -> str:
    """One spelling per address, so that ACL hosts and peer addresses compare as addresses."""
    if host == WILDCARD or not host or not (host[0].isdigit() or ":" in host):
        return host
    try:
        addr = ipaddress.ip_address(host)
    except ValueError:
        return host
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        addr = addr.ipv4_mapped
    return str(addr)


# ---------------------------------------------------------------------------
# bindings and filters
# ---------------------------------------------------------------------------


def _str_field(obj: Mapping[str, Any], key: str) -> str:
    value = obj[key]
    if not isinstance(value, str):
        raise ValueError(f"{key} must be a string")
    return value


@dataclass(frozen=True, slots=True)
class AclBinding:
    """One ACL: a resource pattern and an access control entry (Kafka's ``AclBinding``)."""

    resource_type: ResourceType
    resource_name: str
    pattern_type: PatternType
    principal: str
    host: str
    operation: AclOperation
    permission_type: AclPermissionType

    @classmethod
    def from_creation(cls, creation: Mapping[str, Any]) -> AclBinding:
        """From one entry of a decoded CreateAclsRequest's ``creations``; validate with :func:`validate_binding`."""
        return cls(ResourceType.from_code(creation["resource_type"]), creation["resource_name"],
                   PatternType.from_code(creation.get("resource_pattern_type", PatternType.LITERAL)),
                   creation["principal"], creation["host"], AclOperation.from_code(creation["operation"]),
                   AclPermissionType.from_code(creation["permission_type"]))

    def matches_resource(self, resource_type: ResourceType, name: str) -> bool:
        """Whether this binding's pattern covers the resource (type and name)."""
        if resource_type is not self.resource_type:
            return False
        if self.pattern_type is PatternType.PREFIXED:
            return name.startswith(self.resource_name)
        return self.resource_name in (name, WILDCARD)

    def acl_entry(self) -> dict[str, Any]:
        """The entry's fields as DescribeAcls lists them under a resource."""
        return {"principal": self.principal, "host": self.host, "operation": int(self.operation),
                "permission_type": int(self.permission_type)}

    def deleted_entry(self) -> dict[str, Any]:
        """The binding as a DeleteAclsResponse ``matching_acls`` entry."""
        return {"error_code": 0, "error_message": None, "resource_type": int(self.resource_type),
                "resource_name": self.resource_name, "pattern_type": int(self.pattern_type),
                **self.acl_entry()}

    # -- persistence ----------------------------------------------------

    def _identity(self) -> bytes:
        parts = (self.resource_type.name, self.pattern_type.name, self.resource_name, self.principal,
                 self.host, self.operation.name, self.permission_type.name)
        return "\0".join(parts).encode()

    def key(self) -> str:
        """``acls/<TYPE>/<PATTERN>/<url-quoted name>/<hash of the binding>``: one key per distinct binding."""
        digest = hashlib.sha256(self._identity()).hexdigest()[:32]
        return (f"{ACLS_PREFIX}{self.resource_type.name}/{self.pattern_type.name}/"
                f"{quote(self.resource_name, safe='')}/{digest}")

    def encode(self) -> bytes:
        doc = {"version": 1, "resource_type": self.resource_type.name, "resource_name": self.resource_name,
               "pattern_type": self.pattern_type.name, "principal": self.principal, "host": self.host,
               "operation": self.operation.name, "permission_type": self.permission_type.name}
        return json.dumps(doc, separators=(",", ":"), sort_keys=True).encode()

    @classmethod
    def decode(cls, data: bytes) -> AclBinding:
        """The inverse of :meth:`encode`; ValueError for anything that is not a valid binding."""
        try:
            doc = json.loads(data)
            if not isinstance(doc, dict):
                raise ValueError("not an object")
            binding = cls(ResourceType.from_name(_str_field(doc, "resource_type")),
                          _str_field(doc, "resource_name"),
                          PatternType.from_name(_str_field(doc, "pattern_type")),
                          _str_field(doc, "principal"), _str_field(doc, "host"),
                          AclOperation.from_name(_str_field(doc, "operation")),
                          AclPermissionType.from_name(_str_field(doc, "permission_type")))
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"malformed ACL record: {exc}") from None
        error = validate_binding(binding)
        if error is not None:
            raise ValueError(f"malformed ACL record: {error}")
        return binding

    def __str__(self) -> str:
        return (f"{self.permission_type.name} {self.principal} from {self.host} {self.operation.name} on "
                f"{self.resource_type.name}:{self.pattern_type.name}:{self.resource_name}")


def validate_binding(binding: AclBinding) -> str | None:
    """CreateAcls' rules: None when the binding may be stored, else the INVALID_REQUEST message.

    Kafka's ``AclApis.handleCreateAcls`` and ``AclControlManager.validateNewAcl``; a principal must
    also read as ``Type:name``.
    """
    if binding.resource_type in (ResourceType.UNKNOWN, ResourceType.ANY):
        return f"Invalid resourceType {binding.resource_type.name}"
    if binding.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
        return f"Invalid patternType {binding.pattern_type.name}"
    if binding.operation in (AclOperation.UNKNOWN, AclOperation.ANY):
        return f"Invalid operation {binding.operation.name}"
    if binding.permission_type not in (AclPermissionType.ALLOW, AclPermissionType.DENY):
        return f"Invalid permissionType {binding.permission_type.name}"
    if binding.resource_type is ResourceType.CLUSTER and binding.resource_name != CLUSTER_NAME:
        return f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}"
    if not binding.resource_name:
        return "Invalid empty resource name"
    try:
        parse_principal(binding.principal)
    except ValueError as exc:
        return f"Could not parse principal: {exc}"
    return None


@dataclass(frozen=True, slots=True)
class AclBindingFilter:
    """Kafka's ``AclBindingFilter``: None (null) fields and ANY match anything.

    The pattern type MATCH selects the bindings that would apply to the named resource: LITERAL with
    that name, LITERAL ``*`` and PREFIXED ones that are a prefix of it.
    """

    resource_type: ResourceType = ResourceType.ANY
    resource_name: str | None = None
    pattern_type: PatternType = PatternType.ANY
    principal: str | None = None
    host: str | None = None
    operation: AclOperation = AclOperation.ANY
    permission_type: AclPermissionType = AclPermissionType.ANY

    @classmethod
    def from_request(cls, obj: Mapping[str, Any]) -> AclBindingFilter:
        """From a decoded DescribeAclsRequest, or one entry of a DeleteAclsRequest's ``filters``."""
        return cls(ResourceType.from_code(obj["resource_type_filter"]), obj["resource_name_filter"],
                   PatternType.from_code(obj.get("pattern_type_filter", PatternType.LITERAL)),
                   obj["principal_filter"], obj["host_filter"], AclOperation.from_code(obj["operation"]),
                   AclPermissionType.from_code(obj["permission_type"]))

    def validation_error(self) -> str | None:
        """None for a usable filter, else the INVALID_REQUEST message (UNKNOWN anywhere)."""
        if self.resource_type is ResourceType.UNKNOWN or self.pattern_type is PatternType.UNKNOWN:
            return "Unknown patternFilter."
        if self.operation is AclOperation.UNKNOWN or self.permission_type is AclPermissionType.UNKNOWN:
            return "Unknown entryFilter."
        return None

    def matches(self, binding: AclBinding) -> bool:
        """Kafka's ``AclBindingFilter.matches`` (``ResourcePatternFilter`` + ``AccessControlEntryFilter``)."""
        if self.resource_type is not ResourceType.ANY and self.resource_type is not binding.resource_type:
            return False
        pattern = self.pattern_type
        if pattern not in (PatternType.ANY, PatternType.MATCH) and pattern is not binding.pattern_type:
            return False
        if self.resource_name is not None:
            if pattern in (PatternType.ANY, binding.pattern_type):
                if self.resource_name != binding.resource_name:
                    return False
            elif binding.pattern_type is PatternType.LITERAL:
                if binding.resource_name not in (self.resource_name, WILDCARD):
                    return False
            elif not self.resource_name.startswith(binding.resource_name):
                return False
        return ((self.principal is None or self.principal == binding.principal)
                and (self.host is None or self.host == binding.host)
                and self.operation in (AclOperation.ANY, binding.operation)
                and self.permission_type in (AclPermissionType.ANY, binding.permission_type))


def describe_acls_resources(bindings: Iterable[AclBinding]) -> list[dict[str, Any]]:
    """DescribeAclsResponse ``resources``: bindings grouped by resource pattern, in first-seen order."""
    groups: dict[tuple[ResourceType, str, PatternType], list[dict[str, Any]]] = {}
    for b in bindings:
        groups.setdefault((b.resource_type, b.resource_name, b.pattern_type), []).append(b.acl_entry())
    return [{"resource_type": int(rt), "resource_name": name, "pattern_type": int(pt), "acls": acls}
            for (rt, name, pt), acls in groups.items()]


# ---------------------------------------------------------------------------
# the authorizer
# ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Rule:
    """A binding as the hot path needs it."""

    principal: str
    host: str  # canonical
    operation: AclOperation
    allow: bool


def _rule(b: AclBinding) -> _Rule:
    return _Rule(b.principal, _canonical_host(b.host), b.operation, b.permission_type is AclPermissionType.ALLOW)


def _grants(rule: _Rule, operation: AclOperation) -> bool:
    """Whether the rule's operation covers ``operation`` (implication only for ALLOW)."""
    if rule.operation is AclOperation.ALL or rule.operation is operation:
        return True
    return rule.allow and rule.operation in _IMPLIED_BY.get(operation, ())


class Authorizer:
    """The ACLs in memory and Kafka's decision rules over them.

    ``super_users`` and ``allow_everyone_if_no_acl_found`` are the settings ``super.users`` and
    ``allow.everyone.if.no.acl.found``.  Not thread-safe: use it from the broker's event loop.
    """

    def __init__(self, *, super_users: str | Iterable[str] | None = None,
                 allow_everyone_if_no_acl_found: bool = False) -> None:
        self.super_users = parse_super_users(super_users)
        self.allow_everyone_if_no_acl_found = allow_everyone_if_no_acl_found
        self.generation = 0
        self._bindings: dict[AclBinding, _Rule] = {}
        self._literal: dict[tuple[ResourceType, str], dict[AclBinding, _Rule]] = {}
        self._prefixed: dict[tuple[ResourceType, str], dict[AclBinding, _Rule]] = {}
        self._prefix_lengths: dict[ResourceType, dict[int, int]] = {}  # type -> {length: how many prefixes}

    def __len__(self) -> int:
        return len(self._bindings)

    def __contains__(self, binding: object) -> bool:
        return binding in self._bindings

    # -- changes ----------------------------------------------------------

    def add(self, bindings: Iterable[AclBinding]) -> list[AclBinding]:
        """Add bindings (already valid, see :func:`validate_binding`); returns those that were new."""
        added = []
        for b in bindings:
            if b in self._bindings:
                continue
            rule = self._bindings[b] = _rule(b)
            key = (b.resource_type, b.resource_name)
            if b.pattern_type is PatternType.PREFIXED:
                if key not in self._prefixed:
                    lengths = self._prefix_lengths.setdefault(b.resource_type, {})
                    lengths[len(b.resource_name)] = lengths.get(len(b.resource_name), 0) + 1
                self._prefixed.setdefault(key, {})[b] = rule
            else:
                self._literal.setdefault(key, {})[b] = rule
            added.append(b)
        if added:
            self.generation += 1
        return added

    def remove(self, bindings: Iterable[AclBinding]) -> list[AclBinding]:
        """Remove bindings; returns those that were present."""
        removed = []
        for b in bindings:
            if self._bindings.pop(b, None) is None:
                continue
            key = (b.resource_type, b.resource_name)
            index = self._prefixed if b.pattern_type is PatternType.PREFIXED else self._literal
            entries = index[key]
            del entries[b]
            if not entries:
                del index[key]
                if index is self._prefixed:
                    lengths = self._prefix_lengths[b.resource_type]
                    lengths[len(b.resource_name)] -= 1
                    if not lengths[len(b.resource_name)]:
                        del lengths[len(b.resource_name)]
            removed.append(b)
        if removed:
            self.generation += 1
        return removed

    def replace_all(self, bindings: Iterable[AclBinding]) -> None:
        """Make the set of bindings exactly ``bindings`` (a reload from the metadata store)."""
        wanted = set(bindings)
        self.remove([b for b in self._bindings if b not in wanted])
        self.add(wanted)
        self.generation += 1

    def set_config(self, *, super_users: str | Iterable[str] | None = None,
                   allow_everyone_if_no_acl_found: bool | None = None) -> None:
        if super_users is not None:
            self.super_users = parse_super_users(super_users)
        if allow_everyone_if_no_acl_found is not None:
            self.allow_everyone_if_no_acl_found = allow_everyone_if_no_acl_found
        self.generation += 1

    # -- admin APIs ---------------------------------------------------------

    def acls(self, acl_filter: AclBindingFilter | None = None) -> list[AclBinding]:
        """Bindings matching the filter (all without one), in insertion order."""
        if acl_filter is None:
            return list(self._bindings)
        return [b for b in self._bindings if acl_filter.matches(b)]

    def plan_create(self, bindings: Sequence[AclBinding]) -> tuple[list[tuple[ErrorCode, str | None]], list[AclBinding]]:
        """CreateAcls without applying it: a (code, message) per binding, and the bindings to store.

        Creating a binding that exists succeeds and stores nothing (Kafka's ``AclControlManager``).
        """
        results: list[tuple[ErrorCode, str | None]] = []
        to_add: dict[AclBinding, None] = {}
        for b in bindings:
            error = validate_binding(b)
            if error is not None:
                results.append((ErrorCode.INVALID_REQUEST, error))
                continue
            if b not in self._bindings:
                to_add[b] = None
            results.append((ErrorCode.NONE, None))
        return results, list(to_add)

    def plan_delete(self, filters: Sequence[AclBindingFilter]
                    ) -> tuple[list[tuple[ErrorCode, str | None, list[AclBinding]]], list[AclBinding]]:
        """DeleteAcls without applying it: per filter (code, message, matching bindings), and all to remove.

        A binding that several filters match is listed under each of them and removed once.
        """
        results: list[tuple[ErrorCode, str | None, list[AclBinding]]] = []
        to_remove: dict[AclBinding, None] = {}
        for f in filters:
            error = f.validation_error()
            if error is not None:
                results.append((ErrorCode.INVALID_REQUEST, error, []))
                continue
            matched = self.acls(f)
            to_remove.update(dict.fromkeys(matched))
            results.append((ErrorCode.NONE, None, matched))
        return results, list(to_remove)

    def create(self, bindings: Sequence[AclBinding]) -> list[tuple[ErrorCode, str | None]]:
        """CreateAcls applied here (single node): a (code, message) per binding."""
        results, to_add = self.plan_create(bindings)
        self.add(to_add)
        return results

    def delete(self, filters: Sequence[AclBindingFilter]) -> list[tuple[ErrorCode, str | None, list[AclBinding]]]:
        """DeleteAcls applied here (single node): per filter (code, message, deleted bindings)."""
        results, to_remove = self.plan_delete(filters)
        self.remove(to_remove)
        return results

    # -- decisions ------------------------------------------------------------

    def _matching(self, resource_type: ResourceType, name: str) -> Iterable[dict[AclBinding, _Rule]]:
        literal = self._literal
        entries = literal.get((resource_type, name))
        if entries:
            yield entries
        if name != WILDCARD:
            entries = literal.get((resource_type, WILDCARD))
            if entries:
                yield entries
        lengths = self._prefix_lengths.get(resource_type)
        if lengths:
            prefixed = self._prefixed
            for length in lengths:
                if length <= len(name):
                    entries = prefixed.get((resource_type, name[:length]))
                    if entries:
                        yield entries

    def authorize(self, principal: str, host: str, operation: AclOperation, resource_type: ResourceType,
                  name: str) -> bool:
        """Whether ``principal`` connected from ``host`` may perform ``operation`` on the resource."""
        if principal in self.super_users:
            return True
        return self._decide(principal, _canonical_host(host), operation, resource_type, name)

    def _decide(self, principal: str, host: str, operation: AclOperation, resource_type: ResourceType,
                name: str) -> bool:
        found_any = allowed = False
        for entries in self._matching(resource_type, name):
            found_any = True
            for rule in entries.values():
                if rule.principal != principal and rule.principal != WILDCARD_PRINCIPAL:
                    continue
                if rule.host != WILDCARD and rule.host != host:
                    continue
                if not _grants(rule, operation):
                    continue
                if not rule.allow:
                    return False
                allowed = True
        return allowed or (not found_any and self.allow_everyone_if_no_acl_found)

    def authorize_any(self, principal: str, host: str, operation: AclOperation,
                      resource_type: ResourceType) -> bool:
        """Whether some resource of the type is allowed (Kafka's ``Authorizer.authorizeByResourceType``).

        InitProducerId uses it: an idempotent producer needs IDEMPOTENT_WRITE on the cluster or WRITE
        on some topic (KIP-679).  Kafka's default method: allowed when a check of a made-up name is
        (super users, the no-ACL default, ``*``), or when some ALLOW of the operation (or ALL) for
        the caller is not covered by a DENY (a LITERAL DENY of the same name or a PREFIXED DENY of a
        prefix of it); a LITERAL ``*`` DENY denies.  No implied operations here, as in Kafka.  It scans
        every binding: fine for InitProducerId, not for a per-record path.
        """
        if self.authorize(principal, host, operation, resource_type, "hardcode"):
            return True
        host = _canonical_host(host)
        deny_literal: set[str] = set()
        deny_prefix: set[str] = set()
        allows: list[AclBinding] = []
        for b, rule in self._bindings.items():
            if b.resource_type is not resource_type:
                continue
            if rule.host != WILDCARD and rule.host != host:
                continue
            if rule.principal != principal and rule.principal != WILDCARD_PRINCIPAL:
                continue
            if rule.operation is not operation and rule.operation is not AclOperation.ALL:
                continue
            if not rule.allow:
                if b.pattern_type is PatternType.PREFIXED:
                    deny_prefix.add(b.resource_name)
                elif b.resource_name == WILDCARD:
                    return False
                else:
                    deny_literal.add(b.resource_name)
            elif b.pattern_type is PatternType.LITERAL and b.resource_name == WILDCARD:
                return True
            else:
                allows.append(b)
        for b in allows:
            if b.pattern_type is PatternType.LITERAL and b.resource_name in deny_literal:
                continue
            name = b.resource_name
            if not any(name[:i] in deny_prefix for i in range(1, len(name) + 1)):
                return True
        return False

    def authorized_operations(self, principal: str, host: str, resource_type: ResourceType, name: str) -> int:
        """The ``*_authorized_operations`` bit field: bit ``op`` set for each supported operation allowed."""
        bits = 0
        for op in SUPPORTED_OPERATIONS.get(resource_type, ()):
            if self.authorize(principal, host, op, resource_type, name):
                bits |= 1 << int(op)
        return bits

    def session(self, principal: str, host: str, *, max_entries: int = 1024) -> AuthorizationSession:
        """A decision cache for one connection (principal and host fixed)."""
        return AuthorizationSession(self, principal, host, max_entries=max_entries)


class AuthorizationSession:
    """One connection's view of the authorizer, caching decisions until the ACLs change.

    The cache holds at most ``max_entries`` decisions (oldest dropped first); a change of the
    authorizer's generation (any ACL or config change) empties it.
    """

    __slots__ = ("_cache", "_generation", "authorizer", "host", "max_entries", "principal", "super_user")

    def __init__(self, authorizer: Authorizer, principal: str, host: str, *, max_entries: int = 1024) -> None:
        if max_entries < 1:
            raise ValueError("max_entries must be at least 1")
        self.authorizer = authorizer
        self.principal = principal
        self.host = _canonical_host(host)
        self.max_entries = max_entries
        self.super_user = principal in authorizer.super_users
        self._generation = authorizer.generation
        self._cache: dict[tuple[AclOperation, ResourceType, str], bool] = {}

    def authorize(self, operation: AclOperation, resource_type: ResourceType, name: str) -> bool:
        authorizer = self.authorizer
        if self._generation != authorizer.generation:
            self._cache.clear()
            self._generation = authorizer.generation
            self.super_user = self.principal in authorizer.super_users
        if self.super_user:
            return True
        key = (operation, resource_type, name)
        cache = self._cache
        decision = cache.get(key)
        if decision is None:
            decision = authorizer._decide(self.principal, self.host, operation, resource_type, name)
            if len(cache) >= self.max_entries:
                del cache[next(iter(cache))]
            cache[key] = decision
        return decision

    def authorize_cluster(self, operation: AclOperation) -> bool:
        return self.authorize(operation, ResourceType.CLUSTER, CLUSTER_NAME)


# ---------------------------------------------------------------------------
# what each API checks (Kafka's KafkaApis)
# ---------------------------------------------------------------------------


class CheckScope(Enum):
    """What a failed check does to a request."""

    REQUEST = "request"    # the whole request fails: the error in every entry of the response
    RESOURCE = "resource"  # only the resources that fail it get the error (per topic, group, ...)
    FILTER = "filter"      # resources that fail it are silently left out of the response


@dataclass(frozen=True, slots=True)
class AclCheck:
    """One authorization check a request handler makes.

    ``name`` says which resource name is checked (``CLUSTER_NAME`` for the cluster), ``when`` the
    condition under which the check applies ("" = always).  If ``alternative`` is allowed, this check
    is skipped (e.g. CREATE on the cluster waives CREATE per topic).  ``any_name`` means the check is
    :meth:`Authorizer.authorize_any` over the resource type rather than one name.
    """

    operation: AclOperation
    resource_type: ResourceType
    error: ErrorCode | None
    scope: CheckScope
    name: str
    when: str = ""
    alternative: AclCheck | None = None
    any_name: bool = False


_T, _G, _C, _X = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER, ResourceType.TRANSACTIONAL_ID
_TAF, _GAF = ErrorCode.TOPIC_AUTHORIZATION_FAILED, ErrorCode.GROUP_AUTHORIZATION_FAILED
_CAF, _XAF = ErrorCode.CLUSTER_AUTHORIZATION_FAILED, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
_REQ, _RES, _FIL = CheckScope.REQUEST, CheckScope.RESOURCE, CheckScope.FILTER


def _cluster(op: AclOperation, error: ErrorCode | None = _CAF, when: str = "",
             alternative: AclCheck | None = None) -> AclCheck:
    return AclCheck(op, _C, error, _REQ, CLUSTER_NAME, when, alternative)


_TXN_WRITE = AclCheck(_Op.WRITE, _X, _XAF, _REQ, "transactional_id")

#: Per API key, the checks of Kafka's request handlers, in the order Kafka makes them.  Source:
#: ``core/src/main/scala/kafka/server/KafkaApis.scala`` (``handle<Api>Request``), ``AclApis.scala``
#: and ``ConfigHelper.scala`` of apache/kafka at 1eb7644349 (the commit of the protocol notes).
#: APIs without an entry (ApiVersions, SaslHandshake, SaslAuthenticate, DescribeCluster) check
#: nothing; DescribeCluster needs DESCRIBE on the cluster only to fill its authorized operations.
API_ACL_CHECKS: dict[ApiKey, tuple[AclCheck, ...]] = {
    ApiKey.PRODUCE: (
        AclCheck(_Op.WRITE, _X, _XAF, _REQ, "transactional_id", "the batches are transactional"),
        AclCheck(_Op.WRITE, _T, _TAF, _RES, "topic"),
    ),
    ApiKey.FETCH: (
        _cluster(_Op.CLUSTER_ACTION, _TAF, "from a follower (replica_id >= 0); the error goes to every partition"),
        AclCheck(_Op.READ, _T, _TAF, _RES, "topic", "from a consumer"),
    ),
    ApiKey.LIST_OFFSETS: (AclCheck(_Op.DESCRIBE, _T, _TAF, _RES, "topic"),),
    ApiKey.METADATA: (
        AclCheck(_Op.DESCRIBE, _T, _TAF, _RES, "topic", "topics named in the request (no topic id returned)"),
        AclCheck(_Op.DESCRIBE, _T, None, _FIL, "topic", "all topics requested"),
        AclCheck(_Op.CREATE, _T, _TAF, _RES, "topic", "auto-creating a missing topic",
                 alternative=_cluster(_Op.CREATE, None)),
        _cluster(_Op.DESCRIBE, None, "include_cluster_authorized_operations (v8-v10); else 0 operations"),
    ),
    ApiKey.OFFSET_COMMIT: (
        AclCheck(_Op.READ, _G, _GAF, _REQ, "group_id"),
        AclCheck(_Op.READ, _T, _TAF, _RES, "topic"),
    ),
    ApiKey.OFFSET_FETCH: (
        AclCheck(_Op.DESCRIBE, _G, _GAF, _RES, "group_id", "per group (v8+ has several)"),
        AclCheck(_Op.DESCRIBE, _T, _TAF, _RES, "topic", "partitions named in the request"),
        AclCheck(_Op.DESCRIBE, _T, None, _FIL, "topic", "all partitions of the group (topics null)"),
    ),
    ApiKey.FIND_COORDINATOR: (
        AclCheck(_Op.DESCRIBE, _G, _GAF, _RES, "key", "key_type 0 (group)"),
        AclCheck(_Op.DESCRIBE, _X, _XAF, _RES, "key", "key_type 1 (transaction)"),
        _cluster(_Op.CLUSTER_ACTION, when="key_type 2 (share)"),
    ),
    ApiKey.JOIN_GROUP: (AclCheck(_Op.READ, _G, _GAF, _REQ, "group_id"),),
    ApiKey.HEARTBEAT: (AclCheck(_Op.READ, _G, _GAF, _REQ, "group_id"),),
    ApiKey.LEAVE_GROUP: (AclCheck(_Op.READ, _G, _GAF, _REQ, "group_id"),),
    ApiKey.SYNC_GROUP: (AclCheck(_Op.READ, _G, _GAF, _REQ, "group_id"),),
    ApiKey.DESCRIBE_GROUPS: (AclCheck(_Op.DESCRIBE, _G, _GAF, _RES, "group_id"),),
    ApiKey.CONSUMER_GROUP_HEARTBEAT: (AclCheck(_Op.READ, _G, _GAF, _REQ, "group_id"),),
    ApiKey.CONSUMER_GROUP_DESCRIBE: (AclCheck(_Op.DESCRIBE, _G, _GAF, _RES, "group_id"),),
    ApiKey.LIST_GROUPS: (
        AclCheck(_Op.DESCRIBE, _G, None, _FIL, "group_id", alternative=_cluster(_Op.DESCRIBE, None)),
    ),
    ApiKey.CREATE_TOPICS: (
        AclCheck(_Op.CREATE, _T, _TAF, _RES, "name", alternative=_cluster(_Op.CREATE, None)),
        AclCheck(_Op.DESCRIBE_CONFIGS, _T, _TAF, _RES, "name",
                 "returning the new topic's configs (v5+): the error goes to topic_config_error_code"),
    ),
    ApiKey.DELETE_TOPICS: (
        AclCheck(_Op.DESCRIBE, _T, _TAF, _RES, "name", "the topic is named by id (v6+): its name is not returned"),
        AclCheck(_Op.DELETE, _T, _TAF, _RES, "name"),
    ),
    ApiKey.DELETE_RECORDS: (AclCheck(_Op.DELETE, _T, _TAF, _RES, "name"),),
    ApiKey.INIT_PRODUCER_ID: (
        AclCheck(_Op.WRITE, _X, _XAF, _REQ, "transactional_id", "transactional_id is set"),
        _cluster(_Op.IDEMPOTENT_WRITE, when="transactional_id is null (idempotent producer)",
                 alternative=AclCheck(_Op.WRITE, _T, None, _REQ, "", any_name=True)),
    ),
    ApiKey.OFFSET_FOR_LEADER_EPOCH: (
        AclCheck(_Op.DESCRIBE, _T, _TAF, _RES, "topic", alternative=_cluster(_Op.CLUSTER_ACTION, None)),
    ),
    ApiKey.ADD_PARTITIONS_TO_TXN: (
        AclCheck(_Op.WRITE, _X, _XAF, _REQ, "transactional_id", "v0-v3 (clients)"),
        AclCheck(_Op.WRITE, _T, _TAF, _RES, "name",
                 "v0-v3; the authorized partitions then get OPERATION_NOT_ATTEMPTED"),
        _cluster(_Op.CLUSTER_ACTION, when="v4+ (brokers)"),
    ),
    ApiKey.ADD_OFFSETS_TO_TXN: (_TXN_WRITE, AclCheck(_Op.READ, _G, _GAF, _REQ, "group_id")),
    ApiKey.END_TXN: (_TXN_WRITE,),
    ApiKey.WRITE_TXN_MARKERS: (_cluster(_Op.CLUSTER_ACTION, alternative=_cluster(_Op.ALTER, None)),),
    ApiKey.TXN_OFFSET_COMMIT: (
        _TXN_WRITE,
        AclCheck(_Op.READ, _G, _GAF, _REQ, "group_id"),
        AclCheck(_Op.READ, _T, _TAF, _RES, "name"),
    ),
    ApiKey.DESCRIBE_ACLS: (_cluster(_Op.DESCRIBE),),
    ApiKey.CREATE_ACLS: (_cluster(_Op.ALTER),),
    ApiKey.DELETE_ACLS: (_cluster(_Op.ALTER),),
    ApiKey.DESCRIBE_CONFIGS: (
        AclCheck(_Op.DESCRIBE_CONFIGS, _C, _CAF, _RES, CLUSTER_NAME, "broker and broker-logger resources"),
        AclCheck(_Op.DESCRIBE_CONFIGS, _T, _TAF, _RES, "resource_name", "topic resources"),
        AclCheck(_Op.DESCRIBE_CONFIGS, _G, _GAF, _RES, "resource_name", "group resources"),
    ),
    ApiKey.ALTER_CONFIGS: (
        AclCheck(_Op.ALTER_CONFIGS, _C, _CAF, _RES, CLUSTER_NAME, "broker and broker-logger resources"),
        AclCheck(_Op.ALTER_CONFIGS, _T, _TAF, _RES, "resource_name", "topic resources"),
    ),
    ApiKey.INCREMENTAL_ALTER_CONFIGS: (
        AclCheck(_Op.ALTER_CONFIGS, _C, _CAF, _RES, CLUSTER_NAME, "broker and broker-logger resources"),
        AclCheck(_Op.ALTER_CONFIGS, _T, _TAF, _RES, "resource_name", "topic resources"),
        AclCheck(_Op.ALTER_CONFIGS, _G, _GAF, _RES, "resource_name", "group resources"),
    ),
    ApiKey.DESCRIBE_LOG_DIRS: (_cluster(_Op.DESCRIBE),),
    ApiKey.CREATE_PARTITIONS: (AclCheck(_Op.ALTER, _T, _TAF, _RES, "name"),),
    ApiKey.DELETE_GROUPS: (AclCheck(_Op.DELETE, _G, _GAF, _RES, "group_id"),),
    ApiKey.ELECT_LEADERS: (_cluster(_Op.ALTER),),
    ApiKey.OFFSET_DELETE: (
        AclCheck(_Op.DELETE, _G, _GAF, _REQ, "group_id"),
        AclCheck(_Op.READ, _T, _TAF, _RES, "name"),
    ),
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: (_cluster(_Op.DESCRIBE),),
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: (_cluster(_Op.ALTER),),
    ApiKey.DESCRIBE_PRODUCERS: (AclCheck(_Op.READ, _T, _TAF, _RES, "name"),),
    ApiKey.DESCRIBE_TRANSACTIONS: (
        AclCheck(_Op.DESCRIBE, _X, _XAF, _RES, "transactional_id"),
        AclCheck(_Op.DESCRIBE, _T, None, _FIL, "topic", "the transaction's partitions"),
    ),
    ApiKey.LIST_TRANSACTIONS: (AclCheck(_Op.DESCRIBE, _X, None, _FIL, "transactional_id"),),
    ApiKey.CONSUMER_GROUP_HEARTBEAT: (AclCheck(_Op.READ, _G, _GAF, _REQ, "group_id"),),
    ApiKey.CONSUMER_GROUP_DESCRIBE: (AclCheck(_Op.DESCRIBE, _G, _GAF, _RES, "group_id"),),
    # share groups (KIP-932): KafkaApis.handleShareGroupHeartbeat ... handleDeleteShareGroupOffsets (Kafka 4.2)
    ApiKey.SHARE_GROUP_HEARTBEAT: (
        AclCheck(_Op.READ, _G, _GAF, _REQ, "group_id"),
        AclCheck(_Op.DESCRIBE, _T, _TAF, _REQ, "subscribed_topic_names"),
    ),
    ApiKey.SHARE_GROUP_DESCRIBE: (
        AclCheck(_Op.DESCRIBE, _G, _GAF, _RES, "group_id"),
        AclCheck(_Op.DESCRIBE, _T, _TAF, _RES, "topic_name", "topics the members subscribe to or are assigned: "
                                                             "the group is answered without them"),
    ),
    ApiKey.SHARE_FETCH: (AclCheck(_Op.READ, _G, _GAF, _REQ, "group_id"), AclCheck(_Op.READ, _T, _TAF, _RES, "topic")),
    ApiKey.SHARE_ACKNOWLEDGE: (AclCheck(_Op.READ, _G, _GAF, _REQ, "group_id"),
                               AclCheck(_Op.READ, _T, _TAF, _RES, "topic")),
    ApiKey.INITIALIZE_SHARE_GROUP_STATE: (_cluster(_Op.CLUSTER_ACTION),),
    ApiKey.READ_SHARE_GROUP_STATE: (_cluster(_Op.CLUSTER_ACTION),),
    ApiKey.WRITE_SHARE_GROUP_STATE: (_cluster(_Op.CLUSTER_ACTION),),
    ApiKey.DELETE_SHARE_GROUP_STATE: (_cluster(_Op.CLUSTER_ACTION),),
    ApiKey.READ_SHARE_GROUP_STATE_SUMMARY: (_cluster(_Op.CLUSTER_ACTION),),
    ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS: (
        AclCheck(_Op.DESCRIBE, _G, _GAF, _RES, "group_id"),
        AclCheck(_Op.DESCRIBE, _T, _TAF, _RES, "topic_name", "topics named in the request"),
        AclCheck(_Op.DESCRIBE, _T, None, _FIL, "topic_name", "all topics of the group (topics null)"),
    ),
    ApiKey.ALTER_SHARE_GROUP_OFFSETS: (AclCheck(_Op.READ, _G, _GAF, _REQ, "group_id"),
                                       AclCheck(_Op.READ, _T, _TAF, _RES, "topic_name")),
    ApiKey.DELETE_SHARE_GROUP_OFFSETS: (AclCheck(_Op.DELETE, _G, _GAF, _REQ, "group_id"),
                                        AclCheck(_Op.READ, _T, _TAF, _RES, "topic_name")),
}
