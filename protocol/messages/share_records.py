"""Share groups' records (``__consumer_offsets`` types 10-15 and ``__share_group_state``): the shapes of the messages, for type checkers and IDEs.

Generated from Apache Kafka's message specs by ``protocol/_schema_gen.py``, beside the codecs'
schema ``protocol/schemas/share_records.py``; do not edit.  Each ``TypedDict`` is one message or
struct; each key is documented with the spec's ``about`` text and the versions it exists in.
Every key may be left out (``total=False``): the encoder sends a missing field as its default,
as Kafka's generated message classes do.  Annotate what you build::

    body: ShareGroupMemberMetadataKeyData = {...}
"""

from __future__ import annotations

from typing import TypedDict
from uuid import UUID


class ShareGroupMemberMetadataKeyData(TypedDict, total=False):
    """ShareGroupMemberMetadataKey (record type 10): versions 0, not flexible."""

    group_id: str
    """The group id. (versions 0)"""

    member_id: str
    """The member id. (versions 0)"""


class ShareGroupMemberMetadataValueData(TypedDict, total=False):
    """ShareGroupMemberMetadataValue (record type 10): versions 0, flexible from 0."""

    rack_id: str | None
    """The (optional) rack id. (versions 0+; nullable 0+)"""

    client_id: str
    """The client id. (versions 0+)"""

    client_host: str
    """The client host. (versions 0+)"""

    subscribed_topic_names: list[str]
    """The list of subscribed topic names. (versions 0+)"""


class ShareGroupMetadataKeyData(TypedDict, total=False):
    """ShareGroupMetadataKey (record type 11): versions 0, not flexible."""

    group_id: str
    """The group id. (versions 0)"""


class ShareGroupMetadataValueData(TypedDict, total=False):
    """ShareGroupMetadataValue (record type 11): versions 0, flexible from 0."""

    epoch: int
    """The group epoch. (versions 0+)"""

    metadata_hash: int
    """The hash of all topics in the group. (versions 0+)"""


class ShareGroupTargetAssignmentMetadataKeyData(TypedDict, total=False):
    """ShareGroupTargetAssignmentMetadataKey (record type 12): versions 0, not flexible."""

    group_id: str
    """The group id. (versions 0)"""


class ShareGroupTargetAssignmentMetadataValueData(TypedDict, total=False):
    """ShareGroupTargetAssignmentMetadataValue (record type 12): versions 0, flexible from 0."""

    assignment_epoch: int
    """The assignment epoch. (versions 0+)"""


class ShareGroupTargetAssignmentMemberKeyData(TypedDict, total=False):
    """ShareGroupTargetAssignmentMemberKey (record type 13): versions 0, not flexible."""

    group_id: str
    """The group id. (versions 0)"""

    member_id: str
    """The member id. (versions 0)"""


class ShareGroupTargetAssignmentMemberValueData(TypedDict, total=False):
    """ShareGroupTargetAssignmentMemberValue (record type 13): versions 0, flexible from 0."""

    topic_partitions: list[TopicPartition]
    """The assigned partitions. (versions 0+)"""


class TopicPartition(TypedDict, total=False):
    """An element of ``ShareGroupTargetAssignmentMemberValueData.topic_partitions``: The assigned partitions."""

    topic_id: UUID
    """The topic id. (versions 0+)"""

    partitions: list[int]
    """The partition indexes. (versions 0+)"""


class ShareGroupCurrentMemberAssignmentKeyData(TypedDict, total=False):
    """ShareGroupCurrentMemberAssignmentKey (record type 14): versions 0, not flexible."""

    group_id: str
    """The group id. (versions 0)"""

    member_id: str
    """The member id. (versions 0)"""


class ShareGroupCurrentMemberAssignmentValueData(TypedDict, total=False):
    """ShareGroupCurrentMemberAssignmentValue (record type 14): versions 0, flexible from 0."""

    member_epoch: int
    """The current member epoch that is expected from the member in the heartbeat request. (versions 0+)"""

    previous_member_epoch: int
    """If the last epoch bump is lost before reaching the member, the member will retry with the previous epoch. (versions 0+)"""

    state: int
    """The member state. See MemberState for the possible values. (versions 0+)"""

    assigned_partitions: list[TopicPartitions]
    """The partitions assigned to (or owned by) this member. (versions 0+)"""


class TopicPartitions(TypedDict, total=False):
    """An element of ``ShareGroupCurrentMemberAssignmentValueData.assigned_partitions``: The partitions assigned to (or owned by) this member."""

    topic_id: UUID
    """The topic Id. (versions 0+)"""

    partitions: list[int]
    """The partition Ids. (versions 0+)"""


class ShareGroupStatePartitionMetadataKeyData(TypedDict, total=False):
    """ShareGroupStatePartitionMetadataKey (record type 15): versions 0, not flexible."""

    group_id: str
    """The group id. (versions 0)"""


class ShareGroupStatePartitionMetadataValueData(TypedDict, total=False):
    """ShareGroupStatePartitionMetadataValue (record type 15): versions 0, flexible from 0."""

    initializing_topics: list[TopicPartitionsInfo]
    """The topic-partitions whose share-group state is being initialized. (versions 0+)"""

    initialized_topics: list[TopicPartitionsInfo]
    """The topics with initialized share-group state. (versions 0+)"""

    deleting_topics: list[TopicInfo]
    """The topics whose share-group state is being deleted. (versions 0+)"""


class TopicPartitionsInfo(TypedDict, total=False):
    """An element of ``ShareGroupStatePartitionMetadataValueData.initializing_topics``: The topic-partitions whose share-group state is being initialized."""

    topic_id: UUID
    """The topic identifier. (versions 0+)"""

    topic_name: str
    """The topic name. (versions 0+)"""

    partitions: list[int]
    """The partitions. (versions 0+)"""


class TopicInfo(TypedDict, total=False):
    """An element of ``ShareGroupStatePartitionMetadataValueData.deleting_topics``: The topics whose share-group state is being deleted."""

    topic_id: UUID
    """The topic identifier. (versions 0+)"""

    topic_name: str
    """The topic name. (versions 0+)"""


class ShareSnapshotKeyData(TypedDict, total=False):
    """ShareSnapshotKey (record type 0): versions 0, not flexible."""

    group_id: str
    """The group id. (versions 0)"""

    topic_id: UUID
    """The topic id. (versions 0)"""

    partition: int
    """The partition index. (versions 0)"""


class ShareSnapshotValueData(TypedDict, total=False):
    """ShareSnapshotValue (record type 0): versions 0, flexible from 0."""

    snapshot_epoch: int
    """The snapshot epoch. (versions 0+)"""

    state_epoch: int
    """The state epoch for this share-partition. (versions 0+)"""

    leader_epoch: int
    """The leader epoch of the share-partition. (versions 0+)"""

    start_offset: int
    """The share-partition start offset. (versions 0+)"""

    delivery_complete_count: int
    """The number of offsets greater than or equal to share-partition start offset for which delivery has been completed. (versions 0+; tagged 0+ as tag 0; default -1)"""

    create_timestamp: int
    """The time at which the state was created. (versions 0+)"""

    write_timestamp: int
    """The time at which the state was written or rewritten. (versions 0+)"""

    state_batches: list[StateBatch]
    """The state batches. (versions 0+)"""


class StateBatch(TypedDict, total=False):
    """An element of ``ShareSnapshotValueData.state_batches``: The state batches."""

    first_offset: int
    """The first offset of this state batch. (versions 0+)"""

    last_offset: int
    """The last offset of this state batch. (versions 0+)"""

    delivery_state: int
    """The delivery state - 0:Available,2:Acked,4:Archived. (versions 0+)"""

    delivery_count: int
    """The delivery count. (versions 0+)"""


class ShareUpdateKeyData(TypedDict, total=False):
    """ShareUpdateKey (record type 1): versions 0, not flexible."""

    group_id: str
    """The group id. (versions 0)"""

    topic_id: UUID
    """The topic id. (versions 0)"""

    partition: int
    """The partition index. (versions 0)"""


class ShareUpdateValueData(TypedDict, total=False):
    """ShareUpdateValue (record type 1): versions 0, flexible from 0."""

    snapshot_epoch: int
    """The snapshot epoch. (versions 0+)"""

    leader_epoch: int
    """The leader epoch of the share-partition. (versions 0+)"""

    start_offset: int
    """The share-partition start offset, or -1 if the start offset is not being updated. (versions 0+)"""

    delivery_complete_count: int
    """The number of offsets greater than or equal to share-partition start offset for which delivery has been completed. (versions 0+; tagged 0+ as tag 0; default -1)"""

    state_batches: list[StateBatch]
    """The state batches that have been updated. (versions 0+)"""
