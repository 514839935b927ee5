"""DescribeGroups (API key 15): the shapes of the messages, for type checkers and IDEs.

Generated from Apache Kafka's message specs by ``protocol/_schema_gen.py``, beside the codecs'
schema ``protocol/schemas/describe_groups.py``; do not edit.  Each ``TypedDict`` is one message or
struct; each key is documented with the spec's ``about`` text and the versions it exists in.
Every key may be left out (``total=False``): the encoder sends a missing field as its default,
as Kafka's generated message classes do.  Annotate what you build::

    body: DescribeGroupsRequestData = {...}
"""

from __future__ import annotations

from typing import TypedDict

from protocol.messages import Bytes


class DescribeGroupsRequestData(TypedDict, total=False):
    """DescribeGroupsRequest (API key 15): versions 0-6, flexible from 5."""

    groups: list[str]
    """The names of the groups to describe. (versions 0+)"""

    include_authorized_operations: bool
    """Whether to include authorized operations. (versions 3+)"""


class DescribeGroupsResponseData(TypedDict, total=False):
    """DescribeGroupsResponse (API key 15): versions 0-6, flexible from 5."""

    throttle_time_ms: int
    """The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the request did not violate any quota. (versions 1+)"""

    groups: list[DescribedGroup]
    """Each described group. (versions 0+)"""


class DescribedGroup(TypedDict, total=False):
    """An element of ``DescribeGroupsResponseData.groups``: Each described group."""

    error_code: int
    """The describe error, or 0 if there was no error. (versions 0+)"""

    error_message: str | None
    """The describe error message, or null if there was no error. (versions 6+; nullable 6+; default null)"""

    group_id: str
    """The group ID string. (versions 0+)"""

    group_state: str
    """The group state string, or the empty string. (versions 0+)"""

    protocol_type: str
    """The group protocol type, or the empty string. (versions 0+)"""

    protocol_data: str
    """The group protocol data, or the empty string. (versions 0+)"""

    members: list[DescribedGroupMember]
    """The group members. (versions 0+)"""

    authorized_operations: int
    """32-bit bitfield to represent authorized operations for this group. (versions 3+; default -2147483648)"""


class DescribedGroupMember(TypedDict, total=False):
    """An element of ``DescribedGroup.members``: The group members."""

    member_id: str
    """The member id. (versions 0+)"""

    group_instance_id: str | None
    """The unique identifier of the consumer instance provided by end user. (versions 4+; nullable 4+; default null)"""

    client_id: str
    """The client ID used in the member's latest join group request. (versions 0+)"""

    client_host: str
    """The client host. (versions 0+)"""

    member_metadata: Bytes
    """The metadata corresponding to the current group protocol in use. (versions 0+)"""

    member_assignment: Bytes
    """The current assignment provided by the group leader. (versions 0+)"""
