"""CreateTopics (API key 19): request and response, v2-v7.

Declarative schema generated from Apache Kafka's message specs by
``protocol/_schema_gen.py``; field names are snake_case of the spec names.
"""

from protocol.schema import Field as F
from protocol.schema import Message

CreateTopicsRequest = Message(
    'CreateTopicsRequest',
    api_key=19,
    versions=(2, 7),
    flexible_from=5,
    fields=(
        F('topics', '[]struct', (0, None), fields=(
            F('name', 'string', (0, None)),
            F('num_partitions', 'int32', (0, None)),
            F('replication_factor', 'int16', (0, None)),
            F('assignments', '[]struct', (0, None), fields=(
                F('partition_index', 'int32', (0, None)),
                F('broker_ids', '[]int32', (0, None)),
            )),
            F('configs', '[]struct', (0, None), fields=(
                F('name', 'string', (0, None)),
                F('value', 'string', (0, None), nullable=(0, None)),
            )),
        )),
        F('timeout_ms', 'int32', (0, None), default=60000),
        F('validate_only', 'bool', (1, None), default=False),
    ),
)

CreateTopicsResponse = Message(
    'CreateTopicsResponse',
    api_key=19,
    versions=(2, 7),
    flexible_from=5,
    fields=(
        F('throttle_time_ms', 'int32', (2, None)),
        F('topics', '[]struct', (0, None), fields=(
            F('name', 'string', (0, None)),
            F('topic_id', 'uuid', (7, None)),
            F('error_code', 'int16', (0, None)),
            F('error_message', 'string', (1, None), nullable=(0, None)),
            F('topic_config_error_code', 'int16', (5, None), tag=0, tagged=(5, None)),
            F('num_partitions', 'int32', (5, None), default=-1),
            F('replication_factor', 'int16', (5, None), default=-1),
            F('configs', '[]struct', (5, None), nullable=(5, None), fields=(
                F('name', 'string', (5, None)),
                F('value', 'string', (5, None), nullable=(5, None)),
                F('read_only', 'bool', (5, None)),
                F('config_source', 'int8', (5, None), default=-1),
                F('is_sensitive', 'bool', (5, None)),
            )),
        )),
    ),
)
