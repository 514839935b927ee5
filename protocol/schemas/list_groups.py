"""ListGroups (API key 16): request and response, v0-v5.

Declarative schema generated from Apache Kafka's message specs by
``protocol/_schema_gen.py``; field names are snake_case of the spec names.
"""

from protocol.schema import Field as F
from protocol.schema import Message

ListGroupsRequest = Message(
    'ListGroupsRequest',
    api_key=16,
    versions=(0, 5),
    flexible_from=3,
    fields=(
        F('states_filter', '[]string', (4, None)),
        F('types_filter', '[]string', (5, None)),
    ),
)

ListGroupsResponse = Message(
    'ListGroupsResponse',
    api_key=16,
    versions=(0, 5),
    flexible_from=3,
    fields=(
        F('throttle_time_ms', 'int32', (1, None)),
        F('error_code', 'int16', (0, None)),
        F('groups', '[]struct', (0, None), fields=(
            F('group_id', 'string', (0, None)),
            F('protocol_type', 'string', (0, None)),
            F('group_state', 'string', (4, None)),
            F('group_type', 'string', (5, None)),
        )),
    ),
)
