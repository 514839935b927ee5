"""The four compression codecs across clients, through a real ``python -m broker`` process.

librdkafka (confluent-kafka) produces gzip, snappy, lz4 and zstd batches; the
broker must store them as sent (the batch attributes keep the codec) and the
pure-Python clients (aiokafka, kafka-python) must read back the same bytes.
The other direction too: aiokafka compresses, librdkafka decompresses.
kafka-python only has the codecs whose optional libraries are installed
(python-snappy, lz4, zstandard); it skips the others and says so.
"""

from __future__ import annotations

import pytest
from e2e_helpers import sample_records
from test_interop_python import (
    PARTITIONS,
    _normalise,
    consume_aiokafka,
    consume_confluent,
    consume_kafka_python,
    create_confluent,
    produce_aiokafka,
    produce_confluent,
)

from protocol.api import ApiKey
from protocol.records import iter_batch_headers

CODECS = {"gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
N = 200


def _kafka_python_has(codec: str) -> bool:
    from kafka import codec as kc

    return {"gzip": kc.has_gzip, "snappy": kc.has_snappy, "lz4": kc.has_lz4, "zstd": kc.has_zstd}[codec]()


def _stored_codecs(broker, topic: str) -> set[int]:
    codecs = set()
    with broker.raw() as c:
        for p in range(PARTITIONS):
            resp = c.request(ApiKey.FETCH, 12, {
                "replica_id": -1, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": 8 << 20, "isolation_level": 0,
                "session_id": 0, "session_epoch": -1, "rack_id": "", "forgotten_topics_data": [],
                "topics": [{"topic": topic, "partitions": [
                    {"partition": p, "fetch_offset": 0, "partition_max_bytes": 8 << 20}]}]})
            data = bytes(resp.responses[0].partitions[0].records or b"")
            codecs |= {h.compression for _, h in iter_batch_headers(data)}
    return codecs


@pytest.fixture(scope="module")
def librdkafka_topics(shared_broker) -> dict[str, tuple[str, dict]]:
    out = {}
    for i, codec in enumerate(CODECS):
        topic = f"codec-rdkafka-{codec}"
        create_confluent(shared_broker.bootstrap_servers, topic)
        # compressible values: text repeated, so every codec actually shrinks the batch
        records = [(k, v * 3, h) for k, v, h in sample_records(N, 100 + i, text=True)]
        acked = produce_confluent(shared_broker.bootstrap_servers, topic, records,
                                  **{"compression.type": codec, "linger.ms": 20})
        out[codec] = (topic, _normalise(acked))
    return out


@pytest.mark.slow
@pytest.mark.parametrize("codec", sorted(CODECS))
def test_librdkafka_batches_are_stored_with_their_codec(shared_broker, librdkafka_topics, codec) -> None:
    topic, acked = librdkafka_topics[codec]
    assert len(acked) == N
    assert _stored_codecs(shared_broker, topic) == {CODECS[codec]}


@pytest.mark.slow
@pytest.mark.parametrize("codec", sorted(CODECS))
def test_aiokafka_reads_librdkafka_codec(shared_broker, librdkafka_topics, codec) -> None:
    topic, acked = librdkafka_topics[codec]
    got = consume_aiokafka(shared_broker.bootstrap_servers, topic, N)
    assert _normalise(got) == acked


@pytest.mark.slow
@pytest.mark.parametrize("codec", sorted(CODECS))
def test_kafka_python_reads_librdkafka_codec(shared_broker, librdkafka_topics, codec) -> None:
    if not _kafka_python_has(codec):
        pytest.skip(f"kafka-python has no {codec} support here: its optional library "
                    f"({ {'snappy': 'python-snappy', 'lz4': 'lz4', 'zstd': 'zstandard'}[codec] }) is not installed")
    topic, acked = librdkafka_topics[codec]
    got = consume_kafka_python(shared_broker.bootstrap_servers, topic, N)
    assert _normalise(got) == acked


@pytest.mark.slow
@pytest.mark.parametrize("codec", sorted(CODECS))
def test_librdkafka_reads_aiokafka_codec(shared_broker, codec) -> None:
    topic = f"codec-aiokafka-{codec}"
    create_confluent(shared_broker.bootstrap_servers, topic)
    records = [(k, v * 3, h) for k, v, h in sample_records(N, 200 + len(codec), text=True)]
    acked = _normalise(produce_aiokafka(shared_broker.bootstrap_servers, topic, records,
                                        compression_type=codec, linger_ms=20))
    assert len(acked) == N
    assert _stored_codecs(shared_broker, topic) == {CODECS[codec]}
    got = consume_confluent(shared_broker.bootstrap_servers, topic, N)
    assert _normalise(got) == acked
