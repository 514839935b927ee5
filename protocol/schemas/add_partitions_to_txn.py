"""AddPartitionsToTxn (API key 24): request and response, v0-v5.

Declarative schema generated from Apache Kafka's message specs by
``protocol/_schema_gen.py``; field names are snake_case of the spec names.
"""

from protocol.schema import Field as F
from protocol.schema import Message

AddPartitionsToTxnRequest = Message(
    'AddPartitionsToTxnRequest',
    api_key=24,
    versions=(0, 5),
    flexible_from=3,
    fields=(
        F('transactions', '[]struct', (4, None), fields=(
            F('transactional_id', 'string', (4, None)),
            F('producer_id', 'int64', (4, None)),
            F('producer_epoch', 'int16', (4, None)),
            F('verify_only', 'bool', (4, None), default=False),
            F('topics', '[]struct', (4, None), fields=(
                F('name', 'string', (0, None)),
                F('partitions', '[]int32', (0, None)),
            )),
        )),
        F('v3_and_below_transactional_id', 'string', (0, 3)),
        F('v3_and_below_producer_id', 'int64', (0, 3)),
        F('v3_and_below_producer_epoch', 'int16', (0, 3)),
        F('v3_and_below_topics', '[]struct', (0, 3), fields=(
            F('name', 'string', (0, None)),
            F('partitions', '[]int32', (0, None)),
        )),
    ),
)

AddPartitionsToTxnResponse = Message(
    'AddPartitionsToTxnResponse',
    api_key=24,
    versions=(0, 5),
    flexible_from=3,
    fields=(
        F('throttle_time_ms', 'int32', (0, None)),
        F('error_code', 'int16', (4, None)),
        F('results_by_transaction', '[]struct', (4, None), fields=(
            F('transactional_id', 'string', (4, None)),
            F('topic_results', '[]struct', (4, None), fields=(
                F('name', 'string', (0, None)),
                F('results_by_partition', '[]struct', (0, None), fields=(
                    F('partition_index', 'int32', (0, None)),
                    F('partition_error_code', 'int16', (0, None)),
                )),
            )),
        )),
        F('results_by_topic_v3_and_below', '[]struct', (0, 3), fields=(
            F('name', 'string', (0, None)),
            F('results_by_partition', '[]struct', (0, None), fields=(
                F('partition_index', 'int32', (0, None)),
                F('partition_error_code', 'int16', (0, None)),
            )),
        )),
    ),
)
