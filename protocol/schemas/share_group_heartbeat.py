"""ShareGroupHeartbeat (API key 76): request and response, v1-v1.

Declarative schema generated from Apache Kafka's message specs by
``protocol/_schema_gen.py``; field names are snake_case of the spec names.
"""

from protocol.schema import Field as F
from protocol.schema import Message

ShareGroupHeartbeatRequest = Message(
    'ShareGroupHeartbeatRequest',
    api_key=76,
    versions=(1, 1),
    flexible_from=0,
    fields=(
        F('group_id', 'string', (0, None)),
        F('member_id', 'string', (0, None)),
        F('member_epoch', 'int32', (0, None)),
        F('rack_id', 'string', (0, None), nullable=(0, None), default=None),
        F('subscribed_topic_names', '[]string', (0, None), nullable=(0, None), default=None),
    ),
)

ShareGroupHeartbeatResponse = Message(
    'ShareGroupHeartbeatResponse',
    api_key=76,
    versions=(1, 1),
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
