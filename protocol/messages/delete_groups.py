"""DeleteGroups (API key 42): the shapes of the messages, for type checkers and IDEs.

Generated from Apache Kafka's message specs by ``protocol/_schema_gen.py``, beside the codecs'
schema ``protocol/schemas/delete_groups.py``; do not edit.  Each ``TypedDict`` is one message or
struct; each key is documented with the spec's ``about`` text and the versions it exists in.
Every key may be left out (``total=False``): the encoder sends a missing field as its default,
as Kafka's generated message classes do.  Annotate what you build::

    body: DeleteGroupsRequestData = {...}
"""

from __future__ import annotations

from typing import TypedDict


class DeleteGroupsRequestData(TypedDict, total=False):
    """DeleteGroupsRequest (API key 42): versions 0-2, flexible from 2."""

    groups_names: list[str]
    """The group names to delete. (versions 0+)"""


class DeleteGroupsResponseData(TypedDict, total=False):
    """DeleteGroupsResponse (API key 42): versions 0-2, flexible from 2."""

    throttle_time_ms: int
    """The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the request did not violate any quota. (versions 0+)"""

    results: list[DeletableGroupResult]
    """The deletion results. (versions 0+)"""


class DeletableGroupResult(TypedDict, total=False):
    """An element of ``DeleteGroupsResponseData.results``: The deletion results."""

    group_id: str
    """The group id. (versions 0+)"""

    error_code: int
    """The deletion error, or 0 if the deletion succeeded. (versions 0+)"""
