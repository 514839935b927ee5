"""Group configs: per-group overrides of the consumer-group (KIP-848) and share-group (KIP-932) settings,
Kafka's ``GroupConfig``.

A group's overrides live in the cluster metadata (``group_configs/<group>``), are changed with
IncrementalAlterConfigs / AlterConfigs on resource type GROUP (32) and described with
DescribeConfigs.  The coordinators and the share-partition leaders read a group's effective values
through :func:`group_config_value` / :func:`group_config_text` each time they need one, so a change
applies at the members' next heartbeat (or the next acquisition).  Pure: names, validation against
the broker's bounds, defaults.

The integer configs default to a broker setting and must lie within bounds (broker settings, or
Kafka's fixed ranges); ``share.auto.offset.reset`` (``latest``, ``earliest`` or
``by_duration:<ISO-8601 duration>``) and ``share.isolation.level`` are text.  Kafka 4.2's set plus
4.3's ``share.delivery.count.limit`` and ``share.partition.max.record.locks`` (KIP-1240).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from broker.config.settings import BrokerConfig
from broker.replication.share.manager import ShareGroupSettings
from broker.replication.share.partition import ShareLimits

__all__ = ["GROUP_CONFIGS", "GroupConfigDef", "GroupConfigError", "auto_offset_reset", "effective_group_configs",
           "group_config_text", "group_config_value", "share_group_settings", "validate_group_configs"]

SESSION_TIMEOUT = "consumer.session.timeout.ms"
HEARTBEAT_INTERVAL = "consumer.heartbeat.interval.ms"
SHARE_SESSION_TIMEOUT = "share.session.timeout.ms"
SHARE_HEARTBEAT_INTERVAL = "share.heartbeat.interval.ms"
SHARE_RECORD_LOCK_DURATION = "share.record.lock.duration.ms"
SHARE_DELIVERY_COUNT_LIMIT = "share.delivery.count.limit"
SHARE_PARTITION_MAX_RECORD_LOCKS = "share.partition.max.record.locks"
SHARE_AUTO_OFFSET_RESET = "share.auto.offset.reset"
SHARE_ISOLATION_LEVEL = "share.isolation.level"


@dataclass(frozen=True, slots=True)
class GroupConfigDef:
    """One group config: its default (the broker setting ``default_setting``, else ``default``), its
    bounds (broker setting names or fixed numbers) for an integer, its accepted values for text."""

    default_setting: str | None = None
    default: str = ""
    low: str | int | None = None
    high: str | int | None = None
    text: bool = False

    def default_value(self, config: BrokerConfig) -> int | str:
        if self.default_setting is not None:
            return int(getattr(config, self.default_setting))
        return self.default

    def bound(self, config: BrokerConfig, which: str | int | None) -> tuple[int, str] | None:
        if which is None:
            return None
        if isinstance(which, int):
            return which, str(which)
        return int(getattr(config, which)), f"{which.replace('_', '.')} {getattr(config, which)}"


def _int(default: str, low: str | int, high: str | int) -> GroupConfigDef:
    return GroupConfigDef(default_setting=default, low=low, high=high)


#: group config -> its definition
GROUP_CONFIGS: dict[str, GroupConfigDef] = {
    SESSION_TIMEOUT: _int("group_consumer_session_timeout_ms", "group_consumer_min_session_timeout_ms",
                          "group_consumer_max_session_timeout_ms"),
    HEARTBEAT_INTERVAL: _int("group_consumer_heartbeat_interval_ms", "group_consumer_min_heartbeat_interval_ms",
                             "group_consumer_max_heartbeat_interval_ms"),
    SHARE_SESSION_TIMEOUT: _int("group_share_session_timeout_ms", "group_share_min_session_timeout_ms",
                                "group_share_max_session_timeout_ms"),
    SHARE_HEARTBEAT_INTERVAL: _int("group_share_heartbeat_interval_ms", "group_share_min_heartbeat_interval_ms",
                                   "group_share_max_heartbeat_interval_ms"),
    SHARE_RECORD_LOCK_DURATION: _int("group_share_record_lock_duration_ms", "group_share_min_record_lock_duration_ms",
                                     "group_share_max_record_lock_duration_ms"),
    SHARE_DELIVERY_COUNT_LIMIT: _int("group_share_delivery_count_limit", 2, 10),
    SHARE_PARTITION_MAX_RECORD_LOCKS: _int("group_share_partition_max_record_locks", 100, 10000),
    SHARE_AUTO_OFFSET_RESET: GroupConfigDef(default="latest", text=True),
    SHARE_ISOLATION_LEVEL: GroupConfigDef(default="read_uncommitted", text=True),
}

#: heartbeat interval -> the session timeout it must stay below
_BELOW = {HEARTBEAT_INTERVAL: SESSION_TIMEOUT, SHARE_HEARTBEAT_INTERVAL: SHARE_SESSION_TIMEOUT}

#: Java's ``Duration.parse`` form: PnDTnHnMn.nS (each part optional, at least one)
_DURATION = re.compile(r"^([-+]?)P(?:([-+]?\d+)D)?(?:T(?:([-+]?\d+)H)?(?:([-+]?\d+)M)?(?:([-+]?\d+)(?:[.,](\d{0,9}))?S)?)?$",
                       re.IGNORECASE)


@dataclass
class GroupConfigError(Exception):
    """A change Kafka refuses with INVALID_CONFIG."""

    message: str


def group_config_value(overrides: Mapping[str, str], name: str, default: int) -> tuple[int, bool]:
    """An integer config's value for a group: (its override, True), else (``default``, False)."""
    raw = overrides.get(name)
    try:
        return (int(raw), True) if raw is not None else (default, False)
    except ValueError:  # never written by the admin path; a hand-edited store keeps the default
        return default, False


def group_config_text(overrides: Mapping[str, str], name: str) -> str:
    """A text config's value for a group: its override, else its default."""
    raw = overrides.get(name)
    return raw if raw is not None else GROUP_CONFIGS[name].default


def duration_ms(text: str) -> int | None:
    """An ISO-8601 duration (Java's ``Duration.parse``: PnDTnHnMn.nS) in milliseconds; None if malformed."""
    m = _DURATION.match(text.strip())
    if m is None or not any(m.group(i) for i in (2, 3, 4, 5)) or (m.group(0).upper().endswith("T")):
        return None
    sign = -1 if m.group(1) == "-" else 1
    days, hours, minutes, seconds = (int(m.group(i) or 0) for i in (2, 3, 4, 5))
    fraction = (m.group(6) or "").ljust(3, "0")[:3]
    ms = ((days * 24 + hours) * 60 + minutes) * 60_000 + seconds * 1000 + (int(fraction) if seconds >= 0 else
                                                                         -int(fraction))
    return sign * ms


def auto_offset_reset(value: str) -> tuple[str, int] | None:
    """``share.auto.offset.reset`` parsed: ("latest" | "earliest", 0) or ("by_duration", ms); None if invalid."""
    lowered = value.strip().lower()
    if lowered in ("latest", "earliest"):
        return lowered, 0
    if lowered.startswith("by_duration:"):
        ms = duration_ms(value.strip()[len("by_duration:"):])
        if ms is not None and ms >= 0:
            return "by_duration", ms
    return None


def effective_group_configs(config: BrokerConfig, overrides: Mapping[str, str]) -> dict[str, tuple[int | str, bool]]:
    """Every group config: (value, set on the group) — the group's override, else the default."""
    out: dict[str, tuple[int | str, bool]] = {}
    for name, definition in GROUP_CONFIGS.items():
        if definition.text:
            out[name] = (group_config_text(overrides, name), name in overrides)
        else:
            out[name] = group_config_value(overrides, name, int(definition.default_value(config)))
    return out


def _validate_text(name: str, raw: str) -> str:
    value = raw.strip()
    if name == SHARE_AUTO_OFFSET_RESET:
        if auto_offset_reset(value) is None:
            raise GroupConfigError(f"Invalid value {raw} for configuration {name}: must be latest, earliest or "
                                   "by_duration:<ISO-8601 duration>")
        return value
    if value not in ("read_uncommitted", "read_committed"):
        raise GroupConfigError(f"Invalid value {raw} for configuration {name}: String must be one of: "
                               "read_uncommitted, read_committed")
    return value


def validate_group_configs(config: BrokerConfig, overrides: Mapping[str, str]) -> dict[str, str]:
    """The overrides normalised, or :class:`GroupConfigError` as Kafka's ``GroupConfig.validate``:
    known names only, integers within their bounds, text among its accepted values, and each
    heartbeat interval below its session timeout."""
    out: dict[str, str] = {}
    for name, raw in overrides.items():
        definition = GROUP_CONFIGS.get(name)
        if definition is None:
            raise GroupConfigError(f"Unknown group config name: {name}")
        if definition.text:
            out[name] = _validate_text(name, raw)
            continue
        try:
            value = int(raw.strip())
        except ValueError:
            raise GroupConfigError(f"Invalid value {raw} for configuration {name}: Not a number of type INT") \
                from None
        low, high = definition.bound(config, definition.low), definition.bound(config, definition.high)
        if low is not None and value < low[0]:
            raise GroupConfigError(f"{name} must be greater than or equal to {low[1]}")
        if high is not None and value > high[0]:
            raise GroupConfigError(f"{name} must be less than or equal to {high[1]}")
        out[name] = str(value)
    values = effective_group_configs(config, out)
    for interval, session in _BELOW.items():
        if int(values[interval][0]) >= int(values[session][0]):
            raise GroupConfigError(f"{interval} must be less than {session}")
    return out


def share_group_settings(config: BrokerConfig, overrides: Mapping[str, str]) -> ShareGroupSettings:
    """What a share-partition leader needs of a group's configs now (its overrides over the broker's)."""
    values = effective_group_configs(config, overrides)
    reset = auto_offset_reset(str(values[SHARE_AUTO_OFFSET_RESET][0])) or ("latest", 0)
    return ShareGroupSettings(
        ShareLimits(delivery_count_limit=int(values[SHARE_DELIVERY_COUNT_LIMIT][0]),
                    max_record_locks=int(values[SHARE_PARTITION_MAX_RECORD_LOCKS][0]),
                    lock_ms=int(values[SHARE_RECORD_LOCK_DURATION][0])),
        isolation=1 if values[SHARE_ISOLATION_LEVEL][0] == "read_committed" else 0, reset=reset)
