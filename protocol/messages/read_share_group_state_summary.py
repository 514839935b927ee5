"""ReadShareGroupStateSummary (API key 87): the shapes of the messages, for type checkers and IDEs.

Generated from Apache Kafka's message specs by ``protocol/_schema_gen.py``, beside the codecs'
schema ``protocol/schemas/read_share_group_state_summary.py``; do not edit.  Each ``TypedDict`` is one message or
struct; each key is documented with the spec's ``about`` text and the versions it exists in.
Every key may be left out (``total=False``): the encoder sends a missing field as its default,
as Kafka's generated message classes do.  Annotate what you build::

    body: ReadShareGroupStateSummaryRequestData = {...}
"""

from __future__ import annotations

from typing import TypedDict
from uuid import UUID


class ReadShareGroupStateSummaryRequestData(TypedDict, total=False):
    """ReadShareGroupStateSummaryRequest (API key 87): versions 0-1, flexible from 0."""

    group_id: str
    """The group identifier. (versions 0+)"""

    topics: list[ReadStateSummaryData]
    """The data for the topics. (versions 0+)"""


class ReadStateSummaryData(TypedDict, total=False):
    """An element of ``ReadShareGroupStateSummaryRequestData.topics``: The data for the topics."""

    topic_id: UUID
    """The topic identifier. (versions 0+)"""

    partitions: list[PartitionData]
    """The data for the partitions. (versions 0+)"""


class PartitionData(TypedDict, total=False):
    """An element of ``ReadStateSummaryData.partitions``: The data for the partitions."""

    partition: int
    """The partition index. (versions 0+)"""

    leader_epoch: int
    """The leader epoch of the share-partition. (versions 0+)"""


class ReadShareGroupStateSummaryResponseData(TypedDict, total=False):
    """ReadShareGroupStateSummaryResponse (API key 87): versions 0-1, flexible from 0."""

    results: list[ReadStateSummaryResult]
    """The read results. (versions 0+)"""


class ReadStateSummaryResult(TypedDict, total=False):
    """An element of ``ReadShareGroupStateSummaryResponseData.results``: The read results."""

    topic_id: UUID
    """The topic identifier. (versions 0+)"""

    partitions: list[PartitionResult]
    """The results for the partitions. (versions 0+)"""


class PartitionResult(TypedDict, total=False):
    """An element of ``ReadStateSummaryResult.partitions``: The results for the partitions."""

    partition: int
    """The partition index. (versions 0+)"""

    error_code: int
    """The error code, or 0 if there was no error. (versions 0+)"""

    error_message: str | None
    """The error message, or null if there was no error. (versions 0+; nullable 0+; default null)"""

    state_epoch: int
    """The state epoch of the share-partition. (versions 0+)"""

    leader_epoch: int
    """The leader epoch of the share-partition. (versions 0+)"""

    start_offset: int
    """The share-partition start offset. (versions 0+)"""

    delivery_complete_count: int
    """The number of offsets greater than or equal to share-partition start offset for which delivery has been completed. (versions 1+; default -1)"""
