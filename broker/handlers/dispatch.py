"""RequestDispatcher: the one place a request frame becomes a handler call and its answer a frame.

For each request it resolves (API, version) to its codec and registered handler, decodes the
body, passes it through the authorization pass (:class:`~broker.handlers.authorization.RequestAuthorizer`,
when the connection carries an authorization session), applies injected faults, runs the handler
and encodes its answer — at once, or as a :class:`Later` when the handler's answer is still to come
(encoded by a callback on its future when it resolves: no task or coroutine per parked request).
Unknown APIs close the connection; versions it cannot parse get UNSUPPORTED_VERSION (ApiVersions:
KIP-511's v0 answer).
Encoding, ordering and transmission belong to :mod:`broker.network.server`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from time import perf_counter
from typing import TYPE_CHECKING, Any

import broker.handlers.all  # noqa: F401  (registers every handler)
from broker.handlers.authorization import Deny
from broker.handlers.context import RequestContext
from broker.handlers.registry import HANDLERS, ApiHandler, Handler, Reply, api_versions_entries
from broker.log.region import FileRegion, read_region
from protocol.api import (
    APIS,
    ApiKey,
    RequestHeaderData,
    ServerCodec,
    decode_request_body,
    decode_request_header,
    decode_response,
    encode_request,
    encode_response_frame,
    encode_response_parts,
    peek_header,
    response_parts,
    server_codec,
)
from protocol.error_codes import ErrorCode
from protocol.error_response import error_response
from protocol.errors import ProtocolError
from protocol.primitives import Obj

if TYPE_CHECKING:
    from broker.handlers.services import Services
    from broker.network.server import KafkaConnection
    from broker.observability.metrics import BrokerMetrics
    from broker.security.acl import AuthorizationSession
    from broker.testing.faults import FaultInjector

__all__ = ["Later", "RequestDispatcher"]

E = ErrorCode
_API_VERSIONS = int(ApiKey.API_VERSIONS)


class _InProcessPeer:
    """The connection-shaped peer of :meth:`RequestDispatcher.in_process`: the broker itself."""

    client_id = "kbroker-in-process"
    client_host = "in-process"
    session = None

    class listener:
        name = ""


_IN_PROCESS: Any = _InProcessPeer()


class _OnBehalfPeer:
    """The connection-shaped peer of :meth:`RequestDispatcher.on_behalf_of`: a principal this broker
    acts for (its web console's user), with that principal's authorization session."""

    __slots__ = ("client_host", "client_id", "session")

    class listener:
        name = ""

    def __init__(self, session: AuthorizationSession | None, client_id: str, client_host: str) -> None:
        self.session = session
        self.client_id = client_id
        self.client_host = client_host

#: answers a request (as authorized here) on another broker: the console's requests for a partition
#: leader or a group coordinator elsewhere in the cluster
Forward = Callable[[Obj], Awaitable[Obj]]


class Later:
    """A response still to come: ``future`` resolves to the handler's reply (a body, or None for no
    response), which :meth:`parts` encodes.  A handler's future (a parked coordinator request, a
    purgatory wait) is used as it is; any other awaitable runs as a task."""

    __slots__ = ("ctx", "dispatcher", "future")

    def __init__(self, future: asyncio.Future[Any], ctx: RequestContext, dispatcher: RequestDispatcher) -> None:
        self.future = future
        self.ctx = ctx
        self.dispatcher = dispatcher

    def parts(self) -> Any:
        """The response parts of the resolved reply (None: no response); raises what the handler
        raised, or what encoding it raises."""
        return self.dispatcher._respond(self.ctx, self.future.result())


class RequestDispatcher:
    def __init__(self, services: Services, *, metrics: BrokerMetrics, faults: FaultInjector | None = None) -> None:
        self.services = services
        self.metrics = metrics
        self.faults = faults
        self.authz = services.authz
        #: (API key, version) -> its codec and handler, for every version served
        self._routes: dict[tuple[int, int], tuple[ServerCodec, Handler]] = {}
        for key, h in HANDLERS.items():
            for version in range(h.min_version, h.max_version + 1):
                codec = server_codec(key, version)
                assert codec is not None, f"no codec for {h.name} v{version}"
                self._routes[(key, version)] = (codec, h.handle)
        self._api_versions = api_versions_entries()

    # -- dispatch ----------------------------------------------------------------------

    def dispatch(self, conn: KafkaConnection, frame: bytes) -> Any:
        """Decode one request frame and run its handler; returns response parts (None: no response)
        or a :class:`Later`."""
        key, version, correlation_id = peek_header(frame)
        route = self._routes.get((key, version))
        if route is None:
            return self._unroutable(conn, frame, key, version, correlation_id)
        codec, handler = route
        header = codec.header(frame, correlation_id)
        ctx = RequestContext(conn, header, codec)
        request = codec.decode(frame, header.body_offset)
        session = conn.session
        if session is not None:
            verdict = self.authz.check(session, key, version, request)
            if verdict is not None:
                if isinstance(verdict, Deny):
                    return self._respond(ctx, verdict.body)
                request = verdict.request
                handler = _merged(handler, verdict.merge)
        faults = self.faults
        if faults is not None and faults.active:
            fault = faults.intercept(key)
            if fault is not None:
                return self._later(ctx, self._run_fault(ctx, request, handler, fault))
        result = handler(self.services, ctx, request)
        if result is None or isinstance(result, dict):
            return self._respond(ctx, result)
        return self._later(ctx, result)

    def _later(self, ctx: RequestContext, pending: Awaitable[Reply]) -> Later:
        future = pending if isinstance(pending, asyncio.Future) else asyncio.ensure_future(pending)
        return Later(future, ctx, self)

    def _unroutable(self, conn: KafkaConnection, frame: bytes, key: int, version: int, correlation_id: int) -> Any:
        """A request of an API key we do not serve, or of a version we cannot parse."""
        h = HANDLERS.get(key)
        if key == _API_VERSIONS and (h is None or version > h.max_version):
            # KIP-511: answer an ApiVersions we cannot parse with a v0 body naming our range.  Nothing
            # after the correlation id is read: a client may encode a newer version's header either
            # way (with or without tagged fields), and the answer needs neither it nor the body.
            ctx = RequestContext(conn, RequestHeaderData(key, version, correlation_id, None, len(frame)))
            body = Obj(error_code=E.UNSUPPORTED_VERSION, api_keys=[
                e for e in self._api_versions if e["api_key"] == ApiKey.API_VERSIONS])
            return self._respond(ctx, body, version_override=0)
        header = decode_request_header(frame)
        if h is None:
            self.metrics.request_error(f"Unknown{key}", E.UNSUPPORTED_VERSION)
            raise ProtocolError(f"unsupported api key {key}")
        # The body cannot be parsed; answer in the nearest version we serve.
        nearest = min(max(version, h.min_version), h.max_version)
        body = error_response(key, nearest, APIS[key].request.default(nearest), E.UNSUPPORTED_VERSION)
        return self._respond(RequestContext(conn, header), body, version_override=nearest)

    async def in_process(self, api_key: int, version: int, body: dict[str, Any]) -> Obj:
        """A request this broker makes of itself (its transaction coordinator's markers for its own
        partitions, its partitions' checks with its own coordinator): encoded and decoded as on the
        wire and handled at once — no connection, no login, no authorization (it is the broker's own
        request).  Returns the response body as a client would read it."""
        frame = memoryview(encode_request(api_key, version, 0, _IN_PROCESS.client_id, body))[4:]
        header = decode_request_header(frame)
        result = HANDLERS[api_key].handle(self.services, RequestContext(_IN_PROCESS, header),
                                          decode_request_body(header, frame))
        if result is not None and not isinstance(result, dict):
            result = await result
        return await self._decoded(api_key, version, result)

    async def on_behalf_of(self, session: AuthorizationSession | None, api_key: int, version: int,
                           body: dict[str, Any], *, client_id: str = "kbroker-console", client_host: str = "",
                           forward: Forward | None = None) -> Obj:
        """A request made for a principal who is not on a Kafka connection (the web console's user):
        encoded and decoded as on the wire, passed through the same authorization pass as a
        connection's requests with that principal's ``session`` (None: authorization is off), and
        handled here — or, with ``forward``, answered by the broker that owns what it names (the
        request as authorized here is sent there, and the answer merged with what was refused here).
        Record data the answer carries is read from the segment files off the event loop.  Returns
        the response body as a client would read it."""
        frame = memoryview(encode_request(api_key, version, 0, client_id, body))[4:]
        header = decode_request_header(frame)
        request = decode_request_body(header, frame)
        merge: Callable[[Any], Any] | None = None
        if session is not None:
            verdict = self.authz.check(session, api_key, version, request)
            if isinstance(verdict, Deny):
                return await self._decoded(api_key, version, verdict.body)
            if verdict is not None:
                request, merge = verdict.request, verdict.merge
        if forward is not None:
            result: Any = await forward(request)
        else:
            peer = _OnBehalfPeer(session, client_id, client_host)
            result = HANDLERS[api_key].handle(self.services, RequestContext(peer, header), request)
            if result is not None and not isinstance(result, dict):
                result = await result
        if merge is not None:
            result = merge(result)
        return await self._decoded(api_key, version, result)

    @staticmethod
    async def _decoded(api_key: int, version: int, body: Any) -> Obj:
        """``body`` encoded as a response and decoded as a client reads it; file regions read off the loop."""
        parts = encode_response_parts(api_key, version, 0, body)
        if any(isinstance(part, FileRegion) for part in parts):
            loop = asyncio.get_running_loop()
            parts = [await loop.run_in_executor(None, read_region, part) if isinstance(part, FileRegion) else part
                     for part in parts]
        response = b"".join(bytes(part) for part in parts)
        return decode_response(api_key, version, memoryview(response)[4:])[1]

    async def _run_fault(self, ctx: RequestContext, request: Obj, handler: Handler, fault: Any) -> Reply:
        if fault.latency_ms:
            await asyncio.sleep(fault.latency_ms / 1000)
        if fault.drop_connection:
            ctx.conn.fail("fault injection: drop connection")
            return None
        if fault.error_code is not None:
            return error_response(ctx.header.api_key, ctx.version, request, fault.error_code)
        result = handler(self.services, ctx, request)
        if result is not None and not isinstance(result, dict):
            result = await result
        return result

    def _respond(self, ctx: RequestContext, body: Reply, version_override: int | None = None) -> Any:
        header = ctx.header
        codec = ctx.codec
        name = codec.name if codec is not None else APIS[header.api_key].name
        if body is None:
            self.metrics.observe_request(name, header.api_version, perf_counter() - ctx.received)
            return None
        if codec is not None and version_override is None:
            frame = codec.encode_response(header.correlation_id, body)
        else:
            version = header.api_version if version_override is None else version_override
            frame = encode_response_frame(header.api_key, version, header.correlation_id, body)
        self.metrics.observe_request(name, header.api_version, perf_counter() - ctx.received,
                                     frame.errors)
        return response_parts(frame)

    @staticmethod
    def handler(key: int) -> ApiHandler | None:
        return HANDLERS.get(key)


def _merged(handler: Handler, merge: Callable[[Any], Any]) -> Handler:
    """``handler`` with its response (now or later) passed through ``merge`` (authorization)."""

    def run(services: Services, ctx: RequestContext, req: Obj) -> Any:
        result = handler(services, ctx, req)
        if result is None or isinstance(result, dict):
            return merge(result)
        return _merge_later(result, merge)

    return run


async def _merge_later(pending: Awaitable[Any], merge: Callable[[Any], Any]) -> Any:
    return merge(await pending)
