"""LeaveGroup (API key 13): the shapes of the messages, for type checkers and IDEs.

Generated from Apache Kafka's message specs by ``protocol/_schema_gen.py``, beside the codecs'
schema ``protocol/schemas/leave_group.py``; do not edit.  Each ``TypedDict`` is one message or
struct; each key is documented with the spec's ``about`` text and the versions it exists in.
Every key may be left out (``total=False``): the encoder sends a missing field as its default,
as Kafka's generated message classes do.  Annotate what you build::

    body: LeaveGroupRequestData = {...}
"""

from __future__ import annotations

from typing import TypedDict


class LeaveGroupRequestData(TypedDict, total=False):
    """LeaveGroupRequest (API key 13): versions 0-5, flexible from 4."""

    group_id: str
    """The ID of the group to leave. (versions 0+)"""

    member_id: str
    """The member ID to remove from the group. (versions 0-2)"""

    members: list[MemberIdentity]
    """List of leaving member identities. (versions 3+)"""


class MemberIdentity(TypedDict, total=False):
    """An element of ``LeaveGroupRequestData.members``: List of leaving member identities."""

    member_id: str
    """The member ID to remove from the group. (versions 3+)"""

    group_instance_id: str | None
    """The group instance ID to remove from the group. (versions 3+; nullable 3+; default null)"""

    reason: str | None
    """The reason why the member left the group. (versions 5+; nullable 5+; default null)"""


class LeaveGroupResponseData(TypedDict, total=False):
    """LeaveGroupResponse (API key 13): versions 0-5, flexible from 4."""

    throttle_time_ms: int
    """The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the request did not violate any quota. (versions 1+)"""

    error_code: int
    """The error code, or 0 if there was no error. (versions 0+)"""

    members: list[MemberResponse]
    """List of leaving member responses. (versions 3+)"""


class MemberResponse(TypedDict, total=False):
    """An element of ``LeaveGroupResponseData.members``: List of leaving member responses."""

    member_id: str
    """The member ID to remove from the group. (versions 3+)"""

    group_instance_id: str | None
    """The group instance ID to remove from the group. (versions 3+; nullable 3+)"""

    error_code: int
    """The error code, or 0 if there was no error. (versions 3+)"""
