"""DeleteRecords (API key 21): request and response, v0-v2.

Declarative schema generated from Apache Kafka's message specs by
``protocol/_schema_gen.py``; field names are snake_case of the spec names.
"""

from protocol.schema import Field as F
from protocol.schema import Message

DeleteRecordsRequest = Message(
    'DeleteRecordsRequest',
    api_key=21,
    versions=(0, 2),
    flexible_from=2,
    fields=(
        F('topics', '[]struct', (0, None), fields=(
            F('name', 'string', (0, None)),
            F('partitions', '[]struct', (0, None), fields=(
                F('partition_index', 'int32', (0, None)),
                F('offset', 'int64', (0, None)),
            )),
        )),
        F('timeout_ms', 'int32', (0, None)),
    ),
)

DeleteRecordsResponse = Message(
    'DeleteRecordsResponse',
    api_key=21,
    versions=(0, 2),
    flexible_from=2,
    fields=(
        F('throttle_time_ms', 'int32', (0, None)),
        F('topics', '[]struct', (0, None), fields=(
            F('name', 'string', (0, None)),
            F('partitions', '[]struct', (0, None), fields=(
                F('partition_index', 'int32', (0, None)),
                F('low_watermark', 'int64', (0, None)),
                F('error_code', 'int16', (0, None)),
            )),
        )),
    ),
)
