"""TxnOffsetCommit (API key 28): the shapes of the messages, for type checkers and IDEs.

Generated from Apache Kafka's message specs by ``protocol/_schema_gen.py``, beside the codecs'
schema ``protocol/schemas/txn_offset_commit.py``; do not edit.  Each ``TypedDict`` is one message or
struct; each key is documented with the spec's ``about`` text and the versions it exists in.
Every key may be left out (``total=False``): the encoder sends a missing field as its default,
as Kafka's generated message classes do.  Annotate what you build::

    body: TxnOffsetCommitRequestData = {...}
"""

from __future__ import annotations

from typing import TypedDict


class TxnOffsetCommitRequestData(TypedDict, total=False):
    """TxnOffsetCommitRequest (API key 28): versions 0-5, flexible from 3."""

    transactional_id: str
    """The ID of the transaction. (versions 0+)"""

    group_id: str
    """The ID of the group. (versions 0+)"""

    producer_id: int
    """The current producer ID in use by the transactional ID. (versions 0+)"""

    producer_epoch: int
    """The current epoch associated with the producer ID. (versions 0+)"""

    generation_id: int
    """The generation of the consumer. (versions 3+; default -1)"""

    member_id: str
    """The member ID assigned by the group coordinator. (versions 3+; default "")"""

    group_instance_id: str | None
    """The unique identifier of the consumer instance provided by end user. (versions 3+; nullable 3+; default null)"""

    topics: list[TxnOffsetCommitRequestTopic]
    """Each topic that we want to commit offsets for. (versions 0+)"""


class TxnOffsetCommitRequestTopic(TypedDict, total=False):
    """An element of ``TxnOffsetCommitRequestData.topics``: Each topic that we want to commit offsets for."""

    name: str
    """The topic name. (versions 0+)"""

    partitions: list[TxnOffsetCommitRequestPartition]
    """The partitions inside the topic that we want to commit offsets for. (versions 0+)"""


class TxnOffsetCommitRequestPartition(TypedDict, total=False):
    """An element of ``TxnOffsetCommitRequestTopic.partitions``: The partitions inside the topic that we want to commit offsets for."""

    partition_index: int
    """The index of the partition within the topic. (versions 0+)"""

    committed_offset: int
    """The message offset to be committed. (versions 0+)"""

    committed_leader_epoch: int
    """The leader epoch of the last consumed record. (versions 2+; default -1)"""

    committed_metadata: str | None
    """Any associated metadata the client wants to keep. (versions 0+; nullable 0+)"""


class TxnOffsetCommitResponseData(TypedDict, total=False):
    """TxnOffsetCommitResponse (API key 28): versions 0-5, flexible from 3."""

    throttle_time_ms: int
    """The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the request did not violate any quota. (versions 0+)"""

    topics: list[TxnOffsetCommitResponseTopic]
    """The responses for each topic. (versions 0+)"""


class TxnOffsetCommitResponseTopic(TypedDict, total=False):
    """An element of ``TxnOffsetCommitResponseData.topics``: The responses for each topic."""

    name: str
    """The topic name. (versions 0+)"""

    partitions: list[TxnOffsetCommitResponsePartition]
    """The responses for each partition in the topic. (versions 0+)"""


class TxnOffsetCommitResponsePartition(TypedDict, total=False):
    """An element of ``TxnOffsetCommitResponseTopic.partitions``: The responses for each partition in the topic."""

    partition_index: int
    """The partition index. (versions 0+)"""

    error_code: int
    """The error code, or 0 if there was no error. (versions 0+)"""
