"""Topic-level log configuration: Kafka's config names, their defaults, validation, parsing.

``TOPIC_CONFIG_DEFAULTS`` is what DescribeConfigs reports as the default value of
each topic config we honour; ``validate_topic_configs`` is what CreateTopics /
AlterConfigs use to reject bad values (``InvalidConfigError`` → INVALID_CONFIG);
``LogConfig`` is the parsed, typed form the storage layer reads on the hot path.

Every config accepted here is enforced: the storage layer applies the retention, segment,
flush, index, size, timestamp and cleanup ones; ``min.insync.replicas`` is checked by the produce
path for ``acks=all`` (against the partition's in-sync replica set) and ``compression.type`` is
applied on append by :mod:`broker.log.recompress`.  Any other name is refused (INVALID_CONFIG).

Deviation from Kafka, deliberately: ``flush.ms`` defaults to 1000 rather than
Long.MAX_VALUE.  Kafka can leave flushing to the OS because replication covers
a machine failure; a single-node broker has no replica, so we bound what a
*power loss* can lose to about a second.  A *process* crash loses nothing
either way (see ``partition_log`` for the reasoning).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from broker.log.errors import InvalidConfigError

LONG_MAX = 9223372036854775807
INT_MAX = 2147483647

#: Kafka topic config name -> default value, as strings (the wire form).
TOPIC_CONFIG_DEFAULTS: dict[str, str] = {
    "cleanup.policy": "delete",
    "compression.type": "producer",
    "delete.retention.ms": "86400000",
    "file.delete.delay.ms": "60000",
    "flush.messages": str(LONG_MAX),
    "flush.ms": "1000",
    "index.interval.bytes": "4096",
    "max.message.bytes": "1048588",
    "message.timestamp.after.max.ms": str(LONG_MAX),
    "message.timestamp.before.max.ms": str(LONG_MAX),
    "message.timestamp.type": "CreateTime",
    "min.insync.replicas": "1",
    "retention.bytes": "-1",
    "retention.ms": "604800000",
    "segment.bytes": "1073741824",
    "segment.ms": "604800000",
}

COMPRESSION_TYPES = ("producer", "uncompressed", "gzip", "snappy", "lz4", "zstd")
TIMESTAMP_TYPES = ("CreateTime", "LogAppendTime")


def _long(lo: int, hi: int = LONG_MAX) -> Callable[[str, str], int]:
    def parse(name: str, value: str) -> int:
        try:
            v = int(str(value).strip())
        except ValueError:
            raise InvalidConfigError(f"{name}={value!r} is not an integer") from None
        if not lo <= v <= hi:
            raise InvalidConfigError(f"{name}={v} out of range [{lo}, {hi}]")
        return v

    return parse


def _enum(*choices: str) -> Callable[[str, str], str]:
    def parse(name: str, value: str) -> str:
        v = str(value).strip()
        if v not in choices:
            raise InvalidConfigError(f"{name}={value!r} must be one of {', '.join(choices)}")
        return v

    return parse


def _cleanup_policy(name: str, value: str) -> str:
    parts = sorted(p.strip() for p in str(value).split(",") if p.strip())
    if not parts or any(p not in ("delete", "compact") for p in parts) or len(set(parts)) != len(parts):
        raise InvalidConfigError(f"{name}={value!r} must be delete, compact or compact,delete")
    return ",".join(parts)


_PARSERS: dict[str, Callable[[str, str], object]] = {
    "cleanup.policy": _cleanup_policy,
    "compression.type": _enum(*COMPRESSION_TYPES),
    "delete.retention.ms": _long(0),
    "file.delete.delay.ms": _long(0),
    "flush.messages": _long(1),
    "flush.ms": _long(0),
    "index.interval.bytes": _long(0, INT_MAX),
    "max.message.bytes": _long(0, INT_MAX),
    "message.timestamp.after.max.ms": _long(0),
    "message.timestamp.before.max.ms": _long(0),
    "message.timestamp.type": _enum(*TIMESTAMP_TYPES),
    "min.insync.replicas": _long(1, INT_MAX),
    "retention.bytes": _long(-1),
    "retention.ms": _long(-1),
    # Kafka's floor is 14 bytes (LegacyRecord overhead); small segments make tests cheap.
    "segment.bytes": _long(14, INT_MAX),
    "segment.ms": _long(1),
}


def validate_topic_configs(configs: Mapping[str, str | None]) -> dict[str, str]:
    """Check names and values; return the normalised overrides (``None`` values dropped).

    Raises ``InvalidConfigError`` (INVALID_CONFIG) on an unknown name or a bad value.
    """
    out: dict[str, str] = {}
    for name, value in configs.items():
        parser = _PARSERS.get(name)
        if parser is None:
            raise InvalidConfigError(f"unknown topic config {name!r}")
        if value is None:
            continue
        out[name] = str(parser(name, str(value)))
    return out


@dataclass(frozen=True, slots=True)
class LogConfig:
    """Parsed, typed topic config; what ``PartitionLog`` reads."""

    cleanup_policy: str
    compression_type: str
    delete_retention_ms: int
    file_delete_delay_ms: int
    flush_messages: int
    flush_ms: int
    index_interval_bytes: int
    max_message_bytes: int
    timestamp_after_max_ms: int
    timestamp_before_max_ms: int
    log_append_time: bool
    min_insync_replicas: int
    retention_bytes: int
    retention_ms: int
    segment_bytes: int
    segment_ms: int

    @property
    def compact(self) -> bool:
        return "compact" in self.cleanup_policy.split(",")

    @property
    def delete(self) -> bool:
        return "delete" in self.cleanup_policy.split(",")

    @classmethod
    def from_dict(
        cls, overrides: Mapping[str, str | None] | None = None, defaults: Mapping[str, str] | None = None
    ) -> LogConfig:
        """Build from topic overrides over ``defaults`` (broker-level, else ``TOPIC_CONFIG_DEFAULTS``)."""
        merged = dict(TOPIC_CONFIG_DEFAULTS)
        if defaults:
            merged.update(validate_topic_configs(defaults))
        if overrides:
            merged.update(validate_topic_configs(overrides))
        v = {k: _PARSERS[k](k, s) for k, s in merged.items()}
        return cls(
            cleanup_policy=v["cleanup.policy"],  # type: ignore[arg-type]
            compression_type=v["compression.type"],  # type: ignore[arg-type]
            delete_retention_ms=v["delete.retention.ms"],  # type: ignore[arg-type]
            file_delete_delay_ms=v["file.delete.delay.ms"],  # type: ignore[arg-type]
            flush_messages=v["flush.messages"],  # type: ignore[arg-type]
            flush_ms=v["flush.ms"],  # type: ignore[arg-type]
            index_interval_bytes=v["index.interval.bytes"],  # type: ignore[arg-type]
            max_message_bytes=v["max.message.bytes"],  # type: ignore[arg-type]
            timestamp_after_max_ms=v["message.timestamp.after.max.ms"],  # type: ignore[arg-type]
            timestamp_before_max_ms=v["message.timestamp.before.max.ms"],  # type: ignore[arg-type]
            log_append_time=v["message.timestamp.type"] == "LogAppendTime",
            min_insync_replicas=v["min.insync.replicas"],  # type: ignore[arg-type]
            retention_bytes=v["retention.bytes"],  # type: ignore[arg-type]
            retention_ms=v["retention.ms"],  # type: ignore[arg-type]
            segment_bytes=v["segment.bytes"],  # type: ignore[arg-type]
            segment_ms=v["segment.ms"],  # type: ignore[arg-type]
        )
