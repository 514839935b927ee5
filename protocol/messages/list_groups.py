"""ListGroups (API key 16): the shapes of the messages, for type checkers and IDEs.

Generated from Apache Kafka's message specs by ``protocol/_schema_gen.py``, beside the codecs'
schema ``protocol/schemas/list_groups.py``; do not edit.  Each ``TypedDict`` is one message or
struct; each key is documented with the spec's ``about`` text and the versions it exists in.
Every key may be left out (``total=False``): the encoder sends a missing field as its default,
as Kafka's generated message classes do.  Annotate what you build::

    body: ListGroupsRequestData = {...}
"""

from __future__ import annotations

from typing import TypedDict


class ListGroupsRequestData(TypedDict, total=False):
    """ListGroupsRequest (API key 16): versions 0-5, flexible from 3."""

    states_filter: list[str]
    """The states of the groups we want to list. If empty, all groups are returned with their state. (versions 4+)"""

    types_filter: list[str]
    """The types of the groups we want to list. If empty, all groups are returned with their type. (versions 5+)"""


class ListGroupsResponseData(TypedDict, total=False):
    """ListGroupsResponse (API key 16): versions 0-5, flexible from 3."""

    throttle_time_ms: int
    """The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the request did not violate any quota. (versions 1+)"""

    error_code: int
    """The error code, or 0 if there was no error. (versions 0+)"""

    groups: list[ListedGroup]
    """Each group in the response. (versions 0+)"""


class ListedGroup(TypedDict, total=False):
    """An element of ``ListGroupsResponseData.groups``: Each group in the response."""

    group_id: str
    """The group ID. (versions 0+)"""

    protocol_type: str
    """The group protocol type. (versions 0+)"""

    group_state: str
    """The group state name. (versions 4+)"""

    group_type: str
    """The group type name. (versions 5+)"""
