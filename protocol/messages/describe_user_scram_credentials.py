"""DescribeUserScramCredentials (API key 50): the shapes of the messages, for type checkers and IDEs.

Generated from Apache Kafka's message specs by ``protocol/_schema_gen.py``, beside the codecs'
schema ``protocol/schemas/describe_user_scram_credentials.py``; do not edit.  Each ``TypedDict`` is one message or
struct; each key is documented with the spec's ``about`` text and the versions it exists in.
Every key may be left out (``total=False``): the encoder sends a missing field as its default,
as Kafka's generated message classes do.  Annotate what you build::

    body: DescribeUserScramCredentialsRequestData = {...}
"""

from __future__ import annotations

from typing import TypedDict


class DescribeUserScramCredentialsRequestData(TypedDict, total=False):
    """DescribeUserScramCredentialsRequest (API key 50): versions 0, flexible from 0."""

    users: list[UserName] | None
    """The users to describe, or null/empty to describe all users. (versions 0+; nullable 0+)"""


class UserName(TypedDict, total=False):
    """An element of ``DescribeUserScramCredentialsRequestData.users``: The users to describe, or null/empty to describe all users."""

    name: str
    """The user name. (versions 0+)"""


class DescribeUserScramCredentialsResponseData(TypedDict, total=False):
    """DescribeUserScramCredentialsResponse (API key 50): versions 0, flexible from 0."""

    throttle_time_ms: int
    """The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the request did not violate any quota. (versions 0+)"""

    error_code: int
    """The message-level error code, 0 except for user authorization or infrastructure issues. (versions 0+)"""

    error_message: str | None
    """The message-level error message, if any. (versions 0+; nullable 0+)"""

    results: list[DescribeUserScramCredentialsResult]
    """The results for descriptions, one per user. (versions 0+)"""


class DescribeUserScramCredentialsResult(TypedDict, total=False):
    """An element of ``DescribeUserScramCredentialsResponseData.results``: The results for descriptions, one per user."""

    user: str
    """The user name. (versions 0+)"""

    error_code: int
    """The user-level error code. (versions 0+)"""

    error_message: str | None
    """The user-level error message, if any. (versions 0+; nullable 0+)"""

    credential_infos: list[CredentialInfo]
    """The mechanism and related information associated with the user's SCRAM credentials. (versions 0+)"""


class CredentialInfo(TypedDict, total=False):
    """An element of ``DescribeUserScramCredentialsResult.credential_infos``: The mechanism and related information associated with the user's SCRAM credentials."""

    mechanism: int
    """The SCRAM mechanism. (versions 0+)"""

    iterations: int
    """The number of iterations used in the SCRAM credential. (versions 0+)"""
