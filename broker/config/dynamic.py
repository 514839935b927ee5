"""Dynamic broker configuration (Kafka's ``DynamicBrokerConfig``): broker settings changed at runtime.

A broker setting has up to four layers, the first present wins:

1. dynamic, for this broker (``broker_configs/<id>`` in the metadata store);
2. dynamic, the cluster-wide default (``broker_configs/default``);
3. static: the TOML file, ``KBROKER_*`` environment and flags the broker started with;
4. the built-in default.

The dynamic layers are cluster metadata (:mod:`broker.cluster.records`), so they reach every broker
through its metadata image and survive restarts.  :class:`DynamicBrokerConfig` is the pure part:
it validates a proposed layer the way Kafka does (only :data:`broker.config.settings.DYNAMIC_SETTINGS` and
:data:`broker.config.settings.DYNAMIC_WITHOUT_EFFECT` may change; per-broker-only ones never as the default;
values must parse and the resulting configuration must hold together), and when the image brings
new layers it writes the effective values into the broker's live :class:`BrokerConfig` — the one
object every component reads its limits from — and reports what changed, so the owner can
re-derive what was computed from them (the topic defaults of the logs, the cleaner's settings).

Kafka's hour and minute spellings (``log.retention.hours``, ``log.roll.hours``, ...) are folded
into the millisecond setting of the same layer, below an explicit ``*.ms`` of that layer.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from broker.config.settings import (
    DYNAMIC_SETTINGS,
    DYNAMIC_WITHOUT_EFFECT,
    PER_BROKER_ONLY,
    BrokerConfig,
    ConfigError,
    is_dynamic,
    parse_setting,
    setting_name,
    validate,
)
from broker.log.config import TOPIC_CONFIGS, InvalidConfigError, validate_topic_configs
from protocol.error_codes import ErrorCode

if TYPE_CHECKING:
    from broker.security.listeners import Endpoint

log = logging.getLogger("kbroker.config")

__all__ = [
    "DEFAULT_CONFIG",
    "DYNAMIC_BROKER_CONFIG",
    "DYNAMIC_DEFAULT_BROKER_CONFIG",
    "DYNAMIC_TOPIC_CONFIG",
    "STATIC_BROKER_CONFIG",
    "DynamicBrokerConfig",
    "DynamicConfigError",
    "broker_log_defaults",
    "kafka_settings",
    "read_only_aliases",
    "unit_synonyms",
]

# Kafka's ConfigSource, as DescribeConfigs reports it
DYNAMIC_TOPIC_CONFIG, DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG = 1, 2, 3
STATIC_BROKER_CONFIG, DEFAULT_CONFIG = 4, 5

#: Kafka's coarser spellings of a millisecond setting, with their unit in ms.
_UNIT_SYNONYMS: dict[str, tuple[str, int]] = {
    "log.retention.minutes": ("log.retention.ms", 60_000),
    "log.retention.hours": ("log.retention.ms", 3_600_000),
    "log.roll.hours": ("log.roll.ms", 3_600_000),
    "log.roll.jitter.hours": ("log.roll.jitter.ms", 3_600_000),
}


@dataclass
class DynamicConfigError(Exception):
    """A proposed dynamic config Kafka would refuse; ``code`` is the resource's error code."""

    code: int
    message: str

    def __str__(self) -> str:
        return self.message


def _kafka_name(field: str) -> str:
    return field.replace("_", ".")


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def kafka_settings(config: BrokerConfig) -> dict[str, str]:
    """Every setting of ``config`` under its Kafka-style dotted name, as text (unset ones left out)."""
    out = {}
    for f in dataclasses.fields(config):
        value = getattr(config, f.name)
        if value is not None:
            out[_kafka_name(f.name)] = _text(value)
    return out


def unit_synonyms(name: str) -> list[str]:
    """Kafka's coarser spellings of the millisecond setting ``name`` (``log.retention.ms`` ->
    ``log.retention.minutes``, ``log.retention.hours``), lowest precedence last."""
    return [k for k, (target, _) in _UNIT_SYNONYMS.items() if target == name]


def _fold_units(layer: Mapping[str, str]) -> dict[str, str]:
    """A layer with ``*.hours``/``*.minutes`` turned into the ms setting (an explicit ms one wins)."""
    out = {k: v for k, v in layer.items() if k not in _UNIT_SYNONYMS}
    for name in ("log.retention.minutes", "log.retention.hours", "log.roll.hours", "log.roll.jitter.hours"):
        if name in layer:
            target, unit = _UNIT_SYNONYMS[name]
            if target not in out:
                try:
                    out[target] = str(int(layer[name].strip()) * unit)
                except ValueError:
                    out[target] = layer[name]  # refused by the ms setting's parser with its own message
    return out


def broker_log_defaults(config: BrokerConfig) -> dict[str, str]:
    """The topic-config defaults a broker configuration gives (Kafka's ``ServerTopicConfigSynonyms``):
    ``retention.ms`` from ``log.retention.ms``, ``max.message.bytes`` from ``message.max.bytes``, ..."""
    settings = kafka_settings(config)
    defaults = {}
    for name, d in TOPIC_CONFIGS.items():
        for synonym, unit in d.synonyms:
            if synonym in settings:
                value = settings[synonym]
                defaults[name] = value if unit == 1 else str(int(value) * unit)
                break
    return defaults


class DynamicBrokerConfig:
    """The dynamic layers of one broker's configuration over its static one (see the module doc).

    ``static`` is the configuration the broker started with (kept unchanged); ``live`` is the object
    the broker's components share, updated in place by :meth:`update`.
    """

    def __init__(self, static: BrokerConfig, live: BrokerConfig) -> None:
        self.static = dataclasses.replace(static)
        self.live = live
        self.cluster_default: dict[str, str] = {}
        self.per_broker: dict[str, str] = {}

    # -- validation ----------------------------------------------------------------------------
    def validate(self, layer: Mapping[str, str], *, per_broker: bool) -> dict[str, str]:
        """Check a complete proposed layer (per-broker or the cluster default) as Kafka would; returns it
        normalised.  Raises :class:`DynamicConfigError` (INVALID_REQUEST, Kafka's code for every broker
        config it refuses)."""
        names = set(layer)
        not_dynamic = sorted(n for n in names if not is_dynamic(n) and n not in _UNIT_SYNONYMS)
        unknown = [n for n in not_dynamic if setting_name(n) is None and n not in _READ_ONLY_ALIASES]
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
        except (ConfigError, InvalidConfigError) as exc:
            raise DynamicConfigError(ErrorCode.INVALID_REQUEST, str(getattr(exc, "detail", "") or exc)) from None
        return normalised

    @staticmethod
    def _check_value(name: str, value: str) -> str:
        try:
            if name in DYNAMIC_WITHOUT_EFFECT:
                return _parse_typed(name, value, DYNAMIC_WITHOUT_EFFECT[name])
            if name in _UNIT_SYNONYMS:
                return _parse_typed(name, value, "long")
            if setting_name(name) is not None:
                return _text(parse_setting(name, value, "dynamic config"))
            # a topic-default synonym without a static setting (log.local.retention.ms, ...)
            topic = next(t for t, d in TOPIC_CONFIGS.items() if any(s == name for s, _ in d.synonyms))
            return validate_topic_configs({topic: value})[topic]
        except (ConfigError, InvalidConfigError) as exc:
            raise DynamicConfigError(ErrorCode.INVALID_REQUEST,
                                     f"Invalid value {value} for configuration {name}: "
                                     f"{getattr(exc, 'detail', '') or exc}") from None

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
            validate(effective)
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
        for f in dataclasses.fields(effective):
            value = getattr(effective, f.name)
            if getattr(self.live, f.name) != value:
                setattr(self.live, f.name, value)
                changed.add(_kafka_name(f.name))
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
        field = setting_name(name)
        if field is not None:
            static = getattr(self.static, field)
            default = _FIELD_DEFAULTS.get(field)
            value = None if static is None else _text(static)
            if static != default:
                out.append((value, STATIC_BROKER_CONFIG))
            out.append((None if default is None else _text(default), DEFAULT_CONFIG))
        return out

    def dynamic_names(self) -> set[str]:
        return set(self.per_broker) | set(self.cluster_default)


def _parse_typed(name: str, value: str, kind: str) -> str:
    text = str(value).strip()
    if kind == "string":
        return text
    try:
        number: float = float(text) if kind == "double" else int(text)
    except ValueError:
        raise DynamicConfigError(ErrorCode.INVALID_REQUEST,
                                 f"Invalid value {value} for configuration {name}: Not a number of type "
                                 f"{kind.upper()}") from None
    if kind in ("int", "short") and (number < 1 if name.endswith("threads") or name.startswith("num.")
                                     else number < 0):
        raise DynamicConfigError(ErrorCode.INVALID_REQUEST,
                                 f"Invalid value {value} for configuration {name}: Value must be at least 1")
    return text


_FIELD_DEFAULTS: dict[str, Any] = {f.name: f.default for f in dataclasses.fields(BrokerConfig)
                                   if f.default is not dataclasses.MISSING}

#: Names DescribeConfigs reports for a broker that are not settings of their own here: read-only.
_READ_ONLY_ALIASES = frozenset({
    "broker.id", "listeners", "advertised.listeners", "log.dirs", "log.dir", "socket.request.max.bytes",
    "process.roles", "controller.quorum.voters", "inter.broker.listener.name",
})


def read_only_aliases(config: BrokerConfig, endpoints: Sequence[Endpoint], port: int) -> dict[str, str | None]:
    """Kafka's names for settings this broker spells otherwise (reported read-only by DescribeConfigs):
    ``endpoints`` are its advertised listeners as registered, ``port`` the one the asking client reached."""
    from broker.security.setup import inter_broker_listener_name

    plaintext = f"PLAINTEXT://{config.host}:{port}"
    return {
        "broker.id": str(config.node_id),
        "listeners": config.listeners or plaintext,
        "advertised.listeners": ",".join(f"{e.listener}://{e.host}:{e.port}" for e in endpoints) or plaintext,
        "inter.broker.listener.name": inter_broker_listener_name(config),
        "log.dirs": str(config.data_path), "log.dir": str(config.data_path),
        "socket.request.max.bytes": str(config.max_frame_bytes),
    }

