"""A topic's ``compression.type`` applied to produced batches (Kafka's ``LogValidator`` recompression).

``producer`` (the default) keeps whatever codec the producer chose; ``uncompressed``, ``gzip``,
``snappy``, ``lz4`` and ``zstd`` are the codec the topic stores, at the topic's
``compression.<codec>.level``.  A batch whose codec differs
from the topic's is decoded and built again with the topic's codec, keeping everything else the
batch carries: base offset, partition leader epoch, producer id/epoch and base sequence (so
idempotent deduplication sees the same batch), the transactional and timestamp-type attributes,
every record's timestamp, key, value and headers.  A batch already in the topic's codec is
stored as sent.  Pure: bytes in, bytes out; the produce path calls :func:`recompress_for_topic`
before handing the batch to :meth:`PartitionLog.append <broker.log.partition_log.PartitionLog.append>`,
which then validates the rebuilt batch like any other (size, CRC, offsets, timestamps).
"""

from __future__ import annotations

from broker.log.config import LogConfig
from broker.log.errors import CorruptMessageError, InvalidRecordError
from protocol.records import (
    GZIP,
    LZ4,
    NONE,
    SNAPPY,
    ZSTD,
    BatchHeader,
    CorruptRecordError,
    decode_batch,
    encode_batch,
)

__all__ = ["TOPIC_CODECS", "compression_level", "recompress", "recompress_for_topic", "target_codec"]

#: ``compression.type`` values that fix the stored codec (``producer`` is absent: keep the batch's).
TOPIC_CODECS: dict[str, int] = {"uncompressed": NONE, "gzip": GZIP, "snappy": SNAPPY, "lz4": LZ4, "zstd": ZSTD}


def target_codec(compression_type: str) -> int | None:
    """The codec a topic with ``compression.type`` stores, or None for ``producer``."""
    return TOPIC_CODECS.get(compression_type)


def recompress(batch: bytes | bytearray | memoryview, codec: int, *, max_decompressed_size: int,
               level: int | None = None) -> bytes:
    """``batch`` (exactly one v2 batch) built again with ``codec``.

    Raises :class:`CorruptMessageError` (CORRUPT_MESSAGE) for a bad CRC, undecodable records or a
    payload inflating beyond ``max_decompressed_size``, and :class:`InvalidRecordError`
    (INVALID_RECORD) when ``lastOffsetDelta`` does not match ``recordsCount``, as Kafka's validator does.
    """
    try:
        header, records = decode_batch(bytes(batch), max_decompressed_size=max_decompressed_size)
    except CorruptRecordError as exc:
        raise CorruptMessageError(str(exc)) from None
    _check_counts(header, len(records))
    return encode_batch(
        [(r.key, r.value, r.headers, r.timestamp) for r in records],
        base_offset=header.base_offset,
        compression=codec,
        timestamp_type=header.timestamp_type,
        producer_id=header.producer_id,
        producer_epoch=header.producer_epoch,
        base_sequence=header.base_sequence,
        is_transactional=header.is_transactional,
        partition_leader_epoch=header.partition_leader_epoch,
        compression_level=level,
    )


def compression_level(config: LogConfig, codec: int | None) -> int | None:
    """The topic's ``compression.<codec>.level`` for ``codec`` (None: the codec has no levels)."""
    if codec == GZIP:
        return config.compression_gzip_level
    if codec == LZ4:
        return config.compression_lz4_level
    if codec == ZSTD:
        return config.compression_zstd_level
    return None


def recompress_for_topic(batch: bytes | bytearray | memoryview, header: BatchHeader, compression_type: str, *,
                         max_decompressed_size: int, level: int | None = None) -> bytes | bytearray | memoryview:
    """The batch a topic with ``compression.type`` stores for the produced ``batch``.

    Unchanged when the topic keeps the producer's codec or the batch already uses the topic's;
    control batches are left alone (the log refuses them from clients anyway).
    """
    codec = target_codec(compression_type)
    if codec is None or codec == header.compression or header.is_control:
        return batch
    return recompress(batch, codec, max_decompressed_size=max_decompressed_size, level=level)


def _check_counts(header: BatchHeader, decoded: int) -> None:
    """The decoder already matched the body to ``recordsCount``; the header must agree with itself."""
    if decoded <= 0:
        raise InvalidRecordError("a record batch needs at least one record")
    if header.last_offset_delta + 1 != header.records_count:
        raise InvalidRecordError(f"lastOffsetDelta {header.last_offset_delta} does not match "
                                 f"recordsCount {header.records_count}")
