"""Topic configs: every name Kafka 4.x defines is accepted with its default and validated like Kafka
(ConfigDef types and ranges, the cross-checks of LogConfig.validate); anything else is INVALID_CONFIG."""

from __future__ import annotations

import pytest

from broker.log.config import LONG_MAX, TOPIC_CONFIGS, LogConfig, validate_topic_configs
from broker.log.errors import InvalidConfigError

#: Kafka 4.x's topic configs (TopicConfig / LogConfig.CONFIG), written out independently of the catalogue.
KAFKA_4_TOPIC_CONFIGS = {
    "cleanup.policy", "compression.gzip.level", "compression.lz4.level", "compression.type",
    "compression.zstd.level", "delete.retention.ms", "file.delete.delay.ms", "flush.messages", "flush.ms",
    "follower.replication.throttled.replicas", "index.interval.bytes", "leader.replication.throttled.replicas",
    "local.retention.bytes", "local.retention.ms", "max.compaction.lag.ms", "max.message.bytes",
    "message.timestamp.after.max.ms", "message.timestamp.before.max.ms", "message.timestamp.type",
    "min.cleanable.dirty.ratio", "min.compaction.lag.ms", "min.insync.replicas", "preallocate",
    "remote.log.copy.disable", "remote.log.delete.on.disable", "remote.storage.enable", "retention.bytes",
    "retention.ms", "segment.bytes", "segment.index.bytes", "segment.jitter.ms", "segment.ms",
    "unclean.leader.election.enable",
}


def test_the_catalogue_is_exactly_kafkas_and_every_default_is_valid() -> None:
    assert set(TOPIC_CONFIGS) == KAFKA_4_TOPIC_CONFIGS
    defaults = {name: d.default for name, d in TOPIC_CONFIGS.items()}
    assert validate_topic_configs(defaults) == defaults
    cfg = LogConfig.from_dict(defaults)
    assert (cfg.min_cleanable_dirty_ratio, cfg.max_compaction_lag_ms, cfg.segment_index_bytes) == (0.5, LONG_MAX,
                                                                                                    10485760)


@pytest.mark.parametrize("name", ["message.format.version", "message.downconversion.enable",
                                  "message.timestamp.difference.max.ms", "retention.hours", "no.such.config"])
def test_names_kafka_4_does_not_define_are_refused(name: str) -> None:
    with pytest.raises(InvalidConfigError, match=f"Unknown topic config name: {name}") as ei:
        validate_topic_configs({name: "1"})
    assert ei.value.error_code == 40


@pytest.mark.parametrize("name,value", [
    ("min.cleanable.dirty.ratio", "1.5"), ("min.cleanable.dirty.ratio", "-0.1"), ("min.cleanable.dirty.ratio", "x"),
    ("min.cleanable.dirty.ratio", "nan"), ("max.compaction.lag.ms", "0"), ("min.compaction.lag.ms", "-1"),
    ("delete.retention.ms", "-1"), ("segment.index.bytes", "3"), ("segment.jitter.ms", "-1"),
    ("max.message.bytes", "2147483648"), ("preallocate", "yes"), ("unclean.leader.election.enable", "1"),
    ("compression.gzip.level", "0"), ("compression.gzip.level", "10"), ("compression.lz4.level", "18"),
    ("compression.zstd.level", "23"), ("local.retention.ms", "-3"), ("leader.replication.throttled.replicas", "0:x"),
    ("follower.replication.throttled.replicas", "broker"), ("cleanup.policy", "compact,compact"),
    ("retention.bytes", "1.0"), ("remote.storage.enable", "true"), ("message.timestamp.type", "createtime"),
])
def test_bad_values_are_refused(name: str, value: str) -> None:
    with pytest.raises(InvalidConfigError) as ei:
        validate_topic_configs({name: value})
    assert ei.value.error_code == 40


@pytest.mark.parametrize("name,value,normal", [
    ("min.cleanable.dirty.ratio", "0.01", "0.01"), ("min.cleanable.dirty.ratio", "1", "1.0"),
    ("preallocate", "TRUE", "true"), ("unclean.leader.election.enable", "False", "false"),
    ("compression.gzip.level", "-1", "-1"), ("compression.zstd.level", "-131072", "-131072"),
    ("leader.replication.throttled.replicas", "*", "*"),
    ("follower.replication.throttled.replicas", "0:1, 1:2", "0:1,1:2"),
    ("cleanup.policy", "delete, compact", "compact,delete"), ("local.retention.bytes", "-2", "-2"),
    ("remote.storage.enable", "false", "false"), ("segment.jitter.ms", " 100 ", "100"),
])
def test_good_values_are_normalised(name: str, value: str, normal: str) -> None:
    assert validate_topic_configs({name: value}) == {name: normal}


def test_compaction_lags_must_be_ordered_as_kafka_checks() -> None:
    with pytest.raises(InvalidConfigError, match=r"min.compaction.lag.ms \(10\) > max.compaction.lag.ms \(5\)"):
        LogConfig.from_dict({"min.compaction.lag.ms": "10", "max.compaction.lag.ms": "5"})
    # the broker-level default counts too
    with pytest.raises(InvalidConfigError):
        LogConfig.from_dict({"min.compaction.lag.ms": "10"}, {"max.compaction.lag.ms": "5"})
    assert LogConfig.from_dict({"min.compaction.lag.ms": "5", "max.compaction.lag.ms": "5"}).min_compaction_lag_ms == 5


def test_a_compacted_topic_rolls_its_active_segment_within_max_compaction_lag() -> None:
    assert LogConfig.from_dict({"segment.ms": "1000", "max.compaction.lag.ms": "100"}).max_segment_ms == 1000
    cfg = LogConfig.from_dict({"cleanup.policy": "compact", "segment.ms": "1000", "max.compaction.lag.ms": "100"})
    assert cfg.max_segment_ms == 100
