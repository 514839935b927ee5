"""DeleteShareGroupOffsets (API key 92): the shapes of the messages, for type checkers and IDEs.

Generated from Apache Kafka's message specs by ``protocol/_schema_gen.py``, beside the codecs'
schema ``protocol/schemas/delete_share_group_offsets.py``; do not edit.  Each ``TypedDict`` is one message or
struct; each key is documented with the spec's ``about`` text and the versions it exists in.
Every key may be left out (``total=False``): the encoder sends a missing field as its default,
as Kafka's generated message classes do.  Annotate what you build::

    body: DeleteShareGroupOffsetsRequestData = {...}
"""

from __future__ import annotations

from typing import TypedDict
from uuid import UUID


class DeleteShareGroupOffsetsRequestData(TypedDict, total=False):
    """DeleteShareGroupOffsetsRequest (API key 92): versions 0, flexible from 0."""

    group_id: str
    """The group identifier. (versions 0+)"""

    topics: list[DeleteShareGroupOffsetsRequestTopic]
    """The topics to delete offsets for. (versions 0+)"""


class DeleteShareGroupOffsetsRequestTopic(TypedDict, total=False):
    """An element of ``DeleteShareGroupOffsetsRequestData.topics``: The topics to delete offsets for."""

    topic_name: str
    """The topic name. (versions 0+)"""


class DeleteShareGroupOffsetsResponseData(TypedDict, total=False):
    """DeleteShareGroupOffsetsResponse (API key 92): versions 0, flexible from 0."""

    throttle_time_ms: int
    """The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the request did not violate any quota. (versions 0+)"""

    error_code: int
    """The top-level error code, or 0 if there was no error. (versions 0+)"""

    error_message: str | None
    """The top-level error message, or null if there was no error. (versions 0+; nullable 0+; default null)"""

    responses: list[DeleteShareGroupOffsetsResponseTopic]
    """The results for each topic. (versions 0+)"""


class DeleteShareGroupOffsetsResponseTopic(TypedDict, total=False):
    """An element of ``DeleteShareGroupOffsetsResponseData.responses``: The results for each topic."""

    topic_name: str
    """The topic name. (versions 0+)"""

    topic_id: UUID
    """The unique topic ID. (versions 0+)"""

    error_code: int
    """The topic-level error code, or 0 if there was no error. (versions 0+)"""

    error_message: str | None
    """The topic-level error message, or null if there was no error. (versions 0+; nullable 0+; default null)"""
