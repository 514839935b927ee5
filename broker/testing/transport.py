"""A connection without a socket: :class:`FrameTransport` stands in for the event loop's transport under a
:class:`~broker.network.server.KafkaConnection`, and :func:`feed` hands it received bytes as the loop would
after a read — for tests and benchmarks of the request path in process."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from broker.network.server import KafkaConnection

__all__ = ["FrameTransport", "feed"]


class FrameTransport:
    """A transport that takes every write and never pushes back; while ``capture`` is set it keeps the
    response frames written (``frames``, without their size prefix), and :meth:`until` waits for them."""

    def __init__(self, *, capture: bool = True) -> None:
        self.capture = capture
        self.closed = False
        self.buf = bytearray()
        self.frames: list[bytes] = []
        self.want = 0
        self.waiter: asyncio.Future[None] | None = None

    def write(self, data: Any) -> None:
        if self.capture:
            self.buf += data
            self._frames()

    def writelines(self, data: Any) -> None:
        if self.capture:
            for d in data:
                self.buf += d
            self._frames()

    def _frames(self) -> None:
        buf = self.buf
        pos = 0
        while len(buf) - pos >= 4:
            size = int.from_bytes(buf[pos:pos + 4], "big")
            if len(buf) - pos - 4 < size:
                break
            self.frames.append(bytes(buf[pos + 4:pos + 4 + size]))
            pos += 4 + size
        if pos:
            del buf[:pos]
        if self.waiter is not None and len(self.frames) >= self.want and not self.waiter.done():
            self.waiter.set_result(None)

    async def until(self, n: int, timeout_s: float = 30) -> None:
        """Wait until ``frames`` holds ``n`` response frames."""
        if len(self.frames) >= n:
            return
        self.want = n
        self.waiter = asyncio.get_running_loop().create_future()
        await asyncio.wait_for(self.waiter, timeout_s)

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return default

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        pass

    def get_write_buffer_size(self) -> int:
        return 0

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True

    def abort(self) -> None:
        self.closed = True


def feed(conn: KafkaConnection, data: bytes | memoryview) -> None:
    """Hand ``data`` to ``conn`` as received bytes, in the pieces its receive buffer takes."""
    view, off = memoryview(data), 0
    while off < len(view):
        buf = conn.get_buffer(-1)
        k = min(len(buf), len(view) - off)
        buf[:k] = view[off:off + k]
        off += k
        conn.buffer_updated(k)
