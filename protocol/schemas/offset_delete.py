"""OffsetDelete (API key 47): request and response, v0-v0.

Declarative schema generated from Apache Kafka's message specs by
``protocol/_schema_gen.py``; field names are snake_case of the spec names.
"""

from protocol.schema import Field as F
from protocol.schema import Message

OffsetDeleteRequest = Message(
    'OffsetDeleteRequest',
    api_key=47,
    versions=(0, 0),
    flexible_from=None,
    fields=(
        F('group_id', 'string', (0, None)),
        F('topics', '[]struct', (0, None), fields=(
            F('name', 'string', (0, None)),
            F('partitions', '[]struct', (0, None), fields=(
                F('partition_index', 'int32', (0, None)),
            )),
        )),
    ),
)

OffsetDeleteResponse = Message(
    'OffsetDeleteResponse',
    api_key=47,
    versions=(0, 0),
    flexible_from=None,
    fields=(
        F('error_code', 'int16', (0, None)),
        F('throttle_time_ms', 'int32', (0, None)),
        F('topics', '[]struct', (0, None), fields=(
            F('name', 'string', (0, None)),
            F('partitions', '[]struct', (0, None), fields=(
                F('partition_index', 'int32', (0, None)),
                F('error_code', 'int16', (0, None)),
            )),
        )),
    ),
)
