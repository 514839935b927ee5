"""Adapter between :mod:`client.assignors` and the membership state machine.

Resolves ``partition_assignment_strategy`` entries (names or :class:`~client.assignors.Assignor`
objects/classes), builds this member's JoinGroup metadata, runs the leader's assignment and
decodes SyncGroup assignments.  Pure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from client import assignors as _assignors
from client.assignors import Assignor, Subscription, decode_assignment, decode_subscription
from client.assignors import encode_assignment as _encode_assignment
from client.assignors import encode_subscription as _encode_subscription
from client.errors import ConfigError
from client.types import TopicPartition


def _builtin(name: str) -> Assignor:
    by_name = getattr(_assignors, "assignor_by_name", None)
    if by_name is not None:
        return by_name(name)
    for value in vars(_assignors).values():
        if isinstance(value, type) and issubclass(value, Assignor) and getattr(value, "name", None) == name:
            return value()
    raise ConfigError(f"unknown partition assignment strategy {name!r}")


def resolve_assignor(strategy: Any) -> Assignor:
    if isinstance(strategy, Assignor):
        return strategy
    if isinstance(strategy, type) and issubclass(strategy, Assignor):
        return strategy()
    if isinstance(strategy, str):
        try:
            return _builtin(strategy)
        except (KeyError, ValueError) as exc:
            raise ConfigError(f"unknown partition assignment strategy {strategy!r}") from exc
    raise ConfigError(f"bad partition assignment strategy {strategy!r}")


class ConsumerGroupProtocol:
    """The "consumer" embedded protocol over a list of assignors (first = preferred)."""

    def __init__(self, strategies: Sequence[Any]) -> None:
        self.assignors = [resolve_assignor(s) for s in strategies]
        self._by_name = {a.name: a for a in self.assignors}

    def names(self) -> list[str]:
        return [a.name for a in self.assignors]

    def is_cooperative(self, name: str) -> bool:
        a = self._by_name.get(name)
        return a is not None and a.protocol == "COOPERATIVE"

    def subscription(self, name: str, topics: list[str], owned: set[TopicPartition], generation: int) -> bytes:
        a = self._by_name[name]
        owned_list = sorted(owned)
        sub = Subscription(topics=list(topics), user_data=a.subscription_user_data(topics, owned_list, generation),
                           owned_partitions=owned_list, generation_id=generation)
        return _encode_subscription(sub)

    def decode_assignment(self, data: bytes) -> set[TopicPartition]:
        return {TopicPartition(t, p) for t, p in decode_assignment(data).partitions}

    def member_topics(self, members: Sequence[tuple[str, str | None, bytes]]) -> set[str]:
        out: set[str] = set()
        for _, instance_id, meta in members:
            out.update(decode_subscription(meta, instance_id).topics)
        return out

    def assign(self, name: str, partition_counts: Mapping[str, int],
               members: Sequence[tuple[str, str | None, bytes]]) -> dict[str, bytes]:
        """Leader side: member metadata in, encoded assignment per member out."""
        subs = {member_id: decode_subscription(meta, instance_id) for member_id, instance_id, meta in members}
        wanted = {t for s in subs.values() for t in s.topics}
        counts = {t: n for t, n in partition_counts.items() if t in wanted}
        result = self._by_name[name].assign(counts, subs)
        return {m: _encode_assignment(result[m]) for m in subs}
