"""Client-side exceptions.

Every failure reaches the caller as a :class:`KafkaError` (``protocol.error_codes.KafkaError``)
carrying an :class:`~protocol.error_codes.ErrorCode`: broker errors carry the code they came
with; local failures carry the closest code (``NETWORK_EXCEPTION`` for a lost connection,
``REQUEST_TIMED_OUT`` for a timeout, ``UNKNOWN_SERVER_ERROR`` for misuse) and their own type.
"""

from __future__ import annotations

from protocol.error_codes import ErrorCode, KafkaError

__all__ = [
    "AbortableTransactionError", "AuthenticationError", "CommitFailedError", "ConcurrentAccessError", "ConfigError",
    "ErrorCode", "FatalTransactionError", "IllegalStateError", "KafkaConnectionError", "KafkaError",
    "KafkaTimeoutError", "NoOffsetForPartitionError", "ProducerFencedError", "RecordTooLargeError",
    "RetriableTransactionError", "TransactionAbortedError", "TransactionError", "UnsupportedVersionError",
    "raise_for_code",
]


class _LocalError(KafkaError):
    default_code = ErrorCode.UNKNOWN_SERVER_ERROR

    def __init__(self, message: str | None = None, code: ErrorCode | int | None = None) -> None:
        super().__init__(self.default_code if code is None else code, message)

    def __str__(self) -> str:
        return self.detail or super().__str__()


class KafkaConnectionError(_LocalError):
    """The connection to a broker failed or was closed."""

    default_code = ErrorCode.NETWORK_EXCEPTION


class KafkaTimeoutError(_LocalError):
    """A request or operation did not complete in time."""

    default_code = ErrorCode.REQUEST_TIMED_OUT


class AuthenticationError(_LocalError):
    """The broker refused this client's credentials (SASL), its TLS certificate did not verify, or the
    broker's SCRAM signature was wrong.  Not retriable: retrying with the same settings fails again."""

    default_code = ErrorCode.SASL_AUTHENTICATION_FAILED


class IllegalStateError(_LocalError):
    """The client was used in a way its current state does not allow (closed, not subscribed, ...)."""


class ConcurrentAccessError(IllegalStateError):
    """A consumer was used from a second thread or task while another one owned it."""


class ConfigError(_LocalError, ValueError):
    """An unknown config name or an invalid value."""

    default_code = ErrorCode.INVALID_CONFIG


class UnsupportedVersionError(_LocalError):
    """No version of an API is spoken by both this client and the broker."""

    default_code = ErrorCode.UNSUPPORTED_VERSION


class CommitFailedError(_LocalError):
    """An offset commit was rejected because the group rebalanced; the partitions may be gone."""

    default_code = ErrorCode.REBALANCE_IN_PROGRESS


class NoOffsetForPartitionError(_LocalError):
    """``auto_offset_reset="none"`` and a partition has no valid position."""

    default_code = ErrorCode.OFFSET_OUT_OF_RANGE


class RecordTooLargeError(_LocalError):
    """A record is larger than ``max_request_size``."""

    default_code = ErrorCode.MESSAGE_TOO_LARGE


class TransactionError(_LocalError):
    """A transactional operation failed.  What the application does next depends on the class, as
    Kafka's clients classify transactional errors (KIP-1050; confluent-kafka's ``fatal()``,
    ``txn_requires_abort()``, ``retriable()``):

    * :class:`RetriableTransactionError` (``retriable``): call the same method again;
    * :class:`AbortableTransactionError` (``abortable``): call ``abort_transaction()``, then run the
      transaction again (its input from the last committed offsets);
    * :class:`FatalTransactionError` (``fatal``; :class:`ProducerFencedError` among them): the producer
      can do nothing more; close it (a new one with the same transactional id fences what is left).

    ``code`` is the broker's error code that caused it (or the closest local one).
    """

    kind = "fatal"

    @property
    def fatal(self) -> bool:
        return self.kind == "fatal"

    @property
    def abortable(self) -> bool:
        return self.kind == "abortable"

    @property
    def retriable(self) -> bool:
        return self.kind == "retriable"

    #: confluent-kafka's name of ``abortable``
    txn_requires_abort = abortable


class FatalTransactionError(TransactionError):
    """The transactional producer is unusable (fenced, not authorized, a protocol error): close it."""

    kind = "fatal"


class ProducerFencedError(FatalTransactionError):
    """Another producer with the same transactional id started (InitProducerId bumped the epoch), or
    the broker aborted this producer's transaction with a fencing epoch bump."""

    default_code = ErrorCode.PRODUCER_FENCED


class AbortableTransactionError(TransactionError):
    """The ongoing transaction cannot commit (a send failed, the group rejected its offsets, the
    broker aborted it): ``abort_transaction()`` and start it over."""

    kind = "abortable"
    default_code = ErrorCode.TRANSACTION_ABORTABLE


class RetriableTransactionError(TransactionError):
    """A transactional call did not finish in time (coordinator unreachable, ``max_block_ms`` passed);
    nothing is lost: call the same method again."""

    kind = "retriable"
    default_code = ErrorCode.REQUEST_TIMED_OUT


class TransactionAbortedError(AbortableTransactionError):
    """A record's delivery future when its transaction was aborted before the record was sent."""


def raise_for_code(code: int, message: str | None = None) -> None:
    if code:
        raise KafkaError(code, message)
