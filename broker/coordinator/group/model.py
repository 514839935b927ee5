"""In-memory model of classic groups: states, members, offsets.

State transitions (docs/classic-groups.md "States", Kafka's ``ClassicGroupState``)::

    state                 valid previous states
    Empty                 PreparingRebalance            (and initial/reloaded groups)
    PreparingRebalance    Stable, CompletingRebalance, Empty
    CompletingRebalance   PreparingRebalance
    Stable                CompletingRebalance           (and groups reloaded with members)
    Dead                  any

:meth:`Group.transition_to` enforces this table; everything else here is bookkeeping kept
O(1) per member operation (vote counts per protocol, number of members awaiting a join) so a
1,000-member group joining at once costs O(n), not O(n²).
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from enum import Enum

__all__ = ["VALID_PREVIOUS", "Group", "GroupState", "Member", "OffsetEntry"]


class GroupState(Enum):
    """Classic group states; ``value`` is the DescribeGroups/ListGroups string."""

    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


S = GroupState
VALID_PREVIOUS: dict[GroupState, frozenset[GroupState]] = {
    S.EMPTY: frozenset({S.PREPARING_REBALANCE}),
    S.PREPARING_REBALANCE: frozenset({S.STABLE, S.COMPLETING_REBALANCE, S.EMPTY}),
    S.COMPLETING_REBALANCE: frozenset({S.PREPARING_REBALANCE}),
    S.STABLE: frozenset({S.COMPLETING_REBALANCE}),
    S.DEAD: frozenset(GroupState),
}


class Member:
    """One group member. ``join_token``/``sync_token`` hold the parked request, if any."""

    __slots__ = ("assignment", "client_host", "client_id", "group_instance_id", "is_new", "join_token",
                 "join_version", "member_id", "protocol_type", "protocols", "rebalance_timeout_ms",
                 "session_timeout_ms", "sync_token", "sync_version")

    def __init__(self, member_id: str, group_instance_id: str | None, client_id: str, client_host: str,
                 rebalance_timeout_ms: int, session_timeout_ms: int, protocol_type: str,
                 protocols: tuple[tuple[str, bytes], ...]) -> None:
        self.member_id = member_id
        self.group_instance_id = group_instance_id
        self.client_id = client_id
        self.client_host = client_host
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.session_timeout_ms = session_timeout_ms
        self.protocol_type = protocol_type
        self.protocols = protocols
        self.assignment = b""
        self.join_token: Hashable | None = None
        self.join_version = 0
        self.sync_token: Hashable | None = None
        self.sync_version = 0
        self.is_new = False

    @property
    def awaiting_join(self) -> bool:
        return self.join_token is not None

    @property
    def awaiting_sync(self) -> bool:
        return self.sync_token is not None

    def metadata(self, protocol: str | None) -> bytes:
        for name, meta in self.protocols:
            if name == protocol:
                return meta
        return b""

    def vote(self, candidates: set[str]) -> str | None:
        """The first protocol of this member's ordered list that every member supports."""
        for name, _ in self.protocols:
            if name in candidates:
                return name
        return None

    def has_satisfied_heartbeat(self) -> bool:
        """Kafka's rule: members parked in a join/sync are alive, unless they are still new."""
        if self.is_new:
            return False
        return self.join_token is not None or self.sync_token is not None


@dataclass(slots=True)
class OffsetEntry:
    """A committed offset as stored in OffsetCommitValue."""

    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp: int
    expire_timestamp: int = -1


class Group:
    """A classic group. Mutate members only through :meth:`add`, :meth:`remove`,
    :meth:`update_protocols`, :meth:`set_join`, so the counters stay exact."""

    __slots__ = ("current_state_timestamp", "generation_id", "group_id", "initial_delay_ms",
                 "initial_remaining_ms", "leader_id", "members", "new_member_added", "num_awaiting_join",
                 "pending_members", "pending_sync", "previous_state", "protocol_counts", "protocol_name",
                 "protocol_type", "state", "static_members", "subscribed", "subscribed_known")

    def __init__(self, group_id: str, now_ms: int = -1) -> None:
        self.group_id = group_id
        self.state = GroupState.EMPTY
        self.previous_state: GroupState | None = None
        self.protocol_type: str | None = None
        self.protocol_name: str | None = None
        self.generation_id = 0
        self.leader_id: str | None = None
        self.members: dict[str, Member] = {}
        self.static_members: dict[str, str] = {}
        self.pending_members: set[str] = set()
        self.pending_sync: set[str] = set()
        self.protocol_counts: dict[str, int] = {}
        self.num_awaiting_join = 0
        self.new_member_added = False
        self.initial_delay_ms = 0       # > 0 while an initial (Empty-group) delayed join runs
        self.initial_remaining_ms = 0
        self.current_state_timestamp = now_ms
        self.subscribed: frozenset[str] | None = None   # cached consumer subscription union
        self.subscribed_known = False                     # False: recompute on next use

    # -- state machine ------------------------------------------------------------------------

    def transition_to(self, target: GroupState, now_ms: int) -> None:
        if self.state not in VALID_PREVIOUS[target]:
            raise AssertionError(f"group {self.group_id!r}: illegal transition {self.state.value} -> {target.value}")
        self.previous_state = self.state
        self.state = target
        self.current_state_timestamp = now_ms

    def revert_transition(self, state: GroupState, previous_state: GroupState | None, timestamp: int) -> None:
        """Undo a transition whose write failed (a rollback to saved values, not a transition:
        the table does not apply)."""
        self.state = state
        self.previous_state = previous_state
        self.current_state_timestamp = timestamp

    def is_in(self, *states: GroupState) -> bool:
        return self.state in states

    # -- membership -----------------------------------------------------------------------------

    def add(self, member: Member) -> None:
        if not self.members:
            self.protocol_type = member.protocol_type
        self.members[member.member_id] = member
        for name, _ in member.protocols:
            self.protocol_counts[name] = self.protocol_counts.get(name, 0) + 1
        if member.group_instance_id is not None:
            self.static_members[member.group_instance_id] = member.member_id
        if member.join_token is not None:
            self.num_awaiting_join += 1
        if self.leader_id is None:
            self.leader_id = member.member_id

    def remove(self, member_id: str) -> Member | None:
        member = self.members.pop(member_id, None)
        if member is None:
            return None
        self._uncount(member.protocols)
        if member.group_instance_id is not None and self.static_members.get(member.group_instance_id) == member_id:
            del self.static_members[member.group_instance_id]
        if member.join_token is not None:
            self.num_awaiting_join -= 1
        self.pending_sync.discard(member_id)
        if self.leader_id == member_id:
            self.leader_id = next(iter(self.members), None)
        return member

    def replace_static(self, member: Member, new_member_id: str) -> str:
        """Give a static member a new id (KIP-345 fencing); returns the old id."""
        old_id = member.member_id
        del self.members[old_id]
        member.member_id = new_member_id
        self.members[new_member_id] = member
        assert member.group_instance_id is not None
        self.static_members[member.group_instance_id] = new_member_id
        if old_id in self.pending_sync:
            self.pending_sync.discard(old_id)
            self.pending_sync.add(new_member_id)
        if self.leader_id == old_id:
            self.leader_id = new_member_id
        return old_id

    def update_protocols(self, member: Member, protocols: tuple[tuple[str, bytes], ...]) -> None:
        self._uncount(member.protocols)
        member.protocols = protocols
        for name, _ in protocols:
            self.protocol_counts[name] = self.protocol_counts.get(name, 0) + 1

    def set_join(self, member: Member, token: Hashable | None, version: int = 0) -> Hashable | None:
        """Park (or clear, with None) the member's JoinGroup; returns the token it replaces."""
        old = member.join_token
        if old is None and token is not None:
            self.num_awaiting_join += 1
        elif old is not None and token is None:
            self.num_awaiting_join -= 1
        member.join_token = token
        member.join_version = version
        return old

    def _uncount(self, protocols: tuple[tuple[str, bytes], ...]) -> None:
        counts = self.protocol_counts
        for name, _ in protocols:
            n = counts[name] - 1
            if n:
                counts[name] = n
            else:
                del counts[name]

    # -- queries --------------------------------------------------------------------------------

    def has_all_members_joined(self) -> bool:
        return len(self.members) == self.num_awaiting_join and not self.pending_members

    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def supports_protocols(self, protocol_type: str, names: list[str]) -> bool:
        if self.state is GroupState.EMPTY:
            return bool(protocol_type) and bool(names)
        n = len(self.members)
        counts = self.protocol_counts
        return protocol_type == self.protocol_type and any(counts.get(name, 0) == n for name in names)

    def candidate_protocols(self) -> set[str]:
        n = len(self.members)
        return {name for name, count in self.protocol_counts.items() if count == n}

    def select_protocol(self) -> str | None:
        """Kafka's vote: each member votes for its first candidate; most votes wins (ties: first seen)."""
        candidates = self.candidate_protocols()
        votes: dict[str, int] = {}
        for member in self.members.values():
            choice = member.vote(candidates)
            if choice is not None:
                votes[choice] = votes.get(choice, 0) + 1
        if not votes:
            return None
        return max(votes, key=votes.__getitem__)

