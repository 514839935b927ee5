"""DescribeConfigs (API key 32): request and response, v1-v4.

Declarative schema generated from Apache Kafka's message specs by
``protocol/_schema_gen.py``; field names are snake_case of the spec names.
"""

from protocol.schema import Field as F
from protocol.schema import Message

DescribeConfigsRequest = Message(
    'DescribeConfigsRequest',
    api_key=32,
    versions=(1, 4),
    flexible_from=4,
    fields=(
        F('resources', '[]struct', (0, None), fields=(
            F('resource_type', 'int8', (0, None)),
            F('resource_name', 'string', (0, None)),
            F('configuration_keys', '[]string', (0, None), nullable=(0, None)),
        )),
        F('include_synonyms', 'bool', (1, None), default=False),
        F('include_documentation', 'bool', (3, None), default=False),
    ),
)

DescribeConfigsResponse = Message(
    'DescribeConfigsResponse',
    api_key=32,
    versions=(1, 4),
    flexible_from=4,
    fields=(
        F('throttle_time_ms', 'int32', (0, None)),
        F('results', '[]struct', (0, None), fields=(
            F('error_code', 'int16', (0, None)),
            F('error_message', 'string', (0, None), nullable=(0, None)),
            F('resource_type', 'int8', (0, None)),
            F('resource_name', 'string', (0, None)),
            F('configs', '[]struct', (0, None), fields=(
                F('name', 'string', (0, None)),
                F('value', 'string', (0, None), nullable=(0, None)),
                F('read_only', 'bool', (0, None)),
                F('config_source', 'int8', (1, None), default=-1),
                F('is_sensitive', 'bool', (0, None)),
                F('synonyms', '[]struct', (1, None), fields=(
                    F('name', 'string', (1, None)),
                    F('value', 'string', (1, None), nullable=(0, None)),
                    F('source', 'int8', (1, None)),
                )),
                F('config_type', 'int8', (3, None), default=0),
                F('documentation', 'string', (3, None), nullable=(0, None)),
            )),
        )),
    ),
)
