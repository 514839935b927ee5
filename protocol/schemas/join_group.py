"""JoinGroup (API key 11): request and response, v2-v9.

Declarative schema generated from Apache Kafka's message specs by
``protocol/_schema_gen.py``; field names are snake_case of the spec names.
"""

from protocol.schema import Field as F
from protocol.schema import Message

JoinGroupRequest = Message(
    'JoinGroupRequest',
    api_key=11,
    versions=(2, 9),
    flexible_from=6,
    fields=(
        F('group_id', 'string', (0, None)),
        F('session_timeout_ms', 'int32', (0, None)),
        F('rebalance_timeout_ms', 'int32', (1, None), default=-1),
        F('member_id', 'string', (0, None)),
        F('group_instance_id', 'string', (5, None), nullable=(5, None), default=None),
        F('protocol_type', 'string', (0, None)),
        F('protocols', '[]struct', (0, None), fields=(
            F('name', 'string', (0, None)),
            F('metadata', 'bytes', (0, None)),
        )),
        F('reason', 'string', (8, None), nullable=(8, None), default=None),
    ),
)

JoinGroupResponse = Message(
    'JoinGroupResponse',
    api_key=11,
    versions=(2, 9),
    flexible_from=6,
    fields=(
        F('throttle_time_ms', 'int32', (2, None)),
        F('error_code', 'int16', (0, None)),
        F('generation_id', 'int32', (0, None), default=-1),
        F('protocol_type', 'string', (7, None), nullable=(7, None), default=None),
        F('protocol_name', 'string', (0, None), nullable=(7, None)),
        F('leader', 'string', (0, None)),
        F('skip_assignment', 'bool', (9, None), default=False),
        F('member_id', 'string', (0, None)),
        F('members', '[]struct', (0, None), fields=(
            F('member_id', 'string', (0, None)),
            F('group_instance_id', 'string', (5, None), nullable=(5, None), default=None),
            F('metadata', 'bytes', (0, None)),
        )),
    ),
)
