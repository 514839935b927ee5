"""The classic group coordinator as a pure, effect-returning state machine.

No sockets, no asyncio, no sleeps: every entry point takes the current time ``now_ms`` and
returns an :class:`Effects`.  The caller (the asyncio edge) must

1. send ``effects.replies`` — ``(reply_token, response_dict)`` pairs, possibly for *other*
   parked requests (the last joiner completes everybody's JoinGroup); none of them waits for
   a write;
2. append each of ``effects.writes`` (a :class:`Write`: records for one ``__consumer_offsets``
   partition, ``(key, value)``, value ``None`` = tombstone) as one batch, and once it is durable
   (today: appended locally; in a cluster: replicated) call :meth:`GroupCoordinator.write_committed`
   — or :meth:`GroupCoordinator.write_failed` with the append's error code — and handle the
   effects those return the same way.  Writes of one partition complete in the order they were
   handed out; several may be in flight at once, and completion may come from a later callback;
3. call :meth:`GroupCoordinator.poll` once ``effects.next_deadline_ms`` has passed.

This is Kafka 4.x's coordinator-runtime shape (design-models §3.1): a write operation yields
``(records, response)`` and the response is held back until the records are committed.  What a
write changes in the *stored* state is kept apart until then: committed offsets
(:attr:`GroupCoordinator.offsets`) change only in ``write_committed`` — OffsetFetch, DescribeGroups
and the metrics read committed state only — a group becomes Stable only once its assignment is
stored, and a deleted group disappears only once its tombstones are.  When a write fails nothing
it carried is applied and every reply that waited on it gets the error Kafka maps the append
error to (:func:`commit_error` for OffsetCommit, :func:`group_write_error` for the rest); a failed
SyncGroup assignment sends the group back to PreparingRebalance, as Kafka's ``storeGroup``
callback does.  Membership itself (joins, leaves, expiries) is in-memory state, as in Kafka.

Dispatch table (state x input -> action); ``validate`` = Dead → COORDINATOR_NOT_AVAILABLE,
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
from dataclasses import dataclass, field
from typing import Any

from broker.coordinator.write import (
    TOO_LARGE,
    InFlightWrites,
    TxnMarker,
    Write,
    coordinator_unavailable,
    write_error,
)
from protocol.api import ApiKey
from protocol.error_codes import ErrorCode

from .config import GroupConfig
from .consumer_group import TIMER_KINDS, ConsumerGroup, ConsumerGroups, TopicCatalog, TopicView
from .model import Group, GroupState, Member, OffsetEntry
from .partitioning import coordinator_partition
from .records import (
    GROUP_METADATA_KEY_TYPE,
    decode_group_metadata_value,
    decode_key,
    decode_offset_commit_value,
    encode_group_metadata_key,
    encode_group_metadata_value,
    encode_offset_commit_key,
    encode_offset_commit_value,
    subscribed_topics,
)
from .share_apis import ShareGroupApis
from .share_group import SHARE_TIMER_KINDS, ShareGroups
from .timers import KeyedTimers

__all__ = ["Effects", "GroupCoordinator", "Write", "commit_error", "group_write_error"]

#: the group APIs as plain ints for the request path (an IntEnum comparison costs more)
_JOIN_GROUP, _HEARTBEAT, _LEAVE_GROUP, _SYNC_GROUP = (int(ApiKey.JOIN_GROUP), int(ApiKey.HEARTBEAT),
                                                      int(ApiKey.LEAVE_GROUP), int(ApiKey.SYNC_GROUP))
_CONSUMER_GROUP_HEARTBEAT = int(ApiKey.CONSUMER_GROUP_HEARTBEAT)
_SHARE_GROUP_HEARTBEAT = int(ApiKey.SHARE_GROUP_HEARTBEAT)
_CLASSIC_MEMBERSHIP = frozenset({_JOIN_GROUP, _HEARTBEAT, _LEAVE_GROUP, _SYNC_GROUP})

log = logging.getLogger(__name__)

E = ErrorCode
EMPTY = GroupState.EMPTY
PREPARING = GroupState.PREPARING_REBALANCE
COMPLETING = GroupState.COMPLETING_REBALANCE
STABLE = GroupState.STABLE
DEAD = GroupState.DEAD

Request = Any           # a dict or a construct Container / protocol Obj with the schema's field names
Response = dict[str, Any]
Record = tuple[int, bytes, bytes | None]

_HEARTBEAT = "heartbeat"
_PENDING = "pending"
_JOIN = "join"
_INITIAL_DELAY = "initial-delay"
_SYNC = "sync"
_RETENTION = "retention"


@dataclass(slots=True)
class Effects:
    """What the edge must do after a call: send ``replies``, append and complete ``writes``.

    ``next_deadline_ms`` is when :meth:`GroupCoordinator.poll` should next be called (None = no
    timer armed).  It is a lower bound: polling early is harmless.  ``removed_groups`` names the
    groups that ceased to exist in this call (their deletion was committed), for the edge's
    per-group bookkeeping.
    """

    replies: list[tuple[Hashable, Response]] = field(default_factory=list)
    writes: list[Write] = field(default_factory=list)
    next_deadline_ms: int | None = None
    removed_groups: list[str] = field(default_factory=list)

    @property
    def records(self) -> list[Record]:
        """Every record of :attr:`writes` as ``(partition, key, value)``, in order."""
        return [(w.partition, key, value) for w in self.writes for key, value in w.records]


class _PendingWrite:
    """A handed-out write and what depends on it: the offset changes it carries and the
    callbacks that release replies (or undo a change) when it commits or fails."""

    __slots__ = ("consumer_records", "offset_ops", "on_commit", "on_fail", "write")

    def __init__(self, write: Write) -> None:
        self.write = write  # with a producer id: a transactional offset commit (applied by its COMMIT marker)
        self.offset_ops: list[tuple[str, tuple[str, int], OffsetEntry | None]] = []
        #: the consumer-group records among ``write.records``, as (group id, key, value)
        self.consumer_records: list[tuple[str, bytes, bytes | None]] = []
        self.on_commit: list[Callable[[], None]] = []
        self.on_fail: list[Callable[[ErrorCode], None]] = []


def commit_error(append_error: ErrorCode) -> ErrorCode:
    """The OffsetCommit error for a failed ``__consumer_offsets`` append (Kafka's ``storeOffsets``)."""
    if append_error in TOO_LARGE:
        return E.INVALID_COMMIT_OFFSET_SIZE
    return coordinator_unavailable(append_error)


#: The error for any other failed group write (Kafka's ``appendGroupMetadataErrorToResponseError``).
group_write_error = write_error


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


def _default_member_id(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4()}"


def _inconsistent(requested: str | None, current: str | None) -> bool:
    return requested is not None and current is not None and requested != current


class GroupCoordinator(ShareGroupApis):
    """All classic groups and committed offsets of this broker's ``__consumer_offsets`` partitions.

    ``partition_count(topic)`` (optional) returns the number of partitions of ``topic`` or None
    when it does not exist; OffsetCommit then answers UNKNOWN_TOPIC_OR_PARTITION for unknown
    topic-partitions.  ``member_id_factory(prefix)`` makes member ids (Kafka: prefix + "-" +
    UUID); ``wheel_factory(start_ms)`` builds the timing wheel (tests may inject one).
    """

    def __init__(self, config: GroupConfig | None = None, *, now_ms: int = 0,
                 partition_count: Callable[[str], int | None] | None = None,
                 member_id_factory: Callable[[str], str] = _default_member_id,
                 wheel_factory: Callable[[int], Any] | None = None,
                 topics: TopicCatalog | None = None,
                 group_configs: Callable[[str], Mapping[str, str]] = lambda _gid: {}) -> None:
        self.config = config or GroupConfig()
        self.groups: dict[str, Group] = {}
        self.offsets: dict[str, dict[tuple[str, int], OffsetEntry]] = {}
        self.timers = KeyedTimers(now_ms, wheel_factory)
        #: the KIP-848 consumer groups of this shard (one shard holds both kinds; ids are unique across them)
        self.consumer = ConsumerGroups(self.config.consumer, topics or _NoTopics(), self.timers,
                                       is_classic_group=self._classic_in_use, group_configs=group_configs)
        #: the share groups (KIP-932) of this shard
        self.share = ShareGroups(self.config.share, topics or _NoTopics(), self.timers,
                                 other_group=self._other_group_kind, group_configs=group_configs)
        self._partition_count = partition_count
        self._new_member_id = member_id_factory
        self._fx = Effects()
        self._now = now_ms
        # writes: the ones the current call is building (one per partition), then the handed-out
        # ones until they commit or fail, in hand-out order per partition
        self._open: dict[int, _PendingWrite] = {}
        self._inflight: InFlightWrites[_PendingWrite] = InFlightWrites()
        self._next_write_id = 1
        # offset changes carried by in-flight writes: group -> topic-partition -> how many
        self._pending_offsets: dict[str, dict[tuple[str, int], int]] = {}
        # groups whose deletion is in flight (Dead for writes, still Empty for reads)
        self._deleting: dict[str, Group] = {}
        #: transactional offset commits written and waiting for their producer's marker:
        #: producer id -> group -> topic-partition -> offset (visible once COMMIT is written)
        self.txn_offsets: dict[int, dict[str, dict[tuple[str, int], OffsetEntry]]] = {}
        self.timers.schedule((_RETENTION,), now_ms + self.config.offsets_retention_check_interval_ms)

    # ============================================================================ plumbing

    def _begin(self, now_ms: int) -> None:
        self._now = now_ms
        self._fx = Effects()
        self._open = {}

    def _finish(self) -> Effects:
        fx = self._fx
        for pw in self._open.values():
            self._inflight.add(pw.write.partition, pw.write.write_id, pw)
            fx.writes.append(pw.write)
        self._open = {}
        fx.next_deadline_ms = self.timers.next_deadline()
        return fx

    def _reply(self, token: Hashable, response: Response) -> None:
        self._fx.replies.append((token, response))

    # ============================================================================ writes

    def _write(self, partition: int, producer_id: int = -1, producer_epoch: int = -1,
               marker: TxnMarker | None = None) -> _PendingWrite:
        """The write the current call appends to ``partition`` (one batch per partition and call); with a
        producer id, that producer's transactional batch (or, with ``marker``, its COMMIT/ABORT marker)."""
        pw = self._open.get(partition)
        if pw is None:
            pw = self._open[partition] = _PendingWrite(Write(self._next_write_id, partition, [], producer_id,
                                                             producer_epoch, marker))
            self._next_write_id += 1
        elif (pw.write.producer_id, pw.write.marker) != (producer_id, marker):
            raise ValueError(f"one batch per partition and call: {pw.write} and producer {producer_id}")
        return pw

    def _write_offset(self, pw: _PendingWrite, group_id: str, tp: tuple[str, int], entry: OffsetEntry | None) -> None:
        """Add an offset commit (or, with ``entry`` None, its tombstone) to ``pw``; applied on commit."""
        key = encode_offset_commit_key(group_id, tp[0], tp[1])
        value = None if entry is None else encode_offset_commit_value(
            entry.offset, entry.leader_epoch, entry.metadata, entry.commit_timestamp, entry.expire_timestamp)
        pw.write.records.append((key, value))
        pw.offset_ops.append((group_id, tp, entry))
        counts = self._pending_offsets.setdefault(group_id, {})
        counts[tp] = counts.get(tp, 0) + 1

    def _after_writes(self, writes: list[_PendingWrite], token: Hashable, response: Response,
                      on_error: Callable[[_PendingWrite, ErrorCode], None]) -> None:
        """Send ``response`` to ``token`` once every write in ``writes`` has completed.

        A failed write first calls ``on_error(write, append_error)`` to put its error into the
        response.  With no writes the response goes out at once.
        """
        if not writes:
            self._reply(token, response)
            return
        left = [len(writes)]

        def settle() -> None:
            left[0] -= 1
            if not left[0]:
                self._reply(token, response)

        for pw in writes:
            def failed(error: ErrorCode, pw: _PendingWrite = pw) -> None:
                on_error(pw, error)
                settle()

            pw.on_commit.append(settle)
            pw.on_fail.append(failed)

    def _settle_offsets(self, pw: _PendingWrite, *, apply: bool) -> None:
        """Forget ``pw``'s offset changes as pending; apply them to the committed offsets if ``apply``
        (a transactional commit's to its producer's pending offsets instead)."""
        producer_id = pw.write.producer_id
        for group_id, tp, entry in pw.offset_ops:
            counts = self._pending_offsets[group_id]
            counts[tp] -= 1
            if not counts[tp]:
                del counts[tp]
                if not counts:
                    del self._pending_offsets[group_id]
            if not apply:
                continue
            if producer_id >= 0 and entry is not None:
                self.txn_offsets.setdefault(producer_id, {}).setdefault(group_id, {})[tp] = entry
            elif entry is None:
                offsets = self.offsets.get(group_id)
                if offsets is not None:
                    offsets.pop(tp, None)
                    if not offsets:
                        del self.offsets[group_id]
            else:
                self.offsets.setdefault(group_id, {})[tp] = entry
                if group_id not in self.groups and group_id not in self.consumer.groups:
                    self.groups[group_id] = Group(group_id, self._now)  # a "simple" group, as on replay

    def write_committed(self, now_ms: int, write_id: int) -> Effects:
        """``write_id`` is durable: apply what it carried and release the replies that waited on it."""
        self._begin(now_ms)
        pw = self._inflight.take(write_id)
        self._settle_offsets(pw, apply=True)
        for callback in pw.on_commit:
            callback()
        return self._finish()

    def write_failed(self, now_ms: int, write_id: int, error_code: int) -> Effects:
        """``write_id`` could not be appended (``error_code``: the append's Kafka error): nothing it
        carried is applied, and every reply that waited on it gets the mapped error."""
        self._begin(now_ms)
        pw = self._inflight.take(write_id)
        try:
            error = ErrorCode(error_code) if error_code else E.UNKNOWN_SERVER_ERROR
        except ValueError:
            error = E.UNKNOWN_SERVER_ERROR
        log.warning("__consumer_offsets-%d: write of %d record(s) failed with %s", pw.write.partition,
                    len(pw.write.records), error.name)
        self._settle_offsets(pw, apply=False)
        for callback in pw.on_fail:
            callback(error)
        return self._finish()

    def writes_in_flight(self) -> int:
        """How many handed-out writes have not completed yet."""
        return len(self._inflight)

    def _has_offsets(self, group_id: str) -> bool:
        """Committed offsets, or offset changes in flight, exist for ``group_id``."""
        return group_id in self.offsets or group_id in self._pending_offsets

    def _partition(self, group_id: str) -> int:
        return coordinator_partition(group_id, self.config.offsets_topic_num_partitions)

    def next_deadline(self) -> int | None:
        """When :meth:`poll` should next run (a lower bound), or None when no timer is armed."""
        return self.timers.next_deadline()

    def handle(self, api_key: int, now_ms: int, api_version: int, request: Request, token: Hashable,
               *, client_id: str = "", client_host: str = "", topic_view: TopicView = None) -> Effects:
        """Dispatch by Kafka API key (the group APIs); ``topic_view``: which topics the requesting
        principal may DESCRIBE (None: all), for a consumer group's regular expressions."""
        if api_key == _CONSUMER_GROUP_HEARTBEAT:
            return self.consumer_group_heartbeat(now_ms, api_version, request, token, client_id=client_id,
                                                 client_host=client_host, topic_view=topic_view)
        if api_key == _SHARE_GROUP_HEARTBEAT:
            return self.share_group_heartbeat(now_ms, api_version, request, token, client_id=client_id,
                                              client_host=client_host)
        if api_key in _CLASSIC_MEMBERSHIP and (request.get("group_id") or "") in self.share.groups:
            return self._classic_on_share_group(api_key, now_ms, api_version, request, token)
        if api_key in _CLASSIC_MEMBERSHIP and (request.get("group_id") or "") in self.consumer.groups:
            fx = self._classic_on_consumer_group(api_key, now_ms, api_version, request, token)
            if fx is not None:
                return fx
        if api_key == _JOIN_GROUP:
            return self.join_group(now_ms, api_version, request, token,
                                   client_id=client_id, client_host=client_host)
        handler = self._BY_KEY.get(api_key)
        if handler is None:
            raise ValueError(f"API key {api_key} is not a group-coordinator API")
        return handler(self, now_ms, api_version, request, token)

    # ============================================================================ consumer groups (KIP-848)

    def consumer_group_heartbeat(self, now_ms: int, api_version: int, request: Request, token: Hashable, *,
                                 client_id: str = "", client_host: str = "", topic_view: TopicView = None) -> Effects:
        """ConsumerGroupHeartbeat v0-1 (see :mod:`broker.coordinator.group.consumer_group`); the reply waits for its records."""
        self._begin(now_ms)
        gid = request.get("group_id") or ""
        classic = self.groups.get(gid)
        if (classic is not None and not classic.members and classic.state is not DEAD and gid not in self._deleting
                and request.get("member_epoch") == 0):
            # an Empty classic group (offsets only) becomes a consumer group, as Kafka converts it
            del self.groups[gid]
            self._write(self._partition(gid)).write.records.append((encode_group_metadata_key(gid), None))
        response = self.consumer.heartbeat(now_ms, api_version, request, client_id, client_host, topic_view)

        def failed(_pw: _PendingWrite, append_error: ErrorCode) -> None:
            response.update(error_code=group_write_error(append_error), assignment=None)

        self._after_writes(self._consumer_writes(), token, response, failed)
        return self._finish()

    def consumer_group_describe(self, now_ms: int, api_version: int, request: Request, token: Hashable) -> Effects:
        """ConsumerGroupDescribe v0-1."""
        self._begin(now_ms)
        self._reply(token, {"throttle_time_ms": 0,
                            "groups": self.consumer.describe(api_version, request.get("group_ids") or ())})
        return self._finish()

    def metadata_changed(self, now_ms: int) -> Effects:
        """Topics were created, deleted or changed: consumer groups refresh their subscriptions (and targets)."""
        self._begin(now_ms)
        self.consumer.metadata_changed(now_ms)
        self.share.metadata_changed(now_ms)
        self._consumer_writes()
        return self._finish()

    def _consumer_writes(self) -> list[_PendingWrite]:
        """Put the records the consumer groups emitted into this call's writes; when one commits its
        records become the groups' committed state, when one fails its groups revert to that state."""
        writes: dict[int, _PendingWrite] = {}
        for gid, key, value in [*self.consumer.drain(), *self.share.drain()]:
            partition = self._partition(gid)
            pw = writes.get(partition)
            if pw is None:
                pw = writes[partition] = self._write(partition)
                if not pw.consumer_records:
                    pw.on_commit.append(lambda pw=pw: (self.consumer.committed(pw.consumer_records),
                                                       self.share.committed(pw.consumer_records)))
                    pw.on_fail.append(lambda _error, pw=pw: self._revert_consumer_groups(pw))
            pw.write.records.append((key, value))
            pw.consumer_records.append((gid, key, value))
        return list(writes.values())

    def _revert_consumer_groups(self, failed: _PendingWrite) -> None:
        in_flight = [r for pw in self._inflight.items() for r in pw.consumer_records]
        self.consumer.revert(self._now, {gid for gid, _, _ in failed.consumer_records}, in_flight)
        self.share.revert(self._now, {gid for gid, _, _ in failed.consumer_records}, in_flight)

    def _classic_in_use(self, group_id: str) -> bool:
        """A classic group with members (or being deleted) holds ``group_id``."""
        group = self.groups.get(group_id)
        return group_id in self.share.groups or (
            group is not None and (bool(group.members) or group.state is DEAD or group_id in self._deleting))

    def _classic_on_consumer_group(self, api_key: int, now_ms: int, version: int, request: Request,
                                   token: Hashable) -> Effects | None:
        """A classic-protocol request naming a consumer group: Kafka's errors (INCONSISTENT_GROUP_PROTOCOL for
        JoinGroup, UNKNOWN_MEMBER_ID for the rest); an Empty consumer group is converted by a JoinGroup
        (None: go on with the classic request)."""
        group = self.consumer.groups[request.get("group_id")]
        if not group.members and api_key == _JOIN_GROUP:
            self._begin(now_ms)
            self.consumer.delete(group)
            self._consumer_writes()
            fx = self._finish()
            more = self.join_group(now_ms, version, request, token)
            more.writes[:0] = fx.writes
            return more
        return self._classic_on_share_group(api_key, now_ms, version, request, token)

    def _classic_on_share_group(self, api_key: int, now_ms: int, version: int, request: Request,
                                token: Hashable) -> Effects:
        """A classic-protocol request naming a group of another type (consumer, share): Kafka's errors
        (INCONSISTENT_GROUP_PROTOCOL for JoinGroup, UNKNOWN_MEMBER_ID for the rest)."""
        self._begin(now_ms)
        if api_key == _JOIN_GROUP:
            self._join_error(_Join(version, token, request.get("group_id") or "", request.get("member_id") or "",
                                   None, 0, 0, "", (), "", ""), E.INCONSISTENT_GROUP_PROTOCOL)
        elif api_key == _SYNC_GROUP:
            self._reply(token, _sync_response(version, E.UNKNOWN_MEMBER_ID))
        elif api_key == _HEARTBEAT:
            self._reply(token, _heartbeat_response(version, E.UNKNOWN_MEMBER_ID))
        else:
            resp: Response = {"error_code": E.UNKNOWN_MEMBER_ID}
            if version >= 1:
                resp["throttle_time_ms"] = 0
            if version >= 3:
                resp["members"] = []
            self._reply(token, resp)
        return self._finish()

    # ============================================================================ JoinGroup

    def join_group(self, now_ms: int, api_version: int, request: Request, token: Hashable, *,
                   client_id: str = "", client_host: str = "") -> Effects:
        """JoinGroup v2-9. ``client_id``/``client_host`` come from the request header/connection."""
        self._begin(now_ms)
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
        return self._finish()

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
            group = Group(jr.group_id, self._now)
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
            self.timers.schedule((_PENDING, group.group_id, member_id), self._now + jr.session_timeout_ms)
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
                             self._now + self.config.new_member_join_timeout_ms)
        self._rebalance_or_complete(group, f"member {member_id} joined")

    def _update_member_and_rebalance(self, group: Group, member: Member, jr: _Join) -> None:
        group.update_protocols(member, jr.protocols)
        member.rebalance_timeout_ms = jr.rebalance_timeout_ms
        member.session_timeout_ms = jr.session_timeout_ms
        old_version = member.join_version
        old = group.set_join(member, jr.token, jr.version)
        if old is not None:  # superseded by a newer JoinGroup from the same member
            self._reply(old, _join_response(old_version, E.REBALANCE_IN_PROGRESS, member.member_id))
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
            pw.on_commit.append(lambda: self._reply(jr.token, response))
            pw.on_fail.append(lambda error: self._static_rejoin_failed(group, jr, old_id, new_id, previous, error))
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
        self._reply(jr.token, _join_response(jr.version, group_write_error(error), "", group.generation_id,
                                             group.protocol_type, group.protocol_name,
                                             leader=group.leader_id or ""))

    def _fence_parked(self, group: Group, member: Member) -> None:
        """The old incarnation of a replaced static member gets FENCED_INSTANCE_ID if parked."""
        if member.join_token is not None:
            self._reply(member.join_token,
                        _join_response(member.join_version, E.FENCED_INSTANCE_ID, member.member_id))
            group.set_join(member, None)
        if member.sync_token is not None:
            self._reply(member.sync_token, _sync_response(member.sync_version, E.FENCED_INSTANCE_ID))
            member.sync_token = None

    def _reply_current_generation(self, group: Group, member: Member, jr: _Join, with_members: bool) -> None:
        self._reply(jr.token, _join_response(
            jr.version, E.NONE, member.member_id, group.generation_id, group.protocol_type,
            group.protocol_name, leader=group.leader_id or "",
            members=self._leader_member_list(group, jr.version) if with_members else []))

    def _join_error(self, jr: _Join, error: ErrorCode, member_id: str | None = None) -> None:
        self._reply(jr.token, _join_response(jr.version, error, jr.member_id if member_id is None else member_id))

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
                    self._reply(member.sync_token, _sync_response(member.sync_version, E.REBALANCE_IN_PROGRESS))
                    member.sync_token = None
        self.timers.cancel((_SYNC, gid))
        group.pending_sync.clear()
        initial = group.state is EMPTY and self.config.initial_rebalance_delay_ms > 0
        log.info("group %s: preparing rebalance (generation %d): %s", gid, group.generation_id, reason)
        group.transition_to(PREPARING, self._now)
        if initial:
            delay = self.config.initial_rebalance_delay_ms
            group.initial_delay_ms = delay
            group.initial_remaining_ms = max(group.rebalance_timeout_ms() - delay, 0)
            group.new_member_added = False
            self.timers.schedule((_INITIAL_DELAY, gid), self._now + delay)
        else:
            group.initial_delay_ms = 0
            self.timers.schedule((_JOIN, gid), self._now + group.rebalance_timeout_ms())
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
            self.timers.schedule((_JOIN, gid), self._now + group.rebalance_timeout_ms())
            return
        group.generation_id += 1
        group.subscribed_known = False
        if not group.members:
            group.protocol_name = None
            group.transition_to(EMPTY, self._now)
            self._store_group(group)
            return
        group.protocol_name = group.select_protocol()
        group.transition_to(COMPLETING, self._now)
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
                self._reply(token, _join_response(version, E.NONE, member.member_id, group.generation_id,
                                                  group.protocol_type, group.protocol_name,
                                                  leader=leader_id or "", members=members))
                group.set_join(member, None)
            member.is_new = False
            self._reschedule_heartbeat(group, member)
            group.pending_sync.add(member.member_id)
        self.timers.schedule((_SYNC, gid), self._now + group.rebalance_timeout_ms())

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
            self._reply(member.join_token, _join_response(member.join_version, E.UNKNOWN_MEMBER_ID, ""))
        if member.sync_token is not None:
            self._reply(member.sync_token, _sync_response(member.sync_version, E.UNKNOWN_MEMBER_ID))
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
                             self._now + member.session_timeout_ms)

    def _validate_member(self, group: Group, member_id: str, instance_id: str | None) -> ErrorCode | None:
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

    def _store_group(self, group: Group) -> _PendingWrite:
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
        pw = self._write(self._partition(group.group_id))
        pw.write.records.append((encode_group_metadata_key(group.group_id), encode_group_metadata_value(value)))
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

    def sync_group(self, now_ms: int, api_version: int, request: Request, token: Hashable) -> Effects:
        """SyncGroup v0-5."""
        self._begin(now_ms)
        g = request.get
        group_id = g("group_id") or ""
        member_id = g("member_id") or ""
        instance_id = g("group_instance_id") if api_version >= 3 else None
        v = api_version
        if not group_id:
            self._reply(token, _sync_response(v, E.INVALID_GROUP_ID))
            return self._finish()
        group = self.groups.get(group_id)
        error = self._validate_generation(group, member_id, instance_id, g("generation_id"))
        if error is None and api_version >= 5 and group is not None and (
                _inconsistent(g("protocol_type"), group.protocol_type)
                or _inconsistent(g("protocol_name"), group.protocol_name)):
            error = E.INCONSISTENT_GROUP_PROTOCOL
        if error is not None:
            self._reply(token, _sync_response(v, error))
            return self._finish()
        assert group is not None
        state = group.state
        if state is EMPTY:
            self._reply(token, _sync_response(v, E.UNKNOWN_MEMBER_ID))
        elif state is PREPARING:
            self._reply(token, _sync_response(v, E.REBALANCE_IN_PROGRESS))
        elif state is COMPLETING:
            member = group.members[member_id]
            if member.sync_token is not None:
                self._reply(member.sync_token, _sync_response(member.sync_version, E.REBALANCE_IN_PROGRESS))
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
                pw.on_commit.append(lambda: self._assignment_stored(group, generation))
                pw.on_fail.append(lambda error: self._assignment_failed(group, generation, error))
        else:  # Stable
            member = group.members[member_id]
            self._synced(group, member)
            self._reply(token, _sync_response(v, E.NONE, group, member.assignment))
        return self._finish()

    def _still_completing(self, group: Group, generation: int) -> bool:
        """The group a stored assignment was for is still waiting for it (no rebalance since)."""
        return (self.groups.get(group.group_id) is group and group.state is COMPLETING
                and group.generation_id == generation)

    def _assignment_stored(self, group: Group, generation: int) -> None:
        if not self._still_completing(group, generation):
            return
        group.transition_to(STABLE, self._now)
        log.info("group %s: stable at generation %d", group.group_id, generation)
        for m in group.members.values():
            if m.sync_token is not None:
                self._reply(m.sync_token, _sync_response(m.sync_version, E.NONE, group, m.assignment))
                m.sync_token = None

    def _assignment_failed(self, group: Group, generation: int, error: ErrorCode) -> None:
        """Kafka's ``resetAndPropagateAssignmentWithError`` then ``maybePrepareRebalanceOrCompleteJoin``."""
        if not self._still_completing(group, generation):
            return
        code = group_write_error(error)
        for m in group.members.values():
            m.assignment = b""
            if m.sync_token is not None:
                self._reply(m.sync_token, _sync_response(m.sync_version, code))
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

    def heartbeat(self, now_ms: int, api_version: int, request: Request, token: Hashable) -> Effects:
        """Heartbeat v0-4."""
        self._begin(now_ms)
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
        self._reply(token, _heartbeat_response(api_version, error))
        return self._finish()

    # ============================================================================ LeaveGroup

    def leave_group(self, now_ms: int, api_version: int, request: Request, token: Hashable) -> Effects:
        """LeaveGroup v0-5 (v3+ batches members by member id and/or group instance id)."""
        self._begin(now_ms)
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
        self._reply(token, resp)
        return self._finish()

    # ============================================================================ timers

    def poll(self, now_ms: int) -> Effects:
        """Fire every timer due at ``now_ms`` (sessions, joins, syncs, pending members, retention)."""
        self._begin(now_ms)
        for key in self.timers.expire(now_ms):
            if key in self.timers:
                continue  # re-armed by an earlier timer of this batch: no longer due
            kind = key[0]
            if kind in TIMER_KINDS:
                self.consumer.on_timer(now_ms, key)
                self._consumer_writes()
            elif kind in SHARE_TIMER_KINDS:
                self.share.on_timer(now_ms, key)
                self._consumer_writes()
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
            elif kind == _RETENTION:
                self._cleanup_offsets()
                self.timers.schedule((_RETENTION,), now_ms + self.config.offsets_retention_check_interval_ms)
        return self._finish()

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
            self.timers.schedule((_INITIAL_DELAY, group_id), self._now + delay)
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

    # ============================================================================ OffsetCommit

    def offset_commit(self, now_ms: int, api_version: int, request: Request, token: Hashable) -> Effects:
        """OffsetCommit v2-9."""
        self._begin(now_ms)
        g = request.get
        v = api_version
        group_id = g("group_id") or ""
        generation = g("generation_id_or_member_epoch", -1)
        member_id = g("member_id") or ""
        instance_id = g("group_instance_id") if v >= 7 else None
        retention = g("retention_time_ms", -1) if v <= 4 else -1
        topics = g("topics") or ()

        group = self.groups.get(group_id)
        error: ErrorCode | None
        consumer_group = self.consumer.groups.get(group_id)
        if consumer_group is not None:
            error = self.consumer.validate_offset_commit(consumer_group, member_id, generation)
        elif group is None:
            # generation < 0: a "simple" group, created when the commit is applied
            error = None if generation < 0 else E.GROUP_ID_NOT_FOUND if v >= 9 else E.ILLEGAL_GENERATION
        else:
            error = self._validate_offset_commit(group, member_id, instance_id, generation)
            member = group.members.get(member_id) if member_id and error is None else None
            if member is not None:
                self._reschedule_heartbeat(group, member)

        expire = now_ms + retention if retention is not None and retention >= 0 else -1
        resp: Response = {}
        if v >= 3:
            resp["throttle_time_ms"] = 0
        self._commit_offsets(group_id, topics, error, v >= 6, now_ms, expire, token, resp)
        return self._finish()

    def _commit_offsets(self, group_id: str, topics: Iterable[Any], error: ErrorCode | None, with_epoch: bool,
                        now_ms: int, expire: int, token: Hashable, resp: Response, producer_id: int = -1,
                        producer_epoch: int = -1) -> None:
        """Write the offsets of an (Txn)OffsetCommit that passed validation (``error`` None) and reply once
        durable; ``producer_id``: a transactional commit of that producer."""
        counts = self._partition_count
        max_meta = self.config.offset_metadata_max_bytes
        pw: _PendingWrite | None = None
        accepted: list[Response] = []
        out_topics = []
        for t in topics:
            name = t.get("name")
            count = counts(name) if counts is not None else None
            out_parts = []
            for p in t.get("partitions") or ():
                index = p.get("partition_index")
                if counts is not None and (count is None or not 0 <= index < count):
                    code: ErrorCode = E.UNKNOWN_TOPIC_OR_PARTITION
                elif error is not None:
                    code = error
                else:
                    metadata = p.get("committed_metadata") or ""
                    if len(metadata) > max_meta:
                        code = E.OFFSET_METADATA_TOO_LARGE
                    else:
                        code = E.NONE
                        epoch = p.get("committed_leader_epoch", -1) if with_epoch else -1
                        if pw is None:
                            pw = self._write(self._partition(group_id), producer_id, producer_epoch)
                        self._write_offset(pw, group_id, (name, index), OffsetEntry(
                            p.get("committed_offset"), epoch, metadata, now_ms, expire))
                part: Response = {"partition_index": index, "error_code": code}
                if code == E.NONE:
                    accepted.append(part)
                out_parts.append(part)
            out_topics.append({"name": name, "partitions": out_parts})
        resp["topics"] = out_topics

        def failed(_pw: _PendingWrite, append_error: ErrorCode) -> None:
            code = commit_error(append_error)
            for part in accepted:
                part["error_code"] = code

        self._after_writes([pw] if pw is not None else [], token, resp, failed)

    # ============================================================================ transactions

    def txn_offset_commit(self, now_ms: int, api_version: int, request: Request, token: Hashable) -> Effects:
        """TxnOffsetCommit v0-5: offsets written as the producer's transactional batch; they become the
        group's committed offsets when the producer's COMMIT marker reaches this partition
        (:meth:`complete_transaction`), and are dropped by ABORT."""
        self._begin(now_ms)
        g = request.get
        v = api_version
        group_id = g("group_id") or ""
        generation = g("generation_id", -1) if v >= 3 else -1
        member_id = (g("member_id") or "") if v >= 3 else ""
        instance_id = g("group_instance_id") if v >= 3 else None
        group = self.groups.get(group_id)
        consumer_group = self.consumer.groups.get(group_id)
        error: ErrorCode | None
        if consumer_group is not None:
            error = self.consumer.validate_offset_commit(consumer_group, member_id, generation, transactional=True)
        elif group is None:
            error = None if generation < 0 else E.ILLEGAL_GENERATION
        else:
            error = self._validate_offset_commit(group, member_id, instance_id, generation, transactional=True)
        self._commit_offsets(group_id, g("topics") or (), error, v >= 2, now_ms, -1, token, {"throttle_time_ms": 0},
                             g("producer_id"), g("producer_epoch"))
        return self._finish()

    def complete_transaction(self, now_ms: int, partition: int, producer_id: int, producer_epoch: int, commit: bool,
                             coordinator_epoch: int, token: Hashable) -> Effects:
        """WriteTxnMarkers for this offsets partition: write the producer's marker here, then make its
        pending transactional offsets committed (COMMIT) or drop them (ABORT); reply ``{"error_code"}``."""
        self._begin(now_ms)
        pw = self._write(partition, producer_id, producer_epoch, TxnMarker(commit, coordinator_epoch))

        def done() -> None:
            self._end_transaction(partition, producer_id, commit)
            self._reply(token, {"error_code": E.NONE})

        pw.on_commit.append(done)
        pw.on_fail.append(lambda error: self._reply(token, {"error_code": error}))
        return self._finish()

    def _end_transaction(self, partition: int, producer_id: int, commit: bool) -> None:
        pending = self.txn_offsets.get(producer_id)
        if not pending:
            return
        for group_id in [g for g in pending if self._partition(g) == partition]:
            offsets = pending.pop(group_id)
            if not commit:
                continue
            self.offsets.setdefault(group_id, {}).update(offsets)
            if group_id not in self.groups:
                self.groups[group_id] = Group(group_id, self._now)  # a "simple" group, as on replay
        if not pending:
            del self.txn_offsets[producer_id]

    def _unstable(self, group_id: str, tp: tuple[str, int]) -> bool:
        """A transactional commit for ``tp`` is being written or waits for its marker (KIP-447)."""
        return any(tp in by_group.get(group_id, ()) for by_group in self.txn_offsets.values()) or any(
            pw.write.producer_id >= 0 and any(op[0] == group_id and op[1] == tp for op in pw.offset_ops)
            for pw in self._inflight.items())

    @staticmethod
    def _validate_offset_commit(group: Group, member_id: str, instance_id: str | None,
                                generation: int, transactional: bool = False) -> ErrorCode | None:
        """Kafka's ``ClassicGroup.validateOffsetCommit`` (notes §4.5); a transactional commit without
        member information is accepted whatever the group's state (exactly-once without membership)."""
        if group.state is DEAD:
            return E.COORDINATOR_NOT_AVAILABLE
        if generation < 0 and group.state is EMPTY:
            return None
        if generation >= 0 or member_id or instance_id is not None:
            if instance_id is not None:
                existing = group.static_members.get(instance_id)
                if existing is None:
                    return E.UNKNOWN_MEMBER_ID
                if existing != member_id:
                    return E.FENCED_INSTANCE_ID
            elif member_id not in group.members:
                return E.UNKNOWN_MEMBER_ID
            if generation != group.generation_id:
                return E.ILLEGAL_GENERATION
        elif group.state is not EMPTY and not transactional:
            return E.UNKNOWN_MEMBER_ID
        if group.state is COMPLETING and not transactional:
            return E.REBALANCE_IN_PROGRESS
        return None

    # ============================================================================ OffsetFetch

    def offset_fetch(self, now_ms: int, api_version: int, request: Request, token: Hashable) -> Effects:
        """OffsetFetch v1-9 (v8+: several groups per request)."""
        self._begin(now_ms)
        g = request.get
        v = api_version
        if v >= 8:
            groups = []
            stable = bool(g("require_stable"))
            for req_group in g("groups") or ():
                gid = req_group.get("group_id") or ""
                consumer_group = self.consumer.groups.get(gid) if v >= 9 else None
                error = None if consumer_group is None else self.consumer.validate_offset_fetch(
                    consumer_group, req_group.get("member_id"), req_group.get("member_epoch", -1))
                if error is not None:
                    groups.append({"group_id": gid, "topics": [], "error_code": error})
                    continue
                groups.append({"group_id": gid, "topics": self._fetch_topics(gid, req_group.get("topics"), v, stable),
                               "error_code": E.NONE})
            self._reply(token, {"throttle_time_ms": 0, "groups": groups})
        else:
            topics = g("topics")
            stable = v >= 7 and bool(g("require_stable"))
            resp: Response = {"topics": self._fetch_topics(g("group_id") or "", topics if v >= 2 else topics or [], v,
                                                           stable)}
            if v >= 2:
                resp["error_code"] = E.NONE
            if v >= 3:
                resp["throttle_time_ms"] = 0
            self._reply(token, resp)
        return self._finish()

    def _fetch_topics(self, group_id: str, topics: Iterable[Any] | None, version: int,
                      require_stable: bool = False) -> list[Response]:
        offsets = self.offsets.get(group_id, {})
        with_epoch = version >= 5
        wanted: list[tuple[str, list[int]]]
        if topics is None:
            by_topic: dict[str, list[int]] = {}
            for topic, index in sorted(offsets):
                by_topic.setdefault(topic, []).append(index)
            wanted = list(by_topic.items())
        else:
            wanted = [(t.get("name"), list(t.get("partition_indexes") or ())) for t in topics]
        out = []
        for name, indexes in wanted:
            parts = []
            for index in indexes:
                entry = offsets.get((name, index))
                if require_stable and self._unstable(group_id, (name, index)):
                    entry = None
                    code: ErrorCode = E.UNSTABLE_OFFSET_COMMIT
                else:
                    code = E.NONE
                part: Response = {"partition_index": index,
                                  "committed_offset": entry.offset if entry else -1,
                                  "metadata": entry.metadata if entry else "",
                                  "error_code": code}
                if with_epoch:
                    part["committed_leader_epoch"] = entry.leader_epoch if entry else -1
                parts.append(part)
            out.append({"name": name, "partitions": parts})
        return out

    # ============================================================================ Describe / List

    def describe_groups(self, now_ms: int, api_version: int, request: Request, token: Hashable) -> Effects:
        """DescribeGroups v0-6."""
        self._begin(now_ms)
        v = api_version
        out = []
        for gid in request.get("groups") or ():
            group = self._committed_group(gid)
            if group is None or gid in self.consumer.groups or gid in self.share.groups:
                entry: Response = {"error_code": E.GROUP_ID_NOT_FOUND if v >= 6 else E.NONE, "group_id": gid,
                                   "group_state": DEAD.value, "protocol_type": "", "protocol_data": "",
                                   "members": []}
                if v >= 6:
                    entry["error_message"] = f"Group {gid} is not a classic group." \
                        if gid in self.consumer.groups or gid in self.share.groups else f"Group {gid} not found."
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
        self._reply(token, resp)
        return self._finish()

    def _committed_group(self, group_id: str) -> Group | None:
        """The group as reads see it: a group whose deletion is in flight still exists (Empty)."""
        group = self.groups.get(group_id)
        if group is None or (group.state is DEAD and self._deleting.get(group_id) is not group):
            return None
        return group

    def list_groups(self, now_ms: int, api_version: int, request: Request, token: Hashable) -> Effects:
        """ListGroups v0-5 (states_filter v4+, types_filter v5+; every group here is "classic")."""
        self._begin(now_ms)
        v = api_version
        states = {s.lower() for s in request.get("states_filter") or ()} if v >= 4 else set()
        types = {t.lower() for t in request.get("types_filter") or ()} if v >= 5 else set()
        out = []
        if not types or "consumer" in types:
            for cg in self.consumer.groups.values():
                if states and cg.state.lower() not in states:
                    continue
                entry: Response = {"group_id": cg.group_id, "protocol_type": "consumer"}
                if v >= 4:
                    entry["group_state"] = cg.state
                if v >= 5:
                    entry["group_type"] = "consumer"
                out.append(entry)
        out += self._share_groups_listed(v, states, types)
        if not types or "classic" in types:
            for group in self.groups.values():
                state = EMPTY if self._deleting.get(group.group_id) is group else group.state
                if state is DEAD or (states and state.value.lower() not in states):
                    continue
                entry = {"group_id": group.group_id, "protocol_type": group.protocol_type or ""}
                if v >= 4:
                    entry["group_state"] = state.value
                if v >= 5:
                    entry["group_type"] = "classic"
                out.append(entry)
        resp: Response = {"error_code": E.NONE, "groups": out}
        if v >= 1:
            resp["throttle_time_ms"] = 0
        self._reply(token, resp)
        return self._finish()

    # ============================================================================ deletion

    def delete_groups(self, now_ms: int, api_version: int, request: Request, token: Hashable) -> Effects:
        """DeleteGroups v0-2: only Empty groups; writes offset and group tombstones."""
        self._begin(now_ms)
        results = []
        waits: dict[int, tuple[_PendingWrite, list[Response]]] = {}
        for gid in request.get("groups_names") or ():
            group = self.groups.get(gid)
            entry: Response = {"group_id": gid, "error_code": E.NONE}
            consumer_group = self.consumer.groups.get(gid)
            share_group = self.share.groups.get(gid)
            if consumer_group is not None:
                if consumer_group.members:
                    entry["error_code"] = E.NON_EMPTY_GROUP
                else:
                    pw = self._delete_consumer_group(consumer_group)
                    waits.setdefault(pw.write.write_id, (pw, []))[1].append(entry)
            elif share_group is not None:  # its share state was deleted first (the service's part)
                if share_group.members:
                    entry["error_code"] = E.NON_EMPTY_GROUP
                else:
                    self.share.delete(share_group)
                    for pw in self._consumer_writes():
                        waits.setdefault(pw.write.write_id, (pw, []))[1].append(entry)
                    self._fx.removed_groups.append(gid)
            elif (group is None and not self._has_offsets(gid)) or (group is not None and group.state is DEAD):
                entry["error_code"] = E.GROUP_ID_NOT_FOUND
            elif group is not None and group.state is not EMPTY:
                entry["error_code"] = E.NON_EMPTY_GROUP
            else:
                pw = self._delete_group(gid)
                waits.setdefault(pw.write.write_id, (pw, []))[1].append(entry)
            results.append(entry)

        def failed(pw: _PendingWrite, append_error: ErrorCode) -> None:
            for entry in waits[pw.write.write_id][1]:
                entry["error_code"] = group_write_error(append_error)

        self._after_writes([pw for pw, _ in waits.values()], token, {"throttle_time_ms": 0, "results": results},
                           failed)
        return self._finish()

    def _delete_group(self, group_id: str) -> _PendingWrite:
        """Tombstone the group's offsets and metadata; the group is gone once that is committed.

        Until then the group is Dead for writes (joins and commits get COORDINATOR_NOT_AVAILABLE)
        and still Empty, with its offsets, for reads; if the write fails it is Empty again.
        """
        pw = self._write(self._partition(group_id))
        keys = set(self.offsets.get(group_id, ())) | set(self._pending_offsets.get(group_id, ()))
        for tp in sorted(keys):
            self._write_offset(pw, group_id, tp, None)
        pw.write.records.append((encode_group_metadata_key(group_id), None))
        group = self.groups.get(group_id)
        if group is not None:
            for member_id in group.pending_members:
                self.timers.cancel((_PENDING, group_id, member_id))
            group.pending_members.clear()
            before = (group.state, group.previous_state, group.current_state_timestamp)
            group.transition_to(DEAD, self._now)
            self._deleting[group_id] = group
            pw.on_commit.append(lambda: self._group_deleted(group))
            pw.on_fail.append(lambda _error: self._group_kept(group, before))
        return pw

    def _delete_consumer_group(self, group: ConsumerGroup) -> _PendingWrite:
        """Tombstone an Empty consumer group's offsets and records."""
        pw = self._write(self._partition(group.group_id))
        for tp in sorted(set(self.offsets.get(group.group_id, ())) | set(self._pending_offsets.get(group.group_id, ()))):
            self._write_offset(pw, group.group_id, tp, None)
        self.consumer.delete(group)
        self._consumer_writes()
        self._fx.removed_groups.append(group.group_id)
        return pw

    def _group_deleted(self, group: Group) -> None:
        gid = group.group_id
        if self._deleting.get(gid) is group:
            del self._deleting[gid]
        if self.groups.get(gid) is group:
            del self.groups[gid]
            self._fx.removed_groups.append(gid)
            log.info("group %s: deleted", gid)

    def _group_kept(self, group: Group, before: tuple[GroupState, GroupState | None, int]) -> None:
        gid = group.group_id
        if self._deleting.get(gid) is group:
            del self._deleting[gid]
            group.revert_transition(*before)
        log.warning("group %s: not deleted (its tombstones could not be written)", gid)

    def offset_delete(self, now_ms: int, api_version: int, request: Request, token: Hashable) -> Effects:
        """OffsetDelete v0: refused for topics a live consumer group is subscribed to."""
        self._begin(now_ms)
        g = request.get
        group_id = g("group_id") or ""
        group = self.groups.get(group_id)
        top: ErrorCode = E.NONE
        subscribed: frozenset[str] | None = None
        consumer_group = self.consumer.groups.get(group_id)
        if consumer_group is not None:
            if consumer_group.members:
                subscribed = consumer_group.subscribed_names()
        elif (group is None and not self._has_offsets(group_id)) or (group is not None and group.state is DEAD):
            top = E.GROUP_ID_NOT_FOUND
        elif group is not None and group.state is not EMPTY:
            if group.protocol_type == "consumer":
                subscribed = self._subscribed(group) or frozenset()
            else:
                top = E.NON_EMPTY_GROUP
        out_topics = []
        pw: _PendingWrite | None = None
        if top is E.NONE:
            offsets = self.offsets.get(group_id, {})
            pending = self._pending_offsets.get(group_id, {})
            for t in g("topics") or ():
                name = t.get("name")
                refused = subscribed is not None and name in subscribed
                parts = []
                for p in t.get("partitions") or ():
                    index = p.get("partition_index")
                    if refused:
                        parts.append({"partition_index": index, "error_code": E.GROUP_SUBSCRIBED_TO_TOPIC})
                        continue
                    if (name, index) in offsets or (name, index) in pending:
                        if pw is None:
                            pw = self._write(self._partition(group_id))
                        self._write_offset(pw, group_id, (name, index), None)
                    parts.append({"partition_index": index, "error_code": E.NONE})
                out_topics.append({"name": name, "partitions": parts})
        resp: Response = {"error_code": top, "throttle_time_ms": 0, "topics": out_topics}

        def failed(_pw: _PendingWrite, append_error: ErrorCode) -> None:
            resp["error_code"] = group_write_error(append_error)
            resp["topics"] = []

        self._after_writes([pw] if pw is not None else [], token, resp, failed)
        return self._finish()

    # ============================================================================ retention

    def _cleanup_offsets(self) -> None:
        """Expire offsets (notes §4.8) and delete Empty groups left without offsets.

        Works on committed offsets; groups with offset changes or a deletion in flight wait for
        the next run.
        """
        now = self._now
        retention = self.config.offsets_retention_ms
        busy = self._pending_offsets
        for group_id in list(self.offsets):
            if group_id in busy or group_id in self._deleting:
                continue
            group = self.groups.get(group_id)
            skip: frozenset[str] = frozenset()
            use_state_ts = False
            consumer_group = self.consumer.groups.get(group_id)
            if consumer_group is not None:
                if consumer_group.members:
                    continue  # a live consumer group keeps its offsets
            elif group is None or group.protocol_type is None:
                pass  # standalone consumer: retention counts from each commit
            elif group.state is EMPTY:
                use_state_ts = group.current_state_timestamp >= 0
            elif group.state is STABLE and group.protocol_type == "consumer" and self._subscribed(group) is not None:
                skip = self._subscribed(group) or frozenset()
            else:
                continue
            offsets = self.offsets[group_id]
            expired = []
            for tp, entry in offsets.items():
                if tp[0] in skip:
                    continue
                if entry.expire_timestamp >= 0:
                    gone = now >= entry.expire_timestamp
                else:
                    base = group.current_state_timestamp if use_state_ts and group is not None else entry.commit_timestamp
                    gone = now - base >= retention
                if gone:
                    expired.append(tp)
            if not expired:
                continue
            if (len(expired) == len(offsets) and group is not None and group.state is EMPTY
                    and not group.pending_members):
                self._delete_group(group_id)   # tombstones every offset and the group
                continue
            pw = self._write(self._partition(group_id))
            for tp in expired:
                self._write_offset(pw, group_id, tp, None)
        for group_id, group in list(self.groups.items()):
            if (group.state is EMPTY and not group.pending_members and group_id not in self.offsets
                    and group_id not in busy):
                self._delete_group(group_id)
        for consumer_group in list(self.consumer.groups.values()):
            if not consumer_group.members and consumer_group.group_id not in self.offsets \
                    and consumer_group.group_id not in busy:
                self._delete_consumer_group(consumer_group)

    # ============================================================================ loading

    def load(self, partition: int, key: bytes, value: bytes | None, producer_id: int = -1) -> None:
        """Replay one ``__consumer_offsets`` record (in log order) to rebuild groups and offsets.

        Call :meth:`complete_load` once the whole log has been replayed.
        """
        k = decode_key(key)
        if k is None:
            self.consumer.replay(key, value) or self.share.replay(key, value)
            return
        if k.record_type == GROUP_METADATA_KEY_TYPE:
            if value is None:
                self.groups.pop(k.group, None)
            else:
                self.groups[k.group] = self._group_from_record(k.group, decode_group_metadata_value(value))
            return
        assert k.topic is not None and k.partition is not None
        tp = (k.topic, k.partition)
        if value is None:
            offsets = self.offsets.get(k.group)
            if offsets is not None:
                offsets.pop(tp, None)
                if not offsets:
                    del self.offsets[k.group]
            return
        v = decode_offset_commit_value(value)
        entry = OffsetEntry(v["offset"], v["leader_epoch"], v["metadata"], v["commit_timestamp"], v["expire_timestamp"])
        if producer_id >= 0:  # a transactional commit: pending until its producer's marker
            self.txn_offsets.setdefault(producer_id, {}).setdefault(k.group, {})[tp] = entry
            return
        self.offsets.setdefault(k.group, {})[tp] = entry
        if k.group not in self.groups:
            self.groups[k.group] = Group(k.group)  # a "simple" group, as Kafka recreates on replay

    def load_marker(self, partition: int, producer_id: int, commit: bool) -> None:
        """Replay a COMMIT/ABORT marker of ``producer_id`` (in log order, between :meth:`load` calls)."""
        self._end_transaction(partition, producer_id, commit)

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

    def complete_load(self, now_ms: int) -> Effects:
        """After replay: arm a session timer for every reloaded member (Kafka's onLoaded)."""
        self._begin(now_ms)
        for gid in [gid for gid, group in self.groups.items() if gid in self.consumer.groups and not group.members]:
            del self.groups[gid]  # the "simple" group of a consumer group's offsets
        for group in self.groups.values():
            for member in group.members.values():
                self._reschedule_heartbeat(group, member)
        self.consumer.complete_load(now_ms)
        self.share.complete_load(now_ms)
        return self._finish()

    _BY_KEY: dict[int, Callable[..., Effects]] = {}


GroupCoordinator._BY_KEY = {
    ApiKey.OFFSET_COMMIT: GroupCoordinator.offset_commit,
    ApiKey.TXN_OFFSET_COMMIT: GroupCoordinator.txn_offset_commit,
    ApiKey.OFFSET_FETCH: GroupCoordinator.offset_fetch,
    ApiKey.HEARTBEAT: GroupCoordinator.heartbeat,
    ApiKey.LEAVE_GROUP: GroupCoordinator.leave_group,
    ApiKey.SYNC_GROUP: GroupCoordinator.sync_group,
    ApiKey.DESCRIBE_GROUPS: GroupCoordinator.describe_groups,
    ApiKey.LIST_GROUPS: GroupCoordinator.list_groups,
    ApiKey.DELETE_GROUPS: GroupCoordinator.delete_groups,
    ApiKey.OFFSET_DELETE: GroupCoordinator.offset_delete,
    ApiKey.CONSUMER_GROUP_DESCRIBE: GroupCoordinator.consumer_group_describe,
    ApiKey.SHARE_GROUP_DESCRIBE: GroupCoordinator.share_group_describe,
}


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
