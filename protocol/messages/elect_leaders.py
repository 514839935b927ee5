"""ElectLeaders (API key 43): the shapes of the messages, for type checkers and IDEs.

Generated from Apache Kafka's message specs by ``protocol/_schema_gen.py``, beside the codecs'
schema ``protocol/schemas/elect_leaders.py``; do not edit.  Each ``TypedDict`` is one message or
struct; each key is documented with the spec's ``about`` text and the versions it exists in.
Every key may be left out (``total=False``): the encoder sends a missing field as its default,
as Kafka's generated message classes do.  Annotate what you build::

    body: ElectLeadersRequestData = {...}
"""

from __future__ import annotations

from typing import TypedDict


class ElectLeadersRequestData(TypedDict, total=False):
    """ElectLeadersRequest (API key 43): versions 0-2, flexible from 2."""

    election_type: int
    """Type of elections to conduct for the partition. A value of '0' elects the preferred replica. A value of '1' elects the first live replica if there are no in-sync replica. (versions 1+)"""

    topic_partitions: list[TopicPartitions] | None
    """The topic partitions to elect leaders. (versions 0+; nullable 0+)"""

    timeout_ms: int
    """The time in ms to wait for the election to complete. (versions 0+; default 60000)"""


class TopicPartitions(TypedDict, total=False):
    """An element of ``ElectLeadersRequestData.topic_partitions``: The topic partitions to elect leaders."""

    topic: str
    """The name of a topic. (versions 0+)"""

    partitions: list[int]
    """The partitions of this topic whose leader should be elected. (versions 0+)"""


class ElectLeadersResponseData(TypedDict, total=False):
    """ElectLeadersResponse (API key 43): versions 0-2, flexible from 2."""

    throttle_time_ms: int
    """The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the request did not violate any quota. (versions 0+)"""

    error_code: int
    """The top level response error code. (versions 1+)"""

    replica_election_results: list[ReplicaElectionResult]
    """The election results, or an empty array if the requester did not have permission and the request asks for all partitions. (versions 0+)"""


class ReplicaElectionResult(TypedDict, total=False):
    """An element of ``ElectLeadersResponseData.replica_election_results``: The election results, or an empty array if the requester did not have permission and the request asks for all partitions."""

    topic: str
    """The topic name. (versions 0+)"""

    partition_result: list[PartitionResult]
    """The results for each partition. (versions 0+)"""


class PartitionResult(TypedDict, total=False):
    """An element of ``ReplicaElectionResult.partition_result``: The results for each partition."""

    partition_id: int
    """The partition id. (versions 0+)"""

    error_code: int
    """The result error, or zero if there was no error. (versions 0+)"""

    error_message: str | None
    """The result message, or null if there was no error. (versions 0+; nullable 0+)"""
