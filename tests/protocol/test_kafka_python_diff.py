"""Differential tests against kafka-python's independent codec (``kafka.protocol``, 3.x).

kafka-python 3 builds its messages from Kafka's JSON specs too, but with its own
encoder and decoder, so byte-for-byte agreement in both directions is a strong
check.  Fields are paired by position among the fields present in a version,
never by name (kafka-python renames a few, e.g. ``authorized_operations``).

Known differences in value representation that the mapping normalises:

* kafka-python decodes the all-zero UUID as ``None``; we keep ``ZERO_UUID``.
* kafka-python patches the ``*_authorized_operations`` int32 fields to a set of bits.
* kafka-python's default for a tagged struct is ``None``; ours is the default struct
  (both omit it on the wire).
* kafka-python decodes an ApiVersions response with a non-zero error code as v0 at any
  version (the KIP-511 fallback), so those examples use error code 0.
"""

from __future__ import annotations

import importlib
import io
import struct
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import message_strategy

from protocol import api as kapi
from protocol.primitives import ZERO_UUID, Obj
from protocol.schema import Field, Message, in_range
from protocol.schemas import misc

kafka_protocol = pytest.importorskip("kafka.protocol.api_message")
from kafka.protocol.api_data import ApiData  # noqa: E402
from kafka.protocol.api_header import RequestHeader as TheirRequestHeader  # noqa: E402
from kafka.protocol.api_header import ResponseHeader as TheirResponseHeader  # noqa: E402
from kafka.protocol.api_message import ApiMessage  # noqa: E402
from kafka.protocol.schemas.fields.codecs.types import BitField  # noqa: E402

for _module in ("admin", "consumer", "metadata", "producer", "sasl"):
    importlib.import_module(f"kafka.protocol.{_module}")
from kafka.protocol.consumer.metadata import (  # noqa: E402
    ConsumerProtocolAssignment as TheirAssignment,
)
from kafka.protocol.consumer.metadata import (  # noqa: E402
    ConsumerProtocolSubscription as TheirSubscription,
)

SETTINGS = settings(
    max_examples=6,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def _subclasses(cls: type) -> Iterator[type]:
    for sub in cls.__subclasses__():
        yield sub
        yield from _subclasses(sub)


def _their_messages() -> dict[tuple[int, str], type]:
    found: dict[tuple[int, str], type] = {}
    for cls in _subclasses(ApiMessage):
        if getattr(cls, "_class_version", None) is None and "_json" in cls.__dict__:
            found[(cls.API_KEY, cls.type)] = cls
    return found


THEIRS = _their_messages()


def _shared_cases() -> Iterator[tuple[str, Message, type, int]]:
    for key, api_ in sorted(kapi.APIS.items()):
        for kind, message in (("request", api_.request), ("response", api_.response)):
            cls = THEIRS.get((key, kind))
            if cls is None:
                continue
            lo, hi = cls._valid_versions
            for version in range(max(lo, message.min_version), min(hi, message.max_version) + 1):
                yield f"{message.name}-v{version}", message, cls, version
    for message, cls in ((misc.ConsumerProtocolSubscription, TheirSubscription),
                         (misc.ConsumerProtocolAssignment, TheirAssignment)):
        lo, hi = cls._valid_versions
        for version in range(max(lo, message.min_version), min(hi, message.max_version) + 1):
            yield f"{message.name}-v{version}", message, cls, version


CASES = list(_shared_cases())
IDS = [case[0] for case in CASES]


# ---------------------------------------------------------------------------
# positional field mapping


def _kind(theirs: Any) -> str:
    if theirs.is_struct_array():
        return "[]struct"
    if theirs.is_struct():
        return "struct"
    return {"bitfield": "int32"}.get(theirs.type_str, theirs._type_str)


def _their_fields(theirs: Any) -> tuple[Any, ...]:
    return theirs.array_of._fields if theirs.is_struct_array() else theirs._fields


def _pairs(ours: tuple[Field, ...], theirs: tuple[Any, ...], version: int) -> list[tuple[Field, Any]]:
    mine = [f for f in ours if in_range(f.versions, version)]
    other = [f for f in theirs if f.for_version_q(version)]
    assert len(mine) == len(other), (
        f"v{version}: ours {[f.name for f in mine]} vs kafka-python {[f.name for f in other]}")
    for a, b in zip(mine, other, strict=True):
        assert a.type == _kind(b), (a.name, a.type, b.name, b._type_str)
        tagged = a.tag is not None and in_range(a.tagged, version)
        assert tagged == b.tagged_field_q(version), a.name
        if tagged:
            assert a.tag == b.tag, a.name
    return list(zip(mine, other, strict=True))


def _signed32(value: int) -> int:
    return value - (1 << 32) if value & 0x80000000 else value


def _to_theirs_value(ours: Field, theirs: Any, version: int, value: Any) -> Any:
    if value is None:
        return None
    if ours.tag is not None and in_range(ours.tagged, version) and value == ours.default_for(version):
        return theirs.default
    if theirs.is_struct_array():
        return [_to_theirs_struct(ours.fields, theirs, version, item, theirs.data_class) for item in value]
    if theirs.is_struct():
        return _to_theirs_struct(ours.fields, theirs, version, value, theirs.data_class)
    if theirs.type_str == "bitfield":
        return BitField.from_32_bit_field(value & 0xFFFFFFFF)
    return value


def _to_theirs_struct(ours: tuple[Field, ...], theirs: Any, version: int, value: Any, cls: type) -> Any:
    kwargs = {
        t.name: _to_theirs_value(o, t, version, value[o.name])
        for o, t in _pairs(ours, _their_fields(theirs), version)
    }
    return cls(version=version, **kwargs)


def to_theirs(message: Message, cls: type, version: int, value: Obj) -> Any:
    return _to_theirs_struct(message.fields, cls._struct, version, value, cls)


def _to_ours_value(ours: Field, theirs: Any, version: int, value: Any) -> Any:
    if theirs.is_struct_array():
        if value is None:
            return None
        return [_to_ours_struct(ours.fields, theirs, version, item) for item in value]
    if theirs.is_struct():
        if value is None:
            return None if in_range(ours.nullable, version) else ours.default_for(version)
        return _to_ours_struct(ours.fields, theirs, version, value)
    if theirs.type_str == "bitfield":
        return _signed32(BitField.to_32_bit_field({31} if value is None else value))
    if ours.element == "uuid" and value is None:
        return ZERO_UUID
    if isinstance(value, memoryview):
        return value.tobytes()
    if ours.is_array and ours.element in ("bytes", "records") and value is not None:
        return [bytes(v) for v in value]
    return value


def _to_ours_struct(ours: tuple[Field, ...], theirs: Any, version: int, value: Any) -> Obj:
    result = Obj({f.name: f.default_for(version) for f in ours})
    for o, t in _pairs(ours, _their_fields(theirs), version):
        result[o.name] = _to_ours_value(o, t, version, getattr(value, t.name))
    return result


def to_ours(message: Message, cls: type, version: int, value: Any) -> Obj:
    return _to_ours_struct(message.fields, cls._struct, version, value)


def _their_decode(cls: type, version: int, data: bytes) -> Any:
    if issubclass(cls, ApiData):
        return cls.decode(data, version=version, header=False)
    return cls.decode(data, version=version)


def _their_encode(obj: Any, version: int) -> bytes:
    if isinstance(obj, ApiData):
        return obj.encode(version=version, header=False)
    if not hasattr(obj, "_header"):
        obj._header = None  # kafka-python's compiled decoder leaves the slot unset
    return obj.encode(version=version)


def _draw(data: st.DataObject, message: Message, version: int) -> Obj:
    obj = data.draw(message_strategy(message, version))
    if message.name == "ApiVersionsResponse" and version > 0:
        obj["error_code"] = 0
    return obj


# ---------------------------------------------------------------------------
# tests


def test_coverage_includes_core_apis() -> None:
    covered = {case[1].name for case in CASES}
    for name in ("Produce", "Fetch", "Metadata", "JoinGroup", "SyncGroup", "Heartbeat", "OffsetCommit",
                 "OffsetFetch", "ApiVersions", "FindCoordinator", "LeaveGroup"):
        assert f"{name}Request" in covered and f"{name}Response" in covered, name
    assert "ConsumerProtocolSubscription" in covered


@pytest.mark.parametrize(("case_id", "message", "cls", "version"), CASES, ids=IDS)
def test_field_layout_matches(case_id: str, message: Message, cls: type, version: int) -> None:
    def walk(ours: tuple[Field, ...], theirs: tuple[Any, ...]) -> None:
        for o, t in _pairs(ours, theirs, version):
            if o.element == "struct":
                walk(o.fields, _their_fields(t))

    walk(message.fields, cls._struct._fields)
    assert message.is_flexible(version) == cls.flexible_version_q(version)


@pytest.mark.parametrize(("case_id", "message", "cls", "version"), CASES, ids=IDS)
@SETTINGS
@given(data=st.data())
def test_ours_to_theirs(case_id: str, message: Message, cls: type, version: int, data: st.DataObject) -> None:
    obj = _draw(data, message, version)
    ours = message.encode(version, obj)

    decoded = _their_decode(cls, version, ours)
    assert _their_encode(decoded, version) == ours
    assert to_ours(message, cls, version, decoded) == obj


@pytest.mark.parametrize(("case_id", "message", "cls", "version"), CASES, ids=IDS)
@SETTINGS
@given(data=st.data())
def test_theirs_to_ours(case_id: str, message: Message, cls: type, version: int, data: st.DataObject) -> None:
    obj = _draw(data, message, version)
    theirs = _their_encode(to_theirs(message, cls, version, obj), version)

    decoded = message.decode(version, theirs)
    assert decoded == obj
    assert message.encode(version, decoded) == theirs


FRAME_CASES = [case for case in CASES if issubclass(case[2], ApiMessage)]


@pytest.mark.parametrize(("case_id", "message", "cls", "version"), FRAME_CASES,
                         ids=[case[0] for case in FRAME_CASES])
@settings(SETTINGS, max_examples=2)
@given(data=st.data(), correlation_id=st.integers(-(2**31), 2**31 - 1),
       client_id=st.one_of(st.none(), st.text(st.characters(exclude_categories=("Cs",)), max_size=10)))
def test_frames_with_headers(case_id: str, message: Message, cls: type, version: int, data: st.DataObject,
                             correlation_id: int, client_id: str | None) -> None:
    obj = _draw(data, message, version)
    theirs = to_theirs(message, cls, version, obj)
    if cls.is_request():
        theirs.with_header(correlation_id=correlation_id, client_id=client_id)
        frame = kapi.encode_request(message.api_key, version, correlation_id, client_id, obj)
        assert theirs.encode(header=True, framed=True) == frame
        header = kapi.decode_request_header(frame[4:])
        assert (header.api_key, header.api_version, header.correlation_id, header.client_id) == (
            message.api_key, version, correlation_id, client_id)
        assert kapi.decode_request_body(header, frame[4:]) == obj
    else:
        theirs.with_header(correlation_id=correlation_id)
        frame = kapi.encode_response(message.api_key, version, correlation_id, obj)
        assert theirs.encode(header=True, framed=True) == frame
        back = cls.decode(frame, version=version, header=True, framed=True)
        assert back.header.correlation_id == correlation_id
        assert to_ours(message, cls, version, back) == obj
        assert kapi.decode_response(message.api_key, version, frame[4:]) == (correlation_id, obj)


@pytest.mark.parametrize("flexible", [False, True])
@SETTINGS
@given(api_key=st.integers(0, 2**15 - 1), api_version=st.integers(0, 2**15 - 1),
       correlation_id=st.integers(-(2**31), 2**31 - 1),
       client_id=st.one_of(st.none(), st.text(st.characters(exclude_categories=("Cs",)), max_size=20)))
def test_request_header(flexible: bool, api_key: int, api_version: int, correlation_id: int,
                        client_id: str | None) -> None:
    version = 2 if flexible else 1
    ours = misc.RequestHeader.encode(version, {"request_api_key": api_key, "request_api_version": api_version,
                                               "correlation_id": correlation_id, "client_id": client_id})
    theirs = TheirRequestHeader(request_api_key=api_key, request_api_version=api_version,
                                correlation_id=correlation_id, client_id=client_id).encode(flexible=flexible)
    assert ours == theirs
    back = TheirRequestHeader.decode(io.BytesIO(ours), flexible=flexible)
    assert (back.request_api_key, back.request_api_version, back.correlation_id, back.client_id) == (
        api_key, api_version, correlation_id, client_id)
    assert misc.RequestHeader.decode(version, theirs).client_id == client_id


@pytest.mark.parametrize("flexible", [False, True])
@given(correlation_id=st.integers(-(2**31), 2**31 - 1))
def test_response_header(flexible: bool, correlation_id: int) -> None:
    version = 1 if flexible else 0
    ours = misc.ResponseHeader.encode(version, {"correlation_id": correlation_id})
    assert ours == TheirResponseHeader(correlation_id=correlation_id).encode(flexible=flexible)
    assert TheirResponseHeader.decode(io.BytesIO(ours), flexible=flexible).correlation_id == correlation_id


def test_flexible_request_header_keeps_int16_client_id() -> None:
    header = TheirRequestHeader(request_api_key=18, request_api_version=3, correlation_id=5, client_id="abc")
    frame = kapi.encode_request(18, 3, 5, "abc", {"client_software_name": "x", "client_software_version": "1"})
    assert frame[4:].startswith(header.encode(flexible=True))
    assert frame[4 + 8 : 4 + 10] == struct.pack(">h", 3)


@pytest.mark.parametrize("version", [0, 1, 2, 3, 4])
def test_api_versions_response_header_is_v0(version: int) -> None:
    theirs_cls = THEIRS[(kapi.ApiKey.API_VERSIONS, "response")]
    body = {"error_code": 0, "api_keys": [{"api_key": 18, "min_version": 0, "max_version": 4}]}
    frame = kapi.encode_response(kapi.ApiKey.API_VERSIONS, version, 99, body)
    assert kapi.response_header_version(kapi.ApiKey.API_VERSIONS, version) == 0
    assert frame[4:8] == struct.pack(">i", 99)
    assert frame[8:] == kapi.APIS[kapi.ApiKey.API_VERSIONS].response.encode(version, body)
    theirs = to_theirs(kapi.APIS[18].response, theirs_cls, version,
                       kapi.APIS[18].response.decode(version, frame[8:]))
    theirs.with_header(correlation_id=99)
    assert theirs.encode(header=True, framed=True) == frame


def test_api_versions_error_response_is_read_as_v0_by_kafka_python() -> None:
    theirs_cls = THEIRS[(kapi.ApiKey.API_VERSIONS, "response")]
    body = {"error_code": 35, "api_keys": [{"api_key": 18, "min_version": 0, "max_version": 4}]}
    frame = kapi.encode_response(kapi.ApiKey.API_VERSIONS, 0, 1, body)
    back = theirs_cls.decode(frame, version=3, header=True, framed=True)
    assert back.error_code == 35
    assert [(k.api_key, k.min_version, k.max_version) for k in back.api_keys] == [(18, 0, 4)]
