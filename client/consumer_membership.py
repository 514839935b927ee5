"""KIP-848 consumer-group membership as a pure state machine (no I/O, no clock of its own).

The broker drives this protocol: the member sends ConsumerGroupHeartbeat (its member id, its
**member epoch**, its subscription — topic names, or a regular expression the broker evaluates — and
the partitions it owns) and the broker answers with the member's epoch and, when it changed, its
**target assignment** (topic ids and partitions).  This machine follows Kafka's
``ConsumerMembershipManager``:

* states UNSUBSCRIBED, JOINING (epoch 0), RECONCILING, ACKNOWLEDGING, STABLE, STALE (left after
  ``max_poll_interval_ms`` without a poll; rejoins on the next poll), LEAVING, FATAL;
* **reconciliation** of a new target, one at a time, in Kafka's order: revoke what is no longer
  assigned (the edge commits those partitions' offsets first when auto-commit is on, then calls
  ``on_partitions_revoked``), then take the new partitions (``on_partitions_assigned``), then
  acknowledge at once with a heartbeat carrying the partitions now owned.  Topic ids the metadata
  cannot name yet are left for a later reconciliation (the edge refreshes metadata);
* **fencing**: FENCED_MEMBER_EPOCH / UNKNOWN_MEMBER_ID lose every partition
  (``on_partitions_lost``) and rejoin at epoch 0 with the same member id;
* heartbeats every ``heartbeat_interval_ms`` the broker gives, at once while joining, acknowledging or
  leaving; one in flight at a time; coordinator rediscovery on NOT_COORDINATOR /
  COORDINATOR_NOT_AVAILABLE and lost connections, exponential backoff on retriable errors;
* leaving: epoch -1 (a dynamic member), -2 (a static member, ``group_instance_id``: the broker keeps
  its partitions for its return within the session timeout).

Every heartbeat carries all of its fields (Kafka's "full" request): the broker then always answers with
the current assignment, so a lost response costs nothing.  The asyncio edge is
:class:`client.coordinator.ConsumerGroupCoordinator`.
"""

from __future__ import annotations

import base64
import enum
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from client.membership import Action, Fatal, FindCoordinator, Revoke
from client.types import TopicPartition
from protocol.error_codes import ErrorCode

E = ErrorCode
LEAVE_EPOCH = -1
LEAVE_STATIC_EPOCH = -2
#: the heartbeat pace before the broker tells its own (Kafka's group.consumer.heartbeat.interval.ms)
DEFAULT_HEARTBEAT_INTERVAL_MS = 5000

TopicIdResolver = Callable[[uuid.UUID], str | None]
Target = dict[uuid.UUID, frozenset[int]]

#: heartbeat errors the member cannot recover from (Kafka's ``onErrorResponse``)
_FATAL = frozenset({E.GROUP_AUTHORIZATION_FAILED, E.TOPIC_AUTHORIZATION_FAILED, E.INVALID_REQUEST,
                    E.GROUP_MAX_SIZE_REACHED, E.UNSUPPORTED_ASSIGNOR, E.UNSUPPORTED_VERSION,
                    E.UNRELEASED_INSTANCE_ID, E.FENCED_INSTANCE_ID, E.INVALID_REGULAR_EXPRESSION,
                    E.GROUP_ID_NOT_FOUND, E.INVALID_GROUP_ID})


class MemberState(enum.Enum):
    UNSUBSCRIBED = "unsubscribed"
    JOINING = "joining"
    RECONCILING = "reconciling"
    ACKNOWLEDGING = "acknowledging"
    STABLE = "stable"
    STALE = "stale"
    LEAVING = "leaving"
    FATAL = "fatal"


_ACTIVE = (MemberState.JOINING, MemberState.RECONCILING, MemberState.ACKNOWLEDGING, MemberState.STABLE)


def new_member_id() -> str:
    """A member id as Kafka's client makes one (a random UUID, base64url without padding)."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


@dataclass
class SendConsumerHeartbeat(Action):
    member_epoch: int
    subscribed_topic_names: list[str] | None
    subscribed_topic_regex: str | None
    #: the partitions owned, as topic ids (None only when leaving)
    topic_partitions: list[tuple[uuid.UUID, list[int]]] | None


@dataclass
class Reconcile(Action):
    """Revoke ``revoked`` (committing first), take ``added``; then report ``on_reconciled(token)``
    — unless the machine moved on meanwhile (:attr:`ConsumerMembership.reconciling` is not ``token``
    after the revocation: the assignment step is skipped)."""

    revoked: set[TopicPartition]
    added: set[TopicPartition]
    assignment: set[TopicPartition]
    token: int


@dataclass
class RefreshMetadata(Action):
    """The target names topic ids the metadata does not know yet."""

    topic_ids: set[uuid.UUID]


@dataclass
class ConsumerMembership:
    group_id: str
    rebalance_timeout_ms: int
    max_poll_interval_ms: int
    retry_backoff_ms: int = 100
    retry_backoff_max_ms: int = 1000
    group_instance_id: str | None = None
    server_assignor: str | None = None
    member_id: str = field(default_factory=new_member_id)

    state: MemberState = MemberState.UNSUBSCRIBED
    member_epoch: int = 0
    coordinator: int | None = None
    finding_coordinator: bool = False
    topics: list[str] | None = None
    regex: str | None = None
    #: partitions owned (reconciled) and the ids of their topics
    owned: set[TopicPartition] = field(default_factory=set)
    topic_ids: dict[str, uuid.UUID] = field(default_factory=dict)
    #: the latest target assignment from the broker (None: none received since joining)
    target: Target | None = None
    #: the token of the Reconcile running, and what it installs
    reconciling: int | None = None
    _pending: tuple[int, set[TopicPartition], set[TopicPartition], dict[str, uuid.UUID]] | None = None
    _tokens: int = 0
    unresolved: set[uuid.UUID] = field(default_factory=set)
    heartbeat_interval_ms: int = DEFAULT_HEARTBEAT_INTERVAL_MS
    heartbeat_in_flight: bool = False
    next_heartbeat_ms: float = 0.0
    retry_at_ms: float | None = None
    failures: int = 0
    last_poll_ms: float = 0.0
    error: Fatal | None = None

    # -- queries ---------------------------------------------------------------------------------

    @property
    def stable(self) -> bool:
        return self.state is MemberState.STABLE

    @property
    def is_leader(self) -> bool:
        """No member leads a KIP-848 group: the broker assigns."""
        return False

    @property
    def generation(self) -> int:
        return self.member_epoch

    @property
    def subscribed(self) -> bool:
        return self.topics is not None or self.regex is not None

    def next_deadline(self) -> float | None:
        """When :meth:`tick` next has something to do (None: only events can move it)."""
        deadlines: list[float] = []
        if self.retry_at_ms is not None:
            deadlines.append(self.retry_at_ms)
        if self.state in _ACTIVE:
            if not self.heartbeat_in_flight and self.coordinator is not None:
                deadlines.append(self.next_heartbeat_ms)
            deadlines.append(self.last_poll_ms + self.max_poll_interval_ms)
        return min(deadlines) if deadlines else None

    # -- application events ----------------------------------------------------------------------

    def subscribe(self, topics: Iterable[str] | None, regex: str | None, now_ms: float) -> list[Action]:
        """Subscribe to topic names or to a broker-side regular expression; nothing (no names, no
        regex) leaves the group."""
        names = sorted(set(topics)) if topics is not None and regex is None else None
        if regex is None and not names:
            return self.leave(now_ms, unsubscribe=True)
        if (names, regex) == (self.topics, self.regex) and self.state is not MemberState.UNSUBSCRIBED:
            return []
        self.topics, self.regex = names, regex
        if self.state in (MemberState.UNSUBSCRIBED, MemberState.LEAVING):
            self.last_poll_ms = now_ms
            return self._join(now_ms)
        if self.state in _ACTIVE:
            self.next_heartbeat_ms = now_ms  # the new subscription goes out now
            return self._maybe_heartbeat(now_ms)
        return []

    def poll(self, now_ms: float) -> list[Action]:
        """The application polled: resets the poll-interval clock; a stale member rejoins."""
        self.last_poll_ms = now_ms
        if self.state is MemberState.STALE and self.subscribed:
            return self._join(now_ms)
        return []

    def request_rejoin(self, reason: str, now_ms: float) -> list[Action]:
        """Nothing to do: the broker notices metadata changes itself."""
        return []

    def leave(self, now_ms: float, unsubscribe: bool = False) -> list[Action]:
        """Give up the partitions (revoked: offsets are committed) and send the leave heartbeat."""
        actions: list[Action] = []
        if self.owned:
            actions.append(Revoke(set(self.owned)))
        was_member = self.state in _ACTIVE and self.coordinator is not None
        epoch = LEAVE_STATIC_EPOCH if self.group_instance_id is not None and not unsubscribe else LEAVE_EPOCH
        if was_member:
            actions.append(SendConsumerHeartbeat(epoch, None, None, None))
        self._reset_membership()
        if unsubscribe:
            self.topics = self.regex = None
        self.state = MemberState.UNSUBSCRIBED if unsubscribe else MemberState.LEAVING
        return actions

    def _reset_membership(self) -> None:
        self.owned = set()
        self.topic_ids = {}
        self.target = None
        self.reconciling = None  # a Reconcile still running is overtaken (see on_reconciled)
        self.unresolved = set()
        self.member_epoch = 0
        self.heartbeat_in_flight = False
        self.retry_at_ms = None

    # -- timer -----------------------------------------------------------------------------------

    def tick(self, now_ms: float) -> list[Action]:
        actions: list[Action] = []
        if self.retry_at_ms is not None and now_ms >= self.retry_at_ms:
            self.retry_at_ms = None
            if self.state in _ACTIVE:
                actions += self._maybe_heartbeat(now_ms, force=True)
        if self.state not in _ACTIVE:
            return actions
        if now_ms - self.last_poll_ms > self.max_poll_interval_ms:
            return actions + self._poll_timer_expired(now_ms)
        if now_ms >= self.next_heartbeat_ms:
            actions += self._maybe_heartbeat(now_ms)
        return actions

    def _poll_timer_expired(self, now_ms: float) -> list[Action]:
        """Kafka's stale member: leave (keeping a static member's place), lose the partitions, and
        rejoin on the application's next poll."""
        actions: list[Action] = []
        if self.coordinator is not None and self.member_epoch > 0:
            epoch = LEAVE_STATIC_EPOCH if self.group_instance_id is not None else LEAVE_EPOCH
            actions.append(SendConsumerHeartbeat(epoch, None, None, None))
        if self.owned:
            actions.append(Revoke(set(self.owned), lost=True))
        self._reset_membership()
        self.state = MemberState.STALE
        return actions

    def _join(self, now_ms: float) -> list[Action]:
        self._reset_membership()
        self.state = MemberState.JOINING
        self.next_heartbeat_ms = now_ms
        return self._maybe_heartbeat(now_ms)

    def _maybe_heartbeat(self, now_ms: float, force: bool = False) -> list[Action]:
        if self.state not in _ACTIVE or self.heartbeat_in_flight:
            return []
        if self.retry_at_ms is not None and not force:
            return []
        if self.coordinator is None:
            if self.finding_coordinator:
                return []
            self.finding_coordinator = True
            return [FindCoordinator()]
        self.heartbeat_in_flight = True
        by_topic: dict[uuid.UUID, list[int]] = {}
        for tp in sorted(self.owned):
            by_topic.setdefault(self.topic_ids[tp.topic], []).append(tp.partition)
        if self.state is MemberState.ACKNOWLEDGING:
            self.state = MemberState.STABLE if self._target_reconciled() else MemberState.RECONCILING
        names = self.topics if self.topics is not None else ([] if self.regex is not None else None)
        return [SendConsumerHeartbeat(self.member_epoch, names, self.regex, list(by_topic.items()))]

    def _backoff(self, now_ms: float) -> list[Action]:
        self.failures += 1
        delay = min(self.retry_backoff_ms * (2 ** min(self.failures - 1, 16)), self.retry_backoff_max_ms)
        self.retry_at_ms = now_ms + delay
        return []

    # -- coordinator -----------------------------------------------------------------------------

    def on_coordinator(self, node_id: int, now_ms: float) -> list[Action]:
        self.finding_coordinator = False
        self.coordinator = node_id
        if self.state in _ACTIVE:
            self.next_heartbeat_ms = now_ms
            return self._maybe_heartbeat(now_ms, force=True)
        return []

    def on_coordinator_error(self, code: int, now_ms: float) -> list[Action]:
        self.finding_coordinator = False
        if code in (E.GROUP_AUTHORIZATION_FAILED, E.INVALID_GROUP_ID):
            return self._fail(code, "FindCoordinator")
        return self._backoff(now_ms)

    def _coordinator_lost(self, now_ms: float) -> list[Action]:
        self.coordinator = None
        return self._backoff(now_ms)

    def on_request_failed(self, action: Action, now_ms: float) -> list[Action]:
        """A request could not be sent or got no answer (connection lost, timeout)."""
        if isinstance(action, FindCoordinator):
            self.finding_coordinator = False
            return self._backoff(now_ms) if self.state in _ACTIVE else []
        if isinstance(action, SendConsumerHeartbeat):
            self.heartbeat_in_flight = False
            if action.member_epoch < 0 or self.state not in _ACTIVE:
                return []
            return self._coordinator_lost(now_ms)
        return []

    # -- heartbeat responses ---------------------------------------------------------------------

    def on_heartbeat_response(self, code: int, now_ms: float, resolve: TopicIdResolver, *,
                              member_epoch: int = -1, heartbeat_interval_ms: int = 0,
                              assignment: Mapping[uuid.UUID, Iterable[int]] | None = None,
                              message: str | None = None, leaving: bool = False) -> list[Action]:
        self.heartbeat_in_flight = False
        if leaving or self.state not in _ACTIVE:
            return []  # the answer to a leave, or to a heartbeat of a membership given up since
        if code == E.NONE:
            self.failures = 0
            self.member_epoch = member_epoch
            if heartbeat_interval_ms > 0:
                self.heartbeat_interval_ms = heartbeat_interval_ms
            self.next_heartbeat_ms = now_ms + self.heartbeat_interval_ms
            changed = False
            if assignment is not None:
                target = {tid: frozenset(parts) for tid, parts in assignment.items() if parts}
                changed, self.target = target != self.target, target
            if self.state is MemberState.ACKNOWLEDGING:  # an ack waited for this answer: send it now
                self.next_heartbeat_ms = now_ms
                return self._maybe_heartbeat(now_ms)
            if self.target is not None and self.reconciling is None:
                if self._target_reconciled():
                    self.state = MemberState.STABLE
                else:
                    self.state = MemberState.RECONCILING
                    return self.reconcile(resolve, now_ms, ack=changed)
            return []
        if code in (E.NOT_COORDINATOR, E.COORDINATOR_NOT_AVAILABLE):
            return self._coordinator_lost(now_ms)
        if code in (E.FENCED_MEMBER_EPOCH, E.UNKNOWN_MEMBER_ID):
            return self._fenced(now_ms)
        if code in _FATAL:
            detail = f"ConsumerGroupHeartbeat: {E.from_code(code).name}" + (f" ({message})" if message else "")
            return self._fail(code, detail)
        if E.from_code(code).retriable:
            return self._backoff(now_ms)
        return self._fail(code, f"ConsumerGroupHeartbeat: {E.from_code(code).name}")

    def _fenced(self, now_ms: float) -> list[Action]:
        """Every partition is lost (no commit: the member is no longer who owned them); rejoin."""
        actions: list[Action] = []
        if self.owned:
            actions.append(Revoke(set(self.owned), lost=True))
        return actions + self._join(now_ms)

    def _fail(self, code: int, message: str) -> list[Action]:
        actions: list[Action] = []
        if self.owned:
            actions.append(Revoke(set(self.owned), lost=True))
        self._reset_membership()
        self.state = MemberState.FATAL
        self.error = Fatal(code, message)
        return [*actions, self.error]

    # -- reconciliation --------------------------------------------------------------------------

    def _owned_target(self) -> Target:
        out: dict[uuid.UUID, set[int]] = {}
        for tp in self.owned:
            out.setdefault(self.topic_ids[tp.topic], set()).add(tp.partition)
        return {tid: frozenset(ps) for tid, ps in out.items()}

    def _target_reconciled(self) -> bool:
        return self.target is not None and self.target == self._owned_target()

    def reconcile(self, resolve: TopicIdResolver, now_ms: float, ack: bool = True) -> list[Action]:
        """Start reconciling the target if none is running: Kafka's ``maybeReconcile``.  When only
        topics the metadata cannot name differ, what is owned is acknowledged (``ack``: not again when
        new metadata still cannot name them)."""
        if self.state is not MemberState.RECONCILING or self.reconciling is not None or self.target is None:
            return []
        names: dict[str, uuid.UUID] = {}
        resolved: set[TopicPartition] = set()
        self.unresolved = set()
        for tid, parts in self.target.items():
            name = resolve(tid)
            if name is None:
                self.unresolved.add(tid)
                continue
            names[name] = tid
            resolved.update(TopicPartition(name, p) for p in parts)
        actions: list[Action] = [RefreshMetadata(set(self.unresolved))] if self.unresolved else []
        if resolved == self.owned:
            # only unresolved topics differ: acknowledge what is owned, reconcile the rest later
            if not self.unresolved:
                self.state = MemberState.STABLE
            elif ack:
                self.state = MemberState.ACKNOWLEDGING
                self.next_heartbeat_ms = now_ms
                actions += self._maybe_heartbeat(now_ms)
            return actions
        self._tokens += 1
        self.reconciling = self._tokens
        self._pending = (self._tokens, resolved, resolved - self.owned, names)
        return [*actions, Reconcile(self.owned - resolved, resolved - self.owned, set(resolved), self._tokens)]

    def on_reconciled(self, token: int, assigned: bool, resolve: TopicIdResolver, now_ms: float) -> list[Action]:
        """The edge ran the :class:`Reconcile` ``token`` (``assigned``: its assignment step too): the new
        assignment is owned; acknowledge it at once, then reconcile a target that came meanwhile.  A
        reconciliation overtaken by fencing or leaving gives the partitions it assigned up again."""
        pending = self._pending
        if pending is None or pending[0] != token:
            return []
        self._pending = None
        _, assignment, added, names = pending
        if self.reconciling != token:
            return [Revoke(set(added), lost=True)] if assigned and added else []
        self.reconciling = None
        self.owned = set(assignment)
        self.topic_ids = {t: names[t] for t in {tp.topic for tp in assignment}}
        self.state = MemberState.ACKNOWLEDGING
        self.next_heartbeat_ms = now_ms
        actions = self._maybe_heartbeat(now_ms, force=True)
        if self.state is MemberState.RECONCILING:  # the ack is out and a newer target waits
            actions += self.reconcile(resolve, now_ms)
        return actions

    def on_metadata(self, resolve: TopicIdResolver, now_ms: float) -> list[Action]:
        """New metadata: topic ids of the target may be nameable now."""
        if self.state is MemberState.RECONCILING and self.reconciling is None and self.unresolved:
            return self.reconcile(resolve, now_ms, ack=False)  # refreshes again (paced) while unknown
        return []

    def on_commit_error(self, code: int, now_ms: float) -> list[Action]:
        """OffsetCommit errors change nothing here: the heartbeat finds out about fencing."""
        return []
