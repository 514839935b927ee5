"""Structured, levelled log output.

Text (the default), one line per event::

    2025-01-01T12:00:00.123 INFO    kbroker.group group g: generation 3 with 2 members conn=10.0.0.7:5123 group=g

or JSON lines with ``KBROKER_LOG_FORMAT=json`` (``{"ts": ..., "level": ..., "logger": ..., "msg": ...,
<context>}``), for log shippers.

Context comes from two places and is appended as ``key=value``: ``extra={"ctx": {...}}`` on a
single call, and :func:`bind` for everything logged inside a block (a connection's peer, a
group id)::

    with bind(conn=peer, client_id=client_id):
        log.info("request failed")

Values whose key looks like a secret (password, secret, token, sasl, credential, key material)
are never printed, whatever the caller passes.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import logging
import os
import re
import sys
from collections.abc import Iterator
from typing import Any

_context: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar("kbroker_log_context", default=None)
_SECRET = re.compile(r"pass(word)?|secret|token|sasl|credential|private|auth", re.I)


def looks_secret(key: str) -> bool:
    """Whether a setting or context key looks like it holds a secret (its value is never shown)."""
    return bool(_SECRET.search(key))
_BARE = re.compile(r"^[A-Za-z0-9_.:/@+*\-\[\]]*$")
REDACTED = "***"


@contextlib.contextmanager
def bind(**context: Any) -> Iterator[None]:
    """Add ``key=value`` context to every record logged in this block (and tasks started in it)."""
    current = _context.get() or {}
    token = _context.set({**current, **context})
    try:
        yield
    finally:
        _context.reset(token)


def current_context() -> dict[str, Any]:
    return dict(_context.get() or {})


def redact(context: dict[str, Any]) -> dict[str, Any]:
    return {k: (REDACTED if looks_secret(str(k)) else v) for k, v in context.items()}


def _record_context(record: logging.LogRecord) -> dict[str, Any]:
    context = dict(getattr(record, "kbroker_ctx", None) or {})
    extra = getattr(record, "ctx", None)
    if isinstance(extra, dict):
        context.update(extra)
    return redact(context)


def _quote(value: Any) -> str:
    text = str(value)
    return text if text and _BARE.match(text) else json.dumps(text)


class _ContextFilter(logging.Filter):
    """Captures the bound context when the record is created (the handler may run elsewhere)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not hasattr(record, "kbroker_ctx"):
            record.kbroker_ctx = _context.get()
        return True


class TextFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        base = f"{self.formatTime(record, '%Y-%m-%dT%H:%M:%S')}.{int(record.msecs):03d} {record.levelname:<7} " \
               f"{record.name} {record.getMessage()}"
        context = _record_context(record)
        if context:
            base += " " + " ".join(f"{k}={_quote(v)}" for k, v in context.items())
        if record.exc_info:
            base += "\n" + self.formatException(record.exc_info)
        return base


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        data: dict[str, Any] = {
            "ts": f"{self.formatTime(record, '%Y-%m-%dT%H:%M:%S')}.{int(record.msecs):03d}",
            "level": record.levelname, "logger": record.name, "msg": record.getMessage(),
        }
        for key, value in _record_context(record).items():
            data.setdefault(key, value if isinstance(value, int | float | bool) or value is None else str(value))
        if record.exc_info:
            data["exc"] = self.formatException(record.exc_info)
        return json.dumps(data)


# kept for callers of the old private name
_Formatter = TextFormatter


def configure_logging(level: str = "INFO", fmt: str | None = None) -> None:
    """Log to stderr at ``level`` in ``fmt`` ("text" or "json"; default ``$KBROKER_LOG_FORMAT`` or text)."""
    fmt = (fmt or os.environ.get("KBROKER_LOG_FORMAT") or "text").lower()
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else TextFormatter())
    handler.addFilter(_ContextFilter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
