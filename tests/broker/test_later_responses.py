"""Responses still to come: a parked request is answered from its future's done callback.

An in-process broker and one :class:`~broker.network.server.KafkaConnection` on a transport that keeps what
it is given; frames are handed to the connection as the event loop would after a read.  OffsetCommit is the
request that waits here (its answer comes once the commit's record is written to ``__consumer_offsets``).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest
from test_coordinator_load import until

from broker.network.server import KafkaConnection
from broker.testing.embedded import Broker
from broker.testing.transport import FrameTransport, feed
from protocol.api import ApiKey, decode_response, encode_request
from protocol.error_codes import ErrorCode

E = ErrorCode
COMMIT_V = 8
GROUP = "later-commits"


def _commit(correlation_id: int, offset: int) -> bytes:
    return encode_request(ApiKey.OFFSET_COMMIT, COMMIT_V, correlation_id, "later", {
        "group_id": GROUP, "generation_id_or_member_epoch": -1, "member_id": "", "group_instance_id": None,
        "topics": [{"name": "later-topic", "partitions": [
            {"partition_index": 0, "committed_offset": offset, "committed_leader_epoch": -1,
             "committed_metadata": None}]}]})


async def _committed(broker: Broker) -> int:
    conn, transport = _connection(broker)
    feed(conn, encode_request(ApiKey.OFFSET_FETCH, 7, 99, "later", {
        "group_id": GROUP, "topics": [{"name": "later-topic", "partition_indexes": [0]}], "require_stable": False}))
    await until(lambda: transport.frames, "the OffsetFetch answer")
    _, body = decode_response(ApiKey.OFFSET_FETCH, 7, transport.frames[0])
    conn.connection_lost(None)
    return body["topics"][0]["partitions"][0]["committed_offset"]


def _connection(broker: Broker) -> tuple[KafkaConnection, FrameTransport]:
    transport = FrameTransport()
    conn = KafkaConnection(broker.core.server)
    conn.connection_made(transport)  # type: ignore[arg-type]
    return conn, transport


@pytest.fixture
async def broker() -> Any:
    b = Broker(port=0, event_loop_stall_warn_ms=0)
    await b.start()
    try:
        created = await b.core.dispatcher.in_process(ApiKey.CREATE_TOPICS, 5, {
            "topics": [{"name": "later-topic", "num_partitions": 1, "replication_factor": 1, "assignments": [],
                        "configs": []}], "timeout_ms": 30_000, "validate_only": False})
        assert created["topics"][0]["error_code"] == E.NONE
        yield b
    finally:
        await b.stop()


async def test_parked_requests_are_answered_in_order_without_a_task_each(broker: Broker) -> None:
    await _committed(broker)  # the coordinator loaded, the codecs warm
    conn, transport = _connection(broker)
    before = len(asyncio.all_tasks())
    n = 32
    feed(conn, b"".join(_commit(i + 1, 100 + i) for i in range(n)))
    assert not transport.frames, "an OffsetCommit is answered only once its record is written"
    assert len(conn.pending) == n
    # each waits on the future the coordinator handed out, not on a task of its own
    assert len(asyncio.all_tasks()) - before < n // 2
    await until(lambda: len(transport.frames) == n, f"{n} OffsetCommit answers")
    answers = [decode_response(ApiKey.OFFSET_COMMIT, COMMIT_V, f) for f in transport.frames]
    assert [cid for cid, _ in answers] == list(range(1, n + 1))
    assert all(b["topics"][0]["partitions"][0]["error_code"] == E.NONE for _, b in answers)
    assert not conn.pending and not conn.waiting
    assert await _committed(broker) == 100 + n - 1
    conn.connection_lost(None)


async def test_a_connection_lost_while_requests_wait_drops_their_answers_only(
        broker: Broker, caplog: pytest.LogCaptureFixture) -> None:
    await _committed(broker)
    conn, transport = _connection(broker)
    feed(conn, b"".join(_commit(i + 1, 500 + i) for i in range(8)))
    waiting = list(conn.waiting)
    assert len(waiting) == 8 and not transport.frames
    with caplog.at_level(logging.ERROR):
        conn.connection_lost(None)
        assert all(f.cancelled() for f in waiting)
        # the commits were handed to the coordinator: they are still written, nobody is answered
        await until(lambda: broker.core.services.groups.runtime._pending == {}, "the writes to complete")
        assert await _committed(broker) == 507
    assert not transport.frames
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


async def test_a_future_that_fails_closes_the_connection_after_the_answers_before_it(
        broker: Broker, caplog: pytest.LogCaptureFixture) -> None:
    dispatcher = broker.core.dispatcher
    key = (ApiKey.OFFSET_COMMIT, COMMIT_V)
    codec, handler = dispatcher._routes[key]
    failing: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
    calls = 0

    def second_fails(services: Any, ctx: Any, req: Any) -> Any:
        nonlocal calls
        calls += 1
        return failing if calls == 2 else handler(services, ctx, req)

    dispatcher._routes[key] = (codec, second_fails)
    conn, transport = _connection(broker)
    feed(conn, _commit(1, 1) + _commit(2, 2))
    await until(lambda: len(transport.frames) == 1, "the first answer")
    assert not conn.closed
    with caplog.at_level(logging.ERROR):
        failing.set_exception(RuntimeError("handler broke"))
        await until(lambda: conn.closed, "the connection to close")
    assert len(transport.frames) == 1 and transport.closed
    assert any("request handler failed" in r.getMessage() for r in caplog.records)
