"""DescribeCluster (API key 60): request and response, v0-v2.

Declarative schema generated from Apache Kafka's message specs by
``protocol/_schema_gen.py``; field names are snake_case of the spec names.
"""

from protocol.schema import Field as F
from protocol.schema import Message

DescribeClusterRequest = Message(
    'DescribeClusterRequest',
    api_key=60,
    versions=(0, 2),
    flexible_from=0,
    fields=(
        F('include_cluster_authorized_operations', 'bool', (0, None)),
        F('endpoint_type', 'int8', (1, None), default=1),
        F('include_fenced_brokers', 'bool', (2, None)),
    ),
)

DescribeClusterResponse = Message(
    'DescribeClusterResponse',
    api_key=60,
    versions=(0, 2),
    flexible_from=0,
    fields=(
        F('throttle_time_ms', 'int32', (0, None)),
        F('error_code', 'int16', (0, None)),
        F('error_message', 'string', (0, None), nullable=(0, None), default=None),
        F('endpoint_type', 'int8', (1, None), default=1),
        F('cluster_id', 'string', (0, None)),
        F('controller_id', 'int32', (0, None), default=-1),
        F('brokers', '[]struct', (0, None), fields=(
            F('broker_id', 'int32', (0, None)),
            F('host', 'string', (0, None)),
            F('port', 'int32', (0, None)),
            F('rack', 'string', (0, None), nullable=(0, None), default=None),
            F('is_fenced', 'bool', (2, None)),
        )),
        F('cluster_authorized_operations', 'int32', (0, None), default=-2147483648),
    ),
)
