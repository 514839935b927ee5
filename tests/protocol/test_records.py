"""Tests for protocol.records: round trips, differential checks against kafka-python, aiokafka and
librdkafka, in-place stamping, and malformed input."""

from __future__ import annotations

import socket
import struct
import threading
import zlib
from collections.abc import Iterator

import cramjam
import pytest
from crc32c import crc32c
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from protocol import records as R
from protocol.records import (
    BATCH_HEADER_SIZE,
    GZIP,
    LZ4,
    NONE,
    SNAPPY,
    ZSTD,
    CorruptRecordError,
    Record,
    compress,
    crc_ok,
    decode_batch,
    decode_record_set,
    decode_varint,
    decode_varlong,
    decompress,
    encode_batch,
    encode_varint,
    iter_batch_headers,
    parse_batch_header,
    stamp_base_offset,
    stamp_leader_epoch,
    stamp_log_append_time,
    stamp_max_timestamp,
)

CODECS = [NONE, GZIP, SNAPPY, LZ4, ZSTD]
CODEC_NAMES = {NONE: "none", GZIP: "gzip", SNAPPY: "snappy", LZ4: "lz4", ZSTD: "zstd"}

keys = st.none() | st.binary(max_size=64)
values = st.none() | st.binary(max_size=512)
headers = st.lists(st.tuples(st.text(max_size=12), st.none() | st.binary(max_size=32)), max_size=4)
timestamps = st.integers(min_value=-(2**42), max_value=2**42)
record_tuples = st.lists(st.tuples(keys, values, headers, timestamps), min_size=1, max_size=40)


def as_fields(decoded: list[Record]) -> list[tuple]:
    return [(r.key, r.value, r.headers, r.timestamp) for r in decoded]


def expected_fields(recs: list[tuple]) -> list[tuple]:
    return [(k, v, list(h or []), ts) for k, v, h, ts in recs]


def fix_crc(buf: bytearray, pos: int = 0) -> None:
    end = pos + 12 + struct.unpack_from(">i", buf, pos + 8)[0]
    struct.pack_into(">I", buf, pos + 17, crc32c(bytes(buf[pos + 21 : end])))


# ---------------------------------------------------------------------------------------------
# varints


@pytest.mark.parametrize(
    ("value", "encoded"),
    [
        (0, b"\x00"),
        (-1, b"\x01"),
        (1, b"\x02"),
        (63, b"\x7e"),
        (-64, b"\x7f"),
        (64, b"\x80\x01"),
        (8191, b"\xfe\x7f"),
        (8192, b"\x80\x80\x01"),
        (2**31 - 1, b"\xfe\xff\xff\xff\x0f"),
        (-(2**31), b"\xff\xff\xff\xff\x0f"),
        (-(2**63), b"\xff" * 9 + b"\x01"),
    ],
)
def test_varint_vectors(value: int, encoded: bytes) -> None:
    assert encode_varint(value) == encoded
    decode = decode_varint if len(encoded) <= 5 else decode_varlong
    assert decode(encoded + b"junk") == (value, len(encoded))


@given(st.integers(min_value=-(2**63), max_value=2**63 - 1))
def test_varlong_round_trip(value: int) -> None:
    enc = encode_varint(value)
    assert decode_varlong(enc, 0) == (value, len(enc))
    if -(2**31) <= value < 2**31:
        assert decode_varint(enc, 0) == (value, len(enc))


def test_varint_too_long_or_truncated() -> None:
    with pytest.raises(CorruptRecordError):
        decode_varint(b"\x80\x80\x80\x80\x80\x00")
    with pytest.raises(CorruptRecordError):
        decode_varlong(b"\x80" * 10 + b"\x00")
    with pytest.raises(CorruptRecordError):
        decode_varint(b"\x80\x80")
    with pytest.raises(ValueError):
        encode_varint(2**63)


# ---------------------------------------------------------------------------------------------
# round trips


@pytest.mark.parametrize("codec", CODECS, ids=CODEC_NAMES.get)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    recs=record_tuples,
    base_offset=st.integers(min_value=0, max_value=2**62),
    producer=st.tuples(st.integers(-1, 2**40), st.integers(-1, 2**15 - 1), st.integers(-1, 2**31 - 1)),
    transactional=st.booleans(),
    epoch=st.integers(-1, 2**31 - 1),
)
def test_round_trip(
    codec: int, recs: list, base_offset: int, producer: tuple, transactional: bool, epoch: int
) -> None:
    pid, pepoch, seq = producer
    batch = encode_batch(
        recs,
        base_offset=base_offset,
        compression=codec,
        producer_id=pid,
        producer_epoch=pepoch,
        base_sequence=seq,
        is_transactional=transactional,
        partition_leader_epoch=epoch,
    )
    assert isinstance(batch, bytes)
    header, decoded = decode_batch(batch)
    assert header == parse_batch_header(batch)
    assert header.size == len(batch)
    assert header.compression == codec
    assert header.records_count == len(recs) == header.last_offset_delta + 1
    assert header.base_offset == base_offset
    assert header.next_offset == base_offset + len(recs)
    assert header.last_offset == base_offset + len(recs) - 1
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == producer
    assert header.partition_leader_epoch == epoch
    assert header.is_transactional == transactional
    assert not header.is_control
    assert header.timestamp_type == 0
    assert header.base_timestamp == recs[0][3]
    assert header.max_timestamp == max(r[3] for r in recs)
    assert crc_ok(batch, 0, header)
    assert as_fields(decoded) == expected_fields(recs)
    assert [r.offset for r in decoded] == list(range(base_offset, base_offset + len(recs)))
    assert all(r.timestamp_type == 0 and r.attributes == 0 for r in decoded)
    assert list(decode_record_set(batch)) == decoded
    assert list(decode_record_set(memoryview(batch))) == decoded
    assert decode_batch(bytearray(batch))[1] == decoded


@pytest.mark.parametrize("codec", CODECS, ids=CODEC_NAMES.get)
def test_large_values_cross_cache_and_block_sizes(codec: int) -> None:
    recs = [
        (b"k" * 9000, bytes(range(256)) * 400, [("big", b"h" * 10000)], 1_700_000_000_000),
        (None, b"x" * 200_000, None, 1_700_000_000_000 - 100_000),
        (b"", b"", [("", b"")], 1_700_000_100_000),
    ] + [(b"%d" % i, b"v" * i, None, 1_700_000_000_000 + i) for i in range(9000)]
    batch = encode_batch(recs, compression=codec)
    _, decoded = decode_batch(batch)
    assert as_fields(decoded) == expected_fields(recs)
    assert decoded[-1].offset == len(recs) - 1


def test_encode_accepts_record_objects_and_none_timestamp() -> None:
    objs = [Record(99, 1000 + i, b"k", b"v%d" % i, [("a", b"b")]) for i in range(3)]
    assert decode_batch(encode_batch(objs))[1] == [
        Record(i, 1000 + i, b"k", b"v%d" % i, [("a", b"b")]) for i in range(3)
    ]
    header, decoded = decode_batch(encode_batch([(None, b"v", None, None), (None, b"w", None, None)]))
    assert header.base_timestamp > 1_600_000_000_000
    assert decoded[0].timestamp == decoded[1].timestamp == header.max_timestamp
    with pytest.raises(ValueError):
        encode_batch([])
    with pytest.raises(ValueError):
        encode_batch([(None, b"v", None, 0)], compression=5)


def test_control_and_log_append_time_flags() -> None:
    batch = encode_batch(
        [(b"\x00\x00\x00\x01", b"\x00\x00\x00\x00\x00\x05", None, 10)],
        is_control=True,
        is_transactional=True,
        producer_id=7,
        producer_epoch=1,
        timestamp_type=R.LOG_APPEND_TIME,
    )
    header = parse_batch_header(batch)
    assert header.is_control and header.is_transactional and header.timestamp_type == 1
    assert header.attributes == 0x38
    assert decode_batch(batch)[1][0].timestamp_type == 1


# ---------------------------------------------------------------------------------------------
# record sets, partial batches


def make_set() -> tuple[bytes, list[list[Record]]]:
    b1 = encode_batch([(b"a", b"1", None, 5), (b"b", b"2", None, 6)], base_offset=0)
    b2 = encode_batch([(None, b"3", [("h", None)], 7)], base_offset=2, compression=ZSTD)
    ctrl = encode_batch(
        [(b"\x00\x00\x00\x01", b"\x00\x00\x00\x00\x00\x00", None, 8)],
        base_offset=3,
        is_control=True,
        is_transactional=True,
        producer_id=1,
        producer_epoch=0,
    )
    b3 = encode_batch([(b"c", b"4", None, 9)] * 3, base_offset=4, compression=GZIP)
    return b1 + b2 + ctrl + b3, [decode_batch(b)[1] for b in (b1, b2, ctrl, b3)]


def test_iter_batch_headers_and_record_set_with_partial_tail() -> None:
    full, per_batch = make_set()
    positions = [pos for pos, _ in iter_batch_headers(full)]
    assert len(positions) == 4 and positions[0] == 0
    data_records = per_batch[0] + per_batch[1] + per_batch[3]
    assert list(decode_record_set(full)) == data_records
    assert [r.offset for r in data_records] == [0, 1, 2, 4, 5, 6]
    ends = [*positions[1:], len(full)]
    for cut in range(len(full) + 1):
        whole = [p for p, e in zip(positions, ends, strict=True) if e <= cut]
        assert [p for p, _ in iter_batch_headers(full[:cut])] == whole
        expected = [
            r
            for p, e, rs in zip(positions, ends, per_batch, strict=True)
            if e <= cut and p != positions[2]
            for r in rs
        ]
        assert list(decode_record_set(full[:cut])) == expected


def test_iter_batch_headers_rejects_bad_length_in_middle() -> None:
    full, _ = make_set()
    bad = bytearray(full)
    second = [p for p, _ in iter_batch_headers(full)][1]
    struct.pack_into(">i", bad, second + 8, 10)
    with pytest.raises(CorruptRecordError):
        list(iter_batch_headers(bad))


# ---------------------------------------------------------------------------------------------
# in-place rewrites


def test_stamp_offsets_and_epoch_keep_crc() -> None:
    full, _ = make_set()
    buf = bytearray(full)
    for pos, header in list(iter_batch_headers(buf)):
        crc = header.crc
        stamp_base_offset(buf, pos, 1000 + pos)
        stamp_leader_epoch(buf, pos, 42)
        new = parse_batch_header(buf, pos)
        assert new.base_offset == 1000 + pos and new.partition_leader_epoch == 42 and new.crc == crc
        assert crc_ok(buf, pos, new)
    mv = memoryview(buf)
    stamp_base_offset(mv, 0, 7)
    assert decode_batch(bytes(buf))[1][0].offset == 7


@pytest.mark.parametrize("codec", CODECS, ids=CODEC_NAMES.get)
def test_stamp_log_append_time(codec: int) -> None:
    prefix = encode_batch([(None, b"p", None, 1)])
    buf = bytearray(
        prefix + encode_batch([(b"k", b"v", None, 100), (b"k", b"w", None, 50)], compression=codec)
    )
    pos = len(prefix)
    assert stamp_log_append_time(buf, pos, 123456) is True
    header = parse_batch_header(buf, pos)
    assert header.timestamp_type == 1 and header.max_timestamp == 123456 and header.compression == codec
    assert crc_ok(buf, pos, header)
    assert stamp_log_append_time(buf, pos, 123456) is False
    _, decoded = decode_batch(bytes(buf), pos)
    assert [r.timestamp for r in decoded] == [123456, 123456]
    assert all(r.timestamp_type == 1 for r in decoded)
    assert decode_batch(bytes(buf))[1][0].timestamp == 1


def test_stamp_max_timestamp() -> None:
    buf = bytearray(encode_batch([(None, b"v", None, 100), (None, b"v", None, 300)]))
    before = bytes(buf)
    assert stamp_max_timestamp(buf, 0, 300) is False
    assert bytes(buf) == before
    assert stamp_max_timestamp(buf, 0, 999) is True
    header = parse_batch_header(buf)
    assert header.max_timestamp == 999 and crc_ok(buf, 0, header)


# ---------------------------------------------------------------------------------------------
# malformed input


def test_header_errors() -> None:
    batch = encode_batch([(b"k", b"v", None, 1)])
    with pytest.raises(CorruptRecordError):
        parse_batch_header(batch[:60])
    with pytest.raises(CorruptRecordError):
        parse_batch_header(batch, 10)
    bad = bytearray(batch)
    bad[16] = 1
    with pytest.raises(CorruptRecordError, match="magic"):
        parse_batch_header(bad)
    for length in (48, 0, -1, -(2**31)):
        bad = bytearray(batch)
        struct.pack_into(">i", bad, 8, length)
        with pytest.raises(CorruptRecordError):
            parse_batch_header(bad)
        with pytest.raises(CorruptRecordError):
            list(iter_batch_headers(bad))
    assert parse_batch_header(batch[:BATCH_HEADER_SIZE]).size == len(batch)


def test_crc_mismatch_and_truncation() -> None:
    batch = encode_batch([(b"k", b"v" * 100, None, 1)])
    bad = bytearray(batch)
    bad[-1] ^= 0xFF
    assert not crc_ok(bad, 0, parse_batch_header(bad))
    with pytest.raises(CorruptRecordError, match="CRC"):
        decode_batch(bytes(bad))
    with pytest.raises(CorruptRecordError, match="CRC"):
        list(decode_record_set(bytes(bad)))
    assert not crc_ok(batch[:-1], 0, parse_batch_header(batch))
    with pytest.raises(CorruptRecordError, match="truncated"):
        decode_batch(batch[:-1])
    bad = bytearray(batch)
    bad[20] ^= 1
    assert not crc_ok(bad, 0, parse_batch_header(bad))


def rebuild(records_section: bytes, count: int, codec: int = NONE) -> bytes:
    """A batch whose records section is exactly ``records_section`` (already compressed if codec)."""
    buf = bytearray(encode_batch([(None, b"x", None, 0)], compression=codec)[:BATCH_HEADER_SIZE])
    buf += records_section
    struct.pack_into(">i", buf, 8, len(buf) - 12)
    struct.pack_into(">i", buf, 57, count)
    fix_crc(buf)
    return bytes(buf)


def raw_record(body: bytes) -> bytes:
    return encode_varint(len(body)) + body


GOOD_BODY = b"\x00\x00\x00" + b"\x02k" + b"\x02v" + b"\x00"


@pytest.mark.parametrize(
    ("section", "count", "match"),
    [
        (raw_record(GOOD_BODY), 2, "impossible|truncated"),
        (raw_record(GOOD_BODY), -1, "negative"),
        (raw_record(GOOD_BODY) * 2, 2**31 - 1, "impossible"),
        (raw_record(GOOD_BODY) + b"\x00", 1, "unexpected bytes"),
        (raw_record(b"\x00\x00\x00" + b"\x03k" + b"\x02v" + b"\x00"), 1, "key length"),
        (raw_record(b"\x00\x00\x00" + b"\x02k" + b"\x7ev" + b"\x00"), 1, "value length"),
        (raw_record(b"\x00\x00\x00" + b"\x01" + b"\x05v" + b"\x00"), 1, "negative record value"),
        (raw_record(b"\x00\x00\x00" + b"\x02k" + b"\x02v" + b"\x01"), 1, "header count"),
        (raw_record(b"\x00\x00\x00" + b"\x02k" + b"\x02v" + b"\x7e\x00\x00"), 1, "header count"),
        (raw_record(b"\x00\x00\x00" + b"\x01\x01" + b"\x02\x02\xff\x01"), 1, "UTF-8"),
        (raw_record(b"\x00\x00\x00" + b"\x01\x01" + b"\x02\x01\x00\x01"), 1, "header key length"),
        (raw_record(b"\x00\x00\x00" + b"\x01\x01" + b"\x02\x00\x03"), 1, "header value"),
        (raw_record(b"\x00\x00\x00" + b"\x01\x01" + b"\x00") + b"\x00" * 5, 1, "does not match|unexpected"),
        (raw_record(b"\x00\x80\x80\x80\x80\x80\x80\x80\x80\x80\x80\x00" + b"\x00\x01\x01\x00"), 1, "varint"),
        (raw_record(b"\x00\x00\x80\x80\x80\x80\x80\x00" + b"\x01\x01\x00"), 1, "varint"),
        (b"\x03" + b"\x00" * 7, 1, "record length"),
        (b"\x80\x80\x80\x80\x80\x00" + b"\x00" * 6, 1, "varint"),
        (b"\x01" + b"\x00" * 6, 1, "record length"),
        (encode_varint(10**6) + b"\x00" * 10, 1, "record length"),
    ],
)
def test_malformed_records(section: bytes, count: int, match: str) -> None:
    batch = rebuild(section, count)
    with pytest.raises(CorruptRecordError, match=match):
        decode_batch(batch)


def test_valid_rebuild_sanity() -> None:
    assert as_fields(decode_batch(rebuild(raw_record(GOOD_BODY), 1))[1]) == [(b"k", b"v", [], 0)]


@pytest.mark.parametrize("codec", [GZIP, SNAPPY, LZ4, ZSTD], ids=CODEC_NAMES.get)
def test_corrupt_compressed_payload(codec: int) -> None:
    for payload in (b"", b"\x00", b"garbage" * 10, compress(codec, b"\x00" * 1000)[:-3]):
        with pytest.raises(CorruptRecordError):
            decode_batch(rebuild(payload, 1, codec))
    with pytest.raises(CorruptRecordError, match="impossible"):
        decode_batch(rebuild(compress(codec, raw_record(GOOD_BODY)), 1000, codec))


def test_unknown_codec_in_batch() -> None:
    batch = bytearray(encode_batch([(None, b"v", None, 0)]))
    struct.pack_into(">h", batch, 21, 6)
    fix_crc(batch)
    with pytest.raises(CorruptRecordError, match="codec"):
        decode_batch(bytes(batch))
    with pytest.raises(CorruptRecordError):
        decompress(7, b"x")
    with pytest.raises(ValueError):
        compress(7, b"x")


@pytest.mark.parametrize("codec", [GZIP, SNAPPY, LZ4, ZSTD], ids=CODEC_NAMES.get)
def test_decompression_bomb_is_bounded(codec: int) -> None:
    bomb = compress(codec, b"\x00" * (8 * 1024 * 1024))
    assert len(bomb) < 512 * 1024
    assert len(decompress(codec, bomb, max_size=8 * 1024 * 1024)) == 8 * 1024 * 1024
    with pytest.raises(CorruptRecordError):
        decompress(codec, bomb, max_size=8 * 1024 * 1024 - 1)
    with pytest.raises(CorruptRecordError):
        decode_batch(rebuild(bomb, 1, codec), max_decompressed_size=1024 * 1024)


def test_zstd_and_lz4_without_declared_size_grow_within_limit() -> None:
    data = bytes(range(256)) * 4096
    zstd_stream = bytes(cramjam.zstd.Compressor().compress(data) or b"")
    comp = cramjam.zstd.Compressor()
    comp.compress(data)
    zstd_stream = bytes(comp.finish())
    assert R._frame_content_size(ZSTD, zstd_stream) is None
    assert decompress(ZSTD, zstd_stream) == data
    with pytest.raises(CorruptRecordError):
        decompress(ZSTD, zstd_stream, max_size=len(data) - 1)
    lz4_frame = compress(LZ4, data)
    assert decompress(LZ4, lz4_frame, max_size=len(data)) == data
    with pytest.raises(CorruptRecordError):
        decompress(LZ4, lz4_frame, max_size=len(data) - 1)


def test_snappy_accepts_raw_and_xerial_and_concatenated_gzip() -> None:
    data = b"hello kafka " * 10000
    raw = bytes(cramjam.snappy.compress_raw(data))
    xerial = compress(SNAPPY, data)
    assert xerial.startswith(b"\x82SNAPPY\x00\x00\x00\x00\x01\x00\x00\x00\x01")
    assert decompress(SNAPPY, raw) == decompress(SNAPPY, xerial) == data
    bad = bytearray(xerial)
    struct.pack_into(">i", bad, 16, 10**9)
    with pytest.raises(CorruptRecordError):
        decompress(SNAPPY, bytes(bad))
    gz = compress(GZIP, b"abc") + compress(GZIP, b"def")
    assert decompress(GZIP, gz) == b"abcdef"
    assert zlib.decompress(compress(GZIP, data), 31) == data


@settings(max_examples=300, deadline=None)
@given(
    codec=st.sampled_from(CODECS),
    recs=st.lists(
        st.tuples(keys, st.none() | st.binary(max_size=40), headers, timestamps), min_size=1, max_size=6
    ),
    edits=st.lists(st.tuples(st.integers(min_value=0), st.integers(0, 255)), min_size=1, max_size=6),
    cut=st.integers(min_value=0, max_value=20),
)
def test_fuzzed_batches_fail_cleanly(codec: int, recs: list, edits: list, cut: int) -> None:
    buf = bytearray(encode_batch(recs, compression=codec))
    body_len = len(buf) - BATCH_HEADER_SIZE
    for where, byte in edits:
        buf[BATCH_HEADER_SIZE + where % body_len] = byte
    if cut:
        del buf[-min(cut, body_len) :]
        struct.pack_into(">i", buf, 8, len(buf) - 12)
    fix_crc(buf)
    try:
        header, decoded = decode_batch(bytes(buf))
    except CorruptRecordError:
        return
    assert len(decoded) == header.records_count


# ---------------------------------------------------------------------------------------------
# differential: kafka-python and aiokafka


def kafka_python_decode(buf: bytes) -> list[tuple]:
    from kafka.record import MemoryRecords

    out = []
    mr = MemoryRecords(buf)
    while (batch := mr.next_batch()) is not None:
        assert batch.validate_crc()
        out.extend((r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in batch)
    return out


def aiokafka_decode(buf: bytes) -> list[tuple]:
    from aiokafka.record.memory_records import MemoryRecords

    out = []
    mr = MemoryRecords(buf)
    while (batch := mr.next_batch()) is not None:
        assert batch.validate_crc()
        out.extend((r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in batch)
    return out


def ours(decoded: list[Record]) -> list[tuple]:
    return [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in decoded]


def _kafka_python_codecs() -> list[int]:
    """The codecs kafka-python can use here (snappy/lz4/zstd need their optional libraries)."""
    from kafka import codec as kc

    available = {NONE: True, GZIP: True, SNAPPY: kc.has_snappy(), LZ4: kc.has_lz4(), ZSTD: kc.has_zstd()}
    return [c for c in CODECS if available[c]]


KAFKA_PYTHON_CODECS = _kafka_python_codecs()
diff_records = st.lists(
    st.tuples(keys, values, headers, st.integers(min_value=0, max_value=2**42)), min_size=1, max_size=20
)


@pytest.mark.parametrize("codec", KAFKA_PYTHON_CODECS, ids=CODEC_NAMES.get)
@settings(max_examples=40, deadline=None)
@given(recs=diff_records, base=st.integers(0, 2**40))
def test_kafka_python_reads_ours(codec: int, recs: list, base: int) -> None:
    batch = encode_batch(recs, compression=codec, base_offset=base)
    assert kafka_python_decode(batch) == ours(decode_batch(batch)[1])


@pytest.mark.parametrize("codec", KAFKA_PYTHON_CODECS, ids=CODEC_NAMES.get)
@settings(max_examples=40, deadline=None)
@given(recs=diff_records)
def test_ours_reads_kafka_python(codec: int, recs: list) -> None:
    from kafka.record.default_records import DefaultRecordBatchBuilder

    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=codec,
        is_transactional=False,
        producer_id=-1,
        producer_epoch=-1,
        base_sequence=-1,
        batch_size=1 << 30,
    )
    for i, (k, v, h, ts) in enumerate(recs):
        builder.append(i, timestamp=ts, key=k, value=v, headers=h)
    batch = bytes(builder.build())
    header, decoded = decode_batch(batch)
    assert header.compression in (codec, NONE)
    assert ours(decoded) == kafka_python_decode(batch)
    assert as_fields(decoded) == expected_fields(recs)


@pytest.mark.parametrize("codec", CODECS, ids=CODEC_NAMES.get)
@settings(max_examples=40, deadline=None)
@given(recs=diff_records, base=st.integers(0, 2**40))
def test_aiokafka_reads_ours(codec: int, recs: list, base: int) -> None:
    batch = encode_batch(recs, compression=codec, base_offset=base)
    assert aiokafka_decode(batch) == ours(decode_batch(batch)[1])


@pytest.mark.parametrize("codec", CODECS, ids=CODEC_NAMES.get)
@settings(max_examples=40, deadline=None)
@given(recs=diff_records)
def test_ours_reads_aiokafka(codec: int, recs: list) -> None:
    from aiokafka.record.default_records import DefaultRecordBatchBuilder

    builder = DefaultRecordBatchBuilder(2, codec, 0, -1, -1, -1, 1 << 30)
    for i, (k, v, h, ts) in enumerate(recs):
        builder.append(i, timestamp=ts, key=k, value=v, headers=h)
    batch = bytes(builder.build())
    header, decoded = decode_batch(batch)
    assert header.compression in (codec, NONE)
    assert as_fields(decoded) == expected_fields(recs)


COMPRESSIBLE = [(b"key", b"abc" * 1000, [("h", b"v" * 100)], 1_700_000_000_000 + i) for i in range(10)]


@pytest.mark.parametrize("library", ["kafka", "aiokafka"])
@pytest.mark.parametrize("codec", CODECS, ids=CODEC_NAMES.get)
def test_compressible_batch_from_other_library_uses_codec(library: str, codec: int) -> None:
    if library == "kafka":
        if codec not in KAFKA_PYTHON_CODECS:
            pytest.skip("kafka-python has no codec library for this here")
        from kafka.record.default_records import DefaultRecordBatchBuilder as Builder
    else:
        from aiokafka.record.default_records import DefaultRecordBatchBuilder as Builder  # type: ignore[assignment]
    builder = Builder(2, codec, 0, -1, -1, -1, 1 << 30)
    for i, (k, v, h, ts) in enumerate(COMPRESSIBLE):
        builder.append(i, timestamp=ts, key=k, value=v, headers=h)
    batch = bytes(builder.build())
    header, decoded = decode_batch(batch)
    assert header.compression == codec
    assert as_fields(decoded) == expected_fields(COMPRESSIBLE)


def test_kafka_python_snappy_framing_matches_ours_when_available() -> None:
    from kafka import codec as kcodec

    if not kcodec.has_snappy():
        pytest.skip("python-snappy not installed for kafka-python")
    data = b"x" * 100_000
    assert decompress(SNAPPY, kcodec.snappy_encode(data, xerial_compatible=True)) == data
    assert kcodec.snappy_decode(compress(SNAPPY, data)) == data


# ---------------------------------------------------------------------------------------------
# librdkafka: capture real Produce requests from confluent_kafka.Producer


def _s16(text: str) -> bytes:
    raw = text.encode()
    return struct.pack(">h", len(raw)) + raw


class _CaptureBroker:
    """Just enough of a Kafka broker for librdkafka to send one Produce request.

    It advertises Produce 0-7 (min 0: librdkafka disables compression otherwise), Fetch 0-11 and
    FindCoordinator 0-2 (librdkafka derives its MsgVer2/ZSTD/LZ4 features from these), Metadata 0-1
    and ApiVersions 0-3.
    """

    APIS = ((0, 0, 7), (1, 0, 11), (3, 0, 1), (10, 0, 2), (18, 0, 3))

    def __init__(self, topic: str) -> None:
        self.topic = topic
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.produce_bodies: list[tuple[int, bytes]] = []
        self.captured = threading.Event()
        self.conns: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def close(self) -> None:
        self.sock.close()
        for c in self.conns:
            try:
                c.close()
            except OSError:
                pass

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.conns.append(conn)
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    @staticmethod
    def _recv(conn: socket.socket, n: int) -> bytes:
        chunks = bytearray()
        while len(chunks) < n:
            got = conn.recv(n - len(chunks))
            if not got:
                raise EOFError
            chunks += got
        return bytes(chunks)

    def _serve(self, conn: socket.socket) -> None:
        try:
            while True:
                (size,) = struct.unpack(">i", self._recv(conn, 4))
                req = self._recv(conn, size)
                api_key, version, corr, client_len = struct.unpack_from(">hhih", req, 0)
                body_at = 10 + max(client_len, 0)
                if api_key == 18:
                    body = self._api_versions(version)
                elif api_key == 3:
                    body = self._metadata(version)
                elif api_key == 0 and version < 9:
                    self.produce_bodies.append((version, req[body_at:]))
                    self.captured.set()
                    body = self._produce_response(version)
                else:
                    return
                resp = struct.pack(">i", corr) + body
                conn.sendall(struct.pack(">i", len(resp)) + resp)
        except (EOFError, OSError):
            return

    def _api_versions(self, version: int) -> bytes:
        if version >= 3:
            out = struct.pack(">h", 0) + bytes([len(self.APIS) + 1])
            for key, lo, hi in self.APIS:
                out += struct.pack(">hhh", key, lo, hi) + b"\x00"
            return out + struct.pack(">i", 0) + b"\x00"
        out = struct.pack(">hi", 0, len(self.APIS))
        for key, lo, hi in self.APIS:
            out += struct.pack(">hhh", key, lo, hi)
        return out + (struct.pack(">i", 0) if version >= 1 else b"")

    def _metadata(self, version: int) -> bytes:
        out = struct.pack(">ii", 1, 1) + _s16("127.0.0.1") + struct.pack(">i", self.port)
        if version >= 1:
            out += struct.pack(">hi", -1, 1)
        out += struct.pack(">ih", 1, 0) + _s16(self.topic)
        if version >= 1:
            out += b"\x00"
        out += struct.pack(">ihii", 1, 0, 0, 1) + struct.pack(">ii", 1, 1) + struct.pack(">ii", 1, 1)
        return out

    def _produce_response(self, version: int) -> bytes:
        out = struct.pack(">i", 1) + _s16(self.topic) + struct.pack(">iihq", 1, 0, 0, 0)
        if version >= 2:
            out += struct.pack(">q", -1)
        if version >= 5:
            out += struct.pack(">q", 0)
        return out + (struct.pack(">i", 0) if version >= 1 else b"")


def _produce_records_bytes(body: bytes) -> Iterator[bytes]:
    """The RECORDS blobs of a Produce v3-v8 request body."""
    pos = 0
    (txn_len,) = struct.unpack_from(">h", body, pos)
    pos += 2 + max(txn_len, 0) + 2 + 4
    (topics,) = struct.unpack_from(">i", body, pos)
    pos += 4
    for _ in range(topics):
        (name_len,) = struct.unpack_from(">h", body, pos)
        pos += 2 + name_len
        (parts,) = struct.unpack_from(">i", body, pos)
        pos += 4
        for _ in range(parts):
            _index, size = struct.unpack_from(">ii", body, pos)
            pos += 8
            yield body[pos : pos + size]
            pos += size


@pytest.mark.timeout(60)
@pytest.mark.parametrize("codec_name", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_librdkafka_produced_batches(codec_name: str) -> None:
    confluent_kafka = pytest.importorskip("confluent_kafka")
    topic = "records-test"
    broker = _CaptureBroker(topic)
    sent = [
        (b"key-%d" % i, b"value-%d-" % i * (i + 1), [("h1", b"x" * i), ("null", None), ("", b"")])
        for i in range(20)
    ]
    sent.append((None, None, []))
    try:
        producer = confluent_kafka.Producer(
            {
                "bootstrap.servers": f"127.0.0.1:{broker.port}",
                "compression.type": codec_name,
                "linger.ms": 100,
                "acks": 1,
                "message.timeout.ms": 10000,
                "enable.idempotence": False,
            }
        )
        for key, value, hdrs in sent:
            producer.produce(
                topic, value=value, key=key, headers=hdrs, partition=0, timestamp=1_700_000_000_123
            )
        producer.flush(15)
        assert broker.captured.wait(15), "librdkafka never sent a Produce request"
    finally:
        broker.close()

    version, body = broker.produce_bodies[0]
    assert 3 <= version <= 7
    blobs = list(_produce_records_bytes(body))
    assert len(blobs) == 1
    batch = blobs[0]
    headers = [h for _, h in iter_batch_headers(batch)]
    assert len(headers) == 1
    header = headers[0]
    codec = {"none": NONE, "gzip": GZIP, "snappy": SNAPPY, "lz4": LZ4, "zstd": ZSTD}[codec_name]
    assert header.compression == codec
    assert crc_ok(batch, 0, header)
    assert header.base_offset == 0 and header.producer_id == -1
    header, decoded = decode_batch(batch)
    assert [(r.key, r.value, r.headers) for r in decoded] == [
        (k, v, [(n, hv) for n, hv in h]) for k, v, h in sent
    ]
    assert all(r.timestamp == 1_700_000_000_123 for r in decoded)
    assert [r.offset for r in decoded] == list(range(len(sent)))

    reencoded = encode_batch([r.as_tuple() for r in decoded], compression=codec)
    assert decode_batch(reencoded)[1] == decoded
    assert aiokafka_decode(reencoded) == ours(decoded)
    if codec in KAFKA_PYTHON_CODECS:
        assert kafka_python_decode(reencoded) == ours(decoded)
        assert kafka_python_decode(batch) == ours(decoded)
    assert aiokafka_decode(batch) == ours(decoded)
