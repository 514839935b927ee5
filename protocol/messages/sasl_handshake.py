"""SaslHandshake (API key 17): the shapes of the messages, for type checkers and IDEs.

Generated from Apache Kafka's message specs by ``protocol/_schema_gen.py``, beside the codecs'
schema ``protocol/schemas/sasl_handshake.py``; do not edit.  Each ``TypedDict`` is one message or
struct; each key is documented with the spec's ``about`` text and the versions it exists in.
Every key may be left out (``total=False``): the encoder sends a missing field as its default,
as Kafka's generated message classes do.  Annotate what you build::

    body: SaslHandshakeRequestData = {...}
"""

from __future__ import annotations

from typing import TypedDict


class SaslHandshakeRequestData(TypedDict, total=False):
    """SaslHandshakeRequest (API key 17): versions 0-1, not flexible."""

    mechanism: str
    """The SASL mechanism chosen by the client. (versions 0+)"""


class SaslHandshakeResponseData(TypedDict, total=False):
    """SaslHandshakeResponse (API key 17): versions 0-1, not flexible."""

    error_code: int
    """The error code, or 0 if there was no error. (versions 0+)"""

    mechanisms: list[str]
    """The mechanisms enabled in the server. (versions 0+)"""
