"""Hostile and broken input: every failure surfaces as ProtocolError, quickly and without big allocations."""

from __future__ import annotations

import struct
import sys
import tracemalloc
import uuid
from collections.abc import Callable
from typing import Any

import pytest

from protocol import api as kapi
from protocol.errors import ProtocolError, UnsupportedVersionError
from protocol.framing import FrameDecoder
from protocol.primitives import Obj
from protocol.schema import Message, build_uncompiled, parse_uncompiled
from protocol.schemas.api_versions import ApiVersionsResponse
from protocol.schemas.consumer_group_heartbeat import ConsumerGroupHeartbeatResponse
from protocol.schemas.delete_groups import DeleteGroupsRequest
from protocol.schemas.fetch import FetchRequest, FetchResponse
from protocol.schemas.heartbeat import HeartbeatRequest
from protocol.schemas.join_group import JoinGroupRequest, JoinGroupResponse
from protocol.schemas.metadata import MetadataRequest, MetadataResponse
from protocol.schemas.misc import RequestHeader
from protocol.schemas.offset_commit import OffsetCommitRequest
from protocol.schemas.sasl_authenticate import SaslAuthenticateRequest
from protocol.schemas.sasl_handshake import SaslHandshakeRequest

i16 = struct.Struct(">h").pack
i32 = struct.Struct(">i").pack


def uvarint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def cstr(text: str) -> bytes:
    data = text.encode()
    return uvarint(len(data) + 1) + data


def raises_protocol_error(fn: Callable[[], Any]) -> ProtocolError:
    """Exactly our error type: anything else (struct.error, IndexError, ...) escapes and fails the test."""
    try:
        fn()
    except ProtocolError as exc:
        return exc
    raise AssertionError("no ProtocolError raised")


def both_paths_fail(message: Message, version: int, data: bytes) -> None:
    raises_protocol_error(lambda: message.decode(version, data))
    raises_protocol_error(lambda: message.decode(version, memoryview(data)))
    raises_protocol_error(lambda: parse_uncompiled(message, version, data))


TOPIC = uuid.UUID("0123456789abcdef0123456789abcdef")

SAMPLES: list[tuple[str, Message, int, dict[str, Any]]] = [
    ("heartbeat-v4", HeartbeatRequest, 4,
     {"group_id": "g", "generation_id": 3, "member_id": "m-1", "group_instance_id": "i"}),
    ("joingroup-v9", JoinGroupRequest, 9,
     {"group_id": "grp", "session_timeout_ms": 10, "member_id": "m", "protocol_type": "consumer",
      "protocols": [{"name": "range", "metadata": b"\x00\x01"}, {"name": "rr", "metadata": b""}],
      "reason": "why"}),
    ("joingroup-v5", JoinGroupRequest, 5,
     {"group_id": "grp", "session_timeout_ms": 10, "member_id": "m", "protocol_type": "consumer",
      "protocols": [{"name": "range", "metadata": b"\x00\x01"}]}),
    ("offsetcommit-v2", OffsetCommitRequest, 2,
     {"group_id": "g", "generation_id_or_member_epoch": 1, "member_id": "m",
      "topics": [{"name": "t", "partitions": [{"partition_index": 0, "committed_offset": 5,
                                               "committed_metadata": None}]}]}),
    ("metadata-v12", MetadataResponse, 12,
     {"brokers": [{"node_id": 1, "host": "h", "port": 9092, "rack": None}], "cluster_id": "c",
      "controller_id": 1,
      "topics": [{"error_code": 0, "name": "t", "topic_id": TOPIC, "is_internal": False,
                  "partitions": [{"partition_index": 0, "leader_id": 1, "replica_nodes": [1],
                                  "isr_nodes": [1], "offline_replicas": []}]}]}),
    ("fetch-response-v16", FetchResponse, 16,
     {"responses": [{"topic_id": TOPIC, "partitions": [
         {"partition_index": 0, "high_watermark": 10, "records": b"\x01" * 30,
          "diverging_epoch": {"epoch": 2, "end_offset": 7},
          "aborted_transactions": [{"producer_id": 1, "first_offset": 2}]}]}],
      "node_endpoints": [{"node_id": 1, "host": "h", "port": 1, "rack": None}]}),
    ("apiversions-v3", ApiVersionsResponse, 3,
     {"api_keys": [{"api_key": 18, "min_version": 0, "max_version": 4}], "finalized_features_epoch": 5,
      "zk_migration_ready": True,
      "supported_features": [{"name": "f", "min_version": 1, "max_version": 2}]}),
    ("cgheartbeat-response-v0", ConsumerGroupHeartbeatResponse, 0,
     {"member_id": "m", "member_epoch": 1, "heartbeat_interval_ms": 5,
      "assignment": {"topic_partitions": [{"topic_id": TOPIC, "partitions": [0, 1]}]}}),
]


@pytest.mark.parametrize(("name", "message", "version", "body"), SAMPLES, ids=[s[0] for s in SAMPLES])
def test_truncated_at_every_position(name: str, message: Message, version: int, body: dict[str, Any]) -> None:
    data = message.encode(version, body)
    assert message.decode(version, data) == parse_uncompiled(message, version, data)
    for end in range(len(data)):
        both_paths_fail(message, version, data[:end])


@pytest.mark.parametrize(("name", "message", "version", "body"), SAMPLES[:6], ids=[s[0] for s in SAMPLES[:6]])
def test_truncated_frames(name: str, message: Message, version: int, body: dict[str, Any]) -> None:
    key = message.api_key
    assert key is not None
    if message.name.endswith("Request"):
        frame = kapi.encode_request(key, version, 7, "client", body)[4:]
        header = kapi.decode_request_header(frame)
        assert kapi.decode_request_body(header, frame) == message.decode(version, frame, header.body_offset)
        for end in range(len(frame)):
            def parse(cut: bytes = frame[:end]) -> None:
                kapi.decode_request_body(kapi.decode_request_header(cut), cut)
            raises_protocol_error(parse)
    else:
        frame = kapi.encode_response(key, version, 7, body)[4:]
        assert kapi.decode_response(key, version, frame)[0] == 7
        for end in range(len(frame)):
            raises_protocol_error(lambda cut=frame[:end]: kapi.decode_response(key, version, cut))


def test_short_request_header() -> None:
    for end in range(8):
        raises_protocol_error(lambda end=end: kapi.decode_request_header(b"\x00\x12\x00\x03\x00\x00\x00\x01"[:end]))
    raises_protocol_error(lambda: kapi.response_correlation_id(b"\x00\x00"))


def test_unknown_api_key_and_version_are_unsupported() -> None:
    frame = i16(999) + i16(0) + i32(42) + i16(1) + b"c"
    header = kapi.decode_request_header(frame)
    assert (header.api_key, header.correlation_id, header.client_id) == (999, 42, "c")
    with pytest.raises(UnsupportedVersionError) as info:
        kapi.decode_request_body(header, frame)
    assert (info.value.api_key, info.value.api_version) == (999, 0)

    frame = i16(12) + i16(99) + i32(43) + i16(-1) + b"\x00"
    header = kapi.decode_request_header(frame)
    assert header.correlation_id == 43 and header.client_id is None
    with pytest.raises(UnsupportedVersionError):
        kapi.decode_request_body(header, frame)


# ---------------------------------------------------------------------------
# lengths


@pytest.mark.parametrize("length", [-1, -2, -32768])
def test_negative_string_length(length: int) -> None:
    both_paths_fail(SaslHandshakeRequest, 0, i16(length) + b"PLAIN")


@pytest.mark.parametrize("length", [-2, -100])
def test_negative_nullable_string_length(length: int) -> None:
    header = i16(18) + i16(0) + i32(1) + i16(length) + b"xx"
    both_paths_fail(RequestHeader, 1, header)
    assert RequestHeader.decode(1, header[:8] + i16(-1)).client_id is None


@pytest.mark.parametrize("length", [-1, -2, -(2**31)])
def test_negative_bytes_length(length: int) -> None:
    both_paths_fail(SaslAuthenticateRequest, 0, i32(length) + b"\x00" * 8)


@pytest.mark.parametrize("count", [-1, -2, -(2**31)])
def test_negative_array_count(count: int) -> None:
    both_paths_fail(DeleteGroupsRequest, 0, i32(count) + i16(1) + b"g")


def test_null_array_only_where_nullable() -> None:
    assert MetadataRequest.decode(1, i32(-1)).topics is None
    both_paths_fail(MetadataRequest, 0, i32(-1))
    data = MetadataRequest.encode(9, {"topics": None})
    assert data[0] == 0
    assert MetadataRequest.decode(9, data).topics is None


def test_compact_null_in_non_nullable_fields() -> None:
    both_paths_fail(SaslAuthenticateRequest, 2, b"\x00\x00")
    both_paths_fail(HeartbeatRequest, 4, b"\x00" + i32(1) + cstr("m") + b"\x00\x00")
    both_paths_fail(DeleteGroupsRequest, 2, b"\x00\x00")


@pytest.mark.parametrize(("message", "version", "data"), [
    (SaslHandshakeRequest, 0, i16(100) + b"PLAIN"),
    (SaslHandshakeRequest, 0, i16(32767)),
    (SaslAuthenticateRequest, 0, i32(2**31 - 1) + b"abc"),
    (SaslAuthenticateRequest, 2, uvarint(2**32 - 1) + b"abc\x00"),
    (HeartbeatRequest, 4, uvarint(2**31) + b"g"),
    (DeleteGroupsRequest, 0, i32(1) + i16(10) + b"abc"),
    (HeartbeatRequest, 4, cstr("g") + i32(1) + cstr("m") + b"\x00" + b"\x01" + b"\x05" + b"\x10" + b"ab"),
], ids=["string", "string-max", "bytes", "compact-bytes", "compact-string", "array-element", "tagged-size"])
def test_length_beyond_buffer(message: Message, version: int, data: bytes) -> None:
    both_paths_fail(message, version, data)


# ---------------------------------------------------------------------------
# UTF-8


@pytest.mark.parametrize("raw", [b"\xff", b"\xc3", b"\xc0\x80", b"\xed\xa0\x80", b"ok\x80", b"\xf8\x88\x80\x80\x80"])
def test_invalid_utf8(raw: bytes) -> None:
    both_paths_fail(SaslHandshakeRequest, 0, i16(len(raw)) + raw)
    both_paths_fail(HeartbeatRequest, 4, uvarint(len(raw) + 1) + raw + i32(1) + cstr("m") + b"\x00\x00")


def test_valid_utf8_multibyte() -> None:
    text = "grüße-☃-😀"
    data = SaslHandshakeRequest.encode(0, {"mechanism": text})
    assert data[:2] == i16(len(text.encode()))
    assert SaslHandshakeRequest.decode(0, data).mechanism == text


# ---------------------------------------------------------------------------
# tagged fields


HEARTBEAT_V4_PREFIX = cstr("g") + i32(1) + cstr("m") + b"\x00"


def tagged(*entries: tuple[int, bytes]) -> bytes:
    return uvarint(len(entries)) + b"".join(uvarint(tag) + uvarint(len(data)) + data for tag, data in entries)


@pytest.mark.parametrize("entries", [
    [(5, b""), (3, b"")],
    [(3, b""), (3, b"")],
    [(0, b"a"), (2, b""), (1, b"b")],
], ids=["descending", "duplicate", "late-descending"])
def test_out_of_order_or_duplicate_tags(entries: list[tuple[int, bytes]]) -> None:
    both_paths_fail(HeartbeatRequest, 4, HEARTBEAT_V4_PREFIX + tagged(*entries))


def test_unknown_tags_are_skipped() -> None:
    data = HEARTBEAT_V4_PREFIX + tagged((1, b"abc"), (7, b""), (100_000, b"\xff" * 200))
    expected = {"group_id": "g", "generation_id": 1, "member_id": "m", "group_instance_id": None}
    assert HeartbeatRequest.decode(4, data) == expected
    assert parse_uncompiled(HeartbeatRequest, 4, data) == expected


def test_unknown_tags_around_known_tags() -> None:
    base = FetchRequest.encode(12, {"topics": []})
    assert base.endswith(b"\x00")
    data = base[:-1] + tagged((0, cstr("cluster")), (5, b"zz"), (200, b""))
    decoded = FetchRequest.decode(12, data)
    assert decoded.cluster_id == "cluster"
    assert decoded == parse_uncompiled(FetchRequest, 12, data)
    assert FetchRequest.encode(12, decoded) == base[:-1] + tagged((0, cstr("cluster")))


def test_unknown_tags_in_nested_struct() -> None:
    body = {"responses": [{"topic_id": TOPIC, "partitions": [{"partition_index": 3, "records": None}]}]}
    clean = FetchResponse.encode(16, body)
    plain = FetchResponse.decode(16, clean)
    partition_end = clean.rindex(b"\x00\x00\x00")
    mutated = clean[:partition_end] + tagged((9, b"\x01\x02")) + clean[partition_end + 1 :]
    assert FetchResponse.decode(16, mutated) == plain
    assert parse_uncompiled(FetchResponse, 16, mutated) == plain


def test_known_tag_with_garbage_payload() -> None:
    base = FetchRequest.encode(12, {"topics": []})
    both_paths_fail(FetchRequest, 12, base[:-1] + tagged((0, b"\xff\xff\xff\xff\xff\xff")))


# ---------------------------------------------------------------------------
# varints


@pytest.mark.parametrize("varint", [
    b"\x80\x80\x80\x80\x80\x01",
    b"\xff\xff\xff\xff\xff\x7f",
    b"\x80\x80\x80\x80\x80\x80\x80\x80\x80\x80\x01",
])
def test_varint_longer_than_five_bytes(varint: bytes) -> None:
    both_paths_fail(HeartbeatRequest, 4, varint + b"g" * 20)
    both_paths_fail(DeleteGroupsRequest, 2, varint + b"\x00" * 20)
    both_paths_fail(HeartbeatRequest, 4, HEARTBEAT_V4_PREFIX + varint)
    both_paths_fail(HeartbeatRequest, 4, HEARTBEAT_V4_PREFIX + b"\x01" + varint + b"\x00")


def test_five_byte_varint_is_accepted() -> None:
    data = b"\x82\x80\x80\x80\x00" + b"g" + i32(1) + cstr("m") + b"\x00\x00"
    assert HeartbeatRequest.decode(4, data).group_id == "g"
    assert parse_uncompiled(HeartbeatRequest, 4, data).group_id == "g"


def test_truncated_varint() -> None:
    both_paths_fail(HeartbeatRequest, 4, b"\x80\x80")


# ---------------------------------------------------------------------------
# absurd array counts


ABSURD: list[tuple[str, Message, int, bytes]] = [
    ("int32-count-strings", DeleteGroupsRequest, 0, i32(2**31 - 1) + b"\x00\x01g" * 3),
    ("compact-count-strings", DeleteGroupsRequest, 2, b"\xff\xff\xff\xff\x0f" + b"\x02g" * 3),
    ("int32-count-structs", MetadataResponse, 1, i32(2**31 - 1) + b"\x00" * 20),
    ("compact-count-structs", MetadataResponse, 12, i32(0) + b"\xfe\xff\xff\xff\x0f" + b"\x00" * 20),
    ("nested-int32-array", OffsetCommitRequest, 2,
     i16(1) + b"g" + i32(1) + i16(1) + b"m" + struct.pack(">q", -1) + i32(1) + i16(1) + b"t"
     + i32(2**31 - 1) + b"\x00" * 16),
    ("compact-int32-array", ConsumerGroupHeartbeatResponse, 0,
     i32(0) + i16(0) + b"\x00\x00" + i32(1) + i32(1) + b"\x01\x02" + TOPIC.bytes + b"\xff\xff\xff\xff\x0f"),
]


#: Python lines a decoder may execute on one absurd input: about ten times what rejecting one
#: takes today, and far below the one-per-element an input-sized loop over 2**31 would need
ABSURD_WORK_LINES = 2_000


class WorkBudgetExceeded(BaseException):
    """Raised into the traced code; a BaseException, so no ``except Exception`` can swallow it."""


def run_with_work_budget(fn: Callable[[], Any], max_lines: int) -> None:
    """Run ``fn()`` counting the Python lines it executes; past ``max_lines`` it is aborted.

    The work is bounded by a count, not by the machine's speed or load.
    """
    executed = 0

    def tracer(frame: Any, event: str, arg: Any) -> Any:
        nonlocal executed
        if event == "line":
            executed += 1
            if executed > max_lines:
                raise WorkBudgetExceeded(f"more than {max_lines} lines executed")
        return tracer

    previous = sys.gettrace()
    sys.settrace(tracer)
    try:
        fn()
    finally:
        sys.settrace(previous)


def test_work_budget_stops_a_runaway_loop() -> None:
    def runaway() -> None:
        for _ in range(2**31 - 1):
            pass

    with pytest.raises(WorkBudgetExceeded):
        run_with_work_budget(runaway, ABSURD_WORK_LINES)


@pytest.mark.parametrize(("name", "message", "version", "data"), ABSURD, ids=[a[0] for a in ABSURD])
def test_absurd_array_count(name: str, message: Message, version: int, data: bytes) -> None:
    warm = message.encode(version, message.default(version))
    message.decode(version, warm)
    parse_uncompiled(message, version, warm)
    for decode in (lambda: message.decode(version, data), lambda: parse_uncompiled(message, version, data)):
        tracemalloc.start()
        try:
            run_with_work_budget(lambda d=decode: raises_protocol_error(d), ABSURD_WORK_LINES)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert peak < 32 * 1024, f"peak allocation {peak} bytes"


def test_absurd_bytes_length_does_not_allocate() -> None:
    data = i32(2**31 - 1) + b"x" * 10
    SaslAuthenticateRequest.decode(0, i32(0))
    parse_uncompiled(SaslAuthenticateRequest, 0, i32(0))
    tracemalloc.start()
    try:
        raises_protocol_error(lambda: SaslAuthenticateRequest.decode(0, data))
        raises_protocol_error(lambda: parse_uncompiled(SaslAuthenticateRequest, 0, data))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 32 * 1024


# ---------------------------------------------------------------------------
# other decoder edge cases


def test_bool_nonzero_reads_true() -> None:
    body = {"protocol_name": "p", "leader": "l", "skip_assignment": True, "member_id": "m", "members": []}
    data = bytearray(JoinGroupResponse.encode(9, body))
    assert JoinGroupResponse.decode(9, bytes(data)).skip_assignment is True
    index = data.index(b"\x01", 4 + 2 + 4 + 1 + 2 + 2)
    data[index] = 0x7F
    assert JoinGroupResponse.decode(9, bytes(data)).skip_assignment is True
    assert parse_uncompiled(JoinGroupResponse, 9, bytes(data)).skip_assignment is True


def test_nullable_struct_marker() -> None:
    body = {"member_epoch": 1, "heartbeat_interval_ms": 2, "assignment": None}
    data = ConsumerGroupHeartbeatResponse.encode(0, body)
    assert ConsumerGroupHeartbeatResponse.decode(0, data).assignment is None
    assert parse_uncompiled(ConsumerGroupHeartbeatResponse, 0, data).assignment is None


def test_decode_from_reports_end_and_ignores_trailing_bytes() -> None:
    data = HeartbeatRequest.encode(4, {"group_id": "g", "member_id": "m"})
    obj, end = HeartbeatRequest.decode_from(4, data + b"trailing")
    assert end == len(data)
    assert obj.group_id == "g"


def test_decode_unknown_version() -> None:
    raises_protocol_error(lambda: HeartbeatRequest.decode(99, b"\x00" * 20))
    raises_protocol_error(lambda: HeartbeatRequest.encode(-1, {}))


# ---------------------------------------------------------------------------
# encoder errors


@pytest.mark.parametrize(("message", "version", "body"), [
    (HeartbeatRequest, 3, {"generation_id": 2**31}),
    (HeartbeatRequest, 3, {"generation_id": "1"}),
    (HeartbeatRequest, 3, {"group_id": None}),
    (HeartbeatRequest, 4, {"group_id": None}),
    (HeartbeatRequest, 3, {"group_id": 5}),
    (SaslHandshakeRequest, 0, {"mechanism": "x" * 40000}),
    (SaslAuthenticateRequest, 0, {"auth_bytes": None}),
    (SaslAuthenticateRequest, 2, {"auth_bytes": None}),
    (DeleteGroupsRequest, 0, {"groups_names": None}),
    (DeleteGroupsRequest, 2, {"groups_names": None}),
    (FetchRequest, 13, {"topics": [{"topic_id": "not-a-uuid"}]}),
    (HeartbeatRequest, 3, {"group_id": "\ud800"}),
    (HeartbeatRequest, 4, {"member_id": "lone \udfff surrogate"}),
], ids=["int-range", "int-type", "null-string", "null-cstring", "string-type", "string-too-long", "null-bytes",
        "null-cbytes", "null-array", "null-carray", "uuid-type", "surrogate", "surrogate-compact"])
def test_encode_errors_are_protocol_errors(message: Message, version: int, body: dict[str, Any]) -> None:
    raises_protocol_error(lambda: message.encode(version, body))


def test_uncompiled_build_matches_compiled_for_partial_objects() -> None:
    body = Obj(group_id="g", member_id="m")
    assert build_uncompiled(HeartbeatRequest, 4, body) == HeartbeatRequest.encode(4, body)


# ---------------------------------------------------------------------------
# FrameDecoder


def frame(payload: bytes) -> bytes:
    return i32(len(payload)) + payload


@pytest.mark.parametrize("size", [-1, -(2**31)])
def test_frame_negative_size(size: int) -> None:
    decoder = FrameDecoder()
    raises_protocol_error(lambda: decoder.feed(i32(size)))


def test_frame_oversized() -> None:
    decoder = FrameDecoder(max_frame_bytes=1024)
    assert decoder.feed(frame(b"x" * 1024)) == [b"x" * 1024]
    raises_protocol_error(lambda: decoder.feed(i32(1025)))
    raises_protocol_error(lambda: FrameDecoder().feed(i32(2**31 - 1)))


def test_frame_oversized_detected_after_good_frames() -> None:
    decoder = FrameDecoder(max_frame_bytes=16)
    assert decoder.feed(frame(b"ok") + i32(17) + b"x") == [b"ok"]
    assert decoder.error is not None
    raises_protocol_error(lambda: decoder.feed(frame(b"more")))


def test_partial_frames_are_buffered() -> None:
    payloads = [b"", b"a", b"hello world", bytes(range(256))]
    stream = b"".join(frame(p) for p in payloads)
    decoder = FrameDecoder()
    got: list[bytes] = []
    for i in range(len(stream)):
        got += decoder.feed(stream[i : i + 1])
        assert decoder.buffered <= 4 + 256
    assert got == payloads
    assert decoder.buffered == 0


def test_frames_split_across_chunks() -> None:
    payloads = [b"one", b"two" * 50, b"three"]
    stream = b"".join(frame(p) for p in payloads)
    decoder = FrameDecoder()
    assert decoder.feed(stream[:2]) == []
    assert decoder.buffered == 2
    assert decoder.feed(stream[2:9]) == [b"one"]
    assert decoder.feed(stream[9:]) == payloads[1:]
    assert decoder.feed(b"") == []


def test_frame_hostile_size_does_not_allocate() -> None:
    decoder = FrameDecoder()
    tracemalloc.start()
    try:
        assert decoder.feed(i32(100 * 1024 * 1024) + b"abc") == []
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert decoder.buffered == 7
    assert peak < 64 * 1024


def test_frames_roundtrip_through_api() -> None:
    request = kapi.encode_request(12, 4, 11, "cid", {"group_id": "g", "member_id": "m"})
    response = kapi.encode_response(12, 4, 11, {"error_code": 27})
    decoder = FrameDecoder()
    frames = decoder.feed(request + response[:5])
    assert len(frames) == 1
    header = kapi.decode_request_header(frames[0])
    assert kapi.decode_request_body(header, frames[0]).group_id == "g"
    (rest,) = decoder.feed(response[5:])
    assert kapi.decode_response(12, 4, rest) == (11, {"throttle_time_ms": 0, "error_code": 27})
