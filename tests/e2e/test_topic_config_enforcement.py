"""Topic configs the broker accepts are enforced, through a real ``python -m broker`` process.

* ``compression.type``: a batch in another codec than the topic's is stored recompressed to the
  topic's codec (``producer`` keeps the producer's), and real consumers read back exactly what
  real producers sent — idempotent ones included;
* ``min.insync.replicas``: with a single broker the in-sync replica set has one member, so a
  topic asking for two refuses ``acks=all`` produces with NOT_ENOUGH_REPLICAS and appends
  nothing, as Kafka does with replication factor 1; ``acks=0``/``1`` ignore it;
* bad values of either are refused with INVALID_CONFIG when the topic is created.
"""

from __future__ import annotations

from typing import Any

import pytest
from e2e_helpers import RawClient, fetch, sample_records
from test_interop_python import (
    PARTITIONS,
    _normalise,
    consume_confluent,
    consume_kafka_python,
    produce_confluent,
    produce_kafka_python,
)

from protocol.api import ApiKey, encode_request
from protocol.error_codes import ErrorCode as E
from protocol.records import encode_batch, iter_batch_headers

CODECS = {"uncompressed": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
N = 60


def _create(c: RawClient, topic: str, configs: dict[str, str], partitions: int = PARTITIONS) -> int:
    return c.create_topic(topic, partitions, configs)


def _stored(c: RawClient, topic: str) -> list[Any]:
    """Every stored batch header of ``topic``, all partitions."""
    headers = []
    for p in range(PARTITIONS):
        data = bytes(fetch(c, topic, p, 0).records or b"")
        headers += [h for _, h in iter_batch_headers(data)]
    return headers


def _records(seed: int) -> list[tuple[bytes | None, bytes, list[tuple[str, bytes]]]]:
    return [(k, v * 3, h) for k, v, h in sample_records(N, seed, text=True)]


@pytest.mark.parametrize(("topic_codec", "producer_codec"), [
    ("gzip", None), ("uncompressed", "lz4"), ("zstd", "gzip"), ("lz4", "zstd"), ("snappy", "gzip"),
])
def test_kafka_python_batches_are_stored_in_the_topics_codec(shared_broker: Any, topic_codec: str,
                                                             producer_codec: str | None) -> None:
    topic = f"ctype-{topic_codec}-from-{producer_codec or 'none'}"
    with shared_broker.raw() as c:
        assert _create(c, topic, {"compression.type": topic_codec}) == 0
        acked = _normalise(produce_kafka_python(shared_broker.bootstrap_servers, topic, _records(7),
                                                compression_type=producer_codec, linger_ms=20))
        assert len(acked) == N
        stored = _stored(c, topic)
    assert stored and {h.compression for h in stored} == {CODECS[topic_codec]}
    assert _normalise(consume_confluent(shared_broker.bootstrap_servers, topic, N)) == acked
    assert _normalise(consume_kafka_python(shared_broker.bootstrap_servers, topic, N)) == acked


def test_producer_policy_keeps_the_producers_codec(shared_broker: Any) -> None:
    topic = "ctype-producer"
    with shared_broker.raw() as c:
        assert _create(c, topic, {"compression.type": "producer"}) == 0
        acked = _normalise(produce_confluent(shared_broker.bootstrap_servers, topic, _records(8),
                                             **{"compression.type": "lz4", "linger.ms": 20}))
        # librdkafka sends a batch uncompressed when lz4 would not make it smaller: either is kept as sent
        stored = {h.compression for h in _stored(c, topic)}
        assert CODECS["lz4"] in stored and stored <= {CODECS["lz4"], CODECS["uncompressed"]}
        # batches whose codec is known exactly stay in it
        raw = "ctype-producer-raw"
        assert _create(c, raw, {"compression.type": "producer"}) == 0
        for codec in ("snappy", "uncompressed", "zstd"):
            batch = encode_batch([(b"k", b"v" * 200, [], None)] * 5, compression=CODECS[codec])
            assert c.produce(raw, 0, batch).error_code == 0
        assert [h.compression for h in _partition_headers(c, raw, 0)] == [CODECS[k] for k in ("snappy", "uncompressed",
                                                                                             "zstd")]
    assert _normalise(consume_kafka_python(shared_broker.bootstrap_servers, topic, N)) == acked


def test_idempotent_producer_keeps_its_identity_through_recompression(shared_broker: Any) -> None:
    topic = "ctype-idempotent"
    with shared_broker.raw() as c:
        assert _create(c, topic, {"compression.type": "gzip"}) == 0
        acked = _normalise(produce_confluent(shared_broker.bootstrap_servers, topic, _records(9), **{
            "enable.idempotence": True, "compression.type": "zstd", "linger.ms": 20}))
        assert len(acked) == N
        stored = _stored(c, topic)
        assert {h.compression for h in stored} == {CODECS["gzip"]}
        assert len({h.producer_id for h in stored}) == 1 and stored[0].producer_id >= 0
        # a retry of the last appended batch (same producer id, epoch and sequence, another codec)
        # is recognised as the duplicate it is: same offsets, nothing appended
        last = _partition_headers(c, topic, 0)[-1]
        resend = encode_batch([(b"k", b"v", [], None)] * last.records_count, compression=4,
                              producer_id=last.producer_id, producer_epoch=last.producer_epoch,
                              base_sequence=last.base_sequence)
        end_before = c.list_offset(topic, 0, -1).offset
        resp = c.produce(topic, 0, resend)
        assert (resp.error_code, resp.base_offset) == (0, last.base_offset)
        assert c.list_offset(topic, 0, -1).offset == end_before
    assert _normalise(consume_kafka_python(shared_broker.bootstrap_servers, topic, N)) == acked


def _partition_headers(c: RawClient, topic: str, partition: int) -> list[Any]:
    return [h for _, h in iter_batch_headers(bytes(fetch(c, topic, partition, 0).records or b""))]


def test_min_insync_replicas_above_the_isr_refuses_acks_all(shared_broker: Any) -> None:
    topic = "min-isr-2"
    batch = encode_batch([(b"k", b"v", [], None)])
    with shared_broker.raw() as c:
        assert _create(c, topic, {"min.insync.replicas": "2"}, partitions=1) == 0
        resp = c.produce(topic, 0, batch, acks=-1)
        assert resp.error_code == E.NOT_ENOUGH_REPLICAS and resp.base_offset == -1
        assert "min.isr requirement of 2" in (resp.error_message or "")
        assert c.list_offset(topic, 0, -1).offset == 0
        assert c.produce(topic, 0, batch, acks=1).error_code == 0
        # acks=0 has no response: send it raw; the next request is answered after it was handled
        c.send_raw(encode_request(ApiKey.PRODUCE, 9, 99, "e2e", {
            "transactional_id": None, "acks": 0, "timeout_ms": 10_000,
            "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": batch}]}]}))
        assert c.list_offset(topic, 0, -1).offset == 2
        assert _create(c, "min-isr-1", {"min.insync.replicas": "1"}, partitions=1) == 0
        assert c.produce("min-isr-1", 0, batch, acks=-1).error_code == 0


def test_kafka_python_acks_all_sees_not_enough_replicas(shared_broker: Any) -> None:
    from kafka import KafkaProducer
    from kafka.errors import NotEnoughReplicasError

    with shared_broker.raw() as c:
        assert _create(c, "min-isr-client", {"min.insync.replicas": "2"}, partitions=1) == 0
    producer = KafkaProducer(bootstrap_servers=shared_broker.bootstrap_servers, acks="all", retries=0)
    try:
        with pytest.raises(NotEnoughReplicasError):
            producer.send("min-isr-client", b"v", partition=0).get(30)
    finally:
        producer.close(10)


@pytest.mark.parametrize(("name", "value"), [
    ("min.insync.replicas", "0"), ("min.insync.replicas", "two"), ("min.insync.replicas", "-1"),
    ("compression.type", "brotli"), ("compression.type", "none"),
])
def test_bad_values_are_refused_at_creation(shared_broker: Any, name: str, value: str) -> None:
    with shared_broker.raw() as c:
        assert _create(c, f"bad-{name}-{value}".replace(".", "-"), {name: value}, partitions=1) == E.INVALID_CONFIG
