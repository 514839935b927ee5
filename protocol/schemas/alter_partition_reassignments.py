"""AlterPartitionReassignments (API key 45): request and response, v0-v1.

Declarative schema generated from Apache Kafka's message specs by
``protocol/_schema_gen.py``; field names are snake_case of the spec names.
"""

from protocol.schema import Field as F
from protocol.schema import Message

AlterPartitionReassignmentsRequest = Message(
    'AlterPartitionReassignmentsRequest',
    api_key=45,
    versions=(0, 1),
    flexible_from=0,
    fields=(
        F('timeout_ms', 'int32', (0, None), default=60000),
        F('allow_replication_factor_change', 'bool', (1, None), default=True),
        F('topics', '[]struct', (0, None), fields=(
            F('name', 'string', (0, None)),
            F('partitions', '[]struct', (0, None), fields=(
                F('partition_index', 'int32', (0, None)),
                F('replicas', '[]int32', (0, None), nullable=(0, None), default=None),
            )),
        )),
    ),
)

AlterPartitionReassignmentsResponse = Message(
    'AlterPartitionReassignmentsResponse',
    api_key=45,
    versions=(0, 1),
    flexible_from=0,
    fields=(
        F('throttle_time_ms', 'int32', (0, None)),
        F('allow_replication_factor_change', 'bool', (1, None), default=True),
        F('error_code', 'int16', (0, None)),
        F('error_message', 'string', (0, None), nullable=(0, None)),
        F('responses', '[]struct', (0, None), fields=(
            F('name', 'string', (0, None)),
            F('partitions', '[]struct', (0, None), fields=(
                F('partition_index', 'int32', (0, None)),
                F('error_code', 'int16', (0, None)),
                F('error_message', 'string', (0, None), nullable=(0, None)),
            )),
        )),
    ),
)
