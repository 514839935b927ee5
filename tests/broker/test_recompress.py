"""Recompression to a topic's compression.type keeps everything a batch carries but its codec."""

from __future__ import annotations

import itertools
import struct

import pytest
from crc32c import crc32c

from broker.log.errors import CorruptMessageError, InvalidRecordError
from broker.log.recompress import TOPIC_CODECS, recompress, recompress_for_topic, target_codec
from protocol.records import (
    GZIP,
    LOG_APPEND_TIME,
    LZ4,
    NONE,
    SNAPPY,
    ZSTD,
    crc_ok,
    decode_batch,
    encode_batch,
    parse_batch_header,
)

CODECS = [NONE, GZIP, SNAPPY, LZ4, ZSTD]
LIMIT = 64 << 20

RECORDS = [
    (b"k0", b"v0" * 50, [("h", b"1"), ("empty", None)], 1_700_000_000_000),
    (None, b"no key", [], 1_700_000_000_007),
    (b"k2", None, [("a", b"")], 1_700_000_000_003),
    (b"k3", b"x" * 3000, [], 1_700_000_000_010),
]


def _batch(codec: int, **kw: object) -> bytes:
    args: dict[str, object] = {"producer_id": 42, "producer_epoch": 3, "base_sequence": 17,
                               "partition_leader_epoch": 5}
    args.update(kw)
    return encode_batch(RECORDS, compression=codec, **args)  # type: ignore[arg-type]


@pytest.mark.parametrize(("source", "target"), list(itertools.permutations(CODECS, 2)))
def test_recompression_keeps_all_but_the_codec(source: int, target: int) -> None:
    original = _batch(source)
    out = recompress(original, target, max_decompressed_size=LIMIT)
    h0, r0 = decode_batch(original)
    h1, r1 = decode_batch(out)
    assert h1.compression == target and crc_ok(out, 0, h1)
    keep = ("base_offset", "partition_leader_epoch", "magic", "last_offset_delta", "base_timestamp",
            "max_timestamp", "producer_id", "producer_epoch", "base_sequence", "records_count")
    assert {f: getattr(h1, f) for f in keep} == {f: getattr(h0, f) for f in keep}
    assert h1.attributes & ~0x07 == h0.attributes & ~0x07
    assert r1 == r0


def test_transactional_and_log_append_time_attributes_are_kept() -> None:
    original = _batch(GZIP, is_transactional=True, timestamp_type=LOG_APPEND_TIME)
    h1, _ = decode_batch(recompress(original, NONE, max_decompressed_size=LIMIT))
    assert h1.is_transactional and h1.timestamp_type == LOG_APPEND_TIME and h1.compression == NONE


def test_topic_codec_names() -> None:
    assert target_codec("producer") is None
    assert {name: target_codec(name) for name in TOPIC_CODECS} == {
        "uncompressed": NONE, "gzip": GZIP, "snappy": SNAPPY, "lz4": LZ4, "zstd": ZSTD}


def test_batch_in_the_topics_codec_or_producer_policy_is_stored_as_sent() -> None:
    batch = _batch(LZ4)
    header = parse_batch_header(batch)
    assert recompress_for_topic(batch, header, "lz4", max_decompressed_size=LIMIT) is batch
    assert recompress_for_topic(batch, header, "producer", max_decompressed_size=LIMIT) is batch
    out = recompress_for_topic(batch, header, "zstd", max_decompressed_size=LIMIT)
    assert parse_batch_header(out).compression == ZSTD


def test_corrupt_batch_is_corrupt_message() -> None:
    batch = bytearray(_batch(GZIP))
    batch[-3] ^= 0xFF
    with pytest.raises(CorruptMessageError):
        recompress(batch, NONE, max_decompressed_size=LIMIT)


def test_compression_bomb_is_bounded() -> None:
    bomb = encode_batch([(None, b"\x00" * (4 << 20), [], 0)], compression=GZIP)
    assert len(bomb) < 64 << 10
    with pytest.raises(CorruptMessageError, match=r"inflates|exceeds"):
        recompress(bomb, NONE, max_decompressed_size=1 << 20)


def _patched(batch: bytes, fmt: str, pos: int, value: int) -> bytearray:
    """``batch`` with one header field overwritten and its CRC fixed."""
    out = bytearray(batch)
    struct.pack_into(fmt, out, pos, value)
    struct.pack_into(">I", out, 17, crc32c(memoryview(out)[21:]))
    return out


def test_record_count_must_match_the_body() -> None:
    fewer = _patched(_batch(NONE), ">i", 57, len(RECORDS) - 1)   # recordsCount
    with pytest.raises(CorruptMessageError):
        recompress(fewer, GZIP, max_decompressed_size=LIMIT)


def test_last_offset_delta_must_match_the_count() -> None:
    skewed = _patched(_batch(GZIP), ">i", 23, len(RECORDS))      # lastOffsetDelta
    with pytest.raises(InvalidRecordError, match="lastOffsetDelta"):
        recompress(skewed, NONE, max_decompressed_size=LIMIT)
