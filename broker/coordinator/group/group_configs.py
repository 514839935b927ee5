"""Group configs (KIP-848): per-group overrides of the consumer-group settings, Kafka's ``GroupConfig``.

A group's overrides live in the cluster metadata (``group_configs/<group>``), are changed with
IncrementalAlterConfigs / AlterConfigs on resource type GROUP (32) and described with
DescribeConfigs.  The consumer-group coordinator reads a group's effective values through
:func:`effective_group_configs` each time it answers a heartbeat or arms a session timer, so a change
applies at the members' next heartbeat.  Pure: names, validation against the broker's bounds, defaults.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from broker.config.settings import BrokerConfig

__all__ = ["GROUP_CONFIGS", "GroupConfigError", "effective_group_configs", "group_config_value",
           "validate_group_configs"]

SESSION_TIMEOUT = "consumer.session.timeout.ms"
HEARTBEAT_INTERVAL = "consumer.heartbeat.interval.ms"

#: group config -> (the broker setting that is its default, its lower bound, its upper bound)
GROUP_CONFIGS: dict[str, tuple[str, str, str]] = {
    SESSION_TIMEOUT: ("group_consumer_session_timeout_ms", "group_consumer_min_session_timeout_ms",
                      "group_consumer_max_session_timeout_ms"),
    HEARTBEAT_INTERVAL: ("group_consumer_heartbeat_interval_ms", "group_consumer_min_heartbeat_interval_ms",
                         "group_consumer_max_heartbeat_interval_ms"),
}


@dataclass
class GroupConfigError(Exception):
    """A change Kafka refuses with INVALID_CONFIG."""

    message: str


def group_config_value(overrides: Mapping[str, str], name: str, default: int) -> tuple[int, bool]:
    """``name``'s value for a group: (its override, True), else (``default``, False)."""
    raw = overrides.get(name)
    try:
        return (int(raw), True) if raw is not None else (default, False)
    except ValueError:  # never written by the admin path; a hand-edited store keeps the default
        return default, False


def effective_group_configs(config: BrokerConfig, overrides: Mapping[str, str]) -> dict[str, tuple[int, bool]]:
    """Every group config: (value, set on the group) — the group's override, else the broker default."""
    return {name: group_config_value(overrides, name, getattr(config, default))
            for name, (default, _, _) in GROUP_CONFIGS.items()}


def validate_group_configs(config: BrokerConfig, overrides: Mapping[str, str]) -> dict[str, str]:
    """The overrides normalised, or :class:`GroupConfigError` as Kafka's ``GroupConfig.validate``:
    known names only, integers within the broker's ``group.consumer.min/max.*`` bounds, and the
    heartbeat interval below the session timeout."""
    out: dict[str, str] = {}
    for name, raw in overrides.items():
        if name not in GROUP_CONFIGS:
            raise GroupConfigError(f"Unknown group config name: {name}")
        try:
            value = int(raw.strip())
        except ValueError:
            raise GroupConfigError(f"Invalid value {raw} for configuration {name}: Not a number of type INT") \
                from None
        _, low_name, high_name = GROUP_CONFIGS[name]
        low, high = getattr(config, low_name), getattr(config, high_name)
        if value < low:
            raise GroupConfigError(f"{name} must be greater than or equal to {low_name.replace('_', '.')} {low}")
        if value > high:
            raise GroupConfigError(f"{name} must be less than or equal to {high_name.replace('_', '.')} {high}")
        out[name] = str(value)
    values = effective_group_configs(config, out)
    if values[HEARTBEAT_INTERVAL][0] >= values[SESSION_TIMEOUT][0]:
        raise GroupConfigError(f"{HEARTBEAT_INTERVAL} must be less than {SESSION_TIMEOUT}")
    return out
