"""The compiled record codec (``protocol._crecords``) against its pure-Python twins in
``protocol.records`` and against kafka-python's independent record decoder.

Every test that goes through the public functions (``decode_rows``, ``RecordColumns``,
``encode_batch``) runs once per implementation (the ``codec`` fixture swaps the module's bound
implementation); the twins are also fed the same malformed record sections directly and must agree
on the result or both raise ``CorruptRecordError``.  Without the compiled module the compiled half
skips (fails under ``CI=true``: ``make test`` builds it).  The import fallback is checked in a
subprocess that cannot import the compiled module.
"""

from __future__ import annotations

import gc
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from peers import compiled_codec

from client.types import Record as Row  # the consumer's row type (a NamedTuple)
from protocol import records as R
from protocol.records import (
    BATCH_HEADER_SIZE,
    CREATE_TIME,
    GZIP,
    LOG_APPEND_TIME,
    LZ4,
    NONE,
    SNAPPY,
    ZSTD,
    CorruptRecordError,
    RecordColumns,
    decode_record_set,
    decode_rows,
    encode_batch,
    iter_batch_headers,
)

ROOT = Path(__file__).resolve().parents[2]
SETTINGS = settings(max_examples=60, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])

keys = st.none() | st.binary(max_size=40)
values = st.none() | st.binary(max_size=300)
headers = st.none() | st.lists(st.tuples(st.text(max_size=10), st.none() | st.binary(max_size=20)), max_size=3)
timestamps = st.integers(min_value=0, max_value=2**42)
record_lists = st.lists(st.tuples(keys, values, headers, timestamps), min_size=1, max_size=25)
codecs = st.sampled_from([NONE, GZIP, SNAPPY, LZ4, ZSTD])


def _compiled() -> Any:
    return compiled_codec()


IMPLS = ("compiled", "python")


@pytest.fixture(params=IMPLS)
def codec(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Binds ``protocol.records`` to one implementation for the test."""
    if request.param == "compiled":
        c = _compiled()
        monkeypatch.setattr(R, "_decode_rows", c.decode_rows)
        monkeypatch.setattr(R, "_ColumnBuilder", c.ColumnBuilder)
        monkeypatch.setattr(R, "_encode_records", c.encode_records)
    else:
        monkeypatch.setattr(R, "_decode_rows", R._py_decode_rows)
        monkeypatch.setattr(R, "_ColumnBuilder", R._PyColumnBuilder)
        monkeypatch.setattr(R, "_encode_records", R._py_encode_records)
    return str(request.param)


def _record_set(batches: list[tuple[list[Any], int, int]], base: int) -> tuple[bytes, list[tuple[Any, ...]]]:
    """Batches ``(records, codec, timestamp_type)`` laid end to end from offset ``base``, with a
    transaction marker after the first; returns the set and the expected
    ``(offset, timestamp, timestamp_type, key, value, headers)`` of every data record."""
    out = bytearray()
    expected: list[tuple[Any, ...]] = []
    offset = base
    for i, (recs, codec, ts_type) in enumerate(batches):
        batch = bytearray(encode_batch(recs, base_offset=offset, compression=codec, timestamp_type=ts_type))
        if ts_type == LOG_APPEND_TIME:
            R.stamp_log_append_time(batch, 0, 1_700_000_000_123)
        out += batch
        for j, (k, v, h, ts) in enumerate(recs):
            when = 1_700_000_000_123 if ts_type == LOG_APPEND_TIME else ts
            expected.append((offset + j, when, ts_type, k, v, list(h or [])))
        offset += len(recs)
        if i == 0:  # a COMMIT marker of producer 7
            out += encode_batch([(b"\x00\x00\x00\x01", b"\x00\x00\x00\x00\x00\x00", None, 5)], base_offset=offset,
                                producer_id=7, producer_epoch=0, is_transactional=True, is_control=True)
            offset += 1
    return bytes(out), expected


batch_lists = st.lists(st.tuples(record_lists, codecs, st.sampled_from([CREATE_TIME, LOG_APPEND_TIME])),
                       min_size=1, max_size=4)


def _fields(row: Any) -> tuple[Any, ...]:
    return (row.offset, row.timestamp, row.timestamp_type, row.key, row.value, list(row.headers))


# ------------------------------------------------------------------------------------- rows


@SETTINGS
@given(batches=batch_lists, base=st.integers(0, 2**40), skip=st.integers(0, 30), tail=st.integers(0, 60))
def test_decode_rows_matches_what_was_encoded(codec: str, batches: list[Any], base: int, skip: int,
                                              tail: int) -> None:
    data, expected = _record_set(batches, base)
    # a fetch answer may end in a partial batch: it is ignored
    data += encode_batch([(b"k", b"v" * 80, None, 1)], base_offset=base + 10_000)[:tail]
    min_offset = base + skip
    rows = decode_rows(memoryview(data), Row, "t", 3, min_offset=min_offset)
    assert all(type(r) is Row and r.topic == "t" and r.partition == 3 for r in rows)
    assert [_fields(r) for r in rows] == [e for e in expected if e[0] >= min_offset]


@SETTINGS
@given(batches=batch_lists)
def test_decode_rows_agrees_with_kafka_python(codec: str, batches: list[Any]) -> None:
    from kafka.record.memory_records import MemoryRecords

    data, _ = _record_set(batches, 100)
    theirs = []
    records = MemoryRecords(data)
    while (batch := records.next_batch()) is not None:
        if batch.is_control_batch:
            continue
        theirs += [(r.offset, r.timestamp, r.timestamp_type, r.key, r.value, list(r.headers)) for r in batch]
    ours = [_fields(r) for r in decode_rows(data, Row, "t", 0)]
    assert ours == theirs
    # and the batch decoder the broker uses says the same
    assert ours == [(r.offset, r.timestamp, r.timestamp_type, r.key, r.value, r.headers)
                    for r in decode_record_set(data)]


def test_decode_rows_rejects_a_bad_crc(codec: str) -> None:
    data = bytearray(encode_batch([(b"k", b"value", None, 1)] * 3))
    data[-1] ^= 0xFF
    with pytest.raises(CorruptRecordError, match="CRC"):
        decode_rows(data, Row, "t", 0)


def test_decode_rows_wants_a_tuple_type(codec: str) -> None:
    with pytest.raises(TypeError):
        decode_rows(encode_batch([(b"k", b"v", None, 1)]), dict, "t", 0)


class _Delivered(NamedTuple):
    topic: str
    partition: int
    offset: int
    timestamp: int
    timestamp_type: int
    key: bytes | None
    value: bytes | None
    headers: list[Any]
    delivery_count: int | None = None
    note: str = "n"


class _Undefaulted(NamedTuple):
    topic: str
    partition: int
    offset: int
    timestamp: int
    timestamp_type: int
    key: bytes | None
    value: bytes | None
    headers: list[Any]
    delivery_count: int


def test_decode_rows_fills_the_defaults_of_fields_after_the_eight(codec: str) -> None:
    rows = decode_rows(encode_batch([(b"k", b"v", None, 1), (None, b"w", None, 2)], base_offset=5), _Delivered, "t", 0)
    assert [(type(r), r.offset, r.value, r.delivery_count, r.note, len(r)) for r in rows] == [
        (_Delivered, 5, b"v", None, "n", 10), (_Delivered, 6, b"w", None, "n", 10)]
    assert rows[0]._replace(delivery_count=3).delivery_count == 3
    with pytest.raises(TypeError, match="defaults"):
        decode_rows(encode_batch([(b"k", b"v", None, 1)]), _Undefaulted, "t", 0)


def test_decode_rows_takes_the_fields_after_the_eight_from_extras(codec: str) -> None:
    data = encode_batch([(b"k", b"v", None, 1), (None, b"w", None, 2)], base_offset=5)
    rows = decode_rows(data, _Delivered, "t", 0, extras=(2, "m"))
    assert [(type(r), r.offset, r.value, r.delivery_count, r.note) for r in rows] == [
        (_Delivered, 5, b"v", 2, "m"), (_Delivered, 6, b"w", 2, "m")]
    assert [r.delivery_count for r in decode_rows(data, _Undefaulted, "t", 0, extras=[4])] == [4, 4]
    assert decode_rows(data, Row, "t", 0, extras=(None,)) == decode_rows(data, Row, "t", 0)
    for wrong in ((1,), (1, "m", 0)):
        with pytest.raises(TypeError, match="extras"):
            decode_rows(data, _Delivered, "t", 0, extras=wrong)


# ------------------------------------------------------------------------------------- columns


def _columns_from_rows(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    return [(o, ts, tt, k, v) for o, ts, tt, k, v, _ in rows]


def _columns_read(columns: tuple[Any, ...]) -> tuple[list[tuple[Any, ...]], list[Any] | None]:
    """Read ``RecordColumns.finish()`` back through pyarrow's own view of the Arrow layout."""
    pa = pytest.importorskip("pyarrow")
    length, offsets, timestamps, types, key, value, hdrs = columns
    cols = [pa.Array.from_buffers(pa.int64(), length, [None, pa.py_buffer(offsets)]),
            pa.Array.from_buffers(pa.int64(), length, [None, pa.py_buffer(timestamps)]),
            pa.Array.from_buffers(pa.int32(), length, [None, pa.py_buffer(types)])]
    for valid, offs, blob in (key, value):
        cols.append(pa.Array.from_buffers(pa.binary(), length, [None if valid is None else pa.py_buffer(valid),
                                                                pa.py_buffer(offs), pa.py_buffer(blob)]))
    for c in cols:
        c.validate(full=True)
    return list(zip(*(c.to_pylist() for c in cols), strict=True)), hdrs


@SETTINGS
@given(batches=batch_lists, skip=st.integers(0, 30), upto=st.integers(0, 100), with_headers=st.booleans())
def test_record_columns_hold_the_records_in_arrow_layout(codec: str, batches: list[Any], skip: int, upto: int,
                                                         with_headers: bool) -> None:
    data, expected = _record_set(batches, 500)
    cols = RecordColumns(headers=with_headers)
    # two fetches' worth: the second set repeats the first (a refetch), the window drops the repeats
    cols.add(data, 500 + skip, 500 + upto)
    cols.add(data, 500 + upto)
    want = [e for e in expected if e[0] >= 500 + skip and e[0] < 500 + upto] + [e for e in expected
                                                                                  if e[0] >= 500 + upto]
    assert cols.length == len(want)
    got, hdrs = _columns_read(cols.finish())
    assert got == _columns_from_rows(want)
    assert hdrs == ([e[5] for e in want] if with_headers else None)


def test_record_columns_window_edges(codec: str) -> None:
    """Every ``[min_offset, max_offset)`` window around the edges of three batches (compressed and
    not, a transaction marker after the first) keeps exactly the records inside it."""
    data, expected = _record_set([([(b"k", b"v%d" % i, None, i) for i in range(3)], codec_id, CREATE_TIME)
                                  for codec_id in (GZIP, NONE, LZ4)], 500)
    offsets = [e[0] for e in expected]
    assert offsets == [500, 501, 502, 504, 505, 506, 507, 508, 509]
    for lo in range(498, 512):
        for hi in range(lo, 512):
            cols = RecordColumns()
            cols.add(data, lo, hi)
            got, _ = _columns_read(cols.finish())
            assert [g[0] for g in got] == [o for o in offsets if lo <= o < hi], (lo, hi)


def test_record_columns_of_nothing(codec: str) -> None:
    got, hdrs = _columns_read(RecordColumns().finish())
    assert got == [] and hdrs is None


# ------------------------------------------------------------------------------------- encoding


encodable = st.lists(st.tuples(st.none() | st.binary(max_size=40), st.none() | st.binary(max_size=300),
                               headers, st.none() | timestamps), min_size=1, max_size=25)


@SETTINGS
@given(recs=encodable, base_ts=timestamps, now=timestamps, as_views=st.booleans())
def test_encode_records_twins_write_the_same_bytes(recs: list[Any], base_ts: int, now: int, as_views: bool) -> None:
    c = _compiled()
    if as_views:  # bytes-like keys and values are accepted
        recs = [(None if k is None else bytearray(k), None if v is None else memoryview(v), h, ts)
                for k, v, h, ts in recs]
    ours, theirs = bytearray(b"head"), bytearray(b"head")
    assert c.encode_records(recs, base_ts, now, ours) == R._py_encode_records(recs, base_ts, now, theirs)
    assert ours == theirs


@SETTINGS
@given(recs=st.lists(st.tuples(keys, values, headers, timestamps), min_size=1, max_size=25), codec_id=codecs)
def test_encode_batch_is_read_back_by_kafka_python(codec: str, recs: list[Any], codec_id: int) -> None:
    from kafka.record.memory_records import MemoryRecords

    batch = MemoryRecords(encode_batch(recs, base_offset=42, compression=codec_id)).next_batch()
    assert batch.validate_crc()
    assert [(r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in batch] == [
        (42 + i, ts, k, v, list(h or [])) for i, (k, v, h, ts) in enumerate(recs)]


# ------------------------------------------------------------------------------------- malformed input


def _twins() -> Iterator[tuple[str, Any, Any]]:
    c = _compiled()
    yield "decode_rows", c.decode_rows, R._py_decode_rows
    yield "columns", c.ColumnBuilder, R._PyColumnBuilder


def _outcome(kind: str, impl: Any, body: bytes, count: int) -> Any:
    try:
        if kind == "decode_rows":
            out: list[Any] = []
            impl(body, 0, len(body), count, 10, 1000, None, CREATE_TIME, 0, Row, "t", 0, out)
            return [_fields(r) for r in out]
        builder = impl(True)
        builder.add_records(body, 0, len(body), count, 10, 1000, None, CREATE_TIME, 0, 1 << 62)
        return builder.finish()
    except CorruptRecordError:
        return CorruptRecordError


def _records_section(recs: list[Any]) -> bytes:
    return encode_batch(recs)[BATCH_HEADER_SIZE:]


@settings(SETTINGS, max_examples=300)
@given(recs=record_lists, data=st.data())
def test_twins_agree_on_damaged_record_sections(recs: list[Any], data: st.DataObject) -> None:
    body = bytearray(_records_section(recs))
    how = data.draw(st.sampled_from(["flip", "truncate", "extend", "count"]))
    count = len(recs)
    if how == "flip":
        for _ in range(data.draw(st.integers(1, 4))):
            body[data.draw(st.integers(0, len(body) - 1))] = data.draw(st.integers(0, 255))
    elif how == "truncate":
        del body[data.draw(st.integers(0, len(body) - 1)):]
    elif how == "extend":
        body += data.draw(st.binary(min_size=1, max_size=20))
    else:
        count = data.draw(st.integers(-(2**31), 2**31 - 1))
    for kind, compiled, python in _twins():
        assert _outcome(kind, compiled, bytes(body), count) == _outcome(kind, python, bytes(body), count), kind


@settings(SETTINGS, max_examples=300)
@given(body=st.binary(max_size=200), count=st.integers(0, 40))
def test_twins_agree_on_random_bytes(body: bytes, count: int) -> None:
    for kind, compiled, python in _twins():
        assert _outcome(kind, compiled, body, count) == _outcome(kind, python, body, count), kind


@pytest.mark.parametrize("body", [
    b"\x01" + b"\x00" * 30,  # a record claiming length -1
    b"\xff\xff\xff\xff\x7f" + b"\x00" * 30,  # a huge record length
    b"\x0e\x00\x00\x00\x01\x01\xff\xff\xff\xff\x0f",  # a value length beyond the record
    b"\x10\x00\x00\x00\x01\x01\x02\x02\xff\xfe",  # a header key that is not UTF-8
    b"\x0c\x00\x00\x00\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01\x01\x00",  # an 11-byte varint
])
def test_hostile_record_sections_are_corrupt_in_both(body: bytes) -> None:
    for kind, compiled, python in _twins():
        assert _outcome(kind, compiled, body, 1) is CorruptRecordError, kind
        assert _outcome(kind, python, body, 1) is CorruptRecordError, kind


def test_a_range_outside_the_buffer_is_refused() -> None:
    body = _records_section([(b"k", b"v", None, 1)])
    for impl in (_compiled().decode_rows, R._py_decode_rows):
        with pytest.raises(ValueError, match="outside"):
            impl(body, 0, len(body) + 1, 1, 0, 0, None, CREATE_TIME, 0, Row, "t", 0, [])


def test_the_compiled_rows_decoder_leaves_the_collector_as_it_found_it() -> None:
    """It pauses the cyclic collector while it makes rows; afterwards (also after corrupt input)
    the collector is on again, or still off if the caller had turned it off."""
    decode = _compiled().decode_rows
    body = _records_section([(b"k", b"v", [("h", b"x")], 1), (None, b"w", None, 2)])
    was = gc.isenabled()
    try:
        gc.enable()
        out: list[Any] = []
        decode(body, 0, len(body), 2, 10, 0, None, CREATE_TIME, 0, Row, "t", 0, out)
        assert [(r.offset, r.key, r.value, r.headers) for r in out] == [(10, b"k", b"v", [("h", b"x")]),
                                                                       (11, None, b"w", [])]
        assert gc.isenabled()
        with pytest.raises(CorruptRecordError):
            decode(body[:-1], 0, len(body) - 1, 2, 10, 0, None, CREATE_TIME, 0, Row, "t", 0, [])
        assert gc.isenabled()
        gc.disable()
        decode(body, 0, len(body), 2, 10, 0, None, CREATE_TIME, 0, Row, "t", 0, [])
        assert not gc.isenabled()
    finally:
        (gc.enable if was else gc.disable)()


# ------------------------------------------------------------------------------------- fallback


def test_without_the_compiled_module_the_pure_python_codec_is_used() -> None:
    """A tree where ``protocol._crecords`` cannot be imported decodes and encodes the same."""
    script = """
import sys
sys.modules["protocol._crecords"] = None  # what a missing or unloadable extension looks like
import protocol.records as R
from client.types import Record as Row
from protocol.records import RecordColumns, decode_rows, encode_batch

assert R.COMPILED is False
assert R._decode_rows is R._py_decode_rows and R._encode_records is R._py_encode_records
data = encode_batch([(b"k", b"v", [("h", b"x")], 5), (None, None, None, 6)], base_offset=9)
rows = decode_rows(data, Row, "t", 1)
assert rows == [Row("t", 1, 9, 5, 0, b"k", b"v", [("h", b"x")]), Row("t", 1, 10, 6, 0, None, None, [])], rows
cols = RecordColumns()
cols.add(data)
assert cols.length == 2
import client.accumulator as A
import client.partitioner as P
assert A.complete_deliveries is A.py_complete_deliveries and P.murmur2 is P.py_murmur2
print("fallback ok")
"""
    out = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "fallback ok"


def test_the_installed_tree_uses_the_compiled_codec() -> None:
    """``pip install -e .`` (what ``make test`` runs) builds it: the module is there and bound."""
    c = _compiled()
    assert R.COMPILED is True
    assert R._decode_rows is c.decode_rows and R._encode_records is c.encode_records


def test_batch_headers_still_parse_from_rows_decoder_input() -> None:
    """The fetcher reads only batch headers at fetch time; the offsets it moves to match the rows."""
    data, expected = _record_set([([(b"a", b"b", None, 1)] * 3, NONE, CREATE_TIME)], 0)
    last = [h for _, h in iter_batch_headers(data)][-1]
    assert last.next_offset == expected[-1][0] + 2  # the marker follows the last record
