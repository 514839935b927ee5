"""ElectLeaders (API key 43): request and response, v0-v2.

Declarative schema generated from Apache Kafka's message specs by
``protocol/_schema_gen.py``; field names are snake_case of the spec names.
"""

from protocol.schema import Field as F
from protocol.schema import Message

ElectLeadersRequest = Message(
    'ElectLeadersRequest',
    api_key=43,
    versions=(0, 2),
    flexible_from=2,
    fields=(
        F('election_type', 'int8', (1, None)),
        F('topic_partitions', '[]struct', (0, None), nullable=(0, None), fields=(
            F('topic', 'string', (0, None)),
            F('partitions', '[]int32', (0, None)),
        )),
        F('timeout_ms', 'int32', (0, None), default=60000),
    ),
)

ElectLeadersResponse = Message(
    'ElectLeadersResponse',
    api_key=43,
    versions=(0, 2),
    flexible_from=2,
    fields=(
        F('throttle_time_ms', 'int32', (0, None)),
        F('error_code', 'int16', (1, None)),
        F('replica_election_results', '[]struct', (0, None), fields=(
            F('topic', 'string', (0, None)),
            F('partition_result', '[]struct', (0, None), fields=(
                F('partition_id', 'int32', (0, None)),
                F('error_code', 'int16', (0, None)),
                F('error_message', 'string', (0, None), nullable=(0, None)),
            )),
        )),
    ),
)
