"""Size-prefixed frame splitting for a byte stream (sans-IO).

:class:`FrameReceiver` is the receive side of a connection as buffers: the
edge asks :meth:`~FrameReceiver.get_buffer` where the next bytes should go
(``asyncio.BufferedProtocol.get_buffer``), reads into it, and reports how many
arrived with :meth:`~FrameReceiver.received`, which returns the frames they
completed.  Small frames are read many at a time into a scratch buffer (which
connections of one event loop may share: only the bytes of a frame not
complete yet are kept per connection) and copied out; a frame too big for the
scratch buffer gets a buffer of its own, sized by its header, and the rest of
it is read straight into that buffer, so a large request crosses user space
once.  Every frame is a ``bytearray`` the caller owns (it may be modified in
place, e.g. to stamp offsets into a record batch).

A negative size or one above the configured limit is an error before any
buffer of that size is allocated, and a frame's own buffer is only allocated
when more of it is about to be read (never for a bare header), starting at
``initial_frame_bytes`` and growing fourfold as the bytes arrive, so a claimed
size alone cannot make the receiver allocate it.

:class:`FrameDecoder` is the same receiver fed with ``bytes`` (``feed``).
"""

from __future__ import annotations

import struct

from protocol.errors import ProtocolError

__all__ = ["DEFAULT_MAX_FRAME_BYTES", "DEFAULT_SCRATCH_BYTES", "FrameDecoder", "FrameReceiver"]

_size = struct.Struct(">i")

DEFAULT_MAX_FRAME_BYTES = 100 * 1024 * 1024
DEFAULT_SCRATCH_BYTES = 64 * 1024
#: after a frame that had its own buffer, read only this much ahead (the next header, probably of
#: another large frame), so the next frame's bytes are not read into the scratch buffer and copied
_AFTER_LARGE_READ = 4096
#: frames bigger than this are read into a buffer of their own
OWN_BUFFER_ABOVE = 16 * 1024
_EMPTY = bytearray()


class FrameReceiver:
    """Receives a stream of size-prefixed frames into buffers sized by the frame headers.

    ``scratch`` is where small frames are read (a private one of ``DEFAULT_SCRATCH_BYTES`` by
    default; several receivers used from one thread may share one, as each keeps its partial frame
    itself between reads).  Frames above ``OWN_BUFFER_ABOVE`` bytes (copying them out of the scratch
    buffer would cost more than an extra read) get their own buffer, first ``initial_frame_bytes``
    big (or the whole frame if smaller), growing fourfold until the frame fits.
    """

    __slots__ = ("_after_large", "_filled", "_frame", "_in_scratch", "_need", "_pending", "_scratch", "error",
                 "initial_frame_bytes", "max_frame_bytes")

    def __init__(self, max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES, *, scratch: bytearray | None = None,
                 initial_frame_bytes: int = DEFAULT_SCRATCH_BYTES) -> None:
        self.max_frame_bytes = max_frame_bytes
        self.initial_frame_bytes = max(1, initial_frame_bytes)
        self._scratch = scratch if scratch is not None else bytearray(DEFAULT_SCRATCH_BYTES)
        if len(self._scratch) < 2 * (OWN_BUFFER_ABOVE + 4):
            raise ValueError(f"a scratch buffer needs at least {2 * (OWN_BUFFER_ABOVE + 4)} bytes")
        self._pending: bytearray = _EMPTY  # received bytes of the next frame (header included), if small
        self._in_scratch = 0  # how many of them get_buffer put at the start of the scratch buffer
        self._frame: bytearray | None = None  # a large frame being read into its own buffer
        self._filled = 0
        self._need = 0  # the large frame's size
        self._after_large = False
        #: set once the stream is unusable; frames completed before the bad header were still returned
        self.error: ProtocolError | None = None

    @property
    def buffered(self) -> int:
        """Bytes received that are not part of a returned frame yet."""
        return len(self._pending) + self._filled

    def get_buffer(self) -> memoryview:
        """Where the next received bytes go (never empty).  Valid until the next call of
        ``get_buffer`` on any receiver sharing the scratch buffer."""
        frame = self._frame
        if frame is not None:
            if self._filled == len(frame):  # full but not complete: grow fourfold
                grown = bytearray(min(self._need, len(frame) * 4))
                grown[: self._filled] = frame
                self._frame = frame = grown
            return memoryview(frame)[self._filled:]
        pending = self._pending
        scratch = self._scratch
        n = len(pending)
        if n >= 4:
            (size,) = _size.unpack_from(pending, 0)
            if size > OWN_BUFFER_ABOVE:
                return self._own_buffer(size)
        if n:
            scratch[:n] = pending
        self._in_scratch = n
        end = min(len(scratch), n + _AFTER_LARGE_READ) if self._after_large else len(scratch)
        return memoryview(scratch)[n:end]

    def _own_buffer(self, size: int) -> memoryview:
        pending = self._pending
        have = len(pending) - 4
        frame = bytearray(min(size, max(self.initial_frame_bytes, have)))
        frame[:have] = memoryview(pending)[4:]
        self._pending = _EMPTY
        self._frame, self._filled, self._need = frame, have, size
        return memoryview(frame)[have:]

    def received(self, nbytes: int) -> list[bytearray]:
        """``nbytes`` arrived in the buffer the last ``get_buffer`` returned; returns the frames
        now complete.

        On a malformed header :attr:`error` is set and the frames before it are returned (raised
        when there are none); every later call raises it.
        """
        if self.error is not None:
            raise self.error
        frames: list[bytearray] = []
        frame = self._frame
        if frame is not None:
            self._filled += nbytes
            if self._filled >= self._need:
                frames.append(frame)
                self._frame, self._filled, self._need = None, 0, 0
                self._after_large = True
            return frames
        buf = self._scratch
        pos, end = 0, self._in_scratch + nbytes
        self._in_scratch = 0
        limit = self.max_frame_bytes
        try:
            while end - pos >= 4:
                (size,) = _size.unpack_from(buf, pos)
                if size < 0 or size > limit:
                    raise ProtocolError(f"frame size {size} outside 0..{limit}")
                if end - pos - 4 < size:
                    break
                frames.append(buf[pos + 4: pos + 4 + size])
                pos += 4 + size
                self._after_large = False
        except ProtocolError as exc:
            self.error = exc
            self._pending = _EMPTY
            if not frames:
                raise
            return frames
        self._pending = buf[pos:end] if pos < end else _EMPTY
        return frames


class FrameDecoder:
    """A :class:`FrameReceiver` fed with ``bytes``: ``feed(data)`` returns the frames it completed."""

    __slots__ = ("_receiver",)

    def __init__(self, max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES, *,
                 initial_frame_bytes: int = DEFAULT_SCRATCH_BYTES) -> None:
        self._receiver = FrameReceiver(max_frame_bytes, initial_frame_bytes=initial_frame_bytes)

    @property
    def max_frame_bytes(self) -> int:
        return self._receiver.max_frame_bytes

    @property
    def error(self) -> ProtocolError | None:
        return self._receiver.error

    @property
    def buffered(self) -> int:
        return self._receiver.buffered

    def feed(self, data: bytes | bytearray | memoryview) -> list[bytearray]:
        """Whole frames completed by ``data``.

        When the stream turns out to be malformed, the frames before the bad one are returned and
        :attr:`error` is set; feeding again raises it.
        """
        receiver = self._receiver
        if receiver.error is not None:
            raise receiver.error
        frames: list[bytearray] = []
        view = memoryview(data)
        pos, end = 0, len(view)
        while pos < end:
            target = receiver.get_buffer()
            n = min(len(target), end - pos)
            target[:n] = view[pos: pos + n]
            target.release()
            pos += n
            try:
                frames += receiver.received(n)
            except ProtocolError:
                if not frames:
                    raise
                return frames
            if receiver.error is not None:
                return frames
        return frames
