"""OffsetFetch (API key 9): the shapes of the messages, for type checkers and IDEs.

Generated from Apache Kafka's message specs by ``protocol/_schema_gen.py``, beside the codecs'
schema ``protocol/schemas/offset_fetch.py``; do not edit.  Each ``TypedDict`` is one message or
struct; each key is documented with the spec's ``about`` text and the versions it exists in.
Every key may be left out (``total=False``): the encoder sends a missing field as its default,
as Kafka's generated message classes do.  Annotate what you build::

    body: OffsetFetchRequestData = {...}
"""

from __future__ import annotations

from typing import TypedDict


class OffsetFetchRequestData(TypedDict, total=False):
    """OffsetFetchRequest (API key 9): versions 1-9, flexible from 6."""

    group_id: str
    """The group to fetch offsets for. (versions 0-7)"""

    topics: list[OffsetFetchRequestTopic] | None
    """Each topic we would like to fetch offsets for, or null to fetch offsets for all topics. (versions 0-7; nullable 2-7)"""

    groups: list[OffsetFetchRequestGroup]
    """Each group we would like to fetch offsets for. (versions 8+)"""

    require_stable: bool
    """Whether broker should hold on returning unstable offsets but set a retriable error code for the partitions. (versions 7+; default false)"""


class OffsetFetchRequestTopic(TypedDict, total=False):
    """An element of ``OffsetFetchRequestData.topics``: Each topic we would like to fetch offsets for, or null to fetch offsets for all topics."""

    name: str
    """The topic name. (versions 0-7)"""

    partition_indexes: list[int]
    """The partition indexes we would like to fetch offsets for. (versions 0-7)"""


class OffsetFetchRequestGroup(TypedDict, total=False):
    """An element of ``OffsetFetchRequestData.groups``: Each group we would like to fetch offsets for."""

    group_id: str
    """The group ID. (versions 8+)"""

    member_id: str | None
    """The member id. (versions 9+; nullable 9+; default null)"""

    member_epoch: int
    """The member epoch if using the new consumer protocol (KIP-848). (versions 9+; default -1)"""

    topics: list[OffsetFetchRequestTopics] | None
    """Each topic we would like to fetch offsets for, or null to fetch offsets for all topics. (versions 8+; nullable 8+)"""


class OffsetFetchRequestTopics(TypedDict, total=False):
    """An element of ``OffsetFetchRequestGroup.topics``: Each topic we would like to fetch offsets for, or null to fetch offsets for all topics."""

    name: str
    """The topic name. (versions 8+)"""

    partition_indexes: list[int]
    """The partition indexes we would like to fetch offsets for. (versions 8+)"""


class OffsetFetchResponseData(TypedDict, total=False):
    """OffsetFetchResponse (API key 9): versions 1-9, flexible from 6."""

    throttle_time_ms: int
    """The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the request did not violate any quota. (versions 3+)"""

    topics: list[OffsetFetchResponseTopic]
    """The responses per topic. (versions 0-7)"""

    error_code: int
    """The top-level error code, or 0 if there was no error. (versions 2-7; default 0)"""

    groups: list[OffsetFetchResponseGroup]
    """The responses per group id. (versions 8+)"""


class OffsetFetchResponseTopic(TypedDict, total=False):
    """An element of ``OffsetFetchResponseData.topics``: The responses per topic."""

    name: str
    """The topic name. (versions 0-7)"""

    partitions: list[OffsetFetchResponsePartition]
    """The responses per partition. (versions 0-7)"""


class OffsetFetchResponseGroup(TypedDict, total=False):
    """An element of ``OffsetFetchResponseData.groups``: The responses per group id."""

    group_id: str
    """The group ID. (versions 8+)"""

    topics: list[OffsetFetchResponseTopics]
    """The responses per topic. (versions 8+)"""

    error_code: int
    """The group-level error code, or 0 if there was no error. (versions 8+; default 0)"""


class OffsetFetchResponsePartition(TypedDict, total=False):
    """An element of ``OffsetFetchResponseTopic.partitions``: The responses per partition."""

    partition_index: int
    """The partition index. (versions 0-7)"""

    committed_offset: int
    """The committed message offset. (versions 0-7)"""

    committed_leader_epoch: int
    """The leader epoch. (versions 5-7; default -1)"""

    metadata: str | None
    """The partition metadata. (versions 0-7; nullable 0-7)"""

    error_code: int
    """The error code, or 0 if there was no error. (versions 0-7)"""


class OffsetFetchResponseTopics(TypedDict, total=False):
    """An element of ``OffsetFetchResponseGroup.topics``: The responses per topic."""

    name: str
    """The topic name. (versions 8+)"""

    partitions: list[OffsetFetchResponsePartitions]
    """The responses per partition. (versions 8+)"""


class OffsetFetchResponsePartitions(TypedDict, total=False):
    """An element of ``OffsetFetchResponseTopics.partitions``: The responses per partition."""

    partition_index: int
    """The partition index. (versions 8+)"""

    committed_offset: int
    """The committed message offset. (versions 8+)"""

    committed_leader_epoch: int
    """The leader epoch. (versions 8+; default -1)"""

    metadata: str | None
    """The partition metadata. (versions 8+; nullable 8+)"""

    error_code: int
    """The partition-level error code, or 0 if there was no error. (versions 8+)"""
