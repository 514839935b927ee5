"""Headers, the consumer embedded protocol and the coordinators' records: the shapes of the messages, for type checkers and IDEs.

Generated from Apache Kafka's message specs by ``protocol/_schema_gen.py``, beside the codecs'
schema ``protocol/schemas/misc.py``; do not edit.  Each ``TypedDict`` is one message or
struct; each key is documented with the spec's ``about`` text and the versions it exists in.
Every key may be left out (``total=False``): the encoder sends a missing field as its default,
as Kafka's generated message classes do.  Annotate what you build::

    body: RequestHeaderData = {...}
"""

from __future__ import annotations

from typing import TypedDict
from uuid import UUID

from protocol.messages import Bytes


class RequestHeaderData(TypedDict, total=False):
    """RequestHeader: versions 1-2, flexible from 2."""

    request_api_key: int
    """The API key of this request. (versions 0+)"""

    request_api_version: int
    """The API version of this request. (versions 0+)"""

    correlation_id: int
    """The correlation ID of this request. (versions 0+)"""

    client_id: str | None
    """The client ID string. (versions 1+; nullable 1+)"""


class ResponseHeaderData(TypedDict, total=False):
    """ResponseHeader: versions 0-1, flexible from 1."""

    correlation_id: int
    """The correlation ID of this response. (versions 0+)"""


class ConsumerProtocolSubscriptionData(TypedDict, total=False):
    """ConsumerProtocolSubscription: versions 0-3, not flexible."""

    topics: list[str]
    """The topics that the member wants to consume. (versions 0+)"""

    user_data: Bytes | None
    """User data that will be passed back to the consumer. (versions 0+; nullable 0+; default null)"""

    owned_partitions: list[ConsumerProtocolSubscriptionTopicPartition]
    """The partitions that the member owns. (versions 1+)"""

    generation_id: int
    """The generation id of the member. (versions 2+; default -1)"""

    rack_id: str | None
    """The rack id of the member. (versions 3+; nullable 3+; default null)"""


class ConsumerProtocolSubscriptionTopicPartition(TypedDict, total=False):
    """An element of ``ConsumerProtocolSubscriptionData.owned_partitions``: The partitions that the member owns."""

    topic: str
    """The topic name. (versions 1+)"""

    partitions: list[int]
    """The partition ids. (versions 1+)"""


class ConsumerProtocolAssignmentData(TypedDict, total=False):
    """ConsumerProtocolAssignment: versions 0-3, not flexible."""

    assigned_partitions: list[ConsumerProtocolAssignmentTopicPartition]
    """The list of topics and partitions assigned to this consumer. (versions 0+)"""

    user_data: Bytes | None
    """User data. (versions 0+; nullable 0+; default null)"""


class ConsumerProtocolAssignmentTopicPartition(TypedDict, total=False):
    """An element of ``ConsumerProtocolAssignmentData.assigned_partitions``: The list of topics and partitions assigned to this consumer."""

    topic: str
    """The topic name. (versions 0+)"""

    partitions: list[int]
    """The list of partitions assigned to this consumer. (versions 0+)"""


class OffsetCommitKeyData(TypedDict, total=False):
    """OffsetCommitKey (record type 1): versions 0, not flexible."""

    group: str
    """The consumer group id. (versions 0)"""

    topic: str
    """The topic name. (versions 0)"""

    partition: int
    """The topic partition index. (versions 0)"""


class OffsetCommitValueData(TypedDict, total=False):
    """OffsetCommitValue (record type 1): versions 0-4, flexible from 4."""

    offset: int
    """The offset that the consumer wants to store (for this partition). (versions 0+)"""

    leader_epoch: int
    """The leader epoch of the last consumed record. (versions 3+; default -1)"""

    metadata: str
    """Any metadata the client wants to keep. (versions 0+)"""

    commit_timestamp: int
    """The time at which the commit was added to the log. (versions 0+)"""

    expire_timestamp: int
    """The time at which the offset will expire. (versions 1; default -1)"""


class GroupMetadataKeyData(TypedDict, total=False):
    """GroupMetadataKey (record type 2): versions 0, not flexible."""

    group: str
    """The group id. (versions 0)"""


class GroupMetadataValueData(TypedDict, total=False):
    """GroupMetadataValue (record type 2): versions 0-4, flexible from 4."""

    protocol_type: str
    """The protocol type. (versions 0+)"""

    generation: int
    """The generation id. (versions 0+)"""

    protocol: str | None
    """The protocol name. (versions 0+; nullable 0+)"""

    leader: str | None
    """The leader id. (versions 0+; nullable 0+)"""

    current_state_timestamp: int
    """The timestamp of the last state change. (versions 2+; default -1)"""

    members: list[MemberMetadata]
    """The group members. (versions 0+)"""


class MemberMetadata(TypedDict, total=False):
    """An element of ``GroupMetadataValueData.members``: The group members."""

    member_id: str
    """The member id. (versions 0+)"""

    group_instance_id: str | None
    """The group instance id. (versions 3+; nullable 3+; default null)"""

    client_id: str
    """The client id. (versions 0+)"""

    client_host: str
    """The client host. (versions 0+)"""

    rebalance_timeout: int
    """The rebalance timeout. (versions 1+; default -1)"""

    session_timeout: int
    """The session timeout. (versions 0+)"""

    subscription: Bytes
    """The subscription. (versions 0+)"""

    assignment: Bytes
    """The assignment. (versions 0+)"""


class ConsumerGroupMetadataKeyData(TypedDict, total=False):
    """ConsumerGroupMetadataKey (record type 3): versions 0, not flexible."""

    group_id: str
    """The group id. (versions 0)"""


class ConsumerGroupMetadataValueData(TypedDict, total=False):
    """ConsumerGroupMetadataValue (record type 3): versions 0, flexible from 0."""

    epoch: int
    """The group epoch. (versions 0+)"""


class ConsumerGroupMemberMetadataKeyData(TypedDict, total=False):
    """ConsumerGroupMemberMetadataKey (record type 5): versions 0, not flexible."""

    group_id: str
    """The group id. (versions 0)"""

    member_id: str
    """The member id. (versions 0)"""


class ConsumerGroupMemberMetadataValueData(TypedDict, total=False):
    """ConsumerGroupMemberMetadataValue (record type 5): versions 0, flexible from 0."""

    instance_id: str | None
    """The (optional) instance id. (versions 0+; nullable 0+)"""

    rack_id: str | None
    """The (optional) rack id. (versions 0+; nullable 0+)"""

    client_id: str
    """The client id. (versions 0+)"""

    client_host: str
    """The client host. (versions 0+)"""

    subscribed_topic_names: list[str]
    """The list of subscribed topic names. (versions 0+)"""

    subscribed_topic_regex: str | None
    """The subscribed topic regular expression. (versions 0+; nullable 0+)"""

    rebalance_timeout_ms: int
    """The rebalance timeout. (versions 0+; default -1)"""

    server_assignor: str | None
    """The server assignor to use; or null if not used. (versions 0+; nullable 0+)"""

    classic_member_metadata: ClassicMemberMetadata | None
    """The classic member metadata which includes the supported protocols of the consumer if it uses the classic protocol. The metadata is null if the consumer uses the consumer protocol. (versions 0+; nullable 0+; tagged 0+ as tag 0; default None)"""


class ClassicMemberMetadata(TypedDict, total=False):
    """``ConsumerGroupMemberMetadataValueData.classic_member_metadata``: The classic member metadata which includes the supported protocols of the consumer if it uses the classic protocol. The metadata is null if the consumer uses the consumer protocol."""

    session_timeout_ms: int
    """The session timeout if the consumer uses the classic protocol. (versions 0+)"""

    supported_protocols: list[ClassicProtocol]
    """The list of protocols that the member supports if the consumer uses the classic protocol. (versions 0+)"""


class ClassicProtocol(TypedDict, total=False):
    """An element of ``ClassicMemberMetadata.supported_protocols``: The list of protocols that the member supports if the consumer uses the classic protocol."""

    name: str
    """The protocol name. (versions 0+)"""

    metadata: Bytes
    """The protocol metadata. (versions 0+)"""


class ConsumerGroupTargetAssignmentMetadataKeyData(TypedDict, total=False):
    """ConsumerGroupTargetAssignmentMetadataKey (record type 6): versions 0, not flexible."""

    group_id: str
    """The group id. (versions 0)"""


class ConsumerGroupTargetAssignmentMetadataValueData(TypedDict, total=False):
    """ConsumerGroupTargetAssignmentMetadataValue (record type 6): versions 0, flexible from 0."""

    assignment_epoch: int
    """The assignment epoch. (versions 0+)"""


class ConsumerGroupTargetAssignmentMemberKeyData(TypedDict, total=False):
    """ConsumerGroupTargetAssignmentMemberKey (record type 7): versions 0, not flexible."""

    group_id: str
    """The group id. (versions 0)"""

    member_id: str
    """The member id. (versions 0)"""


class ConsumerGroupTargetAssignmentMemberValueData(TypedDict, total=False):
    """ConsumerGroupTargetAssignmentMemberValue (record type 7): versions 0, flexible from 0."""

    topic_partitions: list[ConsumerGroupTargetAssignmentMemberValueTopicPartition]
    """The assigned partitions. (versions 0+)"""


class ConsumerGroupTargetAssignmentMemberValueTopicPartition(TypedDict, total=False):
    """An element of ``ConsumerGroupTargetAssignmentMemberValueData.topic_partitions``: The assigned partitions."""

    topic_id: UUID
    """The topic id. (versions 0+)"""

    partitions: list[int]
    """The partition indexes. (versions 0+)"""


class ConsumerGroupCurrentMemberAssignmentKeyData(TypedDict, total=False):
    """ConsumerGroupCurrentMemberAssignmentKey (record type 8): versions 0, not flexible."""

    group_id: str
    """The group id. (versions 0)"""

    member_id: str
    """The member id. (versions 0)"""


class ConsumerGroupCurrentMemberAssignmentValueData(TypedDict, total=False):
    """ConsumerGroupCurrentMemberAssignmentValue (record type 8): versions 0, flexible from 0."""

    member_epoch: int
    """The current member epoch that is expected from the member in the heartbeat request. (versions 0+)"""

    previous_member_epoch: int
    """If the last epoch bump is lost before reaching the member, the member will retry with the previous epoch. (versions 0+)"""

    state: int
    """The member state. See MemberState for the possible values. (versions 0+)"""

    assigned_partitions: list[TopicPartitions]
    """The partitions assigned to (or owned by) this member. (versions 0+)"""

    partitions_pending_revocation: list[TopicPartitions]
    """The partitions that must be revoked by this member. (versions 0+)"""


class TopicPartitions(TypedDict, total=False):
    """An element of ``ConsumerGroupCurrentMemberAssignmentValueData.assigned_partitions``: The partitions assigned to (or owned by) this member."""

    topic_id: UUID
    """The topic Id. (versions 0+)"""

    partitions: list[int]
    """The partition Ids. (versions 0+)"""


class ConsumerGroupPartitionMetadataKeyData(TypedDict, total=False):
    """ConsumerGroupPartitionMetadataKey (record type 4): versions 0, not flexible."""

    group_id: str
    """The group id. (versions 0)"""


class ConsumerGroupPartitionMetadataValueData(TypedDict, total=False):
    """ConsumerGroupPartitionMetadataValue (record type 4): versions 0, flexible from 0."""

    topics: list[TopicMetadata]
    """The list of topic metadata. (versions 0+)"""


class TopicMetadata(TypedDict, total=False):
    """An element of ``ConsumerGroupPartitionMetadataValueData.topics``: The list of topic metadata."""

    topic_id: UUID
    """The topic id. (versions 0+)"""

    topic_name: str
    """The topic name. (versions 0+)"""

    num_partitions: int
    """The number of partitions of the topic. (versions 0+)"""

    partition_metadata: list[PartitionMetadata]
    """Deprecated: this field is not used after 4.0. Partitions mapped to a set of racks. If the rack information is unavailable for all the partitions, an empty list is stored. (versions 0+)"""


class PartitionMetadata(TypedDict, total=False):
    """An element of ``TopicMetadata.partition_metadata``: Deprecated: this field is not used after 4.0. Partitions mapped to a set of racks. If the rack information is unavailable for all the partitions, an empty list is stored."""

    partition: int
    """The partition number. (versions 0+)"""

    racks: list[str]
    """The set of racks that the partition is mapped to. (versions 0+)"""


class ConsumerGroupRegularExpressionKeyData(TypedDict, total=False):
    """ConsumerGroupRegularExpressionKey (record type 16): versions 0, not flexible."""

    group_id: str
    """The group id. (versions 0)"""

    regular_expression: str
    """The regular expression. (versions 0)"""


class ConsumerGroupRegularExpressionValueData(TypedDict, total=False):
    """ConsumerGroupRegularExpressionValue (record type 16): versions 0, flexible from 0."""

    topics: list[str]
    """(versions 0+)"""

    version: int
    """(versions 0+)"""

    timestamp: int
    """(versions 0+)"""


class TransactionLogKeyData(TypedDict, total=False):
    """TransactionLogKey (record type 0): versions 0, not flexible."""

    transactional_id: str
    """The transactional id of the transaction. (versions 0)"""


class TransactionLogValueData(TypedDict, total=False):
    """TransactionLogValue (record type 0): versions 0-1, flexible from 1."""

    producer_id: int
    """Producer id in use by the transactional id. (versions 0+)"""

    previous_producer_id: int
    """Producer id used by the last committed transaction. (versions 1+; tagged 1+ as tag 0; default -1)"""

    next_producer_id: int
    """Latest producer ID sent to the producer for the given transactional id. (versions 1+; tagged 1+ as tag 1; default -1)"""

    producer_epoch: int
    """Epoch associated with the producer id. (versions 0+)"""

    next_producer_epoch: int
    """Producer epoch associated with the NextProducerId (versions 1+; tagged 1+ as tag 3; default -1)"""

    transaction_timeout_ms: int
    """Transaction timeout in milliseconds. (versions 0+)"""

    transaction_status: int
    """TransactionState the transaction is in. (versions 0+)"""

    transaction_partitions: list[PartitionsSchema] | None
    """Partitions involved in the transaction. (versions 0+; nullable 0+)"""

    transaction_last_update_timestamp_ms: int
    """Time the transaction was last updated. (versions 0+)"""

    transaction_start_timestamp_ms: int
    """Time the transaction was started. (versions 0+)"""

    client_transaction_version: int
    """The transaction version used by the client. (versions 1+; tagged 1+ as tag 2; default 0)"""


class PartitionsSchema(TypedDict, total=False):
    """An element of ``TransactionLogValueData.transaction_partitions``: Partitions involved in the transaction."""

    topic: str
    """Topic involved in the transaction. (versions 0+)"""

    partition_ids: list[int]
    """Partition ids involved in the transaction. (versions 0+)"""
