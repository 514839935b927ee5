"""Kafka record batches, format v2 (magic 2): parse, validate, rewrite, encode, decode, compress.

This module owns the bytes of a record batch and nothing else; it does no I/O.

* The broker hot path uses :func:`parse_batch_header`, :func:`iter_batch_headers`,
  :func:`crc_ok` and the ``stamp_*`` in-place rewrites.  None of these touch the records.
* The client uses :func:`encode_batch` (producer) and :func:`decode_record_set` (consumer).
* :func:`compress` / :func:`decompress` implement the four Kafka codecs with Kafka's framing:
  gzip streams, xerial-framed snappy (raw snappy is also accepted on input, as librdkafka and
  some other clients send it), LZ4 frames and zstd frames.

Anything malformed raises :class:`CorruptRecordError`.  Claimed lengths and counts are checked
against the bytes actually present before anything is allocated for them, and decompression is
bounded by an explicit output limit.
"""

from __future__ import annotations

import struct
import time
import zlib
from array import array
from collections.abc import Iterator, Sequence
from typing import Any, NamedTuple, TypeAlias

import cramjam
from crc32c import crc32c as _crc32c

from protocol.errors import ProtocolError

__all__ = [
    "BATCH_HEADER_SIZE",
    "COMPRESSION_MASK",
    "CONTROL_MASK",
    "CREATE_TIME",
    "DEFAULT_MAX_DECOMPRESSED_SIZE",
    "DELETE_HORIZON_MASK",
    "GZIP",
    "LOG_APPEND_TIME",
    "LOG_OVERHEAD",
    "LZ4",
    "MAGIC",
    "NONE",
    "NO_TIMESTAMP",
    "SNAPPY",
    "TIMESTAMP_TYPE_MASK",
    "TRANSACTIONAL_MASK",
    "ZSTD",
    "BatchHeader",
    "BytesLike",
    "COMPILED",
    "ControlMarker",
    "CorruptRecordError",
    "Record",
    "RecordColumns",
    "RecordTuple",
    "compress",
    "crc_ok",
    "decode_batch",
    "decode_committed_records",
    "decode_control_marker",
    "decode_record_set",
    "decode_rows",
    "data_batches",
    "decode_varint",
    "decode_varlong",
    "decompress",
    "encode_batch",
    "encode_control_marker",
    "encode_varint",
    "iter_batch_headers",
    "next_offset_after",
    "parse_batch_header",
    "stamp_base_offset",
    "stamp_leader_epoch",
    "stamp_log_append_time",
    "stamp_max_timestamp",
]


class CorruptRecordError(ProtocolError):
    """A record batch (or its compressed payload) is malformed, truncated or fails its CRC."""


BytesLike: TypeAlias = bytes | bytearray | memoryview
Headers: TypeAlias = list[tuple[str, bytes | None]]
RecordTuple: TypeAlias = tuple[bytes | None, bytes | None, Headers | None, int | None]
"""``(key, value, headers, timestamp)`` as accepted by :func:`encode_batch`."""

BATCH_HEADER_SIZE = 61
LOG_OVERHEAD = 12
MAGIC = 2

NONE = 0
GZIP = 1
SNAPPY = 2
LZ4 = 3
ZSTD = 4

COMPRESSION_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08
TRANSACTIONAL_MASK = 0x10
CONTROL_MASK = 0x20
DELETE_HORIZON_MASK = 0x40

CREATE_TIME = 0
LOG_APPEND_TIME = 1
NO_TIMESTAMP = -1

DEFAULT_MAX_DECOMPRESSED_SIZE = 64 * 1024 * 1024

_MIN_BATCH_LENGTH = BATCH_HEADER_SIZE - LOG_OVERHEAD
_MIN_RECORD_SIZE = 7
_LENGTH_OFFSET = 8
_LEADER_EPOCH_OFFSET = 12
_MAGIC_OFFSET = 16
_CRC_OFFSET = 17
_ATTRIBUTES_OFFSET = 21
_MAX_TIMESTAMP_OFFSET = 35

_HEADER = struct.Struct(">qiibIhiqqqhii")
_unpack_header = _HEADER.unpack_from
_pack_header = _HEADER.pack_into
_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_UINT32 = struct.Struct(">I")
_INT64 = struct.Struct(">q")
_tuple_new = tuple.__new__


class BatchHeader(NamedTuple):
    """The 61 fixed bytes at the start of every v2 batch, as parsed by :func:`parse_batch_header`."""

    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int

    @property
    def compression(self) -> int:
        return self.attributes & COMPRESSION_MASK

    @property
    def timestamp_type(self) -> int:
        return (self.attributes & TIMESTAMP_TYPE_MASK) >> 3

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_MASK)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_MASK)

    @property
    def size(self) -> int:
        """Total bytes of the batch including the 12-byte log overhead."""
        return self.batch_length + LOG_OVERHEAD

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.last_offset_delta + 1


class Record:
    """One decoded record.  ``timestamp_type`` is copied from the batch (0 CreateTime, 1 LogAppendTime)."""

    __slots__ = ("attributes", "headers", "key", "offset", "timestamp", "timestamp_type", "value")

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: Headers
    attributes: int
    timestamp_type: int

    def __init__(
        self,
        offset: int,
        timestamp: int,
        key: bytes | None,
        value: bytes | None,
        headers: Headers | None = None,
        attributes: int = 0,
        timestamp_type: int = CREATE_TIME,
    ) -> None:
        self.offset = offset
        self.timestamp = timestamp
        self.key = key
        self.value = value
        self.headers = headers if headers is not None else []
        self.attributes = attributes
        self.timestamp_type = timestamp_type

    def as_tuple(self) -> RecordTuple:
        """The ``(key, value, headers, timestamp)`` form taken by :func:`encode_batch`."""
        return (self.key, self.value, self.headers, self.timestamp)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Record):
            return NotImplemented
        return (
            self.offset == other.offset
            and self.timestamp == other.timestamp
            and self.key == other.key
            and self.value == other.value
            and self.headers == other.headers
            and self.attributes == other.attributes
            and self.timestamp_type == other.timestamp_type
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (
            f"Record(offset={self.offset}, timestamp={self.timestamp}, key={self.key!r}, "
            f"value={self.value!r}, headers={self.headers!r}, attributes={self.attributes}, "
            f"timestamp_type={self.timestamp_type})"
        )


# ---------------------------------------------------------------------------------------------
# Zig-zag varints


def _encode_varint_slow(value: int) -> bytes:
    z = (value << 1) ^ (value >> 63)
    if z < 0 or z >= 1 << 64:
        raise ValueError(f"varlong out of range: {value}")
    out = bytearray()
    while z >= 0x80:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


_VARINT_CACHE_SIZE = 8192
_VARINT_CACHE: tuple[bytes, ...] = tuple(_encode_varint_slow(v) for v in range(_VARINT_CACHE_SIZE))
_NULL_LENGTH = b"\x01"
_ZERO = b"\x00"


def encode_varint(value: int) -> bytes:
    """Zig-zag varint/varlong encoding of a signed 64-bit integer."""
    if 0 <= value < _VARINT_CACHE_SIZE:
        return _VARINT_CACHE[value]
    return _encode_varint_slow(value)


def _read_varint_tail(data: BytesLike, pos: int, first: int, max_bytes: int) -> tuple[int, int]:
    """Finish a varint whose first byte ``first`` (continuation bit set) sat at ``pos - 1``."""
    result = first & 0x7F
    shift = 7
    limit = 7 * max_bytes
    while True:
        b = data[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return (result >> 1) ^ -(result & 1), pos
        shift += 7
        if shift >= limit:
            raise CorruptRecordError(f"varint longer than {max_bytes} bytes")


def decode_varint(buf: BytesLike, pos: int = 0) -> tuple[int, int]:
    """Decode a zig-zag varint (at most 5 bytes); returns ``(value, next_pos)``."""
    try:
        b = buf[pos]
        if b < 0x80:
            return (b >> 1) ^ -(b & 1), pos + 1
        return _read_varint_tail(buf, pos + 1, b, 5)
    except IndexError:
        raise CorruptRecordError("truncated varint") from None


def decode_varlong(buf: BytesLike, pos: int = 0) -> tuple[int, int]:
    """Decode a zig-zag varlong (at most 10 bytes); returns ``(value, next_pos)``."""
    try:
        b = buf[pos]
        if b < 0x80:
            return (b >> 1) ^ -(b & 1), pos + 1
        return _read_varint_tail(buf, pos + 1, b, 10)
    except IndexError:
        raise CorruptRecordError("truncated varlong") from None


# ---------------------------------------------------------------------------------------------
# Batch headers and in-place rewrites


def parse_batch_header(buf: BytesLike, pos: int = 0) -> BatchHeader:
    """Parse the fixed header of the batch at ``pos``.

    Only the 61 header bytes need to be present; whether the whole batch fits in ``buf`` is the
    caller's business (compare ``pos + header.size`` with ``len(buf)``).
    """
    try:
        header: BatchHeader = _tuple_new(BatchHeader, _unpack_header(buf, pos))
    except struct.error:
        raise CorruptRecordError(f"batch header truncated at position {pos}") from None
    if header[3] != MAGIC:
        raise CorruptRecordError(f"unsupported record batch magic {header[3]} at position {pos}")
    if header[1] < _MIN_BATCH_LENGTH:
        raise CorruptRecordError(f"batch length {header[1]} below minimum {_MIN_BATCH_LENGTH}")
    return header


def iter_batch_headers(buf: BytesLike) -> Iterator[tuple[int, BatchHeader]]:
    """Yield ``(position, header)`` for every whole batch in ``buf``.

    A trailing partial batch (as a size-limited fetch response may end with) ends the iteration
    silently; a bad length or magic in a batch that is present raises.
    """
    n = len(buf)
    pos = 0
    unpack_length = _INT32.unpack_from
    while n - pos >= LOG_OVERHEAD:
        length = unpack_length(buf, pos + _LENGTH_OFFSET)[0]
        if length < _MIN_BATCH_LENGTH:
            raise CorruptRecordError(f"batch length {length} below minimum at position {pos}")
        end = pos + LOG_OVERHEAD + length
        if end > n:
            return
        yield pos, parse_batch_header(buf, pos)
        pos = end


def next_offset_after(buf: BytesLike) -> int:
    """The offset after the last whole batch in ``buf`` (-1 when it holds none)."""
    last = -1
    for _, header in iter_batch_headers(buf):
        last = header[0] + header[6] + 1
    return last


def crc_ok(buf: BytesLike, pos: int, header: BatchHeader) -> bool:
    """True when the CRC-32C over ``[pos + 21, pos + size)`` matches the header's CRC."""
    end = pos + header[1] + LOG_OVERHEAD
    if end > len(buf):
        return False
    return _crc32c(memoryview(buf)[pos + _ATTRIBUTES_OFFSET : end]) == header[4]


def _batch_end(buf: bytearray | memoryview, pos: int) -> int:
    end = pos + LOG_OVERHEAD + _INT32.unpack_from(buf, pos + _LENGTH_OFFSET)[0]
    if end > len(buf) or end < pos + BATCH_HEADER_SIZE:
        raise CorruptRecordError(f"batch at position {pos} is truncated or has a bad length")
    return end


def _rewrite_crc(buf: bytearray | memoryview, pos: int) -> None:
    end = _batch_end(buf, pos)
    _UINT32.pack_into(buf, pos + _CRC_OFFSET, _crc32c(memoryview(buf)[pos + _ATTRIBUTES_OFFSET : end]))


def stamp_base_offset(buf: bytearray | memoryview, pos: int, base_offset: int) -> None:
    """Overwrite baseOffset in place.  It lies outside the CRC, so nothing else changes."""
    _INT64.pack_into(buf, pos, base_offset)


def stamp_leader_epoch(buf: bytearray | memoryview, pos: int, epoch: int) -> None:
    """Overwrite partitionLeaderEpoch in place.  It lies outside the CRC."""
    _INT32.pack_into(buf, pos + _LEADER_EPOCH_OFFSET, epoch)


def stamp_log_append_time(buf: bytearray | memoryview, pos: int, now_ms: int) -> bool:
    """Mark the batch LogAppendTime with ``max_timestamp = now_ms``; recompute the CRC if anything changed.

    Returns whether the batch bytes changed.
    """
    attrs_at = pos + _ATTRIBUTES_OFFSET
    max_ts_at = pos + _MAX_TIMESTAMP_OFFSET
    attributes = _INT16.unpack_from(buf, attrs_at)[0]
    if attributes & TIMESTAMP_TYPE_MASK and _INT64.unpack_from(buf, max_ts_at)[0] == now_ms:
        return False
    _INT16.pack_into(buf, attrs_at, attributes | TIMESTAMP_TYPE_MASK)
    _INT64.pack_into(buf, max_ts_at, now_ms)
    _rewrite_crc(buf, pos)
    return True


def stamp_max_timestamp(buf: bytearray | memoryview, pos: int, max_timestamp: int) -> bool:
    """Set maxTimestamp, recomputing the CRC only when the value changes.  Returns whether it changed."""
    at = pos + _MAX_TIMESTAMP_OFFSET
    if _INT64.unpack_from(buf, at)[0] == max_timestamp:
        return False
    _INT64.pack_into(buf, at, max_timestamp)
    _rewrite_crc(buf, pos)
    return True


# ---------------------------------------------------------------------------------------------
# Compression

_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = _XERIAL_MAGIC + struct.pack(">ii", 1, 1)
_XERIAL_BLOCK = 32 * 1024
_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
_LZ4_MAGIC = b"\x04\x22\x4d\x18"
_ZSTD_LEVEL = 3
_GZIP_LEVEL = 6
_DecompressionError = cramjam.DecompressionError
_OUTPUT_FULL = "whole buffer"
_CODEC_NAMES = {NONE: "none", GZIP: "gzip", SNAPPY: "snappy", LZ4: "lz4", ZSTD: "zstd"}


def _gzip_compress(data: BytesLike, level: int = _GZIP_LEVEL) -> bytes:
    c = zlib.compressobj(level, zlib.DEFLATED, 31)
    return c.compress(data) + c.flush()


def _snappy_compress(data: BytesLike) -> bytes:
    out = bytearray(_XERIAL_HEADER)
    mv = memoryview(data)
    compress_raw = cramjam.snappy.compress_raw
    pack = _INT32.pack
    for start in range(0, len(mv), _XERIAL_BLOCK):
        block = compress_raw(mv[start : start + _XERIAL_BLOCK])
        out += pack(len(block))
        out += block
    return bytes(out)


def compress(codec: int, data: BytesLike, level: int | None = None) -> bytes:
    """Compress ``data`` with a Kafka codec, using the framing Kafka's Java client writes.

    ``level``: the codec's compression level (Kafka's ``compression.<codec>.level``; gzip -1 is
    zlib's default); None: the codec's default.  Snappy has no levels."""
    if codec == GZIP:
        return _gzip_compress(data, _GZIP_LEVEL if level is None else level)
    if codec == SNAPPY:
        return _snappy_compress(data)
    if codec == LZ4:
        return bytes(cramjam.lz4.compress(data) if level is None else cramjam.lz4.compress(data, level=level))
    if codec == ZSTD:
        return bytes(cramjam.zstd.compress(data, level=_ZSTD_LEVEL if level is None else level))
    if codec == NONE:
        return bytes(data)
    raise ValueError(f"unknown compression codec {codec}")


def _gzip_decompress(data: BytesLike, max_size: int) -> bytes:
    parts: list[bytes] = []
    total = 0
    rest: BytesLike = data
    while True:
        d = zlib.decompressobj(31)
        try:
            chunk = d.decompress(rest, max_size - total + 1)
        except zlib.error as e:
            raise CorruptRecordError(f"gzip: {e}") from None
        total += len(chunk)
        if total > max_size:
            raise CorruptRecordError(f"gzip payload inflates beyond {max_size} bytes")
        if not d.eof:
            raise CorruptRecordError("gzip stream truncated")
        parts.append(chunk)
        rest = d.unused_data
        if not rest.startswith(b"\x1f\x8b"):
            break
    return parts[0] if len(parts) == 1 else b"".join(parts)


def _snappy_decompress(data: BytesLike, max_size: int) -> bytes:
    mv = memoryview(data)
    raw_len = cramjam.snappy.decompress_raw_len
    raw_into = cramjam.snappy.decompress_raw_into
    try:
        if bytes(mv[:8]) != _XERIAL_MAGIC or len(mv) < 16:
            size = raw_len(mv)
            if size > max_size:
                raise CorruptRecordError(f"snappy payload claims {size} bytes, limit {max_size}")
            out = bytearray(size)
            if raw_into(mv, out) != size:
                raise CorruptRecordError("snappy payload shorter than its declared length")
            return bytes(out)
        n = len(mv)
        pos = 16
        blocks: list[tuple[memoryview, int]] = []
        total = 0
        while pos < n:
            if n - pos < 4:
                raise CorruptRecordError("xerial snappy block length truncated")
            block_len = _INT32.unpack_from(mv, pos)[0]
            pos += 4
            if block_len < 0 or pos + block_len > n:
                raise CorruptRecordError(f"xerial snappy block length {block_len} out of bounds")
            if block_len:
                block = mv[pos : pos + block_len]
                size = raw_len(block)
                total += size
                if total > max_size:
                    raise CorruptRecordError(f"snappy payload inflates beyond {max_size} bytes")
                blocks.append((block, size))
            pos += block_len
        out = bytearray(total)
        view = memoryview(out)
        at = 0
        for block, size in blocks:
            if raw_into(block, view[at : at + size]) != size:
                raise CorruptRecordError("snappy block shorter than its declared length")
            at += size
        view.release()
        return bytes(out)
    except _DecompressionError as e:
        raise CorruptRecordError(f"snappy: {e}") from None


def _frame_content_size(codec: int, data: BytesLike) -> int | None:
    """The decompressed size a zstd/LZ4 frame header declares, if it declares one."""
    head = bytes(memoryview(data)[:18])
    if codec == ZSTD:
        if len(head) < 6 or head[:4] != _ZSTD_MAGIC:
            return None
        descriptor = head[4]
        single_segment = (descriptor >> 5) & 1
        at = 5 + (0 if single_segment else 1) + (0, 1, 2, 4)[descriptor & 3]
        width = (single_segment, 2, 4, 8)[descriptor >> 6]
        if not width or len(head) < at + width:
            return None
        size = int.from_bytes(head[at : at + width], "little")
        return size + 256 if width == 2 else size
    if len(head) < 14 or head[:4] != _LZ4_MAGIC or not head[4] & 0x08:
        return None
    return int.from_bytes(head[6:14], "little")


def _frame_decompress(codec: int, data: BytesLike, max_size: int) -> bytes:
    into = cramjam.zstd.decompress_into if codec == ZSTD else cramjam.lz4.decompress_into
    declared = _frame_content_size(codec, data)
    if declared is not None:
        if declared > max_size:
            raise CorruptRecordError(f"compressed frame declares {declared} bytes, limit {max_size}")
        size = declared
    else:
        size = min(max_size, max(4096, len(data) * 8))
    while True:
        out = bytearray(size)
        try:
            written = into(data, out)
        except _DecompressionError as e:
            if _OUTPUT_FULL not in str(e):
                raise CorruptRecordError(f"{_CODEC_NAMES[codec]}: {e}") from None
            if size >= max_size:
                raise CorruptRecordError(
                    f"{_CODEC_NAMES[codec]} payload inflates beyond {max_size} bytes"
                ) from None
            size = min(max_size, max(4096, size * 4))
            continue
        return bytes(memoryview(out)[:written]) if written != size else bytes(out)


def decompress(codec: int, data: BytesLike, max_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE) -> bytes:
    """Decompress a Kafka records payload; more than ``max_size`` output bytes raises CorruptRecordError."""
    if codec == GZIP:
        return _gzip_decompress(data, max_size)
    if codec == SNAPPY:
        return _snappy_decompress(data, max_size)
    if codec in (LZ4, ZSTD):
        return _frame_decompress(codec, data, max_size)
    if codec == NONE:
        if len(data) > max_size:
            raise CorruptRecordError(f"payload of {len(data)} bytes exceeds limit {max_size}")
        return bytes(data)
    raise CorruptRecordError(f"unknown compression codec {codec}")


# ---------------------------------------------------------------------------------------------
# Encoding


def encode_batch(
    records: Sequence[RecordTuple] | Sequence[Record],
    *,
    base_offset: int = 0,
    compression: int = NONE,
    timestamp_type: int = CREATE_TIME,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    is_transactional: bool = False,
    partition_leader_epoch: int = -1,
    is_control: bool = False,
    compression_level: int | None = None,
    offset_deltas: Sequence[int] | None = None,
    last_offset_delta: int | None = None,
    delete_horizon_ms: int | None = None,
) -> bytes:
    """Build one v2 batch.

    ``records`` are ``(key, value, headers, timestamp)`` tuples (the fast path; ``headers`` may be
    ``None`` or a list of ``(str, bytes | None)``, ``timestamp`` ``None`` means "now") or
    :class:`Record` objects, whose ``offset`` is ignored: offset deltas are 0..n-1 unless
    ``offset_deltas`` gives them (a compacted batch keeps its records' offsets, with gaps, and its
    ``last_offset_delta``).  baseTimestamp is the first record's timestamp — or, with
    ``delete_horizon_ms``, that horizon (the attribute bit 6 set, as Kafka's cleaner writes it) — and
    maxTimestamp the largest.  With ``timestamp_type=LOG_APPEND_TIME`` only the attribute bit is set;
    the broker stamps the time with :func:`stamp_log_append_time`.  ``compression_level``: see
    :func:`compress`.
    """
    n = len(records)
    if n == 0:
        raise ValueError("a record batch needs at least one record")
    if compression & ~COMPRESSION_MASK or compression > ZSTD:
        raise ValueError(f"unknown compression codec {compression}")
    if isinstance(records[0], Record):
        records = [r.as_tuple() for r in records]  # type: ignore[union-attr]

    now_ms = int(time.time() * 1000)
    first_ts = records[0][3]  # type: ignore[index]
    if first_ts is None:
        first_ts = now_ms
    base_ts = first_ts if delete_horizon_ms is None else delete_horizon_ms
    body = bytearray(BATCH_HEADER_SIZE) if compression == NONE else bytearray()
    if offset_deltas is None:
        max_ts = _encode_records(records, base_ts, now_ms, body)
    else:  # a compacted batch (the cleaner's rare path): the pure-Python loop takes the deltas
        max_ts = _py_encode_records(records, base_ts, now_ms, body, offset_deltas)
    if delete_horizon_ms is not None:  # the horizon is the base, not a record's time
        max_ts = max(now_ms if r[3] is None else r[3] for r in records)  # type: ignore[index]

    if compression == NONE:
        out = body
    else:
        out = bytearray(BATCH_HEADER_SIZE)
        out += compress(compression, body, compression_level)

    attributes = compression
    if timestamp_type:
        attributes |= TIMESTAMP_TYPE_MASK
    if is_transactional:
        attributes |= TRANSACTIONAL_MASK
    if is_control:
        attributes |= CONTROL_MASK
    if delete_horizon_ms is not None:
        attributes |= DELETE_HORIZON_MASK
    _pack_header(
        out,
        0,
        base_offset,
        len(out) - LOG_OVERHEAD,
        partition_leader_epoch,
        MAGIC,
        0,
        attributes,
        n - 1 if last_offset_delta is None else last_offset_delta,
        base_ts,
        max_ts,
        producer_id,
        producer_epoch,
        base_sequence,
        n,
    )
    _UINT32.pack_into(out, _CRC_OFFSET, _crc32c(memoryview(out)[_ATTRIBUTES_OFFSET:]))
    return bytes(out)


def _py_encode_records(records: Sequence[RecordTuple], base_timestamp: int, now_ms: int, out: bytearray,
                       offset_deltas: Sequence[int] | None = None) -> int:
    """The records section of a batch appended to ``out`` (timestamps None mean ``now_ms``); returns
    the largest timestamp (at least ``base_timestamp``).  The pure-Python twin of
    ``protocol._crecords.encode_records``; only this one takes ``offset_deltas`` (default 0..n-1)."""
    cache = _VARINT_CACHE
    cache_size = _VARINT_CACHE_SIZE
    slow = _encode_varint_slow
    base_ts = base_timestamp
    max_ts = base_ts
    body = out
    for offset_delta, (key, value, headers, ts) in enumerate(records):
        if offset_deltas is not None:
            offset_delta = offset_deltas[offset_delta]
        if ts is None:
            ts = now_ms
        if ts > max_ts:
            max_ts = ts
        delta = ts - base_ts
        tsb = cache[delta] if 0 <= delta < cache_size else slow(delta)
        ob = cache[offset_delta] if offset_delta < cache_size else slow(offset_delta)
        if key is None:
            kb = _NULL_LENGTH
            kl = 0
        else:
            kl = len(key)
            kb = cache[kl] if kl < cache_size else slow(kl)
        if value is None:
            vb = _NULL_LENGTH
            vl = 0
        else:
            vl = len(value)
            vb = cache[vl] if vl < cache_size else slow(vl)
        if headers:
            hn = len(headers)
            hb: bytes | bytearray = bytearray(cache[hn] if hn < cache_size else slow(hn))
            for hkey, hvalue in headers:
                hkb = hkey.encode()
                hkl = len(hkb)
                hb += cache[hkl] if hkl < cache_size else slow(hkl)
                hb += hkb
                if hvalue is None:
                    hb += _NULL_LENGTH
                else:
                    hvl = len(hvalue)
                    hb += cache[hvl] if hvl < cache_size else slow(hvl)
                    hb += hvalue
        else:
            hb = _ZERO
        length = 1 + len(tsb) + len(ob) + len(kb) + kl + len(vb) + vl + len(hb)
        body += cache[length] if length < cache_size else slow(length)
        body += _ZERO
        body += tsb
        body += ob
        body += kb
        if kl:
            body += key
        body += vb
        if vl:
            body += value
        body += hb
    return max_ts


def encode_empty_batch(header: BatchHeader) -> bytes:
    """A batch with the header fields of ``header`` and no records (Kafka's ``writeEmptyHeader``).

    What compaction keeps of an idempotent producer's last batch once all its records are gone:
    the offsets, producer id, epoch and sequences survive, so the producer's next batch is still in
    sequence after a restart rebuilds producer state from the log."""
    out = bytearray(BATCH_HEADER_SIZE)
    attributes = header.attributes & (TIMESTAMP_TYPE_MASK | TRANSACTIONAL_MASK | CONTROL_MASK)
    _pack_header(out, 0, header.base_offset, BATCH_HEADER_SIZE - LOG_OVERHEAD, header.partition_leader_epoch,
                 MAGIC, 0, attributes, header.last_offset_delta, header.max_timestamp, header.max_timestamp,
                 header.producer_id, header.producer_epoch, header.base_sequence, 0)
    _UINT32.pack_into(out, _CRC_OFFSET, _crc32c(memoryview(out)[_ATTRIBUTES_OFFSET:]))
    return bytes(out)


# ---------------------------------------------------------------------------------------------
# Decoding


def _decode_records(
    data: bytes,
    pos: int,
    end: int,
    count: int,
    base_offset: int,
    base_timestamp: int,
    log_append_time: int | None,
) -> list[Record]:
    if count < 0:
        raise CorruptRecordError(f"negative record count {count}")
    if count * _MIN_RECORD_SIZE > end - pos:
        raise CorruptRecordError(f"record count {count} impossible in {end - pos} bytes")
    timestamp_type = CREATE_TIME if log_append_time is None else LOG_APPEND_TIME
    tail = _read_varint_tail
    records: list[Record] = []
    append = records.append
    try:
        for _ in range(count):
            b = data[pos]
            pos += 1
            if b < 0x80:
                length = (b >> 1) ^ -(b & 1)
            else:
                length, pos = tail(data, pos, b, 5)
            record_end = pos + length
            if length < 6 or record_end > end:
                raise CorruptRecordError(f"record length {length} out of bounds")
            attributes = data[pos]
            b = data[pos + 1]
            pos += 2
            if b < 0x80:
                ts_delta = (b >> 1) ^ -(b & 1)
            else:
                ts_delta, pos = tail(data, pos, b, 10)
            b = data[pos]
            pos += 1
            if b < 0x80:
                offset_delta = (b >> 1) ^ -(b & 1)
            else:
                offset_delta, pos = tail(data, pos, b, 5)

            b = data[pos]
            pos += 1
            if b < 0x80:
                n = (b >> 1) ^ -(b & 1)
            else:
                n, pos = tail(data, pos, b, 5)
            if n >= 0:
                if pos + n > record_end:
                    raise CorruptRecordError(f"record key length {n} out of bounds")
                key: bytes | None = data[pos : pos + n]
                pos += n
            elif n == -1:
                key = None
            else:
                raise CorruptRecordError(f"negative record key length {n}")

            b = data[pos]
            pos += 1
            if b < 0x80:
                n = (b >> 1) ^ -(b & 1)
            else:
                n, pos = tail(data, pos, b, 5)
            if n >= 0:
                if pos + n > record_end:
                    raise CorruptRecordError(f"record value length {n} out of bounds")
                value: bytes | None = data[pos : pos + n]
                pos += n
            elif n == -1:
                value = None
            else:
                raise CorruptRecordError(f"negative record value length {n}")

            b = data[pos]
            pos += 1
            if b < 0x80:
                n = (b >> 1) ^ -(b & 1)
            else:
                n, pos = tail(data, pos, b, 5)
            headers: Headers = []
            if n:
                if n < 0 or n * 2 > record_end - pos:
                    raise CorruptRecordError(f"header count {n} out of bounds")
                for _h in range(n):
                    b = data[pos]
                    pos += 1
                    if b < 0x80:
                        hkl = (b >> 1) ^ -(b & 1)
                    else:
                        hkl, pos = tail(data, pos, b, 5)
                    if hkl < 0 or pos + hkl > record_end:
                        raise CorruptRecordError(f"header key length {hkl} out of bounds")
                    hkey = data[pos : pos + hkl].decode()
                    pos += hkl
                    b = data[pos]
                    pos += 1
                    if b < 0x80:
                        hvl = (b >> 1) ^ -(b & 1)
                    else:
                        hvl, pos = tail(data, pos, b, 5)
                    if hvl >= 0:
                        if pos + hvl > record_end:
                            raise CorruptRecordError(f"header value length {hvl} out of bounds")
                        hvalue: bytes | None = data[pos : pos + hvl]
                        pos += hvl
                    elif hvl == -1:
                        hvalue = None
                    else:
                        raise CorruptRecordError(f"negative header value length {hvl}")
                    headers.append((hkey, hvalue))
            if pos != record_end:
                raise CorruptRecordError("record length does not match its contents")
            append(
                Record(
                    base_offset + offset_delta,
                    base_timestamp + ts_delta if log_append_time is None else log_append_time,
                    key,
                    value,
                    headers,
                    attributes,
                    timestamp_type,
                )
            )
    except IndexError:
        raise CorruptRecordError("record truncated") from None
    except UnicodeDecodeError:
        raise CorruptRecordError("header key is not UTF-8") from None
    if pos != end:
        raise CorruptRecordError(f"{end - pos} unexpected bytes after the last record")
    return records


def decode_batch(
    buf: BytesLike, pos: int = 0, *, max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE
) -> tuple[BatchHeader, list[Record]]:
    """Validate (length, CRC, codec) and decode the whole batch at ``pos``.

    Control batches decode like any other; their records' keys and values are the raw marker bytes.
    """
    header = parse_batch_header(buf, pos)
    end = pos + header[1] + LOG_OVERHEAD
    if end > len(buf):
        raise CorruptRecordError(f"batch at position {pos} truncated: needs {end - pos} bytes")
    if _crc32c(memoryview(buf)[pos + _ATTRIBUTES_OFFSET : end]) != header[4]:
        raise CorruptRecordError(f"CRC mismatch in batch at offset {header[0]}")
    attributes = header[5]
    codec = attributes & COMPRESSION_MASK
    start = pos + BATCH_HEADER_SIZE
    if codec == NONE:
        if type(buf) is bytes:
            data = buf
        else:
            data = bytes(memoryview(buf)[start:end])
            start, end = 0, len(data)
    else:
        if codec > ZSTD:
            raise CorruptRecordError(f"unknown compression codec {codec}")
        data = decompress(codec, memoryview(buf)[start:end], max_decompressed_size)
        start, end = 0, len(data)
    log_append_time = header[8] if attributes & TIMESTAMP_TYPE_MASK else None
    records = _decode_records(data, start, end, header[12], header[0], header[7], log_append_time)
    return header, records


def decode_record_set(
    buf: BytesLike, *, max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE
) -> Iterator[Record]:
    """Yield the records of every whole data batch in ``buf``.

    Control batches are skipped and a trailing partial batch is ignored.
    """
    if type(buf) is not bytes:
        buf = bytes(buf)
    for pos, header in iter_batch_headers(buf):
        if header[5] & CONTROL_MASK:
            continue
        yield from decode_batch(buf, pos, max_decompressed_size=max_decompressed_size)[1]


def decode_committed_records(
    buf: BytesLike, aborted: Sequence[tuple[int, int]], *,
    max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
) -> Iterator[Record]:
    """The records a ``read_committed`` consumer sees in a Fetch answer (Kafka's consumer-side filter).

    ``aborted`` is the partition's ``aborted_transactions`` as ``(producer_id, first_offset)``: from a
    transaction's first offset on, that producer's transactional batches are dropped until its next
    marker.  Control batches are skipped; a trailing partial batch is ignored.
    """
    if type(buf) is not bytes:
        buf = bytes(buf)
    for pos, _ in data_batches(buf, 0, aborted):
        yield from decode_batch(buf, pos, max_decompressed_size=max_decompressed_size)[1]


# ---------------------------------------------------------------------------------------------
# Transaction markers (control batches)

ABORT_MARKER = 0
COMMIT_MARKER = 1
_MARKER_KEY = struct.Struct(">hh")
_MARKER_VALUE = struct.Struct(">hi")


class ControlMarker(NamedTuple):
    """A transaction marker: COMMIT (``commit``) or ABORT, written by the coordinator of ``coordinator_epoch``."""

    commit: bool
    coordinator_epoch: int


def encode_control_marker(producer_id: int, producer_epoch: int, commit: bool, coordinator_epoch: int,
                          timestamp_ms: int | None = None) -> bytes:
    """One control batch holding one COMMIT or ABORT marker (Kafka's ``EndTransactionMarker``):
    key ``int16 version 0, int16 type`` (0 abort, 1 commit), value ``int16 version 0, int32 coordinator epoch``;
    the batch is transactional and carries the producer's id and epoch, with no sequence."""
    key = _MARKER_KEY.pack(0, COMMIT_MARKER if commit else ABORT_MARKER)
    value = _MARKER_VALUE.pack(0, coordinator_epoch)
    return encode_batch([(key, value, None, timestamp_ms)], producer_id=producer_id, producer_epoch=producer_epoch,
                        base_sequence=-1, is_transactional=True, is_control=True)


def decode_control_marker(buf: BytesLike, pos: int = 0) -> ControlMarker:
    """The marker of the control batch at ``pos`` (CRC checked); raises CorruptRecordError when the batch is
    not a well-formed COMMIT/ABORT control batch."""
    header, records = decode_batch(buf, pos)
    if not header[5] & CONTROL_MASK or len(records) != 1:
        raise CorruptRecordError(f"batch at offset {header[0]} is not a transaction marker")
    key, value = records[0].key, records[0].value
    if key is None or len(key) < _MARKER_KEY.size or value is None or len(value) < _MARKER_VALUE.size:
        raise CorruptRecordError(f"malformed control record at offset {header[0]}")
    version, kind = _MARKER_KEY.unpack_from(key, 0)
    if version < 0 or kind not in (ABORT_MARKER, COMMIT_MARKER):
        raise CorruptRecordError(f"unknown control record type {kind} (version {version}) at offset {header[0]}")
    return ControlMarker(kind == COMMIT_MARKER, _MARKER_VALUE.unpack_from(value, 0)[1])


# ---------------------------------------------------------------------------------------------
# Rows and columns: the consumer's and the Spark reader's decoding (compiled when available)


def _batch_body(buf: BytesLike, pos: int, header: BatchHeader, max_decompressed_size: int) -> tuple[BytesLike, int, int]:
    """CRC-check the batch at ``pos`` and return ``(data, start, end)`` of its (decompressed) records."""
    end = pos + header[1] + LOG_OVERHEAD
    view = memoryview(buf)
    if _crc32c(view[pos + _ATTRIBUTES_OFFSET : end]) != header[4]:
        raise CorruptRecordError(f"CRC mismatch in batch at offset {header[0]}")
    codec = header[5] & COMPRESSION_MASK
    start = pos + BATCH_HEADER_SIZE
    if codec == NONE:
        return buf, start, end
    if codec > ZSTD:
        raise CorruptRecordError(f"unknown compression codec {codec}")
    data = decompress(codec, view[start:end], max_decompressed_size)
    return data, 0, len(data)


def _py_decode_rows(data: BytesLike, start: int, end: int, count: int, base_offset: int, base_timestamp: int,
                    log_append_time: int | None, timestamp_type: int, min_offset: int, row_type: type,
                    topic: object, partition: object, out: list[tuple[object, ...]],
                    extras: Sequence[object] | None = None) -> None:
    """Pure-Python twin of ``protocol._crecords.decode_rows``."""
    if not isinstance(row_type, type) or not issubclass(row_type, tuple):
        raise TypeError("row_type must be a tuple subclass")
    fields = getattr(row_type, "_fields", ())
    if extras is not None:
        extras = tuple(extras)
        if len(extras) != max(0, len(fields) - 8):
            raise TypeError(f"row_type has {max(0, len(fields) - 8)} fields after the eighth, "
                            f"not the {len(extras)} extras given")
    else:
        defaults = getattr(row_type, "_field_defaults", {})
        missing = [f for f in fields[8:] if f not in defaults]
        if missing:
            raise TypeError(f"row_type fields after the eighth need defaults: {missing}")
        extras = tuple(defaults[f] for f in fields[8:])
    if start < 0 or end > len(data) or start > end:
        raise ValueError("record range outside the buffer")
    if type(data) is not bytes:
        data = bytes(memoryview(data)[start:end])
        start, end = 0, len(data)
    append = out.append
    for r in _decode_records(data, start, end, count, base_offset, base_timestamp, log_append_time):
        if r.offset >= min_offset:
            append(_tuple_new(row_type, (topic, partition, r.offset, r.timestamp, timestamp_type, r.key, r.value,
                                         r.headers, *extras)))


class _PyColumnBuilder:
    """Pure-Python twin of ``protocol._crecords.ColumnBuilder``."""

    def __init__(self, headers: bool = False) -> None:
        self._offsets = array("q")
        self._timestamps = array("q")
        self._types = array("i")
        self._keys: list[bytes | None] = []
        self._values: list[bytes | None] = []
        self.headers: list[Headers] | None = [] if headers else None
        self.length = 0

    def add_records(self, data: BytesLike, start: int, end: int, count: int, base_offset: int, base_timestamp: int,
                    log_append_time: int | None, timestamp_type: int, min_offset: int, max_offset: int) -> None:
        if start < 0 or end > len(data) or start > end:
            raise ValueError("record range outside the buffer")
        body = bytes(memoryview(data)[start:end])
        for r in _decode_records(body, 0, len(body), count, base_offset, base_timestamp, log_append_time):
            if min_offset <= r.offset < max_offset:
                self._offsets.append(r.offset)
                self._timestamps.append(r.timestamp)
                self._types.append(timestamp_type)
                self._keys.append(r.key)
                self._values.append(r.value)
                if self.headers is not None:
                    self.headers.append(r.headers)
                self.length += 1

    @staticmethod
    def _binary(values: list[bytes | None]) -> tuple[bytearray | None, bytearray, bytearray]:
        valid = bytearray((len(values) + 7) // 8)
        offsets = array("i", [0])
        data = bytearray()
        nulls = 0
        for i, v in enumerate(values):
            if v is None:
                nulls += 1
            else:
                valid[i // 8] |= 1 << (i % 8)
                data += v
            offsets.append(len(data))
        return (valid if nulls else None), bytearray(offsets.tobytes()), data

    def finish(self) -> tuple[int, bytearray, bytearray, bytearray, tuple[bytearray | None, bytearray, bytearray],
                              tuple[bytearray | None, bytearray, bytearray], list[Headers] | None]:
        return (self.length, bytearray(self._offsets.tobytes()), bytearray(self._timestamps.tobytes()),
                bytearray(self._types.tobytes()), self._binary(self._keys), self._binary(self._values), self.headers)


def data_batches(buf: BytesLike, min_offset: int = 0,
                  aborted: Sequence[tuple[int, int]] | None = None) -> Iterator[tuple[int, BatchHeader]]:
    """The whole batches of ``buf`` a consumer reads records from, with offsets >= ``min_offset``:
    control batches and a trailing partial batch skipped, and with ``aborted`` (``read_committed``:
    the Fetch answer's ``(producer_id, first_offset)`` list) the batches of aborted transactions
    too — from a transaction's first offset on, that producer's transactional batches until its
    next marker.  Reads batch headers only."""
    pending = sorted((first, pid) for pid, first in aborted) if aborted else ()
    aborting: set[int] = set()
    i = 0
    for pos, header in iter_batch_headers(buf):
        attributes = header[5]
        if attributes & CONTROL_MASK:
            aborting.discard(header[9])  # its marker ends the producer's transaction
            continue
        last = header[0] + header[6]
        while i < len(pending) and pending[i][0] <= last:
            aborting.add(pending[i][1])
            i += 1
        if (attributes & TRANSACTIONAL_MASK and aborting and header[9] in aborting) or last < min_offset:
            continue
        yield pos, header


def decode_rows(buf: BytesLike, row_type: type, topic: object, partition: object, *, min_offset: int = 0,
                aborted: Sequence[tuple[int, int]] | None = None,
                max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
                extras: Sequence[object] | None = None) -> list[tuple[object, ...]]:
    """Every record of the data batches in ``buf`` with offset >= ``min_offset`` (with ``aborted``:
    those a ``read_committed`` consumer sees, as in :func:`decode_committed_records`), as
    ``row_type(topic, partition, offset, timestamp, timestamp_type, key, value, headers)`` — a tuple
    subclass such as a ``NamedTuple`` with those eight fields (and any more after them, which every row
    takes from ``extras`` or, when None, their defaults), built without a Python call per record when the
    compiled codec is installed."""
    out: list[tuple[object, ...]] = []
    for pos, header in data_batches(buf, min_offset, aborted):
        data, start, end = _batch_body(buf, pos, header, max_decompressed_size)
        lat = header[8] if header[5] & TIMESTAMP_TYPE_MASK else None
        _decode_rows(data, start, end, header[12], header[0], header[7], lat, LOG_APPEND_TIME if lat is not None
                     else CREATE_TIME, min_offset, row_type, topic, partition, out, extras)
    return out


class RecordColumns:
    """Records decoded straight into column buffers (Arrow's layout) instead of objects.

    ``add(record_set, min_offset, max_offset, aborted)`` appends the records of the whole data
    batches of a fetched record set with ``min_offset <= offset < max_offset`` (with ``aborted``,
    only committed ones: see :func:`decode_committed_records`); ``finish()`` returns
    ``(length, offsets, timestamps, timestamp_types, key, value, headers)``: native-endian int64,
    int64 and int32 buffers, ``key``/``value`` as ``(validity bitmap or None, int32 offsets, data)``,
    ``headers`` a list of header lists (only with ``headers=True``).
    """

    def __init__(self, *, headers: bool = False,
                 max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE) -> None:
        self._builder = _ColumnBuilder(headers)
        self._max_decompressed = max_decompressed_size

    @property
    def length(self) -> int:
        return int(self._builder.length)

    def add(self, buf: BytesLike, min_offset: int = 0, max_offset: int = 1 << 63,
            aborted: Sequence[tuple[int, int]] | None = None) -> None:
        for pos, header in data_batches(buf, min_offset, aborted):
            if header[0] >= max_offset:
                break
            data, start, end = _batch_body(buf, pos, header, self._max_decompressed)
            lat = header[8] if header[5] & TIMESTAMP_TYPE_MASK else None
            self._builder.add_records(data, start, end, header[12], header[0], header[7], lat,
                                      LOG_APPEND_TIME if lat is not None else CREATE_TIME, min_offset,
                                      min(max_offset, (1 << 63) - 1))

    def finish(self) -> tuple[Any, ...]:
        return tuple(self._builder.finish())


#: the ``CODEC_VERSION`` of ``protocol/_crecords.pyx`` this module needs
_CODEC_VERSION = 3

try:
    from protocol import _crecords  # built at install time (setup.py) when Cython and a compiler were there

    if getattr(_crecords, "CODEC_VERSION", 1) < _CODEC_VERSION:
        raise ImportError("the compiled record codec is older than this source: rebuild it (setup.py build_ext)")
    _crecords.set_error_class(CorruptRecordError)
    _decode_rows: Any = _crecords.decode_rows
    _ColumnBuilder: Any = _crecords.ColumnBuilder
    _encode_records: Any = _crecords.encode_records
    COMPILED = True
except ImportError:  # no compiled codec: the pure-Python twins
    _decode_rows = _py_decode_rows
    _ColumnBuilder = _PyColumnBuilder
    _encode_records = _py_encode_records
    COMPILED = False
