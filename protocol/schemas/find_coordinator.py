"""FindCoordinator (API key 10): request and response, v0-v6.

Declarative schema generated from Apache Kafka's message specs by
``protocol/_schema_gen.py``; field names are snake_case of the spec names.
"""

from protocol.schema import Field as F
from protocol.schema import Message

FindCoordinatorRequest = Message(
    'FindCoordinatorRequest',
    api_key=10,
    versions=(0, 6),
    flexible_from=3,
    fields=(
        F('key', 'string', (0, 3)),
        F('key_type', 'int8', (1, None), default=0),
        F('coordinator_keys', '[]string', (4, None)),
    ),
)

FindCoordinatorResponse = Message(
    'FindCoordinatorResponse',
    api_key=10,
    versions=(0, 6),
    flexible_from=3,
    fields=(
        F('throttle_time_ms', 'int32', (1, None)),
        F('error_code', 'int16', (0, 3)),
        F('error_message', 'string', (1, 3), nullable=(1, 3)),
        F('node_id', 'int32', (0, 3)),
        F('host', 'string', (0, 3)),
        F('port', 'int32', (0, 3)),
        F('coordinators', '[]struct', (4, None), fields=(
            F('key', 'string', (4, None)),
            F('node_id', 'int32', (4, None)),
            F('host', 'string', (4, None)),
            F('port', 'int32', (4, None)),
            F('error_code', 'int16', (4, None)),
            F('error_message', 'string', (4, None), nullable=(4, None)),
        )),
    ),
)
