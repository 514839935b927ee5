"""CreateAcls (API key 30): request and response, v1-v3.

Declarative schema generated from Apache Kafka's message specs by
``protocol/_schema_gen.py``; field names are snake_case of the spec names.
"""

from protocol.schema import Field as F
from protocol.schema import Message

CreateAclsRequest = Message(
    'CreateAclsRequest',
    api_key=30,
    versions=(1, 3),
    flexible_from=2,
    fields=(
        F('creations', '[]struct', (0, None), fields=(
            F('resource_type', 'int8', (0, None)),
            F('resource_name', 'string', (0, None)),
            F('resource_pattern_type', 'int8', (1, None), default=3),
            F('principal', 'string', (0, None)),
            F('host', 'string', (0, None)),
            F('operation', 'int8', (0, None)),
            F('permission_type', 'int8', (0, None)),
        )),
    ),
)

CreateAclsResponse = Message(
    'CreateAclsResponse',
    api_key=30,
    versions=(1, 3),
    flexible_from=2,
    fields=(
        F('throttle_time_ms', 'int32', (0, None)),
        F('results', '[]struct', (0, None), fields=(
            F('error_code', 'int16', (0, None)),
            F('error_message', 'string', (0, None), nullable=(0, None)),
        )),
    ),
)
