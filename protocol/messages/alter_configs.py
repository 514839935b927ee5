"""AlterConfigs (API key 33): the shapes of the messages, for type checkers and IDEs.

Generated from Apache Kafka's message specs by ``protocol/_schema_gen.py``, beside the codecs'
schema ``protocol/schemas/alter_configs.py``; do not edit.  Each ``TypedDict`` is one message or
struct; each key is documented with the spec's ``about`` text and the versions it exists in.
Every key may be left out (``total=False``): the encoder sends a missing field as its default,
as Kafka's generated message classes do.  Annotate what you build::

    body: AlterConfigsRequestData = {...}
"""

from __future__ import annotations

from typing import TypedDict


class AlterConfigsRequestData(TypedDict, total=False):
    """AlterConfigsRequest (API key 33): versions 0-2, flexible from 2."""

    resources: list[AlterConfigsResource]
    """The updates for each resource. (versions 0+)"""

    validate_only: bool
    """True if we should validate the request, but not change the configurations. (versions 0+)"""


class AlterConfigsResource(TypedDict, total=False):
    """An element of ``AlterConfigsRequestData.resources``: The updates for each resource."""

    resource_type: int
    """The resource type. (versions 0+)"""

    resource_name: str
    """The resource name. (versions 0+)"""

    configs: list[AlterableConfig]
    """The configurations. (versions 0+)"""


class AlterableConfig(TypedDict, total=False):
    """An element of ``AlterConfigsResource.configs``: The configurations."""

    name: str
    """The configuration key name. (versions 0+)"""

    value: str | None
    """The value to set for the configuration key. (versions 0+; nullable 0+)"""


class AlterConfigsResponseData(TypedDict, total=False):
    """AlterConfigsResponse (API key 33): versions 0-2, flexible from 2."""

    throttle_time_ms: int
    """Duration in milliseconds for which the request was throttled due to a quota violation, or zero if the request did not violate any quota. (versions 0+)"""

    responses: list[AlterConfigsResourceResponse]
    """The responses for each resource. (versions 0+)"""


class AlterConfigsResourceResponse(TypedDict, total=False):
    """An element of ``AlterConfigsResponseData.responses``: The responses for each resource."""

    error_code: int
    """The resource error code. (versions 0+)"""

    error_message: str | None
    """The resource error message, or null if there was no error. (versions 0+; nullable 0+)"""

    resource_type: int
    """The resource type. (versions 0+)"""

    resource_name: str
    """The resource name. (versions 0+)"""
