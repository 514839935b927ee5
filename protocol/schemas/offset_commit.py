"""OffsetCommit (API key 8): request and response, v2-v9.

Declarative schema generated from Apache Kafka's message specs by
``protocol/_schema_gen.py``; field names are snake_case of the spec names.
"""

from protocol.schema import Field as F
from protocol.schema import Message

OffsetCommitRequest = Message(
    'OffsetCommitRequest',
    api_key=8,
    versions=(2, 9),
    flexible_from=8,
    fields=(
        F('group_id', 'string', (0, None)),
        F('generation_id_or_member_epoch', 'int32', (1, None), default=-1),
        F('member_id', 'string', (1, None)),
        F('group_instance_id', 'string', (7, None), nullable=(7, None), default=None),
        F('retention_time_ms', 'int64', (2, 4), default=-1),
        F('topics', '[]struct', (0, None), fields=(
            F('name', 'string', (0, None)),
            F('partitions', '[]struct', (0, None), fields=(
                F('partition_index', 'int32', (0, None)),
                F('committed_offset', 'int64', (0, None)),
                F('committed_leader_epoch', 'int32', (6, None), default=-1),
                F('committed_metadata', 'string', (0, None), nullable=(0, None)),
            )),
        )),
    ),
)

OffsetCommitResponse = Message(
    'OffsetCommitResponse',
    api_key=8,
    versions=(2, 9),
    flexible_from=8,
    fields=(
        F('throttle_time_ms', 'int32', (3, None)),
        F('topics', '[]struct', (0, None), fields=(
            F('name', 'string', (0, None)),
            F('partitions', '[]struct', (0, None), fields=(
                F('partition_index', 'int32', (0, None)),
                F('error_code', 'int16', (0, None)),
            )),
        )),
    ),
)
