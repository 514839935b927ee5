"""InitializeShareGroupState (API key 83): the shapes of the messages, for type checkers and IDEs.

Generated from Apache Kafka's message specs by ``protocol/_schema_gen.py``, beside the codecs'
schema ``protocol/schemas/initialize_share_group_state.py``; do not edit.  Each ``TypedDict`` is one message or
struct; each key is documented with the spec's ``about`` text and the versions it exists in.
Every key may be left out (``total=False``): the encoder sends a missing field as its default,
as Kafka's generated message classes do.  Annotate what you build::

    body: InitializeShareGroupStateRequestData = {...}
"""

from __future__ import annotations

from typing import TypedDict
from uuid import UUID


class InitializeShareGroupStateRequestData(TypedDict, total=False):
    """InitializeShareGroupStateRequest (API key 83): versions 0, flexible from 0."""

    group_id: str
    """The group identifier. (versions 0+)"""

    topics: list[InitializeStateData]
    """The data for the topics. (versions 0+)"""


class InitializeStateData(TypedDict, total=False):
    """An element of ``InitializeShareGroupStateRequestData.topics``: The data for the topics."""

    topic_id: UUID
    """The topic identifier. (versions 0+)"""

    partitions: list[PartitionData]
    """The data for the partitions. (versions 0+)"""


class PartitionData(TypedDict, total=False):
    """An element of ``InitializeStateData.partitions``: The data for the partitions."""

    partition: int
    """The partition index. (versions 0+)"""

    state_epoch: int
    """The state epoch for this share-partition. (versions 0+)"""

    start_offset: int
    """The share-partition start offset, or -1 if the start offset is not being initialized. (versions 0+)"""


class InitializeShareGroupStateResponseData(TypedDict, total=False):
    """InitializeShareGroupStateResponse (API key 83): versions 0, flexible from 0."""

    results: list[InitializeStateResult]
    """The initialization results. (versions 0+)"""


class InitializeStateResult(TypedDict, total=False):
    """An element of ``InitializeShareGroupStateResponseData.results``: The initialization results."""

    topic_id: UUID
    """The topic identifier. (versions 0+)"""

    partitions: list[PartitionResult]
    """The results for the partitions. (versions 0+)"""


class PartitionResult(TypedDict, total=False):
    """An element of ``InitializeStateResult.partitions``: The results for the partitions."""

    partition: int
    """The partition index. (versions 0+)"""

    error_code: int
    """The error code, or 0 if there was no error. (versions 0+)"""

    error_message: str | None
    """The error message, or null if there was no error. (versions 0+; nullable 0+; default null)"""
