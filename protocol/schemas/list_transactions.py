"""ListTransactions (API key 66): request and response, v0-v1.

Declarative schema generated from Apache Kafka's message specs by
``protocol/_schema_gen.py``; field names are snake_case of the spec names.
"""

from protocol.schema import Field as F
from protocol.schema import Message

ListTransactionsRequest = Message(
    'ListTransactionsRequest',
    api_key=66,
    versions=(0, 1),
    flexible_from=0,
    fields=(
        F('state_filters', '[]string', (0, None)),
        F('producer_id_filters', '[]int64', (0, None)),
        F('duration_filter', 'int64', (1, None), default=-1),
    ),
)

ListTransactionsResponse = Message(
    'ListTransactionsResponse',
    api_key=66,
    versions=(0, 1),
    flexible_from=0,
    fields=(
        F('throttle_time_ms', 'int32', (0, None)),
        F('error_code', 'int16', (0, None)),
        F('unknown_state_filters', '[]string', (0, None)),
        F('transaction_states', '[]struct', (0, None), fields=(
            F('transactional_id', 'string', (0, None)),
            F('producer_id', 'int64', (0, None)),
            F('transaction_state', 'string', (0, None)),
        )),
    ),
)
