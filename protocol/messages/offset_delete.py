"""OffsetDelete (API key 47): the shapes of the messages, for type checkers and IDEs.

Generated from Apache Kafka's message specs by ``protocol/_schema_gen.py``, beside the codecs'
schema ``protocol/schemas/offset_delete.py``; do not edit.  Each ``TypedDict`` is one message or
struct; each key is documented with the spec's ``about`` text and the versions it exists in.
Every key may be left out (``total=False``): the encoder sends a missing field as its default,
as Kafka's generated message classes do.  Annotate what you build::

    body: OffsetDeleteRequestData = {...}
"""

from __future__ import annotations

from typing import TypedDict


class OffsetDeleteRequestData(TypedDict, total=False):
    """OffsetDeleteRequest (API key 47): versions 0, not flexible."""

    group_id: str
    """The unique group identifier. (versions 0+)"""

    topics: list[OffsetDeleteRequestTopic]
    """The topics to delete offsets for. (versions 0+)"""


class OffsetDeleteRequestTopic(TypedDict, total=False):
    """An element of ``OffsetDeleteRequestData.topics``: The topics to delete offsets for."""

    name: str
    """The topic name. (versions 0+)"""

    partitions: list[OffsetDeleteRequestPartition]
    """Each partition to delete offsets for. (versions 0+)"""


class OffsetDeleteRequestPartition(TypedDict, total=False):
    """An element of ``OffsetDeleteRequestTopic.partitions``: Each partition to delete offsets for."""

    partition_index: int
    """The partition index. (versions 0+)"""


class OffsetDeleteResponseData(TypedDict, total=False):
    """OffsetDeleteResponse (API key 47): versions 0, not flexible."""

    error_code: int
    """The top-level error code, or 0 if there was no error. (versions 0+)"""

    throttle_time_ms: int
    """The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the request did not violate any quota. (versions 0+)"""

    topics: list[OffsetDeleteResponseTopic]
    """The responses for each topic. (versions 0+)"""


class OffsetDeleteResponseTopic(TypedDict, total=False):
    """An element of ``OffsetDeleteResponseData.topics``: The responses for each topic."""

    name: str
    """The topic name. (versions 0+)"""

    partitions: list[OffsetDeleteResponsePartition]
    """The responses for each partition in the topic. (versions 0+)"""


class OffsetDeleteResponsePartition(TypedDict, total=False):
    """An element of ``OffsetDeleteResponseTopic.partitions``: The responses for each partition in the topic."""

    partition_index: int
    """The partition index. (versions 0+)"""

    error_code: int
    """The error code, or 0 if there was no error. (versions 0+)"""
