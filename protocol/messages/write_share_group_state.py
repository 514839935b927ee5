"""WriteShareGroupState (API key 85): the shapes of the messages, for type checkers and IDEs.

Generated from Apache Kafka's message specs by ``protocol/_schema_gen.py``, beside the codecs'
schema ``protocol/schemas/write_share_group_state.py``; do not edit.  Each ``TypedDict`` is one message or
struct; each key is documented with the spec's ``about`` text and the versions it exists in.
Every key may be left out (``total=False``): the encoder sends a missing field as its default,
as Kafka's generated message classes do.  Annotate what you build::

    body: WriteShareGroupStateRequestData = {...}
"""

from __future__ import annotations

from typing import TypedDict
from uuid import UUID


class WriteShareGroupStateRequestData(TypedDict, total=False):
    """WriteShareGroupStateRequest (API key 85): versions 0-1, flexible from 0."""

    group_id: str
    """The group identifier. (versions 0+)"""

    topics: list[WriteStateData]
    """The data for the topics. (versions 0+)"""


class WriteStateData(TypedDict, total=False):
    """An element of ``WriteShareGroupStateRequestData.topics``: The data for the topics."""

    topic_id: UUID
    """The topic identifier. (versions 0+)"""

    partitions: list[PartitionData]
    """The data for the partitions. (versions 0+)"""


class PartitionData(TypedDict, total=False):
    """An element of ``WriteStateData.partitions``: The data for the partitions."""

    partition: int
    """The partition index. (versions 0+)"""

    state_epoch: int
    """The state epoch of the share-partition. (versions 0+)"""

    leader_epoch: int
    """The leader epoch of the share-partition. (versions 0+)"""

    start_offset: int
    """The share-partition start offset, or -1 if the start offset is not being written. (versions 0+)"""

    delivery_complete_count: int
    """The number of offsets greater than or equal to share-partition start offset for which delivery has been completed. (versions 1+; default -1)"""

    state_batches: list[StateBatch]
    """The state batches for the share-partition. (versions 0+)"""


class StateBatch(TypedDict, total=False):
    """An element of ``PartitionData.state_batches``: The state batches for the share-partition."""

    first_offset: int
    """The first offset of this state batch. (versions 0+)"""

    last_offset: int
    """The last offset of this state batch. (versions 0+)"""

    delivery_state: int
    """The delivery state - 0:Available,2:Acked,4:Archived. (versions 0+)"""

    delivery_count: int
    """The delivery count. (versions 0+)"""


class WriteShareGroupStateResponseData(TypedDict, total=False):
    """WriteShareGroupStateResponse (API key 85): versions 0-1, flexible from 0."""

    results: list[WriteStateResult]
    """The write results. (versions 0+)"""


class WriteStateResult(TypedDict, total=False):
    """An element of ``WriteShareGroupStateResponseData.results``: The write results."""

    topic_id: UUID
    """The topic identifier. (versions 0+)"""

    partitions: list[PartitionResult]
    """The results for the partitions. (versions 0+)"""


class PartitionResult(TypedDict, total=False):
    """An element of ``WriteStateResult.partitions``: The results for the partitions."""

    partition: int
    """The partition index. (versions 0+)"""

    error_code: int
    """The error code, or 0 if there was no error. (versions 0+)"""

    error_message: str | None
    """The error message, or null if there was no error. (versions 0+; nullable 0+; default null)"""
