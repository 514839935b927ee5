"""Broker loggers as Kafka's BROKER_LOGGER config resource: read and change log levels at runtime.

DescribeConfigs lists this broker's loggers (the root logger and every ``kbroker*`` one) with their
effective level in Kafka's names; IncrementalAlterConfigs sets a logger's level (SET) or lets it
inherit its parent's again (DELETE), as Kafka's ``RuntimeLoggerManager`` does.  Levels are not
persisted: a restart starts from the configured ``log.level``.
"""

from __future__ import annotations

import logging

__all__ = ["KAFKA_LEVELS", "LoggerConfigError", "describe_loggers", "set_logger_level"]

ROOT = "root"
OFF = logging.CRITICAL + 10
#: Kafka's (log4j's) level names -> Python's levels
KAFKA_LEVELS = {"TRACE": logging.DEBUG, "DEBUG": logging.DEBUG, "INFO": logging.INFO, "WARN": logging.WARNING,
                "ERROR": logging.ERROR, "FATAL": logging.CRITICAL, "OFF": OFF}
_NAMES = {logging.DEBUG: "DEBUG", logging.INFO: "INFO", logging.WARNING: "WARN", logging.ERROR: "ERROR",
          logging.CRITICAL: "FATAL", OFF: "OFF"}


class LoggerConfigError(ValueError):
    """An unknown logger or level (INVALID_CONFIG, as Kafka answers)."""


def _loggers() -> dict[str, logging.Logger]:
    found = {ROOT: logging.getLogger()}
    for name, obj in sorted(logging.Logger.manager.loggerDict.items()):
        if name.startswith("kbroker") and isinstance(obj, logging.Logger):
            found[name] = obj
    return found


def _name(level: int) -> str:
    return _NAMES.get(level, logging.getLevelName(level))


def describe_loggers() -> dict[str, tuple[str, bool]]:
    """Logger name -> (its effective level in Kafka's names, whether it was set on that logger)."""
    return {name: (_name(lg.getEffectiveLevel()), lg.level != logging.NOTSET) for name, lg in _loggers().items()}


def set_logger_level(name: str, level: str | None, *, validate_only: bool = False) -> None:
    """SET ``name`` to a Kafka level name, or (``level`` None) DELETE its own level; the root logger
    cannot lose its level.  Raises :class:`LoggerConfigError`."""
    logger = _loggers().get(name)
    if logger is None:
        raise LoggerConfigError(f"Logger {name} does not exist!")
    if level is None:
        if name == ROOT:
            raise LoggerConfigError("Removing the log level of the root logger is not allowed")
        if not validate_only:
            logger.setLevel(logging.NOTSET)
        return
    python_level = KAFKA_LEVELS.get(level.strip().upper())
    if python_level is None:
        raise LoggerConfigError(f"Cannot set the log level of {name} to {level} as it is not a supported log level. "
                                f"Valid log levels are {', '.join(KAFKA_LEVELS)}")
    if not validate_only:
        logger.setLevel(python_level)
