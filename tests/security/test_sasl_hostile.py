"""Hostile input on a SASL listener of ``python -m broker``: garbage and truncated frames and tokens,
oversized tokens, requests out of order, and a flood of failed logins.  The broker stays up, answers
the others, counts and logs the failures, and its memory stays bounded."""

from __future__ import annotations

import asyncio
import os
import random
import struct
import urllib.request
from collections.abc import Iterator

import pytest

from broker.testing.harness import BrokerProcess, free_port
from protocol.api import ApiKey, decode_response, encode_request
from protocol.error_codes import ErrorCode

pytestmark = pytest.mark.slow

E = ErrorCode
MAX_RECEIVE = 8192


@pytest.fixture(scope="module")
def target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[BrokerProcess, int]]:
    directory = tmp_path_factory.mktemp("hostile")
    users = directory / "users.txt"
    users.write_text("alice:alice-secret\n")
    metrics = free_port()
    broker = BrokerProcess(directory / "data", listeners=["SASL_PLAINTEXT"], extra_args=[
        "--set", f"sasl.users.file={users}", "--set", f"sasl.server.max.receive.size={MAX_RECEIVE}",
        "--metrics-port", str(metrics)])
    broker.start()
    yield broker, metrics
    assert broker.alive(), f"broker died:\n{broker.log_tail()}"
    assert broker.stop() == 0


def rss_kib(broker: BrokerProcess) -> int:
    assert broker.proc is not None
    with open(f"/proc/{broker.proc.pid}/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS")


def metric(port: int, name: str, labels: str = "") -> float:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as resp:
        text = resp.read().decode()
    total = 0.0
    for line in text.splitlines():
        if line.startswith(name) and labels in line and not line.startswith("#"):
            total += float(line.rsplit(" ", 1)[1])
    return total


async def session(broker: BrokerProcess, frames: list[bytes], *, half_close: bool = False) -> bytes:
    """Send raw bytes, return everything the broker sends until it closes the connection."""
    reader, writer = await asyncio.open_connection(*broker.address("SASL_PLAINTEXT"))
    try:
        for frame in frames:
            writer.write(frame)
        await writer.drain()
        if half_close:
            writer.write_eof()
        return await asyncio.wait_for(reader.read(), 30)
    finally:
        writer.close()


def frames_of(data: bytes) -> list[bytes]:
    out, pos = [], 0
    while pos + 4 <= len(data):
        (size,) = struct.unpack_from(">i", data, pos)
        out.append(data[pos + 4:pos + 4 + size])
        pos += 4 + size
    assert pos == len(data), "a torn frame"
    return out


def handshake(mechanism: str = "PLAIN", cid: int = 1, version: int = 1) -> bytes:
    return encode_request(ApiKey.SASL_HANDSHAKE, version, cid, "hostile", {"mechanism": mechanism})


def authenticate(token: bytes, cid: int = 2) -> bytes:
    return encode_request(ApiKey.SASL_AUTHENTICATE, 2, cid, "hostile", {"auth_bytes": token})


def login_works(broker: BrokerProcess) -> bool:
    async def run() -> bool:
        reader, writer = await asyncio.open_connection(*broker.address("SASL_PLAINTEXT"))
        try:
            writer.write(handshake() + authenticate(b"\0alice\0alice-secret") +
                         encode_request(ApiKey.METADATA, 12, 3, "hostile", {"topics": None,
                                                                             "allow_auto_topic_creation": False}))
            answers = []
            while len(answers) < 3:
                size = struct.unpack(">i", await asyncio.wait_for(reader.readexactly(4), 30))[0]
                answers.append(await reader.readexactly(size))
            return decode_response(ApiKey.SASL_AUTHENTICATE, 2, answers[1])[1].error_code == 0 and \
                len(decode_response(ApiKey.METADATA, 12, answers[2])[1].brokers) == 1
        finally:
            writer.close()

    return asyncio.run(run())


HS, AUTH = (ApiKey.SASL_HANDSHAKE, 1), (ApiKey.SASL_AUTHENTICATE, 2)
#: what is sent, and the (api, version, error code) of each answer before the broker closes the connection
CASES: dict[str, tuple[list[bytes], list[tuple[int, int, int]]]] = {
    "random bytes": ([bytes(random.Random(1).randrange(256) for _ in range(500))], []),
    "negative frame size": ([struct.pack(">i", -5) + b"x" * 10], []),
    "frame above the receive bound": ([struct.pack(">i", MAX_RECEIVE + 1) + b"x" * 100], []),
    "oversized token": ([handshake(), authenticate(b"A" * (MAX_RECEIVE + 10))], [(*HS, 0)]),
    "authenticate before handshake": ([authenticate(b"\0alice\0alice-secret", cid=1)],
                                      [(*AUTH, E.ILLEGAL_SASL_STATE)]),
    "unknown mechanism": ([handshake("GSSAPI")], [(*HS, E.UNSUPPORTED_SASL_MECHANISM)]),
    "two handshakes": ([handshake(), handshake(cid=2)], [(*HS, 0), (*HS, E.ILLEGAL_SASL_STATE)]),
    "produce before login": ([encode_request(ApiKey.PRODUCE, 9, 1, "hostile", {
        "transactional_id": None, "acks": 1, "timeout_ms": 1000, "topic_data": []})], []),
    "metadata before login": ([encode_request(ApiKey.METADATA, 12, 1, "hostile", {"topics": None})], []),
    "garbage scram": ([handshake("SCRAM-SHA-256"), authenticate(b"n,,n=alice,r=\xff\xfe")],
                      [(*HS, 0), (*AUTH, E.SASL_AUTHENTICATION_FAILED)]),
    "scram final without proof": ([handshake("SCRAM-SHA-256"), authenticate(b"n,,n=alice,r=abcdefghijkl"),
                                   authenticate(b"c=biws,r=abcdefghijkl", cid=3)],
                                  [(*HS, 0), (*AUTH, 0), (*AUTH, E.SASL_AUTHENTICATION_FAILED)]),
    "raw token garbage after v0": ([handshake(version=0), struct.pack(">i", 7) + b"\xff" * 7],
                                   [(ApiKey.SASL_HANDSHAKE, 0, 0)]),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_hostile_input_closes_only_that_connection(target: tuple[BrokerProcess, int], case: str) -> None:
    broker, _ = target
    frames, expected = CASES[case]
    answers = frames_of(asyncio.run(session(broker, frames)))
    assert [(api, version, decode_response(api, version, frame)[1].error_code)
            for (api, version, _), frame in zip(expected, answers, strict=True)] == expected
    assert login_works(broker), broker.log_tail()


def test_a_truncated_frame_waits_for_its_end_and_goes_with_its_connection(target: tuple[BrokerProcess, int]) -> None:
    broker, _ = target
    assert asyncio.run(session(broker, [handshake()[:-3]], half_close=True)) == b""
    assert login_works(broker)


def test_a_flood_of_failed_logins_is_counted_and_costs_bounded_memory(target: tuple[BrokerProcess, int]) -> None:
    broker, metrics = target

    async def fail_once(token: bytes) -> int:
        data = await session(broker, [handshake(), authenticate(token)])
        answers = frames_of(data)
        return decode_response(ApiKey.SASL_AUTHENTICATE, 2, answers[1])[1].error_code

    async def flood(n: int, concurrency: int) -> list[int]:
        gate = asyncio.Semaphore(concurrency)

        async def one(i: int) -> int:
            async with gate:
                return await fail_once(b"\0alice\0wrong-%d" % i)

        return await asyncio.gather(*(one(i) for i in range(n)))

    before = metric(metrics, "kbroker_authentications_total", 'result="failure"')
    assert set(asyncio.run(flood(200, 50))) == {E.SASL_AUTHENTICATION_FAILED}  # warm up
    warm = rss_kib(broker)
    assert set(asyncio.run(flood(1500, 100))) == {E.SASL_AUTHENTICATION_FAILED}
    after = rss_kib(broker)
    assert metric(metrics, "kbroker_authentications_total", 'result="failure"') - before == 1700
    assert after - warm < 24 * 1024, f"RSS grew from {warm} KiB to {after} KiB over 1500 failed logins"
    assert metric(metrics, "kbroker_active_connections") <= 1  # every refused connection is gone
    assert login_works(broker)
    log = (broker.log_path.read_text())
    assert "wrong-1" not in log and "alice-secret" not in log
    assert os.path.getsize(broker.log_path) < 10 * 1024 * 1024
