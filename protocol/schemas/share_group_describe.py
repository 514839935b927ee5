"""ShareGroupDescribe (API key 77): request and response, v1-v1.

Declarative schema generated from Apache Kafka's message specs by
``protocol/_schema_gen.py``; field names are snake_case of the spec names.
"""

from protocol.schema import Field as F
from protocol.schema import Message

ShareGroupDescribeRequest = Message(
    'ShareGroupDescribeRequest',
    api_key=77,
    versions=(1, 1),
    flexible_from=0,
    fields=(
        F('group_ids', '[]string', (0, None)),
        F('include_authorized_operations', 'bool', (0, None)),
    ),
)

ShareGroupDescribeResponse = Message(
    'ShareGroupDescribeResponse',
    api_key=77,
    versions=(1, 1),
    flexible_from=0,
    fields=(
        F('throttle_time_ms', 'int32', (0, None)),
        F('groups', '[]struct', (0, None), fields=(
            F('error_code', 'int16', (0, None)),
            F('error_message', 'string', (0, None), nullable=(0, None), default=None),
            F('group_id', 'string', (0, None)),
            F('group_state', 'string', (0, None)),
            F('group_epoch', 'int32', (0, None)),
            F('assignment_epoch', 'int32', (0, None)),
            F('assignor_name', 'string', (0, None)),
            F('members', '[]struct', (0, None), fields=(
                F('member_id', 'string', (0, None)),
                F('rack_id', 'string', (0, None), nullable=(0, None), default=None),
                F('member_epoch', 'int32', (0, None)),
                F('client_id', 'string', (0, None)),
                F('client_host', 'string', (0, None)),
                F('subscribed_topic_names', '[]string', (0, None)),
                F('assignment', 'struct', (0, None), fields=(
                    F('topic_partitions', '[]struct', (0, None), fields=(
                        F('topic_id', 'uuid', (0, None)),
                        F('topic_name', 'string', (0, None)),
                        F('partitions', '[]int32', (0, None)),
                    )),
                )),
            )),
            F('authorized_operations', 'int32', (0, None), default=-2147483648),
        )),
    ),
)
