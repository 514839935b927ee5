"""Replica placement for new topics and partitions (Kafka's ``assignReplicasToBrokers``), pure.

Leaders (the first replica of each partition) are spread evenly over the
brokers from a random start, followers are shifted so that a broker's
partitions do not all share the same followers, and, when brokers carry a
``broker.rack``, each partition's replicas go to as many different racks as
there are.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence

__all__ = ["PlacementError", "assign_replicas"]


class PlacementError(ValueError):
    """More replicas asked for than there are brokers."""


def _replica_index(first: int, shift: int, j: int, n: int) -> int:
    return (first + 1 + (shift + j) % (n - 1)) % n


def _rack_alternating(brokers: Sequence[int], racks: Mapping[int, str | None]) -> list[int]:
    by_rack: dict[str, list[int]] = {}
    for b in sorted(brokers):
        by_rack.setdefault(racks.get(b) or "", []).append(b)
    names = sorted(by_rack)
    out: list[int] = []
    i = 0
    while len(out) < len(brokers):
        for name in names:
            members = by_rack[name]
            if i < len(members):
                out.append(members[i])
        i += 1
    return out


def assign_replicas(brokers: Sequence[int], partitions: int, replication_factor: int, *,
                    racks: Mapping[int, str | None] | None = None, start_partition: int = 0,
                    rng: random.Random | None = None) -> list[tuple[int, ...]]:
    """Replica lists for partitions ``start_partition .. start_partition + partitions - 1``."""
    if replication_factor <= 0:
        raise PlacementError("replication factor must be larger than 0")
    n = len(brokers)
    if replication_factor > n:
        raise PlacementError(f"replication factor {replication_factor} is larger than the {n} available brokers")
    rng = rng or random.Random()
    racks = racks or {}
    rack_aware = any(racks.get(b) for b in brokers)
    arranged = _rack_alternating(brokers, racks) if rack_aware else sorted(brokers)
    start = rng.randrange(n)
    shift = rng.randrange(n)
    num_racks = len({racks.get(b) or "" for b in brokers})
    out: list[tuple[int, ...]] = []
    for current in range(start_partition, start_partition + partitions):
        if current > 0 and current % n == 0:
            shift += 1
        first = (current + start) % n
        replicas = [arranged[first]]
        used_racks = {racks.get(arranged[first]) or ""}
        j = 0
        while len(replicas) < replication_factor:
            candidate = arranged[_replica_index(first, shift, j, n)] if n > 1 else arranged[0]
            j += 1
            rack = racks.get(candidate) or ""
            if candidate in replicas:
                if j > 4 * n:  # cannot happen with rf <= n; guard against a bad shift
                    raise PlacementError("could not place replicas")
                continue
            if rack_aware and rack in used_racks and len(used_racks) < num_racks and j <= 2 * n:
                continue
            replicas.append(candidate)
            used_racks.add(rack)
        out.append(tuple(replicas))
    return out
