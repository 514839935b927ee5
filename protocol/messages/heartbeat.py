"""Heartbeat (API key 12): the shapes of the messages, for type checkers and IDEs.

Generated from Apache Kafka's message specs by ``protocol/_schema_gen.py``, beside the codecs'
schema ``protocol/schemas/heartbeat.py``; do not edit.  Each ``TypedDict`` is one message or
struct; each key is documented with the spec's ``about`` text and the versions it exists in.
Every key may be left out (``total=False``): the encoder sends a missing field as its default,
as Kafka's generated message classes do.  Annotate what you build::

    body: HeartbeatRequestData = {...}
"""

from __future__ import annotations

from typing import TypedDict


class HeartbeatRequestData(TypedDict, total=False):
    """HeartbeatRequest (API key 12): versions 0-4, flexible from 4."""

    group_id: str
    """The group id. (versions 0+)"""

    generation_id: int
    """The generation of the group. (versions 0+)"""

    member_id: str
    """The member ID. (versions 0+)"""

    group_instance_id: str | None
    """The unique identifier of the consumer instance provided by end user. (versions 3+; nullable 3+; default null)"""


class HeartbeatResponseData(TypedDict, total=False):
    """HeartbeatResponse (API key 12): versions 0-4, flexible from 4."""

    throttle_time_ms: int
    """The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the request did not violate any quota. (versions 1+)"""

    error_code: int
    """The error code, or 0 if there was no error. (versions 0+)"""
