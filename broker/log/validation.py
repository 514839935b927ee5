"""Record-level checks of a produced batch (Kafka's ``LogValidator`` per-record errors).

Kafka answers some bad produces per record: the partition's error is INVALID_RECORD or
INVALID_TIMESTAMP and the Produce response (v8+) lists the offending records in ``record_errors``
(their index in the batch and why), so a client can fail exactly those and retry the others
(librdkafka fails them with INVALID_RECORD and the rest of the batch with
``_INVALID_DIFFERENT_RECORD``).  Two rules do that here:

* a compacted topic (``cleanup.policy`` contains ``compact``) refuses records without a key —
  checked before the append, which decodes the batch (only for compacted topics);
* a record whose CreateTime is outside ``message.timestamp.before/after.max.ms`` — the append
  checks the batch's bounds from its header without decoding; when they fail,
  :func:`timestamp_errors` decodes the batch to name the records.

:class:`RecordValidationError` carries the list; the storage layer's other errors have none.
Pure functions over bytes and the topic's :class:`~broker.log.config.LogConfig`.
"""

from __future__ import annotations

from broker.log.config import LogConfig
from broker.log.errors import CorruptMessageError, InvalidRecordError, InvalidTimestampError, LogError
from protocol.records import CorruptRecordError, decode_batch

__all__ = ["RecordError", "RecordValidationError", "check_keys", "timestamp_errors"]

RecordError = tuple[int, str]  # (batch_index, message), as ProduceResponse's record_errors


class RecordValidationError(LogError):
    """Records of a batch broke a rule: the partition's error plus the records (``record_errors``)."""

    def __init__(self, error: LogError, record_errors: list[RecordError]) -> None:
        super().__init__(error.detail)
        self.error_name = error.error_name
        self.error_code = error.error_code
        self.record_errors = record_errors


def _summary(errors: list[RecordError]) -> str:
    shown = ", ".join(f"RecordError(batchIndex={i}, message='{m}')" for i, m in errors[:3])
    return (f"One or more records have been rejected due to {len(errors)} record errors in total, and only "
            f"showing the first three errors at most: [{shown}]")


def check_keys(batch: bytes | bytearray, config: LogConfig, partition: str, *, max_decompressed_size: int) -> None:
    """A compacted topic's rule: every record needs a key.  Raises :class:`RecordValidationError`
    (INVALID_RECORD) naming the keyless records, ``CorruptMessageError`` for undecodable records."""
    if not config.compact:
        return
    try:
        _, records = decode_batch(bytes(batch), max_decompressed_size=max_decompressed_size)
    except CorruptRecordError as exc:
        raise CorruptMessageError(str(exc)) from None
    errors = [(i, f"Compacted topic cannot accept message without key in topic partition {partition}.")
              for i, r in enumerate(records) if r.key is None]
    if errors:
        raise RecordValidationError(InvalidRecordError(_summary(errors)), errors)


def timestamp_errors(batch: bytes | bytearray, config: LogConfig, now_ms: int, *,
                     max_decompressed_size: int) -> list[RecordError]:
    """The records of ``batch`` whose CreateTime is out of the topic's range at ``now_ms`` (for a batch
    the append refused with INVALID_TIMESTAMP); empty when they cannot be told apart."""
    try:
        _, records = decode_batch(bytes(batch), max_decompressed_size=max_decompressed_size)
    except CorruptRecordError:
        return []
    lo = now_ms - config.timestamp_before_max_ms
    hi = now_ms + config.timestamp_after_max_ms
    return [(i, f"Timestamp {r.timestamp} of message with offset {i} is out of range. The timestamp should be "
                f"within [{lo}, {hi}]")
            for i, r in enumerate(records) if r.timestamp >= 0 and not lo <= r.timestamp <= hi]


def with_timestamp_errors(exc: InvalidTimestampError, batch: bytes | bytearray, config: LogConfig, now_ms: int, *,
                          max_decompressed_size: int) -> LogError:
    """The append's INVALID_TIMESTAMP, with the offending records when they can be named."""
    errors = timestamp_errors(batch, config, now_ms, max_decompressed_size=max_decompressed_size)
    if not errors:
        return exc
    return RecordValidationError(InvalidTimestampError("One or more records have been rejected due to invalid "
                                                       "timestamp"), errors)
