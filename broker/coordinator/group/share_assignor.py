"""The share groups' server-side assignor, ``simple`` (Kafka's ``SimpleAssignor``): a pure function.

Unlike a consumer group's, a share group's partition may be assigned to several members at once —
records are shared out per record by the share-partition leader, not per partition.  For each topic
the assignor works out how many members should share each of its partitions: one while there are at
least as many partitions as subscribed members, else ``ceil(members / partitions)`` (so every member
gets something).  It then hands out those partition-assignments so that the members' counts differ
by at most one, balance before stickiness: a member keeps what it had up to its fair share, the
rest go to the least-loaded subscribed members that do not hold the partition yet.  Racks are
ignored, as in Kafka.  Only partitions whose share state is initialised are offered (the caller's
``partitions``).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping

from .assignors import Assignment, TopicPartitions

__all__ = ["assign_simple"]


def assign_simple(subscriptions: Mapping[str, frozenset[uuid.UUID]], partitions: Mapping[uuid.UUID, frozenset[int]],
                  current: Mapping[str, TopicPartitions]) -> Assignment:
    """member id -> topic id -> partitions, for the members of ``subscriptions`` (their topic ids) over
    the assignable ``partitions`` of each topic; ``current`` is the target being replaced (stickiness)."""
    members = sorted(subscriptions)
    owned: dict[str, set[tuple[uuid.UUID, int]]] = {m: set() for m in members}
    if not members:
        return {}
    copies: dict[uuid.UUID, int] = {}
    slots = 0
    for topic_id, parts in partitions.items():
        subscribers = sum(1 for m in members if topic_id in subscriptions[m])
        if not subscribers or not parts:
            continue
        copies[topic_id] = 1 if subscribers <= len(parts) else -(-subscribers // len(parts))
        slots += copies[topic_id] * len(parts)
    # fair shares: everybody gets ``floor`` partition-assignments, ``extra`` of the members one more
    floor, extra = divmod(slots, len(members))
    holders: dict[tuple[uuid.UUID, int], list[str]] = {}
    # stickiness: what a member had, while it is still subscribed, the partition still assignable and
    # not yet shared enough, up to its fair share
    for m in members:
        for topic_id, parts in sorted((current.get(m) or {}).items()):
            if topic_id not in copies or topic_id not in subscriptions[m]:
                continue
            for p in sorted(parts & partitions[topic_id]):
                tp = (topic_id, p)
                if len(holders.get(tp, ())) >= copies[topic_id]:
                    continue
                if len(owned[m]) >= floor:
                    if len(owned[m]) > floor or not extra:
                        continue
                    extra -= 1
                owned[m].add(tp)
                holders.setdefault(tp, []).append(m)
    # the rest: each missing copy to the least-loaded subscriber that does not hold the partition yet
    for topic_id in sorted(copies):
        subscribers = [m for m in members if topic_id in subscriptions[m]]
        for p in sorted(partitions[topic_id]):
            tp = (topic_id, p)
            while len(holders.get(tp, ())) < copies[topic_id]:
                candidates = [m for m in subscribers if tp not in owned[m]]
                if not candidates:
                    break
                chosen = min(candidates, key=lambda m: (len(owned[m]), m))
                owned[chosen].add(tp)
                holders.setdefault(tp, []).append(chosen)
    out: Assignment = {}
    for m in members:
        by_topic: dict[uuid.UUID, set[int]] = {}
        for topic_id, p in owned[m]:
            by_topic.setdefault(topic_id, set()).add(p)
        out[m] = {t: frozenset(ps) for t, ps in by_topic.items()}
    return out
