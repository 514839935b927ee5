"""Pure cluster-side helpers for the client: node selection and metadata snapshots.

* :func:`least_loaded_node` reproduces Kafka's ``NetworkClient.leastLoadedNode`` (3.8+): start at a
  random offset, return a ready node with nothing in flight at once, otherwise prefer the ready node
  with the fewest in-flight requests, then a node whose connection is being set up, then a node that
  may connect now (not in reconnect backoff) with the oldest last connection attempt. The
  ``at_least_one_ready`` flag drives KIP-899 rebootstrapping.
* :class:`ClusterMetadata` is an immutable-by-convention snapshot of a Metadata response with
  :meth:`ClusterMetadata.diff` telling the consumer whether a rebalance is needed.

No I/O and no clock reads: ``now_ms`` is always passed in.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

__all__ = [
    "BrokerInfo",
    "ClusterMetadata",
    "LeastLoadedNode",
    "MetadataDiff",
    "NodeState",
    "PartitionInfo",
    "TopicInfo",
    "least_loaded_node",
]

N = TypeVar("N")


@dataclass
class NodeState:
    """What the connection layer knows about one broker connection.

    ``ready``: connected and usable (ApiVersions/SASL done). ``connecting``: a connection is being
    set up (TCP, ApiVersions or authentication in progress). Neither: disconnected, may reconnect
    once ``now_ms >= backoff_until_ms``.
    """

    ready: bool = False
    connecting: bool = False
    in_flight: int = 0
    max_in_flight: int = 5
    last_send_completed: bool = True
    throttle_until_ms: int = 0
    last_connect_attempt_ms: int = 0
    backoff_until_ms: int = 0

    def is_ready(self, now_ms: int) -> bool:
        """Kafka's ``isReady``: connected and not throttled."""
        return self.ready and self.throttle_until_ms <= now_ms

    def can_send_more(self) -> bool:
        return self.in_flight == 0 or (self.last_send_completed and self.in_flight < self.max_in_flight)

    def can_send_request(self, now_ms: int) -> bool:
        return self.is_ready(now_ms) and self.can_send_more()

    def is_disconnected(self) -> bool:
        return not self.ready and not self.connecting

    def can_connect(self, now_ms: int) -> bool:
        return self.is_disconnected() and now_ms >= self.backoff_until_ms


@dataclass(frozen=True)
class LeastLoadedNode(Generic[N]):
    node: N | None
    at_least_one_ready: bool


def least_loaded_node(
    nodes: Sequence[N],
    state: Mapping[N, NodeState] | Callable[[N], NodeState | None],
    now_ms: int,
    rng: random.Random | None = None,
) -> LeastLoadedNode[N]:
    """Pick the node for an "any broker" request exactly as Kafka's ``leastLoadedNode`` does.

    ``state`` maps a node (as found in ``nodes``) to its :class:`NodeState`; a node without state
    has never been connected and may connect now, with last attempt time 0.
    """
    if not nodes:
        return LeastLoadedNode(None, False)
    lookup: Callable[[N], NodeState | None] = state.get if isinstance(state, Mapping) else state
    offset = (rng if rng is not None else random).randrange(len(nodes))
    fewest = None
    found_ready: N | None = None
    found_connecting: N | None = None
    found_can_connect: N | None = None
    oldest_attempt = 0
    any_ready = False
    for i in range(len(nodes)):
        node = nodes[(offset + i) % len(nodes)]
        st = lookup(node)
        if st is None:
            if found_can_connect is None or oldest_attempt > 0:
                found_can_connect, oldest_attempt = node, 0
            continue
        if st.is_ready(now_ms):
            any_ready = True
        if st.can_send_request(now_ms):
            if st.in_flight == 0:
                return LeastLoadedNode(node, True)
            if fewest is None or st.in_flight < fewest:
                fewest, found_ready = st.in_flight, node
        elif st.connecting:
            found_connecting = node
        elif st.can_connect(now_ms) and (
            found_can_connect is None or oldest_attempt > st.last_connect_attempt_ms
        ):
            found_can_connect, oldest_attempt = node, st.last_connect_attempt_ms
    for candidate in (found_ready, found_connecting, found_can_connect):
        if candidate is not None:
            return LeastLoadedNode(candidate, any_ready)
    return LeastLoadedNode(None, any_ready)


@dataclass(frozen=True)
class BrokerInfo:
    node_id: int
    host: str
    port: int
    rack: str | None = None


@dataclass(frozen=True)
class PartitionInfo:
    partition: int
    leader: int = -1
    leader_epoch: int = -1
    replicas: tuple[int, ...] = ()
    isr: tuple[int, ...] = ()
    offline_replicas: tuple[int, ...] = ()
    error_code: int = 0


@dataclass(frozen=True)
class TopicInfo:
    name: str
    partitions: Mapping[int, PartitionInfo] = field(default_factory=dict)
    topic_id: bytes | None = None
    is_internal: bool = False
    error_code: int = 0


@dataclass(frozen=True)
class MetadataDiff:
    """Changes between two snapshots relevant to a consumer group member.

    ``partition_changes`` covers the subscribed topics whose partition count changed (``None``
    meaning "absent"), ``newly_matching``/``no_longer_matching`` the topics gained/lost by a
    pattern subscription.
    """

    partition_changes: Mapping[str, tuple[int | None, int | None]] = field(default_factory=dict)
    newly_matching: frozenset[str] = frozenset()
    no_longer_matching: frozenset[str] = frozenset()
    topic_id_changes: Mapping[str, tuple[bytes | None, bytes | None]] = field(default_factory=dict)

    @property
    def gained_partitions(self) -> dict[str, tuple[int, int]]:
        """Subscribed topics that existed before and now have more partitions."""
        return {
            t: (old, new)
            for t, (old, new) in self.partition_changes.items()
            if old is not None and new is not None and new > old
        }

    @property
    def rebalance_needed(self) -> bool:
        return bool(
            self.partition_changes or self.newly_matching or self.no_longer_matching or self.topic_id_changes
        )


@dataclass(frozen=True)
class ClusterMetadata:
    """Snapshot of the cluster as described by one Metadata response."""

    brokers: Mapping[int, BrokerInfo] = field(default_factory=dict)
    topics: Mapping[str, TopicInfo] = field(default_factory=dict)
    controller_id: int = -1
    cluster_id: str | None = None
    #: available_partitions by topic, filled as asked (the snapshot itself never changes)
    _available: dict[str, tuple[int, ...]] = field(default_factory=dict, init=False, repr=False, compare=False)

    def broker(self, node_id: int) -> BrokerInfo | None:
        return self.brokers.get(node_id)

    def partition_count(self, topic: str) -> int | None:
        info = self.topics.get(topic)
        return len(info.partitions) if info is not None and info.error_code == 0 else None

    def leader_for(self, topic: str, partition: int) -> int | None:
        info = self.topics.get(topic)
        if info is None:
            return None
        p = info.partitions.get(partition)
        return p.leader if p is not None and p.leader >= 0 else None

    def available_partitions(self, topic: str) -> Sequence[int]:
        """Partitions whose leader is a known broker (what the sticky partitioner may use), in order.
        Worked out once per topic of a snapshot: a producer asks for every record."""
        known = self._available.get(topic)
        if known is None:
            info = self.topics.get(topic)
            if info is None:
                return ()
            known = self._available[topic] = tuple(sorted(
                p.partition for p in info.partitions.values() if p.leader in self.brokers))
        return known

    def topic_id(self, topic: str) -> bytes | None:
        info = self.topics.get(topic)
        return info.topic_id if info is not None else None

    def topic_name(self, topic_id: bytes) -> str | None:
        for name, info in self.topics.items():
            if info.topic_id == topic_id:
                return name
        return None

    def partition_counts(self) -> dict[str, int]:
        """``topic -> partition count`` for healthy topics (the assignors' input)."""
        return {t: len(i.partitions) for t, i in self.topics.items() if i.error_code == 0}

    def matching(self, pattern: str | re.Pattern[str], *, include_internal: bool = False) -> set[str]:
        """Topics whose full name matches ``pattern`` (Java's ``Pattern.matcher(t).matches()``)."""
        rx = re.compile(pattern) if isinstance(pattern, str) else pattern
        return {
            t
            for t, info in self.topics.items()
            if info.error_code == 0 and (include_internal or not info.is_internal) and rx.fullmatch(t)
        }

    def diff(
        self,
        newer: ClusterMetadata,
        *,
        subscribed: Iterable[str] = (),
        pattern: str | re.Pattern[str] | None = None,
    ) -> MetadataDiff:
        """What changed from ``self`` to ``newer`` for the given subscription.

        With a ``pattern`` the watched topics are the union of ``subscribed`` and the topics
        matching the pattern in either snapshot.
        """
        watched = set(subscribed)
        newly: frozenset[str] = frozenset()
        gone: frozenset[str] = frozenset()
        if pattern is not None:
            before = self.matching(pattern)
            after = newer.matching(pattern)
            newly = frozenset(after - before)
            gone = frozenset(before - after)
            watched |= before | after
        changes: dict[str, tuple[int | None, int | None]] = {}
        ids: dict[str, tuple[bytes | None, bytes | None]] = {}
        for topic in sorted(watched):
            old_n, new_n = self.partition_count(topic), newer.partition_count(topic)
            if old_n != new_n:
                changes[topic] = (old_n, new_n)
            old_id, new_id = self.topic_id(topic), newer.topic_id(topic)
            if old_id is not None and new_id is not None and old_id != new_id:
                ids[topic] = (old_id, new_id)
        return MetadataDiff(changes, newly, gone, ids)
