"""DescribeProducers (API key 61): request and response, v0-v0.

Declarative schema generated from Apache Kafka's message specs by
``protocol/_schema_gen.py``; field names are snake_case of the spec names.
"""

from protocol.schema import Field as F
from protocol.schema import Message

DescribeProducersRequest = Message(
    'DescribeProducersRequest',
    api_key=61,
    versions=(0, 0),
    flexible_from=0,
    fields=(
        F('topics', '[]struct', (0, None), fields=(
            F('name', 'string', (0, None)),
            F('partition_indexes', '[]int32', (0, None)),
        )),
    ),
)

DescribeProducersResponse = Message(
    'DescribeProducersResponse',
    api_key=61,
    versions=(0, 0),
    flexible_from=0,
    fields=(
        F('throttle_time_ms', 'int32', (0, None)),
        F('topics', '[]struct', (0, None), fields=(
            F('name', 'string', (0, None)),
            F('partitions', '[]struct', (0, None), fields=(
                F('partition_index', 'int32', (0, None)),
                F('error_code', 'int16', (0, None)),
                F('error_message', 'string', (0, None), nullable=(0, None), default=None),
                F('active_producers', '[]struct', (0, None), fields=(
                    F('producer_id', 'int64', (0, None)),
                    F('producer_epoch', 'int32', (0, None)),
                    F('last_sequence', 'int32', (0, None), default=-1),
                    F('last_timestamp', 'int64', (0, None), default=-1),
                    F('coordinator_epoch', 'int32', (0, None)),
                    F('current_txn_start_offset', 'int64', (0, None), default=-1),
                )),
            )),
        )),
    ),
)
