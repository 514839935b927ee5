"""Config validation, bootstrap parsing, backoff, version negotiation, leastLoadedNode wiring."""

from __future__ import annotations

import random

import pytest

from client.config import ConsumerConfig, ProducerConfig, build_config, parse_bootstrap
from client.conn import Backoff, negotiate_versions
from client.errors import ConfigError
from client.group_protocol import resolve_assignor
from protocol.api import APIS, ApiKey


def test_unknown_config_name_is_rejected() -> None:
    with pytest.raises(ConfigError, match="lingerms"):
        build_config(ProducerConfig, {"lingerms": 5})


@pytest.mark.parametrize("kwargs", [
    {"acks": 2}, {"compression_type": "brotli"}, {"enable_idempotence": True, "acks": 1}, {"batch_size": 0},
    {"max_block_ms": -1},
])
def test_bad_producer_values(kwargs: dict) -> None:
    with pytest.raises(ConfigError):
        build_config(ProducerConfig, kwargs)


def test_acks_all_is_minus_one() -> None:
    assert build_config(ProducerConfig, {"acks": "all"}).acks == -1


@pytest.mark.parametrize("kwargs", [
    {"auto_offset_reset": "smallest"}, {"isolation_level": "dirty"},
    {"heartbeat_interval_ms": 50000, "session_timeout_ms": 45000}, {"group_instance_id": "x"},
    {"partition_assignment_strategy": []}, {"max_poll_records": 0},
])
def test_bad_consumer_values(kwargs: dict) -> None:
    with pytest.raises(ConfigError):
        build_config(ConsumerConfig, kwargs)


def test_rebalance_timeout_defaults_to_max_poll_interval() -> None:
    cfg = build_config(ConsumerConfig, {"max_poll_interval_ms": 1234})
    assert cfg.rebalance_timeout_ms == 1234


def test_parse_bootstrap() -> None:
    assert parse_bootstrap("a:1, b:2,c") == [("a", 1), ("b", 2), ("c", 9092)]
    assert parse_bootstrap(["[::1]:9093"]) == [("::1", 9093)]
    with pytest.raises(ConfigError):
        parse_bootstrap("")


def test_unknown_assignor() -> None:
    with pytest.raises(ConfigError):
        resolve_assignor("nope")


def test_backoff_grows_exponentially_with_jitter_up_to_max() -> None:
    b = Backoff(50, 1000, random.Random(1))
    assert b.delay_ms() == 0 and b.can_connect(0)
    delays = []
    for _ in range(8):
        b.on_failure(0)
        delays.append(b.next_attempt_ms)
    assert 40 <= delays[0] <= 60
    assert 80 <= delays[1] <= 120
    assert all(d <= 1200 for d in delays) and delays[-1] >= 800
    assert not b.can_connect(10)
    b.on_success()
    assert b.can_connect(0)


def test_negotiate_picks_highest_common_version() -> None:
    fetch = APIS[ApiKey.FETCH]
    got = negotiate_versions({ApiKey.FETCH: (0, 11), ApiKey.METADATA: (0, 99), 999: (0, 1),
                              ApiKey.PRODUCE: (0, 2)})
    assert got[ApiKey.FETCH] == 11
    assert got[ApiKey.METADATA] == APIS[ApiKey.METADATA].max_version
    assert 999 not in got
    assert ApiKey.PRODUCE not in got
    assert ApiKey.JOIN_GROUP not in got
    assert fetch.min_version <= got[ApiKey.FETCH]
