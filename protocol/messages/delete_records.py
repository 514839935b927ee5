"""DeleteRecords (API key 21): the shapes of the messages, for type checkers and IDEs.

Generated from Apache Kafka's message specs by ``protocol/_schema_gen.py``, beside the codecs'
schema ``protocol/schemas/delete_records.py``; do not edit.  Each ``TypedDict`` is one message or
struct; each key is documented with the spec's ``about`` text and the versions it exists in.
Every key may be left out (``total=False``): the encoder sends a missing field as its default,
as Kafka's generated message classes do.  Annotate what you build::

    body: DeleteRecordsRequestData = {...}
"""

from __future__ import annotations

from typing import TypedDict


class DeleteRecordsRequestData(TypedDict, total=False):
    """DeleteRecordsRequest (API key 21): versions 0-2, flexible from 2."""

    topics: list[DeleteRecordsTopic]
    """Each topic that we want to delete records from. (versions 0+)"""

    timeout_ms: int
    """How long to wait for the deletion to complete, in milliseconds. (versions 0+)"""


class DeleteRecordsTopic(TypedDict, total=False):
    """An element of ``DeleteRecordsRequestData.topics``: Each topic that we want to delete records from."""

    name: str
    """The topic name. (versions 0+)"""

    partitions: list[DeleteRecordsPartition]
    """Each partition that we want to delete records from. (versions 0+)"""


class DeleteRecordsPartition(TypedDict, total=False):
    """An element of ``DeleteRecordsTopic.partitions``: Each partition that we want to delete records from."""

    partition_index: int
    """The partition index. (versions 0+)"""

    offset: int
    """The deletion offset. (versions 0+)"""


class DeleteRecordsResponseData(TypedDict, total=False):
    """DeleteRecordsResponse (API key 21): versions 0-2, flexible from 2."""

    throttle_time_ms: int
    """The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the request did not violate any quota. (versions 0+)"""

    topics: list[DeleteRecordsTopicResult]
    """Each topic that we wanted to delete records from. (versions 0+)"""


class DeleteRecordsTopicResult(TypedDict, total=False):
    """An element of ``DeleteRecordsResponseData.topics``: Each topic that we wanted to delete records from."""

    name: str
    """The topic name. (versions 0+)"""

    partitions: list[DeleteRecordsPartitionResult]
    """Each partition that we wanted to delete records from. (versions 0+)"""


class DeleteRecordsPartitionResult(TypedDict, total=False):
    """An element of ``DeleteRecordsTopicResult.partitions``: Each partition that we wanted to delete records from."""

    partition_index: int
    """The partition index. (versions 0+)"""

    low_watermark: int
    """The partition low water mark. (versions 0+)"""

    error_code: int
    """The deletion error code, or 0 if the deletion succeeded. (versions 0+)"""
