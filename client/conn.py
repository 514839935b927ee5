"""One TCP connection to one broker: framing, correlation ids, pipelining, timeouts, ApiVersions.

:class:`Connection` is an ``asyncio.BufferedProtocol``: responses are received into buffers sized
by their frame headers (:class:`protocol.framing.FrameReceiver`), so a large Fetch response is
read once, straight into the buffer its record sets are later decoded from.  Requests are written as soon as they are
made (pipelined); responses are matched to requests by correlation id (Kafka answers in
order on a connection, which is also checked).  Each request has a deadline on the shared
:class:`~protocol.timer_service.WheelTimer`; a timed-out request closes the connection,
because every later response on it is now suspect.  ``open()`` negotiates versions with
ApiVersions: for every API, the highest version both sides speak; with a
:class:`~client.security.ClientSecurity` it first does the TLS handshake (SSL, SASL_SSL) and
afterwards authenticates with SaslHandshake v1 and SaslAuthenticate (SASL_PLAINTEXT, SASL_SSL).
A refused login or certificate raises :class:`~client.errors.AuthenticationError`.

:class:`Backoff` is the pure reconnect policy: exponential from ``reconnect_backoff_ms`` to
``reconnect_backoff_max_ms`` with ±20 % jitter.
"""

from __future__ import annotations

import asyncio
import random
import ssl
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any

from client.errors import (
    AuthenticationError,
    KafkaConnectionError,
    KafkaError,
    KafkaTimeoutError,
    UnsupportedVersionError,
)
from client.security import ClientSecurity, SaslClientExchange, SaslExchangeError
from protocol.api import APIS, ApiKey, decode_response, encode_request, response_correlation_id
from protocol.error_codes import ErrorCode
from protocol.errors import ProtocolError
from protocol.framing import DEFAULT_MAX_FRAME_BYTES, FrameReceiver
from protocol.primitives import Obj
from protocol.timer_service import WheelTimer

CLIENT_SOFTWARE_NAME = "kbroker-python"
CLIENT_SOFTWARE_VERSION = "0.1.0"

# Client-side caps where we deliberately stay below our codec's newest version.
CLIENT_MAX_VERSIONS: dict[int, int] = {}


class Backoff:
    """Exponential reconnect backoff with jitter (pure; the caller supplies the clock)."""

    def __init__(self, base_ms: int, max_ms: int, rng: random.Random | None = None, jitter: float = 0.2) -> None:
        self.base_ms = max(base_ms, 0)
        self.max_ms = max(max_ms, self.base_ms)
        self.rng = rng or random.Random()
        self.jitter = jitter
        self.failures = 0
        self.next_attempt_ms = 0.0
        self.last_attempt_ms = 0.0

    def delay_ms(self) -> float:
        if self.failures == 0 or self.base_ms == 0:
            return 0.0
        raw = min(self.base_ms * (2 ** min(self.failures - 1, 30)), self.max_ms)
        return raw * (1 + self.rng.uniform(-self.jitter, self.jitter))

    def on_attempt(self, now_ms: float) -> None:
        self.last_attempt_ms = now_ms

    def on_failure(self, now_ms: float) -> None:
        self.failures += 1
        self.next_attempt_ms = now_ms + self.delay_ms()

    def on_success(self) -> None:
        self.failures = 0
        self.next_attempt_ms = 0.0

    def can_connect(self, now_ms: float) -> bool:
        return now_ms >= self.next_attempt_ms


class _Callback:
    """Stands in for a response future: hands the outcome to a function at once."""

    __slots__ = ("_done", "fn")

    def __init__(self, fn: Callable[[Obj | None, BaseException | None], None]) -> None:
        self.fn = fn
        self._done = False

    def done(self) -> bool:
        return self._done

    def set_result(self, obj: Obj) -> None:
        self._done = True
        self.fn(obj, None)

    def set_exception(self, exc: BaseException) -> None:
        self._done = True
        self.fn(None, exc)


class _Pending:
    __slots__ = ("api_key", "fut", "timer", "version")

    def __init__(self, api_key: int, version: int, fut: asyncio.Future[Obj] | _Callback, timer: Any) -> None:
        self.api_key = api_key
        self.version = version
        self.fut = fut
        self.timer = timer


class Connection(asyncio.BufferedProtocol):
    """A connection to ``host:port``; ``request()`` is safe to call concurrently from many tasks."""

    def __init__(self, node_id: int, host: str, port: int, *, client_id: str | None, timers: WheelTimer,
                 request_timeout_ms: int, on_close: Callable[[Connection], None] | None = None,
                 security: ClientSecurity | None = None) -> None:
        self.node_id = node_id
        self.security = security
        self.host = host
        self.port = port
        self.client_id = client_id
        self.timers = timers
        self.request_timeout_ms = request_timeout_ms
        self.on_close = on_close
        self.versions: dict[int, int] = {}
        self.broker_versions: dict[int, tuple[int, int]] = {}
        #: the broker's finalized features (ApiVersions v3+): name -> max version level
        self.features: dict[str, int] = {}
        self._transport: asyncio.Transport | None = None
        # responses are the broker's answers to our own requests: a frame gets its whole buffer at once
        self._receiver = FrameReceiver(initial_frame_bytes=DEFAULT_MAX_FRAME_BYTES)
        self._in_flight: OrderedDict[int, _Pending] = OrderedDict()
        self._next_cid = 0
        self._closed = False
        self._close_exc: BaseException | None = None
        self._writable = asyncio.Event()
        self._writable.set()

    # -- lifecycle -------------------------------------------------------------------------------

    async def open(self, timeout_ms: int | None = None) -> None:
        loop = asyncio.get_running_loop()
        timeout = (timeout_ms or self.request_timeout_ms) / 1000
        security = self.security
        tls = security.ssl_context if security is not None and security.uses_tls else None
        try:
            await asyncio.wait_for(loop.create_connection(
                lambda: self, self.host, self.port, ssl=tls, server_hostname=self.host if tls is not None else None,
            ), timeout)
        except ssl.SSLCertVerificationError as exc:
            self._closed = True
            raise AuthenticationError(f"TLS to {self.host}:{self.port}: the broker's certificate does not "
                                      f"verify ({exc.verify_message or exc.reason})") from exc
        except (OSError, TimeoutError) as exc:
            self._closed = True
            raise KafkaConnectionError(f"cannot connect to {self.host}:{self.port}: {exc}") from exc
        try:
            await self._negotiate()
            if security is not None and security.uses_sasl:
                await self._authenticate(security)
        except BaseException:
            self.close()
            raise

    async def _authenticate(self, security: ClientSecurity) -> None:
        """SaslHandshake v1, then SaslAuthenticate round trips until the exchange completes."""
        mechanism = security.sasl_mechanism
        where = f"{self.host}:{self.port}"
        if not self.supports(ApiKey.SASL_HANDSHAKE, 1) or not self.supports(ApiKey.SASL_AUTHENTICATE):
            raise AuthenticationError(f"{where} does not speak SaslHandshake v1 / SaslAuthenticate")
        resp = await self.request(ApiKey.SASL_HANDSHAKE, {"mechanism": mechanism}, version=1)
        if resp.error_code:
            enabled = ", ".join(resp.mechanisms or []) or "none"
            raise AuthenticationError(f"{where} does not accept SASL mechanism {mechanism} "
                                      f"(enabled: {enabled})", resp.error_code)
        assert security.sasl_username is not None and security.sasl_password is not None
        exchange = SaslClientExchange(mechanism, security.sasl_username, security.sasl_password)
        token: bytes | None = exchange.first()
        try:
            while token is not None:
                resp = await self.request(ApiKey.SASL_AUTHENTICATE, {"auth_bytes": token})
                if resp.error_code:
                    detail = resp.error_message or ErrorCode.from_code(resp.error_code).name
                    raise AuthenticationError(f"{where}: {detail}", resp.error_code)
                token = exchange.respond(resp.auth_bytes)
        except SaslExchangeError as exc:
            raise AuthenticationError(f"{where}: {exc}") from None

    async def _negotiate(self) -> None:
        version = APIS[ApiKey.API_VERSIONS].max_version
        body = {"client_software_name": CLIENT_SOFTWARE_NAME, "client_software_version": CLIENT_SOFTWARE_VERSION}
        for _ in range(3):
            resp = await self.request(ApiKey.API_VERSIONS, body, version=version)
            if resp.error_code == ErrorCode.UNSUPPORTED_VERSION:
                theirs = next((k for k in resp.api_keys if k.api_key == ApiKey.API_VERSIONS), None)
                version = min(version - 1, theirs.max_version) if theirs else 0
                if version < 0:
                    break
                continue
            if resp.error_code:
                raise KafkaError(resp.error_code, "ApiVersions")
            self.broker_versions = {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}
            self.versions = negotiate_versions(self.broker_versions)
            self.features = {f.name: f.max_version_level for f in resp.get("finalized_features") or ()}
            return
        raise UnsupportedVersionError("ApiVersions negotiation failed")

    def close(self, exc: BaseException | None = None) -> None:
        if self._transport is not None and not self._transport.is_closing():
            self._transport.close()
        self._shutdown(exc or KafkaConnectionError(f"connection to node {self.node_id} closed"))

    def _shutdown(self, exc: BaseException) -> None:
        first = not self._closed
        self._closed = True
        if self._close_exc is None:  # keep the first reason (a timeout), not the later "connection lost"
            self._close_exc = exc
        pending, self._in_flight = self._in_flight, OrderedDict()
        for p in pending.values():
            if p.timer is not None:
                p.timer.cancel()
            if not p.fut.done():
                p.fut.set_exception(exc)
        self._writable.set()
        if first and self.on_close is not None:
            self.on_close(self)

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def in_flight(self) -> int:
        return len(self._in_flight)

    # -- requests --------------------------------------------------------------------------------

    def version(self, api_key: int) -> int:
        try:
            return self.versions[api_key]
        except KeyError:
            raise UnsupportedVersionError(f"broker {self.node_id} does not support {APIS[api_key].name}") from None

    def supports(self, api_key: int, min_version: int = 0) -> bool:
        return self.versions.get(api_key, -1) >= min_version

    async def request(self, api_key: int, body: Mapping[str, Any], *, version: int | None = None,
                      timeout_ms: int | None = None, expect_response: bool = True) -> Obj:
        if self._closed or self._transport is None:
            raise self._close_exc or KafkaConnectionError(f"connection to node {self.node_id} is closed")
        timeout = self.request_timeout_ms if timeout_ms is None else timeout_ms
        deadline = self.timers.now_ms() + timeout
        if not self._writable.is_set():
            # Back-pressure: the socket buffer is full.  Waiting for it to drain counts against the
            # request's deadline, so a peer that stops reading cannot park the caller forever.
            try:
                await asyncio.wait_for(self._writable.wait(), max(timeout, 0) / 1000)
            except TimeoutError:
                exc = KafkaTimeoutError(f"{APIS[api_key].name} to node {self.node_id} timed out after "
                                        f"{timeout} ms waiting for the connection to drain")
                self.close(exc)
                raise exc from None
            if self._closed or self._transport is None:
                raise self._close_exc or KafkaConnectionError(f"connection to node {self.node_id} closed")
        if not expect_response:
            self._write(api_key, body, version, deadline, timeout, None)
            return Obj()
        fut: asyncio.Future[Obj] = asyncio.get_running_loop().create_future()
        self._write(api_key, body, version, deadline, timeout, fut)
        return await fut

    @property
    def ready(self) -> bool:
        """Open and not pushing back: ``request_nowait`` may be called."""
        return not self._closed and self._transport is not None and self._writable.is_set()

    def request_nowait(self, api_key: int, body: Mapping[str, Any],
                       on_response: Callable[[Obj | None, BaseException | None], None] | None, *,
                       version: int | None = None, timeout_ms: int | None = None) -> None:
        """Write a request now (the connection must be ``ready``); ``on_response(response, None)`` or
        ``on_response(None, error)`` is called from the receive path itself, without an event-loop
        turn in between.  ``on_response=None`` expects no response (Produce with acks=0)."""
        if not self.ready:
            raise self._close_exc or KafkaConnectionError(f"connection to node {self.node_id} is not ready")
        timeout = self.request_timeout_ms if timeout_ms is None else timeout_ms
        waiter = None if on_response is None else _Callback(on_response)
        self._write(api_key, body, version, self.timers.now_ms() + timeout, timeout, waiter)

    def _write(self, api_key: int, body: Mapping[str, Any], version: int | None, deadline: float, timeout: int,
               waiter: asyncio.Future[Obj] | _Callback | None) -> None:
        if version is None:
            version = self.version(api_key)
        self._next_cid = cid = (self._next_cid + 1) & 0x7FFFFFFF
        frame = encode_request(api_key, version, cid, self.client_id, body)
        assert self._transport is not None
        self._transport.write(frame)
        if waiter is not None:
            timer = self.timers.call_at_ms(deadline, lambda: self._timed_out(cid, timeout))
            self._in_flight[cid] = _Pending(api_key, version, waiter, timer)

    def _timed_out(self, cid: int, timeout_ms: int) -> None:
        p = self._in_flight.get(cid)
        if p is None:
            return
        self.close(KafkaTimeoutError(f"{APIS[p.api_key].name} to node {self.node_id} timed out after {timeout_ms} ms "
                                     f"(no response; {len(self._in_flight)} request(s) in flight)"))

    # -- asyncio.Protocol ------------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = transport  # type: ignore[assignment]

    def get_buffer(self, sizehint: int) -> memoryview:
        return self._receiver.get_buffer()

    def buffer_updated(self, nbytes: int) -> None:
        if self._closed:
            return
        try:
            frames = self._receiver.received(nbytes)
        except ProtocolError as exc:
            self.close(KafkaConnectionError(f"bad frame from node {self.node_id}: {exc}"))
            return
        for frame in frames:
            try:
                cid = response_correlation_id(frame)
            except ProtocolError as exc:
                self.close(KafkaConnectionError(str(exc)))
                return
            p = self._in_flight.pop(cid, None)
            if p is None:
                self.close(KafkaConnectionError(f"unexpected correlation id {cid} from node {self.node_id}"))
                return
            if p.timer is not None:
                p.timer.cancel()
            if p.fut.done():
                continue
            try:
                _, obj = decode_response(p.api_key, p.version, frame)
            except ProtocolError as exc:
                if p.api_key == ApiKey.API_VERSIONS and p.version:
                    try:
                        _, obj = decode_response(p.api_key, 0, frame)
                    except ProtocolError:
                        p.fut.set_exception(KafkaConnectionError(f"undecodable ApiVersions: {exc}"))
                        continue
                else:
                    p.fut.set_exception(KafkaConnectionError(f"undecodable {APIS[p.api_key].name}: {exc}"))
                    continue
            p.fut.set_result(obj)
        if self._receiver.error is not None:
            self.close(KafkaConnectionError(f"bad frame from node {self.node_id}: {self._receiver.error}"))

    def connection_lost(self, exc: Exception | None) -> None:
        self._shutdown(KafkaConnectionError(f"connection to node {self.node_id} lost"
                                            + (f": {exc}" if exc else "")))

    def pause_writing(self) -> None:
        self._writable.clear()

    def resume_writing(self) -> None:
        self._writable.set()


def negotiate_versions(broker: dict[int, tuple[int, int]]) -> dict[int, int]:
    """For each API both sides know, the highest version in the intersection of the ranges."""
    out: dict[int, int] = {}
    for key, api in APIS.items():
        theirs = broker.get(key)
        if theirs is None:
            continue
        hi = min(api.max_version, theirs[1], CLIENT_MAX_VERSIONS.get(key, api.max_version))
        lo = max(api.min_version, theirs[0])
        if key == ApiKey.PRODUCE:
            lo = max(lo, 3)
        if hi >= lo:
            out[key] = hi
    return out
