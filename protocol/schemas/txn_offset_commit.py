"""TxnOffsetCommit (API key 28): request and response, v0-v5.

Declarative schema generated from Apache Kafka's message specs by
``protocol/_schema_gen.py``; field names are snake_case of the spec names.
"""

from protocol.schema import Field as F
from protocol.schema import Message

TxnOffsetCommitRequest = Message(
    'TxnOffsetCommitRequest',
    api_key=28,
    versions=(0, 5),
    flexible_from=3,
    fields=(
        F('transactional_id', 'string', (0, None)),
        F('group_id', 'string', (0, None)),
        F('producer_id', 'int64', (0, None)),
        F('producer_epoch', 'int16', (0, None)),
        F('generation_id', 'int32', (3, None), default=-1),
        F('member_id', 'string', (3, None), default=''),
        F('group_instance_id', 'string', (3, None), nullable=(3, None), default=None),
        F('topics', '[]struct', (0, None), fields=(
            F('name', 'string', (0, None)),
            F('partitions', '[]struct', (0, None), fields=(
                F('partition_index', 'int32', (0, None)),
                F('committed_offset', 'int64', (0, None)),
                F('committed_leader_epoch', 'int32', (2, None), default=-1),
                F('committed_metadata', 'string', (0, None), nullable=(0, None)),
            )),
        )),
    ),
)

TxnOffsetCommitResponse = Message(
    'TxnOffsetCommitResponse',
    api_key=28,
    versions=(0, 5),
    flexible_from=3,
    fields=(
        F('throttle_time_ms', 'int32', (0, None)),
        F('topics', '[]struct', (0, None), fields=(
            F('name', 'string', (0, None)),
            F('partitions', '[]struct', (0, None), fields=(
                F('partition_index', 'int32', (0, None)),
                F('error_code', 'int16', (0, None)),
            )),
        )),
    ),
)
