"""Heartbeat (API key 12): request and response, v0-v4.

Declarative schema generated from Apache Kafka's message specs by
``protocol/_schema_gen.py``; field names are snake_case of the spec names.
"""

from protocol.schema import Field as F
from protocol.schema import Message

HeartbeatRequest = Message(
    'HeartbeatRequest',
    api_key=12,
    versions=(0, 4),
    flexible_from=4,
    fields=(
        F('group_id', 'string', (0, None)),
        F('generation_id', 'int32', (0, None)),
        F('member_id', 'string', (0, None)),
        F('group_instance_id', 'string', (3, None), nullable=(3, None), default=None),
    ),
)

HeartbeatResponse = Message(
    'HeartbeatResponse',
    api_key=12,
    versions=(0, 4),
    flexible_from=4,
    fields=(
        F('throttle_time_ms', 'int32', (1, None)),
        F('error_code', 'int16', (0, None)),
    ),
)
