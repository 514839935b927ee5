"""Tests for client.partitioner: Java murmur2 vectors, kafka-python parity, KIP-480 stickiness."""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.partitioner.default import DefaultPartitioner as KPDefaultPartitioner
from kafka.partitioner.default import murmur2 as kp_murmur2
from peers import compiled_codec

from client.partitioner import DefaultPartitioner, murmur2, partition_for_key, py_murmur2, to_positive


def _compiled_murmur2() -> Any:
    """The compiled murmur2 (skips, and fails under CI=true, when the record codec is not built)."""
    return compiled_codec().murmur2


@pytest.fixture(params=["python", "compiled"])
def hash_fn(request: pytest.FixtureRequest) -> Any:
    """Each implementation of murmur2: the pure-Python one and the compiled one."""
    return py_murmur2 if request.param == "python" else _compiled_murmur2()


JAVA_VECTORS = {
    b"21": -973932308,
    b"foobar": -790332482,
    b"a-little-bit-long-string": -985981536,
    b"a-little-bit-longer-string": -1486304829,
    b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
    b"abc": 479470107,
}


@pytest.mark.parametrize("data,expected", JAVA_VECTORS.items())
def test_murmur2_matches_kafka_utils_test(hash_fn: Any, data: bytes, expected: int) -> None:
    assert hash_fn(data) == expected


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=64))
def test_murmur2_matches_kafka_python(hash_fn: Any, data: bytes) -> None:
    assert hash_fn(data) & 0xFFFFFFFF == kp_murmur2(data)
    assert -(2**31) <= hash_fn(data) < 2**31


@settings(max_examples=300)
@given(st.binary(max_size=200))
def test_compiled_murmur2_is_its_pure_python_twin(data: bytes) -> None:
    compiled = _compiled_murmur2()
    assert compiled(data) == py_murmur2(data)
    assert compiled(bytearray(data)) == compiled(memoryview(data)) == compiled(data)


def test_the_partitioner_uses_the_compiled_hash_when_built() -> None:
    try:
        from protocol._crecords import murmur2 as compiled
    except ImportError:
        assert murmur2 is py_murmur2
    else:
        assert murmur2 is compiled


def test_to_positive_is_sign_bit_mask_not_abs() -> None:
    assert to_positive(-1) == 0x7FFFFFFF
    assert to_positive(-(2**31)) == 0
    assert to_positive(5) == 5


class _KPCluster:
    def __init__(self, n: int) -> None:
        self.n = n

    def topics(self) -> set[str]:
        return {"t"}

    def partitions_for_topic(self, topic: str) -> set[int]:
        return set(range(self.n))

    def available_partitions_for_topic(self, topic: str) -> set[int]:
        return set(range(self.n))


@given(key=st.binary(max_size=40), n=st.integers(1, 200))
def test_same_partition_as_kafka_python(key: bytes, n: int) -> None:
    expected = KPDefaultPartitioner().partition("t", None, key, None, None, _KPCluster(n))
    assert DefaultPartitioner().partition("t", key, n) == expected
    assert partition_for_key(key, n) == expected


def test_keyed_records_ignore_availability() -> None:
    p = DefaultPartitioner()
    assert p.partition("t", b"21", 7, available=[0]) == to_positive(-973932308) % 7


def test_sticky_until_new_batch_then_different_available_partition() -> None:
    p = DefaultPartitioner(random.Random(1))
    first = p.partition("t", None, 6, available=[1, 3, 5])
    assert first in (1, 3, 5)
    assert all(p.partition("t", None, 6, available=[1, 3, 5]) == first for _ in range(20))
    seen = {first}
    current = first
    for _ in range(50):
        nxt = p.on_new_batch("t", current, 6, available=[1, 3, 5])
        assert nxt != current and nxt in (1, 3, 5)
        assert p.partition("t", None, 6) == nxt
        seen.add(nxt)
        current = nxt
    assert seen == {1, 3, 5}
    assert p.partition("other", None, 6) in range(6)


def test_new_batch_for_stale_partition_keeps_sticky_choice() -> None:
    p = DefaultPartitioner(random.Random(2))
    current = p.partition("t", None, 4)
    stale = (current + 1) % 4
    assert p.on_new_batch("t", stale, 4) == current
    assert p.sticky_partition("t") == current


def test_single_or_no_available_partition() -> None:
    p = DefaultPartitioner(random.Random(3))
    assert p.partition("t", None, 4, available=[2]) == 2
    assert p.on_new_batch("t", 2, 4, available=[2]) == 2
    chosen = p.on_new_batch("t", 2, 4, available=[])
    assert chosen in range(4)


def test_sticky_partition_dropped_when_topic_shrinks() -> None:
    p = DefaultPartitioner(random.Random(4))
    p.partition("t", None, 10, available=[9])
    assert p.partition("t", None, 3) in range(3)
