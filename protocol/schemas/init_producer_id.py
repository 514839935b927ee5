"""InitProducerId (API key 22): request and response, v0-v6.

Declarative schema generated from Apache Kafka's message specs by
``protocol/_schema_gen.py``; field names are snake_case of the spec names.
"""

from protocol.schema import Field as F
from protocol.schema import Message

InitProducerIdRequest = Message(
    'InitProducerIdRequest',
    api_key=22,
    versions=(0, 6),
    flexible_from=2,
    fields=(
        F('transactional_id', 'string', (0, None), nullable=(0, None)),
        F('transaction_timeout_ms', 'int32', (0, None)),
        F('producer_id', 'int64', (3, None), default=-1),
        F('producer_epoch', 'int16', (3, None), default=-1),
        F('enable2_pc', 'bool', (6, None), default=False),
        F('keep_prepared_txn', 'bool', (6, None), default=False),
    ),
)

InitProducerIdResponse = Message(
    'InitProducerIdResponse',
    api_key=22,
    versions=(0, 6),
    flexible_from=2,
    fields=(
        F('throttle_time_ms', 'int32', (0, None)),
        F('error_code', 'int16', (0, None)),
        F('producer_id', 'int64', (0, None), default=-1),
        F('producer_epoch', 'int16', (0, None)),
        F('ongoing_txn_producer_id', 'int64', (6, None), default=-1),
        F('ongoing_txn_producer_epoch', 'int16', (6, None), default=-1),
    ),
)
