"""Produce (API key 0): the shapes of the messages, for type checkers and IDEs.

Generated from Apache Kafka's message specs by ``protocol/_schema_gen.py``, beside the codecs'
schema ``protocol/schemas/produce.py``; do not edit.  Each ``TypedDict`` is one message or
struct; each key is documented with the spec's ``about`` text and the versions it exists in.
Every key may be left out (``total=False``): the encoder sends a missing field as its default,
as Kafka's generated message classes do.  Annotate what you build::

    body: ProduceRequestData = {...}
"""

from __future__ import annotations

from typing import TypedDict

from protocol.messages import Records


class ProduceRequestData(TypedDict, total=False):
    """ProduceRequest (API key 0): versions 3-12, flexible from 9."""

    transactional_id: str | None
    """The transactional ID, or null if the producer is not transactional. (versions 3+; nullable 3+; default null)"""

    acks: int
    """The number of acknowledgments the producer requires the leader to have received before considering a request complete. Allowed values: 0 for no acknowledgments, 1 for only the leader and -1 for the full ISR. (versions 0+)"""

    timeout_ms: int
    """The timeout to await a response in milliseconds. (versions 0+)"""

    topic_data: list[TopicProduceData]
    """Each topic to produce to. (versions 0+)"""


class TopicProduceData(TypedDict, total=False):
    """An element of ``ProduceRequestData.topic_data``: Each topic to produce to."""

    name: str
    """The topic name. (versions 0+)"""

    partition_data: list[PartitionProduceData]
    """Each partition to produce to. (versions 0+)"""


class PartitionProduceData(TypedDict, total=False):
    """An element of ``TopicProduceData.partition_data``: Each partition to produce to."""

    index: int
    """The partition index. (versions 0+)"""

    records: Records | None
    """The record data to be produced. (versions 0+; nullable 0+)"""


class ProduceResponseData(TypedDict, total=False):
    """ProduceResponse (API key 0): versions 3-12, flexible from 9."""

    responses: list[TopicProduceResponse]
    """Each produce response. (versions 0+)"""

    throttle_time_ms: int
    """The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the request did not violate any quota. (versions 1+; default 0)"""

    node_endpoints: list[NodeEndpoint]
    """Endpoints for all current-leaders enumerated in PartitionProduceResponses, with errors NOT_LEADER_OR_FOLLOWER. (versions 10+; tagged 10+ as tag 0)"""


class TopicProduceResponse(TypedDict, total=False):
    """An element of ``ProduceResponseData.responses``: Each produce response."""

    name: str
    """The topic name. (versions 0+)"""

    partition_responses: list[PartitionProduceResponse]
    """Each partition that we produced to within the topic. (versions 0+)"""


class NodeEndpoint(TypedDict, total=False):
    """An element of ``ProduceResponseData.node_endpoints``: Endpoints for all current-leaders enumerated in PartitionProduceResponses, with errors NOT_LEADER_OR_FOLLOWER."""

    node_id: int
    """The ID of the associated node. (versions 10+)"""

    host: str
    """The node's hostname. (versions 10+)"""

    port: int
    """The node's port. (versions 10+)"""

    rack: str | None
    """The rack of the node, or null if it has not been assigned to a rack. (versions 10+; nullable 10+; default null)"""


class PartitionProduceResponse(TypedDict, total=False):
    """An element of ``TopicProduceResponse.partition_responses``: Each partition that we produced to within the topic."""

    index: int
    """The partition index. (versions 0+)"""

    error_code: int
    """The error code, or 0 if there was no error. (versions 0+)"""

    base_offset: int
    """The base offset. (versions 0+)"""

    log_append_time_ms: int
    """The timestamp returned by broker after appending the messages. If CreateTime is used for the topic, the timestamp will be -1. If LogAppendTime is used for the topic, the timestamp will be the broker local time when the messages are appended. (versions 2+; default -1)"""

    log_start_offset: int
    """The log start offset. (versions 5+; default -1)"""

    record_errors: list[BatchIndexAndErrorMessage]
    """The batch indices of records that caused the batch to be dropped. (versions 8+)"""

    error_message: str | None
    """The global error message summarizing the common root cause of the records that caused the batch to be dropped. (versions 8+; nullable 8+; default null)"""

    current_leader: LeaderIdAndEpoch
    """The leader broker that the producer should use for future requests. (versions 10+; tagged 10+ as tag 0)"""


class BatchIndexAndErrorMessage(TypedDict, total=False):
    """An element of ``PartitionProduceResponse.record_errors``: The batch indices of records that caused the batch to be dropped."""

    batch_index: int
    """The batch index of the record that caused the batch to be dropped. (versions 8+)"""

    batch_index_error_message: str | None
    """The error message of the record that caused the batch to be dropped. (versions 8+; nullable 8+; default null)"""


class LeaderIdAndEpoch(TypedDict, total=False):
    """``PartitionProduceResponse.current_leader``: The leader broker that the producer should use for future requests."""

    leader_id: int
    """The ID of the current leader or -1 if the leader is unknown. (versions 10+; default -1)"""

    leader_epoch: int
    """The latest known leader epoch. (versions 10+; default -1)"""
