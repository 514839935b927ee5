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
    """Accumulates stream bytes and yields complete frames (without the size prefix).

    A frame that arrives in many reads is collected as a list of chunks and
    joined once, so large produce requests cost one copy, not one per read.
    """

    __slots__ = ("_chunks", "_have", "_need", "error", "max_frame_bytes")

    def __init__(self, max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES) -> None:
        self._chunks: list[bytes] = []
        self._have = 0
        self._need = -1
        self.max_frame_bytes = max_frame_bytes
        #: set once the stream is unusable; frames before the bad one were still returned
        self.error: ProtocolError | None = None

    @property
    def buffered(self) -> int:
        return self._have

    def feed(self, data: bytes) -> list[bytes]:
        """Whole frames completed by ``data``.

        When the stream turns out to be malformed, the frames before the bad
        one are returned and :attr:`error` is set; feeding again raises it.
        """
        if self.error is not None:
            raise self.error
        frames: list[bytes] = []
        try:
            return self._feed(data, frames)
        except ProtocolError as exc:
            self.error = exc
            self._chunks = []
            self._have = 0
            if not frames:
                raise
            return frames

    def _feed(self, data: bytes, frames: list[bytes]) -> list[bytes]:
        if self._chunks:
            self._chunks.append(data)
            self._have += len(data)
            if self._need < 0 and self._have >= 4:
                head = b"".join(self._chunks)
                self._chunks = [head]
                self._need = self._frame_size(head, 0)
            if self._need < 0 or self._have < 4 + self._need:
                return frames
            data = b"".join(self._chunks)
            self._chunks = []
            self._have = 0
            self._need = -1
        pos = 0
        end = len(data)
        while end - pos >= 4:
            size = self._frame_size(data, pos)
            if end - pos - 4 < size:
                break
            frames.append(data[pos + 4 : pos + 4 + size])
            pos += 4 + size
        if pos < end:
            rest = data[pos:]
            self._chunks = [rest]
            self._have = len(rest)
            self._need = self._frame_size(rest, 0) if len(rest) >= 4 else -1
        return frames

    def _frame_size(self, buf: bytes, pos: int) -> int:
        (size,) = _size.unpack_from(buf, pos)
        if size < 0 or size > self.max_frame_bytes:
            raise ProtocolError(f"frame size {size} outside 0..{self.max_frame_bytes}")
        return size
