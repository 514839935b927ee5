"""SaslHandshake (API key 17): request and response, v0-v1.

Declarative schema generated from Apache Kafka's message specs by
``protocol/_schema_gen.py``; field names are snake_case of the spec names.
"""

from protocol.schema import Field as F
from protocol.schema import Message

SaslHandshakeRequest = Message(
    'SaslHandshakeRequest',
    api_key=17,
    versions=(0, 1),
    flexible_from=None,
    fields=(
        F('mechanism', 'string', (0, None)),
    ),
)

SaslHandshakeResponse = Message(
    'SaslHandshakeResponse',
    api_key=17,
    versions=(0, 1),
    flexible_from=None,
    fields=(
        F('error_code', 'int16', (0, None)),
        F('mechanisms', '[]string', (0, None)),
    ),
)
