"""DescribeGroups (API key 15): request and response, v0-v6.

Declarative schema generated from Apache Kafka's message specs by
``protocol/_schema_gen.py``; field names are snake_case of the spec names.
"""

from protocol.schema import Field as F
from protocol.schema import Message

DescribeGroupsRequest = Message(
    'DescribeGroupsRequest',
    api_key=15,
    versions=(0, 6),
    flexible_from=5,
    fields=(
        F('groups', '[]string', (0, None)),
        F('include_authorized_operations', 'bool', (3, None)),
    ),
)

DescribeGroupsResponse = Message(
    'DescribeGroupsResponse',
    api_key=15,
    versions=(0, 6),
    flexible_from=5,
    fields=(
        F('throttle_time_ms', 'int32', (1, None)),
        F('groups', '[]struct', (0, None), fields=(
            F('error_code', 'int16', (0, None)),
            F('error_message', 'string', (6, None), nullable=(6, None), default=None),
            F('group_id', 'string', (0, None)),
            F('group_state', 'string', (0, None)),
            F('protocol_type', 'string', (0, None)),
            F('protocol_data', 'string', (0, None)),
            F('members', '[]struct', (0, None), fields=(
                F('member_id', 'string', (0, None)),
                F('group_instance_id', 'string', (4, None), nullable=(4, None), default=None),
                F('client_id', 'string', (0, None)),
                F('client_host', 'string', (0, None)),
                F('member_metadata', 'bytes', (0, None)),
                F('member_assignment', 'bytes', (0, None)),
            )),
            F('authorized_operations', 'int32', (3, None), default=-2147483648),
        )),
    ),
)
