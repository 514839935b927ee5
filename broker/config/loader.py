"""Loading the broker's settings: defaults < TOML file < ``KBROKER_*`` environment < flags, then validation.

Precedence, lowest to highest: the declared defaults, the TOML file (``--config``), environment
variables (``KBROKER_PORT=9093``), command-line flags (``--port``, ``--set KEY=VALUE``).

The known keys are exactly the settings declared in :mod:`broker.config.settings`, and each value is
parsed by its declared type.  A key that names none of them — in ``--set``, the TOML file or a
``KBROKER_*`` variable — is refused with :class:`ConfigError` naming the key and the closest known
one, as is a value that does not parse; ``python -m broker`` prints that one line and exits with code 2.

:func:`validate` runs each setting's validator and the cross-checks between settings of this package;
the cross-checks owned by packages above it (the log's topic configs, security, the assignors) are
handed in as ``checks`` by the composition root (:func:`broker.core.load_config`).
"""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import os
import tomllib
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from broker.config.declare import BOOLEAN, DOUBLE, INT, LONG, SHORT, ConfigError, Setting
from broker.config.settings import (
    ENV_PREFIX,
    FIELD_SETTINGS,
    NON_SETTING_ENV,
    BrokerConfig,
    by_attr,
    normalise,
    setting_name,
    split_list,
)

__all__ = ["Check", "ConfigError", "build_arg_parser", "from_env", "from_mapping", "from_toml", "load",
           "parse_setting", "validate"]

#: A cross-check of the settings owned by a package above this one: raises ValueError naming the setting.
Check = Callable[[BrokerConfig], None]

_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")
_INTEGERS = (INT, SHORT, LONG)


def _coerce(s: Setting, raw: Any, key: str, source: str) -> Any:
    if raw is None or (isinstance(raw, str) and raw.strip().lower() in ("none", "null") and s.nullable):
        if not s.nullable:
            raise ConfigError(f"setting {key!r} ({source}) cannot be empty")
        return None
    if s.type == BOOLEAN:
        if isinstance(raw, bool):
            return raw
        word = str(raw).strip().lower()
        if word in _TRUE or word in _FALSE:
            return word in _TRUE
        raise ConfigError(f"setting {key!r} ({source}): {raw!r} is not a boolean (true/false)")
    if s.type == DOUBLE:
        if isinstance(raw, bool):
            raise ConfigError(f"setting {key!r} ({source}): {raw!r} is not a number")
        try:
            value = float(raw.strip()) if isinstance(raw, str) else float(raw)
        except (TypeError, ValueError):
            raise ConfigError(f"setting {key!r} ({source}): {raw!r} is not a number") from None
        if value != value:
            raise ConfigError(f"setting {key!r} ({source}): {raw!r} is not a number")
        return value
    if s.type in _INTEGERS:
        if isinstance(raw, bool) or (isinstance(raw, float) and not raw.is_integer()):
            raise ConfigError(f"setting {key!r} ({source}): {raw!r} is not an integer")
        try:
            return int(raw.strip()) if isinstance(raw, str) else int(raw)
        except (TypeError, ValueError):
            raise ConfigError(f"setting {key!r} ({source}): {raw!r} is not an integer") from None
    return str(raw)


def _spelled_like(name: str, key: str, source: str) -> str:
    """Field ``name`` written the way the user wrote ``key`` (dots, dashes, underscores, env)."""
    if source == "environment":
        return ENV_PREFIX + name.upper()
    if "." in key:
        return name.replace("_", ".")
    if "-" in key:
        return name.replace("_", "-")
    return name


def _unknown(key: str, name: str, source: str) -> ConfigError:
    close = difflib.get_close_matches(name, [s.attr or "" for s in FIELD_SETTINGS], n=1, cutoff=0.6)
    hint = f"; did you mean {_spelled_like(close[0], key, source)!r}?" if close else ""
    return ConfigError(f"unknown setting {key!r} ({source}){hint}")


def parse_setting(key: str, raw: Any, source: str = "setting") -> Any:
    """The typed value of one setting (ConfigError for an unknown key or a value that does not parse)."""
    name = setting_name(key)
    if name is None:
        raise _unknown(key, normalise(key), source)
    return _coerce(by_attr(name), raw, key, source)


def _apply(pairs: list[tuple[str, str, Any]], base: BrokerConfig | None, source: str) -> BrokerConfig:
    """Apply ``(key as written, attribute, raw value)`` triples; unknown names raise ConfigError."""
    updates: dict[str, Any] = {}
    for key, name, raw in pairs:
        if setting_name(name) is None:
            raise _unknown(key, name, source)
        updates[name] = _coerce(by_attr(name), raw, key, source)
    return dataclasses.replace(base or BrokerConfig(), **updates)


def from_mapping(values: Mapping[str, Any], base: BrokerConfig | None = None, *,
                 source: str = "setting") -> BrokerConfig:
    """Apply ``values`` (keys like ``port``, ``log.retention.ms`` or ``log-retention-ms``).

    Raises :class:`ConfigError` naming the key (and the closest known one) for an unknown
    setting, and for a value that does not parse as the setting's type.
    """
    return _apply([(key, normalise(key), raw) for key, raw in values.items()], base, source)


def from_toml(path: str | Path, base: BrokerConfig | None = None) -> BrokerConfig:
    """Apply a TOML file: top-level keys, a ``[broker]`` table, or tables as prefixes (``[log]``)."""
    try:
        with open(path, "rb") as fh:
            data = tomllib.load(fh)
    except OSError as exc:
        raise ConfigError(f"cannot read configuration file {path}: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"configuration file {path} is not valid TOML: {exc}") from None
    pairs: list[tuple[str, str, Any]] = []

    def walk(path_parts: tuple[str, ...], node: dict[str, Any]) -> None:
        for key, value in node.items():
            parts = (*path_parts, key) if path_parts != ("broker",) else (key,)
            if isinstance(value, dict):
                walk(parts, value)
            else:
                written = ".".join(parts)
                pairs.append((written, normalise("_".join(parts)), value))

    walk((), data)
    return _apply(pairs, base, f"in {path}")


def from_env(environ: Mapping[str, str] | None = None, base: BrokerConfig | None = None) -> BrokerConfig:
    """Apply ``KBROKER_*`` variables (``KBROKER_LOG_RETENTION_MS``); see :data:`NON_SETTING_ENV`."""
    env = os.environ if environ is None else environ
    pairs = [(k, normalise(k[len(ENV_PREFIX):]), v) for k, v in sorted(env.items())
             if k.startswith(ENV_PREFIX) and k not in NON_SETTING_ENV]
    return _apply(pairs, base, "environment")


#: settings that have a flag of their own (``--data-dir``); any other is given with ``--set``
FLAGS = ("host", "port", "data_dir", "metrics_port", "console_port", "advertised_listener", "node_id", "cluster",
         "log_level")
_METAVARS = {"cluster": "etcd://HOST:PORT[,HOST:PORT...]", "console_port": "PORT|none"}


def _flag_help(s: Setting) -> str:
    return f"{s.plain_doc} Default: {s.shown_default.replace('`', '')} ({ENV_PREFIX}{(s.attr or '').upper()})."


def build_arg_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m broker", description="kbroker: a Kafka-protocol broker")
    parser.add_argument("--config", help="TOML configuration file (KBROKER_CONFIG)")
    for attr in FLAGS:
        s = by_attr(attr)
        parser.add_argument("--" + attr.replace("_", "-"), type=int if s.type in _INTEGERS else None,
                            metavar=_METAVARS.get(attr), help=_flag_help(s))
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="any other setting, e.g. --set group.initial.rebalance.delay.ms=0")
    return parser


def load(argv: list[str] | None = None, environ: Mapping[str, str] | None = None, *,
         checks: Sequence[Check] = ()) -> BrokerConfig:
    """Build the configuration for the command line ``python -m broker``, validated with ``checks`` too.

    A usage error (an unknown setting, a value that does not parse or does not validate, an unreadable
    file) prints one line naming it and exits with code 2, as argparse does for a bad flag.
    """
    parser = build_arg_parser()
    args = parser.parse_args(argv)
    try:
        return _load(args, os.environ if environ is None else environ, checks)
    except ConfigError as exc:
        parser.exit(2, f"{parser.prog}: error: {exc}\n")


def _load(args: argparse.Namespace, env: Mapping[str, str], checks: Sequence[Check]) -> BrokerConfig:
    config = BrokerConfig(**{s.attr or "": s.command_default for s in FIELD_SETTINGS
                             if s.command_default is not None})
    config_file = args.config or env.get("KBROKER_CONFIG")
    if config_file:
        config = from_toml(config_file, config)
    config = from_env(env, config)
    flags = {attr: getattr(args, attr) for attr in FLAGS}
    config = from_mapping({k: v for k, v in flags.items() if v is not None}, config)
    settings: dict[str, str] = {}
    for item in args.set:
        key, sep, value = item.partition("=")
        if not sep:
            raise ConfigError(f"--set expects KEY=VALUE, got {item!r}")
        settings[key] = value
    config = from_mapping(settings, config, source="--set")
    if config.metrics_port == 0:
        config.metrics_port = None
    validate(config, checks)
    return config


def validate(config: BrokerConfig, checks: Sequence[Check] = ()) -> None:
    """Every setting's validator, the cross-checks between settings, then ``checks`` (the cross-checks
    of the packages above this one, see the module docstring); :class:`ConfigError` for the first failure."""
    for s in FIELD_SETTINGS:
        try:
            s.check(getattr(config, s.attr or ""))
        except ValueError as exc:
            raise ConfigError(f"{s.name} {exc}") from None
    if config.etcd_request_timeout_ms is not None and not \
            1 <= config.etcd_request_timeout_ms <= config.broker_session_timeout_ms // 3:
        raise ConfigError(f"etcd.request.timeout.ms ({config.etcd_request_timeout_ms}) must be between 1 and a third "
                          f"of broker.session.timeout.ms ({config.broker_session_timeout_ms // 3})")
    _validate_consumer_groups(config)
    for check in checks:
        try:
            check(config)
        except ConfigError:
            raise
        except ValueError as exc:
            raise ConfigError(str(exc)) from None


def _validate_consumer_groups(config: BrokerConfig) -> None:
    """Kafka's GroupCoordinatorConfig checks of the ``group.consumer.*`` settings."""
    c = config
    for name in ("heartbeat_interval_ms", "session_timeout_ms"):
        value = getattr(c, f"group_consumer_{name}")
        low, high = getattr(c, f"group_consumer_min_{name}"), getattr(c, f"group_consumer_max_{name}")
        dotted = name.replace("_", ".")
        if not low <= value <= high:
            raise ConfigError(f"group.consumer.{dotted} ({value}) must be between group.consumer.min.{dotted} "
                              f"({low}) and group.consumer.max.{dotted} ({high})")
    if c.group_consumer_heartbeat_interval_ms >= c.group_consumer_session_timeout_ms:
        raise ConfigError("group.consumer.heartbeat.interval.ms must be less than group.consumer.session.timeout.ms")
    if not split_list(c.group_consumer_assignors):
        raise ConfigError("group.consumer.assignors must name at least one assignor")
