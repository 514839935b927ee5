"""WriteTxnMarkers (API key 27): the shapes of the messages, for type checkers and IDEs.

Generated from Apache Kafka's message specs by ``protocol/_schema_gen.py``, beside the codecs'
schema ``protocol/schemas/write_txn_markers.py``; do not edit.  Each ``TypedDict`` is one message or
struct; each key is documented with the spec's ``about`` text and the versions it exists in.
Every key may be left out (``total=False``): the encoder sends a missing field as its default,
as Kafka's generated message classes do.  Annotate what you build::

    body: WriteTxnMarkersRequestData = {...}
"""

from __future__ import annotations

from typing import TypedDict


class WriteTxnMarkersRequestData(TypedDict, total=False):
    """WriteTxnMarkersRequest (API key 27): versions 1, flexible from 1."""

    markers: list[WritableTxnMarker]
    """The transaction markers to be written. (versions 0+)"""


class WritableTxnMarker(TypedDict, total=False):
    """An element of ``WriteTxnMarkersRequestData.markers``: The transaction markers to be written."""

    producer_id: int
    """The current producer ID. (versions 0+)"""

    producer_epoch: int
    """The current epoch associated with the producer ID. (versions 0+)"""

    transaction_result: bool
    """The result of the transaction to write to the partitions (false = ABORT, true = COMMIT). (versions 0+)"""

    topics: list[WritableTxnMarkerTopic]
    """Each topic that we want to write transaction marker(s) for. (versions 0+)"""

    coordinator_epoch: int
    """Epoch associated with the transaction state partition hosted by this transaction coordinator. (versions 0+)"""


class WritableTxnMarkerTopic(TypedDict, total=False):
    """An element of ``WritableTxnMarker.topics``: Each topic that we want to write transaction marker(s) for."""

    name: str
    """The topic name. (versions 0+)"""

    partition_indexes: list[int]
    """The indexes of the partitions to write transaction markers for. (versions 0+)"""


class WriteTxnMarkersResponseData(TypedDict, total=False):
    """WriteTxnMarkersResponse (API key 27): versions 1, flexible from 1."""

    markers: list[WritableTxnMarkerResult]
    """The results for writing makers. (versions 0+)"""


class WritableTxnMarkerResult(TypedDict, total=False):
    """An element of ``WriteTxnMarkersResponseData.markers``: The results for writing makers."""

    producer_id: int
    """The current producer ID in use by the transactional ID. (versions 0+)"""

    topics: list[WritableTxnMarkerTopicResult]
    """The results by topic. (versions 0+)"""


class WritableTxnMarkerTopicResult(TypedDict, total=False):
    """An element of ``WritableTxnMarkerResult.topics``: The results by topic."""

    name: str
    """The topic name. (versions 0+)"""

    partitions: list[WritableTxnMarkerPartitionResult]
    """The results by partition. (versions 0+)"""


class WritableTxnMarkerPartitionResult(TypedDict, total=False):
    """An element of ``WritableTxnMarkerTopicResult.partitions``: The results by partition."""

    partition_index: int
    """The partition index. (versions 0+)"""

    error_code: int
    """The error code, or 0 if there was no error. (versions 0+)"""
