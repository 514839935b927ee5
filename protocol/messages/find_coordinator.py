"""FindCoordinator (API key 10): the shapes of the messages, for type checkers and IDEs.

Generated from Apache Kafka's message specs by ``protocol/_schema_gen.py``, beside the codecs'
schema ``protocol/schemas/find_coordinator.py``; do not edit.  Each ``TypedDict`` is one message or
struct; each key is documented with the spec's ``about`` text and the versions it exists in.
Every key may be left out (``total=False``): the encoder sends a missing field as its default,
as Kafka's generated message classes do.  Annotate what you build::

    body: FindCoordinatorRequestData = {...}
"""

from __future__ import annotations

from typing import TypedDict


class FindCoordinatorRequestData(TypedDict, total=False):
    """FindCoordinatorRequest (API key 10): versions 0-6, flexible from 3."""

    key: str
    """The coordinator key. (versions 0-3)"""

    key_type: int
    """The coordinator key type. (group, transaction, share). (versions 1+; default 0)"""

    coordinator_keys: list[str]
    """The coordinator keys. (versions 4+)"""


class FindCoordinatorResponseData(TypedDict, total=False):
    """FindCoordinatorResponse (API key 10): versions 0-6, flexible from 3."""

    throttle_time_ms: int
    """The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the request did not violate any quota. (versions 1+)"""

    error_code: int
    """The error code, or 0 if there was no error. (versions 0-3)"""

    error_message: str | None
    """The error message, or null if there was no error. (versions 1-3; nullable 1-3)"""

    node_id: int
    """The node id. (versions 0-3)"""

    host: str
    """The host name. (versions 0-3)"""

    port: int
    """The port. (versions 0-3)"""

    coordinators: list[Coordinator]
    """Each coordinator result in the response. (versions 4+)"""


class Coordinator(TypedDict, total=False):
    """An element of ``FindCoordinatorResponseData.coordinators``: Each coordinator result in the response."""

    key: str
    """The coordinator key. (versions 4+)"""

    node_id: int
    """The node id. (versions 4+)"""

    host: str
    """The host name. (versions 4+)"""

    port: int
    """The port. (versions 4+)"""

    error_code: int
    """The error code, or 0 if there was no error. (versions 4+)"""

    error_message: str | None
    """The error message, or null if there was no error. (versions 4+; nullable 4+)"""
