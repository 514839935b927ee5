"""Dynamic broker configs (Kafka's DynamicBrokerConfig): what may change at runtime, Kafka's answers
for what may not, and the precedence per broker > cluster-wide default > static > built-in."""

from __future__ import annotations

import dataclasses

import pytest

from broker.config.dynamic import (
    DEFAULT_CONFIG,
    DYNAMIC_BROKER_CONFIG,
    DYNAMIC_DEFAULT_BROKER_CONFIG,
    STATIC_BROKER_CONFIG,
    DynamicBrokerConfig,
    DynamicConfigError,
)
from broker.config.settings import DYNAMIC_SETTINGS, BrokerConfig, broker_log_defaults
from broker.core import CONFIG_CHECKS

INVALID_REQUEST = 42


def make(**static: object) -> tuple[DynamicBrokerConfig, BrokerConfig]:
    live = BrokerConfig(**static)  # type: ignore[arg-type]
    return DynamicBrokerConfig(live, live, checks=CONFIG_CHECKS), live


@pytest.mark.parametrize("layer,message", [
    ({"port": "9000"}, "Cannot update these configs dynamically: port"),
    ({"log.retention.check.interval.ms": "1"}, "Cannot update these configs dynamically"),
    ({"log.dirs": "/x"}, "Cannot update these configs dynamically: log.dirs"),
    ({"no.such.setting": "1"}, "Unknown broker configs: no.such.setting"),
    ({"log.retention.ms": "soon"}, "Invalid value soon for configuration log.retention.ms"),
    ({"log.cleaner.min.cleanable.ratio": "2"}, "min.cleanable.dirty.ratio"),
    ({"log.cleaner.min.compaction.lag.ms": "10", "log.cleaner.max.compaction.lag.ms": "5"}, "conflict"),
    ({"num.io.threads": "0"}, "at least 1"),
    ({"message.max.bytes": "-5"}, "max.message.bytes"),
])
def test_what_kafka_refuses_is_invalid_request(layer: dict[str, str], message: str) -> None:
    dyn, _ = make()
    with pytest.raises(DynamicConfigError, match=message) as ei:
        dyn.validate(layer, per_broker=True)
    assert ei.value.code == INVALID_REQUEST


def test_per_broker_only_configs_cannot_be_the_cluster_default() -> None:
    dyn, _ = make()
    layer = {"sasl.kerberos.min.time.before.relogin": "58000"}
    assert dyn.validate(layer, per_broker=True) == layer
    with pytest.raises(DynamicConfigError, match="broker id must be specified") as ei:
        dyn.validate(layer, per_broker=False)
    assert ei.value.code == INVALID_REQUEST


def test_precedence_per_broker_over_cluster_default_over_static() -> None:
    dyn, live = make(log_retention_ms=111, message_max_bytes=2000)
    changed = dyn.update({"log.retention.ms": "222", "message.max.bytes": "3000", "log.segment.bytes": "5000"},
                         {"log.retention.ms": "333"})
    assert changed == {"log.retention.ms", "message.max.bytes", "log.segment.bytes"}
    assert (live.log_retention_ms, live.message_max_bytes, live.log_segment_bytes) == (333, 3000, 5000)
    assert dyn.layers("log.retention.ms") == [("333", DYNAMIC_BROKER_CONFIG), ("222", DYNAMIC_DEFAULT_BROKER_CONFIG),
                                              ("111", STATIC_BROKER_CONFIG), ("604800000", DEFAULT_CONFIG)]
    assert dyn.layers("log.segment.bytes")[-1] == ("1073741824", DEFAULT_CONFIG)
    defaults = broker_log_defaults(live)
    assert (defaults["retention.ms"], defaults["max.message.bytes"], defaults["segment.bytes"]) == ("333", "3000",
                                                                                                      "5000")
    # removing the dynamic layers falls back to the static values
    assert dyn.update({}, {}) == {"log.retention.ms", "message.max.bytes", "log.segment.bytes"}
    assert (live.log_retention_ms, live.message_max_bytes, live.log_segment_bytes) == (111, 2000, 1073741824)


def test_hours_and_minutes_spellings_fold_into_the_ms_setting_of_their_layer() -> None:
    dyn, live = make()
    dyn.update({"log.retention.hours": "2"}, {})
    assert live.log_retention_ms == 7_200_000
    dyn.update({"log.retention.hours": "2", "log.retention.ms": "5"}, {"log.roll.hours": "1"})
    assert (live.log_retention_ms, live.log_roll_ms) == (5, 3_600_000)  # an explicit ms wins in its layer


def test_an_invalid_stored_layer_is_ignored_not_applied() -> None:
    dyn, live = make()
    dyn.update({"log.retention.ms": "x", "log.segment.bytes": "4000"}, {})
    assert (live.log_retention_ms, live.log_segment_bytes) == (604_800_000, 4000)
    dyn.update({"log.cleaner.min.compaction.lag.ms": "10", "log.cleaner.max.compaction.lag.ms": "5"}, {})
    assert (live.log_cleaner_min_compaction_lag_ms, live.log_segment_bytes) == (0, 1073741824)


def test_every_dynamic_setting_has_a_kafka_name_and_is_applied_or_documented() -> None:
    fields = {f.name.replace("_", ".") for f in dataclasses.fields(BrokerConfig)}
    spelled = {"log.retention.hours", "log.retention.minutes", "log.roll.hours", "log.roll.jitter.hours"}
    assert DYNAMIC_SETTINGS - fields == spelled
