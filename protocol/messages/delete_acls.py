"""DeleteAcls (API key 31): the shapes of the messages, for type checkers and IDEs.

Generated from Apache Kafka's message specs by ``protocol/_schema_gen.py``, beside the codecs'
schema ``protocol/schemas/delete_acls.py``; do not edit.  Each ``TypedDict`` is one message or
struct; each key is documented with the spec's ``about`` text and the versions it exists in.
Every key may be left out (``total=False``): the encoder sends a missing field as its default,
as Kafka's generated message classes do.  Annotate what you build::

    body: DeleteAclsRequestData = {...}
"""

from __future__ import annotations

from typing import TypedDict


class DeleteAclsRequestData(TypedDict, total=False):
    """DeleteAclsRequest (API key 31): versions 1-3, flexible from 2."""

    filters: list[DeleteAclsFilter]
    """The filters to use when deleting ACLs. (versions 0+)"""


class DeleteAclsFilter(TypedDict, total=False):
    """An element of ``DeleteAclsRequestData.filters``: The filters to use when deleting ACLs."""

    resource_type_filter: int
    """The resource type. (versions 0+)"""

    resource_name_filter: str | None
    """The resource name. (versions 0+; nullable 0+)"""

    pattern_type_filter: int
    """The pattern type. (versions 1+; default 3)"""

    principal_filter: str | None
    """The principal filter, or null to accept all principals. (versions 0+; nullable 0+)"""

    host_filter: str | None
    """The host filter, or null to accept all hosts. (versions 0+; nullable 0+)"""

    operation: int
    """The ACL operation. (versions 0+)"""

    permission_type: int
    """The permission type. (versions 0+)"""


class DeleteAclsResponseData(TypedDict, total=False):
    """DeleteAclsResponse (API key 31): versions 1-3, flexible from 2."""

    throttle_time_ms: int
    """The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the request did not violate any quota. (versions 0+)"""

    filter_results: list[DeleteAclsFilterResult]
    """The results for each filter. (versions 0+)"""


class DeleteAclsFilterResult(TypedDict, total=False):
    """An element of ``DeleteAclsResponseData.filter_results``: The results for each filter."""

    error_code: int
    """The error code, or 0 if the filter succeeded. (versions 0+)"""

    error_message: str | None
    """The error message, or null if the filter succeeded. (versions 0+; nullable 0+)"""

    matching_acls: list[DeleteAclsMatchingAcl]
    """The ACLs which matched this filter. (versions 0+)"""


class DeleteAclsMatchingAcl(TypedDict, total=False):
    """An element of ``DeleteAclsFilterResult.matching_acls``: The ACLs which matched this filter."""

    error_code: int
    """The deletion error code, or 0 if the deletion succeeded. (versions 0+)"""

    error_message: str | None
    """The deletion error message, or null if the deletion succeeded. (versions 0+; nullable 0+)"""

    resource_type: int
    """The ACL resource type. (versions 0+)"""

    resource_name: str
    """The ACL resource name. (versions 0+)"""

    pattern_type: int
    """The ACL resource pattern type. (versions 1+; default 3)"""

    principal: str
    """The ACL principal. (versions 0+)"""

    host: str
    """The ACL host. (versions 0+)"""

    operation: int
    """The ACL operation. (versions 0+)"""

    permission_type: int
    """The ACL permission type. (versions 0+)"""
