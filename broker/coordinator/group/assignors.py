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

import uuid
from collections.abc import Callable, Mapping
from typing import TypeAlias

__all__ = ["ASSIGNORS", "Assignment", "TopicPartitions", "assign_range", "assign_uniform"]

#: topic id -> partitions
TopicPartitions: TypeAlias = dict[uuid.UUID, frozenset[int]]
#: member id -> its partitions
Assignment: TypeAlias = dict[str, TopicPartitions]
Subscriptions: TypeAlias = Mapping[str, frozenset[uuid.UUID]]
Partition: TypeAlias = tuple[uuid.UUID, int]


def _to_assignment(owned: Mapping[str, set[Partition]], members: Subscriptions) -> Assignment:
    out: Assignment = {}
    for member_id in members:
        by_topic: dict[uuid.UUID, set[int]] = {}
        for topic_id, p in owned.get(member_id, ()):
            by_topic.setdefault(topic_id, set()).add(p)
        out[member_id] = {t: frozenset(ps) for t, ps in by_topic.items()}
    return out


def assign_uniform(members: Subscriptions, topics: Mapping[uuid.UUID, int],
                   current: Mapping[str, TopicPartitions]) -> Assignment:
    """Balanced, sticky assignment of every subscribed partition (see the module doc)."""
    candidates: dict[Partition, list[str]] = {}
    order = sorted(members)
    for member_id in order:
        for topic_id in members[member_id]:
            count = topics.get(topic_id)
            if count is None:
                continue
            for p in range(count):
                candidates.setdefault((topic_id, p), []).append(member_id)
    owned: dict[str, set[Partition]] = {m: set() for m in order}
    owner: dict[Partition, str] = {}
    # 1. sticky: keep what members own and may still own, up to a fair share
    total = len(candidates)
    share = -(-total // len(order)) if order else 0
    for member_id in order:
        for topic_id, parts in sorted(current.get(member_id, {}).items()):
            if topic_id not in members[member_id]:
                continue
            for p in sorted(parts):
                tp = (topic_id, p)
                if tp in candidates and tp not in owner and len(owned[member_id]) < share:
                    owner[tp] = member_id
                    owned[member_id].add(tp)
    # 2. the rest: partitions with the fewest candidates first, each to its least-loaded candidate
    rest = sorted((tp for tp in candidates if tp not in owner), key=lambda tp: (len(candidates[tp]), tp))
    for tp in rest:
        member_id = min(candidates[tp], key=lambda m: (len(owned[m]), m))
        owner[tp] = member_id
        owned[member_id].add(tp)
    # 3. balance: move partitions from the most to the least loaded candidates while it helps
    moved = True
    budget = total * 2
    while moved and budget > 0:
        moved = False
        for member_id in sorted(order, key=lambda m: (-len(owned[m]), m)):
            for tp in sorted(owned[member_id]):
                target = min(candidates[tp], key=lambda m: (len(owned[m]), m))
                if len(owned[member_id]) - len(owned[target]) > 1:
                    owned[member_id].discard(tp)
                    owned[target].add(tp)
                    owner[tp] = target
                    moved = True
                    budget -= 1
    return _to_assignment(owned, members)


def assign_range(members: Subscriptions, topics: Mapping[uuid.UUID, int],
                 current: Mapping[str, TopicPartitions]) -> Assignment:
    """Per topic, contiguous ranges to the subscribed members in member-id order (see the module doc)."""
    owned: dict[str, set[Partition]] = {m: set() for m in members}
    for topic_id, count in topics.items():
        subscribers = sorted(m for m, subs in members.items() if topic_id in subs)
        if not subscribers:
            continue
        quota, extra = divmod(count, len(subscribers))
        start = 0
        for i, member_id in enumerate(subscribers):
            n = quota + (1 if i < extra else 0)
            owned[member_id].update((topic_id, p) for p in range(start, start + n))
            start += n
    return _to_assignment(owned, members)


#: The server-side assignors by name, in Kafka's names.
ASSIGNORS: dict[str, Callable[[Subscriptions, Mapping[uuid.UUID, int], Mapping[str, TopicPartitions]], Assignment]] = {
    "uniform": assign_uniform,
    "range": assign_range,
}
