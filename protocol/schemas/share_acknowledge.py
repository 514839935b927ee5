"""ShareAcknowledge (API key 79): request and response, v1-v2.

Declarative schema generated from Apache Kafka's message specs by
``protocol/_schema_gen.py``; field names are snake_case of the spec names.
"""

from protocol.schema import Field as F
from protocol.schema import Message

ShareAcknowledgeRequest = Message(
    'ShareAcknowledgeRequest',
    api_key=79,
    versions=(1, 2),
    flexible_from=0,
    fields=(
        F('group_id', 'string', (0, None), nullable=(0, None), default=None),
        F('member_id', 'string', (0, None), nullable=(0, None)),
        F('share_session_epoch', 'int32', (0, None)),
        F('is_renew_ack', 'bool', (2, None), default=False),
        F('topics', '[]struct', (0, None), fields=(
            F('topic_id', 'uuid', (0, None)),
            F('partitions', '[]struct', (0, None), fields=(
                F('partition_index', 'int32', (0, None)),
                F('acknowledgement_batches', '[]struct', (0, None), fields=(
                    F('first_offset', 'int64', (0, None)),
                    F('last_offset', 'int64', (0, None)),
                    F('acknowledge_types', '[]int8', (0, None)),
                )),
            )),
        )),
    ),
)

ShareAcknowledgeResponse = Message(
    'ShareAcknowledgeResponse',
    api_key=79,
    versions=(1, 2),
    flexible_from=0,
    fields=(
        F('throttle_time_ms', 'int32', (0, None)),
        F('error_code', 'int16', (0, None)),
        F('error_message', 'string', (0, None), nullable=(0, None), default=None),
        F('acquisition_lock_timeout_ms', 'int32', (2, None)),
        F('responses', '[]struct', (0, None), fields=(
            F('topic_id', 'uuid', (0, None)),
            F('partitions', '[]struct', (0, None), fields=(
                F('partition_index', 'int32', (0, None)),
                F('error_code', 'int16', (0, None)),
                F('error_message', 'string', (0, None), nullable=(0, None), default=None),
                F('current_leader', 'struct', (0, None), fields=(
                    F('leader_id', 'int32', (0, None)),
                    F('leader_epoch', 'int32', (0, None)),
                )),
            )),
        )),
        F('node_endpoints', '[]struct', (0, None), fields=(
            F('node_id', 'int32', (0, None)),
            F('host', 'string', (0, None)),
            F('port', 'int32', (0, None)),
            F('rack', 'string', (0, None), nullable=(0, None), default=None),
        )),
    ),
)
