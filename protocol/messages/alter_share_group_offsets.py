"""AlterShareGroupOffsets (API key 91): the shapes of the messages, for type checkers and IDEs.

Generated from Apache Kafka's message specs by ``protocol/_schema_gen.py``, beside the codecs'
schema ``protocol/schemas/alter_share_group_offsets.py``; do not edit.  Each ``TypedDict`` is one message or
struct; each key is documented with the spec's ``about`` text and the versions it exists in.
Every key may be left out (``total=False``): the encoder sends a missing field as its default,
as Kafka's generated message classes do.  Annotate what you build::

    body: AlterShareGroupOffsetsRequestData = {...}
"""

from __future__ import annotations

from typing import TypedDict
from uuid import UUID


class AlterShareGroupOffsetsRequestData(TypedDict, total=False):
    """AlterShareGroupOffsetsRequest (API key 91): versions 0, flexible from 0."""

    group_id: str
    """The group identifier. (versions 0+)"""

    topics: list[AlterShareGroupOffsetsRequestTopic]
    """The topics to alter offsets for. (versions 0+)"""


class AlterShareGroupOffsetsRequestTopic(TypedDict, total=False):
    """An element of ``AlterShareGroupOffsetsRequestData.topics``: The topics to alter offsets for."""

    topic_name: str
    """The topic name. (versions 0+)"""

    partitions: list[AlterShareGroupOffsetsRequestPartition]
    """Each partition to alter offsets for. (versions 0+)"""


class AlterShareGroupOffsetsRequestPartition(TypedDict, total=False):
    """An element of ``AlterShareGroupOffsetsRequestTopic.partitions``: Each partition to alter offsets for."""

    partition_index: int
    """The partition index. (versions 0+)"""

    start_offset: int
    """The share-partition start offset. (versions 0+)"""


class AlterShareGroupOffsetsResponseData(TypedDict, total=False):
    """AlterShareGroupOffsetsResponse (API key 91): versions 0, flexible from 0."""

    throttle_time_ms: int
    """The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the request did not violate any quota. (versions 0+)"""

    error_code: int
    """The top-level error code, or 0 if there was no error. (versions 0+)"""

    error_message: str | None
    """The top-level error message, or null if there was no error. (versions 0+; nullable 0+; default null)"""

    responses: list[AlterShareGroupOffsetsResponseTopic]
    """The results for each topic. (versions 0+)"""


class AlterShareGroupOffsetsResponseTopic(TypedDict, total=False):
    """An element of ``AlterShareGroupOffsetsResponseData.responses``: The results for each topic."""

    topic_name: str
    """The topic name. (versions 0+)"""

    topic_id: UUID
    """The unique topic ID. (versions 0+)"""

    partitions: list[AlterShareGroupOffsetsResponsePartition]
    """(versions 0+)"""


class AlterShareGroupOffsetsResponsePartition(TypedDict, total=False):
    """An element of ``AlterShareGroupOffsetsResponseTopic.partitions``"""

    partition_index: int
    """The partition index. (versions 0+)"""

    error_code: int
    """The error code, or 0 if there was no error. (versions 0+)"""

    error_message: str | None
    """The error message, or null if there was no error. (versions 0+; nullable 0+; default null)"""
