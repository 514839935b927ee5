"""kcat (the Debian package: librdkafka's command-line client) against ``python -m broker``.

kcat's input and output are text lines, so the records here are printable
ASCII; keys and headers are still checked byte for byte, on the broker with
our codec and through kcat's JSON output.  Skips when kcat is not installed.
"""

from __future__ import annotations

import json
import subprocess
import time

import pytest
from e2e_helpers import read_all, sample_records
from peers import require_tool
from test_interop_python import _normalise, consume_confluent, create_confluent, produce_confluent

pytestmark = pytest.mark.slow

N = 150
HEADERS = [("hk", b"hv"), ("trace-id", b"abc-123")]


@pytest.fixture(scope="module")
def kcat() -> str:
    return require_tool("kcat")


def run(args: list[str], stdin: bytes | None = None, timeout: float = 60) -> str:
    proc = subprocess.run(args, input=stdin, capture_output=True, timeout=timeout)
    assert proc.returncode == 0, f"{' '.join(args)} failed ({proc.returncode}):\n{proc.stderr.decode()[-2000:]}"
    return proc.stdout.decode()


def kcat_consume(kcat: str, bootstrap: str, topic: str) -> list[dict]:
    out = run([kcat, "-b", bootstrap, "-C", "-t", topic, "-o", "beginning", "-e", "-J", "-q"])
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def _kcat_headers(h: list[str] | None) -> list[tuple[str, bytes]]:
    h = h or []
    return [(h[i], h[i + 1].encode()) for i in range(0, len(h), 2)]


def test_kcat_metadata_lists_broker_and_topics(kcat, shared_broker) -> None:
    create_confluent(shared_broker.bootstrap_servers, "kcat-meta")
    md = json.loads(run([kcat, "-b", shared_broker.bootstrap_servers, "-L", "-J"]))
    assert [b["name"] for b in md["brokers"]] == [shared_broker.bootstrap_servers]
    topics = {t["topic"]: t for t in md["topics"]}
    assert len(topics["kcat-meta"]["partitions"]) == 3
    assert all(p["leader"] == 1 for p in topics["kcat-meta"]["partitions"])


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_kcat_produce_then_consume_from_beginning(kcat, shared_broker, codec) -> None:
    bootstrap = shared_broker.bootstrap_servers
    topic = f"kcat-{codec}"  # auto-created by kcat's metadata request
    records = [(k, v, HEADERS) for k, v, _h in sample_records(N, 300 + len(codec), text=True)]
    lines = b"".join(k + b"\t" + v + b"\n" for k, v, _h in records)
    args = [kcat, "-b", bootstrap, "-P", "-t", topic, "-p", "0", "-K", "\t", "-z", codec,
            "-X", "acks=all", "-X", "linger.ms=20"]
    for hk, hv in HEADERS:
        args += ["-H", f"{hk}={hv.decode()}"]
    run(args, stdin=lines)
    expected = {(0, i): rec for i, rec in enumerate(records)}
    # what kcat reads back
    got = kcat_consume(kcat, bootstrap, topic)
    assert {(m["partition"], m["offset"]): (m["key"].encode(), m["payload"].encode(), _kcat_headers(m["headers"]))
            for m in got} == expected
    # what is on the broker, decoded by our codec
    with shared_broker.raw() as c:
        stored = {(0, r.offset): (r.key, r.value, [(k, v) for k, v in r.headers]) for r in read_all(c, topic)}
    assert stored == expected


def test_kcat_reads_what_confluent_wrote(kcat, shared_broker) -> None:
    bootstrap = shared_broker.bootstrap_servers
    topic = "kcat-reads-rdkafka"
    create_confluent(bootstrap, topic)
    acked = _normalise(produce_confluent(bootstrap, topic, sample_records(N, 400, text=True)))
    got = {(m["partition"], m["offset"]): (None if m["key"] is None else m["key"].encode(), m["payload"].encode(),
                                           _kcat_headers(m.get("headers")))
           for m in kcat_consume(kcat, bootstrap, topic)}
    assert got == acked


def test_confluent_reads_what_kcat_wrote_to_three_partitions(kcat, shared_broker) -> None:
    bootstrap = shared_broker.bootstrap_servers
    topic = "rdkafka-reads-kcat"
    create_confluent(bootstrap, topic)
    records = sample_records(N, 500, text=True)
    for p in range(3):
        lines = b"".join(k + b"\t" + v + b"\n" for i, (k, v, _h) in enumerate(records) if i % 3 == p)
        run([kcat, "-b", bootstrap, "-P", "-t", topic, "-p", str(p), "-K", "\t"], stdin=lines)
    got = consume_confluent(bootstrap, topic, N)
    expected = {(i % 3, i // 3): (k, v, []) for i, (k, v, _h) in enumerate(records)}
    assert _normalise(got) == expected


def test_kcat_query_offsets_by_timestamp(kcat, shared_broker) -> None:
    """``kcat -Q`` issues ListOffsets by timestamp."""
    from protocol.records import encode_batch

    bootstrap = shared_broker.bootstrap_servers
    topic = "kcat-offsets"
    base = int(time.time() * 1000) - 600_000
    with shared_broker.raw() as c:
        assert c.create_topic(topic, 1) == 0
        for i in range(5):
            assert c.produce(topic, 0, encode_batch([(None, b"x", [], base + 1000 * i)] * 2)).error_code == 0
    for target, offset in [(base, 0), (base + 1000, 2), (base + 2500, 6), (base + 4000, 8)]:
        out = run([kcat, "-b", bootstrap, "-Q", "-t", f"{topic}:0:{target}"])
        assert f"{topic} [0] offset {offset}" in out, (target, out)
