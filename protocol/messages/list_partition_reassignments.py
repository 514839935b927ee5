"""ListPartitionReassignments (API key 46): the shapes of the messages, for type checkers and IDEs.

Generated from Apache Kafka's message specs by ``protocol/_schema_gen.py``, beside the codecs'
schema ``protocol/schemas/list_partition_reassignments.py``; do not edit.  Each ``TypedDict`` is one message or
struct; each key is documented with the spec's ``about`` text and the versions it exists in.
Every key may be left out (``total=False``): the encoder sends a missing field as its default,
as Kafka's generated message classes do.  Annotate what you build::

    body: ListPartitionReassignmentsRequestData = {...}
"""

from __future__ import annotations

from typing import TypedDict


class ListPartitionReassignmentsRequestData(TypedDict, total=False):
    """ListPartitionReassignmentsRequest (API key 46): versions 0, flexible from 0."""

    timeout_ms: int
    """The time in ms to wait for the request to complete. (versions 0+; default 60000)"""

    topics: list[ListPartitionReassignmentsTopics] | None
    """The topics to list partition reassignments for, or null to list everything. (versions 0+; nullable 0+; default null)"""


class ListPartitionReassignmentsTopics(TypedDict, total=False):
    """An element of ``ListPartitionReassignmentsRequestData.topics``: The topics to list partition reassignments for, or null to list everything."""

    name: str
    """The topic name. (versions 0+)"""

    partition_indexes: list[int]
    """The partitions to list partition reassignments for. (versions 0+)"""


class ListPartitionReassignmentsResponseData(TypedDict, total=False):
    """ListPartitionReassignmentsResponse (API key 46): versions 0, flexible from 0."""

    throttle_time_ms: int
    """The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the request did not violate any quota. (versions 0+)"""

    error_code: int
    """The top-level error code, or 0 if there was no error. (versions 0+)"""

    error_message: str | None
    """The top-level error message, or null if there was no error. (versions 0+; nullable 0+)"""

    topics: list[OngoingTopicReassignment]
    """The ongoing reassignments for each topic. (versions 0+)"""


class OngoingTopicReassignment(TypedDict, total=False):
    """An element of ``ListPartitionReassignmentsResponseData.topics``: The ongoing reassignments for each topic."""

    name: str
    """The topic name. (versions 0+)"""

    partitions: list[OngoingPartitionReassignment]
    """The ongoing reassignments for each partition. (versions 0+)"""


class OngoingPartitionReassignment(TypedDict, total=False):
    """An element of ``OngoingTopicReassignment.partitions``: The ongoing reassignments for each partition."""

    partition_index: int
    """The index of the partition. (versions 0+)"""

    replicas: list[int]
    """The current replica set. (versions 0+)"""

    adding_replicas: list[int]
    """The set of replicas we are currently adding. (versions 0+)"""

    removing_replicas: list[int]
    """The set of replicas we are currently removing. (versions 0+)"""
