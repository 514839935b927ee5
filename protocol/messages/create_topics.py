"""CreateTopics (API key 19): the shapes of the messages, for type checkers and IDEs.

Generated from Apache Kafka's message specs by ``protocol/_schema_gen.py``, beside the codecs'
schema ``protocol/schemas/create_topics.py``; do not edit.  Each ``TypedDict`` is one message or
struct; each key is documented with the spec's ``about`` text and the versions it exists in.
Every key may be left out (``total=False``): the encoder sends a missing field as its default,
as Kafka's generated message classes do.  Annotate what you build::

    body: CreateTopicsRequestData = {...}
"""

from __future__ import annotations

from typing import TypedDict
from uuid import UUID


class CreateTopicsRequestData(TypedDict, total=False):
    """CreateTopicsRequest (API key 19): versions 2-7, flexible from 5."""

    topics: list[CreatableTopic]
    """The topics to create. (versions 0+)"""

    timeout_ms: int
    """How long to wait in milliseconds before timing out the request. (versions 0+; default 60000)"""

    validate_only: bool
    """If true, check that the topics can be created as specified, but don't create anything. (versions 1+; default false)"""


class CreatableTopic(TypedDict, total=False):
    """An element of ``CreateTopicsRequestData.topics``: The topics to create."""

    name: str
    """The topic name. (versions 0+)"""

    num_partitions: int
    """The number of partitions to create in the topic, or -1 if we are either specifying a manual partition assignment or using the default partitions. (versions 0+)"""

    replication_factor: int
    """The number of replicas to create for each partition in the topic, or -1 if we are either specifying a manual partition assignment or using the default replication factor. (versions 0+)"""

    assignments: list[CreatableReplicaAssignment]
    """The manual partition assignment, or the empty array if we are using automatic assignment. (versions 0+)"""

    configs: list[CreatableTopicConfig]
    """The custom topic configurations to set. (versions 0+)"""


class CreatableReplicaAssignment(TypedDict, total=False):
    """An element of ``CreatableTopic.assignments``: The manual partition assignment, or the empty array if we are using automatic assignment."""

    partition_index: int
    """The partition index. (versions 0+)"""

    broker_ids: list[int]
    """The brokers to place the partition on. (versions 0+)"""


class CreatableTopicConfig(TypedDict, total=False):
    """An element of ``CreatableTopic.configs``: The custom topic configurations to set."""

    name: str
    """The configuration name. (versions 0+)"""

    value: str | None
    """The configuration value. (versions 0+; nullable 0+)"""


class CreateTopicsResponseData(TypedDict, total=False):
    """CreateTopicsResponse (API key 19): versions 2-7, flexible from 5."""

    throttle_time_ms: int
    """The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the request did not violate any quota. (versions 2+)"""

    topics: list[CreatableTopicResult]
    """Results for each topic we tried to create. (versions 0+)"""


class CreatableTopicResult(TypedDict, total=False):
    """An element of ``CreateTopicsResponseData.topics``: Results for each topic we tried to create."""

    name: str
    """The topic name. (versions 0+)"""

    topic_id: UUID
    """The unique topic ID. (versions 7+)"""

    error_code: int
    """The error code, or 0 if there was no error. (versions 0+)"""

    error_message: str | None
    """The error message, or null if there was no error. (versions 1+; nullable 0+)"""

    topic_config_error_code: int
    """Optional topic config error returned if configs are not returned in the response. (versions 5+; tagged 5+ as tag 0)"""

    num_partitions: int
    """Number of partitions of the topic. (versions 5+; default -1)"""

    replication_factor: int
    """Replication factor of the topic. (versions 5+; default -1)"""

    configs: list[CreatableTopicConfigs] | None
    """Configuration of the topic. (versions 5+; nullable 5+)"""


class CreatableTopicConfigs(TypedDict, total=False):
    """An element of ``CreatableTopicResult.configs``: Configuration of the topic."""

    name: str
    """The configuration name. (versions 5+)"""

    value: str | None
    """The configuration value. (versions 5+; nullable 5+)"""

    read_only: bool
    """True if the configuration is read-only. (versions 5+)"""

    config_source: int
    """The configuration source. (versions 5+; default -1)"""

    is_sensitive: bool
    """True if this configuration is sensitive. (versions 5+)"""
