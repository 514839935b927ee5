"""The topics Kafka reserves for itself, and the one rule that says whether a topic is internal.

Only ``__consumer_offsets`` and ``__transaction_state`` are internal, as in Kafka's
``Topic.INTERNAL_TOPICS``: clients cannot produce to, delete or extend them, Metadata marks
them ``is_internal``, and they have no per-partition metric series.  Any other name, including
one a user starts with ``__`` (``__mytopic``), is an ordinary topic.
"""

from __future__ import annotations

__all__ = ["INTERNAL_TOPICS", "OFFSETS_TOPIC", "TRANSACTION_STATE_TOPIC", "is_internal_topic"]

OFFSETS_TOPIC = "__consumer_offsets"
TRANSACTION_STATE_TOPIC = "__transaction_state"
INTERNAL_TOPICS: frozenset[str] = frozenset({OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC})


def is_internal_topic(topic: str | None) -> bool:
    """True for the topics Kafka reserves (``INTERNAL_TOPICS``), false for every other name."""
    return topic in INTERNAL_TOPICS
