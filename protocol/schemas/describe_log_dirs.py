"""DescribeLogDirs (API key 35): request and response, v1-v4.

Declarative schema generated from Apache Kafka's message specs by
``protocol/_schema_gen.py``; field names are snake_case of the spec names.
"""

from protocol.schema import Field as F
from protocol.schema import Message

DescribeLogDirsRequest = Message(
    'DescribeLogDirsRequest',
    api_key=35,
    versions=(1, 4),
    flexible_from=2,
    fields=(
        F('topics', '[]struct', (0, None), nullable=(0, None), fields=(
            F('topic', 'string', (0, None)),
            F('partitions', '[]int32', (0, None)),
        )),
    ),
)

DescribeLogDirsResponse = Message(
    'DescribeLogDirsResponse',
    api_key=35,
    versions=(1, 4),
    flexible_from=2,
    fields=(
        F('throttle_time_ms', 'int32', (0, None)),
        F('error_code', 'int16', (3, None)),
        F('results', '[]struct', (0, None), fields=(
            F('error_code', 'int16', (0, None)),
            F('log_dir', 'string', (0, None)),
            F('topics', '[]struct', (0, None), fields=(
                F('name', 'string', (0, None)),
                F('partitions', '[]struct', (0, None), fields=(
                    F('partition_index', 'int32', (0, None)),
                    F('partition_size', 'int64', (0, None)),
                    F('offset_lag', 'int64', (0, None)),
                    F('is_future_key', 'bool', (0, None)),
                )),
            )),
            F('total_bytes', 'int64', (4, None), default=-1),
            F('usable_bytes', 'int64', (4, None), default=-1),
        )),
    ),
)
