"""DescribeTransactions (API key 65): the shapes of the messages, for type checkers and IDEs.

Generated from Apache Kafka's message specs by ``protocol/_schema_gen.py``, beside the codecs'
schema ``protocol/schemas/describe_transactions.py``; do not edit.  Each ``TypedDict`` is one message or
struct; each key is documented with the spec's ``about`` text and the versions it exists in.
Every key may be left out (``total=False``): the encoder sends a missing field as its default,
as Kafka's generated message classes do.  Annotate what you build::

    body: DescribeTransactionsRequestData = {...}
"""

from __future__ import annotations

from typing import TypedDict


class DescribeTransactionsRequestData(TypedDict, total=False):
    """DescribeTransactionsRequest (API key 65): versions 0, flexible from 0."""

    transactional_ids: list[str]
    """Array of transactionalIds to include in describe results. If empty, then no results will be returned. (versions 0+)"""


class DescribeTransactionsResponseData(TypedDict, total=False):
    """DescribeTransactionsResponse (API key 65): versions 0, flexible from 0."""

    throttle_time_ms: int
    """The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the request did not violate any quota. (versions 0+)"""

    transaction_states: list[TransactionState]
    """The current state of the transaction. (versions 0+)"""


class TransactionState(TypedDict, total=False):
    """An element of ``DescribeTransactionsResponseData.transaction_states``: The current state of the transaction."""

    error_code: int
    """The error code. (versions 0+)"""

    transactional_id: str
    """The transactional id. (versions 0+)"""

    transaction_state: str
    """The current transaction state of the producer. (versions 0+)"""

    transaction_timeout_ms: int
    """The timeout in milliseconds for the transaction. (versions 0+)"""

    transaction_start_time_ms: int
    """The start time of the transaction in milliseconds. (versions 0+)"""

    producer_id: int
    """The current producer id associated with the transaction. (versions 0+)"""

    producer_epoch: int
    """The current epoch associated with the producer id. (versions 0+)"""

    topics: list[TopicData]
    """The set of partitions included in the current transaction (if active). When a transaction is preparing to commit or abort, this will include only partitions which do not have markers. (versions 0+)"""


class TopicData(TypedDict, total=False):
    """An element of ``TransactionState.topics``: The set of partitions included in the current transaction (if active). When a transaction is preparing to commit or abort, this will include only partitions which do not have markers."""

    topic: str
    """The topic name. (versions 0+)"""

    partitions: list[int]
    """The partition ids included in the current transaction. (versions 0+)"""
