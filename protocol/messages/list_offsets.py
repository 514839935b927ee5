"""ListOffsets (API key 2): the shapes of the messages, for type checkers and IDEs.

Generated from Apache Kafka's message specs by ``protocol/_schema_gen.py``, beside the codecs'
schema ``protocol/schemas/list_offsets.py``; do not edit.  Each ``TypedDict`` is one message or
struct; each key is documented with the spec's ``about`` text and the versions it exists in.
Every key may be left out (``total=False``): the encoder sends a missing field as its default,
as Kafka's generated message classes do.  Annotate what you build::

    body: ListOffsetsRequestData = {...}
"""

from __future__ import annotations

from typing import TypedDict


class ListOffsetsRequestData(TypedDict, total=False):
    """ListOffsetsRequest (API key 2): versions 1-10, flexible from 6."""

    replica_id: int
    """The broker ID of the requester, or -1 if this request is being made by a normal consumer. (versions 0+)"""

    isolation_level: int
    """This setting controls the visibility of transactional records. Using READ_UNCOMMITTED (isolation_level = 0) makes all records visible. With READ_COMMITTED (isolation_level = 1), non-transactional and COMMITTED transactional records are visible. To be more concrete, READ_COMMITTED returns all data from offsets smaller than the current LSO (last stable offset), and enables the inclusion of the list of aborted transactions in the result, which allows consumers to discard ABORTED transactional records. (versions 2+)"""

    topics: list[ListOffsetsTopic]
    """Each topic in the request. (versions 0+)"""

    timeout_ms: int
    """The timeout to await a response in milliseconds for requests that require reading from remote storage for topics enabled with tiered storage. (versions 10+)"""


class ListOffsetsTopic(TypedDict, total=False):
    """An element of ``ListOffsetsRequestData.topics``: Each topic in the request."""

    name: str
    """The topic name. (versions 0+)"""

    partitions: list[ListOffsetsPartition]
    """Each partition in the request. (versions 0+)"""


class ListOffsetsPartition(TypedDict, total=False):
    """An element of ``ListOffsetsTopic.partitions``: Each partition in the request."""

    partition_index: int
    """The partition index. (versions 0+)"""

    current_leader_epoch: int
    """The current leader epoch. (versions 4+; default -1)"""

    timestamp: int
    """The current timestamp. (versions 0+)"""


class ListOffsetsResponseData(TypedDict, total=False):
    """ListOffsetsResponse (API key 2): versions 1-10, flexible from 6."""

    throttle_time_ms: int
    """The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the request did not violate any quota. (versions 2+)"""

    topics: list[ListOffsetsTopicResponse]
    """Each topic in the response. (versions 0+)"""


class ListOffsetsTopicResponse(TypedDict, total=False):
    """An element of ``ListOffsetsResponseData.topics``: Each topic in the response."""

    name: str
    """The topic name. (versions 0+)"""

    partitions: list[ListOffsetsPartitionResponse]
    """Each partition in the response. (versions 0+)"""


class ListOffsetsPartitionResponse(TypedDict, total=False):
    """An element of ``ListOffsetsTopicResponse.partitions``: Each partition in the response."""

    partition_index: int
    """The partition index. (versions 0+)"""

    error_code: int
    """The partition error code, or 0 if there was no error. (versions 0+)"""

    timestamp: int
    """The timestamp associated with the returned offset. (versions 1+; default -1)"""

    offset: int
    """The returned offset. (versions 1+; default -1)"""

    leader_epoch: int
    """The leader epoch associated with the returned offset. (versions 4+; default -1)"""
