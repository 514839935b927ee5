"""DescribeConfigs (API key 32): the shapes of the messages, for type checkers and IDEs.

Generated from Apache Kafka's message specs by ``protocol/_schema_gen.py``, beside the codecs'
schema ``protocol/schemas/describe_configs.py``; do not edit.  Each ``TypedDict`` is one message or
struct; each key is documented with the spec's ``about`` text and the versions it exists in.
Every key may be left out (``total=False``): the encoder sends a missing field as its default,
as Kafka's generated message classes do.  Annotate what you build::

    body: DescribeConfigsRequestData = {...}
"""

from __future__ import annotations

from typing import TypedDict


class DescribeConfigsRequestData(TypedDict, total=False):
    """DescribeConfigsRequest (API key 32): versions 1-4, flexible from 4."""

    resources: list[DescribeConfigsResource]
    """The resources whose configurations we want to describe. (versions 0+)"""

    include_synonyms: bool
    """True if we should include all synonyms. (versions 1+; default false)"""

    include_documentation: bool
    """True if we should include configuration documentation. (versions 3+; default false)"""


class DescribeConfigsResource(TypedDict, total=False):
    """An element of ``DescribeConfigsRequestData.resources``: The resources whose configurations we want to describe."""

    resource_type: int
    """The resource type. (versions 0+)"""

    resource_name: str
    """The resource name. (versions 0+)"""

    configuration_keys: list[str] | None
    """The configuration keys to list, or null to list all configuration keys. (versions 0+; nullable 0+)"""


class DescribeConfigsResponseData(TypedDict, total=False):
    """DescribeConfigsResponse (API key 32): versions 1-4, flexible from 4."""

    throttle_time_ms: int
    """The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the request did not violate any quota. (versions 0+)"""

    results: list[DescribeConfigsResult]
    """The results for each resource. (versions 0+)"""


class DescribeConfigsResult(TypedDict, total=False):
    """An element of ``DescribeConfigsResponseData.results``: The results for each resource."""

    error_code: int
    """The error code, or 0 if we were able to successfully describe the configurations. (versions 0+)"""

    error_message: str | None
    """The error message, or null if we were able to successfully describe the configurations. (versions 0+; nullable 0+)"""

    resource_type: int
    """The resource type. (versions 0+)"""

    resource_name: str
    """The resource name. (versions 0+)"""

    configs: list[DescribeConfigsResourceResult]
    """Each listed configuration. (versions 0+)"""


class DescribeConfigsResourceResult(TypedDict, total=False):
    """An element of ``DescribeConfigsResult.configs``: Each listed configuration."""

    name: str
    """The configuration name. (versions 0+)"""

    value: str | None
    """The configuration value. (versions 0+; nullable 0+)"""

    read_only: bool
    """True if the configuration is read-only. (versions 0+)"""

    config_source: int
    """The configuration source. (versions 1+; default -1)"""

    is_sensitive: bool
    """True if this configuration is sensitive. (versions 0+)"""

    synonyms: list[DescribeConfigsSynonym]
    """The synonyms for this configuration key. (versions 1+)"""

    config_type: int
    """The configuration data type. Type can be one of the following values - BOOLEAN, STRING, INT, SHORT, LONG, DOUBLE, LIST, CLASS, PASSWORD. (versions 3+; default 0)"""

    documentation: str | None
    """The configuration documentation. (versions 3+; nullable 0+)"""


class DescribeConfigsSynonym(TypedDict, total=False):
    """An element of ``DescribeConfigsResourceResult.synonyms``: The synonyms for this configuration key."""

    name: str
    """The synonym name. (versions 1+)"""

    value: str | None
    """The synonym value. (versions 1+; nullable 0+)"""

    source: int
    """The synonym source. (versions 1+)"""
