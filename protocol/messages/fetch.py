"""Fetch (API key 1): the shapes of the messages, for type checkers and IDEs.

Generated from Apache Kafka's message specs by ``protocol/_schema_gen.py``, beside the codecs'
schema ``protocol/schemas/fetch.py``; do not edit.  Each ``TypedDict`` is one message or
struct; each key is documented with the spec's ``about`` text and the versions it exists in.
Every key may be left out (``total=False``): the encoder sends a missing field as its default,
as Kafka's generated message classes do.  Annotate what you build::

    body: FetchRequestData = {...}
"""

from __future__ import annotations

from typing import TypedDict
from uuid import UUID

from protocol.messages import Records


class FetchRequestData(TypedDict, total=False):
    """FetchRequest (API key 1): versions 4-17, flexible from 12."""

    cluster_id: str | None
    """The clusterId if known. This is used to validate metadata fetches prior to broker registration. (versions 12+; nullable 12+; tagged 12+ as tag 0; default null)"""

    replica_id: int
    """The broker ID of the follower, of -1 if this request is from a consumer. (versions 0-14; default -1)"""

    replica_state: ReplicaState
    """The state of the replica in the follower. (versions 15+; tagged 15+ as tag 1)"""

    max_wait_ms: int
    """The maximum time in milliseconds to wait for the response. (versions 0+)"""

    min_bytes: int
    """The minimum bytes to accumulate in the response. (versions 0+)"""

    max_bytes: int
    """The maximum bytes to fetch. See KIP-74 for cases where this limit may not be honored. (versions 3+; default 0x7fffffff)"""

    isolation_level: int
    """This setting controls the visibility of transactional records. Using READ_UNCOMMITTED (isolation_level = 0) makes all records visible. With READ_COMMITTED (isolation_level = 1), non-transactional and COMMITTED transactional records are visible. To be more concrete, READ_COMMITTED returns all data from offsets smaller than the current LSO (last stable offset), and enables the inclusion of the list of aborted transactions in the result, which allows consumers to discard ABORTED transactional records. (versions 4+; default 0)"""

    session_id: int
    """The fetch session ID. (versions 7+; default 0)"""

    session_epoch: int
    """The fetch session epoch, which is used for ordering requests in a session. (versions 7+; default -1)"""

    topics: list[FetchTopic]
    """The topics to fetch. (versions 0+)"""

    forgotten_topics_data: list[ForgottenTopic]
    """In an incremental fetch request, the partitions to remove. (versions 7+)"""

    rack_id: str
    """Rack ID of the consumer making this request. (versions 11+; default "")"""


class ReplicaState(TypedDict, total=False):
    """``FetchRequestData.replica_state``: The state of the replica in the follower."""

    replica_id: int
    """The replica ID of the follower, or -1 if this request is from a consumer. (versions 15+; default -1)"""

    replica_epoch: int
    """The epoch of this follower, or -1 if not available. (versions 15+; default -1)"""


class FetchTopic(TypedDict, total=False):
    """An element of ``FetchRequestData.topics``: The topics to fetch."""

    topic: str
    """The name of the topic to fetch. (versions 0-12)"""

    topic_id: UUID
    """The unique topic ID. (versions 13+)"""

    partitions: list[FetchPartition]
    """The partitions to fetch. (versions 0+)"""


class ForgottenTopic(TypedDict, total=False):
    """An element of ``FetchRequestData.forgotten_topics_data``: In an incremental fetch request, the partitions to remove."""

    topic: str
    """The topic name. (versions 7-12)"""

    topic_id: UUID
    """The unique topic ID. (versions 13+)"""

    partitions: list[int]
    """The partitions indexes to forget. (versions 7+)"""


class FetchPartition(TypedDict, total=False):
    """An element of ``FetchTopic.partitions``: The partitions to fetch."""

    partition: int
    """The partition index. (versions 0+)"""

    current_leader_epoch: int
    """The current leader epoch of the partition. (versions 9+; default -1)"""

    fetch_offset: int
    """The message offset. (versions 0+)"""

    last_fetched_epoch: int
    """The epoch of the last fetched record or -1 if there is none. (versions 12+; default -1)"""

    log_start_offset: int
    """The earliest available offset of the follower replica. The field is only used when the request is sent by the follower. (versions 5+; default -1)"""

    partition_max_bytes: int
    """The maximum bytes to fetch from this partition. See KIP-74 for cases where this limit may not be honored. (versions 0+)"""

    replica_directory_id: UUID
    """The directory id of the follower fetching. (versions 17+; tagged 17+ as tag 0)"""


class FetchResponseData(TypedDict, total=False):
    """FetchResponse (API key 1): versions 4-17, flexible from 12."""

    throttle_time_ms: int
    """The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the request did not violate any quota. (versions 1+)"""

    error_code: int
    """The top level response error code. (versions 7+)"""

    session_id: int
    """The fetch session ID, or 0 if this is not part of a fetch session. (versions 7+; default 0)"""

    responses: list[FetchableTopicResponse]
    """The response topics. (versions 0+)"""

    node_endpoints: list[NodeEndpoint]
    """Endpoints for all current-leaders enumerated in PartitionData, with errors NOT_LEADER_OR_FOLLOWER & FENCED_LEADER_EPOCH. (versions 16+; tagged 16+ as tag 0)"""


class FetchableTopicResponse(TypedDict, total=False):
    """An element of ``FetchResponseData.responses``: The response topics."""

    topic: str
    """The topic name. (versions 0-12)"""

    topic_id: UUID
    """The unique topic ID. (versions 13+)"""

    partitions: list[PartitionData]
    """The topic partitions. (versions 0+)"""


class NodeEndpoint(TypedDict, total=False):
    """An element of ``FetchResponseData.node_endpoints``: Endpoints for all current-leaders enumerated in PartitionData, with errors NOT_LEADER_OR_FOLLOWER & FENCED_LEADER_EPOCH."""

    node_id: int
    """The ID of the associated node. (versions 16+)"""

    host: str
    """The node's hostname. (versions 16+)"""

    port: int
    """The node's port. (versions 16+)"""

    rack: str | None
    """The rack of the node, or null if it has not been assigned to a rack. (versions 16+; nullable 16+; default null)"""


class PartitionData(TypedDict, total=False):
    """An element of ``FetchableTopicResponse.partitions``: The topic partitions."""

    partition_index: int
    """The partition index. (versions 0+)"""

    error_code: int
    """The error code, or 0 if there was no fetch error. (versions 0+)"""

    high_watermark: int
    """The current high water mark. (versions 0+)"""

    last_stable_offset: int
    """The last stable offset (or LSO) of the partition. This is the last offset such that the state of all transactional records prior to this offset have been decided (ABORTED or COMMITTED). (versions 4+; default -1)"""

    log_start_offset: int
    """The current log start offset. (versions 5+; default -1)"""

    diverging_epoch: EpochEndOffset
    """In case divergence is detected based on the `LastFetchedEpoch` and `FetchOffset` in the request, this field indicates the largest epoch and its end offset such that subsequent records are known to diverge. (versions 12+; tagged 12+ as tag 0)"""

    current_leader: LeaderIdAndEpoch
    """The current leader of the partition. (versions 12+; tagged 12+ as tag 1)"""

    snapshot_id: SnapshotId
    """In the case of fetching an offset less than the LogStartOffset, this is the end offset and epoch that should be used in the FetchSnapshot request. (versions 12+; tagged 12+ as tag 2)"""

    aborted_transactions: list[AbortedTransaction] | None
    """The aborted transactions. (versions 4+; nullable 4+)"""

    preferred_read_replica: int
    """The preferred read replica for the consumer to use on its next fetch request. (versions 11+; default -1)"""

    records: Records
    """The record data. (versions 0+)"""


class EpochEndOffset(TypedDict, total=False):
    """``PartitionData.diverging_epoch``: In case divergence is detected based on the `LastFetchedEpoch` and `FetchOffset` in the request, this field indicates the largest epoch and its end offset such that subsequent records are known to diverge."""

    epoch: int
    """The largest epoch. (versions 12+; default -1)"""

    end_offset: int
    """The end offset of the epoch. (versions 12+; default -1)"""


class LeaderIdAndEpoch(TypedDict, total=False):
    """``PartitionData.current_leader``: The current leader of the partition."""

    leader_id: int
    """The ID of the current leader or -1 if the leader is unknown. (versions 12+; default -1)"""

    leader_epoch: int
    """The latest known leader epoch. (versions 12+; default -1)"""


class SnapshotId(TypedDict, total=False):
    """``PartitionData.snapshot_id``: In the case of fetching an offset less than the LogStartOffset, this is the end offset and epoch that should be used in the FetchSnapshot request."""

    end_offset: int
    """The end offset of the epoch. (versions 0+; default -1)"""

    epoch: int
    """The largest epoch. (versions 0+; default -1)"""


class AbortedTransaction(TypedDict, total=False):
    """An element of ``PartitionData.aborted_transactions``: The aborted transactions."""

    producer_id: int
    """The producer id associated with the aborted transaction. (versions 4+)"""

    first_offset: int
    """The first offset in the aborted transaction. (versions 4+)"""
