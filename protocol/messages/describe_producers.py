"""DescribeProducers (API key 61): the shapes of the messages, for type checkers and IDEs.

Generated from Apache Kafka's message specs by ``protocol/_schema_gen.py``, beside the codecs'
schema ``protocol/schemas/describe_producers.py``; do not edit.  Each ``TypedDict`` is one message or
struct; each key is documented with the spec's ``about`` text and the versions it exists in.
Every key may be left out (``total=False``): the encoder sends a missing field as its default,
as Kafka's generated message classes do.  Annotate what you build::

    body: DescribeProducersRequestData = {...}
"""

from __future__ import annotations

from typing import TypedDict


class DescribeProducersRequestData(TypedDict, total=False):
    """DescribeProducersRequest (API key 61): versions 0, flexible from 0."""

    topics: list[TopicRequest]
    """The topics to list producers for. (versions 0+)"""


class TopicRequest(TypedDict, total=False):
    """An element of ``DescribeProducersRequestData.topics``: The topics to list producers for."""

    name: str
    """The topic name. (versions 0+)"""

    partition_indexes: list[int]
    """The indexes of the partitions to list producers for. (versions 0+)"""


class DescribeProducersResponseData(TypedDict, total=False):
    """DescribeProducersResponse (API key 61): versions 0, flexible from 0."""

    throttle_time_ms: int
    """The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the request did not violate any quota. (versions 0+)"""

    topics: list[TopicResponse]
    """Each topic in the response. (versions 0+)"""


class TopicResponse(TypedDict, total=False):
    """An element of ``DescribeProducersResponseData.topics``: Each topic in the response."""

    name: str
    """The topic name. (versions 0+)"""

    partitions: list[PartitionResponse]
    """Each partition in the response. (versions 0+)"""


class PartitionResponse(TypedDict, total=False):
    """An element of ``TopicResponse.partitions``: Each partition in the response."""

    partition_index: int
    """The partition index. (versions 0+)"""

    error_code: int
    """The partition error code, or 0 if there was no error. (versions 0+)"""

    error_message: str | None
    """The partition error message, which may be null if no additional details are available. (versions 0+; nullable 0+; default null)"""

    active_producers: list[ProducerState]
    """The active producers for the partition. (versions 0+)"""


class ProducerState(TypedDict, total=False):
    """An element of ``PartitionResponse.active_producers``: The active producers for the partition."""

    producer_id: int
    """The producer id. (versions 0+)"""

    producer_epoch: int
    """The producer epoch. (versions 0+)"""

    last_sequence: int
    """The last sequence number sent by the producer. (versions 0+; default -1)"""

    last_timestamp: int
    """The last timestamp sent by the producer. (versions 0+; default -1)"""

    coordinator_epoch: int
    """The current epoch of the producer group. (versions 0+)"""

    current_txn_start_offset: int
    """The current transaction start offset of the producer. (versions 0+; default -1)"""
