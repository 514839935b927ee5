"""IncrementalAlterConfigs (API key 44): request and response, v0-v1.

Declarative schema generated from Apache Kafka's message specs by
``protocol/_schema_gen.py``; field names are snake_case of the spec names.
"""

from protocol.schema import Field as F
from protocol.schema import Message

IncrementalAlterConfigsRequest = Message(
    'IncrementalAlterConfigsRequest',
    api_key=44,
    versions=(0, 1),
    flexible_from=1,
    fields=(
        F('resources', '[]struct', (0, None), fields=(
            F('resource_type', 'int8', (0, None)),
            F('resource_name', 'string', (0, None)),
            F('configs', '[]struct', (0, None), fields=(
                F('name', 'string', (0, None)),
                F('config_operation', 'int8', (0, None)),
                F('value', 'string', (0, None), nullable=(0, None)),
            )),
        )),
        F('validate_only', 'bool', (0, None)),
    ),
)

IncrementalAlterConfigsResponse = Message(
    'IncrementalAlterConfigsResponse',
    api_key=44,
    versions=(0, 1),
    flexible_from=1,
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
