"""DescribeLogDirs (API key 35): the shapes of the messages, for type checkers and IDEs.

Generated from Apache Kafka's message specs by ``protocol/_schema_gen.py``, beside the codecs'
schema ``protocol/schemas/describe_log_dirs.py``; do not edit.  Each ``TypedDict`` is one message or
struct; each key is documented with the spec's ``about`` text and the versions it exists in.
Every key may be left out (``total=False``): the encoder sends a missing field as its default,
as Kafka's generated message classes do.  Annotate what you build::

    body: DescribeLogDirsRequestData = {...}
"""

from __future__ import annotations

from typing import TypedDict


class DescribeLogDirsRequestData(TypedDict, total=False):
    """DescribeLogDirsRequest (API key 35): versions 1-4, flexible from 2."""

    topics: list[DescribableLogDirTopic] | None
    """Each topic that we want to describe log directories for, or null for all topics. (versions 0+; nullable 0+)"""


class DescribableLogDirTopic(TypedDict, total=False):
    """An element of ``DescribeLogDirsRequestData.topics``: Each topic that we want to describe log directories for, or null for all topics."""

    topic: str
    """The topic name. (versions 0+)"""

    partitions: list[int]
    """The partition indexes. (versions 0+)"""


class DescribeLogDirsResponseData(TypedDict, total=False):
    """DescribeLogDirsResponse (API key 35): versions 1-4, flexible from 2."""

    throttle_time_ms: int
    """The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the request did not violate any quota. (versions 0+)"""

    error_code: int
    """The error code, or 0 if there was no error. (versions 3+)"""

    results: list[DescribeLogDirsResult]
    """The log directories. (versions 0+)"""


class DescribeLogDirsResult(TypedDict, total=False):
    """An element of ``DescribeLogDirsResponseData.results``: The log directories."""

    error_code: int
    """The error code, or 0 if there was no error. (versions 0+)"""

    log_dir: str
    """The absolute log directory path. (versions 0+)"""

    topics: list[DescribeLogDirsTopic]
    """The topics. (versions 0+)"""

    total_bytes: int
    """The total size in bytes of the volume the log directory is in. (versions 4+; default -1)"""

    usable_bytes: int
    """The usable size in bytes of the volume the log directory is in. (versions 4+; default -1)"""


class DescribeLogDirsTopic(TypedDict, total=False):
    """An element of ``DescribeLogDirsResult.topics``: The topics."""

    name: str
    """The topic name. (versions 0+)"""

    partitions: list[DescribeLogDirsPartition]
    """The partitions. (versions 0+)"""


class DescribeLogDirsPartition(TypedDict, total=False):
    """An element of ``DescribeLogDirsTopic.partitions``: The partitions."""

    partition_index: int
    """The partition index. (versions 0+)"""

    partition_size: int
    """The size of the log segments in this partition in bytes. (versions 0+)"""

    offset_lag: int
    """The lag of the log's LEO w.r.t. partition's HW (if it is the current log for the partition) or current replica's LEO (if it is the future log for the partition). (versions 0+)"""

    is_future_key: bool
    """True if this log is created by AlterReplicaLogDirsRequest and will replace the current log of the replica in the future. (versions 0+)"""
