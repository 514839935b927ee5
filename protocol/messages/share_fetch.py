"""ShareFetch (API key 78): the shapes of the messages, for type checkers and IDEs.

Generated from Apache Kafka's message specs by ``protocol/_schema_gen.py``, beside the codecs'
schema ``protocol/schemas/share_fetch.py``; do not edit.  Each ``TypedDict`` is one message or
struct; each key is documented with the spec's ``about`` text and the versions it exists in.
Every key may be left out (``total=False``): the encoder sends a missing field as its default,
as Kafka's generated message classes do.  Annotate what you build::

    body: ShareFetchRequestData = {...}
"""

from __future__ import annotations

from typing import TypedDict
from uuid import UUID

from protocol.messages import Records


class ShareFetchRequestData(TypedDict, total=False):
    """ShareFetchRequest (API key 78): versions 1-2, flexible from 0."""

    group_id: str | None
    """The group identifier. (versions 0+; nullable 0+; default null)"""

    member_id: str | None
    """The member ID. (versions 0+; nullable 0+)"""

    share_session_epoch: int
    """The current share session epoch: 0 to open a share session; -1 to close it; otherwise increments for consecutive requests. (versions 0+)"""

    max_wait_ms: int
    """The maximum time in milliseconds to wait for the response. (versions 0+)"""

    min_bytes: int
    """The minimum bytes to accumulate in the response. (versions 0+)"""

    max_bytes: int
    """The maximum bytes to fetch. See KIP-74 for cases where this limit may not be honored. (versions 0+; default 0x7fffffff)"""

    max_records: int
    """The maximum number of records to fetch. This limit can be exceeded for alignment of batch boundaries. (versions 1+)"""

    batch_size: int
    """The optimal number of records for batches of acquired records and acknowledgements. (versions 1+)"""

    share_acquire_mode: int
    """The acquire mode to control the fetch behavior - 0:batch-optimized,1:record-limit. (versions 2+; default 0)"""

    is_renew_ack: bool
    """Whether Renew type acknowledgements present in AcknowledgementBatches. (versions 2+; default false)"""

    topics: list[FetchTopic]
    """The topics to fetch. (versions 0+)"""

    forgotten_topics_data: list[ForgottenTopic]
    """The partitions to remove from this share session. (versions 0+)"""


class FetchTopic(TypedDict, total=False):
    """An element of ``ShareFetchRequestData.topics``: The topics to fetch."""

    topic_id: UUID
    """The unique topic ID. (versions 0+)"""

    partitions: list[FetchPartition]
    """The partitions to fetch. (versions 0+)"""


class ForgottenTopic(TypedDict, total=False):
    """An element of ``ShareFetchRequestData.forgotten_topics_data``: The partitions to remove from this share session."""

    topic_id: UUID
    """The unique topic ID. (versions 0+)"""

    partitions: list[int]
    """The partitions indexes to forget. (versions 0+)"""


class FetchPartition(TypedDict, total=False):
    """An element of ``FetchTopic.partitions``: The partitions to fetch."""

    partition_index: int
    """The partition index. (versions 0+)"""

    partition_max_bytes: int
    """The maximum bytes to fetch from this partition. 0 when only acknowledgement with no fetching is required. See KIP-74 for cases where this limit may not be honored. (versions 0)"""

    acknowledgement_batches: list[AcknowledgementBatch]
    """Record batches to acknowledge. (versions 0+)"""


class AcknowledgementBatch(TypedDict, total=False):
    """An element of ``FetchPartition.acknowledgement_batches``: Record batches to acknowledge."""

    first_offset: int
    """First offset of batch of records to acknowledge. (versions 0+)"""

    last_offset: int
    """Last offset (inclusive) of batch of records to acknowledge. (versions 0+)"""

    acknowledge_types: list[int]
    """Array of acknowledge types - 0:Gap,1:Accept,2:Release,3:Reject,4:Renew. (versions 0+)"""


class ShareFetchResponseData(TypedDict, total=False):
    """ShareFetchResponse (API key 78): versions 1-2, flexible from 0."""

    throttle_time_ms: int
    """The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the request did not violate any quota. (versions 0+)"""

    error_code: int
    """The top-level response error code. (versions 0+)"""

    error_message: str | None
    """The top-level error message, or null if there was no error. (versions 0+; nullable 0+; default null)"""

    acquisition_lock_timeout_ms: int
    """The time in milliseconds for which the acquired records are locked. (versions 1+)"""

    responses: list[ShareFetchableTopicResponse]
    """The response topics. (versions 0+)"""

    node_endpoints: list[NodeEndpoint]
    """Endpoints for all current leaders enumerated in PartitionData with error NOT_LEADER_OR_FOLLOWER. (versions 0+)"""


class ShareFetchableTopicResponse(TypedDict, total=False):
    """An element of ``ShareFetchResponseData.responses``: The response topics."""

    topic_id: UUID
    """The unique topic ID. (versions 0+)"""

    partitions: list[PartitionData]
    """The topic partitions. (versions 0+)"""


class NodeEndpoint(TypedDict, total=False):
    """An element of ``ShareFetchResponseData.node_endpoints``: Endpoints for all current leaders enumerated in PartitionData with error NOT_LEADER_OR_FOLLOWER."""

    node_id: int
    """The ID of the associated node. (versions 0+)"""

    host: str
    """The node's hostname. (versions 0+)"""

    port: int
    """The node's port. (versions 0+)"""

    rack: str | None
    """The rack of the node, or null if it has not been assigned to a rack. (versions 0+; nullable 0+; default null)"""


class PartitionData(TypedDict, total=False):
    """An element of ``ShareFetchableTopicResponse.partitions``: The topic partitions."""

    partition_index: int
    """The partition index. (versions 0+)"""

    error_code: int
    """The fetch error code, or 0 if there was no fetch error. (versions 0+)"""

    error_message: str | None
    """The fetch error message, or null if there was no fetch error. (versions 0+; nullable 0+; default null)"""

    acknowledge_error_code: int
    """The acknowledge error code, or 0 if there was no acknowledge error. (versions 0+)"""

    acknowledge_error_message: str | None
    """The acknowledge error message, or null if there was no acknowledge error. (versions 0+; nullable 0+; default null)"""

    current_leader: LeaderIdAndEpoch
    """The current leader of the partition. (versions 0+)"""

    records: Records | None
    """The record data. (versions 0+; nullable 0)"""

    acquired_records: list[AcquiredRecords]
    """The acquired records. (versions 0+)"""


class LeaderIdAndEpoch(TypedDict, total=False):
    """``PartitionData.current_leader``: The current leader of the partition."""

    leader_id: int
    """The ID of the current leader or -1 if the leader is unknown. (versions 0+)"""

    leader_epoch: int
    """The latest known leader epoch. (versions 0+)"""


class AcquiredRecords(TypedDict, total=False):
    """An element of ``PartitionData.acquired_records``: The acquired records."""

    first_offset: int
    """The earliest offset in this batch of acquired records. (versions 0+)"""

    last_offset: int
    """The last offset of this batch of acquired records. (versions 0+)"""

    delivery_count: int
    """The delivery count of this batch of acquired records. (versions 0+)"""
