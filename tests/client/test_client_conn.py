"""Connection deadlines: a request fails with KafkaTimeoutError instead of waiting forever.

The bounds on elapsed time are generous (30 s, a busy machine stays well within them) and, where a test
tells a short deadline from the connection's default one, that default is far longer (120 s)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import pytest

from client.conn import Connection
from client.errors import KafkaConnectionError, KafkaTimeoutError
from protocol.api import ApiKey
from protocol.timer_service import WheelTimer

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
async def silent_server() -> AsyncIterator[tuple[str, int]]:
    """Accepts connections and reads requests but never answers (a hung or overloaded broker)."""
    writers: list[asyncio.StreamWriter] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writers.append(writer)
        while await reader.read(65536):
            pass

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    host, port = server.sockets[0].getsockname()[:2]
    try:
        yield host, port
    finally:
        for w in writers:
            w.close()
        server.close()
        await server.wait_closed()


async def test_open_against_a_broker_that_never_answers_times_out(silent_server: tuple[str, int]) -> None:
    timers = WheelTimer()
    conn = Connection(1, *silent_server, client_id="t", timers=timers, request_timeout_ms=300)
    t0 = time.monotonic()
    with pytest.raises(KafkaTimeoutError, match="ApiVersions to node 1 timed out after 300 ms"):
        await conn.open()
    assert time.monotonic() - t0 < 30
    assert conn.closed
    timers.close()


async def test_request_times_out_and_fails_every_request_in_flight(silent_server: tuple[str, int]) -> None:
    timers = WheelTimer()
    conn = Connection(1, *silent_server, client_id="t", timers=timers, request_timeout_ms=120_000)
    loop = asyncio.get_running_loop()
    await loop.create_connection(lambda: conn, *silent_server)
    long = asyncio.ensure_future(conn.request(ApiKey.METADATA, {"topics": []}, version=1))
    short = asyncio.ensure_future(conn.request(ApiKey.METADATA, {"topics": []}, version=1, timeout_ms=200))
    done, _ = await asyncio.wait([long, short], timeout=30)
    assert done == {long, short}, "a timed-out request must also fail the others on its connection"
    with pytest.raises(KafkaTimeoutError, match="timed out after 200 ms"):
        short.result()
    with pytest.raises(KafkaTimeoutError):
        long.result()
    with pytest.raises(KafkaTimeoutError):  # the connection stays failed with the same error
        await conn.request(ApiKey.METADATA, {"topics": []}, version=1)
    timers.close()


async def test_back_pressure_wait_is_bounded_by_the_request_timeout(silent_server: tuple[str, int]) -> None:
    timers = WheelTimer()
    conn = Connection(1, *silent_server, client_id="t", timers=timers, request_timeout_ms=120_000)
    await asyncio.get_running_loop().create_connection(lambda: conn, *silent_server)
    conn.pause_writing()  # what the transport does when the peer stops reading and the buffer fills
    t0 = time.monotonic()
    with pytest.raises(KafkaTimeoutError, match="waiting for the connection to drain"):
        await conn.request(ApiKey.METADATA, {"topics": []}, version=1, timeout_ms=200)
    assert time.monotonic() - t0 < 30  # the request's 200 ms, not the connection's 120 s
    assert conn.closed
    timers.close()


async def test_back_pressure_wait_ends_when_the_connection_closes(silent_server: tuple[str, int]) -> None:
    timers = WheelTimer()
    conn = Connection(1, *silent_server, client_id="t", timers=timers, request_timeout_ms=10_000)
    await asyncio.get_running_loop().create_connection(lambda: conn, *silent_server)
    conn.pause_writing()
    req = asyncio.ensure_future(conn.request(ApiKey.METADATA, {"topics": []}, version=1))
    await asyncio.sleep(0)
    conn.close()
    with pytest.raises(KafkaConnectionError):
        await asyncio.wait_for(req, 30)
    timers.close()
