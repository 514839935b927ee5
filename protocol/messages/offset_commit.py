"""OffsetCommit (API key 8): the shapes of the messages, for type checkers and IDEs.

Generated from Apache Kafka's message specs by ``protocol/_schema_gen.py``, beside the codecs'
schema ``protocol/schemas/offset_commit.py``; do not edit.  Each ``TypedDict`` is one message or
struct; each key is documented with the spec's ``about`` text and the versions it exists in.
Every key may be left out (``total=False``): the encoder sends a missing field as its default,
as Kafka's generated message classes do.  Annotate what you build::

    body: OffsetCommitRequestData = {...}
"""

from __future__ import annotations

from typing import TypedDict


class OffsetCommitRequestData(TypedDict, total=False):
    """OffsetCommitRequest (API key 8): versions 2-9, flexible from 8."""

    group_id: str
    """The unique group identifier. (versions 0+)"""

    generation_id_or_member_epoch: int
    """The generation of the group if using the classic group protocol or the member epoch if using the consumer protocol. (versions 1+; default -1)"""

    member_id: str
    """The member ID assigned by the group coordinator. (versions 1+)"""

    group_instance_id: str | None
    """The unique identifier of the consumer instance provided by end user. (versions 7+; nullable 7+; default null)"""

    retention_time_ms: int
    """The time period in ms to retain the offset. (versions 2-4; default -1)"""

    topics: list[OffsetCommitRequestTopic]
    """The topics to commit offsets for. (versions 0+)"""


class OffsetCommitRequestTopic(TypedDict, total=False):
    """An element of ``OffsetCommitRequestData.topics``: The topics to commit offsets for."""

    name: str
    """The topic name. (versions 0+)"""

    partitions: list[OffsetCommitRequestPartition]
    """Each partition to commit offsets for. (versions 0+)"""


class OffsetCommitRequestPartition(TypedDict, total=False):
    """An element of ``OffsetCommitRequestTopic.partitions``: Each partition to commit offsets for."""

    partition_index: int
    """The partition index. (versions 0+)"""

    committed_offset: int
    """The message offset to be committed. (versions 0+)"""

    committed_leader_epoch: int
    """The leader epoch of this partition. (versions 6+; default -1)"""

    committed_metadata: str | None
    """Any associated metadata the client wants to keep. (versions 0+; nullable 0+)"""


class OffsetCommitResponseData(TypedDict, total=False):
    """OffsetCommitResponse (API key 8): versions 2-9, flexible from 8."""

    throttle_time_ms: int
    """The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the request did not violate any quota. (versions 3+)"""

    topics: list[OffsetCommitResponseTopic]
    """The responses for each topic. (versions 0+)"""


class OffsetCommitResponseTopic(TypedDict, total=False):
    """An element of ``OffsetCommitResponseData.topics``: The responses for each topic."""

    name: str
    """The topic name. (versions 0+)"""

    partitions: list[OffsetCommitResponsePartition]
    """The responses for each partition in the topic. (versions 0+)"""


class OffsetCommitResponsePartition(TypedDict, total=False):
    """An element of ``OffsetCommitResponseTopic.partitions``: The responses for each partition in the topic."""

    partition_index: int
    """The partition index. (versions 0+)"""

    error_code: int
    """The error code, or 0 if there was no error. (versions 0+)"""
