"""Headers, the consumer embedded protocol and `__consumer_offsets` records.

Declarative schema generated from Apache Kafka's message specs by
``protocol/_schema_gen.py``; field names are snake_case of the spec names.
"""

from protocol.schema import Field as F
from protocol.schema import Message

RequestHeader = Message(
    'RequestHeader',
    versions=(1, 2),
    flexible_from=2,
    fields=(
        F('request_api_key', 'int16', (0, None)),
        F('request_api_version', 'int16', (0, None)),
        F('correlation_id', 'int32', (0, None)),
        F('client_id', 'string', (1, None), nullable=(1, None), flexible=False),
    ),
)

ResponseHeader = Message(
    'ResponseHeader',
    versions=(0, 1),
    flexible_from=1,
    fields=(
        F('correlation_id', 'int32', (0, None)),
    ),
)

ConsumerProtocolSubscription = Message(
    'ConsumerProtocolSubscription',
    versions=(0, 3),
    flexible_from=None,
    fields=(
        F('topics', '[]string', (0, None)),
        F('user_data', 'bytes', (0, None), nullable=(0, None), default=None),
        F('owned_partitions', '[]struct', (1, None), fields=(
            F('topic', 'string', (1, None)),
            F('partitions', '[]int32', (1, None)),
        )),
        F('generation_id', 'int32', (2, None), default=-1),
        F('rack_id', 'string', (3, None), nullable=(3, None), default=None),
    ),
)

ConsumerProtocolAssignment = Message(
    'ConsumerProtocolAssignment',
    versions=(0, 3),
    flexible_from=None,
    fields=(
        F('assigned_partitions', '[]struct', (0, None), fields=(
            F('topic', 'string', (0, None)),
            F('partitions', '[]int32', (0, None)),
        )),
        F('user_data', 'bytes', (0, None), nullable=(0, None), default=None),
    ),
)

OffsetCommitKey = Message(
    'OffsetCommitKey',
    api_key=1,
    versions=(0, 0),
    flexible_from=None,
    fields=(
        F('group', 'string', (0, 0)),
        F('topic', 'string', (0, 0)),
        F('partition', 'int32', (0, 0)),
    ),
)

OffsetCommitValue = Message(
    'OffsetCommitValue',
    api_key=1,
    versions=(0, 4),
    flexible_from=4,
    fields=(
        F('offset', 'int64', (0, None)),
        F('leader_epoch', 'int32', (3, None), default=-1),
        F('metadata', 'string', (0, None)),
        F('commit_timestamp', 'int64', (0, None)),
        F('expire_timestamp', 'int64', (1, 1), default=-1),
    ),
)

GroupMetadataKey = Message(
    'GroupMetadataKey',
    api_key=2,
    versions=(0, 0),
    flexible_from=None,
    fields=(
        F('group', 'string', (0, 0)),
    ),
)

GroupMetadataValue = Message(
    'GroupMetadataValue',
    api_key=2,
    versions=(0, 4),
    flexible_from=4,
    fields=(
        F('protocol_type', 'string', (0, None)),
        F('generation', 'int32', (0, None)),
        F('protocol', 'string', (0, None), nullable=(0, None)),
        F('leader', 'string', (0, None), nullable=(0, None)),
        F('current_state_timestamp', 'int64', (2, None), default=-1),
        F('members', '[]struct', (0, None), fields=(
            F('member_id', 'string', (0, None)),
            F('group_instance_id', 'string', (3, None), nullable=(3, None), default=None),
            F('client_id', 'string', (0, None)),
            F('client_host', 'string', (0, None)),
            F('rebalance_timeout', 'int32', (1, None), default=-1),
            F('session_timeout', 'int32', (0, None)),
            F('subscription', 'bytes', (0, None)),
            F('assignment', 'bytes', (0, None)),
        )),
    ),
)

ConsumerGroupMetadataKey = Message(
    'ConsumerGroupMetadataKey',
    api_key=3,
    versions=(0, 0),
    flexible_from=None,
    fields=(
        F('group_id', 'string', (0, 0)),
    ),
)

ConsumerGroupMetadataValue = Message(
    'ConsumerGroupMetadataValue',
    api_key=3,
    versions=(0, 0),
    flexible_from=0,
    fields=(
        F('epoch', 'int32', (0, None)),
    ),
)

ConsumerGroupMemberMetadataKey = Message(
    'ConsumerGroupMemberMetadataKey',
    api_key=5,
    versions=(0, 0),
    flexible_from=None,
    fields=(
        F('group_id', 'string', (0, 0)),
        F('member_id', 'string', (0, 0)),
    ),
)

ConsumerGroupMemberMetadataValue = Message(
    'ConsumerGroupMemberMetadataValue',
    api_key=5,
    versions=(0, 0),
    flexible_from=0,
    fields=(
        F('instance_id', 'string', (0, None), nullable=(0, None)),
        F('rack_id', 'string', (0, None), nullable=(0, None)),
        F('client_id', 'string', (0, None)),
        F('client_host', 'string', (0, None)),
        F('subscribed_topic_names', '[]string', (0, None)),
        F('subscribed_topic_regex', 'string', (0, None), nullable=(0, None)),
        F('rebalance_timeout_ms', 'int32', (0, None), default=-1),
        F('server_assignor', 'string', (0, None), nullable=(0, None)),
        F('classic_member_metadata', 'struct', (0, None), nullable=(0, None), tag=0, tagged=(0, None), fields=(
            F('session_timeout_ms', 'int32', (0, None)),
            F('supported_protocols', '[]struct', (0, None), fields=(
                F('name', 'string', (0, None)),
                F('metadata', 'bytes', (0, None)),
            )),
        )),
    ),
)

ConsumerGroupTargetAssignmentMetadataKey = Message(
    'ConsumerGroupTargetAssignmentMetadataKey',
    api_key=6,
    versions=(0, 0),
    flexible_from=None,
    fields=(
        F('group_id', 'string', (0, 0)),
    ),
)

ConsumerGroupTargetAssignmentMetadataValue = Message(
    'ConsumerGroupTargetAssignmentMetadataValue',
    api_key=6,
    versions=(0, 0),
    flexible_from=0,
    fields=(
        F('assignment_epoch', 'int32', (0, None)),
    ),
)

ConsumerGroupTargetAssignmentMemberKey = Message(
    'ConsumerGroupTargetAssignmentMemberKey',
    api_key=7,
    versions=(0, 0),
    flexible_from=None,
    fields=(
        F('group_id', 'string', (0, 0)),
        F('member_id', 'string', (0, 0)),
    ),
)

ConsumerGroupTargetAssignmentMemberValue = Message(
    'ConsumerGroupTargetAssignmentMemberValue',
    api_key=7,
    versions=(0, 0),
    flexible_from=0,
    fields=(
        F('topic_partitions', '[]struct', (0, None), fields=(
            F('topic_id', 'uuid', (0, None)),
            F('partitions', '[]int32', (0, None)),
        )),
    ),
)

ConsumerGroupCurrentMemberAssignmentKey = Message(
    'ConsumerGroupCurrentMemberAssignmentKey',
    api_key=8,
    versions=(0, 0),
    flexible_from=None,
    fields=(
        F('group_id', 'string', (0, 0)),
        F('member_id', 'string', (0, 0)),
    ),
)

ConsumerGroupCurrentMemberAssignmentValue = Message(
    'ConsumerGroupCurrentMemberAssignmentValue',
    api_key=8,
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
        F('partitions_pending_revocation', '[]struct', (0, None), fields=(
            F('topic_id', 'uuid', (0, None)),
            F('partitions', '[]int32', (0, None)),
        )),
    ),
)

ConsumerGroupPartitionMetadataKey = Message(
    'ConsumerGroupPartitionMetadataKey',
    api_key=4,
    versions=(0, 0),
    flexible_from=None,
    fields=(
        F('group_id', 'string', (0, 0)),
    ),
)

ConsumerGroupPartitionMetadataValue = Message(
    'ConsumerGroupPartitionMetadataValue',
    api_key=4,
    versions=(0, 0),
    flexible_from=0,
    fields=(
        F('topics', '[]struct', (0, None), fields=(
            F('topic_id', 'uuid', (0, None)),
            F('topic_name', 'string', (0, None)),
            F('num_partitions', 'int32', (0, None)),
            F('partition_metadata', '[]struct', (0, None), fields=(
                F('partition', 'int32', (0, None)),
                F('racks', '[]string', (0, None)),
            )),
        )),
    ),
)

ConsumerGroupRegularExpressionKey = Message(
    'ConsumerGroupRegularExpressionKey',
    api_key=16,
    versions=(0, 0),
    flexible_from=None,
    fields=(
        F('group_id', 'string', (0, 0)),
        F('regular_expression', 'string', (0, 0)),
    ),
)

ConsumerGroupRegularExpressionValue = Message(
    'ConsumerGroupRegularExpressionValue',
    api_key=16,
    versions=(0, 0),
    flexible_from=0,
    fields=(
        F('topics', '[]string', (0, None)),
        F('version', 'int64', (0, None)),
        F('timestamp', 'int64', (0, None)),
    ),
)

TransactionLogKey = Message(
    'TransactionLogKey',
    api_key=0,
    versions=(0, 0),
    flexible_from=None,
    fields=(
        F('transactional_id', 'string', (0, 0)),
    ),
)

TransactionLogValue = Message(
    'TransactionLogValue',
    api_key=0,
    versions=(0, 1),
    flexible_from=1,
    fields=(
        F('producer_id', 'int64', (0, None)),
        F('previous_producer_id', 'int64', (1, None), tag=0, tagged=(1, None), default=-1),
        F('next_producer_id', 'int64', (1, None), tag=1, tagged=(1, None), default=-1),
        F('producer_epoch', 'int16', (0, None)),
        F('next_producer_epoch', 'int16', (1, None), tag=3, tagged=(1, None), default=-1),
        F('transaction_timeout_ms', 'int32', (0, None)),
        F('transaction_status', 'int8', (0, None)),
        F('transaction_partitions', '[]struct', (0, None), nullable=(0, None), fields=(
            F('topic', 'string', (0, None)),
            F('partition_ids', '[]int32', (0, None)),
        )),
        F('transaction_last_update_timestamp_ms', 'int64', (0, None)),
        F('transaction_start_timestamp_ms', 'int64', (0, None)),
        F('client_transaction_version', 'int16', (1, None), tag=2, tagged=(1, None), default=0),
    ),
)
