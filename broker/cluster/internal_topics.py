"""The topics Kafka reserves for itself, the one rule that says whether a topic is internal, and how
the broker creates them.

Only ``__consumer_offsets``, ``__transaction_state`` and ``__share_group_state`` are internal, as in
Kafka's ``Topic.INTERNAL_TOPICS``: clients cannot produce to, delete or extend them, Metadata marks
them ``is_internal``, and they have no per-partition metric series.  Any other name, including
one a user starts with ``__`` (``__mytopic``), is an ordinary topic.  The broker creates each
on first use (FindCoordinator) from its settings: :func:`internal_topic_spec`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from broker.config.settings import BrokerConfig

__all__ = ["INTERNAL_TOPICS", "OFFSETS_TOPIC", "SHARE_GROUP_STATE_TOPIC", "TRANSACTION_STATE_TOPIC", "InternalTopicSpec",
           "internal_topic_spec", "is_internal_topic"]

OFFSETS_TOPIC = "__consumer_offsets"
TRANSACTION_STATE_TOPIC = "__transaction_state"
SHARE_GROUP_STATE_TOPIC = "__share_group_state"
INTERNAL_TOPICS: frozenset[str] = frozenset({OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC, SHARE_GROUP_STATE_TOPIC})


def is_internal_topic(topic: str | None) -> bool:
    """True for the topics Kafka reserves (``INTERNAL_TOPICS``), false for every other name."""
    return topic in INTERNAL_TOPICS


@dataclass(frozen=True, slots=True)
class InternalTopicSpec:
    """How to create an internal topic: its partitions, replication factor and topic configs."""

    name: str
    partitions: int
    replication_factor: int
    configs: dict[str, str]


def internal_topic_spec(name: str, config: BrokerConfig) -> InternalTopicSpec:
    """Kafka's settings for ``__consumer_offsets`` (``offsets.topic.*``) and ``__transaction_state``
    (``transaction.state.log.*``): compacted, kept forever, 100 MiB segments; ``__share_group_state``
    (``share.coordinator.state.topic.*``): deleting, kept forever (its records are deltas)."""
    if name == OFFSETS_TOPIC:
        return InternalTopicSpec(name, config.offsets_topic_num_partitions, config.offsets_replication_factor,
                                 {"cleanup.policy": "compact", "segment.bytes": str(100 * 1024 * 1024),
                                  "retention.ms": "-1"})
    if name == TRANSACTION_STATE_TOPIC:
        rf = config.transaction_state_replication_factor
        return InternalTopicSpec(name, config.transaction_state_log_num_partitions, rf, {
            "cleanup.policy": "compact", "segment.bytes": str(config.transaction_state_log_segment_bytes),
            "retention.ms": "-1", "min.insync.replicas": str(max(1, min(config.transaction_state_log_min_isr, rf)))})
    if name == SHARE_GROUP_STATE_TOPIC:
        rf = config.share_state_replication_factor
        return InternalTopicSpec(name, config.share_coordinator_state_topic_num_partitions, rf, {
            "cleanup.policy": "delete", "segment.bytes": str(config.share_coordinator_state_topic_segment_bytes),
            "retention.ms": "-1",
            "min.insync.replicas": str(max(1, min(config.share_coordinator_state_topic_min_isr, rf)))})
    raise ValueError(f"{name} is not an internal topic")
