"""SaslAuthenticate (API key 36): the shapes of the messages, for type checkers and IDEs.

Generated from Apache Kafka's message specs by ``protocol/_schema_gen.py``, beside the codecs'
schema ``protocol/schemas/sasl_authenticate.py``; do not edit.  Each ``TypedDict`` is one message or
struct; each key is documented with the spec's ``about`` text and the versions it exists in.
Every key may be left out (``total=False``): the encoder sends a missing field as its default,
as Kafka's generated message classes do.  Annotate what you build::

    body: SaslAuthenticateRequestData = {...}
"""

from __future__ import annotations

from typing import TypedDict

from protocol.messages import Bytes


class SaslAuthenticateRequestData(TypedDict, total=False):
    """SaslAuthenticateRequest (API key 36): versions 0-2, flexible from 2."""

    auth_bytes: Bytes
    """The SASL authentication bytes from the client, as defined by the SASL mechanism. (versions 0+)"""


class SaslAuthenticateResponseData(TypedDict, total=False):
    """SaslAuthenticateResponse (API key 36): versions 0-2, flexible from 2."""

    error_code: int
    """The error code, or 0 if there was no error. (versions 0+)"""

    error_message: str | None
    """The error message, or null if there was no error. (versions 0+; nullable 0+)"""

    auth_bytes: Bytes
    """The SASL authentication bytes from the server, as defined by the SASL mechanism. (versions 0+)"""

    session_lifetime_ms: int
    """Number of milliseconds after which only re-authentication over the existing connection to create a new session can occur. (versions 1+; default 0)"""
