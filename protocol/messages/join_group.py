"""JoinGroup (API key 11): the shapes of the messages, for type checkers and IDEs.

Generated from Apache Kafka's message specs by ``protocol/_schema_gen.py``, beside the codecs'
schema ``protocol/schemas/join_group.py``; do not edit.  Each ``TypedDict`` is one message or
struct; each key is documented with the spec's ``about`` text and the versions it exists in.
Every key may be left out (``total=False``): the encoder sends a missing field as its default,
as Kafka's generated message classes do.  Annotate what you build::

    body: JoinGroupRequestData = {...}
"""

from __future__ import annotations

from typing import TypedDict

from protocol.messages import Bytes


class JoinGroupRequestData(TypedDict, total=False):
    """JoinGroupRequest (API key 11): versions 2-9, flexible from 6."""

    group_id: str
    """The group identifier. (versions 0+)"""

    session_timeout_ms: int
    """The coordinator considers the consumer dead if it receives no heartbeat after this timeout in milliseconds. (versions 0+)"""

    rebalance_timeout_ms: int
    """The maximum time in milliseconds that the coordinator will wait for each member to rejoin when rebalancing the group. (versions 1+; default -1)"""

    member_id: str
    """The member id assigned by the group coordinator. (versions 0+)"""

    group_instance_id: str | None
    """The unique identifier of the consumer instance provided by end user. (versions 5+; nullable 5+; default null)"""

    protocol_type: str
    """The unique name the for class of protocols implemented by the group we want to join. (versions 0+)"""

    protocols: list[JoinGroupRequestProtocol]
    """The list of protocols that the member supports. (versions 0+)"""

    reason: str | None
    """The reason why the member (re-)joins the group. (versions 8+; nullable 8+; default null)"""


class JoinGroupRequestProtocol(TypedDict, total=False):
    """An element of ``JoinGroupRequestData.protocols``: The list of protocols that the member supports."""

    name: str
    """The protocol name. (versions 0+)"""

    metadata: Bytes
    """The protocol metadata. (versions 0+)"""


class JoinGroupResponseData(TypedDict, total=False):
    """JoinGroupResponse (API key 11): versions 2-9, flexible from 6."""

    throttle_time_ms: int
    """The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the request did not violate any quota. (versions 2+)"""

    error_code: int
    """The error code, or 0 if there was no error. (versions 0+)"""

    generation_id: int
    """The generation ID of the group. (versions 0+; default -1)"""

    protocol_type: str | None
    """The group protocol name. (versions 7+; nullable 7+; default null)"""

    protocol_name: str | None
    """The group protocol selected by the coordinator. (versions 0+; nullable 7+)"""

    leader: str
    """The leader of the group. (versions 0+)"""

    skip_assignment: bool
    """True if the leader must skip running the assignment. (versions 9+; default false)"""

    member_id: str
    """The member ID assigned by the group coordinator. (versions 0+)"""

    members: list[JoinGroupResponseMember]
    """The group members. (versions 0+)"""


class JoinGroupResponseMember(TypedDict, total=False):
    """An element of ``JoinGroupResponseData.members``: The group members."""

    member_id: str
    """The group member ID. (versions 0+)"""

    group_instance_id: str | None
    """The unique identifier of the consumer instance provided by end user. (versions 5+; nullable 5+; default null)"""

    metadata: Bytes
    """The group member metadata. (versions 0+)"""
