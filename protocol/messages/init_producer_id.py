"""InitProducerId (API key 22): the shapes of the messages, for type checkers and IDEs.

Generated from Apache Kafka's message specs by ``protocol/_schema_gen.py``, beside the codecs'
schema ``protocol/schemas/init_producer_id.py``; do not edit.  Each ``TypedDict`` is one message or
struct; each key is documented with the spec's ``about`` text and the versions it exists in.
Every key may be left out (``total=False``): the encoder sends a missing field as its default,
as Kafka's generated message classes do.  Annotate what you build::

    body: InitProducerIdRequestData = {...}
"""

from __future__ import annotations

from typing import TypedDict


class InitProducerIdRequestData(TypedDict, total=False):
    """InitProducerIdRequest (API key 22): versions 0-6, flexible from 2."""

    transactional_id: str | None
    """The transactional id, or null if the producer is not transactional. (versions 0+; nullable 0+)"""

    transaction_timeout_ms: int
    """The time in ms to wait before aborting idle transactions sent by this producer. This is only relevant if a TransactionalId has been defined. (versions 0+)"""

    producer_id: int
    """The producer id. This is used to disambiguate requests if a transactional id is reused following its expiration. (versions 3+; default -1)"""

    producer_epoch: int
    """The producer's current epoch. This will be checked against the producer epoch on the broker, and the request will return an error if they do not match. (versions 3+; default -1)"""

    enable2_pc: bool
    """True if the client wants to enable two-phase commit (2PC) protocol for transactions. (versions 6+; default false)"""

    keep_prepared_txn: bool
    """True if the client wants to keep the currently ongoing transaction instead of aborting it. (versions 6+; default false)"""


class InitProducerIdResponseData(TypedDict, total=False):
    """InitProducerIdResponse (API key 22): versions 0-6, flexible from 2."""

    throttle_time_ms: int
    """The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the request did not violate any quota. (versions 0+)"""

    error_code: int
    """The error code, or 0 if there was no error. (versions 0+)"""

    producer_id: int
    """The current producer id. (versions 0+; default -1)"""

    producer_epoch: int
    """The current epoch associated with the producer id. (versions 0+)"""

    ongoing_txn_producer_id: int
    """The producer id for ongoing transaction when KeepPreparedTxn is used, -1 if there is no transaction ongoing. (versions 6+; default -1)"""

    ongoing_txn_producer_epoch: int
    """The epoch associated with the producer id for ongoing transaction when KeepPreparedTxn is used, -1 if there is no transaction ongoing. (versions 6+; default -1)"""
