"""Exceptions raised by the codec layer.

Every malformed input — truncated frames, negative or oversized lengths,
invalid UTF-8, out-of-order tags, absurd array counts — surfaces as a single
type, :class:`ProtocolError`, so callers have exactly one thing to catch.
"""


class ProtocolError(ValueError):
    """Bytes that do not decode as the message they claim to be."""


class UnsupportedVersionError(ProtocolError):
    """A request names an API key or version this side does not speak."""

    def __init__(self, api_key: int, api_version: int, message: str | None = None) -> None:
        super().__init__(message or f"unsupported api_key={api_key} version={api_version}")
        self.api_key = api_key
        self.api_version = api_version


class UnknownFieldError(Exception):
    """Strict encoding (on when the tests run, see :func:`protocol.schema.set_strict`): a dict handed
    to the encoder has a key that no version of its message or struct has a field for.

    Not a :class:`ProtocolError`: it is a bug in the code that built the dict, never bad input."""
