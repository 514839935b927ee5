"""DeleteTopics (API key 20): request and response, v1-v6.

Declarative schema generated from Apache Kafka's message specs by
``protocol/_schema_gen.py``; field names are snake_case of the spec names.
"""

from protocol.schema import Field as F
from protocol.schema import Message

DeleteTopicsRequest = Message(
    'DeleteTopicsRequest',
    api_key=20,
    versions=(1, 6),
    flexible_from=4,
    fields=(
        F('topics', '[]struct', (6, None), fields=(
            F('name', 'string', (6, None), nullable=(6, None), default=None),
            F('topic_id', 'uuid', (6, None)),
        )),
        F('topic_names', '[]string', (0, 5)),
        F('timeout_ms', 'int32', (0, None)),
    ),
)

DeleteTopicsResponse = Message(
    'DeleteTopicsResponse',
    api_key=20,
    versions=(1, 6),
    flexible_from=4,
    fields=(
        F('throttle_time_ms', 'int32', (1, None)),
        F('responses', '[]struct', (0, None), fields=(
            F('name', 'string', (0, None), nullable=(6, None)),
            F('topic_id', 'uuid', (6, None)),
            F('error_code', 'int16', (0, None)),
            F('error_message', 'string', (5, None), nullable=(5, None), default=None),
        )),
    ),
)
