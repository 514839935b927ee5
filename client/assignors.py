"""Consumer-group partition assignors (the classic "consumer" embedded protocol).

Wire-compatible with the Java client and librdkafka: the protocol names are ``range``,
``roundrobin``, ``sticky`` and ``cooperative-sticky``, and the member metadata/assignment bytes are
``ConsumerProtocolSubscription``/``ConsumerProtocolAssignment`` v0-3 (an int16 version followed by
the non-flexible struct), encoded with the shared schema codec in :mod:`protocol.schemas.misc`.

Member ordering (Range and RoundRobin) follows Java's ``AbstractPartitionAssignor.MemberInfo``:
static members (with a ``group.instance.id``) come first, ordered by instance id, then dynamic
members ordered by member id. With only dynamic members that is plain member-id order.

The sticky assignors are our own algorithm with the Java guarantees:

* balance: with identical subscriptions every member gets ``floor(P/M)`` or ``ceil(P/M)``
  partitions; otherwise no partition can be moved, directly or along a chain of eligible members,
  from a member to one holding at least two fewer;
* stickiness: as many previously owned partitions as possible stay put (exactly optimal with
  identical subscriptions), ownership being the highest-generation claim of each partition
  (claims of one partition by several members of that same generation are discarded);
* ``cooperative-sticky`` then holds back every partition that would move from a member still
  owning it (Java's ``computePartitionsTransferringOwnership`` rule): that owner is told to revoke
  it, and the follow-up rebalance hands it to its new owner.

Previous ownership comes from ``Subscription.owned_partitions`` + ``generation_id`` (protocol v1/v2)
for ``cooperative-sticky`` (falling back to its 4-byte user-data generation), and from the
``StickyAssignorUserData`` in ``user_data`` for the eager ``sticky`` assignor.
"""

from __future__ import annotations

import struct
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from itertools import pairwise
from typing import ClassVar, Literal

from protocol.errors import ProtocolError
from protocol.schema import Field as F
from protocol.schema import Message
from protocol.schemas.misc import ConsumerProtocolAssignment, ConsumerProtocolSubscription

__all__ = [
    "ASSIGNORS",
    "Assignment",
    "Assignor",
    "CooperativeStickyAssignor",
    "RangeAssignor",
    "RoundRobinAssignor",
    "StickyAssignor",
    "Subscription",
    "TopicPartition",
    "assignor_by_name",
    "decode_assignment",
    "decode_sticky_user_data",
    "decode_subscription",
    "encode_assignment",
    "encode_sticky_user_data",
    "encode_subscription",
    "hold_back_transfers",
]

TopicPartition = tuple[str, int]
DEFAULT_GENERATION = -1
SUBSCRIPTION_VERSION = 3
ASSIGNMENT_VERSION = 3


@dataclass
class Subscription:
    """One member's metadata in a JoinGroup (``group_instance_id`` comes from the JoinGroup member)."""

    topics: list[str]
    user_data: bytes | None = None
    owned_partitions: list[TopicPartition] = field(default_factory=list)
    generation_id: int = DEFAULT_GENERATION
    rack_id: str | None = None
    group_instance_id: str | None = None


@dataclass
class Assignment:
    partitions: list[TopicPartition]
    user_data: bytes | None = None


def _group(partitions: Iterable[TopicPartition]) -> list[dict[str, object]]:
    """Group by topic in first-appearance order (what Java's ConsumerProtocol serializer does)."""
    grouped: dict[str, list[int]] = {}
    for topic, partition in partitions:
        grouped.setdefault(topic, []).append(partition)
    return [{"topic": t, "partitions": ps} for t, ps in grouped.items()]


def _flatten(entries: Iterable[Mapping[str, object]]) -> list[TopicPartition]:
    return [(e["topic"], p) for e in entries for p in e["partitions"]]  # type: ignore[union-attr]


def _read_version(data: bytes, what: str, highest: int) -> int:
    if len(data) < 2:
        raise ProtocolError(f"{what}: truncated version")
    (version,) = struct.unpack_from(">h", data)
    if version < 0:
        raise ProtocolError(f"{what}: unsupported version {version}")
    return min(version, highest)


def encode_subscription(sub: Subscription, version: int = SUBSCRIPTION_VERSION) -> bytes:
    """``ConsumerProtocolSubscription`` bytes (int16 version + body) for JoinGroup metadata."""
    body = ConsumerProtocolSubscription.encode(
        version,
        {
            "topics": list(sub.topics),
            "user_data": sub.user_data,
            "owned_partitions": _group(sub.owned_partitions),
            "generation_id": sub.generation_id,
            "rack_id": sub.rack_id,
        },
    )
    return struct.pack(">h", version) + body


def decode_subscription(data: bytes, group_instance_id: str | None = None) -> Subscription:
    """Parse member metadata; versions above 3 are read as v3 and trailing bytes are ignored."""
    data = bytes(data)
    version = _read_version(data, "ConsumerProtocolSubscription", ConsumerProtocolSubscription.max_version)
    obj = ConsumerProtocolSubscription.decode(version, data, 2)
    return Subscription(
        topics=list(obj["topics"]),
        user_data=obj["user_data"],
        owned_partitions=_flatten(obj["owned_partitions"]),
        generation_id=obj["generation_id"],
        rack_id=obj["rack_id"],
        group_instance_id=group_instance_id,
    )


def encode_assignment(assignment: Assignment, version: int = ASSIGNMENT_VERSION) -> bytes:
    """``ConsumerProtocolAssignment`` bytes (int16 version + body) for SyncGroup."""
    body = ConsumerProtocolAssignment.encode(
        version,
        {"assigned_partitions": _group(assignment.partitions), "user_data": assignment.user_data},
    )
    return struct.pack(">h", version) + body


def decode_assignment(data: bytes) -> Assignment:
    """Parse a SyncGroup assignment; empty bytes mean "no assignment" (as in Java)."""
    data = bytes(data)
    if not data:
        return Assignment([], None)
    version = _read_version(data, "ConsumerProtocolAssignment", ConsumerProtocolAssignment.max_version)
    obj = ConsumerProtocolAssignment.decode(version, data, 2)
    return Assignment(_flatten(obj["assigned_partitions"]), obj["user_data"])


def _member_sort_key(member_id: str, sub: Subscription) -> tuple[int, str]:
    if sub.group_instance_id is not None:
        return (0, sub.group_instance_id)
    return (1, member_id)


def _sorted_members(subscriptions: Mapping[str, Subscription]) -> list[str]:
    return sorted(subscriptions, key=lambda m: _member_sort_key(m, subscriptions[m]))


def _sorted_tp(partitions: Iterable[TopicPartition]) -> list[TopicPartition]:
    return sorted(partitions)


class Assignor:
    """Base class: ``assign`` maps every member id to its :class:`Assignment`."""

    name: ClassVar[str] = ""
    protocol: ClassVar[Literal["EAGER", "COOPERATIVE"]] = "EAGER"

    def assign(
        self, cluster_partitions: Mapping[str, int], subscriptions: Mapping[str, Subscription]
    ) -> dict[str, Assignment]:
        result = self.assign_partitions(cluster_partitions, subscriptions)
        return {m: Assignment(_sorted_tp(result.get(m, ())), None) for m in subscriptions}

    def assign_partitions(
        self, cluster_partitions: Mapping[str, int], subscriptions: Mapping[str, Subscription]
    ) -> dict[str, list[TopicPartition]]:
        raise NotImplementedError

    def subscription_user_data(
        self, topics: Iterable[str], owned: Iterable[TopicPartition], generation: int
    ) -> bytes | None:
        """User data this assignor wants in the member's own subscription."""
        return None


class RangeAssignor(Assignor):
    """Per topic, contiguous ranges; the first ``P % M`` members (in member order) get one extra."""

    name = "range"

    def assign_partitions(
        self, cluster_partitions: Mapping[str, int], subscriptions: Mapping[str, Subscription]
    ) -> dict[str, list[TopicPartition]]:
        result: dict[str, list[TopicPartition]] = {m: [] for m in subscriptions}
        order = _sorted_members(subscriptions)
        topics = sorted({t for s in subscriptions.values() for t in s.topics})
        for topic in topics:
            count = cluster_partitions.get(topic)
            if not count:
                continue
            members = [m for m in order if topic in subscriptions[m].topics]
            per_member, extra = divmod(count, len(members))
            start = 0
            for i, member in enumerate(members):
                n = per_member + (1 if i < extra else 0)
                result[member].extend((topic, p) for p in range(start, start + n))
                start += n
        return result


class RoundRobinAssignor(Assignor):
    """All partitions sorted by (topic, partition) dealt round-robin, skipping unsubscribed members."""

    name = "roundrobin"

    def assign_partitions(
        self, cluster_partitions: Mapping[str, int], subscriptions: Mapping[str, Subscription]
    ) -> dict[str, list[TopicPartition]]:
        result: dict[str, list[TopicPartition]] = {m: [] for m in subscriptions}
        order = _sorted_members(subscriptions)
        if not order:
            return result
        topic_sets = {m: set(subscriptions[m].topics) for m in order}
        topics = sorted({t for s in subscriptions.values() for t in s.topics})
        cursor = 0
        for topic in topics:
            for partition in range(cluster_partitions.get(topic) or 0):
                while topic not in topic_sets[order[cursor]]:
                    cursor = (cursor + 1) % len(order)
                result[order[cursor]].append((topic, partition))
                cursor = (cursor + 1) % len(order)
        return result


def _ownership(
    claims: Mapping[str, tuple[Iterable[TopicPartition], int]],
    eligible: Mapping[str, set[TopicPartition]],
) -> dict[TopicPartition, str]:
    """Valid previous owner of each partition: the unique highest-generation eligible claimant."""
    best: dict[TopicPartition, tuple[int, str | None]] = {}
    for member in sorted(claims):
        partitions, generation = claims[member]
        for tp in set(partitions):
            if tp not in eligible[member]:
                continue
            current = best.get(tp)
            if current is None or generation > current[0]:
                best[tp] = (generation, member)
            elif generation == current[0]:
                best[tp] = (generation, None)
    return {tp: member for tp, (_, member) in best.items() if member is not None}


def _sticky_equal(
    members: list[str], partitions: list[TopicPartition], owner: Mapping[TopicPartition, str]
) -> dict[str, list[TopicPartition]]:
    """Identical subscriptions: floor/ceil quotas, owned partitions kept up to the quota (optimal)."""
    floor_q, extra = divmod(len(partitions), len(members))
    owned: dict[str, list[TopicPartition]] = {m: [] for m in members}
    for tp in partitions:
        m = owner.get(tp)
        if m is not None:
            owned[m].append(tp)
    result: dict[str, list[TopicPartition]] = {}
    pool = [tp for tp in partitions if tp not in owner]
    for m in sorted(members, key=lambda m: (-len(owned[m]), m)):
        mine = owned[m]
        quota = floor_q
        if len(mine) > floor_q and extra > 0:
            quota += 1
            extra -= 1
        result[m] = mine[:quota]
        pool.extend(mine[quota:])
    quota = {m: max(len(result[m]), floor_q) for m in members}
    for m in members:
        if extra == 0:
            break
        if quota[m] == floor_q:
            quota[m] += 1
            extra -= 1
    queue = deque(sorted(pool))
    needy = deque(m for m in members if len(result[m]) < quota[m])
    while queue:
        m = needy.popleft()
        result[m].append(queue.popleft())
        if len(result[m]) < quota[m]:
            needy.append(m)
    return result


def _sticky_general(
    members: list[str],
    topics_of: Mapping[str, list[str]],
    partition_counts: Mapping[str, int],
    owner: Mapping[TopicPartition, str],
) -> dict[str, list[TopicPartition]]:
    """Different subscriptions: keep ownership, place the rest, then rebalance along move chains.

    A chain lets member ``m0`` take a partition from ``m1``, ``m1`` one from ``m2`` ... so only the
    ends change size; chains are applied while one ends at a member with at least two more
    partitions than ``m0``. Each such shift lowers the sum of squared loads, so this terminates, and
    without such a chain the loads are optimally balanced (the semi-matching optimality condition).
    Chains are shortest (BFS over members, edges by topic); chains that move only non-sticky
    partitions are exhausted before any previously owned partition is moved.
    """
    subscribers: dict[str, list[str]] = {}
    for m in members:
        for t in topics_of[m]:
            subscribers.setdefault(t, []).append(m)
    held: dict[str, dict[str, set[int]]] = {m: {} for m in members}
    holders: dict[str, dict[str, None]] = {t: {} for t in subscribers}
    movable_holders: dict[str, dict[str, int]] = {t: {} for t in subscribers}
    load = dict.fromkeys(members, 0)

    def give(m: str, tp: TopicPartition) -> None:
        held[m].setdefault(tp[0], set()).add(tp[1])
        holders[tp[0]][m] = None
        if owner.get(tp) != m:
            counts = movable_holders[tp[0]]
            counts[m] = counts.get(m, 0) + 1
        load[m] += 1

    def take(m: str, tp: TopicPartition) -> None:
        parts = held[m][tp[0]]
        parts.discard(tp[1])
        if not parts:
            del held[m][tp[0]]
            del holders[tp[0]][m]
        if owner.get(tp) != m:
            counts = movable_holders[tp[0]]
            counts[m] -= 1
            if not counts[m]:
                del counts[m]
        load[m] -= 1

    for tp, m in sorted(owner.items()):
        give(m, tp)
    free = sorted(
        ((t, p) for t in subscribers for p in range(partition_counts[t]) if (t, p) not in owner),
        key=lambda tp: (len(subscribers[tp[0]]), tp),
    )
    for tp in free:
        give(min(subscribers[tp[0]], key=lambda m: (load[m], m)), tp)

    def pick(taker: str, giver: str) -> TopicPartition:
        options = [(t, p) for t in topics_of[taker] if t in held[giver] for p in held[giver][t]]
        movable = [tp for tp in options if owner.get(tp) != giver]
        return min(movable or options)

    def find_chain(start: str, sticky_ok: bool) -> list[str] | None:
        edges = holders if sticky_ok else movable_holders
        parent: dict[str, str | None] = {start: None}
        queue = deque([start])
        best: str | None = None
        while queue:
            member = queue.popleft()
            if load[member] >= load[start] + 2 and (best is None or load[member] > load[best]):
                best = member
            for t in topics_of[member]:
                for other in edges[t]:
                    if other not in parent:
                        parent[other] = member
                        queue.append(other)
        if best is None:
            return None
        path = [best]
        while (prev := parent[path[-1]]) is not None:
            path.append(prev)
        return path[::-1]

    improved = True
    while improved:
        improved = False
        for sticky_ok in (False, True):
            for start in sorted(members, key=lambda m: (load[m], m)):
                if load[start] + 2 > max(load.values()):
                    break
                while (path := find_chain(start, sticky_ok)) is not None:
                    for taker, giver in pairwise(path):
                        tp = pick(taker, giver)
                        take(giver, tp)
                        give(taker, tp)
                    improved = True
            if improved:
                break
    result: dict[str, list[TopicPartition]] = {}
    for m in members:
        result[m] = sorted((t, p) for t, parts in held[m].items() for p in parts)
    return result


_StickyUserData = Message(
    "StickyAssignorUserData",
    versions=(0, 1),
    flexible_from=None,
    fields=(
        F("previous_assignment", "[]struct", (0, None), fields=(
            F("topic", "string", (0, None)),
            F("partitions", "[]int32", (0, None)),
        )),
        F("generation", "int32", (1, None), default=DEFAULT_GENERATION),
    ),
)


def encode_sticky_user_data(partitions: Iterable[TopicPartition], generation: int | None) -> bytes:
    """Java ``StickyAssignor`` user data (v1: previous assignment + generation, no version prefix)."""
    if generation is None:
        return _StickyUserData.encode(0, {"previous_assignment": _group(partitions)})
    return _StickyUserData.encode(1, {"previous_assignment": _group(partitions), "generation": generation})


def decode_sticky_user_data(data: bytes | None) -> tuple[list[TopicPartition], int]:
    """Previous assignment and generation from ``StickyAssignor`` user data.

    Java writes the bare v1 struct (v0 from old clients); kafka-python 3.x prefixes it with an
    int16 version, which is accepted as a last resort. Unreadable data means "owns nothing".
    """
    if not data:
        return [], DEFAULT_GENERATION
    data = bytes(data)
    attempts = [(1, 0), (0, 0)]
    if len(data) >= 2:
        attempts.append((min(struct.unpack_from(">h", data)[0], 1), 2))
    for version, offset in attempts:
        if version < 0:
            continue
        try:
            obj = _StickyUserData.decode(version, data, offset)
        except ProtocolError:
            continue
        return _flatten(obj["previous_assignment"]), obj["generation"]
    return [], DEFAULT_GENERATION


class _AbstractStickyAssignor(Assignor):
    def claims(self, sub: Subscription) -> tuple[list[TopicPartition], int]:
        """(previously owned partitions, generation) as this assignor reads them."""
        raise NotImplementedError

    def assign_partitions(
        self, cluster_partitions: Mapping[str, int], subscriptions: Mapping[str, Subscription]
    ) -> dict[str, list[TopicPartition]]:
        members = sorted(subscriptions)
        if not members:
            return {}
        eligible = {
            m: {(t, p) for t in set(subscriptions[m].topics) for p in range(cluster_partitions.get(t) or 0)}
            for m in members
        }
        owner = _ownership({m: self.claims(subscriptions[m]) for m in members}, eligible)
        topic_sets = {frozenset(t for t in subscriptions[m].topics if cluster_partitions.get(t)) for m in members}
        if len(topic_sets) == 1:
            partitions = sorted(eligible[members[0]])
            return _sticky_equal(members, partitions, owner)
        topics_of = {m: sorted(t for t in set(subscriptions[m].topics) if cluster_partitions.get(t)) for m in members}
        return _sticky_general(members, topics_of, cluster_partitions, owner)


class StickyAssignor(_AbstractStickyAssignor):
    """Eager ``sticky``: previous assignment travels in ``StickyAssignorUserData``."""

    name = "sticky"

    def claims(self, sub: Subscription) -> tuple[list[TopicPartition], int]:
        return decode_sticky_user_data(sub.user_data)

    def subscription_user_data(
        self, topics: Iterable[str], owned: Iterable[TopicPartition], generation: int
    ) -> bytes | None:
        return encode_sticky_user_data(owned, generation)


class CooperativeStickyAssignor(_AbstractStickyAssignor):
    """``cooperative-sticky`` (KIP-429): moving partitions are revoked first, assigned next round."""

    name = "cooperative-sticky"
    protocol = "COOPERATIVE"

    def claims(self, sub: Subscription) -> tuple[list[TopicPartition], int]:
        if sub.generation_id >= 0:
            return list(sub.owned_partitions), sub.generation_id
        if sub.user_data is None:
            return list(sub.owned_partitions), DEFAULT_GENERATION
        if len(sub.user_data) >= 4:
            return list(sub.owned_partitions), struct.unpack_from(">i", sub.user_data)[0]
        return list(sub.owned_partitions), DEFAULT_GENERATION

    def subscription_user_data(
        self, topics: Iterable[str], owned: Iterable[TopicPartition], generation: int
    ) -> bytes | None:
        return struct.pack(">i", generation)

    def assign_partitions(
        self, cluster_partitions: Mapping[str, int], subscriptions: Mapping[str, Subscription]
    ) -> dict[str, list[TopicPartition]]:
        target = super().assign_partitions(cluster_partitions, subscriptions)
        return hold_back_transfers(target, {m: s.owned_partitions for m, s in subscriptions.items()})


def hold_back_transfers(
    target: Mapping[str, list[TopicPartition]], owned: Mapping[str, Iterable[TopicPartition]]
) -> dict[str, list[TopicPartition]]:
    """Drop from ``target`` every partition that another member owns now and must revoke first."""
    owned_sets = {m: set(owned.get(m, ())) for m in target}
    assigned_sets = {m: set(tps) for m, tps in target.items()}
    revoked = {tp for m, tps in owned_sets.items() for tp in tps if tp not in assigned_sets[m]}
    return {m: [tp for tp in tps if tp in owned_sets[m] or tp not in revoked] for m, tps in target.items()}


ASSIGNORS: dict[str, type[Assignor]] = {
    cls.name: cls for cls in (RangeAssignor, RoundRobinAssignor, StickyAssignor, CooperativeStickyAssignor)
}


def assignor_by_name(name: str) -> Assignor:
    try:
        return ASSIGNORS[name]()
    except KeyError:
        raise ValueError(f"unknown partition assignment strategy {name!r}") from None
