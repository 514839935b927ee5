"""Topic-level log configuration: every topic config Kafka 4.x defines, its default, type, validation.

``TOPIC_CONFIGS`` is the catalogue: for each of Kafka's topic config names, its default (the
wire form), its ConfigType (what DescribeConfigs reports) and its parser/validator.  The broker
settings that supply a default when a topic does not override it (Kafka's
``ServerTopicConfigSynonyms``: ``retention.ms`` ← ``log.retention.ms``, ``max.message.bytes`` ←
``message.max.bytes``, ...) are declared with those settings
(:data:`broker.config.settings.TOPIC_SYNONYMS`).  ``validate_topic_configs`` is what CreateTopics and
the alter-config APIs use to reject bad names or values (``InvalidConfigError`` → INVALID_CONFIG);
``LogConfig`` is the parsed, typed form the storage layer reads on the hot path.

What each config does here:

* enforced by the storage layer: retention, segment size/age/jitter/index size, flush, index
  interval, ``max.message.bytes``, timestamps, ``file.delete.delay.ms``, and the cleanup ones
  (``cleanup.policy``, ``min.cleanable.dirty.ratio``, ``min.compaction.lag.ms``,
  ``max.compaction.lag.ms``, ``delete.retention.ms`` — see :mod:`broker.log.cleaner`);
* ``min.insync.replicas`` by the produce path, ``unclean.leader.election.enable`` by the controller;
* ``compression.type`` and the ``compression.*.level`` ones on append (:mod:`broker.log.recompress`);
* accepted and validated but with nothing to tune in this broker: ``preallocate`` (segment files
  grow as written), the replication throttle lists (replication is not throttled), and the
  tiered-storage ones — ``remote.storage.enable=true`` is refused as Kafka refuses it on a broker
  without tiered storage, so ``local.retention.*`` and ``remote.log.*`` never take effect.

Names Kafka 4.x removed (``message.format.version``, ``message.downconversion.enable``,
``message.timestamp.difference.max.ms``) and any other unknown name are INVALID_CONFIG.

Deviation from Kafka, deliberately: ``flush.ms`` defaults to 250 rather than
Long.MAX_VALUE.  Kafka can leave flushing to the OS because replication covers
a machine failure; a single-node broker has no replica, so we bound what a
*power loss* can lose to about a quarter of a second.  A *process* crash loses
nothing either way (see ``partition_log`` for the reasoning).  Smaller fsyncs
also keep the appends beside them quick: a second's worth of a busy partition
held its file's block allocation long enough to show in the produce latency's
99th percentile (benchmarks/RESULTS.md, "the flush interval").
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from broker.config.declare import BOOLEAN, DOUBLE, INT, LIST, LONG, STRING
from broker.log.errors import InvalidConfigError

LONG_MAX = 9223372036854775807
LONG_MIN = -9223372036854775808
INT_MAX = 2147483647
INT_MIN = -2147483648

COMPRESSION_TYPES = ("producer", "uncompressed", "gzip", "snappy", "lz4", "zstd")
TIMESTAMP_TYPES = ("CreateTime", "LogAppendTime")
# compression levels (Kafka's GzipCompression / Lz4Compression / ZstdCompression bounds)
GZIP_LEVELS, GZIP_DEFAULT_LEVEL = (1, 9), -1
LZ4_LEVELS, LZ4_DEFAULT_LEVEL = (1, 17), 9
ZSTD_LEVELS, ZSTD_DEFAULT_LEVEL = (-131072, 22), 3

Parser = Callable[[str, str], object]


def _number(cast: Callable[[str], float], lo: float, hi: float, kind: str) -> Parser:
    """A number of ConfigDef type ``kind`` (LONG, INT, DOUBLE) within ``[lo, hi]``."""
    def parse(name: str, value: str) -> float:
        try:
            v = cast(str(value).strip())
        except ValueError:
            raise InvalidConfigError(f"Invalid value {value} for configuration {name}: Not a number of type "
                                     f"{kind}") from None
        if not lo <= v <= hi:  # also refuses nan
            bound = f"be in [{lo}, {hi}]" if hi < LONG_MAX else f"be at least {lo}"
            raise InvalidConfigError(f"Invalid value {v} for configuration {name}: Value must {bound}")
        return v

    return parse


def _long(lo: int = LONG_MIN, hi: int = LONG_MAX) -> Parser:
    return _number(int, lo, hi, "LONG")


def _int(lo: int = INT_MIN, hi: int = INT_MAX) -> Parser:
    return _number(int, lo, hi, "INT")


def _double(lo: float, hi: float) -> Parser:
    return _number(float, lo, hi, "DOUBLE")


def _boolean(name: str, value: str) -> bool:
    v = str(value).strip().lower()
    if v not in ("true", "false"):
        raise InvalidConfigError(f"Invalid value {value} for configuration {name}: Expected value to be either "
                                 f"true or false")
    return v == "true"


def _enum(*choices: str) -> Parser:
    def parse(name: str, value: str) -> str:
        v = str(value).strip()
        if v not in choices:
            raise InvalidConfigError(f"Invalid value {value} for configuration {name}: String must be one of: "
                                     f"{', '.join(choices)}")
        return v

    return parse


def _level(bounds: tuple[int, int], default: int) -> Parser:
    lo, hi = bounds
    inner = _int()

    def parse(name: str, value: str) -> int:
        v = inner(name, value)
        if v != default and not lo <= v <= hi:
            raise InvalidConfigError(f"Invalid value {v} for configuration {name}: Value must be between {lo} "
                                     f"and {hi}" + (f" or equal to {default}" if default < lo else ""))
        return v

    return parse


def _cleanup_policy(name: str, value: str) -> str:
    parts = sorted(p.strip() for p in str(value).split(",") if p.strip())
    if not parts or any(p not in ("delete", "compact") for p in parts) or len(set(parts)) != len(parts):
        raise InvalidConfigError(f"Invalid value {value} for configuration {name}: must be delete, compact or "
                                 f"compact,delete")
    return ",".join(parts)


def _throttled_replicas(name: str, value: str) -> str:
    """Kafka's ThrottledReplicaListValidator: ``*`` or ``partition:broker,...``."""
    v = ",".join(p.strip() for p in str(value).split(",") if p.strip())
    if v in ("", "*"):
        return v
    for item in v.split(","):
        partition, sep, broker = item.partition(":")
        if not sep or not partition.strip().isdigit() or not broker.strip().isdigit():
            raise InvalidConfigError(f"Invalid value {value} for configuration {name}: must be the literal '*' "
                                     f"or a list of replicas in the following format: "
                                     f"[partitionId]:[brokerId],[partitionId]:[brokerId],...")
    return v


def _remote_storage(name: str, value: str) -> bool:
    enabled = _boolean(name, value)
    if enabled:
        raise InvalidConfigError("Tiered Storage functionality is disabled in the broker. Topic cannot be "
                                 "configured with remote log storage.")
    return enabled


@dataclass(frozen=True, slots=True)
class TopicConfigDef:
    """One topic config: its default (wire form), ConfigType (:mod:`broker.config.declare`) and parser."""

    name: str
    default: str
    type: int
    parse: Parser


def _def(name: str, default: object, ctype: int, parse: Parser) -> TopicConfigDef:
    text = str(default).lower() if isinstance(default, bool) else str(default)
    return TopicConfigDef(name, text, ctype, parse)


#: Every topic config of Kafka 4.x, by name (Kafka's TopicConfig / LogConfig definitions).
TOPIC_CONFIGS: dict[str, TopicConfigDef] = {d.name: d for d in (
    _def("cleanup.policy", "delete", LIST, _cleanup_policy),
    _def("compression.gzip.level", GZIP_DEFAULT_LEVEL, INT, _level(GZIP_LEVELS, GZIP_DEFAULT_LEVEL)),
    _def("compression.lz4.level", LZ4_DEFAULT_LEVEL, INT, _level(LZ4_LEVELS, LZ4_DEFAULT_LEVEL)),
    _def("compression.type", "producer", STRING, _enum(*COMPRESSION_TYPES)),
    _def("compression.zstd.level", ZSTD_DEFAULT_LEVEL, INT, _level(ZSTD_LEVELS, ZSTD_DEFAULT_LEVEL)),
    _def("delete.retention.ms", 86_400_000, LONG, _long(0)),
    _def("file.delete.delay.ms", 60_000, LONG, _long(0)),
    _def("flush.messages", LONG_MAX, LONG, _long(1)),
    _def("flush.ms", 250, LONG, _long(0)),
    _def("follower.replication.throttled.replicas", "", LIST, _throttled_replicas),
    _def("index.interval.bytes", 4096, INT, _int(0)),
    _def("leader.replication.throttled.replicas", "", LIST, _throttled_replicas),
    _def("local.retention.bytes", -2, LONG, _long(-2)),
    _def("local.retention.ms", -2, LONG, _long(-2)),
    _def("max.compaction.lag.ms", LONG_MAX, LONG, _long(1)),
    _def("max.message.bytes", 1_048_588, INT, _int(0)),
    _def("message.timestamp.after.max.ms", LONG_MAX, LONG, _long(0)),
    _def("message.timestamp.before.max.ms", LONG_MAX, LONG, _long(0)),
    _def("message.timestamp.type", "CreateTime", STRING, _enum(*TIMESTAMP_TYPES)),
    _def("min.cleanable.dirty.ratio", 0.5, DOUBLE, _double(0.0, 1.0)),
    _def("min.compaction.lag.ms", 0, LONG, _long(0)),
    _def("min.insync.replicas", 1, INT, _int(1)),
    _def("preallocate", False, BOOLEAN, _boolean),
    _def("remote.log.copy.disable", False, BOOLEAN, _boolean),
    _def("remote.log.delete.on.disable", False, BOOLEAN, _boolean),
    _def("remote.storage.enable", False, BOOLEAN, _remote_storage),
    _def("retention.bytes", -1, LONG, _long()),
    _def("retention.ms", 604_800_000, LONG, _long(-1)),
    # Kafka's floor is 14 bytes (LegacyRecord overhead); small segments make tests cheap.
    _def("segment.bytes", 1_073_741_824, INT, _int(14)),
    _def("segment.index.bytes", 10_485_760, INT, _int(4)),
    _def("segment.jitter.ms", 0, LONG, _long(0)),
    _def("segment.ms", 604_800_000, LONG, _long(1)),
    _def("unclean.leader.election.enable", False, BOOLEAN, _boolean),
)}

#: Kafka topic config name -> default value, as strings (the wire form).
TOPIC_CONFIG_DEFAULTS: dict[str, str] = {name: d.default for name, d in TOPIC_CONFIGS.items()}


def parse_topic_config(name: str, value: str) -> object:
    """The typed value of one topic config (InvalidConfigError for an unknown name or a bad value)."""
    d = TOPIC_CONFIGS.get(name)
    if d is None:
        raise InvalidConfigError(f"Unknown topic config name: {name}")
    return d.parse(name, str(value))


def _normalise(name: str, value: object) -> str:
    parsed = parse_topic_config(name, str(value))
    if isinstance(parsed, bool):
        return "true" if parsed else "false"
    if isinstance(parsed, float):
        return repr(parsed)
    return str(parsed)


def validate_topic_configs(configs: Mapping[str, str | None]) -> dict[str, str]:
    """Check names and values; return the normalised overrides (``None`` values dropped).

    Raises ``InvalidConfigError`` (INVALID_CONFIG) on an unknown name or a bad value.
    """
    out: dict[str, str] = {}
    for name, value in configs.items():
        if name not in TOPIC_CONFIGS:
            raise InvalidConfigError(f"Unknown topic config name: {name}")
        if value is None:
            continue
        out[name] = _normalise(name, value)
    return out


@dataclass(frozen=True, slots=True)
class LogConfig:
    """Parsed, typed topic config; what ``PartitionLog`` and the cleaner read."""

    cleanup_policy: str
    compression_type: str
    compression_gzip_level: int
    compression_lz4_level: int
    compression_zstd_level: int
    delete_retention_ms: int
    file_delete_delay_ms: int
    flush_messages: int
    flush_ms: int
    index_interval_bytes: int
    max_compaction_lag_ms: int
    max_message_bytes: int
    timestamp_after_max_ms: int
    timestamp_before_max_ms: int
    log_append_time: bool
    min_cleanable_dirty_ratio: float
    min_compaction_lag_ms: int
    min_insync_replicas: int
    retention_bytes: int
    retention_ms: int
    segment_bytes: int
    segment_index_bytes: int
    segment_jitter_ms: int
    segment_ms: int
    unclean_leader_election: bool

    @property
    def compact(self) -> bool:
        return "compact" in self.cleanup_policy.split(",")

    @property
    def delete(self) -> bool:
        return "delete" in self.cleanup_policy.split(",")

    @property
    def max_segment_ms(self) -> int:
        """How old the active segment may get before it rolls: ``segment.ms``, and for a compacted topic
        at most ``max.compaction.lag.ms`` (the cleaner never touches the active segment; KIP-354)."""
        if self.compact:
            return min(self.segment_ms, self.max_compaction_lag_ms)
        return self.segment_ms

    @classmethod
    def from_dict(
        cls, overrides: Mapping[str, str | None] | None = None, defaults: Mapping[str, str] | None = None
    ) -> LogConfig:
        """Build from topic overrides over ``defaults`` (broker-level, else ``TOPIC_CONFIG_DEFAULTS``).

        Raises ``InvalidConfigError`` for a bad value or a combination Kafka refuses
        (``min.compaction.lag.ms`` above ``max.compaction.lag.ms``).
        """
        merged = dict(TOPIC_CONFIG_DEFAULTS)
        if defaults:
            merged.update(validate_topic_configs(defaults))
        if overrides:
            merged.update(validate_topic_configs(overrides))
        v = {k: TOPIC_CONFIGS[k].parse(k, s) for k, s in merged.items()}
        if v["min.compaction.lag.ms"] > v["max.compaction.lag.ms"]:  # type: ignore[operator]
            raise InvalidConfigError(f"conflict topic config setting min.compaction.lag.ms "
                                     f"({v['min.compaction.lag.ms']}) > max.compaction.lag.ms "
                                     f"({v['max.compaction.lag.ms']})")
        return cls(
            cleanup_policy=v["cleanup.policy"],  # type: ignore[arg-type]
            compression_type=v["compression.type"],  # type: ignore[arg-type]
            compression_gzip_level=v["compression.gzip.level"],  # type: ignore[arg-type]
            compression_lz4_level=v["compression.lz4.level"],  # type: ignore[arg-type]
            compression_zstd_level=v["compression.zstd.level"],  # type: ignore[arg-type]
            delete_retention_ms=v["delete.retention.ms"],  # type: ignore[arg-type]
            file_delete_delay_ms=v["file.delete.delay.ms"],  # type: ignore[arg-type]
            flush_messages=v["flush.messages"],  # type: ignore[arg-type]
            flush_ms=v["flush.ms"],  # type: ignore[arg-type]
            index_interval_bytes=v["index.interval.bytes"],  # type: ignore[arg-type]
            max_compaction_lag_ms=v["max.compaction.lag.ms"],  # type: ignore[arg-type]
            max_message_bytes=v["max.message.bytes"],  # type: ignore[arg-type]
            timestamp_after_max_ms=v["message.timestamp.after.max.ms"],  # type: ignore[arg-type]
            timestamp_before_max_ms=v["message.timestamp.before.max.ms"],  # type: ignore[arg-type]
            log_append_time=v["message.timestamp.type"] == "LogAppendTime",
            min_cleanable_dirty_ratio=v["min.cleanable.dirty.ratio"],  # type: ignore[arg-type]
            min_compaction_lag_ms=v["min.compaction.lag.ms"],  # type: ignore[arg-type]
            min_insync_replicas=v["min.insync.replicas"],  # type: ignore[arg-type]
            retention_bytes=v["retention.bytes"],  # type: ignore[arg-type]
            retention_ms=v["retention.ms"],  # type: ignore[arg-type]
            segment_bytes=v["segment.bytes"],  # type: ignore[arg-type]
            segment_index_bytes=v["segment.index.bytes"],  # type: ignore[arg-type]
            segment_jitter_ms=v["segment.jitter.ms"],  # type: ignore[arg-type]
            segment_ms=v["segment.ms"],  # type: ignore[arg-type]
            unclean_leader_election=v["unclean.leader.election.enable"],  # type: ignore[arg-type]
        )
