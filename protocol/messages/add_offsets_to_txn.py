"""AddOffsetsToTxn (API key 25): the shapes of the messages, for type checkers and IDEs.

Generated from Apache Kafka's message specs by ``protocol/_schema_gen.py``, beside the codecs'
schema ``protocol/schemas/add_offsets_to_txn.py``; do not edit.  Each ``TypedDict`` is one message or
struct; each key is documented with the spec's ``about`` text and the versions it exists in.
Every key may be left out (``total=False``): the encoder sends a missing field as its default,
as Kafka's generated message classes do.  Annotate what you build::

    body: AddOffsetsToTxnRequestData = {...}
"""

from __future__ import annotations

from typing import TypedDict


class AddOffsetsToTxnRequestData(TypedDict, total=False):
    """AddOffsetsToTxnRequest (API key 25): versions 0-4, flexible from 3."""

    transactional_id: str
    """The transactional id corresponding to the transaction. (versions 0+)"""

    producer_id: int
    """Current producer id in use by the transactional id. (versions 0+)"""

    producer_epoch: int
    """Current epoch associated with the producer id. (versions 0+)"""

    group_id: str
    """The unique group identifier. (versions 0+)"""


class AddOffsetsToTxnResponseData(TypedDict, total=False):
    """AddOffsetsToTxnResponse (API key 25): versions 0-4, flexible from 3."""

    throttle_time_ms: int
    """Duration in milliseconds for which the request was throttled due to a quota violation, or zero if the request did not violate any quota. (versions 0+)"""

    error_code: int
    """The response error code, or 0 if there was no error. (versions 0+)"""
