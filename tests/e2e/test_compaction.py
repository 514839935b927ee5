"""Log compaction for user topics against ``python -m broker``: every outside client reads a compacted
topic back (the latest record of each key, at its original offset, tombstones included), and a
broker killed with SIGKILL in the middle of a cleaning pass comes back consistent and finishes it."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest
from e2e_helpers import NODE_DIR, BrokerProcess, read_all
from peers import require_kafkajs, require_tool
from test_interop_python import (
    PARTITIONS,
    Stored,
    _headers,
    consume_aiokafka,
    consume_confluent,
    consume_kafka_python,
)

pytestmark = pytest.mark.slow

KEYS, VERSIONS = 25, 8
COMPACTED = {"cleanup.policy": "compact", "segment.bytes": "4096", "min.cleanable.dirty.ratio": "0.01",
             "delete.retention.ms": "3600000"}
FAST_CLEANER = ["--set", "log.cleaner.backoff.ms=200"]


def _deadline(seconds: float = 60.0) -> float:
    return time.monotonic() + seconds  # a liveness bound, not a timing assertion


def create(bootstrap: str, topic: str, partitions: int, configs: dict[str, str]) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 1, config=configs)])[topic].result(30)


def produce(bootstrap: str, topic: str, records: list[tuple[int, bytes, bytes | None, list]], **cfg: object) -> Stored:
    """``(partition, key, value, headers)`` records; returns what was acknowledged by position."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, **cfg})
    out: Stored = {}
    errors: list[object] = []
    for partition, key, value, headers in records:
        def cb(err: object, msg: object, rec: tuple = (key, value, headers)) -> None:
            if err is not None:
                errors.append(err)
            else:
                out[(msg.partition(), msg.offset())] = rec  # type: ignore[attr-defined]
        producer.produce(topic, key=key, value=value, headers=headers, partition=partition, on_delivery=cb)
        producer.poll(0)
    assert producer.flush(30) == 0 and not errors, errors
    return out


def stored(bp: BrokerProcess, topic: str, partitions: int) -> Stored:
    with bp.raw() as c:
        return {(p, r.offset): (r.key, r.value, _headers(r.headers)) for p in range(partitions)
                for r in read_all(c, topic, p)}


def compacted_view(acked: Stored) -> Stored:
    """What a compaction of everything keeps: the latest record of each key of each partition."""
    latest: dict[tuple[int, bytes | None], tuple[int, int]] = {}
    for (p, off), (key, _, _) in sorted(acked.items()):
        latest[(p, key)] = (p, off)
    return {pos: acked[pos] for pos in sorted(latest.values())}


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> BrokerProcess:
    bp = BrokerProcess(tmp_path_factory.mktemp("compaction") / "data", extra_args=FAST_CLEANER)
    bp.start()
    yield bp
    assert bp.alive(), bp.log_tail()
    assert bp.stop() == 0


@pytest.fixture(scope="module")
def compacted(broker: BrokerProcess) -> tuple[str, Stored]:
    """A 3-partition compacted topic: 25 keys x 8 versions per partition in multi-record gzip batches
    (with headers; the last version of five keys is a tombstone), then unique filler records that
    seal the data in older segments.  Waits until the broker has compacted it."""
    topic = "compacted-readback"
    create(broker.bootstrap_servers, topic, PARTITIONS, COMPACTED)
    data = [(p, b"key-%02d" % k, None if (v == VERSIONS - 1 and k < 5) else b"p%d-k%d-v%d" % (p, k, v),
             [("version", b"%d" % v)])
            for v in range(VERSIONS) for k in range(KEYS) for p in range(PARTITIONS)]
    acked = produce(broker.bootstrap_servers, topic, data, **{"compression.type": "gzip"})  # kafkajs: gzip only
    filler = [(p, b"fill-%d-%d" % (p, i), b"x" * 400, []) for i in range(15) for p in range(PARTITIONS)]
    acked.update(produce(broker.bootstrap_servers, topic, filler))
    expected = compacted_view(acked)
    end = _deadline()
    while stored(broker, topic, PARTITIONS) != expected:
        assert time.monotonic() < end, "not compacted"
        time.sleep(0.2)
    return topic, expected


@pytest.mark.parametrize("consume", [consume_kafka_python, consume_aiokafka, consume_confluent],
                         ids=["kafka-python", "aiokafka", "confluent-kafka"])
def test_python_clients_read_the_compacted_topic(compacted, broker, consume) -> None:
    topic, expected = compacted
    got = consume(broker.bootstrap_servers, topic, len(expected))
    assert {pos: (k, v, _headers(h)) for pos, (k, v, h) in got.items()} == expected
    assert sum(1 for _, v, _ in expected.values() if v is None) == 5 * PARTITIONS  # tombstones are kept


def test_kcat_reads_the_compacted_topic(compacted, broker) -> None:
    kcat = require_tool("kcat")
    topic, expected = compacted
    out = subprocess.run([kcat, "-b", broker.bootstrap_servers, "-C", "-t", topic, "-o", "beginning", "-e", "-J",
                          "-q"], capture_output=True, timeout=60, check=True).stdout.decode()
    got = {}
    for line in out.splitlines():
        m = json.loads(line)
        h = m.get("headers") or []
        got[(m["partition"], m["offset"])] = (m["key"].encode(), None if m["payload"] is None else
                                              m["payload"].encode(), [(h[i], h[i + 1].encode())
                                                                      for i in range(0, len(h), 2)])
    assert got == expected


def test_kafkajs_reads_the_compacted_topic(compacted, broker) -> None:
    node = require_kafkajs()
    topic, expected = compacted
    proc = subprocess.run([node, str(NODE_DIR / "produce_consume.js"), "consume", broker.bootstrap_servers, topic],
                          capture_output=True, timeout=120, cwd=str(NODE_DIR),
                          env={**os.environ, "EXPECT": str(len(expected))})
    assert proc.returncode == 0, proc.stderr.decode()[-3000:]
    import base64

    def raw(s: str | None) -> bytes | None:
        return None if s is None else base64.b64decode(s)

    consumed = json.loads(proc.stdout.decode().strip().splitlines()[-1])["consumed"]
    got = {(m["partition"], m["offset"]): (raw(m["key"]), raw(m["value"]), [(k, raw(v)) for k, v in m["headers"]])
           for m in consumed}
    assert got == expected


def _cleaning_dirs(partition_dir: Path) -> list[str]:
    return [n for n in os.listdir(partition_dir) if n.startswith("cleaning") or n.endswith(".swap")]


def test_sigkill_in_the_middle_of_a_cleaning_pass(tmp_path: Path) -> None:
    """A long pass (many records, few keys); the broker is killed once the pass's work directory
    exists; after the restart the log holds only records it had, the latest value of every key is
    intact, nothing of the pass is left over, and the compaction completes."""
    bp = BrokerProcess(tmp_path / "data", extra_args=FAST_CLEANER)
    bp.start()
    topic = "kill-while-cleaning"
    try:
        create(bp.bootstrap_servers, topic, 1, {"cleanup.policy": "compact", "segment.bytes": "1048576",
                                                "min.cleanable.dirty.ratio": "0.5"})
        records = [(0, b"k%03d" % (i % 500), b"v%06d" % i, []) for i in range(250_000)]
        acked = produce(bp.bootstrap_servers, topic, records, **{"linger.ms": 50, "batch.size": 200_000})
        acked.update(produce(bp.bootstrap_servers, topic, [(0, b"seal-%d" % i, b"x" * 2000, []) for i in range(600)]))
        partition_dir = bp.data_dir / f"{topic}-0"
        end = _deadline(120)
        while not any(n.startswith("cleaning.") for n in os.listdir(partition_dir)):
            assert time.monotonic() < end, "no cleaning pass started"
            time.sleep(0.005)
        bp.kill9()
        assert _cleaning_dirs(partition_dir)  # killed with the pass's work on disk
        bp.start()
        after = stored(bp, topic, 1)
        assert all(acked[pos] == rec for pos, rec in after.items())  # only records it had, where they were
        latest = compacted_view(acked)
        assert all(after.get(pos) == rec for pos, rec in latest.items())  # every key's latest value survives
        end = _deadline(120)
        while stored(bp, topic, 1) != latest:
            assert time.monotonic() < end, "compaction did not complete after the restart"
            time.sleep(0.5)
        # the killed pass left nothing behind (a new pass may have run since: wait for it to end)
        while _cleaning_dirs(partition_dir):
            assert time.monotonic() < end, _cleaning_dirs(partition_dir)
            time.sleep(0.1)
    finally:
        if bp.alive():
            assert bp.stop() == 0, bp.log_tail()
