"""SyncGroup (API key 14): request and response, v0-v5.

Declarative schema generated from Apache Kafka's message specs by
``protocol/_schema_gen.py``; field names are snake_case of the spec names.
"""

from protocol.schema import Field as F
from protocol.schema import Message

SyncGroupRequest = Message(
    'SyncGroupRequest',
    api_key=14,
    versions=(0, 5),
    flexible_from=4,
    fields=(
        F('group_id', 'string', (0, None)),
        F('generation_id', 'int32', (0, None)),
        F('member_id', 'string', (0, None)),
        F('group_instance_id', 'string', (3, None), nullable=(3, None), default=None),
        F('protocol_type', 'string', (5, None), nullable=(5, None), default=None),
        F('protocol_name', 'string', (5, None), nullable=(5, None), default=None),
        F('assignments', '[]struct', (0, None), fields=(
            F('member_id', 'string', (0, None)),
            F('assignment', 'bytes', (0, None)),
        )),
    ),
)

SyncGroupResponse = Message(
    'SyncGroupResponse',
    api_key=14,
    versions=(0, 5),
    flexible_from=4,
    fields=(
        F('throttle_time_ms', 'int32', (1, None)),
        F('error_code', 'int16', (0, None)),
        F('protocol_type', 'string', (5, None), nullable=(5, None), default=None),
        F('protocol_name', 'string', (5, None), nullable=(5, None), default=None),
        F('assignment', 'bytes', (0, None)),
    ),
)
