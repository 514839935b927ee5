"""EndTxn (API key 26): the shapes of the messages, for type checkers and IDEs.

Generated from Apache Kafka's message specs by ``protocol/_schema_gen.py``, beside the codecs'
schema ``protocol/schemas/end_txn.py``; do not edit.  Each ``TypedDict`` is one message or
struct; each key is documented with the spec's ``about`` text and the versions it exists in.
Every key may be left out (``total=False``): the encoder sends a missing field as its default,
as Kafka's generated message classes do.  Annotate what you build::

    body: EndTxnRequestData = {...}
"""

from __future__ import annotations

from typing import TypedDict


class EndTxnRequestData(TypedDict, total=False):
    """EndTxnRequest (API key 26): versions 0-5, flexible from 3."""

    transactional_id: str
    """The ID of the transaction to end. (versions 0+)"""

    producer_id: int
    """The producer ID. (versions 0+)"""

    producer_epoch: int
    """The current epoch associated with the producer. (versions 0+)"""

    committed: bool
    """True if the transaction was committed, false if it was aborted. (versions 0+)"""


class EndTxnResponseData(TypedDict, total=False):
    """EndTxnResponse (API key 26): versions 0-5, flexible from 3."""

    throttle_time_ms: int
    """The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the request did not violate any quota. (versions 0+)"""

    error_code: int
    """The error code, or 0 if there was no error. (versions 0+)"""

    producer_id: int
    """The producer ID. (versions 5+; default -1)"""

    producer_epoch: int
    """The current epoch associated with the producer. (versions 5+; default -1)"""
