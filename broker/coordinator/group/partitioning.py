"""Which ``__consumer_offsets`` partition owns a group: Kafka's ``partitionFor`` (docs/classic-groups.md,
"Which partition coordinates a group").

``abs(groupId.hashCode()) % offsets.topic.num.partitions`` where ``hashCode`` is Java's
``String.hashCode`` over UTF-16 code units and ``Utils.abs(Integer.MIN_VALUE) == 0``.
"""

from __future__ import annotations

from functools import lru_cache

__all__ = ["coordinator_partition", "java_string_hashcode"]

_INT_MIN = -(2**31)


@lru_cache(maxsize=16384)
def java_string_hashcode(s: str) -> int:
    """Java's ``String.hashCode``: ``31*h + c`` over UTF-16 code units, as a signed int32.
    Remembered for the most recent group ids (every group request places its group)."""
    h = 0
    data = s.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def coordinator_partition(group_id: str, num_partitions: int) -> int:
    """The ``__consumer_offsets`` partition for ``group_id`` (also used for transactional ids)."""
    h = java_string_hashcode(group_id)
    return (0 if h == _INT_MIN else abs(h)) % num_partitions
