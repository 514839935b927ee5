"""Exceptions raised by the storage layer, each carrying the Kafka error it maps to.

The storage layer owns *what* went wrong; the request handlers own *how* to say
it on the wire.  Every exception here has ``error_name`` (Kafka's ``Errors`` enum
name, e.g. ``"CORRUPT_MESSAGE"``) and ``error_code`` (its numeric code), so a
handler can answer with ``exc.error_code`` without a mapping table of its own.
"""

from __future__ import annotations


class LogError(Exception):
    """Base class: a storage-layer failure that maps onto one Kafka error code."""

    error_name: str = "UNKNOWN_SERVER_ERROR"
    error_code: int = -1

    def __init__(self, message: str = "") -> None:
        super().__init__(f"{self.error_name}: {message}" if message else self.error_name)
        self.detail = message


class OffsetOutOfRangeError(LogError):
    error_name = "OFFSET_OUT_OF_RANGE"
    error_code = 1


class CorruptMessageError(LogError):
    """Bad CRC, truncated batch, unparsable header."""

    error_name = "CORRUPT_MESSAGE"
    error_code = 2


class UnknownTopicOrPartitionError(LogError):
    error_name = "UNKNOWN_TOPIC_OR_PARTITION"
    error_code = 3


class MessageTooLargeError(LogError):
    error_name = "MESSAGE_TOO_LARGE"
    error_code = 10


class InvalidTopicError(LogError):
    error_name = "INVALID_TOPIC_EXCEPTION"
    error_code = 17


class InvalidTimestampError(LogError):
    error_name = "INVALID_TIMESTAMP"
    error_code = 32


class TopicAlreadyExistsError(LogError):
    error_name = "TOPIC_ALREADY_EXISTS"
    error_code = 36


class InvalidPartitionsError(LogError):
    error_name = "INVALID_PARTITIONS"
    error_code = 37


class InvalidConfigError(LogError):
    error_name = "INVALID_CONFIG"
    error_code = 40


class OutOfOrderSequenceError(LogError):
    error_name = "OUT_OF_ORDER_SEQUENCE_NUMBER"
    error_code = 45


class InvalidProducerEpochError(LogError):
    error_name = "INVALID_PRODUCER_EPOCH"
    error_code = 47


class InvalidTxnStateError(LogError):
    """A transactional write the producer's transaction state does not allow (Kafka's INVALID_TXN_STATE)."""

    error_name = "INVALID_TXN_STATE"
    error_code = 48


class TransactionCoordinatorFencedError(LogError):
    """A marker from a transaction coordinator older than the one that wrote the producer's last marker."""

    error_name = "TRANSACTION_COORDINATOR_FENCED"
    error_code = 52


class KafkaStorageError(LogError):
    """An I/O failure or an unusable log directory (including one locked by another broker)."""

    error_name = "KAFKA_STORAGE_ERROR"
    error_code = 56


class LogDirLockedError(KafkaStorageError):
    """Another process holds the data directory's lock file."""


class InvalidRecordError(LogError):
    """A batch that is well-formed bytes but breaks a broker rule (docs/records-on-append.md)."""

    error_name = "INVALID_RECORD"
    error_code = 87
