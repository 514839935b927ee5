"""WriteShareGroupState (API key 85): request and response, v0-v1.

Declarative schema generated from Apache Kafka's message specs by
``protocol/_schema_gen.py``; field names are snake_case of the spec names.
"""

from protocol.schema import Field as F
from protocol.schema import Message

WriteShareGroupStateRequest = Message(
    'WriteShareGroupStateRequest',
    api_key=85,
    versions=(0, 1),
    flexible_from=0,
    fields=(
        F('group_id', 'string', (0, None)),
        F('topics', '[]struct', (0, None), fields=(
            F('topic_id', 'uuid', (0, None)),
            F('partitions', '[]struct', (0, None), fields=(
                F('partition', 'int32', (0, None)),
                F('state_epoch', 'int32', (0, None)),
                F('leader_epoch', 'int32', (0, None)),
                F('start_offset', 'int64', (0, None)),
                F('delivery_complete_count', 'int32', (1, None), default=-1),
                F('state_batches', '[]struct', (0, None), fields=(
                    F('first_offset', 'int64', (0, None)),
                    F('last_offset', 'int64', (0, None)),
                    F('delivery_state', 'int8', (0, None)),
                    F('delivery_count', 'int16', (0, None)),
                )),
            )),
        )),
    ),
)

WriteShareGroupStateResponse = Message(
    'WriteShareGroupStateResponse',
    api_key=85,
    versions=(0, 1),
    flexible_from=0,
    fields=(
        F('results', '[]struct', (0, None), fields=(
            F('topic_id', 'uuid', (0, None)),
            F('partitions', '[]struct', (0, None), fields=(
                F('partition', 'int32', (0, None)),
                F('error_code', 'int16', (0, None)),
                F('error_message', 'string', (0, None), nullable=(0, None), default=None),
            )),
        )),
    ),
)
