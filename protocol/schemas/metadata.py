"""Metadata (API key 3): request and response, v0-v13.

Declarative schema generated from Apache Kafka's message specs by
``protocol/_schema_gen.py``; field names are snake_case of the spec names.
"""

from protocol.schema import Field as F
from protocol.schema import Message

MetadataRequest = Message(
    'MetadataRequest',
    api_key=3,
    versions=(0, 13),
    flexible_from=9,
    fields=(
        F('topics', '[]struct', (0, None), nullable=(1, None), fields=(
            F('topic_id', 'uuid', (10, None)),
            F('name', 'string', (0, None), nullable=(10, None)),
        )),
        F('allow_auto_topic_creation', 'bool', (4, None), default=True),
        F('include_cluster_authorized_operations', 'bool', (8, 10)),
        F('include_topic_authorized_operations', 'bool', (8, None)),
    ),
)

MetadataResponse = Message(
    'MetadataResponse',
    api_key=3,
    versions=(0, 13),
    flexible_from=9,
    fields=(
        F('throttle_time_ms', 'int32', (3, None)),
        F('brokers', '[]struct', (0, None), fields=(
            F('node_id', 'int32', (0, None)),
            F('host', 'string', (0, None)),
            F('port', 'int32', (0, None)),
            F('rack', 'string', (1, None), nullable=(1, None), default=None),
        )),
        F('cluster_id', 'string', (2, None), nullable=(2, None), default=None),
        F('controller_id', 'int32', (1, None), default=-1),
        F('topics', '[]struct', (0, None), fields=(
            F('error_code', 'int16', (0, None)),
            F('name', 'string', (0, None), nullable=(12, None)),
            F('topic_id', 'uuid', (10, None)),
            F('is_internal', 'bool', (1, None), default=False),
            F('partitions', '[]struct', (0, None), fields=(
                F('error_code', 'int16', (0, None)),
                F('partition_index', 'int32', (0, None)),
                F('leader_id', 'int32', (0, None)),
                F('leader_epoch', 'int32', (7, None), default=-1),
                F('replica_nodes', '[]int32', (0, None)),
                F('isr_nodes', '[]int32', (0, None)),
                F('offline_replicas', '[]int32', (5, None)),
            )),
            F('topic_authorized_operations', 'int32', (8, None), default=-2147483648),
        )),
        F('cluster_authorized_operations', 'int32', (8, 10), default=-2147483648),
        F('error_code', 'int16', (13, None)),
    ),
)
