"""AlterShareGroupOffsets (API key 91): request and response, v0-v0.

Declarative schema generated from Apache Kafka's message specs by
``protocol/_schema_gen.py``; field names are snake_case of the spec names.
"""

from protocol.schema import Field as F
from protocol.schema import Message

AlterShareGroupOffsetsRequest = Message(
    'AlterShareGroupOffsetsRequest',
    api_key=91,
    versions=(0, 0),
    flexible_from=0,
    fields=(
        F('group_id', 'string', (0, None)),
        F('topics', '[]struct', (0, None), fields=(
            F('topic_name', 'string', (0, None)),
            F('partitions', '[]struct', (0, None), fields=(
                F('partition_index', 'int32', (0, None)),
                F('start_offset', 'int64', (0, None)),
            )),
        )),
    ),
)

AlterShareGroupOffsetsResponse = Message(
    'AlterShareGroupOffsetsResponse',
    api_key=91,
    versions=(0, 0),
    flexible_from=0,
    fields=(
        F('throttle_time_ms', 'int32', (0, None)),
        F('error_code', 'int16', (0, None)),
        F('error_message', 'string', (0, None), nullable=(0, None), default=None),
        F('responses', '[]struct', (0, None), fields=(
            F('topic_name', 'string', (0, None)),
            F('topic_id', 'uuid', (0, None)),
            F('partitions', '[]struct', (0, None), fields=(
                F('partition_index', 'int32', (0, None)),
                F('error_code', 'int16', (0, None)),
                F('error_message', 'string', (0, None), nullable=(0, None), default=None),
            )),
        )),
    ),
)
