"""Group membership (Kafka's ``GroupMetadataManager``): classic groups, and the KIP-848 consumer groups and
KIP-932 share groups of a shard.

Owns the groups of one ``__consumer_offsets`` shard — classic groups (JoinGroup, SyncGroup,
Heartbeat, LeaveGroup, DescribeGroups, ListGroups, their timers), the
:class:`~broker.coordinator.group.consumer_group.ConsumerGroups` (ConsumerGroupHeartbeat /
Describe) and the :class:`~broker.coordinator.group.share_group.ShareGroups` (ShareGroupHeartbeat /
Describe) — and says what the offset manager and the shard may do with a group: who may commit or
fetch offsets, which offsets a group keeps, whether it may be deleted.  Committed offsets are
:mod:`broker.coordinator.group.offsets`'; the shard (:mod:`broker.coordinator.group.coordinator`)
composes the two.  Pure: every call runs inside the shard's :class:`~broker.coordinator.group.writes.ShardWrites`
(its time, its effects, its writes).

How records reach this state, as in Kafka:

* a classic group is in-memory ("soft") state: requests change it when they run, and the
  GroupMetadata record a write carries is its snapshot (Kafka writes classic groups without replaying
  the records).  What waits for such a write is a waiter of it (Kafka's append future): a group
  becomes Stable once its assignment is stored, a static member keeps its new id once stored and
  gets the old one back if the write fails.  :meth:`GroupMetadataManager.replay` rebuilds a group from
  its snapshot on load, and removes it on its tombstone: a deleted group is Dead while its tombstones
  are in flight and disappears when the shard replays the committed tombstone;
* consumer- and share-group records are replayed when emitted (the heartbeat state machine reads its
  own records back, as Kafka's runtime replays a write's records at once), committed with their write,
  and the groups reverted to what is stored when it fails (:meth:`ConsumerGroups.revert`,
  :meth:`ShareGroups.revert`).

Membership itself (joins, leaves, expiries) is not rolled back when the write that persists it
fails; the next successful group write carries it.

Classic dispatch table (state x input -> action); ``validate`` = Dead → COORDINATOR_NOT_AVAILABLE,
member/instance-id check → UNKNOWN_MEMBER_ID / FENCED_INSTANCE_ID, then generation →
ILLEGAL_GENERATION::

    input \\ state      Empty               PreparingRebalance     CompletingRebalance        Stable
    Join (new)         add, prepare(delay)  add, maybe complete    add, prepare               add, prepare
    Join (known)       UNKNOWN_MEMBER_ID    update, maybe complete same meta: current gen     leader/changed meta: prepare
                                                                   else update, prepare       else current gen
    Join (static "")   -                    replace, park          replace, prepare           replace; protocol kept:
                                                                                              persist + current gen
    Sync               UNKNOWN_MEMBER_ID    REBALANCE_IN_PROGRESS  park; leader: persist,     stored assignment
                                                                   reply all, → Stable
    Heartbeat          UNKNOWN_MEMBER_ID    REBALANCE_IN_PROGRESS  NONE (timer reset)         NONE (timer reset)
    Leave / expiry     -                    remove, maybe complete remove, prepare            remove, prepare
    OffsetCommit       gen<0: accept        accept (member)        REBALANCE_IN_PROGRESS      accept (member)
    join timer         -                    complete join          -                          -
    sync timer         -                    -                      drop unsynced, prepare     drop unsynced, prepare

"prepare" = PreparingRebalance with a join timer of max(rebalance_timeout_ms) (or, from Empty,
the initial delay extended while members keep arriving); "complete join" = drop dynamic members
that did not rejoin, re-elect a joined leader, next generation, reply to every parked JoinGroup.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from protocol.api import ApiKey
from protocol.error_codes import ErrorCode

from .config import GroupConfig
from .consumer_group import TIMER_KINDS, ConsumerGroups, TopicCatalog, TopicView
from .model import Group, GroupState, Member
from .records import GroupMetadataRecord, subscribed_topics
from .share_group import SHARE_TIMER_KINDS, ShareGroups
from .timers import KeyedTimers
from .writes import GroupWrite, ShardWrites, StateBefore, group_write_error

__all__ = ["CLASSIC_TIMER_KINDS", "GroupMetadataManager"]

log = logging.getLogger(__name__)

E = ErrorCode
EMPTY = GroupState.EMPTY
PREPARING = GroupState.PREPARING_REBALANCE
COMPLETING = GroupState.COMPLETING_REBALANCE
STABLE = GroupState.STABLE
DEAD = GroupState.DEAD

#: the classic membership APIs as plain ints for the request path (an IntEnum comparison costs more)
_JOIN_GROUP, _HEARTBEAT_API, _SYNC_GROUP = int(ApiKey.JOIN_GROUP), int(ApiKey.HEARTBEAT), int(ApiKey.SYNC_GROUP)

Request = Any           # a dict or a construct Container / protocol Obj with the schema's field names
Response = dict[str, Any]

_HEARTBEAT = "heartbeat"
_PENDING = "pending"
_JOIN = "join"
_INITIAL_DELAY = "initial-delay"
_SYNC = "sync"
#: the timer kinds of classic groups (and, :data:`TIMER_KINDS`, of consumer groups) in the shard's timers
CLASSIC_TIMER_KINDS = frozenset({_HEARTBEAT, _PENDING, _JOIN, _INITIAL_DELAY, _SYNC})


@dataclass(slots=True)
class _Join:
    """A decoded JoinGroup request plus its reply context."""

    version: int
    token: Hashable
    group_id: str
    member_id: str
    instance_id: str | None
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocol_type: str
    protocols: tuple[tuple[str, bytes], ...]
    client_id: str
    client_host: str


def default_member_id(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4()}"


def _inconsistent(requested: str | None, current: str | None) -> bool:
    return requested is not None and current is not None and requested != current


class GroupMetadataManager:
    """The classic, consumer and share groups of one shard (see the module doc).

    ``member_id_factory(prefix)`` makes classic member ids (Kafka: prefix + "-" + UUID);
    ``group_configs(group_id)`` a group's configs (KIP-848 overrides).
    """

    def __init__(self, config: GroupConfig, writes: ShardWrites, timers: KeyedTimers, *,
                 topics: TopicCatalog | None = None,
                 member_id_factory: Callable[[str], str] = default_member_id,
                 group_configs: Callable[[str], Mapping[str, str]] = lambda _gid: {}) -> None:
        self.config = config
        self._w = writes
        self.timers = timers
        self.groups: dict[str, Group] = {}
        #: the KIP-848 consumer groups of this shard (one shard holds both kinds; ids are unique across them)
        catalog = topics or _NoTopics()
        self.consumer = ConsumerGroups(config.consumer, catalog, timers,
                                       is_classic_group=self._classic_in_use, group_configs=group_configs)
        #: the share groups (KIP-932) of this shard
        self.share = ShareGroups(config.share, catalog, timers, other_group=self.other_group_kind,
                                 group_configs=group_configs)
        self._new_member_id = member_id_factory
        # groups whose deletion is in flight (Dead for writes, still Empty for reads)
        self._deleting: dict[str, Group] = {}

    # ============================================================================ replay

    def replay(self, record: GroupMetadataRecord) -> None:
        """Apply a classic group's record: its metadata rebuilds the group, its tombstone removes it.

        A load replays both.  Live, a group is already what the snapshot its write carries says (requests
        change it in memory, as Kafka's), so the shard replays only the tombstone of a deletion that
        commits (:meth:`deletion_committed`)."""
        if record.value is None:
            self.groups.pop(record.group_id, None)
        else:
            self.groups[record.group_id] = self._group_from_record(record.group_id, record.value)

    def ensure_group(self, group_id: str) -> None:
        """A group with committed offsets exists: offsets of a client that does not use group membership
        make a "simple" group (an Empty classic group without a protocol type), as Kafka's."""
        if group_id not in self.groups and group_id not in self.consumer.groups and group_id not in self.share.groups:
            self.groups[group_id] = Group(group_id)

    def _group_from_record(self, group_id: str, v: dict[str, Any]) -> Group:
        group = Group(group_id, v["current_state_timestamp"])
        protocol_type = v["protocol_type"] or None
        protocol = v["protocol"]
        for mm in v["members"]:
            session = mm["session_timeout"]
            rebalance = mm["rebalance_timeout"]
            member = Member(mm["member_id"], mm["group_instance_id"], mm["client_id"], mm["client_host"],
                            rebalance if rebalance > 0 else session, session, protocol_type or "",
                            ((protocol, bytes(mm["subscription"])),) if protocol is not None else ())
            member.assignment = bytes(mm["assignment"])
            group.add(member)
        group.protocol_type = protocol_type
        group.generation_id = v["generation"]
        group.protocol_name = protocol
        group.leader_id = v["leader"] if group.members else None
        group.state = STABLE if group.members else EMPTY
        return group

    def complete_load(self, now_ms: int) -> None:
        """After replay: arm a session timer for every reloaded member (Kafka's onLoaded)."""
        for gid in [gid for gid, group in self.groups.items() if gid in self.consumer.groups and not group.members]:
            del self.groups[gid]  # the "simple" group of a consumer group's offsets
        for group in self.groups.values():
            for member in group.members.values():
                self._reschedule_heartbeat(group, member)
        self.consumer.complete_load(now_ms)
        self.share.complete_load(now_ms)

    # ============================================================================ writes completing

    def deletion_committed(self, group_id: str, group: Group | None) -> bool:
        """The tombstone of ``group_id`` (deleting ``group``, None when only offsets existed) committed:
        whether the classic group it removes is still there (the caller replays the tombstone)."""
        if group is not None:
            if self._deleting.get(group_id) is not group:
                return False
            del self._deleting[group_id]
            return True
        # without a group (only offset commits in flight) the tombstone deletes the "simple" group their
        # commit made, as it follows them in the log; a group that came after the deletion keeps the id
        return _simple(self.groups.get(group_id))

    def deletion_failed(self, group: Group | None, before: StateBefore) -> None:
        """The tombstone deleting ``group`` could not be written: it is what it was before."""
        if group is not None:
            self._group_kept(group, before)

    def consumer_records_committed(self, records: list[tuple[str, bytes, bytes | None]]) -> None:
        """A write of consumer- or share-group records (replayed when emitted) committed: they are what is
        stored."""
        self.consumer.committed(records)
        self.share.committed(records)

    def consumer_records_failed(self, failed: list[tuple[str, bytes, bytes | None]],
                                in_flight: list[tuple[str, bytes, bytes | None]]) -> set[str]:
        """A write of consumer- or share-group records failed: its groups go back to their committed records
        and those of ``in_flight`` (the writes still to complete); the group ids reverted."""
        reverted = {gid for gid, _, _ in failed}
        self.consumer.revert(self._w.now, reverted, in_flight)
        self.share.revert(self._w.now, reverted, in_flight)
        return reverted

    # ============================================================================ consumer groups (KIP-848)

    def consumer_group_heartbeat(self, api_version: int, request: Request, token: Hashable, *,
                                 client_id: str = "", client_host: str = "", topic_view: TopicView = None) -> None:
        """ConsumerGroupHeartbeat v0-1 (see :mod:`broker.coordinator.group.consumer_group`); the reply waits for its
        records."""
        gid = request.get("group_id") or ""
        classic = self.groups.get(gid)
        if (classic is not None and not classic.members and classic.state is not DEAD and gid not in self._deleting
                and request.get("member_epoch") == 0):
            # an Empty classic group (offsets only) becomes a consumer group, as Kafka converts it
            del self.groups[gid]
            self._w.for_group(gid).write.records.append(GroupMetadataRecord(gid, None).encode())
        response = self.consumer.heartbeat(self._w.now, api_version, request, client_id, client_host, topic_view)

        def failed(_pw: GroupWrite, append_error: ErrorCode) -> None:
            response.update(error_code=group_write_error(append_error), assignment=None)

        self._w.reply_after(self.consumer_writes(), token, response, failed)

    def consumer_group_describe(self, api_version: int, request: Request, token: Hashable) -> None:
        """ConsumerGroupDescribe v0-1."""
        self._w.reply(token, {"throttle_time_ms": 0,
                              "groups": self.consumer.describe(api_version, request.get("group_ids") or ())})

    def metadata_changed(self) -> None:
        """Topics were created, deleted or changed: consumer and share groups refresh their subscriptions (and
        targets)."""
        self.consumer.metadata_changed(self._w.now)
        self.share.metadata_changed(self._w.now)
        self.consumer_writes()

    def consumer_writes(self) -> list[GroupWrite]:
        """Put the records the consumer and share groups emitted into this call's writes; when one commits
        its records become the groups' committed state, when one fails its groups revert to that state."""
        writes: dict[int, GroupWrite] = {}
        for gid, key, value in [*self.consumer.drain(), *self.share.drain()]:
            partition = self._w.partition(gid)
            pw = writes.get(partition)
            if pw is None:
                pw = writes[partition] = self._w.write(partition)
            pw.write.records.append((key, value))
            pw.consumer_records.append((gid, key, value))
        return list(writes.values())

    def _classic_in_use(self, group_id: str) -> bool:
        """A share group, or a classic group with members (or being deleted), holds ``group_id``."""
        group = self.groups.get(group_id)
        return group_id in self.share.groups or (
            group is not None and (bool(group.members) or group.state is DEAD or group_id in self._deleting))

    def other_group_kind(self, group_id: str) -> str | None:
        """The kind of group of another type holding ``group_id`` (a share group cannot take it)."""
        if group_id in self.consumer.groups:
            return "consumer"
        group = self.groups.get(group_id)
        if group is not None and group.state is not DEAD:
            return "classic"
        return None

    def names_other_group(self, request: Request) -> bool:
        """The classic request names a consumer or share group (see :meth:`classic_on_other_group`)."""
        gid = request.get("group_id") or ""
        return gid in self.consumer.groups or gid in self.share.groups

    def classic_on_other_group(self, api_key: int, version: int, request: Request, token: Hashable) -> None:
        """A classic-protocol request naming a consumer or share group: Kafka's errors
        (INCONSISTENT_GROUP_PROTOCOL for JoinGroup, UNKNOWN_MEMBER_ID for the rest); an Empty consumer
        group is converted by a JoinGroup."""
        gid = request.get("group_id") or ""
        group = self.consumer.groups.get(gid)
        if group is not None and not group.members and api_key == _JOIN_GROUP:
            self.consumer.delete(group)
            self.consumer_writes()
            self.join_group(version, request, token)
        elif api_key == _JOIN_GROUP:
            self._join_error(_Join(version, token, gid, request.get("member_id") or "", None, 0, 0, "",
                                   (), "", ""), E.INCONSISTENT_GROUP_PROTOCOL)
        elif api_key == _SYNC_GROUP:
            self._w.reply(token, _sync_response(version, E.UNKNOWN_MEMBER_ID))
        elif api_key == _HEARTBEAT_API:
            self._w.reply(token, _heartbeat_response(version, E.UNKNOWN_MEMBER_ID))
        else:
            resp: Response = {"error_code": E.UNKNOWN_MEMBER_ID}
            if version >= 1:
                resp["throttle_time_ms"] = 0
            if version >= 3:
                resp["members"] = []
            self._w.reply(token, resp)

    # ============================================================================ JoinGroup

    def join_group(self, api_version: int, request: Request, token: Hashable, *,
                   client_id: str = "", client_host: str = "") -> None:
        """JoinGroup v2-9. ``client_id``/``client_host`` come from the request header/connection."""
        g = request.get
        session = g("session_timeout_ms")
        rebalance = g("rebalance_timeout_ms", -1)
        jr = _Join(
            version=api_version, token=token, group_id=g("group_id") or "", member_id=g("member_id") or "",
            instance_id=g("group_instance_id") if api_version >= 5 else None,
            session_timeout_ms=session,
            rebalance_timeout_ms=rebalance if rebalance is not None and rebalance > 0 else session,
            protocol_type=g("protocol_type") or "",
            protocols=tuple((p.get("name"), bytes(p.get("metadata") or b"")) for p in g("protocols") or ()),
            client_id=client_id or "", client_host=client_host or "")
        self._join(jr)

    def _join(self, jr: _Join) -> None:
        cfg = self.config
        if not jr.group_id:
            return self._join_error(jr, E.INVALID_GROUP_ID)
        if not cfg.min_session_timeout_ms <= jr.session_timeout_ms <= cfg.max_session_timeout_ms:
            return self._join_error(jr, E.INVALID_SESSION_TIMEOUT)
        group = self.groups.get(jr.group_id)
        is_new_group = group is None
        if group is None:
            if jr.member_id:
                return self._join_error(jr, E.UNKNOWN_MEMBER_ID)
            group = Group(jr.group_id, self._w.now)
        if group.state is DEAD:
            return self._join_error(jr, E.COORDINATOR_NOT_AVAILABLE)
        if not self._accept_joining_member(group, jr):
            member = group.members.get(jr.member_id)
            if member is not None:
                self._remove_member(group, member, "group max size reached")
                self._after_removal(group)
            return self._join_error(jr, E.GROUP_MAX_SIZE_REACHED, member_id="")
        if not group.supports_protocols(jr.protocol_type, [name for name, _ in jr.protocols]):
            return self._join_error(jr, E.INCONSISTENT_GROUP_PROTOCOL)
        if is_new_group:
            self.groups[jr.group_id] = group
        if jr.member_id:
            self._join_known_member(group, jr)
        else:
            self._join_new_member(group, jr)

    def _accept_joining_member(self, group: Group, jr: _Join) -> bool:
        """Kafka's ``acceptJoiningMember`` (group.max.size)."""
        max_size = self.config.max_size
        if group.state in (EMPTY, DEAD):
            return True
        if not jr.member_id and jr.instance_id is not None and jr.instance_id in group.static_members:
            return True  # a known static member replacing itself does not grow the group
        if group.state is PREPARING:
            member = group.members.get(jr.member_id)
            return (member is not None and member.awaiting_join) or group.num_awaiting_join < max_size
        return jr.member_id in group.members or len(group.members) < max_size

    def _join_new_member(self, group: Group, jr: _Join) -> None:
        member_id = self._new_member_id(jr.instance_id if jr.instance_id is not None else jr.client_id)
        if jr.instance_id is not None:
            old_id = group.static_members.get(jr.instance_id)
            if old_id is None:
                self._add_member_and_rebalance(group, jr, member_id)
            else:
                self._update_static_member_and_rebalance(group, jr, old_id, member_id)
        elif jr.version >= 4:
            # KIP-394: hand out the id, remember it as pending, expect a rejoin with it.
            group.pending_members.add(member_id)
            self.timers.schedule((_PENDING, group.group_id, member_id), self._w.now + jr.session_timeout_ms)
            self._join_error(jr, E.MEMBER_ID_REQUIRED, member_id=member_id)
        else:
            self._add_member_and_rebalance(group, jr, member_id)

    def _join_known_member(self, group: Group, jr: _Join) -> None:
        if jr.member_id in group.pending_members:
            return self._add_member_and_rebalance(group, jr, jr.member_id)
        error = self._validate_member(group, jr.member_id, jr.instance_id)
        if error is not None:
            return self._join_error(jr, error)
        member = group.members[jr.member_id]
        state = group.state
        if state is PREPARING:
            self._update_member_and_rebalance(group, member, jr)
        elif state is COMPLETING:
            if member.protocols == jr.protocols:
                # A retried JoinGroup: the member already has this generation.
                self._reschedule_heartbeat(group, member)
                self._reply_current_generation(group, member, jr, with_members=member.member_id == group.leader_id)
            else:
                self._update_member_and_rebalance(group, member, jr)
        elif state is STABLE:
            if member.member_id == group.leader_id or member.protocols != jr.protocols:
                self._update_member_and_rebalance(group, member, jr)
            else:
                self._reschedule_heartbeat(group, member)
                self._reply_current_generation(group, member, jr, with_members=False)
        else:  # Empty groups have no members; Dead was rejected earlier
            self._join_error(jr, E.UNKNOWN_MEMBER_ID)

    def _add_member_and_rebalance(self, group: Group, jr: _Join, member_id: str) -> None:
        member = Member(member_id, jr.instance_id, jr.client_id, jr.client_host, jr.rebalance_timeout_ms,
                        jr.session_timeout_ms, jr.protocol_type, jr.protocols)
        member.is_new = True
        member.join_token = jr.token
        member.join_version = jr.version
        if group.state is PREPARING and group.initial_delay_ms > 0:
            group.new_member_added = True
        group.add(member)
        if member_id in group.pending_members:
            group.pending_members.discard(member_id)
            self.timers.cancel((_PENDING, group.group_id, member_id))
        # New members cannot heartbeat while parked: expire them after the new-member join timeout.
        self.timers.schedule((_HEARTBEAT, group.group_id, member_id),
                             self._w.now + self.config.new_member_join_timeout_ms)
        self._rebalance_or_complete(group, f"member {member_id} joined")

    def _update_member_and_rebalance(self, group: Group, member: Member, jr: _Join) -> None:
        group.update_protocols(member, jr.protocols)
        member.rebalance_timeout_ms = jr.rebalance_timeout_ms
        member.session_timeout_ms = jr.session_timeout_ms
        old_version = member.join_version
        old = group.set_join(member, jr.token, jr.version)
        if old is not None:  # superseded by a newer JoinGroup from the same member
            self._w.reply(old, _join_response(old_version, E.REBALANCE_IN_PROGRESS, member.member_id))
        self._rebalance_or_complete(group, f"member {member.member_id} rejoined")

    def _update_static_member_and_rebalance(self, group: Group, jr: _Join, old_id: str, new_id: str) -> None:
        """A known ``group.instance.id`` rejoins with an empty member id: fence the old incarnation."""
        member = group.members[old_id]
        old_leader = group.leader_id
        previous = (member.protocols, member.rebalance_timeout_ms, member.session_timeout_ms,
                    member.client_id, member.client_host)
        self._fence_parked(group, member)
        group.replace_static(member, new_id)
        self.timers.cancel((_HEARTBEAT, group.group_id, old_id))
        group.update_protocols(member, jr.protocols)
        member.rebalance_timeout_ms = jr.rebalance_timeout_ms
        member.session_timeout_ms = jr.session_timeout_ms
        member.client_id = jr.client_id
        member.client_host = jr.client_host
        self._reschedule_heartbeat(group, member)
        state = group.state
        if state is STABLE and group.select_protocol() == group.protocol_name:
            # No rebalance: persist the new member id, then hand back the current generation.
            pw = self._store_group(group)
            skip = jr.version >= 9
            is_leader = group.leader_id == new_id
            response = _join_response(
                jr.version, E.NONE, new_id, group.generation_id, group.protocol_type, group.protocol_name,
                leader=(group.leader_id if skip else old_leader) or "",
                members=self._leader_member_list(group, jr.version) if skip and is_leader else [],
                skip_assignment=skip and is_leader)
            pw.wait(lambda: self._w.reply(jr.token, response),
                    lambda error: self._static_rejoin_failed(group, jr, old_id, new_id, previous, error))
            return
        group.set_join(member, jr.token, jr.version)
        if state is PREPARING:
            self._maybe_complete_join(group)
        else:
            self._prepare_rebalance(group, f"static member {jr.instance_id} rejoined as {new_id}")

    def _static_rejoin_failed(self, group: Group, jr: _Join, old_id: str, new_id: str,
                              previous: tuple[Any, ...], error: ErrorCode) -> None:
        """The new member id of a static member could not be stored: give the old one back (Kafka)."""
        gid = group.group_id
        member = group.members.get(new_id)
        if (self.groups.get(gid) is group and member is not None and jr.instance_id is not None
                and group.static_members.get(jr.instance_id) == new_id):
            group.replace_static(member, old_id)
            protocols, member.rebalance_timeout_ms, member.session_timeout_ms, member.client_id, \
                member.client_host = previous
            group.update_protocols(member, protocols)
            self.timers.cancel((_HEARTBEAT, gid, new_id))
            self._reschedule_heartbeat(group, member)
        log.warning("group %s: static member %s kept member id %s: storing %s failed", gid, jr.instance_id,
                    old_id, new_id)
        self._w.reply(jr.token, _join_response(jr.version, group_write_error(error), "", group.generation_id,
                                             group.protocol_type, group.protocol_name,
                                             leader=group.leader_id or ""))

    def _fence_parked(self, group: Group, member: Member) -> None:
        """The old incarnation of a replaced static member gets FENCED_INSTANCE_ID if parked."""
        if member.join_token is not None:
            self._w.reply(member.join_token,
                        _join_response(member.join_version, E.FENCED_INSTANCE_ID, member.member_id))
            group.set_join(member, None)
        if member.sync_token is not None:
            self._w.reply(member.sync_token, _sync_response(member.sync_version, E.FENCED_INSTANCE_ID))
            member.sync_token = None

    def _reply_current_generation(self, group: Group, member: Member, jr: _Join, with_members: bool) -> None:
        self._w.reply(jr.token, _join_response(
            jr.version, E.NONE, member.member_id, group.generation_id, group.protocol_type,
            group.protocol_name, leader=group.leader_id or "",
            members=self._leader_member_list(group, jr.version) if with_members else []))

    def _join_error(self, jr: _Join, error: ErrorCode, member_id: str | None = None) -> None:
        self._w.reply(jr.token, _join_response(jr.version, error, jr.member_id if member_id is None else member_id))

    def _leader_member_list(self, group: Group, version: int) -> list[Response]:
        protocol = group.protocol_name
        if version >= 5:
            return [{"member_id": m.member_id, "group_instance_id": m.group_instance_id,
                     "metadata": m.metadata(protocol)} for m in group.members.values()]
        return [{"member_id": m.member_id, "metadata": m.metadata(protocol)} for m in group.members.values()]

    # ---------------------------------------------------------------- rebalance machinery

    def _rebalance_or_complete(self, group: Group, reason: str) -> None:
        if group.state is PREPARING:
            self._maybe_complete_join(group)
        elif group.state in (EMPTY, STABLE, COMPLETING):
            self._prepare_rebalance(group, reason)

    def _prepare_rebalance(self, group: Group, reason: str) -> None:
        gid = group.group_id
        if group.state is COMPLETING:
            # Parked SyncGroups (followers waiting for the leader) learn that the generation is gone.
            for member in group.members.values():
                member.assignment = b""
                if member.sync_token is not None:
                    self._w.reply(member.sync_token, _sync_response(member.sync_version, E.REBALANCE_IN_PROGRESS))
                    member.sync_token = None
        self.timers.cancel((_SYNC, gid))
        group.pending_sync.clear()
        initial = group.state is EMPTY and self.config.initial_rebalance_delay_ms > 0
        log.info("group %s: preparing rebalance (generation %d): %s", gid, group.generation_id, reason)
        group.transition_to(PREPARING, self._w.now)
        if initial:
            delay = self.config.initial_rebalance_delay_ms
            group.initial_delay_ms = delay
            group.initial_remaining_ms = max(group.rebalance_timeout_ms() - delay, 0)
            group.new_member_added = False
            self.timers.schedule((_INITIAL_DELAY, gid), self._w.now + delay)
        else:
            group.initial_delay_ms = 0
            self.timers.schedule((_JOIN, gid), self._w.now + group.rebalance_timeout_ms())
            self._maybe_complete_join(group)

    def _maybe_complete_join(self, group: Group) -> None:
        if group.state is PREPARING and group.initial_delay_ms == 0 and group.has_all_members_joined():
            self._complete_join(group)

    def _complete_join(self, group: Group) -> None:
        gid = group.group_id
        self.timers.cancel((_JOIN, gid))
        self.timers.cancel((_INITIAL_DELAY, gid))
        group.initial_delay_ms = 0
        if group.state is not PREPARING:
            return
        # Dynamic members that did not rejoin in time are out; static members stay.
        for m in [m for m in group.members.values() if m.join_token is None and m.group_instance_id is None]:
            self._remove_member(group, m, "did not rejoin before the rebalance timeout")
        if group.members and not self._maybe_elect_new_joined_leader(group):
            log.info("group %s: no member rejoined; rescheduling the join", gid)
            self.timers.schedule((_JOIN, gid), self._w.now + group.rebalance_timeout_ms())
            return
        group.generation_id += 1
        group.subscribed_known = False
        if not group.members:
            group.protocol_name = None
            group.transition_to(EMPTY, self._w.now)
            self._store_group(group)
            return
        group.protocol_name = group.select_protocol()
        group.transition_to(COMPLETING, self._w.now)
        log.info("group %s: generation %d with %d members (protocol %s)",
                 gid, group.generation_id, len(group.members), group.protocol_name)
        leader_id = group.leader_id
        for member in group.members.values():
            token = member.join_token
            if token is not None:
                version = member.join_version
                members: list[Response] = []
                if member.member_id == leader_id:
                    members = self._leader_member_list(group, version)
                self._w.reply(token, _join_response(version, E.NONE, member.member_id, group.generation_id,
                                                  group.protocol_type, group.protocol_name,
                                                  leader=leader_id or "", members=members))
                group.set_join(member, None)
            member.is_new = False
            self._reschedule_heartbeat(group, member)
            group.pending_sync.add(member.member_id)
        self.timers.schedule((_SYNC, gid), self._w.now + group.rebalance_timeout_ms())

    @staticmethod
    def _maybe_elect_new_joined_leader(group: Group) -> bool:
        leader = group.members.get(group.leader_id) if group.leader_id is not None else None
        if leader is None:
            return False
        if leader.join_token is not None:
            return True
        for member in group.members.values():
            if member.join_token is not None:
                group.leader_id = member.member_id
                return True
        return False

    def _remove_member(self, group: Group, member: Member, reason: str) -> None:
        """Drop a member (no rebalance decision); its parked requests get UNKNOWN_MEMBER_ID."""
        if member.join_token is not None:
            self._w.reply(member.join_token, _join_response(member.join_version, E.UNKNOWN_MEMBER_ID, ""))
        if member.sync_token is not None:
            self._w.reply(member.sync_token, _sync_response(member.sync_version, E.UNKNOWN_MEMBER_ID))
            member.sync_token = None
        group.remove(member.member_id)
        self.timers.cancel((_HEARTBEAT, group.group_id, member.member_id))
        log.debug("group %s: removed member %s: %s", group.group_id, member.member_id, reason)

    def _after_removal(self, group: Group) -> None:
        if group.state in (STABLE, COMPLETING):
            self._prepare_rebalance(group, "member left or expired")
        elif group.state is PREPARING:
            self._maybe_complete_join(group)

    def _reschedule_heartbeat(self, group: Group, member: Member) -> None:
        self.timers.schedule((_HEARTBEAT, group.group_id, member.member_id),
                             self._w.now + member.session_timeout_ms)

    @staticmethod
    def _validate_member(group: Group, member_id: str, instance_id: str | None) -> ErrorCode | None:
        if instance_id is not None:
            existing = group.static_members.get(instance_id)
            if existing is None:
                return E.UNKNOWN_MEMBER_ID
            if existing != member_id:
                return E.FENCED_INSTANCE_ID
            return None
        if member_id not in group.members:
            return E.UNKNOWN_MEMBER_ID
        return None

    def _validate_generation(self, group: Group | None, member_id: str, instance_id: str | None,
                             generation_id: int) -> ErrorCode | None:
        """Sync/Heartbeat validation: Dead, member/instance, generation."""
        if group is None:
            return E.UNKNOWN_MEMBER_ID
        if group.state is DEAD:
            return E.COORDINATOR_NOT_AVAILABLE
        error = self._validate_member(group, member_id, instance_id)
        if error is not None:
            return error
        if generation_id != group.generation_id:
            return E.ILLEGAL_GENERATION
        return None

    def _store_group(self, group: Group) -> GroupWrite:
        """Add the group's metadata record to its partition's write; returns that write."""
        protocol = group.protocol_name
        value = {
            "protocol_type": group.protocol_type or "",
            "generation": group.generation_id,
            "protocol": protocol,
            "leader": group.leader_id if group.members else None,
            "current_state_timestamp": group.current_state_timestamp,
            "members": [{
                "member_id": m.member_id, "group_instance_id": m.group_instance_id,
                "client_id": m.client_id, "client_host": m.client_host,
                "rebalance_timeout": m.rebalance_timeout_ms, "session_timeout": m.session_timeout_ms,
                "subscription": m.metadata(protocol), "assignment": m.assignment,
            } for m in group.members.values()],
        }
        pw = self._w.for_group(group.group_id)
        pw.write.records.append(GroupMetadataRecord(group.group_id, value).encode())
        return pw

    def _subscribed(self, group: Group) -> frozenset[str] | None:
        """Union of the members' consumer subscriptions (None: not a consumer group / unparsable)."""
        if not group.subscribed_known:
            topics: set[str] | None = None
            if group.protocol_type == "consumer" and group.protocol_name is not None and group.members:
                topics = set()
                for m in group.members.values():
                    sub = subscribed_topics(m.metadata(group.protocol_name))
                    if sub is None:
                        topics = None
                        break
                    topics |= sub
            group.subscribed = frozenset(topics) if topics is not None else None
            group.subscribed_known = True
        return group.subscribed

    # ============================================================================ SyncGroup

    def sync_group(self, api_version: int, request: Request, token: Hashable) -> None:
        """SyncGroup v0-5."""
        g = request.get
        group_id = g("group_id") or ""
        member_id = g("member_id") or ""
        instance_id = g("group_instance_id") if api_version >= 3 else None
        v = api_version
        if not group_id:
            self._w.reply(token, _sync_response(v, E.INVALID_GROUP_ID))
            return
        group = self.groups.get(group_id)
        error = self._validate_generation(group, member_id, instance_id, g("generation_id"))
        if error is None and api_version >= 5 and group is not None and (
                _inconsistent(g("protocol_type"), group.protocol_type)
                or _inconsistent(g("protocol_name"), group.protocol_name)):
            error = E.INCONSISTENT_GROUP_PROTOCOL
        if error is not None:
            self._w.reply(token, _sync_response(v, error))
            return
        assert group is not None
        state = group.state
        if state is EMPTY:
            self._w.reply(token, _sync_response(v, E.UNKNOWN_MEMBER_ID))
        elif state is PREPARING:
            self._w.reply(token, _sync_response(v, E.REBALANCE_IN_PROGRESS))
        elif state is COMPLETING:
            member = group.members[member_id]
            if member.sync_token is not None:
                self._w.reply(member.sync_token, _sync_response(member.sync_version, E.REBALANCE_IN_PROGRESS))
            member.sync_token = token
            member.sync_version = v
            self._synced(group, member)
            if member_id == group.leader_id:
                assignments = {a.get("member_id"): bytes(a.get("assignment") or b"")
                               for a in g("assignments") or ()}
                for m in group.members.values():
                    m.assignment = assignments.get(m.member_id, b"")
                # The group becomes Stable and the parked members get their assignments only
                # once the assignment is stored (Kafka's storeGroup callback).
                pw = self._store_group(group)
                generation = group.generation_id
                pw.wait(lambda: self._assignment_stored(group, generation),
                        lambda error: self._assignment_failed(group, generation, error))
        else:  # Stable
            member = group.members[member_id]
            self._synced(group, member)
            self._w.reply(token, _sync_response(v, E.NONE, group, member.assignment))

    def _still_completing(self, group: Group, generation: int) -> bool:
        """The group a stored assignment was for is still waiting for it (no rebalance since)."""
        return (self.groups.get(group.group_id) is group and group.state is COMPLETING
                and group.generation_id == generation)

    def _assignment_stored(self, group: Group, generation: int) -> None:
        if not self._still_completing(group, generation):
            return
        group.transition_to(STABLE, self._w.now)
        log.info("group %s: stable at generation %d", group.group_id, generation)
        for m in group.members.values():
            if m.sync_token is not None:
                self._w.reply(m.sync_token, _sync_response(m.sync_version, E.NONE, group, m.assignment))
                m.sync_token = None

    def _assignment_failed(self, group: Group, generation: int, error: ErrorCode) -> None:
        """Kafka's ``resetAndPropagateAssignmentWithError`` then ``maybePrepareRebalanceOrCompleteJoin``."""
        if not self._still_completing(group, generation):
            return
        code = group_write_error(error)
        for m in group.members.values():
            m.assignment = b""
            if m.sync_token is not None:
                self._w.reply(m.sync_token, _sync_response(m.sync_version, code))
                m.sync_token = None
        self._prepare_rebalance(group, f"error {code.name} when storing the assignment")

    def _synced(self, group: Group, member: Member) -> None:
        self._reschedule_heartbeat(group, member)
        pending = group.pending_sync
        if member.member_id in pending:
            pending.discard(member.member_id)
            if not pending:
                self.timers.cancel((_SYNC, group.group_id))

    # ============================================================================ Heartbeat

    def heartbeat(self, api_version: int, request: Request, token: Hashable) -> None:
        """Heartbeat v0-4."""
        g = request.get
        group_id = g("group_id") or ""
        member_id = g("member_id") or ""
        instance_id = g("group_instance_id") if api_version >= 3 else None
        if not group_id:
            error: ErrorCode | None = E.INVALID_GROUP_ID
        else:
            group = self.groups.get(group_id)
            error = self._validate_generation(group, member_id, instance_id, g("generation_id"))
            if error is None:
                assert group is not None
                if group.state is EMPTY:
                    error = E.UNKNOWN_MEMBER_ID
                else:
                    self._reschedule_heartbeat(group, group.members[member_id])
                    error = E.REBALANCE_IN_PROGRESS if group.state is PREPARING else E.NONE
        self._w.reply(token, _heartbeat_response(api_version, error))

    def heartbeat_now(self, now_ms: int, api_version: int, request: Request) -> Response | None:
        """Heartbeat's common case, answered without effects: a member of a Stable or CompletingRebalance
        classic group, in its generation (a static member by its own instance id), whose session timer
        is armed to fire no later than its new deadline (so no timer is re-armed).  None for anything
        else, changing nothing: the caller then runs :meth:`heartbeat`, which answers the same case the
        same way."""
        g = request.get
        group = self.groups.get(g("group_id") or "")
        if group is None or (group.state is not STABLE and group.state is not COMPLETING):
            return None
        member_id = g("member_id") or ""
        instance_id = g("group_instance_id") if api_version >= 3 else None
        if self._validate_generation(group, member_id, instance_id, g("generation_id")) is not None:
            return None
        member = group.members[member_id]
        if not self.timers.postpone((_HEARTBEAT, group.group_id, member_id), now_ms + member.session_timeout_ms):
            return None
        return _heartbeat_response(api_version, E.NONE)

    # ============================================================================ LeaveGroup

    def leave_group(self, api_version: int, request: Request, token: Hashable) -> None:
        """LeaveGroup v0-5 (v3+ batches members by member id and/or group instance id)."""
        g = request.get
        v = api_version
        group_id = g("group_id") or ""
        if v >= 3:
            identities = [(m.get("member_id") or "", m.get("group_instance_id")) for m in g("members") or ()]
        else:
            identities = [(g("member_id") or "", None)]
        group = self.groups.get(group_id)
        top: ErrorCode = E.NONE
        if not group_id:
            top = E.INVALID_GROUP_ID
        elif group is None:
            top = E.UNKNOWN_MEMBER_ID
        elif group.state is DEAD:
            top = E.COORDINATOR_NOT_AVAILABLE
        results: list[tuple[str, str | None, ErrorCode]] = []
        if top is E.NONE:
            assert group is not None
            removed = False
            for member_id, instance_id in identities:
                error: ErrorCode = E.NONE
                if not member_id:
                    target = group.static_members.get(instance_id) if instance_id is not None else None
                    if target is None:
                        error = E.UNKNOWN_MEMBER_ID
                    else:
                        self._remove_member(group, group.members[target], "left (admin, by instance id)")
                        removed = True
                elif member_id in group.pending_members:
                    group.pending_members.discard(member_id)
                    self.timers.cancel((_PENDING, group_id, member_id))
                    removed = True
                else:
                    found = self._validate_member(group, member_id, instance_id)
                    if found is not None:
                        error = found
                    else:
                        self._remove_member(group, group.members[member_id], "left the group")
                        removed = True
                results.append((member_id, instance_id, error))
            if removed:
                self._after_removal(group)
        resp: Response = {"error_code": top}
        if v >= 1:
            resp["throttle_time_ms"] = 0
        if v >= 3:
            resp["members"] = [{"member_id": mid, "group_instance_id": iid, "error_code": err}
                               for mid, iid, err in results]
        elif results:
            resp["error_code"] = results[0][2]
        self._w.reply(token, resp)

    # ============================================================================ timers

    def on_timer(self, key: Any) -> None:
        """A timer of :data:`CLASSIC_TIMER_KINDS`, the consumer groups' :data:`TIMER_KINDS` or the share
        groups' :data:`SHARE_TIMER_KINDS` fired."""
        kind = key[0]
        if kind in TIMER_KINDS:
            self.consumer.on_timer(self._w.now, key)
            self.consumer_writes()
        elif kind in SHARE_TIMER_KINDS:
            self.share.on_timer(self._w.now, key)
            self.consumer_writes()
        elif kind == _HEARTBEAT:
            self._on_session_expired(key[1], key[2])
        elif kind == _JOIN:
            group = self.groups.get(key[1])
            if group is not None and group.state is PREPARING:
                self._complete_join(group)
        elif kind == _INITIAL_DELAY:
            self._on_initial_delay(key[1])
        elif kind == _SYNC:
            self._on_sync_expired(key[1])
        elif kind == _PENDING:
            self._on_pending_expired(key[1], key[2])

    def _on_session_expired(self, group_id: str, member_id: str) -> None:
        group = self.groups.get(group_id)
        member = group.members.get(member_id) if group is not None else None
        if group is None or member is None:
            return
        if member.has_satisfied_heartbeat():
            self._reschedule_heartbeat(group, member)
            return
        log.info("group %s: member %s session expired", group_id, member_id)
        self._remove_member(group, member, "session timeout")
        self._after_removal(group)

    def _on_pending_expired(self, group_id: str, member_id: str) -> None:
        group = self.groups.get(group_id)
        if group is not None and member_id in group.pending_members:
            group.pending_members.discard(member_id)
            self._maybe_complete_join(group)

    def _on_initial_delay(self, group_id: str) -> None:
        group = self.groups.get(group_id)
        if group is None or group.state is not PREPARING or group.initial_delay_ms == 0:
            return
        remaining = group.initial_remaining_ms
        if group.new_member_added and remaining > 0:
            # Members are still arriving: wait another delay, bounded by the rebalance timeout.
            group.new_member_added = False
            delay = min(self.config.initial_rebalance_delay_ms, remaining)
            group.initial_remaining_ms = max(remaining - group.initial_delay_ms, 0)
            group.initial_delay_ms = delay
            self.timers.schedule((_INITIAL_DELAY, group_id), self._w.now + delay)
            return
        self._complete_join(group)

    def _on_sync_expired(self, group_id: str) -> None:
        group = self.groups.get(group_id)
        if group is None or group.state not in (COMPLETING, STABLE) or not group.pending_sync:
            return
        for member_id in list(group.pending_sync):
            member = group.members.get(member_id)
            if member is not None:
                self._remove_member(group, member, "no SyncGroup before the rebalance timeout")
        group.pending_sync.clear()
        self._prepare_rebalance(group, "pending SyncGroup expired")

    # ============================================================================ what offsets may do with a group

    def validate_offset_commit(self, group_id: str, member_id: str, instance_id: str | None, generation: int,
                               version: int) -> ErrorCode | None:
        """OffsetCommit: may this member (or an admin, ``generation`` < 0) commit for ``group_id``?  A member's
        accepted commit counts as its heartbeat.  A group id with no group is a "simple" group, made when
        the commit is applied."""
        consumer_group = self.consumer.groups.get(group_id)
        if consumer_group is not None:
            return self.consumer.validate_offset_commit(consumer_group, member_id, generation)
        group = self.groups.get(group_id)
        if group is None:
            return None if generation < 0 else E.GROUP_ID_NOT_FOUND if version >= 9 else E.ILLEGAL_GENERATION
        error = self._validate_offset_commit(group, member_id, instance_id, generation)
        member = group.members.get(member_id) if member_id and error is None else None
        if member is not None:
            self._reschedule_heartbeat(group, member)
        return error

    def validate_txn_offset_commit(self, group_id: str, member_id: str, instance_id: str | None,
                                   generation: int) -> ErrorCode | None:
        """TxnOffsetCommit: as :meth:`validate_offset_commit`, where a commit without member information is
        accepted whatever the group's state (exactly-once without membership)."""
        consumer_group = self.consumer.groups.get(group_id)
        if consumer_group is not None:
            return self.consumer.validate_offset_commit(consumer_group, member_id, generation, transactional=True)
        group = self.groups.get(group_id)
        if group is None:
            return None if generation < 0 else E.ILLEGAL_GENERATION
        return self._validate_offset_commit(group, member_id, instance_id, generation, transactional=True)

    def validate_offset_fetch(self, group_id: str, member_id: str | None, member_epoch: int) -> ErrorCode | None:
        """OffsetFetch v9+ naming a member: a consumer group checks its epoch."""
        consumer_group = self.consumer.groups.get(group_id)
        if consumer_group is None:
            return None
        return self.consumer.validate_offset_fetch(consumer_group, member_id, member_epoch)

    def validate_offset_delete(self, group_id: str, has_offsets: bool) -> tuple[ErrorCode | None, frozenset[str] | None]:
        """OffsetDelete: ``(error, topics)``, ``topics`` those a live group is subscribed to (their offsets stay;
        None: any may go).  ``has_offsets``: the group id has offsets (committed or in flight)."""
        consumer_group = self.consumer.groups.get(group_id)
        if consumer_group is not None:
            return None, consumer_group.subscribed_names() if consumer_group.members else None
        group = self.groups.get(group_id)
        if (group is None and not has_offsets) or (group is not None and group.state is DEAD):
            return E.GROUP_ID_NOT_FOUND, None
        if group is not None and group.state is not EMPTY:
            if group.protocol_type == "consumer":
                return None, self._subscribed(group) or frozenset()
            return E.NON_EMPTY_GROUP, None
        return None, None

    def retention(self, group_id: str) -> tuple[frozenset[str], int | None] | None:
        """How the offsets of ``group_id`` expire: None while the group keeps them all (a live consumer group,
        or a classic group rebalancing or being deleted), else ``(topics kept, since)``: the offsets of the
        topics a Stable consumer-protocol group subscribes to stay, and ``since`` (an Empty group's state
        timestamp, or None: each offset's commit) is when retention starts counting."""
        if group_id in self._deleting:
            return None
        consumer_group = self.consumer.groups.get(group_id)
        group = self.groups.get(group_id)
        if consumer_group is not None:
            return None if consumer_group.members else (frozenset(), None)
        if group is None or group.protocol_type is None:
            return frozenset(), None  # standalone consumer: retention counts from each commit
        if group.state is EMPTY:
            return frozenset(), group.current_state_timestamp if group.current_state_timestamp >= 0 else None
        if group.state is STABLE and group.protocol_type == "consumer" and self._subscribed(group) is not None:
            return self._subscribed(group) or frozenset(), None
        return None

    def delete_check(self, group_id: str, has_offsets: bool) -> ErrorCode | None:
        """DeleteGroups: None when ``group_id`` may be deleted (an Empty group, or offsets only)."""
        consumer_group = self.consumer.groups.get(group_id)
        if consumer_group is not None:
            return E.NON_EMPTY_GROUP if consumer_group.members else None
        share_group = self.share.groups.get(group_id)
        if share_group is not None:  # its share state was deleted first (the service's part)
            return E.NON_EMPTY_GROUP if share_group.members else None
        group = self.groups.get(group_id)
        if (group is None and not has_offsets) or (group is not None and group.state is DEAD):
            return E.GROUP_ID_NOT_FOUND
        if group is not None and group.state is not EMPTY:
            return E.NON_EMPTY_GROUP
        return None

    def idle_groups(self) -> list[str]:
        """Groups that may go once they have no offsets: Empty classic groups without pending members, and
        consumer groups without members."""
        idle = [gid for gid, group in self.groups.items() if group.state is EMPTY and not group.pending_members]
        return idle + [gid for gid, group in self.consumer.groups.items() if not group.members]

    def deletable_when_expired(self, group_id: str) -> bool:
        """An Empty classic group whose offsets all expired goes with them."""
        group = self.groups.get(group_id)
        return group is not None and group.state is EMPTY and not group.pending_members

    def delete_group(self, pw: GroupWrite, group_id: str) -> None:
        """Add ``group_id``'s tombstone to ``pw`` (its offsets' are the offset manager's): a consumer or share
        group's records go at once; a classic group is Dead for writes (joins and commits get
        COORDINATOR_NOT_AVAILABLE) and still Empty for reads until the write completes, then gone (or Empty
        again if it fails)."""
        consumer_group = self.consumer.groups.get(group_id)
        share_group = self.share.groups.get(group_id)
        if consumer_group is not None or share_group is not None:
            if consumer_group is not None:
                self.consumer.delete(consumer_group)
            else:
                self.share.delete(share_group)
            self.consumer_writes()
            self._w.fx.removed_groups.append(group_id)
            return
        pw.write.records.append(GroupMetadataRecord(group_id, None).encode())
        group = self.groups.get(group_id)
        before: StateBefore = (EMPTY, None, -1)
        if group is not None:
            for member_id in group.pending_members:
                self.timers.cancel((_PENDING, group_id, member_id))
            group.pending_members.clear()
            before = (group.state, group.previous_state, group.current_state_timestamp)
            group.transition_to(DEAD, self._w.now)
            self._deleting[group_id] = group
        pw.deletions.append((group_id, group, before))

    @staticmethod
    def _validate_offset_commit(group: Group, member_id: str, instance_id: str | None,
                                generation: int, transactional: bool = False) -> ErrorCode | None:
        """Kafka's ``ClassicGroup.validateOffsetCommit`` (docs/classic-groups.md "OffsetCommit"); a transactional commit without
        member information is accepted whatever the group's state (exactly-once without membership)."""
        if group.state is DEAD:
            return E.COORDINATOR_NOT_AVAILABLE
        if generation < 0 and group.state is EMPTY:
            return None
        if generation >= 0 or member_id or instance_id is not None:
            error = GroupMetadataManager._validate_member(group, member_id, instance_id)
            if error is not None:
                return error
            if generation != group.generation_id:
                return E.ILLEGAL_GENERATION
        elif group.state is not EMPTY and not transactional:
            return E.UNKNOWN_MEMBER_ID
        if group.state is COMPLETING and not transactional:
            return E.REBALANCE_IN_PROGRESS
        return None

    # ============================================================================ Describe / List

    def describe_groups(self, api_version: int, request: Request, token: Hashable) -> None:
        """DescribeGroups v0-6."""
        v = api_version
        out = []
        for gid in request.get("groups") or ():
            group = self._committed_group(gid)
            other = gid in self.consumer.groups or gid in self.share.groups
            if group is None or other:
                entry: Response = {"error_code": E.GROUP_ID_NOT_FOUND if v >= 6 else E.NONE, "group_id": gid,
                                   "group_state": DEAD.value, "protocol_type": "", "protocol_data": "",
                                   "members": []}
                if v >= 6:
                    entry["error_message"] = f"Group {gid} is not a classic group." if other \
                        else f"Group {gid} not found."
            else:
                state = EMPTY if gid in self._deleting else group.state
                stable = state is STABLE
                protocol = group.protocol_name if stable else None
                members = []
                for m in group.members.values():
                    md: Response = {"member_id": m.member_id, "client_id": m.client_id, "client_host": m.client_host,
                                    "member_metadata": m.metadata(protocol) if stable else b"",
                                    "member_assignment": m.assignment if stable else b""}
                    if v >= 4:
                        md["group_instance_id"] = m.group_instance_id
                    members.append(md)
                entry = {"error_code": E.NONE, "group_id": gid, "group_state": state.value,
                         "protocol_type": group.protocol_type or "", "protocol_data": protocol or "",
                         "members": members}
                if v >= 6:
                    entry["error_message"] = None
            if v >= 3:
                entry["authorized_operations"] = -2147483648
            out.append(entry)
        resp: Response = {"groups": out}
        if v >= 1:
            resp["throttle_time_ms"] = 0
        self._w.reply(token, resp)

    def _committed_group(self, group_id: str) -> Group | None:
        """The group as reads see it: a group whose deletion is in flight still exists (Empty)."""
        group = self.groups.get(group_id)
        if group is None or (group.state is DEAD and self._deleting.get(group_id) is not group):
            return None
        return group

    def list_groups(self, api_version: int, request: Request, token: Hashable) -> None:
        """ListGroups v0-5 (states_filter v4+, types_filter v5+; every group here is "classic")."""
        v = api_version
        states = {s.lower() for s in request.get("states_filter") or ()} if v >= 4 else set()
        types = {t.lower() for t in request.get("types_filter") or ()} if v >= 5 else set()
        out = []
        if not types or "consumer" in types:
            for cg in self.consumer.groups.values():
                if states and cg.state.lower() not in states:
                    continue
                out.append(_listed(v, cg.group_id, "consumer", cg.state, "consumer"))
        if not types or "share" in types:
            out += self._share_groups_listed(v, states)
        if not types or "classic" in types:
            for group in self.groups.values():
                state = EMPTY if self._deleting.get(group.group_id) is group else group.state
                if state is DEAD or (states and state.value.lower() not in states):
                    continue
                out.append(_listed(v, group.group_id, group.protocol_type or "", state.value, "classic"))
        resp: Response = {"error_code": E.NONE, "groups": out}
        if v >= 1:
            resp["throttle_time_ms"] = 0
        self._w.reply(token, resp)

    def _share_groups_listed(self, version: int, states: set[str]) -> list[Response]:
        """ListGroups entries of the share groups."""
        out: list[Response] = []
        for sg in self.share.groups.values():
            if states and sg.state.lower() not in states:
                continue
            out.append(_listed(version, sg.group_id, "share", sg.state, "share"))
        return out

    def _group_kept(self, group: Group, before: tuple[GroupState, GroupState | None, int]) -> None:
        gid = group.group_id
        if self._deleting.get(gid) is group:
            del self._deleting[gid]
            group.revert_transition(*before)
        log.warning("group %s: not deleted (its tombstones could not be written)", gid)


def _simple(group: Group | None) -> bool:
    """``group`` is a "simple" group: it stands for committed offsets only (no protocol, no members)."""
    return (group is not None and group.state is EMPTY and group.protocol_type is None and not group.members
            and not group.pending_members)


class _NoTopics:
    """The topic catalog of a coordinator built without one: no topics."""

    def topic_id(self, name: str) -> Any:
        return None

    def partition_count(self, name: str) -> int | None:
        return None

    def topic_names(self) -> Iterable[str]:
        return ()


# ============================================================================ response shapes

def _join_response(version: int, error: ErrorCode, member_id: str, generation_id: int = -1,
                   protocol_type: str | None = None, protocol_name: str | None = None, *,
                   leader: str = "", members: list[Response] | None = None,
                   skip_assignment: bool = False) -> Response:
    resp: Response = {
        "throttle_time_ms": 0, "error_code": error, "generation_id": generation_id,
        "protocol_name": protocol_name if protocol_name is not None or version >= 7 else "",
        "leader": leader, "member_id": member_id, "members": members if members is not None else [],
    }
    if version >= 7:
        resp["protocol_type"] = protocol_type
    if version >= 9:
        resp["skip_assignment"] = skip_assignment
    return resp


def _sync_response(version: int, error: ErrorCode, group: Group | None = None, assignment: bytes = b"") -> Response:
    resp: Response = {"error_code": error, "assignment": assignment}
    if version >= 1:
        resp["throttle_time_ms"] = 0
    if version >= 5:
        ok = group is not None and error == E.NONE
        resp["protocol_type"] = group.protocol_type if ok and group is not None else None
        resp["protocol_name"] = group.protocol_name if ok and group is not None else None
    return resp


def _heartbeat_response(version: int, error: ErrorCode) -> Response:
    resp: Response = {"error_code": error}
    if version >= 1:
        resp["throttle_time_ms"] = 0
    return resp


def _listed(version: int, group_id: str, protocol_type: str, state: str, group_type: str) -> Response:
    """A ListGroups entry (the state from v4, the type from v5)."""
    entry: Response = {"group_id": group_id, "protocol_type": protocol_type}
    if version >= 4:
        entry["group_state"] = state
    if version >= 5:
        entry["group_type"] = group_type
    return entry
