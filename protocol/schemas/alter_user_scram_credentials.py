"""AlterUserScramCredentials (API key 51): request and response, v0-v0.

Declarative schema generated from Apache Kafka's message specs by
``protocol/_schema_gen.py``; field names are snake_case of the spec names.
"""

from protocol.schema import Field as F
from protocol.schema import Message

AlterUserScramCredentialsRequest = Message(
    'AlterUserScramCredentialsRequest',
    api_key=51,
    versions=(0, 0),
    flexible_from=0,
    fields=(
        F('deletions', '[]struct', (0, None), fields=(
            F('name', 'string', (0, None)),
            F('mechanism', 'int8', (0, None)),
        )),
        F('upsertions', '[]struct', (0, None), fields=(
            F('name', 'string', (0, None)),
            F('mechanism', 'int8', (0, None)),
            F('iterations', 'int32', (0, None)),
            F('salt', 'bytes', (0, None)),
            F('salted_password', 'bytes', (0, None)),
        )),
    ),
)

AlterUserScramCredentialsResponse = Message(
    'AlterUserScramCredentialsResponse',
    api_key=51,
    versions=(0, 0),
    flexible_from=0,
    fields=(
        F('throttle_time_ms', 'int32', (0, None)),
        F('results', '[]struct', (0, None), fields=(
            F('user', 'string', (0, None)),
            F('error_code', 'int16', (0, None)),
            F('error_message', 'string', (0, None), nullable=(0, None)),
        )),
    ),
)
