"""ApiVersions (API key 18): the shapes of the messages, for type checkers and IDEs.

Generated from Apache Kafka's message specs by ``protocol/_schema_gen.py``, beside the codecs'
schema ``protocol/schemas/api_versions.py``; do not edit.  Each ``TypedDict`` is one message or
struct; each key is documented with the spec's ``about`` text and the versions it exists in.
Every key may be left out (``total=False``): the encoder sends a missing field as its default,
as Kafka's generated message classes do.  Annotate what you build::

    body: ApiVersionsRequestData = {...}
"""

from __future__ import annotations

from typing import TypedDict


class ApiVersionsRequestData(TypedDict, total=False):
    """ApiVersionsRequest (API key 18): versions 0-4, flexible from 3."""

    client_software_name: str
    """The name of the client. (versions 3+)"""

    client_software_version: str
    """The version of the client. (versions 3+)"""


class ApiVersionsResponseData(TypedDict, total=False):
    """ApiVersionsResponse (API key 18): versions 0-4, flexible from 3."""

    error_code: int
    """The top-level error code. (versions 0+)"""

    api_keys: list[ApiVersion]
    """The APIs supported by the broker. (versions 0+)"""

    throttle_time_ms: int
    """The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the request did not violate any quota. (versions 1+)"""

    supported_features: list[SupportedFeatureKey]
    """Features supported by the broker. Note: in v0-v3, features with MinSupportedVersion = 0 are omitted. (versions 3+; tagged 3+ as tag 0)"""

    finalized_features_epoch: int
    """The monotonically increasing epoch for the finalized features information. Valid values are >= 0. A value of -1 is special and represents unknown epoch. (versions 3+; tagged 3+ as tag 1; default -1)"""

    finalized_features: list[FinalizedFeatureKey]
    """List of cluster-wide finalized features. The information is valid only if FinalizedFeaturesEpoch >= 0. (versions 3+; tagged 3+ as tag 2)"""

    zk_migration_ready: bool
    """Set by a KRaft controller if the required configurations for ZK migration are present. (versions 3+; tagged 3+ as tag 3; default false)"""


class ApiVersion(TypedDict, total=False):
    """An element of ``ApiVersionsResponseData.api_keys``: The APIs supported by the broker."""

    api_key: int
    """The API index. (versions 0+)"""

    min_version: int
    """The minimum supported version, inclusive. (versions 0+)"""

    max_version: int
    """The maximum supported version, inclusive. (versions 0+)"""


class SupportedFeatureKey(TypedDict, total=False):
    """An element of ``ApiVersionsResponseData.supported_features``: Features supported by the broker. Note: in v0-v3, features with MinSupportedVersion = 0 are omitted."""

    name: str
    """The name of the feature. (versions 3+)"""

    min_version: int
    """The minimum supported version for the feature. (versions 3+)"""

    max_version: int
    """The maximum supported version for the feature. (versions 3+)"""


class FinalizedFeatureKey(TypedDict, total=False):
    """An element of ``ApiVersionsResponseData.finalized_features``: List of cluster-wide finalized features. The information is valid only if FinalizedFeaturesEpoch >= 0."""

    name: str
    """The name of the feature. (versions 3+)"""

    max_version_level: int
    """The cluster-wide finalized max version level for the feature. (versions 3+)"""

    min_version_level: int
    """The cluster-wide finalized min version level for the feature. (versions 3+)"""
