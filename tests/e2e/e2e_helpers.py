"""End-to-end helpers (imported by the e2e tests and their conftest): the broker as a real ``python -m broker`` process, and a raw protocol socket.

``BrokerProcess`` starts the pinned command line on a free port with its own
data directory, waits until the port accepts connections *and* answers an
ApiVersions request, and can be stopped (SIGTERM), killed (SIGKILL) and
restarted on the same data directory.  Its log goes to ``broker.log`` next to
the data directory and is printed when a test fails to start it.

``RawClient`` speaks the wire protocol with our ``protocol`` package over a
plain blocking socket, for the hostile-input tests and for precise checks
(ListOffsets, long-poll Fetch) that a high-level client would hide.
"""

from __future__ import annotations

import random
import socket
import string
import struct
from pathlib import Path
from typing import Any

from broker.testing import harness
from protocol.api import ApiKey, decode_response, encode_request
from protocol.records import Record, decode_record_set

REPO = Path(__file__).resolve().parents[2]
NODE_DIR = REPO / "tests" / "node"

_size = struct.Struct(">i")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError(f"connection closed after {len(buf)} of {n} bytes")
        buf += chunk
    return bytes(buf)


def read_frame(sock: socket.socket) -> bytes:
    (size,) = _size.unpack(recv_exact(sock, 4))
    return recv_exact(sock, size)


def peer_closed(sock: socket.socket, timeout: float = 10.0) -> bool:
    """True when the broker closes ``sock`` (EOF or reset) without sending anything first."""
    sock.settimeout(timeout)
    try:
        data = sock.recv(65536)
    except (ConnectionResetError, BrokenPipeError):
        return True
    except TimeoutError:
        return False
    return data == b""


class RawClient:
    """A blocking socket that sends requests built with ``protocol.api`` and decodes responses."""

    def __init__(self, host: str, port: int, timeout: float = 15.0) -> None:
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.correlation_id = 0

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def request(self, api_key: int, version: int, body: dict[str, Any], client_id: str = "e2e") -> Any:
        self.correlation_id += 1
        cid = self.correlation_id
        self.sock.sendall(encode_request(api_key, version, cid, client_id, body))
        got_cid, resp = decode_response(api_key, version, read_frame(self.sock))
        assert got_cid == cid
        return resp

    # -- conveniences -----------------------------------------------------------------

    def create_topic(self, name: str, partitions: int = 1, configs: dict[str, str] | None = None) -> int:
        resp = self.request(ApiKey.CREATE_TOPICS, 5, {
            "topics": [{"name": name, "num_partitions": partitions, "replication_factor": 1, "assignments": [],
                        "configs": [{"name": k, "value": v} for k, v in (configs or {}).items()]}],
            "timeout_ms": 10_000, "validate_only": False})
        return resp.topics[0].error_code

    def produce(self, topic: str, partition: int, records: bytes, acks: int = -1, version: int = 9) -> Any:
        resp = self.request(ApiKey.PRODUCE, version, {
            "transactional_id": None, "acks": acks, "timeout_ms": 10_000,
            "topic_data": [{"name": topic, "partition_data": [{"index": partition, "records": records}]}]})
        return resp.responses[0].partition_responses[0]

    def list_offset(self, topic: str, partition: int, timestamp: int, version: int = 7) -> Any:
        resp = self.request(ApiKey.LIST_OFFSETS, version, {
            "replica_id": -1, "isolation_level": 0, "timeout_ms": 10_000,
            "topics": [{"name": topic, "partitions": [
                {"partition_index": partition, "current_leader_epoch": -1, "timestamp": timestamp}]}]})
        return resp.topics[0].partitions[0]

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass

    def __enter__(self) -> RawClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def fetch(client: RawClient, topic: str, partition: int, offset: int, *, max_wait_ms: int = 0,
          min_bytes: int = 1, max_bytes: int = 8 << 20, version: int = 12) -> Any:
    """One Fetch (v4-v12: by topic name, no session) for one partition; returns the partition entry."""
    resp = client.request(ApiKey.FETCH, version, {
        "replica_id": -1, "max_wait_ms": max_wait_ms, "min_bytes": min_bytes, "max_bytes": max_bytes,
        "isolation_level": 0, "session_id": 0, "session_epoch": -1, "rack_id": "",
        "forgotten_topics_data": [],
        "topics": [{"topic": topic, "partitions": [
            {"partition": partition, "fetch_offset": offset, "partition_max_bytes": max_bytes,
             "current_leader_epoch": -1, "log_start_offset": -1, "last_fetched_epoch": -1}]}]})
    return resp.responses[0].partitions[0]


def read_all(client: RawClient, topic: str, partition: int = 0, start: int = 0) -> list[Record]:
    """Every record from ``start`` to the high watermark, decoded (CRC-checked) with our codec."""
    out: list[Record] = []
    offset = start
    while True:
        part = fetch(client, topic, partition, offset)
        assert part.error_code == 0, part
        records = [r for r in decode_record_set(bytes(part.records or b"")) if r.offset >= offset]
        out.extend(records)
        if records:
            offset = records[-1].offset + 1
        if offset >= part.high_watermark or not records:
            return out


def sample_records(n: int, seed: int, *, text: bool = False) -> list[tuple[bytes | None, bytes, list[tuple[str, bytes]]]]:
    """``(key, value, headers)`` triples: varied sizes, some null keys, 0-3 headers.

    With ``text`` every key, value and header value is printable ASCII without
    tabs or newlines (for kcat, whose input and output are text lines).
    """
    rng = random.Random(seed)
    alphabet = string.ascii_letters + string.digits + "-_.:/"

    def blob(size: int) -> bytes:
        if text:
            return "".join(rng.choice(alphabet) for _ in range(size)).encode()
        return rng.randbytes(size)

    out = []
    for i in range(n):
        key = None if (i % 7 == 3 and not text) else f"key-{seed}-{i}".encode()
        size = rng.choice([1, 10, 100, 1000, rng.randrange(1, 5000)])
        value = f"v{i}:".encode() + blob(size)
        headers = [(f"h{j}", blob(rng.randrange(1, 20))) for j in range(i % 4)]
        out.append((key, value, headers))
    return out


class BrokerProcess(harness.BrokerProcess):
    """``broker.testing.harness.BrokerProcess`` run from the repository, with a raw protocol client."""

    def __init__(self, data_dir: Path, port: int | None = None, extra_args: list[str] | None = None) -> None:
        super().__init__(data_dir, port, extra_args, cwd=REPO)

    def raw(self, timeout: float = 15.0) -> RawClient:
        return RawClient(self.host, self.port, timeout)

    def __enter__(self) -> BrokerProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        if self.alive():
            self.stop()
