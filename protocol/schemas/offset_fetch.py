"""OffsetFetch (API key 9): request and response, v1-v9.

Declarative schema generated from Apache Kafka's message specs by
``protocol/_schema_gen.py``; field names are snake_case of the spec names.
"""

from protocol.schema import Field as F
from protocol.schema import Message

OffsetFetchRequest = Message(
    'OffsetFetchRequest',
    api_key=9,
    versions=(1, 9),
    flexible_from=6,
    fields=(
        F('group_id', 'string', (0, 7)),
        F('topics', '[]struct', (0, 7), nullable=(2, 7), fields=(
            F('name', 'string', (0, 7)),
            F('partition_indexes', '[]int32', (0, 7)),
        )),
        F('groups', '[]struct', (8, None), fields=(
            F('group_id', 'string', (8, None)),
            F('member_id', 'string', (9, None), nullable=(9, None), default=None),
            F('member_epoch', 'int32', (9, None), default=-1),
            F('topics', '[]struct', (8, None), nullable=(8, None), fields=(
                F('name', 'string', (8, None)),
                F('partition_indexes', '[]int32', (8, None)),
            )),
        )),
        F('require_stable', 'bool', (7, None), default=False),
    ),
)

OffsetFetchResponse = Message(
    'OffsetFetchResponse',
    api_key=9,
    versions=(1, 9),
    flexible_from=6,
    fields=(
        F('throttle_time_ms', 'int32', (3, None)),
        F('topics', '[]struct', (0, 7), fields=(
            F('name', 'string', (0, 7)),
            F('partitions', '[]struct', (0, 7), fields=(
                F('partition_index', 'int32', (0, 7)),
                F('committed_offset', 'int64', (0, 7)),
                F('committed_leader_epoch', 'int32', (5, 7), default=-1),
                F('metadata', 'string', (0, 7), nullable=(0, 7)),
                F('error_code', 'int16', (0, 7)),
            )),
        )),
        F('error_code', 'int16', (2, 7), default=0),
        F('groups', '[]struct', (8, None), fields=(
            F('group_id', 'string', (8, None)),
            F('topics', '[]struct', (8, None), fields=(
                F('name', 'string', (8, None)),
                F('partitions', '[]struct', (8, None), fields=(
                    F('partition_index', 'int32', (8, None)),
                    F('committed_offset', 'int64', (8, None)),
                    F('committed_leader_epoch', 'int32', (8, None), default=-1),
                    F('metadata', 'string', (8, None), nullable=(8, None)),
                    F('error_code', 'int16', (8, None)),
                )),
            )),
            F('error_code', 'int16', (8, None), default=0),
        )),
    ),
)
