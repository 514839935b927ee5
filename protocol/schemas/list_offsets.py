"""ListOffsets (API key 2): request and response, v1-v10.

Declarative schema generated from Apache Kafka's message specs by
``protocol/_schema_gen.py``; field names are snake_case of the spec names.
"""

from protocol.schema import Field as F
from protocol.schema import Message

ListOffsetsRequest = Message(
    'ListOffsetsRequest',
    api_key=2,
    versions=(1, 10),
    flexible_from=6,
    fields=(
        F('replica_id', 'int32', (0, None)),
        F('isolation_level', 'int8', (2, None)),
        F('topics', '[]struct', (0, None), fields=(
            F('name', 'string', (0, None)),
            F('partitions', '[]struct', (0, None), fields=(
                F('partition_index', 'int32', (0, None)),
                F('current_leader_epoch', 'int32', (4, None), default=-1),
                F('timestamp', 'int64', (0, None)),
            )),
        )),
        F('timeout_ms', 'int32', (10, None)),
    ),
)

ListOffsetsResponse = Message(
    'ListOffsetsResponse',
    api_key=2,
    versions=(1, 10),
    flexible_from=6,
    fields=(
        F('throttle_time_ms', 'int32', (2, None)),
        F('topics', '[]struct', (0, None), fields=(
            F('name', 'string', (0, None)),
            F('partitions', '[]struct', (0, None), fields=(
                F('partition_index', 'int32', (0, None)),
                F('error_code', 'int16', (0, None)),
                F('timestamp', 'int64', (1, None), default=-1),
                F('offset', 'int64', (1, None), default=-1),
                F('leader_epoch', 'int32', (4, None), default=-1),
            )),
        )),
    ),
)
