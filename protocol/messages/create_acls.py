"""CreateAcls (API key 30): the shapes of the messages, for type checkers and IDEs.

Generated from Apache Kafka's message specs by ``protocol/_schema_gen.py``, beside the codecs'
schema ``protocol/schemas/create_acls.py``; do not edit.  Each ``TypedDict`` is one message or
struct; each key is documented with the spec's ``about`` text and the versions it exists in.
Every key may be left out (``total=False``): the encoder sends a missing field as its default,
as Kafka's generated message classes do.  Annotate what you build::

    body: CreateAclsRequestData = {...}
"""

from __future__ import annotations

from typing import TypedDict


class CreateAclsRequestData(TypedDict, total=False):
    """CreateAclsRequest (API key 30): versions 1-3, flexible from 2."""

    creations: list[AclCreation]
    """The ACLs that we want to create. (versions 0+)"""


class AclCreation(TypedDict, total=False):
    """An element of ``CreateAclsRequestData.creations``: The ACLs that we want to create."""

    resource_type: int
    """The type of the resource. (versions 0+)"""

    resource_name: str
    """The resource name for the ACL. (versions 0+)"""

    resource_pattern_type: int
    """The pattern type for the ACL. (versions 1+; default 3)"""

    principal: str
    """The principal for the ACL. (versions 0+)"""

    host: str
    """The host for the ACL. (versions 0+)"""

    operation: int
    """The operation type for the ACL (read, write, etc.). (versions 0+)"""

    permission_type: int
    """The permission type for the ACL (allow, deny, etc.). (versions 0+)"""


class CreateAclsResponseData(TypedDict, total=False):
    """CreateAclsResponse (API key 30): versions 1-3, flexible from 2."""

    throttle_time_ms: int
    """The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the request did not violate any quota. (versions 0+)"""

    results: list[AclCreationResult]
    """The results for each ACL creation. (versions 0+)"""


class AclCreationResult(TypedDict, total=False):
    """An element of ``CreateAclsResponseData.results``: The results for each ACL creation."""

    error_code: int
    """The result error, or zero if there was no error. (versions 0+)"""

    error_message: str | None
    """The result message, or null if there was no error. (versions 0+; nullable 0+)"""
