"""ShareGroupDescribe (API key 77): the shapes of the messages, for type checkers and IDEs.

Generated from Apache Kafka's message specs by ``protocol/_schema_gen.py``, beside the codecs'
schema ``protocol/schemas/share_group_describe.py``; do not edit.  Each ``TypedDict`` is one message or
struct; each key is documented with the spec's ``about`` text and the versions it exists in.
Every key may be left out (``total=False``): the encoder sends a missing field as its default,
as Kafka's generated message classes do.  Annotate what you build::

    body: ShareGroupDescribeRequestData = {...}
"""

from __future__ import annotations

from typing import TypedDict
from uuid import UUID


class ShareGroupDescribeRequestData(TypedDict, total=False):
    """ShareGroupDescribeRequest (API key 77): versions 1, flexible from 0."""

    group_ids: list[str]
    """The ids of the groups to describe. (versions 0+)"""

    include_authorized_operations: bool
    """Whether to include authorized operations. (versions 0+)"""


class ShareGroupDescribeResponseData(TypedDict, total=False):
    """ShareGroupDescribeResponse (API key 77): versions 1, flexible from 0."""

    throttle_time_ms: int
    """The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the request did not violate any quota. (versions 0+)"""

    groups: list[DescribedGroup]
    """Each described group. (versions 0+)"""


class DescribedGroup(TypedDict, total=False):
    """An element of ``ShareGroupDescribeResponseData.groups``: Each described group."""

    error_code: int
    """The describe error, or 0 if there was no error. (versions 0+)"""

    error_message: str | None
    """The top-level error message, or null if there was no error. (versions 0+; nullable 0+; default null)"""

    group_id: str
    """The group ID string. (versions 0+)"""

    group_state: str
    """The group state string, or the empty string. (versions 0+)"""

    group_epoch: int
    """The group epoch. (versions 0+)"""

    assignment_epoch: int
    """The assignment epoch. (versions 0+)"""

    assignor_name: str
    """The selected assignor. (versions 0+)"""

    members: list[Member]
    """The members. (versions 0+)"""

    authorized_operations: int
    """32-bit bitfield to represent authorized operations for this group. (versions 0+; default -2147483648)"""


class Member(TypedDict, total=False):
    """An element of ``DescribedGroup.members``: The members."""

    member_id: str
    """The member ID. (versions 0+)"""

    rack_id: str | None
    """The member rack ID. (versions 0+; nullable 0+; default null)"""

    member_epoch: int
    """The current member epoch. (versions 0+)"""

    client_id: str
    """The client ID. (versions 0+)"""

    client_host: str
    """The client host. (versions 0+)"""

    subscribed_topic_names: list[str]
    """The subscribed topic names. (versions 0+)"""

    assignment: Assignment
    """The current assignment. (versions 0+)"""


class Assignment(TypedDict, total=False):
    """``Member.assignment``: The current assignment."""

    topic_partitions: list[TopicPartitions]
    """The assigned topic-partitions to the member. (versions 0+)"""


class TopicPartitions(TypedDict, total=False):
    """An element of ``Assignment.topic_partitions``: The assigned topic-partitions to the member."""

    topic_id: UUID
    """The topic ID. (versions 0+)"""

    topic_name: str
    """The topic name. (versions 0+)"""

    partitions: list[int]
    """The partitions. (versions 0+)"""
