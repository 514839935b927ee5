"""OffsetForLeaderEpoch (API key 23): the shapes of the messages, for type checkers and IDEs.

Generated from Apache Kafka's message specs by ``protocol/_schema_gen.py``, beside the codecs'
schema ``protocol/schemas/offset_for_leader_epoch.py``; do not edit.  Each ``TypedDict`` is one message or
struct; each key is documented with the spec's ``about`` text and the versions it exists in.
Every key may be left out (``total=False``): the encoder sends a missing field as its default,
as Kafka's generated message classes do.  Annotate what you build::

    body: OffsetForLeaderEpochRequestData = {...}
"""

from __future__ import annotations

from typing import TypedDict


class OffsetForLeaderEpochRequestData(TypedDict, total=False):
    """OffsetForLeaderEpochRequest (API key 23): versions 2-4, flexible from 4."""

    replica_id: int
    """The broker ID of the follower, of -1 if this request is from a consumer. (versions 3+; default -2)"""

    topics: list[OffsetForLeaderTopic]
    """Each topic to get offsets for. (versions 0+)"""


class OffsetForLeaderTopic(TypedDict, total=False):
    """An element of ``OffsetForLeaderEpochRequestData.topics``: Each topic to get offsets for."""

    topic: str
    """The topic name. (versions 0+)"""

    partitions: list[OffsetForLeaderPartition]
    """Each partition to get offsets for. (versions 0+)"""


class OffsetForLeaderPartition(TypedDict, total=False):
    """An element of ``OffsetForLeaderTopic.partitions``: Each partition to get offsets for."""

    partition: int
    """The partition index. (versions 0+)"""

    current_leader_epoch: int
    """An epoch used to fence consumers/replicas with old metadata. If the epoch provided by the client is larger than the current epoch known to the broker, then the UNKNOWN_LEADER_EPOCH error code will be returned. If the provided epoch is smaller, then the FENCED_LEADER_EPOCH error code will be returned. (versions 2+; default -1)"""

    leader_epoch: int
    """The epoch to look up an offset for. (versions 0+)"""


class OffsetForLeaderEpochResponseData(TypedDict, total=False):
    """OffsetForLeaderEpochResponse (API key 23): versions 2-4, flexible from 4."""

    throttle_time_ms: int
    """The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the request did not violate any quota. (versions 2+)"""

    topics: list[OffsetForLeaderTopicResult]
    """Each topic we fetched offsets for. (versions 0+)"""


class OffsetForLeaderTopicResult(TypedDict, total=False):
    """An element of ``OffsetForLeaderEpochResponseData.topics``: Each topic we fetched offsets for."""

    topic: str
    """The topic name. (versions 0+)"""

    partitions: list[EpochEndOffset]
    """Each partition in the topic we fetched offsets for. (versions 0+)"""


class EpochEndOffset(TypedDict, total=False):
    """An element of ``OffsetForLeaderTopicResult.partitions``: Each partition in the topic we fetched offsets for."""

    error_code: int
    """The error code 0, or if there was no error. (versions 0+)"""

    partition: int
    """The partition index. (versions 0+)"""

    leader_epoch: int
    """The leader epoch of the partition. (versions 1+; default -1)"""

    end_offset: int
    """The end offset of the epoch. (versions 0+; default -1)"""
