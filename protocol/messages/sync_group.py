"""SyncGroup (API key 14): the shapes of the messages, for type checkers and IDEs.

Generated from Apache Kafka's message specs by ``protocol/_schema_gen.py``, beside the codecs'
schema ``protocol/schemas/sync_group.py``; do not edit.  Each ``TypedDict`` is one message or
struct; each key is documented with the spec's ``about`` text and the versions it exists in.
Every key may be left out (``total=False``): the encoder sends a missing field as its default,
as Kafka's generated message classes do.  Annotate what you build::

    body: SyncGroupRequestData = {...}
"""

from __future__ import annotations

from typing import TypedDict

from protocol.messages import Bytes


class SyncGroupRequestData(TypedDict, total=False):
    """SyncGroupRequest (API key 14): versions 0-5, flexible from 4."""

    group_id: str
    """The unique group identifier. (versions 0+)"""

    generation_id: int
    """The generation of the group. (versions 0+)"""

    member_id: str
    """The member ID assigned by the group. (versions 0+)"""

    group_instance_id: str | None
    """The unique identifier of the consumer instance provided by end user. (versions 3+; nullable 3+; default null)"""

    protocol_type: str | None
    """The group protocol type. (versions 5+; nullable 5+; default null)"""

    protocol_name: str | None
    """The group protocol name. (versions 5+; nullable 5+; default null)"""

    assignments: list[SyncGroupRequestAssignment]
    """Each assignment. (versions 0+)"""


class SyncGroupRequestAssignment(TypedDict, total=False):
    """An element of ``SyncGroupRequestData.assignments``: Each assignment."""

    member_id: str
    """The ID of the member to assign. (versions 0+)"""

    assignment: Bytes
    """The member assignment. (versions 0+)"""


class SyncGroupResponseData(TypedDict, total=False):
    """SyncGroupResponse (API key 14): versions 0-5, flexible from 4."""

    throttle_time_ms: int
    """The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the request did not violate any quota. (versions 1+)"""

    error_code: int
    """The error code, or 0 if there was no error. (versions 0+)"""

    protocol_type: str | None
    """The group protocol type. (versions 5+; nullable 5+; default null)"""

    protocol_name: str | None
    """The group protocol name. (versions 5+; nullable 5+; default null)"""

    assignment: Bytes
    """The member assignment. (versions 0+)"""
