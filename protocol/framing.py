"""Size-prefixed frame splitting for a byte stream (sans-IO).

Feed bytes as they arrive; get back whole frames.  A negative size or one
above the configured limit raises :class:`ProtocolError` before any buffer of
that size is allocated, so the caller can close the connection.
"""

from __future__ import annotations

import struct

from protocol.errors import ProtocolError

_size = struct.Struct(">i")

DEFAULT_MAX_FRAME_BYTES = 100 * 1024 * 1024


class FrameDecoder:
    """Accumulates stream bytes and yields complete frames (without the size prefix)."""

    __slots__ = ("_buf", "max_frame_bytes")

    def __init__(self, max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES) -> None:
        self._buf = bytearray()
        self.max_frame_bytes = max_frame_bytes

    @property
    def buffered(self) -> int:
        return len(self._buf)

    def feed(self, data: bytes) -> list[bytes]:
        buf = self._buf
        buf += data
        frames: list[bytes] = []
        pos = 0
        end = len(buf)
        while end - pos >= 4:
            (size,) = _size.unpack_from(buf, pos)
            if size < 0 or size > self.max_frame_bytes:
                raise ProtocolError(f"frame size {size} outside 0..{self.max_frame_bytes}")
            if end - pos - 4 < size:
                break
            frames.append(bytes(buf[pos + 4 : pos + 4 + size]))
            pos += 4 + size
        if pos:
            del buf[:pos]
        return frames
