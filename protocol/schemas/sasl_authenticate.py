"""SaslAuthenticate (API key 36): request and response, v0-v2.

Declarative schema generated from Apache Kafka's message specs by
``protocol/_schema_gen.py``; field names are snake_case of the spec names.
"""

from protocol.schema import Field as F
from protocol.schema import Message

SaslAuthenticateRequest = Message(
    'SaslAuthenticateRequest',
    api_key=36,
    versions=(0, 2),
    flexible_from=2,
    fields=(
        F('auth_bytes', 'bytes', (0, None)),
    ),
)

SaslAuthenticateResponse = Message(
    'SaslAuthenticateResponse',
    api_key=36,
    versions=(0, 2),
    flexible_from=2,
    fields=(
        F('error_code', 'int16', (0, None)),
        F('error_message', 'string', (0, None), nullable=(0, None)),
        F('auth_bytes', 'bytes', (0, None)),
        F('session_lifetime_ms', 'int64', (1, None), default=0),
    ),
)
