"""CreatePartitions (API key 37): the shapes of the messages, for type checkers and IDEs.

Generated from Apache Kafka's message specs by ``protocol/_schema_gen.py``, beside the codecs'
schema ``protocol/schemas/create_partitions.py``; do not edit.  Each ``TypedDict`` is one message or
struct; each key is documented with the spec's ``about`` text and the versions it exists in.
Every key may be left out (``total=False``): the encoder sends a missing field as its default,
as Kafka's generated message classes do.  Annotate what you build::

    body: CreatePartitionsRequestData = {...}
"""

from __future__ import annotations

from typing import TypedDict


class CreatePartitionsRequestData(TypedDict, total=False):
    """CreatePartitionsRequest (API key 37): versions 0-3, flexible from 2."""

    topics: list[CreatePartitionsTopic]
    """Each topic that we want to create new partitions inside. (versions 0+)"""

    timeout_ms: int
    """The time in ms to wait for the partitions to be created. (versions 0+)"""

    validate_only: bool
    """If true, then validate the request, but don't actually increase the number of partitions. (versions 0+)"""


class CreatePartitionsTopic(TypedDict, total=False):
    """An element of ``CreatePartitionsRequestData.topics``: Each topic that we want to create new partitions inside."""

    name: str
    """The topic name. (versions 0+)"""

    count: int
    """The new partition count. (versions 0+)"""

    assignments: list[CreatePartitionsAssignment] | None
    """The new partition assignments. (versions 0+; nullable 0+)"""


class CreatePartitionsAssignment(TypedDict, total=False):
    """An element of ``CreatePartitionsTopic.assignments``: The new partition assignments."""

    broker_ids: list[int]
    """The assigned broker IDs. (versions 0+)"""


class CreatePartitionsResponseData(TypedDict, total=False):
    """CreatePartitionsResponse (API key 37): versions 0-3, flexible from 2."""

    throttle_time_ms: int
    """The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the request did not violate any quota. (versions 0+)"""

    results: list[CreatePartitionsTopicResult]
    """The partition creation results for each topic. (versions 0+)"""


class CreatePartitionsTopicResult(TypedDict, total=False):
    """An element of ``CreatePartitionsResponseData.results``: The partition creation results for each topic."""

    name: str
    """The topic name. (versions 0+)"""

    error_code: int
    """The result error, or zero if there was no error. (versions 0+)"""

    error_message: str | None
    """The result message, or null if there was no error. (versions 0+; nullable 0+; default null)"""
