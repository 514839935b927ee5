"""kafkajs (npm, run with node) against ``python -m broker``.

``tests/node/produce_consume.js`` creates a topic with the kafkajs admin
client, produces keyed records with headers (plain and gzip, kafkajs's only
built-in codec) and reads the topic back from the beginning with a kafkajs
consumer *group* (JoinGroup/SyncGroup/Heartbeat/OffsetCommit included).  The
bytes must match what was acknowledged; our codec and confluent-kafka read the
same topic, and kafkajs reads a topic written by confluent-kafka.  Skips when
node or kafkajs is missing.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess

import pytest
from e2e_helpers import NODE_DIR, read_all, sample_records
from peers import require_kafkajs
from test_interop_python import _normalise, consume_confluent, create_confluent, produce_confluent

pytestmark = pytest.mark.slow

N = 120
SCRIPT = NODE_DIR / "produce_consume.js"


@pytest.fixture(scope="module")
def node() -> str:
    return require_kafkajs()


def _b64(b: bytes | None) -> str | None:
    return None if b is None else base64.b64encode(b).decode()


def _unb64(s: str | None) -> bytes | None:
    return None if s is None else base64.b64decode(s)


def run_node(node: str, mode: str, bootstrap: str, topic: str, records: list | None = None, **env: str) -> dict:
    stdin = json.dumps([{"key": _b64(k), "value": _b64(v), "headers": [[hk, _b64(hv)] for hk, hv in h],
                         "partition": i % 3} for i, (k, v, h) in enumerate(records or [])]).encode()
    proc = subprocess.run([node, str(SCRIPT), mode, bootstrap, topic], input=stdin, capture_output=True,
                          timeout=120, cwd=str(NODE_DIR), env={**os.environ, **env})
    assert proc.returncode == 0, f"kafkajs {mode} failed:\n{proc.stderr.decode()[-3000:]}"
    return json.loads(proc.stdout.decode().strip().splitlines()[-1])


def _consumed(result: dict) -> dict:
    return {(m["partition"], m["offset"]): (_unb64(m["key"]), _unb64(m["value"]),
                                            [(k, _unb64(v)) for k, v in m["headers"]])
            for m in result["consumed"]}


@pytest.mark.parametrize("compression", ["none", "gzip"])
def test_kafkajs_create_produce_consume_group(node, shared_broker, compression) -> None:
    bootstrap = shared_broker.bootstrap_servers
    topic = f"kafkajs-{compression}"
    records = sample_records(N, 600 + len(compression))
    result = run_node(node, "both", bootstrap, topic, records, COMPRESSION=compression, EXPECT=str(N))
    expected = {(p["partition"], p["offset"]): (k, v, h)
                for p, (k, v, h) in zip(result["produced"], records, strict=True)}
    assert len(expected) == N
    assert _consumed(result) == expected
    # the same bytes through our codec and through librdkafka
    with shared_broker.raw() as c:
        stored = {(p, r.offset): (r.key, r.value, list(r.headers)) for p in range(3) for r in read_all(c, topic, p)}
    assert stored == expected
    assert _normalise(consume_confluent(bootstrap, topic, N)) == expected


def test_kafkajs_reads_what_confluent_wrote(node, shared_broker) -> None:
    bootstrap = shared_broker.bootstrap_servers
    topic = "kafkajs-reads-rdkafka"
    create_confluent(bootstrap, topic)
    acked = _normalise(produce_confluent(bootstrap, topic, sample_records(N, 700),
                                         **{"compression.type": "gzip", "linger.ms": 20}))
    result = run_node(node, "consume", bootstrap, topic, EXPECT=str(N))
    assert _consumed(result) == acked
