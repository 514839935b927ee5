"""Share groups' records: ``__consumer_offsets`` types 10-15 and ``__share_group_state``.

Declarative schema generated from Apache Kafka's message specs by
``protocol/_schema_gen.py``; field names are snake_case of the spec names.
"""

from protocol.schema import Field as F
from protocol.schema import Message

ShareGroupMemberMetadataKey = Message(
    'ShareGroupMemberMetadataKey',
    api_key=10,
    versions=(0, 0),
    flexible_from=None,
    fields=(
        F('group_id', 'string', (0, 0)),
        F('member_id', 'string', (0, 0)),
    ),
)

ShareGroupMemberMetadataValue = Message(
    'ShareGroupMemberMetadataValue',
    api_key=10,
    versions=(0, 0),
    flexible_from=0,
    fields=(
        F('rack_id', 'string', (0, None), nullable=(0, None)),
        F('client_id', 'string', (0, None)),
        F('client_host', 'string', (0, None)),
        F('subscribed_topic_names', '[]string', (0, None)),
    ),
)

ShareGroupMetadataKey = Message(
    'ShareGroupMetadataKey',
    api_key=11,
    versions=(0, 0),
    flexible_from=None,
    fields=(
        F('group_id', 'string', (0, 0)),
    ),
)

ShareGroupMetadataValue = Message(
    'ShareGroupMetadataValue',
    api_key=11,
    versions=(0, 0),
    flexible_from=0,
    fields=(
        F('epoch', 'int32', (0, None)),
        F('metadata_hash', 'int64', (0, None)),
    ),
)

ShareGroupTargetAssignmentMetadataKey = Message(
    'ShareGroupTargetAssignmentMetadataKey',
    api_key=12,
    versions=(0, 0),
    flexible_from=None,
    fields=(
        F('group_id', 'string', (0, 0)),
    ),
)

ShareGroupTargetAssignmentMetadataValue = Message(
    'ShareGroupTargetAssignmentMetadataValue',
    api_key=12,
    versions=(0, 0),
    flexible_from=0,
    fields=(
        F('assignment_epoch', 'int32', (0, None)),
    ),
)

ShareGroupTargetAssignmentMemberKey = Message(
    'ShareGroupTargetAssignmentMemberKey',
    api_key=13,
    versions=(0, 0),
    flexible_from=None,
    fields=(
        F('group_id', 'string', (0, 0)),
        F('member_id', 'string', (0, 0)),
    ),
)

ShareGroupTargetAssignmentMemberValue = Message(
    'ShareGroupTargetAssignmentMemberValue',
    api_key=13,
    versions=(0, 0),
    flexible_from=0,
    fields=(
        F('topic_partitions', '[]struct', (0, None), fields=(
            F('topic_id', 'uuid', (0, None)),
            F('partitions', '[]int32', (0, None)),
        )),
    ),
)

ShareGroupCurrentMemberAssignmentKey = Message(
    'ShareGroupCurrentMemberAssignmentKey',
    api_key=14,
    versions=(0, 0),
    flexible_from=None,
    fields=(
        F('group_id', 'string', (0, 0)),
        F('member_id', 'string', (0, 0)),
    ),
)

ShareGroupCurrentMemberAssignmentValue = Message(
    'ShareGroupCurrentMemberAssignmentValue',
    api_key=14,
    versions=(0, 0),
    flexible_from=0,
    fields=(
        F('member_epoch', 'int32', (0, None)),
        F('previous_member_epoch', 'int32', (0, None)),
        F('state', 'int8', (0, None)),
        F('assigned_partitions', '[]struct', (0, None), fields=(
            F('topic_id', 'uuid', (0, None)),
            F('partitions', '[]int32', (0, None)),
        )),
    ),
)

ShareGroupStatePartitionMetadataKey = Message(
    'ShareGroupStatePartitionMetadataKey',
    api_key=15,
    versions=(0, 0),
    flexible_from=None,
    fields=(
        F('group_id', 'string', (0, 0)),
    ),
)

ShareGroupStatePartitionMetadataValue = Message(
    'ShareGroupStatePartitionMetadataValue',
    api_key=15,
    versions=(0, 0),
    flexible_from=0,
    fields=(
        F('initializing_topics', '[]struct', (0, None), fields=(
            F('topic_id', 'uuid', (0, None)),
            F('topic_name', 'string', (0, None)),
            F('partitions', '[]int32', (0, None)),
        )),
        F('initialized_topics', '[]struct', (0, None), fields=(
            F('topic_id', 'uuid', (0, None)),
            F('topic_name', 'string', (0, None)),
            F('partitions', '[]int32', (0, None)),
        )),
        F('deleting_topics', '[]struct', (0, None), fields=(
            F('topic_id', 'uuid', (0, None)),
            F('topic_name', 'string', (0, None)),
        )),
    ),
)

ShareSnapshotKey = Message(
    'ShareSnapshotKey',
    api_key=0,
    versions=(0, 0),
    flexible_from=None,
    fields=(
        F('group_id', 'string', (0, 0)),
        F('topic_id', 'uuid', (0, 0)),
        F('partition', 'int32', (0, 0)),
    ),
)

ShareSnapshotValue = Message(
    'ShareSnapshotValue',
    api_key=0,
    versions=(0, 0),
    flexible_from=0,
    fields=(
        F('snapshot_epoch', 'int32', (0, None)),
        F('state_epoch', 'int32', (0, None)),
        F('leader_epoch', 'int32', (0, None)),
        F('start_offset', 'int64', (0, None)),
        F('delivery_complete_count', 'int32', (0, None), tag=0, tagged=(0, None), default=-1),
        F('create_timestamp', 'int64', (0, None)),
        F('write_timestamp', 'int64', (0, None)),
        F('state_batches', '[]struct', (0, None), fields=(
            F('first_offset', 'int64', (0, None)),
            F('last_offset', 'int64', (0, None)),
            F('delivery_state', 'int8', (0, None)),
            F('delivery_count', 'int16', (0, None)),
        )),
    ),
)

ShareUpdateKey = Message(
    'ShareUpdateKey',
    api_key=1,
    versions=(0, 0),
    flexible_from=None,
    fields=(
        F('group_id', 'string', (0, 0)),
        F('topic_id', 'uuid', (0, 0)),
        F('partition', 'int32', (0, 0)),
    ),
)

ShareUpdateValue = Message(
    'ShareUpdateValue',
    api_key=1,
    versions=(0, 0),
    flexible_from=0,
    fields=(
        F('snapshot_epoch', 'int32', (0, None)),
        F('leader_epoch', 'int32', (0, None)),
        F('start_offset', 'int64', (0, None)),
        F('delivery_complete_count', 'int32', (0, None), tag=0, tagged=(0, None), default=-1),
        F('state_batches', '[]struct', (0, None), fields=(
            F('first_offset', 'int64', (0, None)),
            F('last_offset', 'int64', (0, None)),
            F('delivery_state', 'int8', (0, None)),
            F('delivery_count', 'int16', (0, None)),
        )),
    ),
)
