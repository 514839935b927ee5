"""WriteTxnMarkers (API key 27): request and response, v1-v1.

Declarative schema generated from Apache Kafka's message specs by
``protocol/_schema_gen.py``; field names are snake_case of the spec names.
"""

from protocol.schema import Field as F
from protocol.schema import Message

WriteTxnMarkersRequest = Message(
    'WriteTxnMarkersRequest',
    api_key=27,
    versions=(1, 1),
    flexible_from=1,
    fields=(
        F('markers', '[]struct', (0, None), fields=(
            F('producer_id', 'int64', (0, None)),
            F('producer_epoch', 'int16', (0, None)),
            F('transaction_result', 'bool', (0, None)),
            F('topics', '[]struct', (0, None), fields=(
                F('name', 'string', (0, None)),
                F('partition_indexes', '[]int32', (0, None)),
            )),
            F('coordinator_epoch', 'int32', (0, None)),
        )),
    ),
)

WriteTxnMarkersResponse = Message(
    'WriteTxnMarkersResponse',
    api_key=27,
    versions=(1, 1),
    flexible_from=1,
    fields=(
        F('markers', '[]struct', (0, None), fields=(
            F('producer_id', 'int64', (0, None)),
            F('topics', '[]struct', (0, None), fields=(
                F('name', 'string', (0, None)),
                F('partitions', '[]struct', (0, None), fields=(
                    F('partition_index', 'int32', (0, None)),
                    F('error_code', 'int16', (0, None)),
                )),
            )),
        )),
    ),
)
