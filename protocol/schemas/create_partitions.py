"""CreatePartitions (API key 37): request and response, v0-v3.

Declarative schema generated from Apache Kafka's message specs by
``protocol/_schema_gen.py``; field names are snake_case of the spec names.
"""

from protocol.schema import Field as F
from protocol.schema import Message

CreatePartitionsRequest = Message(
    'CreatePartitionsRequest',
    api_key=37,
    versions=(0, 3),
    flexible_from=2,
    fields=(
        F('topics', '[]struct', (0, None), fields=(
            F('name', 'string', (0, None)),
            F('count', 'int32', (0, None)),
            F('assignments', '[]struct', (0, None), nullable=(0, None), fields=(
                F('broker_ids', '[]int32', (0, None)),
            )),
        )),
        F('timeout_ms', 'int32', (0, None)),
        F('validate_only', 'bool', (0, None)),
    ),
)

CreatePartitionsResponse = Message(
    'CreatePartitionsResponse',
    api_key=37,
    versions=(0, 3),
    flexible_from=2,
    fields=(
        F('throttle_time_ms', 'int32', (0, None)),
        F('results', '[]struct', (0, None), fields=(
            F('name', 'string', (0, None)),
            F('error_code', 'int16', (0, None)),
            F('error_message', 'string', (0, None), nullable=(0, None), default=None),
        )),
    ),
)
