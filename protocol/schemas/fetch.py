"""Fetch (API key 1): request and response, v4-v17.

Declarative schema generated from Apache Kafka's message specs by
``protocol/_schema_gen.py``; field names are snake_case of the spec names.
"""

from protocol.schema import Field as F
from protocol.schema import Message

FetchRequest = Message(
    'FetchRequest',
    api_key=1,
    versions=(4, 17),
    flexible_from=12,
    fields=(
        F('cluster_id', 'string', (12, None), nullable=(12, None), tag=0, tagged=(12, None), default=None),
        F('replica_id', 'int32', (0, 14), default=-1),
        F('replica_state', 'struct', (15, None), tag=1, tagged=(15, None), fields=(
            F('replica_id', 'int32', (15, None), default=-1),
            F('replica_epoch', 'int64', (15, None), default=-1),
        )),
        F('max_wait_ms', 'int32', (0, None)),
        F('min_bytes', 'int32', (0, None)),
        F('max_bytes', 'int32', (3, None), default=2147483647),
        F('isolation_level', 'int8', (4, None), default=0),
        F('session_id', 'int32', (7, None), default=0),
        F('session_epoch', 'int32', (7, None), default=-1),
        F('topics', '[]struct', (0, None), fields=(
            F('topic', 'string', (0, 12)),
            F('topic_id', 'uuid', (13, None)),
            F('partitions', '[]struct', (0, None), fields=(
                F('partition', 'int32', (0, None)),
                F('current_leader_epoch', 'int32', (9, None), default=-1),
                F('fetch_offset', 'int64', (0, None)),
                F('last_fetched_epoch', 'int32', (12, None), default=-1),
                F('log_start_offset', 'int64', (5, None), default=-1),
                F('partition_max_bytes', 'int32', (0, None)),
                F('replica_directory_id', 'uuid', (17, None), tag=0, tagged=(17, None)),
            )),
        )),
        F('forgotten_topics_data', '[]struct', (7, None), fields=(
            F('topic', 'string', (7, 12)),
            F('topic_id', 'uuid', (13, None)),
            F('partitions', '[]int32', (7, None)),
        )),
        F('rack_id', 'string', (11, None), default=''),
    ),
)

FetchResponse = Message(
    'FetchResponse',
    api_key=1,
    versions=(4, 17),
    flexible_from=12,
    fields=(
        F('throttle_time_ms', 'int32', (1, None)),
        F('error_code', 'int16', (7, None)),
        F('session_id', 'int32', (7, None), default=0),
        F('responses', '[]struct', (0, None), fields=(
            F('topic', 'string', (0, 12)),
            F('topic_id', 'uuid', (13, None)),
            F('partitions', '[]struct', (0, None), fields=(
                F('partition_index', 'int32', (0, None)),
                F('error_code', 'int16', (0, None)),
                F('high_watermark', 'int64', (0, None)),
                F('last_stable_offset', 'int64', (4, None), default=-1),
                F('log_start_offset', 'int64', (5, None), default=-1),
                F('diverging_epoch', 'struct', (12, None), tag=0, tagged=(12, None), fields=(
                    F('epoch', 'int32', (12, None), default=-1),
                    F('end_offset', 'int64', (12, None), default=-1),
                )),
                F('current_leader', 'struct', (12, None), tag=1, tagged=(12, None), fields=(
                    F('leader_id', 'int32', (12, None), default=-1),
                    F('leader_epoch', 'int32', (12, None), default=-1),
                )),
                F('snapshot_id', 'struct', (12, None), tag=2, tagged=(12, None), fields=(
                    F('end_offset', 'int64', (0, None), default=-1),
                    F('epoch', 'int32', (0, None), default=-1),
                )),
                F('aborted_transactions', '[]struct', (4, None), nullable=(4, None), fields=(
                    F('producer_id', 'int64', (4, None)),
                    F('first_offset', 'int64', (4, None)),
                )),
                F('preferred_read_replica', 'int32', (11, None), default=-1),
                F('records', 'records', (0, None)),
            )),
        )),
        F('node_endpoints', '[]struct', (16, None), tag=0, tagged=(16, None), fields=(
            F('node_id', 'int32', (16, None)),
            F('host', 'string', (16, None)),
            F('port', 'int32', (16, None)),
            F('rack', 'string', (16, None), nullable=(16, None), default=None),
        )),
    ),
)
