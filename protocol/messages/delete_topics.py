"""DeleteTopics (API key 20): the shapes of the messages, for type checkers and IDEs.

Generated from Apache Kafka's message specs by ``protocol/_schema_gen.py``, beside the codecs'
schema ``protocol/schemas/delete_topics.py``; do not edit.  Each ``TypedDict`` is one message or
struct; each key is documented with the spec's ``about`` text and the versions it exists in.
Every key may be left out (``total=False``): the encoder sends a missing field as its default,
as Kafka's generated message classes do.  Annotate what you build::

    body: DeleteTopicsRequestData = {...}
"""

from __future__ import annotations

from typing import TypedDict
from uuid import UUID


class DeleteTopicsRequestData(TypedDict, total=False):
    """DeleteTopicsRequest (API key 20): versions 1-6, flexible from 4."""

    topics: list[DeleteTopicState]
    """The name or topic ID of the topic. (versions 6+)"""

    topic_names: list[str]
    """The names of the topics to delete. (versions 0-5)"""

    timeout_ms: int
    """The length of time in milliseconds to wait for the deletions to complete. (versions 0+)"""


class DeleteTopicState(TypedDict, total=False):
    """An element of ``DeleteTopicsRequestData.topics``: The name or topic ID of the topic."""

    name: str | None
    """The topic name. (versions 6+; nullable 6+; default null)"""

    topic_id: UUID
    """The unique topic ID. (versions 6+)"""


class DeleteTopicsResponseData(TypedDict, total=False):
    """DeleteTopicsResponse (API key 20): versions 1-6, flexible from 4."""

    throttle_time_ms: int
    """The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the request did not violate any quota. (versions 1+)"""

    responses: list[DeletableTopicResult]
    """The results for each topic we tried to delete. (versions 0+)"""


class DeletableTopicResult(TypedDict, total=False):
    """An element of ``DeleteTopicsResponseData.responses``: The results for each topic we tried to delete."""

    name: str | None
    """The topic name. (versions 0+; nullable 6+)"""

    topic_id: UUID
    """The unique topic ID. (versions 6+)"""

    error_code: int
    """The deletion error, or 0 if the deletion succeeded. (versions 0+)"""

    error_message: str | None
    """The error message, or null if there was no error. (versions 5+; nullable 5+; default null)"""
