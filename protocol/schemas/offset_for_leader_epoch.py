"""OffsetForLeaderEpoch (API key 23): request and response, v2-v4.

Declarative schema generated from Apache Kafka's message specs by
``protocol/_schema_gen.py``; field names are snake_case of the spec names.
"""

from protocol.schema import Field as F
from protocol.schema import Message

OffsetForLeaderEpochRequest = Message(
    'OffsetForLeaderEpochRequest',
    api_key=23,
    versions=(2, 4),
    flexible_from=4,
    fields=(
        F('replica_id', 'int32', (3, None), default=-2),
        F('topics', '[]struct', (0, None), fields=(
            F('topic', 'string', (0, None)),
            F('partitions', '[]struct', (0, None), fields=(
                F('partition', 'int32', (0, None)),
                F('current_leader_epoch', 'int32', (2, None), default=-1),
                F('leader_epoch', 'int32', (0, None)),
            )),
        )),
    ),
)

OffsetForLeaderEpochResponse = Message(
    'OffsetForLeaderEpochResponse',
    api_key=23,
    versions=(2, 4),
    flexible_from=4,
    fields=(
        F('throttle_time_ms', 'int32', (2, None)),
        F('topics', '[]struct', (0, None), fields=(
            F('topic', 'string', (0, None)),
            F('partitions', '[]struct', (0, None), fields=(
                F('error_code', 'int16', (0, None)),
                F('partition', 'int32', (0, None)),
                F('leader_epoch', 'int32', (1, None), default=-1),
                F('end_offset', 'int64', (0, None), default=-1),
            )),
        )),
    ),
)
