"""ListOffsets (earliest, latest, by timestamp, max timestamp) and long-poll Fetch, against ``python -m broker``.

The semantics are checked on the wire with our codec and through real clients
(confluent-kafka's ``offsets_for_times``/watermarks, kafka-python's
``offsets_for_times``/``beginning_offsets``/``end_offsets``).  The long-poll
check is the one timed assertion of the suite: a Fetch waiting with
``max_wait_ms`` = 60 s for data produced after 0.5 s must return well before its
max wait (< 30 s: generous, so that a busy machine cannot fail it, yet a Fetch
that sat out its max wait could not pass).
"""

from __future__ import annotations

import threading
import time

import pytest
from e2e_helpers import fetch

from protocol.api import ApiKey
from protocol.error_codes import ErrorCode as E
from protocol.records import decode_record_set, encode_batch

LATEST, EARLIEST, MAX_TIMESTAMP = -1, -2, -3
TOPIC = "offsets-by-time"

# Timestamps are an hour in the past: recent enough that time retention (7 days) keeps them.
BASE = int(time.time() * 1000) - 3_600_000
# (timestamps of one batch) -> offsets 0-2, 3-4, 5-6; batch 3 has an out-of-order timestamp
BATCHES = [[BASE + t for t in b] for b in ([1000, 1001, 1002], [5000, 5001], [3000, 9000])]
# target timestamp -> (offset, timestamp found): the first offset whose timestamp is >= target
BY_TIME = {BASE + target: (offset, BASE + ts if ts >= 0 else -1) for target, (offset, ts) in {
    -BASE: (0, 1000), 1000: (0, 1000), 1001: (1, 1001), 1003: (3, 5000), 3000: (3, 5000),
    5001: (4, 5001), 5002: (6, 9000), 9000: (6, 9000), 9001: (-1, -1)}.items()}


@pytest.fixture(scope="module")
def topic(shared_broker) -> str:
    with shared_broker.raw() as c:
        assert c.create_topic(TOPIC, 1) == 0
        for i, stamps in enumerate(BATCHES):
            batch = encode_batch([(f"k{i}-{j}".encode(), f"v{i}-{j}".encode(), [], ts) for j, ts in enumerate(stamps)])
            assert c.produce(TOPIC, 0, batch).error_code == 0
    return TOPIC


@pytest.mark.parametrize("version", [1, 5, 7, 8])
def test_list_offsets_on_the_wire(shared_broker, topic, version) -> None:
    with shared_broker.raw() as c:
        assert c.list_offset(topic, 0, EARLIEST, version).offset == 0
        latest = c.list_offset(topic, 0, LATEST, version)
        assert (latest.error_code, latest.offset) == (0, 7)
        for target, (offset, ts) in BY_TIME.items():
            got = c.list_offset(topic, 0, target, version)
            assert (got.error_code, got.offset, got.timestamp) == (0, offset, ts), (target, got)
        if version >= 7:
            got = c.list_offset(topic, 0, MAX_TIMESTAMP, version)
            assert (got.offset, got.timestamp) == (6, BASE + 9000)


def test_list_offsets_after_delete_records(shared_broker) -> None:
    name = "offsets-after-delete"
    with shared_broker.raw() as c:
        assert c.create_topic(name, 1) == 0
        for i in range(5):
            assert c.produce(name, 0, encode_batch([(None, b"x", [], BASE + 1000 * (i + 1))])).error_code == 0
        resp = c.request(ApiKey.DELETE_RECORDS, 2, {"topics": [{"name": name, "partitions": [
            {"partition_index": 0, "offset": 3}]}], "timeout_ms": 5000})
        assert resp.topics[0].partitions[0].low_watermark == 3
        assert c.list_offset(name, 0, EARLIEST).offset == 3
        assert c.list_offset(name, 0, LATEST).offset == 5
        # a timestamp before every record resolves to the log start, not to a deleted offset
        assert c.list_offset(name, 0, BASE).offset == 3
        assert fetch(c, name, 0, 1).error_code == E.OFFSET_OUT_OF_RANGE


def test_confluent_offsets_for_times_and_watermarks(shared_broker, topic) -> None:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": shared_broker.bootstrap_servers, "group.id": "e2e-offsets"})
    try:
        assert consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10) == (0, 7)
        for target, (offset, _ts) in BY_TIME.items():
            # one partition per call: librdkafka keeps one entry per partition
            [tp] = consumer.offsets_for_times([TopicPartition(topic, 0, target)], timeout=10)
            assert tp.error is None
            # "no such offset" comes back as the logical end, -1, as on the wire
            assert tp.offset == offset, (target, tp)
    finally:
        consumer.close()


def test_kafka_python_offsets_for_times(shared_broker, topic) -> None:
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=shared_broker.bootstrap_servers, group_id=None)
    try:
        tp = TopicPartition(topic, 0)
        assert consumer.beginning_offsets([tp]) == {tp: 0}
        assert consumer.end_offsets([tp]) == {tp: 7}
        for target, (offset, ts) in BY_TIME.items():
            got = consumer.offsets_for_times({tp: target})[tp]
            if offset < 0:
                assert got is None
            else:
                assert (got.offset, got.timestamp) == (offset, ts)
    finally:
        consumer.close()


# -- long poll ------------------------------------------------------------------------------


def test_long_poll_fetch_returns_as_soon_as_data_arrives(shared_broker) -> None:
    name = "long-poll-raw"
    with shared_broker.raw() as c:
        assert c.create_topic(name, 1) == 0
        end = c.list_offset(name, 0, LATEST).offset
    result: dict = {}

    def waiter() -> None:
        with shared_broker.raw(timeout=120) as c:
            start = time.monotonic()
            result["part"] = fetch(c, name, 0, end, max_wait_ms=60_000, min_bytes=1)
            result["elapsed"] = time.monotonic() - start

    t = threading.Thread(target=waiter)
    t.start()
    time.sleep(0.5)
    with shared_broker.raw() as c:
        assert c.produce(name, 0, encode_batch([(b"k", b"wake up", [], None)])).error_code == 0
    t.join(120)
    assert not t.is_alive()
    assert result["elapsed"] < 30.0, f"long poll took {result['elapsed']:.2f}s with max_wait 60s"
    records = list(decode_record_set(bytes(result["part"].records)))
    assert [(r.offset, r.value) for r in records] == [(end, b"wake up")]


def test_long_poll_through_confluent_consumer(shared_broker) -> None:
    """librdkafka fetching with fetch.wait.max.ms=60000 sees a record produced 0.5 s later well before its
    max wait (< 30 s)."""
    from confluent_kafka import Consumer, Producer, TopicPartition

    name = "long-poll-rdkafka"
    with shared_broker.raw() as c:
        assert c.create_topic(name, 1) == 0
        end = c.list_offset(name, 0, LATEST).offset
    consumer = Consumer({"bootstrap.servers": shared_broker.bootstrap_servers, "group.id": "e2e-long-poll",
                         "fetch.wait.max.ms": 60_000, "fetch.min.bytes": 1, "enable.auto.commit": False})
    producer = Producer({"bootstrap.servers": shared_broker.bootstrap_servers, "linger.ms": 0})
    try:
        # from the end offset known now (not OFFSET_END, which the consumer resolves itself and, on a busy
        # machine, might resolve only after the record below was produced, and then wait past it)
        consumer.assign([TopicPartition(name, 0, end)])
        assert consumer.consume(1, 1.0) == []  # the consumer is now parked in a long-poll Fetch
        time.sleep(0.5)
        start = time.monotonic()
        producer.produce(name, value=b"now", key=b"k")
        assert producer.flush(60) == 0
        msgs = []
        while not msgs and time.monotonic() - start < 60:
            msgs = [m for m in consumer.consume(1, 0.1) if m.error() is None]
        elapsed = time.monotonic() - start
        assert [m.value() for m in msgs] == [b"now"]
        assert elapsed < 30.0, f"record reached the long-polling consumer after {elapsed:.2f}s (max wait 60s)"
    finally:
        consumer.close()
