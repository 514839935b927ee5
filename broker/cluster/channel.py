"""Broker-to-broker requests over the Kafka protocol (our client's :class:`~client.conn.Connection`).

:func:`connect` opens a connection to a registered broker (the replica fetchers keep one per
leader this way).  :class:`BrokerChannel` keeps one connection per destination broker for a
kind of request that does not long-poll — transaction markers, or the checks a partition
leader makes with a transaction coordinator — reopening it when it breaks.  Requests to this
broker itself go to its own listener like any other: one code path whether the destination is
local or remote.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from broker.cluster.records import BrokerRegistration
from protocol.primitives import Obj
from protocol.timer_service import WheelTimer

if TYPE_CHECKING:
    from client.security import ClientSecurity

__all__ = ["BrokerChannel", "connect"]


async def connect(node: int, registration: BrokerRegistration | None, *, listener: str | None, client_id: str,
                  timers: WheelTimer, timeout_ms: int, address: tuple[str, int] | None = None,
                  security: ClientSecurity | None = None) -> Any:
    """An open connection (versions negotiated, authenticated with ``security`` — the inter-broker
    listener's TLS and SASL settings) to broker ``node``; ``address`` overrides its endpoint."""
    from client.conn import Connection

    if address is None:
        if registration is None:
            raise ConnectionError(f"broker {node} is not registered")
        ep = registration.endpoint(listener) or registration.endpoint()
        if ep is None:
            raise ConnectionError(f"broker {node} has no usable endpoint")
        address = (ep.host, ep.port)
    conn = Connection(node, address[0], address[1], client_id=client_id, timers=timers,
                      request_timeout_ms=timeout_ms, security=security)
    await conn.open()
    return conn


class BrokerChannel:
    """One connection per destination broker, opened on first use and after a failure."""

    def __init__(self, local_id: int, timers: WheelTimer, *, broker: Callable[[int], BrokerRegistration | None],
                 local_address: Callable[[], tuple[str, int]], client_id: str, timeout_ms: int,
                 listener: str | None = None, security: ClientSecurity | None = None) -> None:
        self.local_id = local_id
        self.timers = timers
        self.broker = broker
        self.local_address = local_address
        self.client_id = client_id
        self.timeout_ms = timeout_ms
        self.listener = listener
        self.security = security
        self._conns: dict[int, Any] = {}
        self._opening: dict[int, asyncio.Future[Any]] = {}
        self._closed = False

    async def _connection(self, node: int) -> Any:
        conn = self._conns.get(node)
        if conn is not None and not conn.closed:
            return conn
        opening = self._opening.get(node)
        if opening is None:
            address = self.local_address() if node == self.local_id else None
            opening = asyncio.ensure_future(connect(node, self.broker(node), listener=self.listener,
                                                    client_id=self.client_id, timers=self.timers,
                                                    timeout_ms=self.timeout_ms, address=address,
                                                    security=self.security))
            self._opening[node] = opening
            opening.add_done_callback(lambda _f: self._opening.pop(node, None))
        conn = await asyncio.shield(opening)
        if self._closed:
            conn.close()
            raise ConnectionError("channel closed")
        self._conns[node] = conn
        return conn

    async def request(self, node: int, api_key: int, body: dict[str, Any], *, version: int | None = None,
                      timeout_ms: int | None = None) -> Obj:
        """Send one request to broker ``node`` and return its response body.  Raises on connection
        trouble (the connection is dropped and reopened by the next request)."""
        if self._closed:
            raise ConnectionError("channel closed")
        conn = await self._connection(node)
        try:
            return await conn.request(api_key, body, version=version, timeout_ms=timeout_ms)
        except Exception:
            conn.close()
            if self._conns.get(node) is conn:
                del self._conns[node]
            raise

    def version(self, node: int, api_key: int) -> int | None:
        """The version negotiated with ``node`` for ``api_key`` (None until connected, or unsupported)."""
        conn = self._conns.get(node)
        if conn is None or conn.closed:
            return None
        return conn.versions.get(api_key)

    def drop(self, node: int) -> None:
        conn = self._conns.pop(node, None)
        if conn is not None:
            conn.close()

    def close(self) -> None:
        self._closed = True
        for conn in self._conns.values():
            conn.close()
        self._conns.clear()
