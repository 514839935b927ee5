"""Broker storage: the data directory, partition logs, segments, indexes, producer state.

Synchronous and asyncio-free; time comes from an injected clock (a callable
returning epoch milliseconds).  Record batches are opaque bytes: only their
61-byte headers are read (``protocol.records``).

* ``manager.LogManager``            data dir, topics (+ metadata JSON), lock file, maintenance
* ``dir_failure``                    the data directory's offline state after an I/O failure (fsync)
* ``cleaner.LogCleaner``             compaction on a worker thread, crash-safe segment swaps
* ``partition_log.PartitionLog``     one partition: append/read/offsets/retention/recovery/flush
* ``segment.Segment``                one ``.log`` file + sparse ``.index`` / ``.timeindex`` + ``.txnindex``
* ``producer_state``                 idempotent producer dedup / sequencing, open transactions, snapshots
* ``txn_index``                      the aborted-transaction index of a segment
* ``config``                         topic configs, defaults, validation
* ``errors``                         exceptions carrying Kafka error names and codes
"""

from broker.log.config import TOPIC_CONFIG_DEFAULTS, LogConfig, validate_topic_configs
from broker.log.errors import (
    CorruptMessageError,
    InvalidConfigError,
    InvalidPartitionsError,
    InvalidProducerEpochError,
    InvalidRecordError,
    InvalidTimestampError,
    InvalidTopicError,
    InvalidTxnStateError,
    KafkaStorageError,
    LogDirLockedError,
    LogError,
    MessageTooLargeError,
    OffsetOutOfRangeError,
    OutOfOrderSequenceError,
    TopicAlreadyExistsError,
    TransactionCoordinatorFencedError,
    UnknownTopicOrPartitionError,
)
from broker.log.manager import LogManager, TopicInfo, validate_topic_name
from broker.log.partition_log import AppendResult, FlushTicket, PartitionLog, ReadResult, RecoveryReport
from broker.log.segment import FileSlice, Segment

__all__ = [
    "TOPIC_CONFIG_DEFAULTS",
    "AppendResult",
    "CorruptMessageError",
    "FileSlice",
    "FlushTicket",
    "InvalidConfigError",
    "InvalidPartitionsError",
    "InvalidProducerEpochError",
    "InvalidRecordError",
    "InvalidTimestampError",
    "InvalidTopicError",
    "InvalidTxnStateError",
    "KafkaStorageError",
    "LogConfig",
    "LogDirLockedError",
    "LogError",
    "LogManager",
    "MessageTooLargeError",
    "OffsetOutOfRangeError",
    "OutOfOrderSequenceError",
    "PartitionLog",
    "ReadResult",
    "RecoveryReport",
    "Segment",
    "TopicAlreadyExistsError",
    "TopicInfo",
    "TransactionCoordinatorFencedError",
    "UnknownTopicOrPartitionError",
    "validate_topic_configs",
    "validate_topic_name",
]
