"""The network edge: accepts TCP connections, frames requests, writes responses in order.

Each connection is an :class:`asyncio.Protocol`.  Requests are decoded as
they arrive and handed to the single dispatch point
(:meth:`broker.apis.KafkaApis.handle`); handlers answer at once or later (a
long-poll Fetch, a JoinGroup), and responses leave in request order.  Record
data in Fetch responses is sent from the segment files with ``os.sendfile``
when the socket is writable, otherwise copied.

A malformed frame closes its connection; nothing a client sends reaches past
that connection.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import os
import socket
import time
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any

from protocol.errors import ProtocolError
from protocol.framing import FrameDecoder
from protocol.primitives import ExternalBytes

if TYPE_CHECKING:
    from broker.apis import KafkaApis
    from broker.config import BrokerConfig

log = logging.getLogger("kbroker.server")

class FileRegion(ExternalBytes):
    """Record bytes in segment files: ``(fileno, offset, length)`` chunks sent back to back."""

    __slots__ = ("chunks",)

    def __init__(self, chunks: list[tuple[int, int, int]]) -> None:
        super().__init__(sum(c[2] for c in chunks))
        self.chunks = chunks


class _Slot:
    __slots__ = ("done", "parts")

    def __init__(self) -> None:
        self.parts: Any = None
        self.done = False


class KafkaConnection(asyncio.Protocol):
    """One client connection: frame decoding, ordered responses, back-pressure."""

    def __init__(self, server: KafkaServer) -> None:
        self.server = server
        self.apis = server.apis
        self.decoder = FrameDecoder(server.config.max_frame_bytes)
        self.transport: asyncio.Transport | None = None
        self.peer = "?"
        self.client_host = ""
        self.pending: collections.deque[_Slot] = collections.deque()
        self.closed = False
        self.closing = False
        self.last_active = time.monotonic()
        self.paused_reading = False
        self.write_paused = False
        self._fd = -1
        self.tasks: set[asyncio.Future[Any]] = set()
        self.state: dict[str, Any] = {}

    # -- asyncio callbacks ---------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        peer = transport.get_extra_info("peername")
        if peer:
            self.client_host = str(peer[0])
            self.peer = f"{peer[0]}:{peer[1]}"
        sock = transport.get_extra_info("socket")
        if sock is not None:
            try:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                self._fd = sock.fileno()
            except OSError:
                self._fd = -1
        transport.set_write_buffer_limits(high=4 * 1024 * 1024, low=1024 * 1024)
        if not self.server.register(self):
            log.warning("connection limit %d reached, closing %s", self.server.config.max_connections, self.peer)
            transport.abort()
            self.closed = True

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.server.unregister(self)
        for task in list(self.tasks):
            task.cancel()

    def pause_writing(self) -> None:
        self.write_paused = True
        self._update_reading()

    def resume_writing(self) -> None:
        self.write_paused = False
        self._update_reading()
        self._flush()

    def data_received(self, data: bytes) -> None:
        self.last_active = time.monotonic()
        try:
            frames = self.decoder.feed(data)
        except ProtocolError as exc:
            self.close_after_pending(f"bad frame: {exc}")
            return
        for frame in frames:
            if self.closed or self.closing:
                return
            self._handle_frame(frame)
        if self.decoder.error is not None:
            self.close_after_pending(f"bad frame: {self.decoder.error}")
            return
        self._update_reading()

    # -- request handling --------------------------------------------------------------

    def _handle_frame(self, frame: bytes) -> None:
        slot = _Slot()
        self.pending.append(slot)
        try:
            result = self.apis.handle(self, frame)
        except ProtocolError as exc:
            self.pending.pop()
            self.close_after_pending(f"malformed request: {exc}")
            return
        except Exception:
            log.exception("request handler failed on %s; closing the connection", self.peer)
            self.fail("internal error")
            return
        if isinstance(result, Awaitable):
            task = asyncio.ensure_future(result)
            self.tasks.add(task)
            task.add_done_callback(lambda t, s=slot: self._finish_async(t, s))  # type: ignore[misc]
        else:
            slot.parts = result
            slot.done = True
            if self.pending[0] is slot:
                self._flush()

    def _finish_async(self, task: asyncio.Future[Any], slot: _Slot) -> None:
        self.tasks.discard(task)
        if task.cancelled() or self.closed:
            return
        exc = task.exception()
        if exc is not None:
            if isinstance(exc, ProtocolError):
                self.fail(f"malformed request: {exc}")
            else:
                log.error("request handler failed on %s; closing the connection", self.peer, exc_info=exc)
                self.fail("internal error")
            return
        slot.parts = task.result()
        slot.done = True
        self._flush()

    def _flush(self) -> None:
        pending = self.pending
        while pending and pending[0].done and not self.closed:
            parts = pending.popleft().parts
            if parts is None:
                continue
            self._write_parts(parts)
        if self.closing and not pending:
            self.close_after_flush()
            return
        self._update_reading()

    def _write_parts(self, parts: list[Any]) -> None:
        transport = self.transport
        assert transport is not None
        for part in parts:
            if isinstance(part, FileRegion):
                self._write_region(part)
            else:
                transport.write(part)

    def _write_region(self, region: FileRegion) -> None:
        for fileno, offset, length in region.chunks:
            self._write_chunk(fileno, offset, length)

    def _write_chunk(self, fileno: int, offset: int, remaining: int) -> None:
        transport = self.transport
        assert transport is not None
        if self._fd >= 0 and self.server.zero_copy and transport.get_write_buffer_size() == 0:
            try:
                while remaining > 0:
                    sent = os.sendfile(self._fd, fileno, offset, remaining)
                    if sent <= 0:
                        break
                    offset += sent
                    remaining -= sent
                    self.server.sendfile_bytes += sent
            except (BlockingIOError, InterruptedError):
                pass
            except OSError:
                pass
        while remaining > 0:
            chunk = os.pread(fileno, min(remaining, 1 << 20), offset)
            if not chunk:
                # the file shrank (retention or truncation): keep the frame length honest
                chunk = b"\0" * min(remaining, 1 << 20)
            transport.write(chunk)
            offset += len(chunk)
            remaining -= len(chunk)

    def _update_reading(self) -> None:
        transport = self.transport
        if transport is None or self.closed or self.closing:
            return
        should_pause = self.write_paused or len(self.pending) >= self.server.config.max_in_flight_requests_per_connection
        if should_pause and not self.paused_reading:
            transport.pause_reading()
            self.paused_reading = True
        elif not should_pause and self.paused_reading:
            transport.resume_reading()
            self.paused_reading = False

    def fail(self, reason: str) -> None:
        if self.closed:
            return
        log.info("closing connection %s: %s", self.peer, reason)
        self.closed = True
        if self.transport is not None:
            self.transport.abort()

    def close_after_pending(self, reason: str) -> None:
        """Stop reading; answer the requests already received, then close (as Kafka does)."""
        if self.closed or self.closing:
            return
        log.info("closing connection %s after pending responses: %s", self.peer, reason)
        self.closing = True
        if self.transport is not None and not self.paused_reading:
            self.transport.pause_reading()
            self.paused_reading = True
        if not self.pending:
            self.close_after_flush()

    def close_after_flush(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()


class KafkaServer:
    """Listener and connection registry: limits, idle reaping, graceful stop."""

    def __init__(self, config: BrokerConfig, apis: KafkaApis | None = None) -> None:
        self.config = config
        self.apis: KafkaApis = apis  # type: ignore[assignment]  # set before serve()
        self.connections: set[KafkaConnection] = set()
        self.server: asyncio.base_events.Server | None = None
        self.zero_copy = True
        self.sendfile_bytes = 0
        self._reaper: asyncio.Task[None] | None = None

    def register(self, conn: KafkaConnection) -> bool:
        if len(self.connections) >= self.config.max_connections:
            return False
        self.connections.add(conn)
        self.apis.metrics.connections.set(len(self.connections))
        return True

    def unregister(self, conn: KafkaConnection) -> None:
        self.connections.discard(conn)
        self.apis.metrics.connections.set(len(self.connections))

    async def bind(self) -> tuple[str, int]:
        """Listen on the configured address without accepting yet (connections wait in the backlog)."""
        loop = asyncio.get_running_loop()
        self.server = await loop.create_server(
            lambda: KafkaConnection(self), self.config.host, self.config.port, reuse_address=True, backlog=1024,
            start_serving=False,
        )
        sock = self.server.sockets[0]
        host, port = sock.getsockname()[:2]
        return host, port

    async def serve(self) -> None:
        """Start accepting connections (``apis`` must be set)."""
        assert self.server is not None and self.apis is not None
        await self.server.start_serving()
        self._reaper = asyncio.ensure_future(self._reap_idle())

    async def start(self) -> tuple[str, int]:
        bound = await self.bind()
        await self.serve()
        return bound

    async def _reap_idle(self) -> None:
        idle_s = self.config.connections_max_idle_ms / 1000
        while True:
            await asyncio.sleep(min(idle_s / 4, 30))
            cutoff = time.monotonic() - idle_s
            for conn in list(self.connections):
                if conn.last_active < cutoff and not conn.pending:
                    conn.fail("idle")

    async def stop(self, grace_s: float = 5.0) -> None:
        """Stop accepting, let in-flight requests finish (up to ``grace_s``), close connections."""
        if self.server is not None:
            self.server.close()
        if self._reaper is not None:
            self._reaper.cancel()
        deadline = time.monotonic() + grace_s
        while any(c.pending and not c.closed for c in self.connections) and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        for conn in list(self.connections):
            conn.close_after_flush()
        if self.server is not None:
            try:
                await asyncio.wait_for(self.server.wait_closed(), timeout=1.0)
            except TimeoutError:
                pass
