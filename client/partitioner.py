"""Producer partitioning compatible with the Java client.

* :func:`murmur2` is Kafka's ``Utils.murmur2`` (MurmurHash2, seed ``0x9747b28c``) returning the
  same signed 32-bit value Java returns — compiled (``protocol._crecords.murmur2``) when the
  record codec was built, else :func:`py_murmur2`;
* keyed records go to ``to_positive(murmur2(key)) % num_partitions``, so the same key lands on the
  same partition as with the Java client, librdkafka's ``murmur2_random`` and kafka-python;
* records without a key use the sticky partitioner of KIP-480: one partition per topic until the
  current batch is complete (:meth:`DefaultPartitioner.on_new_batch`), then a random *different*
  partition among the available ones (those with a live leader).

Pure: no I/O; randomness comes from an injectable :class:`random.Random`.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence

__all__ = ["DefaultPartitioner", "murmur2", "partition_for_key", "py_murmur2", "to_positive"]

_M = 0x5BD1E995
_SEED = 0x9747B28C
_MASK = 0xFFFFFFFF


def py_murmur2(data: bytes) -> int:
    """Kafka's ``Utils.murmur2``: MurmurHash2 of ``data`` as a signed 32-bit int (pure Python)."""
    length = len(data)
    h = (_SEED ^ length) & _MASK
    tail = length & ~3
    for i in range(0, tail, 4):
        k = int.from_bytes(data[i : i + 4], "little")
        k = (k * _M) & _MASK
        k ^= k >> 24
        k = (k * _M) & _MASK
        h = ((h * _M) & _MASK) ^ k
    rest = length & 3
    if rest == 3:
        h ^= data[tail + 2] << 16
    if rest >= 2:
        h ^= data[tail + 1] << 8
    if rest >= 1:
        h ^= data[tail]
        h = (h * _M) & _MASK
    h ^= h >> 13
    h = (h * _M) & _MASK
    h ^= h >> 15
    return h - 0x100000000 if h & 0x80000000 else h


murmur2: Callable[[bytes], int]
try:
    from protocol._crecords import murmur2  # the compiled twin (built at install time)
except ImportError:
    murmur2 = py_murmur2


def to_positive(n: int) -> int:
    """Kafka's ``Utils.toPositive``: clear the sign bit (not ``abs``)."""
    return n & 0x7FFFFFFF


def partition_for_key(key: bytes, num_partitions: int) -> int:
    if num_partitions <= 0:
        raise ValueError("num_partitions must be positive")
    return to_positive(murmur2(key)) % num_partitions


class DefaultPartitioner:
    """Murmur2 for keyed records, KIP-480 sticky partitioning for records without a key."""

    def __init__(self, rng: random.Random | None = None) -> None:
        self._rng = rng if rng is not None else random.Random()
        self._sticky: dict[str, int] = {}

    def partition(
        self,
        topic: str,
        key: bytes | None,
        num_partitions: int,
        available: Sequence[int] | None = None,
    ) -> int:
        """Partition for a record; ``available`` lists partitions with a leader (default: all)."""
        if key is not None:
            return partition_for_key(key, num_partitions)
        current = self._sticky.get(topic)
        if current is not None and current < num_partitions:
            return current
        return self._choose(topic, None, num_partitions, available)

    def on_new_batch(
        self,
        topic: str,
        prev_partition: int,
        num_partitions: int,
        available: Sequence[int] | None = None,
    ) -> int:
        """A batch for ``prev_partition`` was completed: move the sticky partition if it was that one."""
        current = self._sticky.get(topic)
        if current is not None and current != prev_partition:
            return current
        return self._choose(topic, current, num_partitions, available)

    def sticky_partition(self, topic: str) -> int | None:
        return self._sticky.get(topic)

    def _choose(self, topic: str, old: int | None, num_partitions: int, available: Sequence[int] | None) -> int:
        if num_partitions <= 0:
            raise ValueError("num_partitions must be positive")
        pool = list(available) if available is not None else list(range(num_partitions))
        if not pool:
            new = to_positive(self._rng.getrandbits(32)) % num_partitions
        elif len(pool) == 1:
            new = pool[0]
        else:
            new = old
            while new is None or new == old:
                new = pool[to_positive(self._rng.getrandbits(32)) % len(pool)]
        self._sticky[topic] = new
        return new
