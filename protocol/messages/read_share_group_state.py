"""ReadShareGroupState (API key 84): the shapes of the messages, for type checkers and IDEs.

Generated from Apache Kafka's message specs by ``protocol/_schema_gen.py``, beside the codecs'
schema ``protocol/schemas/read_share_group_state.py``; do not edit.  Each ``TypedDict`` is one message or
struct; each key is documented with the spec's ``about`` text and the versions it exists in.
Every key may be left out (``total=False``): the encoder sends a missing field as its default,
as Kafka's generated message classes do.  Annotate what you build::

    body: ReadShareGroupStateRequestData = {...}
"""

from __future__ import annotations

from typing import TypedDict
from uuid import UUID


class ReadShareGroupStateRequestData(TypedDict, total=False):
    """ReadShareGroupStateRequest (API key 84): versions 0, flexible from 0."""

    group_id: str
    """The group identifier. (versions 0+)"""

    topics: list[ReadStateData]
    """The data for the topics. (versions 0+)"""


class ReadStateData(TypedDict, total=False):
    """An element of ``ReadShareGroupStateRequestData.topics``: The data for the topics."""

    topic_id: UUID
    """The topic identifier. (versions 0+)"""

    partitions: list[PartitionData]
    """The data for the partitions. (versions 0+)"""


class PartitionData(TypedDict, total=False):
    """An element of ``ReadStateData.partitions``: The data for the partitions."""

    partition: int
    """The partition index. (versions 0+)"""

    leader_epoch: int
    """The leader epoch of the share-partition. (versions 0+)"""


class ReadShareGroupStateResponseData(TypedDict, total=False):
    """ReadShareGroupStateResponse (API key 84): versions 0, flexible from 0."""

    results: list[ReadStateResult]
    """The read results. (versions 0+)"""


class ReadStateResult(TypedDict, total=False):
    """An element of ``ReadShareGroupStateResponseData.results``: The read results."""

    topic_id: UUID
    """The topic identifier. (versions 0+)"""

    partitions: list[PartitionResult]
    """The results for the partitions. (versions 0+)"""


class PartitionResult(TypedDict, total=False):
    """An element of ``ReadStateResult.partitions``: The results for the partitions."""

    partition: int
    """The partition index. (versions 0+)"""

    error_code: int
    """The error code, or 0 if there was no error. (versions 0+)"""

    error_message: str | None
    """The error message, or null if there was no error. (versions 0+; nullable 0+; default null)"""

    state_epoch: int
    """The state epoch for this share-partition. (versions 0+)"""

    start_offset: int
    """The share-partition start offset, which can be -1 if it is not yet initialized. (versions 0+)"""

    state_batches: list[StateBatch]
    """The state batches for this share-partition. (versions 0+)"""


class StateBatch(TypedDict, total=False):
    """An element of ``PartitionResult.state_batches``: The state batches for this share-partition."""

    first_offset: int
    """The base offset of this state batch. (versions 0+)"""

    last_offset: int
    """The last offset of this state batch. (versions 0+)"""

    delivery_state: int
    """The state - 0:Available,2:Acked,4:Archived. (versions 0+)"""

    delivery_count: int
    """The delivery count. (versions 0+)"""
