"""KIP-848 consumer groups: the ConsumerGroupHeartbeat state machine, pure and clock-injected.

:class:`ConsumerGroups` owns every consumer group of one ``__consumer_offsets`` shard: members and
their epochs, the target assignment computed on the broker by a server-side assignor
(:mod:`broker.coordinator.group.assignors`), and the reconciliation of each member towards its target — a
partition is handed to a member only once its previous owner has released it (Kafka's
``CurrentAssignmentBuilder``).  Subscriptions (topic names or ``subscribed_topic_regex``) are
resolved here against the broker's metadata (a narrow :class:`TopicCatalog`).

A regular expression resolves only to topics the member may DESCRIBE, as Kafka's: the heartbeat of a
member subscribing with one brings its principal's view (a :data:`TopicView` predicate, None when
authorization is off; topic names it subscribes to were checked before the heartbeat got here), and
the group's regexes are resolved with the view of the latest such member.  The resolved topics are
what the group's regular-expression records keep.  A view lives in memory only: after a load, a
re-resolution (new topics) waits for the next heartbeat of a member subscribing with a regex.

Every state change is a record in Kafka's ``__consumer_offsets`` format (record types 3-8 and 16,
value version 0).  A change is made by *emitting* a record: :meth:`ConsumerGroups._emit` applies it
through :meth:`ConsumerGroups.replay` — the same code the shard's load runs — and queues it for the
caller to write (:meth:`ConsumerGroups.drain`), so a restarted or failed-over coordinator rebuilds
exactly the state the records describe.  Timers (sessions, revocation deadlines) live in the
shard's :class:`~broker.coordinator.group.timers.KeyedTimers` under the keys of :data:`TIMER_KINDS`.

The committed records of every group are kept too (the latest value per key, as a compacted log
holds them): when a write carrying a group's records fails, :meth:`ConsumerGroups.revert` rebuilds
the group from them and the records of the writes still in flight, as Kafka's CoordinatorRuntime
reverts to its last committed state; the reply carries the write's error and the member retries.
"""

from __future__ import annotations

import logging
import re
import uuid
from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any, Protocol

from protocol.error_codes import ErrorCode
from protocol.schema import Message
from protocol.schemas.misc import (
    ConsumerGroupCurrentMemberAssignmentKey,
    ConsumerGroupCurrentMemberAssignmentValue,
    ConsumerGroupMemberMetadataKey,
    ConsumerGroupMemberMetadataValue,
    ConsumerGroupMetadataKey,
    ConsumerGroupMetadataValue,
    ConsumerGroupPartitionMetadataKey,
    ConsumerGroupPartitionMetadataValue,
    ConsumerGroupRegularExpressionKey,
    ConsumerGroupRegularExpressionValue,
    ConsumerGroupTargetAssignmentMemberKey,
    ConsumerGroupTargetAssignmentMemberValue,
    ConsumerGroupTargetAssignmentMetadataKey,
    ConsumerGroupTargetAssignmentMetadataValue,
)

from .assignors import ASSIGNORS, TopicPartitions
from .group_configs import HEARTBEAT_INTERVAL, SESSION_TIMEOUT, group_config_value
from .group_records import GroupRecords, RecordCodecs
from .timers import KeyedTimers

__all__ = ["CONSUMER_RECORD_TYPES", "TIMER_KINDS", "ConsumerGroup", "ConsumerGroupConfig", "ConsumerGroups",
           "ConsumerMember", "MemberState", "TopicCatalog", "TopicView"]

log = logging.getLogger(__name__)
E = ErrorCode

Response = dict[str, Any]
#: whether a member's principal may DESCRIBE a topic (by name); None: every topic may be described
TopicView = Callable[[str], bool] | None

LEAVE_EPOCH = -1
LEAVE_STATIC_EPOCH = -2
#: member type in ConsumerGroupDescribe v1 (1: a consumer-protocol member)
CONSUMER_MEMBER_TYPE = 1

_SESSION = "cg-session"
_REVOKE = "cg-revoke"
_REGEX = "cg-regex"
_ASSIGN = "cg-assign"
#: the timer kinds this module schedules in the shard's KeyedTimers
TIMER_KINDS = frozenset({_SESSION, _REVOKE, _REGEX, _ASSIGN})

GROUP_METADATA = 3
PARTITION_METADATA = 4
MEMBER_METADATA = 5
TARGET_METADATA = 6
TARGET_MEMBER = 7
CURRENT_ASSIGNMENT = 8
REGULAR_EXPRESSION = 16

_CODECS: dict[int, tuple[Message, Message]] = {
    GROUP_METADATA: (ConsumerGroupMetadataKey, ConsumerGroupMetadataValue),
    PARTITION_METADATA: (ConsumerGroupPartitionMetadataKey, ConsumerGroupPartitionMetadataValue),
    MEMBER_METADATA: (ConsumerGroupMemberMetadataKey, ConsumerGroupMemberMetadataValue),
    TARGET_METADATA: (ConsumerGroupTargetAssignmentMetadataKey, ConsumerGroupTargetAssignmentMetadataValue),
    TARGET_MEMBER: (ConsumerGroupTargetAssignmentMemberKey, ConsumerGroupTargetAssignmentMemberValue),
    CURRENT_ASSIGNMENT: (ConsumerGroupCurrentMemberAssignmentKey, ConsumerGroupCurrentMemberAssignmentValue),
    REGULAR_EXPRESSION: (ConsumerGroupRegularExpressionKey, ConsumerGroupRegularExpressionValue),
}
_RECORDS = RecordCodecs(_CODECS, "consumer group")
#: ``__consumer_offsets`` record types of consumer groups
CONSUMER_RECORD_TYPES = _RECORDS.types


class MemberState(IntEnum):
    """Kafka's ``MemberState`` (the byte in ConsumerGroupCurrentMemberAssignmentValue)."""

    STABLE = 1
    UNREVOKED_PARTITIONS = 2
    UNRELEASED_PARTITIONS = 3
    UNKNOWN = 127


class TopicCatalog(Protocol):
    """What consumer groups need of the cluster metadata."""

    def topic_id(self, name: str) -> uuid.UUID | None: ...

    def partition_count(self, name: str) -> int | None: ...

    def topic_names(self) -> Iterable[str]: ...


@dataclass(frozen=True, slots=True)
class ConsumerGroupConfig:
    """Kafka's ``group.consumer.*`` settings (durations in milliseconds)."""

    heartbeat_interval_ms: int = 5000
    session_timeout_ms: int = 45_000
    assignors: tuple[str, ...] = ("uniform", "range")
    max_size: int = 2**31 - 1
    #: at most one target assignment per group per interval (KIP-1263): the joins, leaves and
    #: subscription changes of an interval share one assignor run (0: one run per change)
    assignment_interval_ms: int = 1000


@dataclass(slots=True)
class ConsumerMember:
    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: tuple[str, ...] = ()
    subscribed_topic_regex: str | None = None
    rebalance_timeout_ms: int = -1
    server_assignor: str | None = None
    member_epoch: int = 0
    previous_member_epoch: int = -1
    state: MemberState = MemberState.STABLE
    assigned: TopicPartitions = field(default_factory=dict)
    pending_revocation: TopicPartitions = field(default_factory=dict)

    def metadata_value(self) -> dict[str, Any]:
        return {"instance_id": self.instance_id, "rack_id": self.rack_id, "client_id": self.client_id,
                "client_host": self.client_host, "subscribed_topic_names": list(self.subscribed_topic_names),
                "subscribed_topic_regex": self.subscribed_topic_regex,
                "rebalance_timeout_ms": self.rebalance_timeout_ms, "server_assignor": self.server_assignor,
                "classic_member_metadata": None}


@dataclass(slots=True)
class ConsumerGroup:
    """One consumer group as its records describe it."""

    group_id: str
    group_epoch: int = 0
    assignment_epoch: int = 0
    members: dict[str, ConsumerMember] = field(default_factory=dict)
    static_members: dict[str, str] = field(default_factory=dict)
    target: dict[str, TopicPartitions] = field(default_factory=dict)
    #: topic name -> (topic id, partition count) of every subscribed topic that exists
    subscription: dict[str, tuple[uuid.UUID, int]] = field(default_factory=dict)
    #: regular expression -> the topic names it resolved to
    regexes: dict[str, frozenset[str]] = field(default_factory=dict)
    #: (topic id, partition) -> the member that owns it (assigned or still revoking)
    owners: dict[tuple[uuid.UUID, int], str] = field(default_factory=dict)
    #: how many members subscribe to each topic name, use each regular expression, ask for each server
    #: assignor (kept as member records are applied, so no request walks every member)
    topic_counts: dict[str, int] = field(default_factory=dict)
    regex_counts: dict[str, int] = field(default_factory=dict)
    assignor_counts: dict[str, int] = field(default_factory=dict)
    #: when the last target assignment was computed here (in memory only; None: not since the load)
    assigned_at: int | None = None
    #: see ``GroupRecords._checked`` (in memory only)
    checked_stamp: int = field(default=-1, compare=False, repr=False)

    @property
    def state(self) -> str:
        """Empty, Assigning, Reconciling or Stable (Kafka's ``ConsumerGroupState``)."""
        if not self.members:
            return "Empty"
        if self.group_epoch > self.assignment_epoch:
            return "Assigning"
        for m in self.members.values():
            if m.member_epoch != self.assignment_epoch or m.state is not MemberState.STABLE:
                return "Reconciling"
        return "Stable"

    def subscribed_names(self) -> frozenset[str]:
        names = set(self.topic_counts)
        for pattern in self.regex_counts:
            names.update(self.regexes.get(pattern, ()))
        return frozenset(names)

    def count(self, member: ConsumerMember, delta: int) -> None:
        """Add (``delta`` 1) or take away (-1) ``member``'s subscription and assignor in the group's counts."""
        for counts, keys in ((self.topic_counts, member.subscribed_topic_names),
                             (self.regex_counts, (member.subscribed_topic_regex,)),
                             (self.assignor_counts, (member.server_assignor,))):
            for key in keys:
                if key is not None:
                    n = counts.get(key, 0) + delta
                    if n > 0:
                        counts[key] = n
                    else:
                        counts.pop(key, None)


# ------------------------------------------------------------------------------------ records

encode_record = _RECORDS.encode
decode_record = _RECORDS.decode


def _tp_list(assignment: TopicPartitions) -> list[dict[str, Any]]:
    return [{"topic_id": t, "partitions": sorted(ps)} for t, ps in sorted(assignment.items()) if ps]


def _tp_dict(entries: Iterable[Any] | None) -> TopicPartitions:
    out: dict[uuid.UUID, frozenset[int]] = {}
    for e in entries or ():
        parts = frozenset(e.get("partitions") or ())
        if parts:
            out[e.get("topic_id")] = out.get(e.get("topic_id"), frozenset()) | parts
    return out


def _minus(a: TopicPartitions, b: TopicPartitions) -> TopicPartitions:
    out = {}
    for t, ps in a.items():
        rest = ps - b.get(t, frozenset())
        if rest:
            out[t] = rest
    return out


def _and(a: TopicPartitions, b: TopicPartitions) -> TopicPartitions:
    out = {}
    for t, ps in a.items():
        both = ps & b.get(t, frozenset())
        if both:
            out[t] = both
    return out


def _union(a: TopicPartitions, b: TopicPartitions) -> TopicPartitions:
    out = dict(a)
    for t, ps in b.items():
        out[t] = out.get(t, frozenset()) | ps
    return out


def _contains(a: TopicPartitions, b: TopicPartitions) -> bool:
    """Every partition of ``b`` is in ``a``."""
    return all(ps <= a.get(t, frozenset()) for t, ps in b.items())


def _valid_regex(pattern: str) -> bool:
    try:
        re.compile(pattern)
    except re.error:
        return False
    return True


class _Fail(Exception):
    def __init__(self, code: ErrorCode, message: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class ConsumerGroups(GroupRecords):
    """All consumer groups of one shard (see the module doc).

    ``is_classic_group(group_id)`` says whether a classic group with members holds the id (a
    consumer group cannot take it: GROUP_ID_NOT_FOUND, as Kafka answers).
    """

    codecs = _RECORDS

    def __init__(self, config: ConsumerGroupConfig, topics: TopicCatalog, timers: KeyedTimers, *,
                 is_classic_group: Callable[[str], bool] = lambda _gid: False,
                 member_id_factory: Callable[[], str] = lambda: str(uuid.uuid4()),
                 group_configs: Callable[[str], Mapping[str, str]] = lambda _gid: {}) -> None:
        super().__init__()
        self.config = config
        self._group_configs = group_configs
        self.topics = topics
        self.timers = timers
        self.groups: dict[str, ConsumerGroup] = {}
        self._is_classic = is_classic_group
        self._new_member_id = member_id_factory
        self._now = 0
        #: group id -> the topic view its regexes are resolved with (see the module doc); a group
        #: missing here has no known view yet
        self._regex_views: dict[str, TopicView] = {}
        #: groups whose regexes must be resolved again once a view is known (topics changed meanwhile)
        self._stale_regexes: set[str] = set()

    def session_timeout_ms(self, group_id: str) -> int:
        """The group's ``consumer.session.timeout.ms`` (a group config), else the broker's."""
        return self._group_setting(group_id, SESSION_TIMEOUT, self.config.session_timeout_ms)

    def heartbeat_interval_ms(self, group_id: str) -> int:
        """The group's ``consumer.heartbeat.interval.ms`` (a group config), else the broker's."""
        return self._group_setting(group_id, HEARTBEAT_INTERVAL, self.config.heartbeat_interval_ms)

    def _group_setting(self, group_id: str, name: str, default: int) -> int:
        return group_config_value(self._group_configs(group_id), name, default)[0]

    # ================================================================ records in and out

    def revert(self, now_ms: int, group_ids: Iterable[str], in_flight: Iterable[tuple[str, bytes, bytes | None]]) -> None:
        """A write carrying records of ``group_ids`` failed: rebuild each of them from its committed records
        and the records of ``in_flight`` (the writes not completed yet, in order) that belong to it, with
        fresh sessions, as a coordinator that loaded them would have it."""
        self._now = now_ms
        gids = set(group_ids)
        for gid in gids:
            group = self.groups.pop(gid, None)
            if group is not None:
                for mid in group.members:
                    self.timers.cancel((_SESSION, gid, mid))
                    self.timers.cancel((_REVOKE, gid, mid))
            self.timers.cancel((_REGEX, gid))
            self.timers.cancel((_ASSIGN, gid))
        self._restore(gids, in_flight)
        for gid in sorted(gids):
            group = self.groups.get(gid)
            if group is None:
                self._regex_views.pop(gid, None)
                self._stale_regexes.discard(gid)
                continue
            log.info("consumer group %s: a write failed; back to epoch %d as stored", gid, group.group_epoch)
            for member in group.members.values():
                self._arm_timers(group, member)
            if any(pattern not in group.regexes for pattern in group.regex_counts):
                self.timers.schedule((_REGEX, gid), now_ms)
            if group.group_epoch > group.assignment_epoch:
                self.timers.schedule((_ASSIGN, gid), now_ms)

    def _apply(self, record_type: int, key: dict[str, Any], value: dict[str, Any] | None) -> None:
        gid = key["group_id"]
        group = self.groups.get(gid)
        if group is None:
            if value is None:
                return
            group = self.groups[gid] = ConsumerGroup(gid)
        if record_type == GROUP_METADATA:
            if value is None:
                del self.groups[gid]
            else:
                group.group_epoch = value["epoch"]
        elif record_type == PARTITION_METADATA:
            group.subscription = {} if value is None else {
                t["topic_name"]: (t["topic_id"], t["num_partitions"]) for t in value["topics"]}
        elif record_type == TARGET_METADATA:
            group.assignment_epoch = 0 if value is None else value["assignment_epoch"]
        elif record_type == REGULAR_EXPRESSION:
            if value is None:
                group.regexes.pop(key["regular_expression"], None)
            else:
                group.regexes[key["regular_expression"]] = frozenset(value["topics"])
        elif record_type == TARGET_MEMBER:
            if value is None:
                group.target.pop(key["member_id"], None)
            else:
                group.target[key["member_id"]] = _tp_dict(value["topic_partitions"])
        elif record_type == MEMBER_METADATA:
            mid = key["member_id"]
            if value is None:
                member = group.members.pop(mid, None)
                if member is not None:
                    group.count(member, -1)
                    if member.instance_id is not None and group.static_members.get(member.instance_id) == mid:
                        del group.static_members[member.instance_id]
                return
            member = group.members.get(mid)
            if member is None:
                member = group.members[mid] = ConsumerMember(mid)
            group.count(member, -1)
            member.instance_id = value["instance_id"]
            member.rack_id = value["rack_id"]
            member.client_id = value["client_id"]
            member.client_host = value["client_host"]
            member.subscribed_topic_names = tuple(value["subscribed_topic_names"])
            member.subscribed_topic_regex = value["subscribed_topic_regex"]
            member.rebalance_timeout_ms = value["rebalance_timeout_ms"]
            member.server_assignor = value["server_assignor"]
            group.count(member, 1)
            if member.instance_id is not None:
                group.static_members[member.instance_id] = mid
        elif record_type == CURRENT_ASSIGNMENT:
            mid = key["member_id"]
            member = group.members.get(mid)
            if member is None:
                member = group.members[mid] = ConsumerMember(mid)  # its metadata follows on replay
            self._release(group, member)
            if value is None:
                member.assigned, member.pending_revocation = {}, {}
                member.member_epoch, member.previous_member_epoch = 0, -1
                return
            member.member_epoch = value["member_epoch"]
            member.previous_member_epoch = value["previous_member_epoch"]
            try:
                member.state = MemberState(value["state"])
            except ValueError:
                member.state = MemberState.UNKNOWN
            member.assigned = _tp_dict(value["assigned_partitions"])
            member.pending_revocation = _tp_dict(value["partitions_pending_revocation"])
            for parts in (member.assigned, member.pending_revocation):
                for t, ps in parts.items():
                    for p in ps:
                        group.owners[(t, p)] = mid

    @staticmethod
    def _release(group: ConsumerGroup, member: ConsumerMember) -> None:
        for parts in (member.assigned, member.pending_revocation):
            for t, ps in parts.items():
                for p in ps:
                    if group.owners.get((t, p)) == member.member_id:
                        del group.owners[(t, p)]

    def _write_assignment(self, group: ConsumerGroup, member: ConsumerMember, epoch: int, previous: int,
                          state: MemberState, assigned: TopicPartitions, revoking: TopicPartitions) -> None:
        self._emit(group.group_id, CURRENT_ASSIGNMENT, {"group_id": group.group_id, "member_id": member.member_id},
                   {"member_epoch": epoch, "previous_member_epoch": previous, "state": int(state),
                    "assigned_partitions": _tp_list(assigned), "partitions_pending_revocation": _tp_list(revoking)})

    def _write_member(self, group: ConsumerGroup, member: ConsumerMember) -> None:
        self._emit(group.group_id, MEMBER_METADATA, {"group_id": group.group_id, "member_id": member.member_id},
                   member.metadata_value())

    # ================================================================ heartbeat

    def heartbeat(self, now_ms: int, version: int, req: Any, client_id: str, client_host: str,
                  view: TopicView = None) -> Response:
        """ConsumerGroupHeartbeat v0-1: the response; records to write come out of :meth:`drain`.
        ``view``: which topics the member's principal may DESCRIBE (None: all)."""
        self._now = now_ms
        g = req.get
        try:
            self._validate(version, req)
            epoch = g("member_epoch")
            if epoch in (LEAVE_EPOCH, LEAVE_STATIC_EPOCH):
                return self._leave(g("group_id"), g("member_id") or "", g("instance_id"), epoch)
            return self._heartbeat(now_ms, req, client_id, client_host, view)
        except _Fail as fail:
            log.debug("consumer group %s: heartbeat of %s (epoch %s) refused: %s %s", g("group_id"), g("member_id"),
                      g("member_epoch"), fail.code.name, fail.message)
            return {"throttle_time_ms": 0, "error_code": fail.code, "error_message": fail.message,
                    "member_id": None, "member_epoch": -1, "heartbeat_interval_ms": 0, "assignment": None}

    def _validate(self, version: int, req: Any) -> None:
        """Kafka's ``throwIfConsumerGroupHeartbeatRequestIsInvalid``."""
        g = req.get
        epoch = g("member_epoch")

        def blank(value: str | None) -> bool:
            return value is not None and not value.strip()

        if (version >= 1 or epoch > 0 or epoch == LEAVE_EPOCH) and blank(g("member_id") or ""):
            raise _Fail(E.INVALID_REQUEST, "MemberId can't be empty.")
        if blank(g("group_id") or ""):
            raise _Fail(E.INVALID_REQUEST, "GroupId can't be empty.")
        instance = g("instance_id")
        if blank(instance):
            raise _Fail(E.INVALID_REQUEST, "InstanceId can't be empty.")
        if blank(g("rack_id")):
            raise _Fail(E.INVALID_REQUEST, "RackId can't be empty.")
        assignor = g("server_assignor")
        if assignor is not None and assignor not in self.config.assignors:
            raise _Fail(E.UNSUPPORTED_ASSIGNOR, f"ServerAssignor {assignor} is not supported. Supported "
                                                f"assignors: {', '.join(self.config.assignors)}.")
        regex = g("subscribed_topic_regex") if version >= 1 else None
        if regex is not None and not _valid_regex(regex):
            raise _Fail(E.INVALID_REGULAR_EXPRESSION, f"SubscribedTopicRegex `{regex}` is not a valid regular "
                                                      "expression.")
        if epoch == 0:
            if g("rebalance_timeout_ms") == -1:
                raise _Fail(E.INVALID_REQUEST, "RebalanceTimeoutMs must be provided in first request.")
            if g("topic_partitions") is None or len(g("topic_partitions")):
                raise _Fail(E.INVALID_REQUEST, "TopicPartitions must be empty when (re-)joining.")
            if g("subscribed_topic_names") is None and regex is None:
                raise _Fail(E.INVALID_REQUEST, "Either SubscribedTopicNames or SubscribedTopicRegex must be "
                                               "non-null when (re-)joining.")
        elif epoch == LEAVE_STATIC_EPOCH:
            if instance is None:
                raise _Fail(E.INVALID_REQUEST, "InstanceId can't be null.")
        elif epoch < LEAVE_STATIC_EPOCH:
            raise _Fail(E.INVALID_REQUEST, "MemberEpoch is invalid.")

    def _group(self, group_id: str, create: bool) -> ConsumerGroup:
        group = self.groups.get(group_id)
        if group is not None:
            return group
        if self._is_classic(group_id):
            raise _Fail(E.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group.")
        if not create:  # a member of a group that is gone: it rejoins
            raise _Fail(E.UNKNOWN_MEMBER_ID, f"Group {group_id} not found.")
        return ConsumerGroup(group_id)

    def _heartbeat(self, now_ms: int, req: Any, client_id: str, client_host: str, view: TopicView) -> Response:
        g = req.get
        gid, epoch, instance = g("group_id"), g("member_epoch"), g("instance_id")
        owned = None if g("topic_partitions") is None else _tp_dict(g("topic_partitions"))
        group = self._group(gid, create=epoch == 0)
        mid = g("member_id") or self._new_member_id()
        if gid not in self.groups:
            self.groups[gid] = group  # becomes durable with the records below
        member = group.members.get(mid)
        previous: ConsumerMember | None = None
        if epoch == 0:
            if instance is not None:
                old_id = group.static_members.get(instance)
                if old_id is not None and old_id != mid:
                    old = group.members[old_id]
                    if old.member_epoch != LEAVE_STATIC_EPOCH:
                        raise _Fail(E.UNRELEASED_INSTANCE_ID, f"Static member {old_id} with instance id "
                                                              f"{instance} is not released yet.")
                    member = self._replace_static(group, old, mid)
            if member is None:
                if len(group.members) >= self.config.max_size:
                    if not group.members and not group.group_epoch:
                        self.groups.pop(gid, None)
                    raise _Fail(E.GROUP_MAX_SIZE_REACHED, f"The consumer group has reached its maximum "
                                                          f"capacity of {self.config.max_size} members.")
                member = ConsumerMember(mid)
            elif member.member_epoch not in (0, LEAVE_STATIC_EPOCH) and member.instance_id is None:
                # a known member rejoining from scratch: it lost its assignment (Kafka fences it)
                previous = ConsumerMember(mid)
        else:
            if member is None:
                raise _Fail(E.UNKNOWN_MEMBER_ID, f"Member {mid} is not a member of group {gid}.")
            if instance is not None and member.instance_id != instance:
                raise _Fail(E.FENCED_INSTANCE_ID, f"Instance id {instance} is fenced.")
            if epoch > member.member_epoch:
                raise _Fail(E.FENCED_MEMBER_EPOCH, f"The consumer group member has a greater member epoch "
                                                   f"({epoch}) than the one known by the group coordinator "
                                                   f"({member.member_epoch}).")
            if epoch < member.member_epoch and not (
                    epoch == member.previous_member_epoch and owned is not None
                    and _contains(member.assigned, owned)):
                raise _Fail(E.FENCED_MEMBER_EPOCH, f"The consumer group member has a smaller member epoch "
                                                   f"({epoch}) than the one known by the group coordinator "
                                                   f"({member.member_epoch}).")
        assigned_before = member.assigned
        # a heartbeat that changes nothing (the steady state) writes nothing and reconciles nothing
        if not (epoch > 0 and self._unchanged(group, member, req, client_id, client_host)):
            known = mid in group.members
            before = ConsumerMember(**{f: getattr(member, f) for f in member.__slots__})  # type: ignore[attr-defined]
            updated = ConsumerMember(**{f: getattr(member, f) for f in member.__slots__})  # type: ignore[attr-defined]
            if instance is not None:
                updated.instance_id = instance
            if g("rack_id") is not None:
                updated.rack_id = g("rack_id")
            if g("rebalance_timeout_ms") != -1:
                updated.rebalance_timeout_ms = g("rebalance_timeout_ms")
            if g("server_assignor") is not None:
                updated.server_assignor = g("server_assignor")
            if g("subscribed_topic_names") is not None:
                updated.subscribed_topic_names = tuple(sorted(set(g("subscribed_topic_names"))))
            regex = g("subscribed_topic_regex")
            if regex is not None:
                updated.subscribed_topic_regex = regex or None
            updated.client_id, updated.client_host = client_id, client_host
            bump = not known or previous is not None
            if updated.metadata_value() != before.metadata_value() or not known:
                self._write_member(group, updated)
                bump = bump or (updated.subscribed_topic_names, updated.subscribed_topic_regex,
                                updated.server_assignor) != (before.subscribed_topic_names,
                                                             before.subscribed_topic_regex, before.server_assignor)
            member = group.members[mid]
            if previous is not None:  # rejoining: start over without partitions
                self._write_assignment(group, member, 0, -1, MemberState.STABLE, {}, {})
            if updated.subscribed_topic_regex is not None:
                self._regex_views[gid] = view
                if updated.subscribed_topic_regex not in group.regexes or gid in self._stale_regexes:
                    # resolved after this heartbeat, as Kafka does: the literal topics are assigned first
                    self.timers.schedule((_REGEX, gid), now_ms)
            self._refresh_subscription(group, bump)
            self._reconcile(group, member, owned)
        self._arm_timers(group, member)
        response: Response = {"throttle_time_ms": 0, "error_code": E.NONE, "error_message": None,
                              "member_id": mid, "member_epoch": member.member_epoch,
                              "heartbeat_interval_ms": self.heartbeat_interval_ms(gid), "assignment": None}
        full = epoch == 0 or (g("rebalance_timeout_ms") != -1 and g("subscribed_topic_names") is not None
                              and owned is not None)
        if full or member.assigned != assigned_before:
            response["assignment"] = {"topic_partitions": _tp_list(member.assigned)}
        return response

    def _unchanged(self, group: ConsumerGroup, member: ConsumerMember, req: Any, client_id: str,
                   client_host: str) -> bool:
        """Whether this heartbeat of a known member at its epoch changes nothing: the same metadata, no
        regular expression to resolve, the member Stable at the group's assignment epoch with no new
        assignment pending, and the group's subscription checked since the topics last changed — what the
        full path would conclude after copying the member twice and writing nothing."""
        g = req.get
        if (member.state is not MemberState.STABLE or member.member_epoch != group.assignment_epoch
                or group.group_epoch != group.assignment_epoch or not self._checked(group)
                or member.subscribed_topic_regex is not None or g("subscribed_topic_regex") is not None
                or client_id != member.client_id or client_host != member.client_host):
            return False
        value = g("instance_id")
        if value is not None and value != member.instance_id:
            return False
        value = g("rack_id")
        if value is not None and value != member.rack_id:
            return False
        value = g("rebalance_timeout_ms")
        if value != -1 and value != member.rebalance_timeout_ms:
            return False
        value = g("server_assignor")
        if value is not None and value != member.server_assignor:
            return False
        value = g("subscribed_topic_names")
        return value is None or tuple(sorted(set(value))) == member.subscribed_topic_names

    def _replace_static(self, group: ConsumerGroup, old: ConsumerMember, new_id: str) -> ConsumerMember:
        """A static member back with a new member id takes over its predecessor's place and partitions."""
        gid = group.group_id
        target = group.target.get(old.member_id, {})
        assigned, revoking = old.assigned, old.pending_revocation
        epoch, state = old.previous_member_epoch, old.state
        self._remove_records(group, old)
        self.timers.cancel((_SESSION, gid, old.member_id))
        self.timers.cancel((_REVOKE, gid, old.member_id))
        member = ConsumerMember(new_id, **{f: getattr(old, f) for f in (
            "instance_id", "rack_id", "client_id", "client_host", "subscribed_topic_names", "subscribed_topic_regex",
            "rebalance_timeout_ms", "server_assignor")})
        self._write_member(group, member)
        self._emit(gid, TARGET_MEMBER, {"group_id": gid, "member_id": new_id}, {"topic_partitions": _tp_list(target)})
        self._write_assignment(group, group.members[new_id], epoch, -1, state, assigned, revoking)
        return group.members[new_id]

    # ================================================================ subscriptions and targets

    def _resolve_regex(self, group: ConsumerGroup, pattern: str, view: TopicView) -> bool:
        """Resolve ``pattern`` over the topics ``view`` lets the group see; whether that changed anything."""
        compiled = re.compile(pattern)
        topics = frozenset(n for n in self.topics.topic_names() if compiled.fullmatch(n) and not n.startswith("__")
                           and (view is None or view(n)))
        if group.regexes.get(pattern) == topics:
            return False
        self._emit(group.group_id, REGULAR_EXPRESSION, {"group_id": group.group_id, "regular_expression": pattern},
                   {"topics": sorted(topics), "version": 0, "timestamp": self._now})
        return True

    def _subscription(self, group: ConsumerGroup) -> dict[str, tuple[uuid.UUID, int]]:
        out: dict[str, tuple[uuid.UUID, int]] = {}
        for name in sorted(group.subscribed_names()):
            topic_id, count = self.topics.topic_id(name), self.topics.partition_count(name)
            if topic_id is not None and count:
                out[name] = (topic_id, count)
        return out

    def _refresh_subscription(self, group: ConsumerGroup, bump: bool) -> None:
        """Recompute the subscribed topics' metadata; bump the group epoch when it or a member's
        subscription changed, then compute the new target assignment."""
        gid = group.group_id
        # regexes nobody uses any more are forgotten
        used = group.regex_counts
        for pattern in [p for p in group.regexes if p not in used]:
            self._emit(gid, REGULAR_EXPRESSION, {"group_id": gid, "regular_expression": pattern}, None)
        subscription = self._subscription(group)
        if subscription != group.subscription:
            self._emit(gid, PARTITION_METADATA, {"group_id": gid}, {"topics": [
                {"topic_id": tid, "topic_name": name, "num_partitions": count, "partition_metadata": []}
                for name, (tid, count) in sorted(subscription.items())]})
            bump = True
        if bump:
            self._epoch_bumps += 1
            self._emit(gid, GROUP_METADATA, {"group_id": gid}, {"epoch": group.group_epoch + 1})
            log.info("consumer group %s: epoch %d", gid, group.group_epoch)
        if group.group_epoch > group.assignment_epoch:
            self._maybe_assign(group)
        self._mark_checked(group)

    def _maybe_assign(self, group: ConsumerGroup) -> None:
        """Compute the group's new target assignment now, or — when the last one is more recent than the
        assignment interval — once the interval has passed (a timer), so the changes of an interval (a
        thousand members joining at once) share one assignor run, as KIP-1263's batching does.  Members
        reconcile towards the target they have meanwhile."""
        interval = self.config.assignment_interval_ms
        last = group.assigned_at
        if last is None or interval <= 0 or self._now >= last + interval:
            self._assign(group)
        else:
            self.timers.schedule((_ASSIGN, group.group_id), last + interval)

    def _assignor(self, group: ConsumerGroup) -> str:
        votes = {name: n for name, n in group.assignor_counts.items()
                 if name in ASSIGNORS and name in self.config.assignors}
        if votes:
            return max(sorted(votes), key=votes.__getitem__)
        return self.config.assignors[0] if self.config.assignors else "uniform"

    def _assign(self, group: ConsumerGroup) -> None:
        gid = group.group_id
        group.assigned_at = self._now
        self.timers.cancel((_ASSIGN, gid))
        by_name = group.subscription
        subscriptions = {}
        # members mostly share a few subscriptions: resolve each distinct one once
        resolved: dict[tuple[tuple[str, ...], str | None], frozenset[uuid.UUID]] = {}
        for mid, m in group.members.items():
            key = (m.subscribed_topic_names, m.subscribed_topic_regex)
            ids = resolved.get(key)
            if ids is None:
                names = set(m.subscribed_topic_names)
                if m.subscribed_topic_regex is not None:
                    names |= group.regexes.get(m.subscribed_topic_regex, frozenset())
                ids = resolved[key] = frozenset(by_name[n][0] for n in names if n in by_name)
            subscriptions[mid] = ids
        topics = {tid: count for tid, count in by_name.values()}
        new = ASSIGNORS[self._assignor(group)](subscriptions, topics, group.target)
        for mid in sorted(new):
            if new[mid] != group.target.get(mid) or mid not in group.target:
                self._emit(gid, TARGET_MEMBER, {"group_id": gid, "member_id": mid},
                           {"topic_partitions": _tp_list(new[mid])})
        self._emit(gid, TARGET_METADATA, {"group_id": gid}, {"assignment_epoch": group.group_epoch})

    # ================================================================ reconciliation

    def _reconcile(self, group: ConsumerGroup, member: ConsumerMember, owned: TopicPartitions | None) -> None:
        """Move ``member`` towards its target (Kafka's ``CurrentAssignmentBuilder``)."""
        state = member.state
        if state is MemberState.STABLE and member.member_epoch == group.assignment_epoch:
            return
        if state is MemberState.UNREVOKED_PARTITIONS and (owned is None or _and(owned, member.pending_revocation)):
            return  # still revoking
        target = group.target.get(member.member_id, {})
        keep = _and(member.assigned, target)
        revoke = _minus(member.assigned, target)
        if revoke:
            self._write_assignment(group, member, member.member_epoch, member.previous_member_epoch,
                                   MemberState.UNREVOKED_PARTITIONS, keep, revoke)
            return
        wanted = _minus(target, member.assigned)
        free: dict[uuid.UUID, frozenset[int]] = {}
        unreleased = False
        for t, ps in wanted.items():
            mine = frozenset(p for p in ps if group.owners.get((t, p)) in (None, member.member_id))
            if mine:
                free[t] = mine
            unreleased = unreleased or len(mine) < len(ps)
        state = MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE
        assigned = _union(keep, free)
        if (member.member_epoch, member.state, member.assigned, member.pending_revocation) == (
                group.assignment_epoch, state, assigned, {}):
            return
        previous = member.member_epoch if member.member_epoch != group.assignment_epoch else \
            member.previous_member_epoch
        self._write_assignment(group, member, group.assignment_epoch, previous, state, assigned, {})

    def _arm_timers(self, group: ConsumerGroup, member: ConsumerMember) -> None:
        gid, mid = group.group_id, member.member_id
        self.timers.schedule((_SESSION, gid, mid), self._now + self.session_timeout_ms(gid))
        if member.state is MemberState.UNREVOKED_PARTITIONS:
            if (_REVOKE, gid, mid) not in self.timers:
                timeout = member.rebalance_timeout_ms if member.rebalance_timeout_ms > 0 else \
                    self.session_timeout_ms(gid)
                self.timers.schedule((_REVOKE, gid, mid), self._now + timeout)
        else:
            self.timers.cancel((_REVOKE, gid, mid))

    # ================================================================ leaving

    def _leave(self, gid: str, mid: str, instance: str | None, epoch: int) -> Response:
        group = self._group(gid, create=False)
        if instance is not None:
            mid = group.static_members.get(instance, "")
            if not mid:
                raise _Fail(E.UNKNOWN_MEMBER_ID, f"Instance id {instance} is unknown.")
        member = group.members.get(mid)
        if member is None:
            raise _Fail(E.UNKNOWN_MEMBER_ID, f"Member {mid} is not a member of group {gid}.")
        if epoch == LEAVE_STATIC_EPOCH:
            # a static member leaves for now: it keeps its partitions until its session expires
            self._write_assignment(group, member, LEAVE_STATIC_EPOCH, member.member_epoch, member.state,
                                   member.assigned, member.pending_revocation)
            self.timers.cancel((_REVOKE, gid, mid))
        else:
            self.remove_member(group, member, "left the group")
        return {"throttle_time_ms": 0, "error_code": E.NONE, "error_message": None, "member_id": mid,
                "member_epoch": epoch, "heartbeat_interval_ms": 0, "assignment": None}

    def _remove_records(self, group: ConsumerGroup, member: ConsumerMember) -> None:
        gid, mid = group.group_id, member.member_id
        self._emit(gid, CURRENT_ASSIGNMENT, {"group_id": gid, "member_id": mid}, None)
        self._emit(gid, TARGET_MEMBER, {"group_id": gid, "member_id": mid}, None)
        self._emit(gid, MEMBER_METADATA, {"group_id": gid, "member_id": mid}, None)

    def remove_member(self, group: ConsumerGroup, member: ConsumerMember, reason: str) -> None:
        """Fence ``member``: its records are tombstoned, the group epoch bumps and a new target is computed."""
        log.info("consumer group %s: member %s %s", group.group_id, member.member_id, reason)
        self._remove_records(group, member)
        self.timers.cancel((_SESSION, group.group_id, member.member_id))
        self.timers.cancel((_REVOKE, group.group_id, member.member_id))
        self._refresh_subscription(group, True)

    def on_timer(self, now_ms: int, key: Hashable) -> None:
        """A consumer-group timer of :data:`TIMER_KINDS` fired: the session ended, or a member did not revoke
        within its rebalance timeout; either way it is fenced."""
        self._now = now_ms
        if key[0] == _REGEX:  # type: ignore[index]
            self._resolve_new_regexes(key[1])  # type: ignore[index]
            return
        if key[0] == _ASSIGN:  # type: ignore[index]
            group = self.groups.get(key[1])  # type: ignore[index]
            if group is not None and group.group_epoch > group.assignment_epoch:
                self._assign(group)
            return
        kind, gid, mid = key  # type: ignore[misc]
        group = self.groups.get(gid)
        member = group.members.get(mid) if group is not None else None
        if group is None or member is None:
            return
        if kind == _REVOKE and member.state is not MemberState.UNREVOKED_PARTITIONS:
            return
        self.remove_member(group, member, "session expired" if kind == _SESSION else "did not revoke in time")

    def _resolve_new_regexes(self, group_id: str) -> None:
        """Resolve the regexes members subscribed with that the group has not resolved yet (all of them when
        topics changed while no view was known), with the group's view; a new epoch follows a change."""
        group = self.groups.get(group_id)
        if group is None or group_id not in self._regex_views:
            return  # no view yet: the next heartbeat of a member with a regex brings one
        view = self._regex_views[group_id]
        stale = group_id in self._stale_regexes
        self._stale_regexes.discard(group_id)
        changed = False
        for pattern in sorted(group.regex_counts):
            if pattern not in group.regexes or stale:
                changed = self._resolve_regex(group, pattern, view) or changed
        if changed:
            self._refresh_subscription(group, True)

    def metadata_changed(self, now_ms: int) -> None:
        """Topics were created, deleted or grew: re-resolve regexes and refresh every group's subscription."""
        self._now = now_ms
        self._topics_changed()
        for group in list(self.groups.values()):
            if not group.members:
                continue
            gid = group.group_id
            if group.regexes and gid not in self._regex_views:
                self._stale_regexes.add(gid)  # resolved again with the next view a heartbeat brings
            for pattern in list(group.regexes):
                if gid in self._regex_views:
                    self._resolve_regex(group, pattern, self._regex_views[gid])
            if self._subscription(group) != group.subscription:
                self._refresh_subscription(group, False)
            self._mark_checked(group)

    def complete_load(self, now_ms: int) -> None:
        """After replay: every member gets a fresh session (and each group checks its subscription against
        the topics with its first heartbeat: they may have changed while it was loading)."""
        self._now = now_ms
        self._topics_changed()
        for group in self.groups.values():
            for member in group.members.values():
                self.timers.schedule((_SESSION, group.group_id, member.member_id),
                                     now_ms + self.session_timeout_ms(group.group_id))

    # ================================================================ the rest of the group APIs

    def delete(self, group: ConsumerGroup) -> None:
        """Tombstone an Empty group's records (DeleteGroups, or retention)."""
        gid = group.group_id
        for pattern in list(group.regexes):
            self._emit(gid, REGULAR_EXPRESSION, {"group_id": gid, "regular_expression": pattern}, None)
        self._emit(gid, TARGET_METADATA, {"group_id": gid}, None)
        self._emit(gid, PARTITION_METADATA, {"group_id": gid}, None)
        self._emit(gid, GROUP_METADATA, {"group_id": gid}, None)
        self.groups.pop(gid, None)
        self.timers.cancel((_ASSIGN, gid))
        self._regex_views.pop(gid, None)
        self._stale_regexes.discard(gid)

    def validate_offset_commit(self, group: ConsumerGroup, member_id: str, epoch: int,
                               transactional: bool = False) -> ErrorCode | None:
        """Kafka's ``ConsumerGroup.validateOffsetCommit``: an admin commit (epoch < 0) only to an Empty group
        (a transactional one without member information to any group), a member's only with its current
        epoch (STALE_MEMBER_EPOCH; ILLEGAL_GENERATION in TxnOffsetCommit, which has no such error)."""
        if epoch < 0 and not group.members:
            return None
        if transactional and epoch < 0 and not member_id:
            return None
        member = group.members.get(member_id)
        if member is None:
            return E.UNKNOWN_MEMBER_ID
        if epoch != member.member_epoch:
            return E.ILLEGAL_GENERATION if transactional else E.STALE_MEMBER_EPOCH
        return None

    def validate_offset_fetch(self, group: ConsumerGroup, member_id: str | None, epoch: int) -> ErrorCode | None:
        """Kafka's ``ConsumerGroup.validateOffsetFetch`` (OffsetFetch v9+ with member id and epoch)."""
        if epoch < 0 and not member_id:
            return None
        member = group.members.get(member_id or "")
        if member is None:
            return E.UNKNOWN_MEMBER_ID
        if epoch != member.member_epoch:
            return E.STALE_MEMBER_EPOCH
        return None

    def describe(self, version: int, group_ids: Iterable[str]) -> list[Response]:
        """ConsumerGroupDescribe entries."""
        out = []
        for gid in group_ids:
            group = self.groups.get(gid)
            if group is None:
                message = f"Group {gid} is not a consumer group." if self._is_classic(gid) else \
                    f"Group {gid} not found."
                out.append({"error_code": E.GROUP_ID_NOT_FOUND, "error_message": message, "group_id": gid,
                            "group_state": "Dead", "group_epoch": -1, "assignment_epoch": -1, "assignor_name": "",
                            "members": [], "authorized_operations": -2147483648})
                continue
            names = {tid: name for name, (tid, _) in group.subscription.items()}

            def parts(assignment: TopicPartitions, names: dict[uuid.UUID, str] = names) -> dict[str, Any]:
                return {"topic_partitions": [{"topic_id": t, "topic_name": names.get(t, ""), "partitions": sorted(ps)}
                                             for t, ps in sorted(assignment.items(), key=lambda kv: names.get(kv[0], ""))]}

            members = []
            for m in sorted(group.members.values(), key=lambda m: m.member_id):
                members.append({"member_id": m.member_id, "instance_id": m.instance_id, "rack_id": m.rack_id,
                                "member_epoch": m.member_epoch, "client_id": m.client_id,
                                "client_host": m.client_host, "subscribed_topic_names": list(m.subscribed_topic_names),
                                "subscribed_topic_regex": m.subscribed_topic_regex, "assignment": parts(m.assigned),
                                "target_assignment": parts(group.target.get(m.member_id, {})),
                                "member_type": CONSUMER_MEMBER_TYPE})
            out.append({"error_code": E.NONE, "error_message": None, "group_id": gid, "group_state": group.state,
                        "group_epoch": group.group_epoch, "assignment_epoch": group.assignment_epoch,
                        "assignor_name": self._assignor(group), "members": members,
                        "authorized_operations": -2147483648})
        return out
