"""ShareAcknowledge (API key 79): the shapes of the messages, for type checkers and IDEs.

Generated from Apache Kafka's message specs by ``protocol/_schema_gen.py``, beside the codecs'
schema ``protocol/schemas/share_acknowledge.py``; do not edit.  Each ``TypedDict`` is one message or
struct; each key is documented with the spec's ``about`` text and the versions it exists in.
Every key may be left out (``total=False``): the encoder sends a missing field as its default,
as Kafka's generated message classes do.  Annotate what you build::

    body: ShareAcknowledgeRequestData = {...}
"""

from __future__ import annotations

from typing import TypedDict
from uuid import UUID


class ShareAcknowledgeRequestData(TypedDict, total=False):
    """ShareAcknowledgeRequest (API key 79): versions 1-2, flexible from 0."""

    group_id: str | None
    """The group identifier. (versions 0+; nullable 0+; default null)"""

    member_id: str | None
    """The member ID. (versions 0+; nullable 0+)"""

    share_session_epoch: int
    """The current share session epoch: 0 to open a share session; -1 to close it; otherwise increments for consecutive requests. (versions 0+)"""

    is_renew_ack: bool
    """Whether Renew type acknowledgements present in AcknowledgementBatches. (versions 2+; default false)"""

    topics: list[AcknowledgeTopic]
    """The topics containing records to acknowledge. (versions 0+)"""


class AcknowledgeTopic(TypedDict, total=False):
    """An element of ``ShareAcknowledgeRequestData.topics``: The topics containing records to acknowledge."""

    topic_id: UUID
    """The unique topic ID. (versions 0+)"""

    partitions: list[AcknowledgePartition]
    """The partitions containing records to acknowledge. (versions 0+)"""


class AcknowledgePartition(TypedDict, total=False):
    """An element of ``AcknowledgeTopic.partitions``: The partitions containing records to acknowledge."""

    partition_index: int
    """The partition index. (versions 0+)"""

    acknowledgement_batches: list[AcknowledgementBatch]
    """Record batches to acknowledge. (versions 0+)"""


class AcknowledgementBatch(TypedDict, total=False):
    """An element of ``AcknowledgePartition.acknowledgement_batches``: Record batches to acknowledge."""

    first_offset: int
    """First offset of batch of records to acknowledge. (versions 0+)"""

    last_offset: int
    """Last offset (inclusive) of batch of records to acknowledge. (versions 0+)"""

    acknowledge_types: list[int]
    """Array of acknowledge types - 0:Gap,1:Accept,2:Release,3:Reject,4:Renew. (versions 0+)"""


class ShareAcknowledgeResponseData(TypedDict, total=False):
    """ShareAcknowledgeResponse (API key 79): versions 1-2, flexible from 0."""

    throttle_time_ms: int
    """The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the request did not violate any quota. (versions 0+)"""

    error_code: int
    """The top level response error code. (versions 0+)"""

    error_message: str | None
    """The top-level error message, or null if there was no error. (versions 0+; nullable 0+; default null)"""

    acquisition_lock_timeout_ms: int
    """The time in milliseconds for which the acquired records are locked. (versions 2+)"""

    responses: list[ShareAcknowledgeTopicResponse]
    """The response topics. (versions 0+)"""

    node_endpoints: list[NodeEndpoint]
    """Endpoints for all current leaders enumerated in PartitionData with error NOT_LEADER_OR_FOLLOWER. (versions 0+)"""


class ShareAcknowledgeTopicResponse(TypedDict, total=False):
    """An element of ``ShareAcknowledgeResponseData.responses``: The response topics."""

    topic_id: UUID
    """The unique topic ID. (versions 0+)"""

    partitions: list[PartitionData]
    """The topic partitions. (versions 0+)"""


class NodeEndpoint(TypedDict, total=False):
    """An element of ``ShareAcknowledgeResponseData.node_endpoints``: Endpoints for all current leaders enumerated in PartitionData with error NOT_LEADER_OR_FOLLOWER."""

    node_id: int
    """The ID of the associated node. (versions 0+)"""

    host: str
    """The node's hostname. (versions 0+)"""

    port: int
    """The node's port. (versions 0+)"""

    rack: str | None
    """The rack of the node, or null if it has not been assigned to a rack. (versions 0+; nullable 0+; default null)"""


class PartitionData(TypedDict, total=False):
    """An element of ``ShareAcknowledgeTopicResponse.partitions``: The topic partitions."""

    partition_index: int
    """The partition index. (versions 0+)"""

    error_code: int
    """The error code, or 0 if there was no error. (versions 0+)"""

    error_message: str | None
    """The error message, or null if there was no error. (versions 0+; nullable 0+; default null)"""

    current_leader: LeaderIdAndEpoch
    """The current leader of the partition. (versions 0+)"""


class LeaderIdAndEpoch(TypedDict, total=False):
    """``PartitionData.current_leader``: The current leader of the partition."""

    leader_id: int
    """The ID of the current leader or -1 if the leader is unknown. (versions 0+)"""

    leader_epoch: int
    """The latest known leader epoch. (versions 0+)"""
