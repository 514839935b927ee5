"""DescribeShareGroupOffsets (API key 90): the shapes of the messages, for type checkers and IDEs.

Generated from Apache Kafka's message specs by ``protocol/_schema_gen.py``, beside the codecs'
schema ``protocol/schemas/describe_share_group_offsets.py``; do not edit.  Each ``TypedDict`` is one message or
struct; each key is documented with the spec's ``about`` text and the versions it exists in.
Every key may be left out (``total=False``): the encoder sends a missing field as its default,
as Kafka's generated message classes do.  Annotate what you build::

    body: DescribeShareGroupOffsetsRequestData = {...}
"""

from __future__ import annotations

from typing import TypedDict
from uuid import UUID


class DescribeShareGroupOffsetsRequestData(TypedDict, total=False):
    """DescribeShareGroupOffsetsRequest (API key 90): versions 0-1, flexible from 0."""

    groups: list[DescribeShareGroupOffsetsRequestGroup]
    """The groups to describe offsets for. (versions 0+)"""


class DescribeShareGroupOffsetsRequestGroup(TypedDict, total=False):
    """An element of ``DescribeShareGroupOffsetsRequestData.groups``: The groups to describe offsets for."""

    group_id: str
    """The group identifier. (versions 0+)"""

    topics: list[DescribeShareGroupOffsetsRequestTopic] | None
    """The topics to describe offsets for, or null for all topic-partitions. (versions 0+; nullable 0+)"""


class DescribeShareGroupOffsetsRequestTopic(TypedDict, total=False):
    """An element of ``DescribeShareGroupOffsetsRequestGroup.topics``: The topics to describe offsets for, or null for all topic-partitions."""

    topic_name: str
    """The topic name. (versions 0+)"""

    partitions: list[int]
    """The partitions. (versions 0+)"""


class DescribeShareGroupOffsetsResponseData(TypedDict, total=False):
    """DescribeShareGroupOffsetsResponse (API key 90): versions 0-1, flexible from 0."""

    throttle_time_ms: int
    """The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the request did not violate any quota. (versions 0+)"""

    groups: list[DescribeShareGroupOffsetsResponseGroup]
    """The results for each group. (versions 0+)"""


class DescribeShareGroupOffsetsResponseGroup(TypedDict, total=False):
    """An element of ``DescribeShareGroupOffsetsResponseData.groups``: The results for each group."""

    group_id: str
    """The group identifier. (versions 0+)"""

    topics: list[DescribeShareGroupOffsetsResponseTopic]
    """The results for each topic. (versions 0+)"""

    error_code: int
    """The group-level error code, or 0 if there was no error. (versions 0+)"""

    error_message: str | None
    """The group-level error message, or null if there was no error. (versions 0+; nullable 0+; default null)"""


class DescribeShareGroupOffsetsResponseTopic(TypedDict, total=False):
    """An element of ``DescribeShareGroupOffsetsResponseGroup.topics``: The results for each topic."""

    topic_name: str
    """The topic name. (versions 0+)"""

    topic_id: UUID
    """The unique topic ID. (versions 0+)"""

    partitions: list[DescribeShareGroupOffsetsResponsePartition]
    """(versions 0+)"""


class DescribeShareGroupOffsetsResponsePartition(TypedDict, total=False):
    """An element of ``DescribeShareGroupOffsetsResponseTopic.partitions``"""

    partition_index: int
    """The partition index. (versions 0+)"""

    start_offset: int
    """The share-partition start offset. (versions 0+)"""

    leader_epoch: int
    """The leader epoch of the partition. (versions 0+)"""

    lag: int
    """The share-partition lag. (versions 1+; default -1)"""

    error_code: int
    """The partition-level error code, or 0 if there was no error. (versions 0+)"""

    error_message: str | None
    """The partition-level error message, or null if there was no error. (versions 0+; nullable 0+; default null)"""
