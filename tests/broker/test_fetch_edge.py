"""The Fetch path at the network edge, over real sockets against an in-process broker.

* back-pressure: a client that pipelines large Fetches and never reads holds a bounded amount of
  broker memory (per connection and broker-wide), then gets every response intact and in order;
  record data goes out with sendfile, never through memory — except on TLS, where it must be
  encrypted;
* file lifetime: a queued Fetch response sends the bytes it was built from even when its segment
  is deleted (topic deletion, DeleteRecords) and the descriptor number is reused meanwhile;
* purgatory hygiene: long polls that expire, or whose topic is deleted, leave no watch entries.

Bounds come from the settings and from counts, never from elapsed time; waits are for events.
"""

from __future__ import annotations

import asyncio
import os
import socket
import ssl
import struct
import subprocess
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from peers import require_tool

from broker import BrokerThread
from broker.network.server import KafkaConnection
from protocol.api import ApiKey, decode_response, encode_request
from protocol.records import encode_batch

MiB = 1024 * 1024
FETCH_VERSION = 12
_size = struct.Struct(">i")


# -- a blocking raw client ------------------------------------------------------------


class Raw:
    def __init__(self, port: int, *, rcvbuf: int | None = None) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if rcvbuf is not None:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        self.sock.settimeout(60)
        self.sock.connect(("127.0.0.1", port))
        self.cid = 0

    @property
    def local_port(self) -> int:
        return int(self.sock.getsockname()[1])

    def frame(self, api: int, version: int, body: dict[str, Any]) -> bytes:
        self.cid += 1
        return encode_request(api, version, self.cid, "edge-test", body)

    def read(self, api: int, version: int) -> tuple[int, Any]:
        (size,) = _size.unpack(self._exact(4))
        return decode_response(api, version, self._exact(size))

    def call(self, api: int, version: int, body: dict[str, Any]) -> Any:
        self.sock.sendall(self.frame(api, version, body))
        cid, resp = self.read(api, version)
        assert cid == self.cid
        return resp

    def _exact(self, n: int) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            chunk = self.sock.recv(min(n - len(buf), 4 * MiB))
            if not chunk:
                raise ConnectionError(f"closed after {len(buf)} of {n} bytes")
            buf += chunk
        return bytes(buf)

    def close(self) -> None:
        self.sock.close()


def fetch_body(topic: str, partition: int = 0, offset: int = 0, *, max_bytes: int = 4 * MiB,
               max_wait_ms: int = 0, min_bytes: int = 1) -> dict[str, Any]:
    return {"replica_id": -1, "max_wait_ms": max_wait_ms, "min_bytes": min_bytes, "max_bytes": max_bytes,
            "isolation_level": 0, "session_id": 0, "session_epoch": -1, "rack_id": "",
            "forgotten_topics_data": [],
            "topics": [{"topic": topic, "partitions": [
                {"partition": partition, "fetch_offset": offset, "partition_max_bytes": max_bytes,
                 "current_leader_epoch": -1, "log_start_offset": -1, "last_fetched_epoch": -1}]}]}


def multi_fetch_body(topic: str, partitions: range, *, max_wait_ms: int) -> dict[str, Any]:
    body = fetch_body(topic, max_wait_ms=max_wait_ms)
    body["topics"][0]["partitions"] = [
        {"partition": p, "fetch_offset": 0, "partition_max_bytes": MiB, "current_leader_epoch": -1,
         "log_start_offset": -1, "last_fetched_epoch": -1} for p in partitions]
    return body


def records_of(resp: Any) -> bytes:
    part = resp.responses[0].partitions[0]
    assert part.error_code == 0, part
    return bytes(part.records or b"")


def create_topic(c: Raw, name: str, partitions: int = 1, configs: dict[str, str] | None = None) -> None:
    resp = c.call(ApiKey.CREATE_TOPICS, 5, {
        "topics": [{"name": name, "num_partitions": partitions, "replication_factor": 1, "assignments": [],
                    "configs": [{"name": k, "value": v} for k, v in (configs or {}).items()]}],
        "timeout_ms": 10_000, "validate_only": False})
    assert resp.topics[0].error_code == 0, resp


def delete_topic(c: Raw, name: str) -> None:
    resp = c.call(ApiKey.DELETE_TOPICS, 4, {"topic_names": [name], "timeout_ms": 10_000})
    assert resp.responses[0].error_code == 0, resp


def produce(c: Raw, topic: str, values: list[bytes], partition: int = 0) -> None:
    for value in values:
        resp = c.call(ApiKey.PRODUCE, 9, {
            "transactional_id": None, "acks": -1, "timeout_ms": 10_000,
            "topic_data": [{"name": topic, "partition_data": [
                {"index": partition, "records": encode_batch([(None, value, None, None)])}]}]})
        assert resp.responses[0].partition_responses[0].error_code == 0, resp


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def wait_for(cond: Callable[[], Any], what: str, timeout: float = 60.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = cond()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.02)


def connection(broker: BrokerThread, local_port: int) -> KafkaConnection | None:
    for conn in broker.core.server.connections:
        if conn.peer.endswith(f":{local_port}"):
            return conn
    return None


def probe(broker: BrokerThread, local_port: int) -> dict[str, Any]:
    """The connection's state, read on the broker's loop (works on any version of the edge);
    ``{}`` until the broker has accepted it."""
    def read() -> dict[str, Any]:
        conn = connection(broker, local_port)
        if conn is None or conn.transport is None:
            return {}
        return {"paused": conn.paused_reading, "buffered": conn.transport.get_write_buffer_size(),
                "queued": getattr(conn, "queued_bytes", 0), "backlog": len(getattr(conn, "backlog", ())),
                "pending": len(conn.pending)}
    result: dict[str, Any] = broker.call(read)
    return result


@pytest.fixture
def make_broker(tmp_path) -> Iterator[Callable[..., BrokerThread]]:
    started: list[BrokerThread] = []

    def make(**settings: Any) -> BrokerThread:
        broker = BrokerThread(data_dir=str(tmp_path / f"data{len(started)}"), **settings).start()
        started.append(broker)
        return broker

    yield make
    for broker in started:
        broker.stop()


def load_partition(broker: BrokerThread, topic: str, batches: int, seed: int) -> bytes:
    """A topic whose partition 0 holds ``batches`` batches of ~1 MB; returns the record bytes."""
    values = [bytes([seed]) * 16 + os.urandom(1_000_000) for _ in range(batches)]
    c = Raw(broker.port)
    try:
        create_topic(c, topic)
        produce(c, topic, values)
        expected = records_of(c.call(ApiKey.FETCH, FETCH_VERSION, fetch_body(topic)))
    finally:
        c.close()
    assert len(expected) > batches * 1_000_000
    return expected


# -- item: bounded memory for clients that do not read -----------------------------------


@pytest.mark.parametrize("mode", ["sendfile", "copy"])
def test_unread_pipelined_fetches_hold_bounded_memory(make_broker, mode: str) -> None:
    per_connection, write_buffer, fetches = 8 * MiB, 1 * MiB, 60
    broker = make_broker(queued_max_response_bytes_per_connection=per_connection,
                         connection_write_buffer_bytes=write_buffer)
    if mode == "copy":
        broker.call(lambda: setattr(broker.core.server, "zero_copy", False))
    expected = load_partition(broker, "big", 3, seed=1)
    response = len(expected) + 4096  # one response: the records plus its framing

    client = Raw(broker.port)
    try:
        rss_before = rss_bytes()
        client.sock.sendall(b"".join(client.frame(ApiKey.FETCH, FETCH_VERSION, fetch_body("big"))
                                     for _ in range(fetches)))
        # the broker stops reading this connection once it holds back or cannot write
        wait_for(lambda: probe(broker, client.local_port).get("paused"), "reading paused")
        samples = [probe(broker, client.local_port) for _ in range(50)]
        rss_growth = rss_bytes() - rss_before
        for s in samples:
            # responses the connection holds, record data included: the limit plus the one crossing it
            assert s["queued"] <= per_connection + response, s
            # user-space write buffer: the high-water mark plus one copied piece
            assert s["buffered"] <= write_buffer + 128 * 1024, s
        assert samples[-1]["backlog"] > 0, "requests beyond the limit wait undecoded-in-effect"
        assert rss_growth < per_connection + write_buffer + 48 * MiB, f"RSS grew by {rss_growth} bytes"

        # the client reads: every response arrives, in order, intact
        for cid in range(1, fetches + 1):
            got_cid, resp = client.read(ApiKey.FETCH, FETCH_VERSION)
            assert got_cid == cid
            assert records_of(resp) == expected
    finally:
        client.close()
    assert wait_for(lambda: broker.call(lambda: broker.core.server.queued_bytes == 0), "budget returned")


def test_broker_wide_budget_bounds_many_unread_connections(make_broker) -> None:
    broker_limit, write_buffer, fetches = 6 * MiB, 1 * MiB, 12
    broker = make_broker(queued_max_response_bytes=broker_limit, connection_write_buffer_bytes=write_buffer)
    expected = load_partition(broker, "big", 3, seed=2)
    response = len(expected) + 4096
    clients = [Raw(broker.port) for _ in range(3)]
    try:
        for c in clients:
            c.sock.sendall(b"".join(c.frame(ApiKey.FETCH, FETCH_VERSION, fetch_body("big"))
                                    for _ in range(fetches)))
        for c in clients:
            wait_for(lambda c=c: probe(broker, c.local_port).get("paused"), "reading paused")
        states = [probe(broker, c.local_port) for c in clients]
        total_queued = broker.call(lambda: getattr(broker.core.server, "queued_bytes", 0))
        # over the budget, only connections with nothing waiting take one more request each
        assert total_queued <= broker_limit + (len(clients) + 1) * response, states
        assert sum(s["buffered"] for s in states) <= len(clients) * (write_buffer + 128 * 1024), states
        assert any(s["backlog"] for s in states), states

        for c in clients:
            for cid in range(1, fetches + 1):
                got_cid, resp = c.read(ApiKey.FETCH, FETCH_VERSION)
                assert got_cid == cid
                assert records_of(resp) == expected
    finally:
        for c in clients:
            c.close()


def test_record_data_waits_for_buffered_bytes_instead_of_being_copied(make_broker) -> None:
    """With sendfile, record data never passes through memory: when bytes of earlier responses
    are still in the write buffer (the socket is full), a region waits for them to drain instead
    of being copied in behind them, so a client that does not read holds only non-record bytes."""
    write_buffer, fetches = 1 * MiB, 6
    broker = make_broker(connection_write_buffer_bytes=write_buffer)
    expected = load_partition(broker, "big", 3, seed=6)
    # a plain-bytes response of ~0.6 MB: most of it stays in the write buffer, below its limit
    metadata = {"topics": [{"name": f"absent-{i:05d}-" + "x" * 200} for i in range(2_500)],
                "allow_auto_topic_creation": False}
    client = Raw(broker.port, rcvbuf=32 * 1024)
    try:
        client.sock.sendall(client.frame(ApiKey.METADATA, 4, metadata))
        (size,) = _size.unpack(client._exact(4))
        client._exact(size)
        metadata_frame = 4 + size
        assert write_buffer // 4 < metadata_frame < write_buffer

        def shrink_send_buffer() -> None:
            conn = connection(broker, client.local_port)
            assert conn is not None and conn.transport is not None
            conn.transport.get_extra_info("socket").setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 16 * 1024)

        broker.call(shrink_send_buffer)
        sendfile_before = broker.call(lambda: broker.core.server.sendfile_bytes)
        client.sock.sendall(client.frame(ApiKey.METADATA, 4, metadata)
                            + b"".join(client.frame(ApiKey.FETCH, FETCH_VERSION, fetch_body("big"))
                                       for _ in range(fetches)))
        wait_for(lambda: probe(broker, client.local_port).get("paused"), "writing held up")
        for s in [probe(broker, client.local_port) for _ in range(20)]:
            # the metadata response and frame headers only: no record bytes were copied in
            assert s["buffered"] <= metadata_frame + 64 * 1024, s

        got_cid, _ = client.read(ApiKey.METADATA, 4)
        assert got_cid == 2
        for cid in range(3, fetches + 3):
            got_cid, resp = client.read(ApiKey.FETCH, FETCH_VERSION)
            assert got_cid == cid
            assert records_of(resp) == expected
    finally:
        client.close()
    sent = broker.call(lambda: broker.core.server.sendfile_bytes) - sendfile_before
    assert sent == fetches * len(expected), "every record byte went out with sendfile"


def test_tls_connections_send_record_data_through_the_tls_layer(make_broker, tmp_path) -> None:
    """sendfile writes to the raw socket: on a TLS connection it would put plaintext record
    bytes into the encrypted stream, so record data is copied through the TLS transport."""
    openssl = require_tool("openssl")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run([openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key),
                    "-out", str(cert), "-days", "1", "-subj", "/CN=127.0.0.1"],
                   check=True, capture_output=True, timeout=60)
    broker = make_broker()
    expected = load_partition(broker, "big", 2, seed=7)
    server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_ctx.load_cert_chain(cert, key)

    async def listen() -> asyncio.AbstractServer:
        return await asyncio.get_running_loop().create_server(
            lambda: KafkaConnection(broker.core.server), "127.0.0.1", 0, ssl=server_ctx)

    listener = broker.call(listen)  # call() awaits what the function returns
    try:
        client = Raw(listener.sockets[0].getsockname()[1])
        client_ctx = ssl.create_default_context(cafile=str(cert))
        client_ctx.check_hostname = False
        client.sock = client_ctx.wrap_socket(client.sock)
        sendfile_before = broker.call(lambda: broker.core.server.sendfile_bytes)
        for _ in range(2):
            assert records_of(client.call(ApiKey.FETCH, FETCH_VERSION, fetch_body("big"))) == expected
        assert broker.call(lambda: broker.core.server.sendfile_bytes) == sendfile_before
        client.close()
    finally:
        broker.call(listener.close)


# -- item: a queued response keeps its files ---------------------------------------------


def _queue_behind_long_poll(broker: BrokerThread, topic: str, offset: int = 0) -> Raw:
    """A connection whose Fetch of ``topic`` is answered but waits behind a parked long poll."""
    client = Raw(broker.port)
    client.sock.sendall(client.frame(ApiKey.FETCH, FETCH_VERSION, fetch_body("idle", max_wait_ms=120_000))
                        + client.frame(ApiKey.FETCH, FETCH_VERSION, fetch_body(topic, offset=offset)))
    wait_for(lambda: probe(broker, client.local_port).get("pending") == 2
             and broker.call(lambda: broker.core.replica_manager.fetch_purgatory.num_delayed) == 1,
             "one parked fetch and one answered behind it")
    return client


def _reuse_descriptors(admin: Raw) -> None:
    """Open fresh segment files with other content, so freed descriptor numbers get reused."""
    create_topic(admin, "newcomer", partitions=4)
    for p in range(4):
        produce(admin, "newcomer", [b"\x55" * 500_000], partition=p)


def _release_long_poll_and_read(admin: Raw, client: Raw) -> bytes:
    produce(admin, "idle", [b"wake up"])
    cid, _ = client.read(ApiKey.FETCH, FETCH_VERSION)
    assert cid == 1
    cid, resp = client.read(ApiKey.FETCH, FETCH_VERSION)
    assert cid == 2
    return records_of(resp)


def test_queued_response_survives_topic_deletion_and_descriptor_reuse(make_broker) -> None:
    broker = make_broker()
    admin = Raw(broker.port)
    try:
        create_topic(admin, "idle")
        expected = load_partition(broker, "doomed", 2, seed=3)
        client = _queue_behind_long_poll(broker, "doomed")
        delete_topic(admin, "doomed")
        _reuse_descriptors(admin)
        assert _release_long_poll_and_read(admin, client) == expected
        client.close()
    finally:
        admin.close()


def test_queued_response_survives_delete_records(make_broker) -> None:
    broker = make_broker()
    admin = Raw(broker.port)
    try:
        create_topic(admin, "idle")
        values = [bytes([7]) * 16 + os.urandom(600_000) for _ in range(3)]
        # one batch per segment; retired segments close at the next maintenance
        create_topic(admin, "trimmed", configs={"segment.bytes": "700000", "file.delete.delay.ms": "0"})
        produce(admin, "trimmed", values)
        expected = records_of(admin.call(ApiKey.FETCH, FETCH_VERSION, fetch_body("trimmed", max_bytes=700_000)))
        client = _queue_behind_long_poll(broker, "trimmed")
        resp = admin.call(ApiKey.DELETE_RECORDS, 2, {"topics": [{"name": "trimmed", "partitions": [
            {"partition_index": 0, "offset": 2}]}], "timeout_ms": 10_000})
        assert resp.topics[0].partitions[0].low_watermark == 2
        # the segment's own reference goes now (as maintenance would after file.delete.delay.ms)
        broker.call(lambda: broker.core.logs.get_log("trimmed", 0).close_retired(0, force=True))
        _reuse_descriptors(admin)
        assert _release_long_poll_and_read(admin, client) == expected
        client.close()
    finally:
        admin.close()


def test_queued_response_of_a_truncated_file_closes_the_connection_instead_of_padding(make_broker) -> None:
    """A segment cut short under a queued response (a divergent tail truncated): the promised bytes
    are gone, so the connection closes — the client never gets a frame padded with filler."""
    broker = make_broker()
    admin = Raw(broker.port)
    try:
        create_topic(admin, "idle")
        load_partition(broker, "shrinking", 2, seed=6)
        client = _queue_behind_long_poll(broker, "shrinking")
        broker.call(lambda: broker.core.logs.get_log("shrinking", 0).active_segment.truncate_to(0))
        produce(admin, "idle", [b"wake up"])
        cid, _ = client.read(ApiKey.FETCH, FETCH_VERSION)
        assert cid == 1
        with pytest.raises(ConnectionError):
            client.read(ApiKey.FETCH, FETCH_VERSION)
        client.close()
    finally:
        admin.close()


def test_streaming_response_to_a_slow_reader_survives_topic_deletion(make_broker) -> None:
    broker = make_broker(connection_write_buffer_bytes=64 * 1024)
    admin = Raw(broker.port)
    try:
        expected = load_partition(broker, "doomed", 3, seed=4)
        client = Raw(broker.port, rcvbuf=32 * 1024)
        client.sock.sendall(b"".join(client.frame(ApiKey.FETCH, FETCH_VERSION, fetch_body("doomed"))
                                     for _ in range(4)))
        wait_for(lambda: probe(broker, client.local_port).get("queued", 0) > 0
                 and probe(broker, client.local_port).get("paused"), "responses waiting for the socket")
        delete_topic(admin, "doomed")
        _reuse_descriptors(admin)
        for cid in range(1, 5):
            got_cid, resp = client.read(ApiKey.FETCH, FETCH_VERSION)
            assert got_cid == cid
            assert records_of(resp) == expected
        client.close()
    finally:
        admin.close()


def test_dropped_connection_releases_the_files_of_its_queued_responses(make_broker) -> None:
    broker = make_broker(connection_write_buffer_bytes=64 * 1024)
    admin = Raw(broker.port)
    try:
        load_partition(broker, "doomed", 3, seed=5)
        handle = broker.call(lambda: broker.core.logs.get_log("doomed", 0).active_segment.handle)
        client = Raw(broker.port, rcvbuf=32 * 1024)
        client.sock.sendall(b"".join(client.frame(ApiKey.FETCH, FETCH_VERSION, fetch_body("doomed"))
                                     for _ in range(4)))
        wait_for(lambda: probe(broker, client.local_port).get("paused"), "responses waiting for the socket")
        delete_topic(admin, "doomed")
        assert not broker.call(lambda: handle.closed), "queued responses still refer to the file"
        client.close()
        wait_for(lambda: broker.call(lambda: handle.closed), "the file closed with the connection")
    finally:
        admin.close()


# -- item: purgatory watch lists of idle and deleted partitions ------------------------------


def test_expired_long_polls_leave_no_watch_entries(make_broker) -> None:
    broker = make_broker()
    admin = Raw(broker.port)
    clients = [Raw(broker.port) for _ in range(4)]
    try:
        create_topic(admin, "quiet", partitions=50)
        for c in clients:
            c.sock.sendall(b"".join(c.frame(ApiKey.FETCH, FETCH_VERSION,
                                            multi_fetch_body("quiet", range(50), max_wait_ms=50))
                                    for _ in range(30)))
        for c in clients:
            for cid in range(1, 31):
                got_cid, resp = c.read(ApiKey.FETCH, FETCH_VERSION)
                assert got_cid == cid
                assert all(p.error_code == 0 and not p.records for p in resp.responses[0].partitions)
        purgatory = broker.core.replica_manager.fetch_purgatory
        assert broker.call(lambda: purgatory.num_delayed) == 0
        assert broker.call(lambda: purgatory.expired_total) == len(clients) * 30
        assert broker.call(purgatory.watched) == 0
        assert broker.call(purgatory.watched_keys) == 0
    finally:
        for c in clients:
            c.close()
        admin.close()


def test_deleting_a_topic_answers_its_long_polls_and_drops_their_watch_lists(make_broker) -> None:
    broker = make_broker()
    admin = Raw(broker.port)
    client = Raw(broker.port)
    try:
        create_topic(admin, "gone", partitions=10)
        client.sock.sendall(b"".join(client.frame(ApiKey.FETCH, FETCH_VERSION,
                                                  multi_fetch_body("gone", range(10), max_wait_ms=300_000))
                                     for _ in range(5)))
        purgatory = broker.core.replica_manager.fetch_purgatory
        wait_for(lambda: broker.call(lambda: purgatory.num_delayed) == 5, "five parked fetches")
        delete_topic(admin, "gone")
        # settled by the time DeleteTopics is answered: no timers to wait for
        assert broker.call(lambda: purgatory.num_delayed) == 0
        assert broker.call(purgatory.watched) == 0
        for cid in range(1, 6):
            got_cid, resp = client.read(ApiKey.FETCH, FETCH_VERSION)
            assert got_cid == cid
            assert {p.error_code for p in resp.responses[0].partitions} == {3}  # UNKNOWN_TOPIC_OR_PARTITION
    finally:
        client.close()
        admin.close()
