"""Dynamic broker configuration (Kafka's ``DynamicBrokerConfig``): broker settings changed at runtime.

A broker setting has up to four layers, the first present wins:

1. dynamic, for this broker (``broker_configs/<id>`` in the metadata store);
2. dynamic, the cluster-wide default (``broker_configs/default``);
3. static: the TOML file, ``KBROKER_*`` environment and flags the broker started with;
4. the built-in default.

The dynamic layers are cluster metadata (:mod:`broker.cluster.records`), so they reach every broker
through its metadata image and survive restarts.  :class:`DynamicBrokerConfig` is the pure part:
it validates a proposed layer the way Kafka does (only settings declared dynamic may change —
:data:`~broker.config.settings.DYNAMIC_SETTINGS` and :data:`~broker.config.settings.DYNAMIC_WITHOUT_EFFECT`;
per-broker-only ones never as the default; values must parse and the resulting configuration must
pass the same validation as at start, the composition root's ``checks`` included), and when the image
brings new layers it writes the effective values into the broker's live :class:`BrokerConfig` and
reports what changed, so the owner can re-derive what was computed from them (the topic defaults of
the logs, the components' settings objects).

Kafka's hour and minute spellings (``log.retention.hours``, ``log.roll.hours``, ...) are folded
into the millisecond setting of the same layer, below an explicit ``*.ms`` of that layer.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from broker.config.declare import DOUBLE, STRING, ConfigError, Setting
from broker.config.loader import Check, parse_setting, validate
from broker.config.settings import (
    DYNAMIC_SETTINGS,
    FIELD_SETTINGS,
    PER_BROKER_ONLY,
    SPELLINGS,
    BrokerConfig,
    declared,
    is_dynamic,
    setting_name,
    text,
)
from protocol.error_codes import ErrorCode

log = logging.getLogger("kbroker.config")

__all__ = [
    "DEFAULT_CONFIG",
    "DYNAMIC_BROKER_CONFIG",
    "DYNAMIC_DEFAULT_BROKER_CONFIG",
    "DYNAMIC_TOPIC_CONFIG",
    "READ_ONLY_NAMES",
    "STATIC_BROKER_CONFIG",
    "DynamicBrokerConfig",
    "DynamicConfigError",
    "unit_synonyms",
]

# Kafka's ConfigSource, as DescribeConfigs reports it
DYNAMIC_TOPIC_CONFIG, DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG = 1, 2, 3
STATIC_BROKER_CONFIG, DEFAULT_CONFIG = 4, 5

#: Names DescribeConfigs reports for a broker that are not settings of their own here (or that Kafka
#: reports under these names): read-only, so changing one is refused as not dynamic, not as unknown.
READ_ONLY_NAMES = frozenset({
    "broker.id", "listeners", "advertised.listeners", "log.dirs", "log.dir", "socket.request.max.bytes",
    "process.roles", "controller.quorum.voters", "inter.broker.listener.name",
})


@dataclass
class DynamicConfigError(Exception):
    """A proposed dynamic config Kafka would refuse; ``code`` is the resource's error code."""

    code: int
    message: str

    def __str__(self) -> str:
        return self.message


def unit_synonyms(name: str) -> list[str]:
    """Kafka's coarser spellings of the millisecond setting ``name`` (``log.retention.ms`` ->
    ``log.retention.minutes``, ``log.retention.hours``), lowest precedence last."""
    return [k for k, (target, _) in SPELLINGS.items() if target == name]


def _fold_units(layer: Mapping[str, str]) -> dict[str, str]:
    """A layer with ``*.hours``/``*.minutes`` turned into the ms setting (an explicit ms one wins)."""
    out = {k: v for k, v in layer.items() if k not in SPELLINGS}
    for name, (target, unit) in SPELLINGS.items():
        if name in layer and target not in out:
            try:
                out[target] = str(int(layer[name].strip()) * unit)
            except ValueError:
                out[target] = layer[name]  # refused by the ms setting's parser with its own message
    return out


class DynamicBrokerConfig:
    """The dynamic layers of one broker's configuration over its static one (see the module doc).

    ``static`` is the configuration the broker started with (kept unchanged); ``live`` is the object
    the broker's components share, updated in place by :meth:`update`; ``checks`` are the cross-checks
    the composition root runs at start (:func:`broker.config.loader.validate`), run on every change too.
    """

    def __init__(self, static: BrokerConfig, live: BrokerConfig, *, checks: Sequence[Check]) -> None:
        self.static = dataclasses.replace(static)
        self.live = live
        self.checks = tuple(checks)
        self.cluster_default: dict[str, str] = {}
        self.per_broker: dict[str, str] = {}

    # -- validation ----------------------------------------------------------------------------
    def validate(self, layer: Mapping[str, str], *, per_broker: bool) -> dict[str, str]:
        """Check a complete proposed layer (per-broker or the cluster default) as Kafka would; returns it
        normalised.  Raises :class:`DynamicConfigError` (INVALID_REQUEST, Kafka's code for every broker
        config it refuses)."""
        names = set(layer)
        not_dynamic = sorted(n for n in names if not is_dynamic(n))
        unknown = [n for n in not_dynamic if setting_name(n) is None and n not in READ_ONLY_NAMES]
        if unknown:
            raise DynamicConfigError(ErrorCode.INVALID_REQUEST, f"Unknown broker configs: {', '.join(unknown)}")
        if not_dynamic:
            raise DynamicConfigError(ErrorCode.INVALID_REQUEST,
                                     f"Cannot update these configs dynamically: {', '.join(not_dynamic)}")
        if not per_broker:
            only = sorted(names & PER_BROKER_ONLY)
            if only:
                raise DynamicConfigError(ErrorCode.INVALID_REQUEST,
                                         "Cannot update these configs at default cluster level, broker id must "
                                         f"be specified: {', '.join(only)}")
        normalised = {}
        for name, value in layer.items():
            normalised[name] = self._check_value(name, value)
        default, mine = (self.cluster_default, normalised) if per_broker else (normalised, self.per_broker)
        try:
            self._effective(default, mine, strict=True)
        except ConfigError as exc:
            raise DynamicConfigError(ErrorCode.INVALID_REQUEST, str(exc)) from None
        return normalised

    @staticmethod
    def _check_value(name: str, value: str) -> str:
        s = declared(name)
        assert s is not None  # is_dynamic(name)
        if s.attr is None:  # a coarser spelling or a config stored without effect
            return _parse_kafka_style(s, value)
        try:
            return text(parse_setting(name, value, "dynamic config"))
        except ConfigError as exc:
            raise DynamicConfigError(ErrorCode.INVALID_REQUEST,
                                     f"Invalid value {value} for configuration {name}: {exc}") from None

    # -- applying ----------------------------------------------------------------------------
    def _effective(self, cluster_default: Mapping[str, str], per_broker: Mapping[str, str], *,
                   strict: bool) -> BrokerConfig:
        """The effective configuration for these dynamic layers (``strict``: raise on a bad value,
        else skip it with an error in the log, as Kafka ignores invalid stored dynamic configs)."""
        updates: dict[str, Any] = {}
        for layer in (_fold_units(cluster_default), _fold_units(per_broker)):
            for name, value in layer.items():
                field = setting_name(name)
                if field is None or name not in DYNAMIC_SETTINGS:
                    continue
                try:
                    updates[field] = parse_setting(name, value, "dynamic config")
                except ConfigError:
                    if strict:
                        raise
                    log.error("ignoring the invalid dynamic broker config %s=%r", name, value)
        effective = dataclasses.replace(self.static, **updates)
        try:
            validate(effective, self.checks)
        except ConfigError:
            if strict:
                raise
            log.error("the dynamic broker configs do not hold together; keeping the static configuration",
                      exc_info=True)
            return dataclasses.replace(self.static)
        return effective

    def update(self, cluster_default: Mapping[str, str], per_broker: Mapping[str, str]) -> set[str]:
        """New dynamic layers from the metadata image: update the live configuration in place and
        return the settings (Kafka names) whose effective value changed."""
        self.cluster_default = dict(cluster_default)
        self.per_broker = dict(per_broker)
        effective = self._effective(self.cluster_default, self.per_broker, strict=False)
        changed = set()
        for s in FIELD_SETTINGS:
            attr = s.attr or ""
            value = getattr(effective, attr)
            if getattr(self.live, attr) != value:
                setattr(self.live, attr, value)
                changed.add(s.name)
        if changed:
            log.info("dynamic broker configs changed: %s", ", ".join(sorted(changed)))
        return changed

    # -- describing ----------------------------------------------------------------------------
    def layers(self, name: str) -> list[tuple[str | None, int]]:
        """Where ``name``'s value comes from: (value, ConfigSource) of every layer that sets it,
        highest first, ending with the static or built-in default."""
        out: list[tuple[str | None, int]] = []
        for layer, source in ((self.per_broker, DYNAMIC_BROKER_CONFIG),
                              (self.cluster_default, DYNAMIC_DEFAULT_BROKER_CONFIG)):
            if name in layer:
                out.append((layer[name], source))
        s = declared(name)
        if s is not None and s.attr is not None:
            static = getattr(self.static, s.attr)
            if static != s.default:
                out.append((None if static is None else text(static), STATIC_BROKER_CONFIG))
            out.append((None if s.default is None else text(s.default), DEFAULT_CONFIG))
        return out

    def dynamic_names(self) -> set[str]:
        return set(self.per_broker) | set(self.cluster_default)


def _parse_kafka_style(s: Setting, value: str) -> str:
    """A dynamic config with no setting here, checked as Kafka's ConfigDef would: its type, its validator."""
    raw = str(value).strip()
    if s.type == STRING:
        return raw
    try:
        number: float = float(raw) if s.type == DOUBLE else int(raw)
    except ValueError:
        raise DynamicConfigError(ErrorCode.INVALID_REQUEST,
                                 f"Invalid value {value} for configuration {s.name}: Not a number of type "
                                 f"{s.type_name}") from None
    try:
        s.check(number)
    except ValueError as exc:
        raise DynamicConfigError(ErrorCode.INVALID_REQUEST,
                                 f"Invalid value {value} for configuration {s.name}: Value {exc}") from None
    return raw
