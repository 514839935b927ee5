"""Property tests: every message at every version round-trips, and the compiled codec matches construct's."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import all_message_versions, message_strategy

from protocol.primitives import ZERO_UUID, Obj
from protocol.schema import Field, Message, build_uncompiled, in_range, parse_uncompiled

CASES = list(all_message_versions())
_NOT_ENCODABLE = object()
IDS = [case[0] for case in CASES]

FAST = settings(
    max_examples=15,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def _strip_absent(fields: tuple[Field, ...], version: int, value: Any) -> Any:
    """Only the fields present in ``version`` (recursively): what the wire can carry."""
    if value is None:
        return None
    return {
        f.name: _strip_value(f, version, value[f.name])
        for f in fields
        if in_range(f.versions, version)
    }


def _strip_value(f: Field, version: int, value: Any) -> Any:
    if f.element != "struct" or value is None:
        return value
    if f.is_array:
        return [_strip_absent(f.fields, version, item) for item in value]
    return _strip_absent(f.fields, version, value)


def test_cases_cover_every_api_version() -> None:
    from protocol.api import APIS

    expected = sum(
        m.max_version - m.min_version + 1 for api in APIS.values() for m in (api.request, api.response)
    )
    assert sum(1 for case in CASES if not case[0].startswith("misc-")) == expected
    assert {case[1].name for case in CASES if case[0].startswith("misc-")} == {
        "RequestHeader", "ResponseHeader", "ConsumerProtocolSubscription", "ConsumerProtocolAssignment",
        "OffsetCommitKey", "OffsetCommitValue", "GroupMetadataKey", "GroupMetadataValue",
        "ConsumerGroupMetadataKey", "ConsumerGroupMetadataValue", "ConsumerGroupMemberMetadataKey",
        "ConsumerGroupMemberMetadataValue", "ConsumerGroupTargetAssignmentMetadataKey",
        "ConsumerGroupTargetAssignmentMetadataValue", "ConsumerGroupTargetAssignmentMemberKey",
        "ConsumerGroupTargetAssignmentMemberValue", "ConsumerGroupCurrentMemberAssignmentKey",
        "ConsumerGroupCurrentMemberAssignmentValue", "ConsumerGroupPartitionMetadataKey",
        "ConsumerGroupPartitionMetadataValue", "ConsumerGroupRegularExpressionKey",
        "ConsumerGroupRegularExpressionValue", "TransactionLogKey", "TransactionLogValue",
        "ShareGroupMemberMetadataKey", "ShareGroupMemberMetadataValue", "ShareGroupMetadataKey",
        "ShareGroupMetadataValue", "ShareGroupTargetAssignmentMetadataKey", "ShareGroupTargetAssignmentMetadataValue",
        "ShareGroupTargetAssignmentMemberKey", "ShareGroupTargetAssignmentMemberValue",
        "ShareGroupCurrentMemberAssignmentKey", "ShareGroupCurrentMemberAssignmentValue",
        "ShareGroupStatePartitionMetadataKey", "ShareGroupStatePartitionMetadataValue", "ShareSnapshotKey",
        "ShareSnapshotValue", "ShareUpdateKey", "ShareUpdateValue",
    }


@pytest.mark.parametrize(("case_id", "message", "version"), CASES, ids=IDS)
@FAST
@given(data=st.data())
def test_roundtrip(case_id: str, message: Message, version: int, data: st.DataObject) -> None:
    obj = data.draw(message_strategy(message, version))
    encoded = message.encode(version, obj)

    decoded = message.decode(version, encoded)
    assert decoded == obj
    assert isinstance(decoded, Obj)
    assert message.encode(version, decoded) == encoded

    decoded_mv, end = message.decode_from(version, memoryview(b"\x07" + encoded + b"\x09"), 1)
    assert end == len(encoded) + 1
    assert decoded_mv == obj

    assert build_uncompiled(message, version, obj) == encoded
    assert parse_uncompiled(message, version, encoded) == obj

    noisy = Obj(obj)
    for f in message.fields:
        if not in_range(f.versions, version):
            noisy[f.name] = _NOT_ENCODABLE
    assert message.encode(version, noisy) == encoded
    assert build_uncompiled(message, version, noisy) == encoded


@pytest.mark.parametrize(("case_id", "message", "version"), CASES, ids=IDS)
def test_empty_object_encodes_as_defaults(case_id: str, message: Message, version: int) -> None:
    default = message.default(version)
    encoded = message.encode(version, default)
    assert message.encode(version, {}) == encoded
    assert build_uncompiled(message, version, {}) == encoded
    decoded = message.decode(version, encoded)
    assert _strip_absent(message.fields, version, decoded) == _strip_absent(message.fields, version, default)
    assert decoded == parse_uncompiled(message, version, encoded)


@pytest.mark.parametrize(("case_id", "message", "version"), CASES, ids=IDS)
def test_absent_fields_decode_as_defaults(case_id: str, message: Message, version: int) -> None:
    decoded = message.decode(version, message.encode(version, message.default(version)))
    for f in message.fields:
        if not in_range(f.versions, version):
            assert decoded[f.name] == f.default_for(version), f.name
    assert set(decoded) == {f.name for f in message.fields}


def test_uuid_fields_accept_bytes_and_none() -> None:
    from protocol.schemas.fetch import FetchRequest

    topic_id = uuid.uuid4()
    base = {"topics": [{"topic_id": topic_id, "partitions": []}]}
    encoded = FetchRequest.encode(16, base)
    assert FetchRequest.encode(16, {"topics": [{"topic_id": topic_id.bytes, "partitions": []}]}) == encoded
    assert FetchRequest.decode(16, encoded).topics[0].topic_id == topic_id
    zero = FetchRequest.encode(16, {"topics": [{"topic_id": None, "partitions": []}]})
    assert FetchRequest.decode(16, zero).topics[0].topic_id == ZERO_UUID
