"""Strict encoding, on for the whole suite (``tests/conftest.py``): a key no version of the message
has a field for fails the encode, naming the message, the key and the closest field; a field of
another version is left out as in production; off, the encoder drops unknown keys as it always has."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator

import pytest

from protocol import schema
from protocol.api import encode_request, encode_response
from protocol.errors import UnknownFieldError
from protocol.schemas.find_coordinator import FindCoordinatorRequest, FindCoordinatorResponse
from protocol.schemas.heartbeat import HeartbeatRequest


@pytest.fixture
def strict_off() -> Iterator[None]:
    schema.set_strict(False)
    try:
        yield
    finally:
        schema.set_strict(True)


@pytest.fixture
def refusals_expected(monkeypatch: pytest.MonkeyPatch) -> None:
    """This test's refusals are the point: not written to the suite's strict log."""
    monkeypatch.delenv(schema.STRICT_LOG_ENV, raising=False)


def test_the_suite_runs_strict() -> None:
    assert schema.strict()
    assert os.environ[schema.STRICT_ENV] == "1"  # inherited by the brokers tests start as processes


def test_a_misspelled_key_names_the_message_the_key_and_the_closest_field(refusals_expected: None) -> None:
    with pytest.raises(UnknownFieldError) as info:
        HeartbeatRequest.encode(4, {"group_id": "g", "generation_id": 1, "memberid": "m"})
    text = str(info.value)
    assert "HeartbeatRequest v4" in text and "'memberid'" in text and "closest known field: 'member_id'" in text


def test_nested_structs_are_checked_in_every_element(refusals_expected: None) -> None:
    body = {"topics": [{"name": "t", "partitions": [{"partition_index": 0, "leader_id": 1},
                                                    {"partition_index": 1, "leader": 1}]}]}
    with pytest.raises(UnknownFieldError, match=r"MetadataResponse\.topics\[0\]\.partitions\[1\] has no field "
                                                r"'leader'.*closest known field: 'leader_id'"):
        encode_response(3, 12, 7, body)


def test_structs_are_checked_where_the_version_carries_them(refusals_expected: None) -> None:
    body = {"error_code": 0, "coordinators": [{"key": "g", "nodeid": 1}]}
    with pytest.raises(UnknownFieldError, match=r"coordinators\[0\] has no field 'nodeid'"):
        FindCoordinatorResponse.encode(4, body)
    FindCoordinatorResponse.encode(3, body)  # v3 has no coordinators: neither the encoder nor the check looks


def test_a_non_dict_struct_is_refused(refusals_expected: None) -> None:
    with pytest.raises(UnknownFieldError, match=r"topics\[0\] is a tuple, not a dict"):
        encode_response(3, 12, 7, {"topics": [("t", [])]})


def test_fields_of_other_versions_are_left_out() -> None:
    # one dict for every version: ``key`` exists below v4, ``coordinator_keys`` from v4
    both = {"key": "g", "key_type": 0, "coordinator_keys": ["g"]}
    assert FindCoordinatorRequest.encode(3, both) == FindCoordinatorRequest.encode(3, {"key": "g"})
    assert FindCoordinatorRequest.encode(4, both) == FindCoordinatorRequest.encode(4, {"coordinator_keys": ["g"]})
    assert encode_request(12, 2, 1, "c", {"group_id": "g", "group_instance_id": "i"}) == \
        encode_request(12, 2, 1, "c", {"group_id": "g"})


def test_a_decoded_message_encodes_again_at_any_version() -> None:
    decoded = HeartbeatRequest.decode(4, HeartbeatRequest.encode(4, {"group_id": "g", "group_instance_id": "i"}))
    assert HeartbeatRequest.decode(0, HeartbeatRequest.encode(0, decoded)).group_id == "g"


def test_off_unknown_keys_are_dropped_as_in_production(strict_off: None) -> None:
    assert HeartbeatRequest.encode(4, {"group_id": "g", "memberid": "m"}) == HeartbeatRequest.encode(4, {"group_id": "g"})


def test_strict_from_the_environment_at_import() -> None:
    code = ("from protocol.schemas.heartbeat import HeartbeatRequest\n"
            "from protocol.errors import UnknownFieldError\n"
            "try:\n    HeartbeatRequest.encode(0, {'grup_id': 'g'})\nexcept UnknownFieldError:\n    print('refused')\n"
            "else:\n    print('sent')\n")
    for value, expected in (("1", "refused"), ("0", "sent"), ("", "sent")):
        env = {**os.environ, schema.STRICT_ENV: value}
        env.pop(schema.STRICT_LOG_ENV, None)
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
        assert out.stdout.strip() == expected, out.stderr


def test_off_the_encoder_is_the_compiled_function_itself(strict_off: None) -> None:
    # production pays nothing for strict encoding: no wrapper, no check, no flag tested per message
    HeartbeatRequest.encode(4, {"group_id": "g"})
    assert HeartbeatRequest._builders[4].__name__.startswith("bstruct_")
    schema.set_strict(True)
    HeartbeatRequest.encode(4, {"group_id": "g"})
    assert HeartbeatRequest._builders[4].__name__ == "strict_build"
