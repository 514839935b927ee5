"""RequestContext: what a handler knows about the request beside its body — the API version, the
client, and the connection it came in on (its listener and authorization session)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from broker.network.server import KafkaConnection
    from protocol.api import RequestHeaderData, ServerCodec

__all__ = ["RequestContext"]


class RequestContext:
    __slots__ = ("codec", "conn", "header", "received")

    def __init__(self, conn: KafkaConnection, header: RequestHeaderData, codec: ServerCodec | None = None) -> None:
        self.conn = conn
        self.header = header
        #: the request's API and version, resolved (None only for a request answered without parsing it)
        self.codec = codec
        self.received = time.perf_counter()

    @property
    def version(self) -> int:
        return self.header.api_version

    @property
    def client_id(self) -> str:
        return self.header.client_id or ""

    @property
    def client_host(self) -> str:
        return self.conn.client_host

    @property
    def listener(self) -> str:
        """The name of the listener the request came in on (answers that name brokers use its addresses)."""
        return self.conn.listener.name
