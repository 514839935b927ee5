"""Classic consumer-group membership as a pure state machine (no I/O, no clock of its own).

The asyncio edge (:mod:`client.coordinator`) feeds it events — responses, request failures,
``tick(now_ms)`` from the timing wheel, polls from the application — and executes the
:class:`Action` s it returns, in order.  Everything time-related (heartbeats, session expiry,
``max_poll_interval_ms``, retry backoff) is decided here from the ``now_ms`` it is given, so
the whole protocol is testable with a fake clock.

Rules implemented: FindCoordinator; JoinGroup with the MEMBER_ID_REQUIRED second round; the
leader computes the assignment (via the edge, :class:`RunAssignment`); SyncGroup; heartbeats
every ``heartbeat_interval_ms``; rejoin on REBALANCE_IN_PROGRESS, ILLEGAL_GENERATION,
UNKNOWN_MEMBER_ID; coordinator rediscovery on NOT_COORDINATOR / COORDINATOR_NOT_AVAILABLE
and on network failure; LeaveGroup on close (not for static members); ``max_poll_interval_ms``
enforcement; eager (revoke everything before joining) and cooperative (revoke only what moved,
then rejoin) protocols.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Protocol

from client.types import TopicPartition
from protocol.error_codes import ErrorCode


class GroupProtocol(Protocol):
    """What membership needs from the assignors (see :mod:`client.group_protocol`)."""

    def names(self) -> list[str]: ...
    def is_cooperative(self, name: str) -> bool: ...
    def subscription(self, name: str, topics: list[str], owned: set[TopicPartition], generation: int) -> bytes: ...
    def decode_assignment(self, data: bytes) -> set[TopicPartition]: ...


class State(enum.Enum):
    UNJOINED = "unjoined"
    FINDING_COORDINATOR = "finding_coordinator"
    JOINING = "joining"
    ASSIGNING = "assigning"
    SYNCING = "syncing"
    STABLE = "stable"
    CLOSED = "closed"
    FAILED = "failed"


# -- actions -------------------------------------------------------------------------------------


class Action:
    __slots__ = ()


@dataclass
class FindCoordinator(Action):
    pass


@dataclass
class SendJoinGroup(Action):
    member_id: str
    protocols: list[tuple[str, bytes]]
    reason: str


@dataclass
class RunAssignment(Action):
    """Leader only: compute the assignment, then call :meth:`Membership.on_assignment`."""

    protocol: str
    members: list[tuple[str, str | None, bytes]]
    generation: int


@dataclass
class SendSyncGroup(Action):
    generation: int
    member_id: str
    protocol: str
    assignments: dict[str, bytes]


@dataclass
class SendHeartbeat(Action):
    generation: int
    member_id: str


@dataclass
class SendLeaveGroup(Action):
    member_id: str
    reason: str


@dataclass
class Revoke(Action):
    """Give up ``partitions``: ``lost`` means without a chance to commit (session gone, fenced)."""

    partitions: set[TopicPartition]
    lost: bool = False


@dataclass
class Assign(Action):
    """``added`` are newly owned; ``assignment`` is everything owned now."""

    added: set[TopicPartition]
    assignment: set[TopicPartition]


@dataclass
class Fatal(Action):
    code: int
    message: str


# -- the machine ---------------------------------------------------------------------------------


@dataclass
class Membership:
    group_id: str
    protocol: GroupProtocol
    session_timeout_ms: int
    heartbeat_interval_ms: int
    max_poll_interval_ms: int
    retry_backoff_ms: int = 100
    group_instance_id: str | None = None

    state: State = State.UNJOINED
    member_id: str = ""
    generation: int = -1
    protocol_name: str | None = None
    leader_id: str = ""
    coordinator: int | None = None
    subscription: list[str] = field(default_factory=list)
    owned: set[TopicPartition] = field(default_factory=set)
    rejoin_needed: bool = True
    rejoin_reason: str = "initial join"
    heartbeat_in_flight: bool = False
    next_heartbeat_ms: float = 0.0
    last_heartbeat_ack_ms: float = 0.0
    last_poll_ms: float = 0.0
    retry_at_ms: float | None = None
    poll_timed_out: bool = False
    error: Fatal | None = None

    # -- queries ---------------------------------------------------------------------------------

    @property
    def is_leader(self) -> bool:
        return bool(self.member_id) and self.member_id == self.leader_id

    @property
    def cooperative(self) -> bool:
        names = self.protocol.names()
        return self.protocol.is_cooperative(self.protocol_name or (names[0] if names else ""))

    @property
    def stable(self) -> bool:
        return self.state is State.STABLE and not self.rejoin_needed

    def next_deadline(self) -> float | None:
        """When :meth:`tick` next has something to do (None: only events can move it)."""
        deadlines: list[float] = []
        if self.retry_at_ms is not None:
            deadlines.append(self.retry_at_ms)
        if self.state is State.STABLE:
            if not self.heartbeat_in_flight:
                deadlines.append(self.next_heartbeat_ms)
            deadlines.append(self.last_heartbeat_ack_ms + self.session_timeout_ms)
            if not self.poll_timed_out:
                deadlines.append(self.last_poll_ms + self.max_poll_interval_ms)
        return min(deadlines) if deadlines else None

    # -- application events ----------------------------------------------------------------------

    def subscribe(self, topics: Iterable[str], now_ms: float) -> list[Action]:
        topics = sorted(set(topics))
        if topics == self.subscription and self.state is not State.UNJOINED:
            return []
        self.subscription = topics
        return self.request_rejoin("subscription changed", now_ms)

    def poll(self, now_ms: float) -> list[Action]:
        """The application polled: resets the poll-interval clock and (re)joins if needed."""
        self.last_poll_ms = now_ms
        if self.state in (State.CLOSED, State.FAILED):
            return []
        if self.poll_timed_out:
            self.poll_timed_out = False
            self.rejoin_needed = True
            self.rejoin_reason = "rejoining after max_poll_interval_ms expired"
        if self.state is State.UNJOINED or (self.state is State.STABLE and self.rejoin_needed):
            return self._start_rebalance(now_ms)
        return []

    def request_rejoin(self, reason: str, now_ms: float) -> list[Action]:
        self.rejoin_needed = True
        self.rejoin_reason = reason
        if self.state is State.STABLE:
            return self._start_rebalance(now_ms)
        return []

    def leave(self, now_ms: float) -> list[Action]:
        actions: list[Action] = []
        if self.owned:
            actions.append(Revoke(set(self.owned)))
            self.owned = set()
        if self.member_id and self.group_instance_id is None and self.coordinator is not None:
            actions.append(SendLeaveGroup(self.member_id, "consumer closing"))
        self.state = State.CLOSED
        self.retry_at_ms = None
        return actions

    # -- timer -----------------------------------------------------------------------------------

    def tick(self, now_ms: float) -> list[Action]:
        actions: list[Action] = []
        if self.retry_at_ms is not None and now_ms >= self.retry_at_ms:
            self.retry_at_ms = None
            actions += self._retry(now_ms)
        if self.state is not State.STABLE:
            return actions
        if not self.poll_timed_out and now_ms - self.last_poll_ms > self.max_poll_interval_ms:
            self.poll_timed_out = True
            actions += self._lose_membership(now_ms, reset_member=self.group_instance_id is None,
                                             leave=self.group_instance_id is None,
                                             reason="max_poll_interval_ms expired")
            self.state = State.UNJOINED
            return actions
        if now_ms - self.last_heartbeat_ack_ms > self.session_timeout_ms:
            return actions + self._coordinator_lost(now_ms)
        if not self.heartbeat_in_flight and now_ms >= self.next_heartbeat_ms:
            self.heartbeat_in_flight = True
            actions.append(SendHeartbeat(self.generation, self.member_id))
        return actions

    def _retry(self, now_ms: float) -> list[Action]:
        if self.state is State.FINDING_COORDINATOR:
            return [FindCoordinator()]
        if self.state is State.JOINING:
            return [self._join_request()]
        return []

    # -- rebalance -------------------------------------------------------------------------------

    def _start_rebalance(self, now_ms: float) -> list[Action]:
        actions: list[Action] = []
        if not self.cooperative and self.owned:
            actions.append(Revoke(set(self.owned)))
            self.owned = set()
        if self.coordinator is None:
            self.state = State.FINDING_COORDINATOR
            actions.append(FindCoordinator())
            return actions
        self.state = State.JOINING
        actions.append(self._join_request())
        return actions

    def _join_request(self) -> SendJoinGroup:
        protocols = [(name, self.protocol.subscription(name, self.subscription, self.owned, self.generation))
                     for name in self.protocol.names()]
        return SendJoinGroup(self.member_id, protocols, self.rejoin_reason)

    def _backoff(self, now_ms: float) -> list[Action]:
        self.retry_at_ms = now_ms + self.retry_backoff_ms
        return []

    def _fail(self, code: int, message: str) -> list[Action]:
        self.state = State.FAILED
        self.error = Fatal(code, message)
        return [self.error]

    def _coordinator_lost(self, now_ms: float) -> list[Action]:
        self.coordinator = None
        self.heartbeat_in_flight = False
        if self.state in (State.CLOSED, State.FAILED):
            return []
        self.state = State.FINDING_COORDINATOR
        return [FindCoordinator()]

    def _lose_membership(self, now_ms: float, *, reset_member: bool, leave: bool = False,
                         reason: str) -> list[Action]:
        actions: list[Action] = []
        if leave and self.member_id and self.coordinator is not None:
            actions.append(SendLeaveGroup(self.member_id, reason))
        if self.owned:
            actions.append(Revoke(set(self.owned), lost=True))
            self.owned = set()
        if reset_member:
            self.member_id = ""
        self.generation = -1
        self.heartbeat_in_flight = False
        self.rejoin_needed = True
        self.rejoin_reason = reason
        return actions

    # -- responses -------------------------------------------------------------------------------

    def on_coordinator(self, node_id: int, now_ms: float) -> list[Action]:
        if self.state is not State.FINDING_COORDINATOR:
            return []
        self.coordinator = node_id
        self.last_heartbeat_ack_ms = now_ms
        if self.rejoin_needed or self.generation < 0:
            return self._start_rebalance(now_ms)
        self.state = State.STABLE
        self.next_heartbeat_ms = now_ms
        return []

    def on_coordinator_error(self, code: int, now_ms: float) -> list[Action]:
        if self.state is not State.FINDING_COORDINATOR:
            return []
        if code in (ErrorCode.GROUP_AUTHORIZATION_FAILED, ErrorCode.INVALID_GROUP_ID):
            return self._fail(code, "FindCoordinator")
        return self._backoff(now_ms)

    def on_request_failed(self, action: Action, now_ms: float) -> list[Action]:
        """A request could not be sent or got no answer (connection lost, timeout)."""
        if isinstance(action, FindCoordinator):
            return self._backoff(now_ms) if self.state is State.FINDING_COORDINATOR else []
        if isinstance(action, SendHeartbeat):
            self.heartbeat_in_flight = False
            if self.state is not State.STABLE:
                return []
        if isinstance(action, SendLeaveGroup):
            return []
        if self.state in (State.CLOSED, State.FAILED):
            return []
        self.rejoin_needed = True
        return self._coordinator_lost(now_ms)

    def on_join_response(self, code: int, now_ms: float, *, member_id: str = "", generation: int = -1,
                         protocol_name: str | None = None, leader: str = "",
                         members: list[tuple[str, str | None, bytes]] | None = None,
                         skip_assignment: bool = False) -> list[Action]:
        if self.state is not State.JOINING:
            return []
        if code == ErrorCode.NONE:
            self.member_id = member_id
            self.generation = generation
            self.protocol_name = protocol_name
            self.leader_id = leader
            if self.is_leader and not skip_assignment:
                self.state = State.ASSIGNING
                return [RunAssignment(protocol_name or "", list(members or []), generation)]
            self.state = State.SYNCING
            return [SendSyncGroup(generation, member_id, protocol_name or "", {})]
        if code == ErrorCode.MEMBER_ID_REQUIRED:
            self.member_id = member_id
            return [self._join_request()]
        if code == ErrorCode.UNKNOWN_MEMBER_ID:
            self.member_id = ""
            self.generation = -1
            return [self._join_request()]
        if code in (ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE):
            return self._coordinator_lost(now_ms)
        if code in (ErrorCode.REBALANCE_IN_PROGRESS, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
                    ErrorCode.ILLEGAL_GENERATION, ErrorCode.REQUEST_TIMED_OUT):
            return self._backoff(now_ms)
        return self._fail(code, "JoinGroup")

    def on_assignment(self, assignments: dict[str, bytes], now_ms: float) -> list[Action]:
        if self.state is not State.ASSIGNING:
            return []
        self.state = State.SYNCING
        return [SendSyncGroup(self.generation, self.member_id, self.protocol_name or "", assignments)]

    def on_sync_response(self, code: int, now_ms: float, assignment: bytes = b"") -> list[Action]:
        if self.state is not State.SYNCING:
            return []
        if code == ErrorCode.NONE:
            return self._install(self.protocol.decode_assignment(assignment) if assignment else set(), now_ms)
        if code == ErrorCode.REBALANCE_IN_PROGRESS:
            self.state = State.JOINING
            self.rejoin_reason = "group is rebalancing"
            return [self._join_request()]
        if code in (ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.ILLEGAL_GENERATION, ErrorCode.FENCED_INSTANCE_ID):
            if code == ErrorCode.FENCED_INSTANCE_ID:
                return self._fail(code, "SyncGroup: another member took this group_instance_id")
            actions = self._lose_membership(now_ms, reset_member=code == ErrorCode.UNKNOWN_MEMBER_ID,
                                            reason=f"SyncGroup {ErrorCode.from_code(code).name}")
            self.state = State.JOINING
            return [*actions, self._join_request()]
        if code in (ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE):
            self.rejoin_needed = True
            return self._coordinator_lost(now_ms)
        return self._fail(code, "SyncGroup")

    def _install(self, assignment: set[TopicPartition], now_ms: float) -> list[Action]:
        actions: list[Action] = []
        revoked = self.owned - assignment
        added = assignment - self.owned
        self.rejoin_needed = False
        if revoked:
            actions.append(Revoke(revoked))
            if self.cooperative:
                self.rejoin_needed = True
                self.rejoin_reason = "cooperative rebalance: revoked partitions must be released"
        self.owned = set(assignment)
        self.state = State.STABLE
        self.last_heartbeat_ack_ms = now_ms
        self.next_heartbeat_ms = now_ms + self.heartbeat_interval_ms
        self.heartbeat_in_flight = False
        actions.append(Assign(added, set(assignment)))
        if self.rejoin_needed:
            actions += self._start_rebalance(now_ms)
        return actions

    def on_heartbeat_response(self, code: int, now_ms: float) -> list[Action]:
        self.heartbeat_in_flight = False
        if self.state is not State.STABLE:
            return []
        if code == ErrorCode.NONE:
            self.last_heartbeat_ack_ms = now_ms
            self.next_heartbeat_ms = now_ms + self.heartbeat_interval_ms
            return []
        if code == ErrorCode.REBALANCE_IN_PROGRESS:
            self.last_heartbeat_ack_ms = now_ms
            return self.request_rejoin("group is rebalancing", now_ms)
        if code in (ErrorCode.ILLEGAL_GENERATION, ErrorCode.UNKNOWN_MEMBER_ID):
            actions = self._lose_membership(now_ms, reset_member=code == ErrorCode.UNKNOWN_MEMBER_ID,
                                            reason=f"Heartbeat {ErrorCode.from_code(code).name}")
            return actions + self._start_rebalance(now_ms)
        if code == ErrorCode.FENCED_INSTANCE_ID:
            actions = self._lose_membership(now_ms, reset_member=False, reason="fenced")
            return actions + self._fail(code, "Heartbeat: another member took this group_instance_id")
        if code in (ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE):
            return self._coordinator_lost(now_ms)
        self.next_heartbeat_ms = now_ms + self.retry_backoff_ms
        return []

    def on_commit_error(self, code: int, now_ms: float) -> list[Action]:
        """A group error returned by OffsetCommit feeds back into membership."""
        if code in (ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE):
            return self._coordinator_lost(now_ms) if self.state is State.STABLE else []
        if code == ErrorCode.REBALANCE_IN_PROGRESS:
            return self.request_rejoin("group is rebalancing", now_ms)
        if code in (ErrorCode.ILLEGAL_GENERATION, ErrorCode.UNKNOWN_MEMBER_ID) and self.state is State.STABLE:
            actions = self._lose_membership(now_ms, reset_member=code == ErrorCode.UNKNOWN_MEMBER_ID,
                                            reason=f"OffsetCommit {ErrorCode.from_code(code).name}")
            return actions + self._start_rebalance(now_ms)
        return []
