"""EndTxn (API key 26): request and response, v0-v5.

Declarative schema generated from Apache Kafka's message specs by
``protocol/_schema_gen.py``; field names are snake_case of the spec names.
"""

from protocol.schema import Field as F
from protocol.schema import Message

EndTxnRequest = Message(
    'EndTxnRequest',
    api_key=26,
    versions=(0, 5),
    flexible_from=3,
    fields=(
        F('transactional_id', 'string', (0, None)),
        F('producer_id', 'int64', (0, None)),
        F('producer_epoch', 'int16', (0, None)),
        F('committed', 'bool', (0, None)),
    ),
)

EndTxnResponse = Message(
    'EndTxnResponse',
    api_key=26,
    versions=(0, 5),
    flexible_from=3,
    fields=(
        F('throttle_time_ms', 'int32', (0, None)),
        F('error_code', 'int16', (0, None)),
        F('producer_id', 'int64', (5, None), default=-1),
        F('producer_epoch', 'int16', (5, None), default=-1),
    ),
)
