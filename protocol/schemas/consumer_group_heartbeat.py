"""ConsumerGroupHeartbeat (API key 68): request and response, v0-v1.

Declarative schema generated from Apache Kafka's message specs by
``protocol/_schema_gen.py``; field names are snake_case of the spec names.
"""

from protocol.schema import Field as F
from protocol.schema import Message

ConsumerGroupHeartbeatRequest = Message(
    'ConsumerGroupHeartbeatRequest',
    api_key=68,
    versions=(0, 1),
    flexible_from=0,
    fields=(
        F('group_id', 'string', (0, None)),
        F('member_id', 'string', (0, None)),
        F('member_epoch', 'int32', (0, None)),
        F('instance_id', 'string', (0, None), nullable=(0, None), default=None),
        F('rack_id', 'string', (0, None), nullable=(0, None), default=None),
        F('rebalance_timeout_ms', 'int32', (0, None), default=-1),
        F('subscribed_topic_names', '[]string', (0, None), nullable=(0, None), default=None),
        F('subscribed_topic_regex', 'string', (1, None), nullable=(1, None), default=None),
        F('server_assignor', 'string', (0, None), nullable=(0, None), default=None),
        F('topic_partitions', '[]struct', (0, None), nullable=(0, None), default=None, fields=(
            F('topic_id', 'uuid', (0, None)),
            F('partitions', '[]int32', (0, None)),
        )),
    ),
)

ConsumerGroupHeartbeatResponse = Message(
    'ConsumerGroupHeartbeatResponse',
    api_key=68,
    versions=(0, 1),
    flexible_from=0,
    fields=(
        F('throttle_time_ms', 'int32', (0, None)),
        F('error_code', 'int16', (0, None)),
        F('error_message', 'string', (0, None), nullable=(0, None), default=None),
        F('member_id', 'string', (0, None), nullable=(0, None), default=None),
        F('member_epoch', 'int32', (0, None)),
        F('heartbeat_interval_ms', 'int32', (0, None)),
        F('assignment', 'struct', (0, None), nullable=(0, None), default=None, fields=(
            F('topic_partitions', '[]struct', (0, None), fields=(
                F('topic_id', 'uuid', (0, None)),
                F('partitions', '[]int32', (0, None)),
            )),
        )),
    ),
)
