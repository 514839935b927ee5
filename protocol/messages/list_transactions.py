"""ListTransactions (API key 66): the shapes of the messages, for type checkers and IDEs.

Generated from Apache Kafka's message specs by ``protocol/_schema_gen.py``, beside the codecs'
schema ``protocol/schemas/list_transactions.py``; do not edit.  Each ``TypedDict`` is one message or
struct; each key is documented with the spec's ``about`` text and the versions it exists in.
Every key may be left out (``total=False``): the encoder sends a missing field as its default,
as Kafka's generated message classes do.  Annotate what you build::

    body: ListTransactionsRequestData = {...}
"""

from __future__ import annotations

from typing import TypedDict


class ListTransactionsRequestData(TypedDict, total=False):
    """ListTransactionsRequest (API key 66): versions 0-1, flexible from 0."""

    state_filters: list[str]
    """The transaction states to filter by: if empty, all transactions are returned; if non-empty, then only transactions matching one of the filtered states will be returned. (versions 0+)"""

    producer_id_filters: list[int]
    """The producerIds to filter by: if empty, all transactions will be returned; if non-empty, only transactions which match one of the filtered producerIds will be returned. (versions 0+)"""

    duration_filter: int
    """Duration (in millis) to filter by: if < 0, all transactions will be returned; otherwise, only transactions running longer than this duration will be returned. (versions 1+; default -1)"""


class ListTransactionsResponseData(TypedDict, total=False):
    """ListTransactionsResponse (API key 66): versions 0-1, flexible from 0."""

    throttle_time_ms: int
    """The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the request did not violate any quota. (versions 0+)"""

    error_code: int
    """The error code, or 0 if there was no error. (versions 0+)"""

    unknown_state_filters: list[str]
    """Set of state filters provided in the request which were unknown to the transaction coordinator. (versions 0+)"""

    transaction_states: list[TransactionState]
    """The current state of the transaction for the transactional id. (versions 0+)"""


class TransactionState(TypedDict, total=False):
    """An element of ``ListTransactionsResponseData.transaction_states``: The current state of the transaction for the transactional id."""

    transactional_id: str
    """The transactional id. (versions 0+)"""

    producer_id: int
    """The producer id. (versions 0+)"""

    transaction_state: str
    """The current transaction state of the producer. (versions 0+)"""
