"""Produce (API key 0): request and response, v3-v12.

Declarative schema generated from Apache Kafka's message specs by
``protocol/_schema_gen.py``; field names are snake_case of the spec names.
"""

from protocol.schema import Field as F
from protocol.schema import Message

ProduceRequest = Message(
    'ProduceRequest',
    api_key=0,
    versions=(3, 12),
    flexible_from=9,
    fields=(
        F('transactional_id', 'string', (3, None), nullable=(3, None), default=None),
        F('acks', 'int16', (0, None)),
        F('timeout_ms', 'int32', (0, None)),
        F('topic_data', '[]struct', (0, None), fields=(
            F('name', 'string', (0, None)),
            F('partition_data', '[]struct', (0, None), fields=(
                F('index', 'int32', (0, None)),
                F('records', 'records', (0, None), nullable=(0, None)),
            )),
        )),
    ),
)

ProduceResponse = Message(
    'ProduceResponse',
    api_key=0,
    versions=(3, 12),
    flexible_from=9,
    fields=(
        F('responses', '[]struct', (0, None), fields=(
            F('name', 'string', (0, None)),
            F('partition_responses', '[]struct', (0, None), fields=(
                F('index', 'int32', (0, None)),
                F('error_code', 'int16', (0, None)),
                F('base_offset', 'int64', (0, None)),
                F('log_append_time_ms', 'int64', (2, None), default=-1),
                F('log_start_offset', 'int64', (5, None), default=-1),
                F('record_errors', '[]struct', (8, None), fields=(
                    F('batch_index', 'int32', (8, None)),
                    F('batch_index_error_message', 'string', (8, None), nullable=(8, None), default=None),
                )),
                F('error_message', 'string', (8, None), nullable=(8, None), default=None),
                F('current_leader', 'struct', (10, None), tag=0, tagged=(10, None), fields=(
                    F('leader_id', 'int32', (10, None), default=-1),
                    F('leader_epoch', 'int32', (10, None), default=-1),
                )),
            )),
        )),
        F('throttle_time_ms', 'int32', (1, None), default=0),
        F('node_endpoints', '[]struct', (10, None), tag=0, tagged=(10, None), fields=(
            F('node_id', 'int32', (10, None)),
            F('host', 'string', (10, None)),
            F('port', 'int32', (10, None)),
            F('rack', 'string', (10, None), nullable=(10, None), default=None),
        )),
    ),
)
