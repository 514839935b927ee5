"""Structured, levelled log output: ``time level logger key=value message``."""

from __future__ import annotations

import logging
import sys


class _Formatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        base = f"{self.formatTime(record, '%Y-%m-%dT%H:%M:%S')}.{int(record.msecs):03d} {record.levelname:<7} " \
               f"{record.name} {record.getMessage()}"
        context = getattr(record, "ctx", None)
        if context:
            base += " " + " ".join(f"{k}={v}" for k, v in context.items())
        if record.exc_info:
            base += "\n" + self.formatException(record.exc_info)
        return base


def configure_logging(level: str = "INFO") -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_Formatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
