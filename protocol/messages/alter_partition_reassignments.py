"""AlterPartitionReassignments (API key 45): the shapes of the messages, for type checkers and IDEs.

Generated from Apache Kafka's message specs by ``protocol/_schema_gen.py``, beside the codecs'
schema ``protocol/schemas/alter_partition_reassignments.py``; do not edit.  Each ``TypedDict`` is one message or
struct; each key is documented with the spec's ``about`` text and the versions it exists in.
Every key may be left out (``total=False``): the encoder sends a missing field as its default,
as Kafka's generated message classes do.  Annotate what you build::

    body: AlterPartitionReassignmentsRequestData = {...}
"""

from __future__ import annotations

from typing import TypedDict


class AlterPartitionReassignmentsRequestData(TypedDict, total=False):
    """AlterPartitionReassignmentsRequest (API key 45): versions 0-1, flexible from 0."""

    timeout_ms: int
    """The time in ms to wait for the request to complete. (versions 0+; default 60000)"""

    allow_replication_factor_change: bool
    """The option indicating whether changing the replication factor of any given partition as part of this request is a valid move. (versions 1+; default true)"""

    topics: list[ReassignableTopic]
    """The topics to reassign. (versions 0+)"""


class ReassignableTopic(TypedDict, total=False):
    """An element of ``AlterPartitionReassignmentsRequestData.topics``: The topics to reassign."""

    name: str
    """The topic name. (versions 0+)"""

    partitions: list[ReassignablePartition]
    """The partitions to reassign. (versions 0+)"""


class ReassignablePartition(TypedDict, total=False):
    """An element of ``ReassignableTopic.partitions``: The partitions to reassign."""

    partition_index: int
    """The partition index. (versions 0+)"""

    replicas: list[int] | None
    """The replicas to place the partitions on, or null to cancel a pending reassignment for this partition. (versions 0+; nullable 0+; default null)"""


class AlterPartitionReassignmentsResponseData(TypedDict, total=False):
    """AlterPartitionReassignmentsResponse (API key 45): versions 0-1, flexible from 0."""

    throttle_time_ms: int
    """The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the request did not violate any quota. (versions 0+)"""

    allow_replication_factor_change: bool
    """The option indicating whether changing the replication factor of any given partition as part of the request was allowed. (versions 1+; default true)"""

    error_code: int
    """The top-level error code, or 0 if there was no error. (versions 0+)"""

    error_message: str | None
    """The top-level error message, or null if there was no error. (versions 0+; nullable 0+)"""

    responses: list[ReassignableTopicResponse]
    """The responses to topics to reassign. (versions 0+)"""


class ReassignableTopicResponse(TypedDict, total=False):
    """An element of ``AlterPartitionReassignmentsResponseData.responses``: The responses to topics to reassign."""

    name: str
    """The topic name. (versions 0+)"""

    partitions: list[ReassignablePartitionResponse]
    """The responses to partitions to reassign. (versions 0+)"""


class ReassignablePartitionResponse(TypedDict, total=False):
    """An element of ``ReassignableTopicResponse.partitions``: The responses to partitions to reassign."""

    partition_index: int
    """The partition index. (versions 0+)"""

    error_code: int
    """The error code for this partition, or 0 if there was no error. (versions 0+)"""

    error_message: str | None
    """The error message for this partition, or null if there was no error. (versions 0+; nullable 0+)"""
