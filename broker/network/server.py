"""The network edge: accepts TCP connections, frames requests, writes responses in order.

Each connection is an :class:`asyncio.BufferedProtocol` (plain TCP and TLS
transports alike drive it through ``get_buffer``/``buffer_updated``).  Bytes
are received into buffers sized by the frame headers
(:class:`protocol.framing.FrameReceiver`): pipelined small requests are read
many at a time into a scratch buffer the server's connections share, and a
large request (a produce of a big batch) is read straight into a buffer of its
own, which the request keeps — its record batch is validated, stamped and
written to the log from there without another copy.  Requests are handed, in
order, to the single dispatch point (:meth:`broker.handlers.dispatch.RequestDispatcher.dispatch`);
handlers answer at once or later (a long-poll Fetch, a JoinGroup), and
responses leave in request order, the ones ready together handed to the
transport in one ``writelines`` (one system call for a burst of pipelined
answers).

Record data in Fetch responses stays in the segment files: a
:class:`FileRegion` holds a reference on each file it names until the
response has been handed to the socket or the connection is dropped, so a
segment or topic deleted meanwhile still sends its own bytes.  Regions are
streamed as the socket drains with ``os.sendfile``: when the socket is full
the connection waits for writability, and when bytes of earlier responses are
still in the transport's write buffer it waits for that buffer to drain, so
record data never passes through memory.  Only where sendfile cannot be used
(a TLS transport, a file system without it) are regions copied, in pieces that
keep the write buffer near ``connection.write.buffer.bytes``.

Back-pressure works as Kafka muting a channel while its response is in
flight: the bytes of answered responses not yet handed to the socket (record
data included) are counted per connection and broker-wide.  Past
``queued.max.response.bytes.per.connection``, or past
``queued.max.response.bytes`` for a connection that already has a response
waiting, the connection's further requests stay decoded but unhandled and
reading stays paused until its client reads.  A client that pipelines
requests and never reads therefore holds a bounded amount of memory.

A malformed frame closes its connection; nothing a client sends reaches past
that connection.

The server binds one socket per listener (``listeners``, else ``--host``/``--port``),
TLS listeners through the standard ``ssl`` module; each connection knows its
listener and its principal (``User:ANONYMOUS``, the client certificate's
``User:<CN>``, or the SASL user).  On a SASL listener a connection's frames pass a
gate until it has authenticated (:mod:`broker.security.connection`): only
ApiVersions, SaslHandshake and SaslAuthenticate are handled, anything else closes
it, frames are bounded by ``sasl.server.max.receive.size``, raw tokens after a v0
handshake are answered here, and a failed login is answered and the connection
closed ``connection.failed.authentication.delay.ms`` after it is answered.  Once
authenticated the gate is off (it stays on, as a clock check, only while a
re-authentication deadline applies).
"""

from __future__ import annotations

import asyncio
import collections
import errno
import logging
import os
import socket
import struct
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from broker.log.region import FileRegion, release_parts
from broker.security.acl import ANONYMOUS, AuthorizationSession
from broker.security.connection import ConnectionSecurity
from broker.security.sasl import SaslError, SaslServer, SaslState
from broker.security.scram import CredentialStore
from broker.security.setup import ServerListener
from broker.security.tls import principal_from_certificate
from protocol.api import APIS, api_name, decode_request_header
from protocol.errors import ProtocolError
from protocol.framing import FrameReceiver
from protocol.primitives import ExternalBytes

if TYPE_CHECKING:
    from broker.handlers.dispatch import RequestDispatcher

T = TypeVar("T")
_api_key = struct.Struct(">h")
_size = struct.Struct(">i")

log = logging.getLogger("kbroker.server")

#: smallest piece copied into the write buffer when sendfile cannot be used, so copying progresses
_MIN_COPY = 64 * 1024
#: largest piece read and handed to the transport at once when sendfile cannot be used (TLS): a piece
#: is read, encrypted and copied on while it is still in the CPU's cache; 4 MiB pieces (the write
#: buffer's size) went at half the MB per CPU-second (benchmarks/RESULTS.md, "TLS over the wire")
_MAX_COPY = 256 * 1024
#: the scratch buffer the connections of one server read small requests into
SCRATCH_BYTES = 256 * 1024
#: a large request's own buffer starts this much above ``message.max.bytes`` (one batch and its
#: request around it arrive without growing it)
_REQUEST_SLACK = 64 * 1024
#: sendfile errors meaning "not for this socket/file": fall back to copying on this connection
_NO_SENDFILE = frozenset({errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.ENOTSOCK, errno.EOVERFLOW})


@dataclass(frozen=True, slots=True)
class ServerSettings:
    """The limits the network edge enforces (the broker settings of the same names).  Dynamic ones
    (``max.connections``, ``message.max.bytes``) change by the server being given a new object."""

    max_frame_bytes: int
    max_connections: int
    connections_max_idle_ms: int
    max_in_flight_requests_per_connection: int
    queued_max_response_bytes_per_connection: int
    queued_max_response_bytes: int
    connection_write_buffer_bytes: int
    ssl_handshake_timeout_ms: int
    #: ``message.max.bytes``: a large request's buffer starts at about this size
    message_max_bytes: int


class PendingResponse(Protocol):
    """What the dispatcher returns for a response still to come: ``future`` resolves (or fails, or is
    cancelled when the connection closes), then ``parts()`` gives the response parts (None: no
    response) or raises what the handler or its encoding raised."""

    future: asyncio.Future[Any]

    def parts(self) -> list[Any] | None: ...


def _parts_size(parts: list[Any]) -> int:
    if len(parts) == 1:
        part = parts[0]
        return part.size if isinstance(part, ExternalBytes) else len(part)
    return sum(p.size if isinstance(p, ExternalBytes) else len(p) for p in parts)


class _Slot:
    __slots__ = ("done", "parts")

    def __init__(self) -> None:
        self.parts: Any = None
        self.done = False


class _RegionCursor:
    """Progress through a :class:`FileRegion` being written: chunk index, bytes of it sent."""

    __slots__ = ("index", "offset", "region")

    def __init__(self, region: FileRegion) -> None:
        self.region = region
        self.index = 0
        self.offset = 0


class KafkaConnection(asyncio.BufferedProtocol):
    """One client connection: frame receiving, ordered responses, back-pressure."""

    def __init__(self, server: KafkaServer, listener: ServerListener | None = None) -> None:
        self.server = server
        self.dispatcher = server.dispatcher
        settings = server.settings
        self.listener = listener or server.listeners[0]
        #: who is on the other end: User:ANONYMOUS, the certificate's User:<CN>, or the SASL user
        self.principal = ANONYMOUS
        #: the principal's cached authorization decisions; None when authorization is off
        self.session: AuthorizationSession | None = None
        #: the SASL state of a connection on a SASL listener
        self.sasl: SaslServer | None = None
        #: frames pass through _gate first (a SASL connection until it has authenticated)
        self.gated = False
        self.receiver = FrameReceiver(settings.max_frame_bytes, scratch=server.scratch,
                                      initial_frame_bytes=settings.message_max_bytes + _REQUEST_SLACK)
        self.transport: asyncio.Transport | None = None
        self.peer = "?"
        self.client_host = ""
        #: received requests not handled yet (held back by the in-flight and queued-bytes limits)
        self.backlog: collections.deque[bytearray] = collections.deque()
        #: handled requests in arrival order, answered or not
        self.pending: collections.deque[_Slot] = collections.deque()
        #: answered responses, in order, not yet handed to the socket
        self.out: collections.deque[bytes | bytearray | memoryview | _RegionCursor] = collections.deque()
        #: bytes of answered responses (record data included) not yet handed to the socket
        self.queued_bytes = 0
        self.closed = False
        self.closing = False
        #: a closing connection stays open until then (monotonic), its answers sent: a failed login's
        #: close waits ``connection.failed.authentication.delay.ms``
        self.close_not_before = 0.0
        self.last_active = time.monotonic()
        self.paused_reading = False
        self.write_paused = False
        self._read_error: str | None = None
        self._fd = -1
        self._zero_copy = True
        self._write_fd = -1  # a dup of the socket, watched for writability while sendfile waits
        self._waiting_writable = False
        self._draining = False  # write-buffer limit lowered to 0 until the buffer drains (sendfile next)
        self._running = False
        self._again = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self.waiting: set[asyncio.Future[Any]] = set()  # the futures of responses still to come
        self.state: dict[str, Any] = {}
        #: called once the connection has closed (what is tied to it ends: share sessions)
        self.close_callbacks: list[Callable[[], None]] = []

    # -- asyncio callbacks ---------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        self._loop = asyncio.get_running_loop()
        peer = transport.get_extra_info("peername")
        if peer:
            self.client_host = str(peer[0])
            self.peer = f"{peer[0]}:{peer[1]}"
        sock = transport.get_extra_info("socket")
        if transport.get_extra_info("ssl_object") is not None:
            self._zero_copy = False  # sendfile on the raw socket would bypass the TLS layer
        if sock is not None:
            try:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                self._fd = sock.fileno()
            except OSError:
                self._fd = -1
        # resume only once the buffer is empty, so file data goes out with sendfile again
        transport.set_write_buffer_limits(high=self.server.write_buffer_bytes, low=0)  # type: ignore[attr-defined]
        if not self.server.register(self):
            log.warning("connection limit %d reached, closing %s", self.server.settings.max_connections, self.peer)
            transport.abort()
            self.closed = True
            return
        security = self.server.security
        if self.listener.uses_sasl:
            self.sasl = security.new_sasl_server()
            self.gated = True
            self.receiver.max_frame_bytes = min(self.receiver.max_frame_bytes, security.sasl.max_receive_size)
            return
        if self.listener.uses_tls:
            self.principal = principal_from_certificate(transport.get_extra_info("peercert"))
        self.session = security.session(self.principal, self.client_host)

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self._release_all()
        self.server.unregister(self)
        for future in list(self.waiting):
            future.cancel()
        for callback in self.close_callbacks:
            try:
                callback()
            except Exception:
                log.exception("a close callback of %s failed", self.peer)
        self.close_callbacks.clear()

    def pause_writing(self) -> None:
        self.write_paused = True
        self._update_reading()

    def resume_writing(self) -> None:
        self.write_paused = False
        if self._draining:
            self._draining = False
            if self.transport is not None:
                self.transport.set_write_buffer_limits(high=self.server.write_buffer_bytes, low=0)
        self._run()

    def get_buffer(self, sizehint: int) -> memoryview:
        return self.receiver.get_buffer()

    def buffer_updated(self, nbytes: int) -> None:
        if self.closed or self.closing or self._read_error is not None:
            return
        self.last_active = time.monotonic()
        try:
            frames = self.receiver.received(nbytes)
        except ProtocolError as exc:
            self._read_error = f"bad frame: {exc}"
            self._run()
            return
        if frames:
            self.backlog.extend(frames)
        if self.receiver.error is not None:
            # answer the requests before the bad frame, then close
            self._read_error = f"bad frame: {self.receiver.error}"
        self._run()

    # -- the connection's work loop ----------------------------------------------------

    def _run(self) -> None:
        """Move answered responses out in order, write what the socket takes, and handle
        the next requests while the limits allow; then settle reading and closing."""
        if self._running:
            self._again = True
            return
        self._running = True
        try:
            while not self.closed:
                self._again = False
                # every request the limits allow first, then their answers out together
                backlog = self.backlog
                while backlog and not self.closing and not self.closed and self._may_handle():
                    self._handle_frame(backlog.popleft())
                pending = self.pending
                while pending and pending[0].done:
                    self._enqueue(pending.popleft().parts)
                self._pump()
                if not self._again and not (backlog and not self.closing and not self.closed
                                            and self._may_handle()):
                    break
        finally:
            self._running = False
        if self.closed:
            return
        if self._read_error is not None and not self.backlog and not self.closing:
            self._begin_closing(self._read_error)
        if self.closing:
            if not self.pending and not self.out:
                linger = self.close_not_before - time.monotonic()
                if linger > 0:
                    asyncio.get_running_loop().call_later(linger, self._run)
                else:
                    self.close_after_flush()
            return
        self._update_reading()

    def _may_handle(self) -> bool:
        server = self.server
        if len(self.pending) >= server.settings.max_in_flight_requests_per_connection:
            return False
        if self.queued_bytes <= 0:
            return True  # every connection may always have one response on its way
        if self.queued_bytes >= server.settings.queued_max_response_bytes_per_connection:
            return False
        if server.queued_bytes >= server.settings.queued_max_response_bytes:
            server.wait_for_budget(self)
            return False
        return True

    # -- request handling --------------------------------------------------------------

    def _handle_frame(self, frame: bytearray) -> None:
        if self.gated and not self._gate(frame):
            return
        slot = _Slot()
        self.pending.append(slot)
        server = self.server
        server.handling_conn = self
        server.handling_frame = frame
        try:
            result = self.dispatcher.dispatch(self, frame)
        except ProtocolError as exc:
            self.pending.pop()
            self.close_after_pending(f"malformed request: {exc}")
            return
        except Exception:
            log.exception("request handler failed on %s; closing the connection", self.peer)
            self.fail("internal error")
            return
        finally:
            server.handling_frame = server.handling_conn = None
        if result is not None and result.__class__ is not list:  # a PendingResponse
            future = result.future
            self.waiting.add(future)
            future.add_done_callback(lambda _, s=slot, r=result: self._finish_later(r, s))  # type: ignore[misc]
        else:
            self._complete(slot, result)

    # -- authentication ------------------------------------------------------------------

    def _gate(self, frame: bytearray) -> bool:
        """Before authentication: True to handle ``frame`` as a request; raw tokens are answered
        here and anything not allowed yet closes the connection."""
        sasl = self.sasl
        assert sasl is not None
        if sasl.raw_tokens:
            self._raw_token(sasl, frame)
            return False
        if len(frame) < _api_key.size:
            self.close_after_pending("malformed request")
            return False
        (api_key,) = _api_key.unpack_from(frame)
        if sasl.allows(api_key):
            return True
        api = APIS.get(api_key)
        name = api.name if api is not None else f"API key {api_key}"
        if sasl.authenticated:
            self.close_after_pending(f"{name} after the SASL session expired (connections.max.reauth.ms)")
        else:
            self.close_after_pending(f"{name} before SASL authentication")
        return False

    def _raw_token(self, sasl: SaslServer, token: bytearray) -> None:
        """A SASL token framed on its own (after a v0 SaslHandshake): answered as a bare frame."""
        slot = _Slot()
        self.pending.append(slot)
        before = sasl.state
        try:
            answer = sasl.raw_token(token)
        except SaslError:
            self._authentication_failed(sasl, None)
            self._complete(slot, None)  # a refused raw token has no answer: the connection just ends
            return
        if before is not SaslState.COMPLETE and sasl.authenticated:
            self._authenticated(sasl)
        self._complete(slot, [_size.pack(len(answer)) + answer])

    def sasl_step(self, step: Callable[[SaslServer], T]) -> T | Awaitable[T]:
        """Run one SaslHandshake / SaslAuthenticate step and settle the connection: authenticated
        (the principal takes over), or failed (the answer waits out the delay, then the connection
        closes).  Returns the response body, or an awaitable of it."""
        sasl = self.sasl
        assert sasl is not None
        before = sasl.state
        body = step(sasl)
        if sasl.failed:
            return self._authentication_failed(sasl, body)
        if before is not SaslState.COMPLETE and sasl.authenticated:
            self._authenticated(sasl)
        return body

    def _authenticated(self, sasl: SaslServer) -> None:
        assert sasl.principal is not None
        security = self.server.security
        self.principal = sasl.principal
        self.session = security.session(self.principal, self.client_host)
        self.receiver.max_frame_bytes = self.server.settings.max_frame_bytes
        self.gated = sasl.session_expires_at is not None  # KIP-368: the session's end is checked per request
        security.authenticated(self.listener.name, sasl.mechanism or "", self.principal, self.peer)

    def _authentication_failed(self, sasl: SaslServer, body: T) -> T:
        """Log and count the failure and stop reading; ``body`` is answered at once and the connection
        closed only after the delay (as Kafka does: the client reads why before the connection ends)."""
        security = self.server.security
        security.authentication_failed(self.listener.name, sasl.mechanism, sasl.failure_reason or "failed",
                                       self.peer)
        self.close_not_before = time.monotonic() + security.failed_authentication_delay_s
        self.close_after_pending("authentication failed")
        return body

    def _finish_later(self, later: PendingResponse, slot: _Slot) -> None:
        """A response that was still to come has come (or failed, or was cancelled by the close)."""
        future = later.future
        self.waiting.discard(future)
        if future.cancelled():
            return
        try:
            parts = later.parts()
        except ProtocolError as exc:
            if not self.closed:
                self.fail(f"malformed request: {exc}")
            return
        except Exception as exc:
            if not self.closed:
                log.error("request handler failed on %s; closing the connection", self.peer, exc_info=exc)
                self.fail("internal error")
            return
        if self.closed:
            release_parts(parts)
            return
        self._complete(slot, parts)
        self._run()

    def _complete(self, slot: _Slot, parts: Any) -> None:
        if self.closed:
            release_parts(parts)
            return
        slot.parts = parts
        slot.done = True
        if parts:
            size = _parts_size(parts)
            self.queued_bytes += size
            self.server.queued_bytes += size

    # -- writing -----------------------------------------------------------------------

    def _enqueue(self, parts: Any) -> None:
        if not parts:
            return
        for part in parts:
            self.out.append(_RegionCursor(part) if isinstance(part, FileRegion) else part)

    def _handed_off(self, nbytes: int) -> None:
        self.queued_bytes -= nbytes
        self.last_active = time.monotonic()
        self.server.handed_off(nbytes)

    def _pump(self) -> None:
        """Hand queued response bytes to the socket until it pushes back.  Consecutive in-memory
        responses go out together (one ``writelines``, up to the write-buffer size at a time);
        file regions are sent after whatever precedes them."""
        transport = self.transport
        out = self.out
        batch: list[bytes | bytearray | memoryview] = []
        batched = 0
        limit = self.server.write_buffer_bytes
        while out and not self.closed and not self.write_paused and not self._waiting_writable:
            assert transport is not None
            item = out[0]
            if isinstance(item, _RegionCursor):
                if batch:
                    self._write_batch(batch, batched)
                    batch, batched = [], 0
                    continue  # the write may have paused the transport
                if not self._send_region(item):
                    return
                out.popleft()
                region = item.region
                region.release()
                if region.on_sent is not None:
                    region.on_sent(region.size)
            else:
                out.popleft()
                batch.append(item)
                batched += len(item)
                if batched >= limit:
                    self._write_batch(batch, batched)
                    batch, batched = [], 0
        if batch and not self.closed:
            self._write_batch(batch, batched)

    def _write_batch(self, batch: list[bytes | bytearray | memoryview], nbytes: int) -> None:
        transport = self.transport
        assert transport is not None
        if len(batch) == 1:
            transport.write(batch[0])
        else:
            transport.writelines(batch)
        self._handed_off(nbytes)

    def _send_region(self, cur: _RegionCursor) -> bool:
        """Send what the socket takes of a region; True once all of it has been handed over."""
        transport = self.transport
        assert transport is not None
        chunks = cur.region.chunks
        while True:
            if cur.index >= len(chunks):
                return True
            handle, start, length = chunks[cur.index]
            remaining = length - cur.offset
            if remaining <= 0:
                cur.index += 1
                cur.offset = 0
                continue
            if self.closed or self.write_paused:
                return False
            position = start + cur.offset
            zero_copy = self._sendfile_ok()
            if zero_copy and transport.get_write_buffer_size():
                # earlier bytes are still buffered (the socket is full): sendfile after them
                if self._wait_drained():
                    return False
                zero_copy = False
            if zero_copy:
                try:
                    sent = os.sendfile(self._fd, handle.fileno(), position, remaining)
                except (BlockingIOError, InterruptedError):
                    if self._wait_writable():
                        return False
                    continue
                except OSError as exc:
                    if exc.errno in _NO_SENDFILE:
                        self._zero_copy = False
                        continue
                    self.fail(f"send failed: {exc}")
                    return False
                self.server.sendfile_bytes += sent
            else:
                room = self.server.write_buffer_bytes - transport.get_write_buffer_size()
                data = os.pread(handle.fileno(), min(remaining, max(room, _MIN_COPY), _MAX_COPY), position)
                if data:
                    transport.write(data)
                sent = len(data)
            if sent <= 0:
                # The bytes promised in the frame are gone (the file was truncated under the
                # queued response): never pad with filler, close the connection instead.
                self.fail(f"record data of {handle.path} was truncated while its response was queued")
                return False
            cur.offset += sent
            self._handed_off(sent)

    def _sendfile_ok(self) -> bool:
        return self._zero_copy and self.server.zero_copy and self._fd >= 0

    def _wait_drained(self) -> bool:
        """Pause writing until the transport's buffer is empty, by lowering its high-water mark
        below what it holds (``resume_writing`` restores it); False if the transport did not
        pause, and the caller copies this piece instead."""
        transport = self.transport
        assert transport is not None
        transport.set_write_buffer_limits(high=0, low=0)
        if self.write_paused:
            self._draining = True
            return True
        transport.set_write_buffer_limits(high=self.server.write_buffer_bytes, low=0)
        return False

    def _wait_writable(self) -> bool:
        """Watch the socket for writability (through a dup, as the transport owns its fd);
        False when the loop cannot, and this connection copies from then on."""
        loop = self._loop
        try:
            if self._write_fd < 0:
                self._write_fd = os.dup(self._fd)
            assert loop is not None
            loop.add_writer(self._write_fd, self._on_writable)
        except (OSError, NotImplementedError, RuntimeError) as exc:
            log.debug("sendfile wait unavailable on %s (%s); copying instead", self.peer, exc)
            self._zero_copy = False
            return False
        self._waiting_writable = True
        return True

    def _on_writable(self) -> None:
        self._stop_waiting_writable()
        self._run()

    def _stop_waiting_writable(self) -> None:
        if self._waiting_writable:
            self._waiting_writable = False
            if self._loop is not None and not self._loop.is_closed():
                self._loop.remove_writer(self._write_fd)

    def _release_all(self) -> None:
        """The connection is gone or going: give back file references and queued-bytes budget."""
        self._stop_waiting_writable()
        if self._write_fd >= 0:
            os.close(self._write_fd)
            self._write_fd = -1
        for item in self.out:
            if isinstance(item, _RegionCursor):
                item.region.release()
        self.out.clear()
        for slot in self.pending:
            if slot.done:
                release_parts(slot.parts)
                slot.parts = None
        self.backlog.clear()
        if self.queued_bytes:
            queued, self.queued_bytes = self.queued_bytes, 0
            self.server.handed_off(queued)

    def _update_reading(self) -> None:
        transport = self.transport
        if transport is None or self.closed or self.closing:
            return
        should_pause = (self.write_paused or self._waiting_writable or bool(self.backlog)
                        or self._read_error is not None
                        or len(self.pending) >= self.server.settings.max_in_flight_requests_per_connection)
        if should_pause and not self.paused_reading:
            transport.pause_reading()
            self.paused_reading = True
        elif not should_pause and self.paused_reading:
            transport.resume_reading()
            self.paused_reading = False

    # -- closing -----------------------------------------------------------------------

    def fail(self, reason: str) -> None:
        if self.closed:
            return
        log.info("closing connection %s: %s", self.peer, reason)
        self.closed = True
        self._release_all()
        if self.transport is not None:
            self.transport.abort()

    def close_after_pending(self, reason: str, *, quiet: bool = False) -> None:
        """Stop reading; answer the requests already handled, then close (as Kafka does)."""
        if self.closed or self.closing:
            return
        self._begin_closing(reason, quiet=quiet)
        self._run()

    def _begin_closing(self, reason: str, *, quiet: bool = False) -> None:
        log.log(logging.DEBUG if quiet else logging.INFO, "closing connection %s after pending responses: %s",
                self.peer, reason)
        self.closing = True
        self.backlog.clear()
        if self.transport is not None and not self.paused_reading:
            self.transport.pause_reading()
            self.paused_reading = True

    def close_after_flush(self) -> None:
        """Close now; bytes already in the transport's buffer still go out."""
        if self.closed:
            return
        self.closed = True
        self._release_all()
        if self.transport is not None:
            self.transport.close()


class KafkaServer:
    """Listener and connection registry: limits, idle reaping, graceful stop."""

    def __init__(self, settings: ServerSettings, dispatcher: RequestDispatcher | None = None, *,
                 listeners: Sequence[ServerListener], security: ConnectionSecurity | None = None) -> None:
        #: replaced as a whole when a dynamic setting changes, so every use reads the current limits
        self.settings = settings
        self.dispatcher: RequestDispatcher = dispatcher  # type: ignore[assignment]  # set before serve()
        self.listeners: tuple[ServerListener, ...] = tuple(listeners)
        self.security = security if security is not None else ConnectionSecurity(CredentialStore())
        self.connections: set[KafkaConnection] = set()
        #: where connections read small requests (shared: they all run on one event loop)
        self.scratch = bytearray(SCRATCH_BYTES)
        #: one asyncio server per listener, and the address each is bound to
        self.servers: dict[str, asyncio.base_events.Server] = {}
        self.bound: dict[str, tuple[str, int]] = {}
        self.zero_copy = True
        self.sendfile_bytes = 0
        #: bytes of answered responses not yet handed to a socket, over all connections
        self.queued_bytes = 0
        self._budget_waiters: set[KafkaConnection] = set()
        self._reaper: asyncio.Task[None] | None = None
        #: the request being handled now and its connection (what :meth:`activity` names)
        self.handling_frame: bytearray | None = None
        self.handling_conn: KafkaConnection | None = None

    def activity(self) -> str | None:
        """The request the event loop is handling now, as a log line names it (None between requests).

        Read by the event-loop watchdog's thread while the loop's thread is stuck in a request; what it
        reads is only the frame's header, parsed again here."""
        frame, conn = self.handling_frame, self.handling_conn
        if frame is None or conn is None:
            return None
        try:
            header = decode_request_header(frame)
        except (ProtocolError, ValueError):
            return f"a request from {conn.peer}"
        return (f"{api_name(header.api_key)} v{header.api_version} (correlation id {header.correlation_id}) "
                f"from client {header.client_id!r} at {conn.peer}")

    @property
    def write_buffer_bytes(self) -> int:
        return max(1, self.settings.connection_write_buffer_bytes)  # read when used

    def buffered_bytes(self) -> int:
        """Bytes held in the connections' user-space write buffers."""
        total = 0
        for conn in self.connections:
            if conn.transport is not None:
                total += conn.transport.get_write_buffer_size()
        return total

    def handed_off(self, nbytes: int) -> None:
        """``nbytes`` of queued responses left for the socket; wake connections waiting for budget."""
        self.queued_bytes -= nbytes
        if self._budget_waiters and self.queued_bytes < self.settings.queued_max_response_bytes:
            waiters = list(self._budget_waiters)
            self._budget_waiters.clear()
            loop = asyncio.get_running_loop()
            for conn in waiters:
                if not conn.closed:
                    loop.call_soon(conn._run)

    def wait_for_budget(self, conn: KafkaConnection) -> None:
        """``conn`` holds requests back until the broker-wide queued bytes drop below the limit."""
        self._budget_waiters.add(conn)

    def register(self, conn: KafkaConnection) -> bool:
        if len(self.connections) >= self.settings.max_connections:
            return False
        self.connections.add(conn)
        self.dispatcher.metrics.connections.set(len(self.connections))
        return True

    def unregister(self, conn: KafkaConnection) -> None:
        self.connections.discard(conn)
        self._budget_waiters.discard(conn)
        self.dispatcher.metrics.connections.set(len(self.connections))

    async def bind(self) -> tuple[str, int]:
        """Listen on every listener without accepting yet (connections wait in the backlog);
        returns the first listener's address (:attr:`bound` has them all)."""
        loop = asyncio.get_running_loop()
        try:
            for listener in self.listeners:
                kwargs: dict[str, Any] = {}
                if listener.ssl_context is not None:
                    kwargs = {"ssl": listener.ssl_context,
                              "ssl_handshake_timeout": self.settings.ssl_handshake_timeout_ms / 1000}
                server = await loop.create_server(
                    lambda lst=listener: KafkaConnection(self, lst),  # type: ignore[misc]
                    listener.listener.bind_host, listener.listener.port, reuse_address=True, backlog=1024,
                    start_serving=False, **kwargs)
                self.servers[listener.name] = server
                self.bound[listener.name] = server.sockets[0].getsockname()[:2]
        except BaseException:
            for server in self.servers.values():
                server.close()
            self.servers.clear()
            raise
        return self.bound[self.listeners[0].name]

    async def serve(self) -> None:
        """Start accepting connections (``dispatcher`` must be set)."""
        assert self.servers and self.dispatcher is not None
        for server in self.servers.values():
            await server.start_serving()
        self._reaper = asyncio.ensure_future(self._reap_idle())

    async def start(self) -> tuple[str, int]:
        bound = await self.bind()
        await self.serve()
        return bound

    async def _reap_idle(self) -> None:
        idle_s = self.settings.connections_max_idle_ms / 1000
        while True:
            await asyncio.sleep(min(idle_s / 4, 30))
            cutoff = time.monotonic() - idle_s
            for conn in list(self.connections):
                # idle: nothing read or written for the whole period, and no request waiting
                # for its answer (a client that stopped reading its responses counts as idle)
                if conn.last_active < cutoff and (not conn.pending or conn.out):
                    conn.fail("idle")

    def stop_accepting(self) -> None:
        """Accept no more connections and read no more requests; those already read are still answered."""
        for server in self.servers.values():
            server.close()
        if self._reaper is not None:
            self._reaper.cancel()
            self._reaper = None
        for conn in list(self.connections):
            conn.close_after_pending("the broker is shutting down", quiet=True)

    async def stop(self, grace_s: float = 5.0) -> None:
        """Stop accepting, let in-flight requests finish (up to ``grace_s``), close connections."""
        self.stop_accepting()
        deadline = time.monotonic() + grace_s
        while any((c.pending or c.out) and not c.closed for c in self.connections) and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        for conn in list(self.connections):
            conn.close_after_flush()
        for server in self.servers.values():
            try:
                await asyncio.wait_for(server.wait_closed(), timeout=1.0)
            except TimeoutError:
                pass
