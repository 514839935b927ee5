"""ApiVersions (API key 18): request and response, v0-v4.

Declarative schema generated from Apache Kafka's message specs by
``protocol/_schema_gen.py``; field names are snake_case of the spec names.
"""

from protocol.schema import Field as F
from protocol.schema import Message

ApiVersionsRequest = Message(
    'ApiVersionsRequest',
    api_key=18,
    versions=(0, 4),
    flexible_from=3,
    fields=(
        F('client_software_name', 'string', (3, None)),
        F('client_software_version', 'string', (3, None)),
    ),
)

ApiVersionsResponse = Message(
    'ApiVersionsResponse',
    api_key=18,
    versions=(0, 4),
    flexible_from=3,
    fields=(
        F('error_code', 'int16', (0, None)),
        F('api_keys', '[]struct', (0, None), fields=(
            F('api_key', 'int16', (0, None)),
            F('min_version', 'int16', (0, None)),
            F('max_version', 'int16', (0, None)),
        )),
        F('throttle_time_ms', 'int32', (1, None)),
        F('supported_features', '[]struct', (3, None), tag=0, tagged=(3, None), fields=(
            F('name', 'string', (3, None)),
            F('min_version', 'int16', (3, None)),
            F('max_version', 'int16', (3, None)),
        )),
        F('finalized_features_epoch', 'int64', (3, None), tag=1, tagged=(3, None), default=-1),
        F('finalized_features', '[]struct', (3, None), tag=2, tagged=(3, None), fields=(
            F('name', 'string', (3, None)),
            F('max_version_level', 'int16', (3, None)),
            F('min_version_level', 'int16', (3, None)),
        )),
        F('zk_migration_ready', 'bool', (3, None), tag=3, tagged=(3, None), default=False),
    ),
)
