"""AddOffsetsToTxn (API key 25): request and response, v0-v4.

Declarative schema generated from Apache Kafka's message specs by
``protocol/_schema_gen.py``; field names are snake_case of the spec names.
"""

from protocol.schema import Field as F
from protocol.schema import Message

AddOffsetsToTxnRequest = Message(
    'AddOffsetsToTxnRequest',
    api_key=25,
    versions=(0, 4),
    flexible_from=3,
    fields=(
        F('transactional_id', 'string', (0, None)),
        F('producer_id', 'int64', (0, None)),
        F('producer_epoch', 'int16', (0, None)),
        F('group_id', 'string', (0, None)),
    ),
)

AddOffsetsToTxnResponse = Message(
    'AddOffsetsToTxnResponse',
    api_key=25,
    versions=(0, 4),
    flexible_from=3,
    fields=(
        F('throttle_time_ms', 'int32', (0, None)),
        F('error_code', 'int16', (0, None)),
    ),
)
