"""DeleteGroups (API key 42): request and response, v0-v2.

Declarative schema generated from Apache Kafka's message specs by
``protocol/_schema_gen.py``; field names are snake_case of the spec names.
"""

from protocol.schema import Field as F
from protocol.schema import Message

DeleteGroupsRequest = Message(
    'DeleteGroupsRequest',
    api_key=42,
    versions=(0, 2),
    flexible_from=2,
    fields=(
        F('groups_names', '[]string', (0, None)),
    ),
)

DeleteGroupsResponse = Message(
    'DeleteGroupsResponse',
    api_key=42,
    versions=(0, 2),
    flexible_from=2,
    fields=(
        F('throttle_time_ms', 'int32', (0, None)),
        F('results', '[]struct', (0, None), fields=(
            F('group_id', 'string', (0, None)),
            F('error_code', 'int16', (0, None)),
        )),
    ),
)
