"""InitializeShareGroupState (API key 83): request and response, v0-v0.

Declarative schema generated from Apache Kafka's message specs by
``protocol/_schema_gen.py``; field names are snake_case of the spec names.
"""

from protocol.schema import Field as F
from protocol.schema import Message

InitializeShareGroupStateRequest = Message(
    'InitializeShareGroupStateRequest',
    api_key=83,
    versions=(0, 0),
    flexible_from=0,
    fields=(
        F('group_id', 'string', (0, None)),
        F('topics', '[]struct', (0, None), fields=(
            F('topic_id', 'uuid', (0, None)),
            F('partitions', '[]struct', (0, None), fields=(
                F('partition', 'int32', (0, None)),
                F('state_epoch', 'int32', (0, None)),
                F('start_offset', 'int64', (0, None)),
            )),
        )),
    ),
)

InitializeShareGroupStateResponse = Message(
    'InitializeShareGroupStateResponse',
    api_key=83,
    versions=(0, 0),
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
