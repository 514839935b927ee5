"""Internal topics are exactly Kafka's (``__consumer_offsets``, ``__transaction_state``): clients cannot
write them, delete them or extend them; every other name, ``__mytopic`` included, is an ordinary topic.
Also: InitProducerId hands a non-transactional producer a fresh producer id every time."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from e2e_helpers import RawClient, fetch

from broker.cluster.internal_topics import INTERNAL_TOPICS, OFFSETS_TOPIC
from broker.testing.embedded import BrokerThread
from protocol.api import ApiKey
from protocol.error_codes import ErrorCode as E
from protocol.records import decode_record_set, encode_batch


@pytest.fixture
def broker() -> Iterator[BrokerThread]:
    with BrokerThread(metrics_port=None) as bt:
        yield bt


def _offsets_end(bt: BrokerThread) -> list[int]:
    def ends() -> list[int]:
        info = bt.core.metadata.image.topic(OFFSETS_TOPIC)
        assert info is not None
        return [bt.core.logs.get_log(OFFSETS_TOPIC, p).log_end_offset for p in range(info.partition_count)]
    return bt.call(ends)


def _metadata(client: RawClient, *names: str, auto_create: bool = False) -> dict[str, object]:
    resp = client.request(ApiKey.METADATA, 12, {"topics": [{"name": n, "topic_id": None} for n in names],
                                                "allow_auto_topic_creation": auto_create,
                                                "include_topic_authorized_operations": False})
    return {t.name: t for t in resp.topics}


def test_confluent_producer_cannot_write_consumer_offsets(broker: BrokerThread) -> None:
    confluent_kafka = pytest.importorskip("confluent_kafka")
    before = _offsets_end(broker)
    producer = confluent_kafka.Producer({"bootstrap.servers": broker.bootstrap_servers, "message.timeout.ms": 15000,
                                         "enable.idempotence": False})
    reports: list[object] = []
    # a forged offset-commit key: exactly what used to stop the broker from restarting
    producer.produce(OFFSETS_TOPIC, key=b"\x00", value=b"x", partition=0, on_delivery=lambda err, _m: reports.append(err))
    deadline = time.monotonic() + 30
    while not reports and time.monotonic() < deadline:
        producer.poll(0.1)
    assert len(reports) == 1
    err = reports[0]
    assert err is not None and err.code() == confluent_kafka.KafkaError.TOPIC_EXCEPTION, err
    assert _offsets_end(broker) == before


def test_raw_produce_to_every_internal_topic_is_refused(broker: BrokerThread) -> None:
    batch = encode_batch([(b"\x00\x01", b"v", [], 1)])
    with RawClient(broker.host, broker.port) as client:
        for topic in sorted(INTERNAL_TOPICS):
            part = client.produce(topic, 0, batch)
            assert part.error_code == E.INVALID_TOPIC_EXCEPTION, (topic, part)
            assert part.error_message == f"Cannot append to internal topic {topic}"
    assert _offsets_end(broker) == [0] * len(_offsets_end(broker))


def test_internal_topics_cannot_be_deleted_extended_or_created(broker: BrokerThread) -> None:
    with RawClient(broker.host, broker.port) as client:
        md = _metadata(client, OFFSETS_TOPIC)
        assert md[OFFSETS_TOPIC].is_internal is True
        resp = client.request(ApiKey.DELETE_TOPICS, 5, {"topic_names": [OFFSETS_TOPIC], "timeout_ms": 1000})
        assert resp.responses[0].error_code == E.INVALID_TOPIC_EXCEPTION
        resp = client.request(ApiKey.CREATE_PARTITIONS, 3, {
            "topics": [{"name": OFFSETS_TOPIC, "count": 60, "assignments": None}], "timeout_ms": 1000,
            "validate_only": False})
        assert resp.results[0].error_code == E.INVALID_TOPIC_EXCEPTION
        # only the broker creates its internal topics
        assert client.create_topic("__transaction_state") == E.INVALID_REQUEST
        assert _metadata(client, "__transaction_state", auto_create=True)["__transaction_state"].error_code == \
            E.UNKNOWN_TOPIC_OR_PARTITION


def test_double_underscore_user_topics_are_ordinary(broker: BrokerThread) -> None:
    from prometheus_client import generate_latest

    with RawClient(broker.host, broker.port) as client:
        assert client.create_topic("__mytopic", 1) == E.NONE
        md = _metadata(client, "__mytopic", "__auto", auto_create=True)
        assert md["__mytopic"].error_code == E.NONE and md["__mytopic"].is_internal is False
        assert md["__auto"].error_code == E.NONE and md["__auto"].is_internal is False   # auto-created
        part = client.produce("__mytopic", 0, encode_batch([(b"k", b"v", [], 1)]))
        assert part.error_code == E.NONE and part.base_offset == 0
        got = fetch(client, "__mytopic", 0, 0)
        assert [r.value for r in decode_record_set(bytes(got.records))] == [b"v"]
        resp = client.request(ApiKey.CREATE_PARTITIONS, 3, {
            "topics": [{"name": "__mytopic", "count": 3, "assignments": None}], "timeout_ms": 1000,
            "validate_only": False})
        assert resp.results[0].error_code == E.NONE
        assert len(_metadata(client, "__mytopic")["__mytopic"].partitions) == 3
        # the new partitions' logs are created when this broker applies the metadata change,
        # which may trail the CreatePartitions answer by a moment
        want = ('kbroker_log_end_offset{partition="0",topic="__mytopic"} 1.0',
                'kbroker_log_end_offset{partition="2",topic="__mytopic"} 0.0')
        deadline = time.monotonic() + 60  # a liveness bound
        while True:
            text = broker.call(lambda: generate_latest(broker.core.metrics.registry)).decode()
            if all(w in text for w in want) or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        assert all(w in text for w in want), text
        assert 'topic="__consumer_offsets"' not in text
        resp = client.request(ApiKey.DELETE_TOPICS, 5, {"topic_names": ["__mytopic", "__auto"], "timeout_ms": 1000})
        assert [r.error_code for r in resp.responses] == [E.NONE, E.NONE]
        assert _metadata(client, "__mytopic")["__mytopic"].error_code == E.UNKNOWN_TOPIC_OR_PARTITION


@pytest.mark.parametrize("version", [3, 4, 5])
def test_init_producer_id_always_hands_out_a_fresh_id(broker: BrokerThread, version: int) -> None:
    with RawClient(broker.host, broker.port) as client:
        def init(producer_id: int, epoch: int) -> tuple[int, int]:
            resp = client.request(ApiKey.INIT_PRODUCER_ID, version, {
                "transactional_id": None, "transaction_timeout_ms": 60000, "producer_id": producer_id,
                "producer_epoch": epoch})
            assert resp.error_code == E.NONE
            return resp.producer_id, resp.producer_epoch

        first = init(-1, -1)
        assert first[1] == 0
        # naming an id (someone else's, or its own) does not bump that id's epoch: a new id, epoch 0
        second = init(first[0], 0)
        third = init(first[0], 32767)
        assert second[1] == third[1] == 0
        assert len({first[0], second[0], third[0]}) == 3
        # a transactional id goes to its coordinator, which bumps that id's epoch
        found = client.request(ApiKey.FIND_COORDINATOR, 3, {"key": f"tx-{version}", "key_type": 1})
        assert found.error_code == E.NONE and found.node_id == 1
        epochs = []
        for _ in range(2):
            resp = client.request(ApiKey.INIT_PRODUCER_ID, version, {
                "transactional_id": f"tx-{version}", "transaction_timeout_ms": 60000, "producer_id": -1,
                "producer_epoch": -1})
            assert resp.error_code == E.NONE and resp.producer_id not in (first[0], second[0], third[0])
            epochs.append((resp.producer_id, resp.producer_epoch))
        assert epochs[1] == (epochs[0][0], epochs[0][1] + 1)
