"""Metadata (API key 3): the shapes of the messages, for type checkers and IDEs.

Generated from Apache Kafka's message specs by ``protocol/_schema_gen.py``, beside the codecs'
schema ``protocol/schemas/metadata.py``; do not edit.  Each ``TypedDict`` is one message or
struct; each key is documented with the spec's ``about`` text and the versions it exists in.
Every key may be left out (``total=False``): the encoder sends a missing field as its default,
as Kafka's generated message classes do.  Annotate what you build::

    body: MetadataRequestData = {...}
"""

from __future__ import annotations

from typing import TypedDict
from uuid import UUID


class MetadataRequestData(TypedDict, total=False):
    """MetadataRequest (API key 3): versions 0-13, flexible from 9."""

    topics: list[MetadataRequestTopic] | None
    """The topics to fetch metadata for. (versions 0+; nullable 1+)"""

    allow_auto_topic_creation: bool
    """If this is true, the broker may auto-create topics that we requested which do not already exist, if it is configured to do so. (versions 4+; default true)"""

    include_cluster_authorized_operations: bool
    """Whether to include cluster authorized operations. (versions 8-10)"""

    include_topic_authorized_operations: bool
    """Whether to include topic authorized operations. (versions 8+)"""


class MetadataRequestTopic(TypedDict, total=False):
    """An element of ``MetadataRequestData.topics``: The topics to fetch metadata for."""

    topic_id: UUID
    """The topic id. (versions 10+)"""

    name: str | None
    """The topic name. (versions 0+; nullable 10+)"""


class MetadataResponseData(TypedDict, total=False):
    """MetadataResponse (API key 3): versions 0-13, flexible from 9."""

    throttle_time_ms: int
    """The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the request did not violate any quota. (versions 3+)"""

    brokers: list[MetadataResponseBroker]
    """A list of brokers present in the cluster. (versions 0+)"""

    cluster_id: str | None
    """The cluster ID that responding broker belongs to. (versions 2+; nullable 2+; default null)"""

    controller_id: int
    """The ID of the controller broker. (versions 1+; default -1)"""

    topics: list[MetadataResponseTopic]
    """Each topic in the response. (versions 0+)"""

    cluster_authorized_operations: int
    """32-bit bitfield to represent authorized operations for this cluster. (versions 8-10; default -2147483648)"""

    error_code: int
    """The top-level error code, or 0 if there was no error. (versions 13+)"""


class MetadataResponseBroker(TypedDict, total=False):
    """An element of ``MetadataResponseData.brokers``: A list of brokers present in the cluster."""

    node_id: int
    """The broker ID. (versions 0+)"""

    host: str
    """The broker hostname. (versions 0+)"""

    port: int
    """The broker port. (versions 0+)"""

    rack: str | None
    """The rack of the broker, or null if it has not been assigned to a rack. (versions 1+; nullable 1+; default null)"""


class MetadataResponseTopic(TypedDict, total=False):
    """An element of ``MetadataResponseData.topics``: Each topic in the response."""

    error_code: int
    """The topic error, or 0 if there was no error. (versions 0+)"""

    name: str | None
    """The topic name. Null for non-existing topics queried by ID. This is never null when ErrorCode is zero. One of Name and TopicId is always populated. (versions 0+; nullable 12+)"""

    topic_id: UUID
    """The topic id. Zero for non-existing topics queried by name. This is never zero when ErrorCode is zero. One of Name and TopicId is always populated. (versions 10+)"""

    is_internal: bool
    """True if the topic is internal. (versions 1+; default false)"""

    partitions: list[MetadataResponsePartition]
    """Each partition in the topic. (versions 0+)"""

    topic_authorized_operations: int
    """32-bit bitfield to represent authorized operations for this topic. (versions 8+; default -2147483648)"""


class MetadataResponsePartition(TypedDict, total=False):
    """An element of ``MetadataResponseTopic.partitions``: Each partition in the topic."""

    error_code: int
    """The partition error, or 0 if there was no error. (versions 0+)"""

    partition_index: int
    """The partition index. (versions 0+)"""

    leader_id: int
    """The ID of the leader broker. (versions 0+)"""

    leader_epoch: int
    """The leader epoch of this partition. (versions 7+; default -1)"""

    replica_nodes: list[int]
    """The set of all nodes that host this partition. (versions 0+)"""

    isr_nodes: list[int]
    """The set of nodes that are in sync with the leader for this partition. (versions 0+)"""

    offline_replicas: list[int]
    """The set of offline replicas of this partition. (versions 5+)"""
