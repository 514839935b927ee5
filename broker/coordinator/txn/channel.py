"""TxnChannel: where the transaction requests brokers make of brokers go — COMMIT/ABORT markers
(WriteTxnMarkers, coordinator → partition leaders) and the partition checks (AddPartitionsToTxn v4+,
partition leader → coordinator).

A request to this broker itself is handled in process (``local``: the broker's own dispatch, no
connection, no login, no authorization — it is the broker's own request), so a broker whose
listeners all need a login it has no credentials for still completes its transactions.  A request
to another broker goes over the inter-broker listener through a
:class:`~broker.cluster.channel.BrokerChannel`, authenticated with the broker's own credentials.
Either way the answer is the response body as the wire would carry it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from protocol.primitives import Obj

__all__ = ["LocalRequest", "RemoteChannel", "TxnChannel"]

#: ``(api_key, version, body)`` handled by this broker in process: the response body
LocalRequest = Callable[[int, int, dict[str, Any]], Awaitable[Obj]]


class RemoteChannel(Protocol):
    """What a :class:`~broker.cluster.channel.BrokerChannel` offers."""

    async def request(self, node: int, api_key: int, body: dict[str, Any], *, version: int | None = None,
                      timeout_ms: int | None = None) -> Obj: ...

    def close(self) -> None: ...


class TxnChannel:
    """Requests to broker ``local_id`` in process (``local``), to the others over ``remote``."""

    def __init__(self, local_id: int, remote: RemoteChannel, local: LocalRequest) -> None:
        self.local_id = local_id
        self.remote = remote
        self.local = local
        self._closed = False

    async def request(self, node: int, api_key: int, body: dict[str, Any], *, version: int,
                      timeout_ms: int | None = None) -> Obj:
        """The response body of one request to broker ``node``; raises when it cannot be had (a lost
        connection, a timeout), as a network request would."""
        if self._closed:
            raise ConnectionError("channel closed")
        if node != self.local_id:
            return await self.remote.request(node, api_key, body, version=version, timeout_ms=timeout_ms)
        handled = asyncio.ensure_future(self.local(api_key, version, body))
        handled.add_done_callback(_retrieve)
        if timeout_ms is None:
            return await handled
        # a request that times out is left to finish, as the broker on the other end of a
        # connection would finish it: only the waiting stops
        return await asyncio.wait_for(asyncio.shield(handled), timeout_ms / 1000)

    def close(self) -> None:
        self._closed = True
        self.remote.close()


def _retrieve(task: asyncio.Future[Any]) -> None:
    """A request nobody waits for any more may still fail: its error is not "never retrieved"."""
    if not task.cancelled():
        task.exception()
