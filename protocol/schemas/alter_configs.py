"""AlterConfigs (API key 33): request and response, v0-v2.

Declarative schema generated from Apache Kafka's message specs by
``protocol/_schema_gen.py``; field names are snake_case of the spec names.
"""

from protocol.schema import Field as F
from protocol.schema import Message

AlterConfigsRequest = Message(
    'AlterConfigsRequest',
    api_key=33,
    versions=(0, 2),
    flexible_from=2,
    fields=(
        F('resources', '[]struct', (0, None), fields=(
            F('resource_type', 'int8', (0, None)),
            F('resource_name', 'string', (0, None)),
            F('configs', '[]struct', (0, None), fields=(
                F('name', 'string', (0, None)),
                F('value', 'string', (0, None), nullable=(0, None)),
            )),
        )),
        F('validate_only', 'bool', (0, None)),
    ),
)

AlterConfigsResponse = Message(
    'AlterConfigsResponse',
    api_key=33,
    versions=(0, 2),
    flexible_from=2,
    fields=(
        F('throttle_time_ms', 'int32', (0, None)),
        F('responses', '[]struct', (0, None), fields=(
            F('error_code', 'int16', (0, None)),
            F('error_message', 'string', (0, None), nullable=(0, None)),
            F('resource_type', 'int8', (0, None)),
            F('resource_name', 'string', (0, None)),
        )),
    ),
)
