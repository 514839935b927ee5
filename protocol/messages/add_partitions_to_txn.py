"""AddPartitionsToTxn (API key 24): the shapes of the messages, for type checkers and IDEs.

Generated from Apache Kafka's message specs by ``protocol/_schema_gen.py``, beside the codecs'
schema ``protocol/schemas/add_partitions_to_txn.py``; do not edit.  Each ``TypedDict`` is one message or
struct; each key is documented with the spec's ``about`` text and the versions it exists in.
Every key may be left out (``total=False``): the encoder sends a missing field as its default,
as Kafka's generated message classes do.  Annotate what you build::

    body: AddPartitionsToTxnRequestData = {...}
"""

from __future__ import annotations

from typing import TypedDict


class AddPartitionsToTxnRequestData(TypedDict, total=False):
    """AddPartitionsToTxnRequest (API key 24): versions 0-5, flexible from 3."""

    transactions: list[AddPartitionsToTxnTransaction]
    """List of transactions to add partitions to. (versions 4+)"""

    v3_and_below_transactional_id: str
    """The transactional id corresponding to the transaction. (versions 0-3)"""

    v3_and_below_producer_id: int
    """Current producer id in use by the transactional id. (versions 0-3)"""

    v3_and_below_producer_epoch: int
    """Current epoch associated with the producer id. (versions 0-3)"""

    v3_and_below_topics: list[AddPartitionsToTxnTopic]
    """The partitions to add to the transaction. (versions 0-3)"""


class AddPartitionsToTxnTransaction(TypedDict, total=False):
    """An element of ``AddPartitionsToTxnRequestData.transactions``: List of transactions to add partitions to."""

    transactional_id: str
    """The transactional id corresponding to the transaction. (versions 4+)"""

    producer_id: int
    """Current producer id in use by the transactional id. (versions 4+)"""

    producer_epoch: int
    """Current epoch associated with the producer id. (versions 4+)"""

    verify_only: bool
    """Boolean to signify if we want to check if the partition is in the transaction rather than add it. (versions 4+; default false)"""

    topics: list[AddPartitionsToTxnTopic]
    """The partitions to add to the transaction. (versions 4+)"""


class AddPartitionsToTxnTopic(TypedDict, total=False):
    """An element of ``AddPartitionsToTxnRequestData.v3_and_below_topics``: The partitions to add to the transaction."""

    name: str
    """The name of the topic. (versions 0+)"""

    partitions: list[int]
    """The partition indexes to add to the transaction. (versions 0+)"""


class AddPartitionsToTxnResponseData(TypedDict, total=False):
    """AddPartitionsToTxnResponse (API key 24): versions 0-5, flexible from 3."""

    throttle_time_ms: int
    """Duration in milliseconds for which the request was throttled due to a quota violation, or zero if the request did not violate any quota. (versions 0+)"""

    error_code: int
    """The response top level error code. (versions 4+)"""

    results_by_transaction: list[AddPartitionsToTxnResult]
    """Results categorized by transactional ID. (versions 4+)"""

    results_by_topic_v3_and_below: list[AddPartitionsToTxnTopicResult]
    """The results for each topic. (versions 0-3)"""


class AddPartitionsToTxnResult(TypedDict, total=False):
    """An element of ``AddPartitionsToTxnResponseData.results_by_transaction``: Results categorized by transactional ID."""

    transactional_id: str
    """The transactional id corresponding to the transaction. (versions 4+)"""

    topic_results: list[AddPartitionsToTxnTopicResult]
    """The results for each topic. (versions 4+)"""


class AddPartitionsToTxnTopicResult(TypedDict, total=False):
    """An element of ``AddPartitionsToTxnResponseData.results_by_topic_v3_and_below``: The results for each topic."""

    name: str
    """The topic name. (versions 0+)"""

    results_by_partition: list[AddPartitionsToTxnPartitionResult]
    """The results for each partition. (versions 0+)"""


class AddPartitionsToTxnPartitionResult(TypedDict, total=False):
    """An element of ``AddPartitionsToTxnTopicResult.results_by_partition``: The results for each partition."""

    partition_index: int
    """The partition indexes. (versions 0+)"""

    partition_error_code: int
    """The response error code. (versions 0+)"""
