"""Server-side partition assignors of consumer groups (KIP-848): ``uniform`` and ``range``.

Pure functions over plain data.  An assignor gets every member's subscribed topic ids, the
partition count of every subscribed topic and the current target assignment, and returns the new
target assignment (member id -> topic id -> partitions).  Both are sticky: a partition stays with
its current owner when that keeps the assignment balanced, so a rebalance moves as few partitions
as it can (what makes incremental rebalances cheap).

* ``uniform`` (Kafka's ``UniformAssignor``, the default): every partition of a subscribed topic goes
  to a member subscribed to it, and the members' partition counts differ by at most one whenever
  their subscriptions allow it.
* ``range`` (Kafka's ``RangeAssignor``): per topic, the subscribed members sorted by member id get
  contiguous ranges; the first ``partitions % members`` get one more.  Co-partitioned topics land
  on the same members.
"""

from __future__ import annotations

import heapq
import uuid
from collections.abc import Callable, Iterable, Mapping
from typing import TypeAlias

__all__ = ["ASSIGNORS", "Assignment", "TopicPartitions", "assign_range", "assign_uniform"]

#: topic id -> partitions
TopicPartitions: TypeAlias = dict[uuid.UUID, frozenset[int]]
#: member id -> its partitions
Assignment: TypeAlias = dict[str, TopicPartitions]
Subscriptions: TypeAlias = Mapping[str, frozenset[uuid.UUID]]


def _to_assignment(owned: Mapping[str, Mapping[uuid.UUID, Iterable[int]]], members: Subscriptions) -> Assignment:
    return {m: {t: frozenset(ps) for t, ps in owned.get(m, {}).items() if ps} for m in members}


class _Loads:
    """The members' partition counts, and per topic a heap of its subscribers by (count, member id).

    A member's count may go up or down; each change pushes a fresh heap entry for every topic the member
    subscribes to, and entries whose count is no longer the member's are dropped when they surface, so
    the top of a topic's heap is always its least-loaded subscriber (ties: the smallest member id)."""

    __slots__ = ("_heaps", "_topics_of", "count")

    def __init__(self, count: dict[str, int], subscribers: Mapping[uuid.UUID, list[str]],
                 topics_of: Mapping[str, list[uuid.UUID]]) -> None:
        self.count = count
        self._topics_of = topics_of
        self._heaps: dict[uuid.UUID, list[tuple[int, str]]] = {}
        for t, ms in subscribers.items():
            heap = [(count[m], m) for m in ms]
            heapq.heapify(heap)
            self._heaps[t] = heap

    def least(self, topic: uuid.UUID) -> str:
        heap, count = self._heaps[topic], self.count
        while True:
            n, m = heap[0]
            if count[m] == n:
                return m
            heapq.heappop(heap)

    def add(self, member: str, delta: int) -> None:
        n = self.count[member] = self.count[member] + delta
        for t in self._topics_of[member]:
            heapq.heappush(self._heaps[t], (n, member))


def assign_uniform(members: Subscriptions, topics: Mapping[uuid.UUID, int],
                   current: Mapping[str, TopicPartitions]) -> Assignment:
    """Balanced, sticky assignment of every subscribed partition (see the module doc).

    Work per topic and per partition, never per (partition, member) pair: O(P log M + M log M) for P
    partitions and M members (plus the members' subscriptions), however many members share a topic."""
    order = sorted(members)
    if not order:
        return {}
    # the members subscribed to each existing topic (in member order), and each member's existing topics
    subscribers: dict[uuid.UUID, list[str]] = {}
    topics_of: dict[str, list[uuid.UUID]] = {}
    for m in order:
        mine = topics_of[m] = [t for t in members[m] if t in topics]
        for t in mine:
            subscribers.setdefault(t, []).append(m)
    owned: dict[str, dict[uuid.UUID, list[int]]] = {m: {} for m in order}
    count = dict.fromkeys(order, 0)
    taken = {t: bytearray(topics[t]) for t in subscribers}  # 1: the partition has its member
    total = sum(topics[t] for t in subscribers)
    share = -(-total // len(order))
    # 1. sticky: keep what members own and may still own, up to a fair share
    for m in order:
        mine = current.get(m)
        if not mine:
            continue
        subscribed = members[m]
        for t in sorted(mine):
            flags = taken.get(t)
            if flags is None or t not in subscribed:
                continue
            kept = None
            for p in sorted(mine[t]):
                if count[m] >= share:
                    break
                if p < len(flags) and not flags[p]:
                    flags[p] = 1
                    if kept is None:
                        kept = owned[m][t] = []
                    kept.append(p)
                    count[m] += 1
    loads = _Loads(count, subscribers, topics_of)
    # 2. the rest: partitions with the fewest candidates first, each to its least-loaded candidate
    for t in sorted(subscribers, key=lambda t: (len(subscribers[t]), t)):
        flags = taken[t]
        for p in range(len(flags)):
            if not flags[p]:
                m = loads.least(t)
                flags[p] = 1
                owned[m].setdefault(t, []).append(p)
                loads.add(m, 1)
    # 3. balance: move partitions from the most to the least loaded candidates while it helps (no two
    # members differ by more than one: nothing to move)
    moved = max(count.values()) - min(count.values()) > 1
    budget = total * 2
    while moved and budget > 0:
        moved = False
        for m in sorted(order, key=lambda m: (-count[m], m)):
            for t, p in sorted((t, p) for t, ps in owned[m].items() for p in ps):
                target = loads.least(t)
                if count[m] - count[target] > 1:
                    owned[m][t].remove(p)
                    owned[target].setdefault(t, []).append(p)
                    loads.add(m, -1)
                    loads.add(target, 1)
                    moved = True
                    budget -= 1
    return _to_assignment(owned, members)


def assign_range(members: Subscriptions, topics: Mapping[uuid.UUID, int],
                 current: Mapping[str, TopicPartitions]) -> Assignment:
    """Per topic, contiguous ranges to the subscribed members in member-id order (see the module doc)."""
    owned: dict[str, dict[uuid.UUID, range]] = {m: {} for m in members}
    subscribers: dict[uuid.UUID, list[str]] = {}
    for m in sorted(members):
        for topic_id in members[m]:
            subscribers.setdefault(topic_id, []).append(m)
    for topic_id, count in topics.items():
        ms = subscribers.get(topic_id)
        if not ms:
            continue
        quota, extra = divmod(count, len(ms))
        start = 0
        for i, member_id in enumerate(ms):
            n = quota + (1 if i < extra else 0)
            owned[member_id][topic_id] = range(start, start + n)
            start += n
    return _to_assignment(owned, members)


#: The server-side assignors by name, in Kafka's names.
ASSIGNORS: dict[str, Callable[[Subscriptions, Mapping[uuid.UUID, int], Mapping[str, TopicPartitions]], Assignment]] = {
    "uniform": assign_uniform,
    "range": assign_range,
}
