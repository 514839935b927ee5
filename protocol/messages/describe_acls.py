"""DescribeAcls (API key 29): the shapes of the messages, for type checkers and IDEs.

Generated from Apache Kafka's message specs by ``protocol/_schema_gen.py``, beside the codecs'
schema ``protocol/schemas/describe_acls.py``; do not edit.  Each ``TypedDict`` is one message or
struct; each key is documented with the spec's ``about`` text and the versions it exists in.
Every key may be left out (``total=False``): the encoder sends a missing field as its default,
as Kafka's generated message classes do.  Annotate what you build::

    body: DescribeAclsRequestData = {...}
"""

from __future__ import annotations

from typing import TypedDict


class DescribeAclsRequestData(TypedDict, total=False):
    """DescribeAclsRequest (API key 29): versions 1-3, flexible from 2."""

    resource_type_filter: int
    """The resource type. (versions 0+)"""

    resource_name_filter: str | None
    """The resource name, or null to match any resource name. (versions 0+; nullable 0+)"""

    pattern_type_filter: int
    """The resource pattern to match. (versions 1+; default 3)"""

    principal_filter: str | None
    """The principal to match, or null to match any principal. (versions 0+; nullable 0+)"""

    host_filter: str | None
    """The host to match, or null to match any host. (versions 0+; nullable 0+)"""

    operation: int
    """The operation to match. (versions 0+)"""

    permission_type: int
    """The permission type to match. (versions 0+)"""


class DescribeAclsResponseData(TypedDict, total=False):
    """DescribeAclsResponse (API key 29): versions 1-3, flexible from 2."""

    throttle_time_ms: int
    """The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the request did not violate any quota. (versions 0+)"""

    error_code: int
    """The error code, or 0 if there was no error. (versions 0+)"""

    error_message: str | None
    """The error message, or null if there was no error. (versions 0+; nullable 0+)"""

    resources: list[DescribeAclsResource]
    """Each Resource that is referenced in an ACL. (versions 0+)"""


class DescribeAclsResource(TypedDict, total=False):
    """An element of ``DescribeAclsResponseData.resources``: Each Resource that is referenced in an ACL."""

    resource_type: int
    """The resource type. (versions 0+)"""

    resource_name: str
    """The resource name. (versions 0+)"""

    pattern_type: int
    """The resource pattern type. (versions 1+; default 3)"""

    acls: list[AclDescription]
    """The ACLs. (versions 0+)"""


class AclDescription(TypedDict, total=False):
    """An element of ``DescribeAclsResource.acls``: The ACLs."""

    principal: str
    """The ACL principal. (versions 0+)"""

    host: str
    """The ACL host. (versions 0+)"""

    operation: int
    """The ACL operation. (versions 0+)"""

    permission_type: int
    """The ACL permission type. (versions 0+)"""
