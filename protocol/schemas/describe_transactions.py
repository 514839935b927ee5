"""DescribeTransactions (API key 65): request and response, v0-v0.

Declarative schema generated from Apache Kafka's message specs by
``protocol/_schema_gen.py``; field names are snake_case of the spec names.
"""

from protocol.schema import Field as F
from protocol.schema import Message

DescribeTransactionsRequest = Message(
    'DescribeTransactionsRequest',
    api_key=65,
    versions=(0, 0),
    flexible_from=0,
    fields=(
        F('transactional_ids', '[]string', (0, None)),
    ),
)

DescribeTransactionsResponse = Message(
    'DescribeTransactionsResponse',
    api_key=65,
    versions=(0, 0),
    flexible_from=0,
    fields=(
        F('throttle_time_ms', 'int32', (0, None)),
        F('transaction_states', '[]struct', (0, None), fields=(
            F('error_code', 'int16', (0, None)),
            F('transactional_id', 'string', (0, None)),
            F('transaction_state', 'string', (0, None)),
            F('transaction_timeout_ms', 'int32', (0, None)),
            F('transaction_start_time_ms', 'int64', (0, None)),
            F('producer_id', 'int64', (0, None)),
            F('producer_epoch', 'int16', (0, None)),
            F('topics', '[]struct', (0, None), fields=(
                F('topic', 'string', (0, None)),
                F('partitions', '[]int32', (0, None)),
            )),
        )),
    ),
)
