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
