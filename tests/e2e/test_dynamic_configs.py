"""Dynamic configuration against ``python -m broker``: topic and broker configs changed with
kafka-python's and confluent-kafka's admin clients take effect at once, survive a SIGKILL, and are
refused with Kafka's error codes; per-record produce errors (``record_errors``); DescribeLogDirs."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from e2e_helpers import BrokerProcess

from protocol.api import ApiKey
from protocol.error_codes import ErrorCode as E
from protocol.records import encode_batch

pytestmark = pytest.mark.slow


def confluent_admin(bootstrap: str) -> Any:
    from confluent_kafka.admin import AdminClient

    return AdminClient({"bootstrap.servers": bootstrap})


def describe(bootstrap: str, kind: str, name: str) -> dict[str, Any]:
    from confluent_kafka.admin import ConfigResource, ResourceType

    resource = ConfigResource(getattr(ResourceType, kind), name)
    admin = confluent_admin(bootstrap)
    return admin.describe_configs([resource])[resource].result(30)


def incremental(bootstrap: str, kind: str, name: str, *ops: tuple[str, str, str], validate_only: bool = False) -> None:
    """IncrementalAlterConfigs with confluent-kafka (librdkafka), which sends a broker's configs to it."""
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

    entries = [ConfigEntry(key, value, incremental_operation=getattr(AlterConfigOpType, op)) for op, key, value in ops]
    resource = ConfigResource(getattr(ResourceType, kind), name, incremental_configs=entries)
    admin = confluent_admin(bootstrap)
    admin.incremental_alter_configs([resource], validate_only=validate_only)[resource].result(30)


def set_cluster_default(bootstrap: str, key: str, value: str) -> None:
    """A cluster-wide broker default: the broker resource named "" (neither kafka-python nor
    confluent-kafka can name it; Kafka's own kafka-configs --entity-default does), with our client."""
    import asyncio

    from client import Admin

    async def run() -> None:
        async with Admin(bootstrap_servers=bootstrap) as admin:
            await admin.incremental_alter_configs("broker", "", [("set", key, value)])

    asyncio.run(run())


def produce_one(bootstrap: str, topic: str, size: int) -> int:
    """One record of ``size`` bytes with kafka-python; returns the broker's error code (0 = appended)."""
    from kafka import KafkaProducer
    from kafka.errors import KafkaError

    producer = KafkaProducer(bootstrap_servers=bootstrap, retries=0, max_request_size=10_000_000)
    try:
        producer.send(topic, key=b"k", value=b"x" * size).get(30)
        return 0
    except KafkaError as exc:
        return getattr(exc, "errno", -1)
    finally:
        producer.close(10)


@pytest.fixture
def broker(tmp_path: Path) -> Any:
    bp = BrokerProcess(tmp_path / "data", extra_args=["--set", "log.retention.check.interval.ms=200"])
    bp.start()
    yield bp
    if bp.alive():
        assert bp.stop() == 0, bp.log_tail()


def test_topic_and_broker_configs_apply_at_once_and_survive_sigkill(broker: BrokerProcess) -> None:
    from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient, NewTopic

    bootstrap = broker.bootstrap_servers
    kp = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        kp.create_topics([NewTopic("limited", 1, 1), NewTopic("roomy", 1, 1)])
        assert produce_one(bootstrap, "limited", 5000) == 0
        # legacy AlterConfigs (kafka-python) replaces the topic's overrides
        kp.alter_configs([ConfigResource(ConfigResourceType.TOPIC, "limited", configs={"max.message.bytes": "2000"})])
        assert produce_one(bootstrap, "limited", 5000) == E.MESSAGE_TOO_LARGE
        assert produce_one(bootstrap, "roomy", 5000) == 0
    finally:
        kp.close()
    # the broker-wide default (message.max.bytes, the cluster default) reaches every topic without an override
    set_cluster_default(bootstrap, "message.max.bytes", "3000")
    assert produce_one(bootstrap, "roomy", 5000) == E.MESSAGE_TOO_LARGE
    incremental(bootstrap, "TOPIC", "roomy", ("SET", "max.message.bytes", "100000"))
    assert produce_one(bootstrap, "roomy", 5000) == 0
    # validate_only changes nothing
    incremental(bootstrap, "TOPIC", "roomy", ("SET", "max.message.bytes", "10"), validate_only=True)
    assert produce_one(bootstrap, "roomy", 5000) == 0

    broker.kill9()
    broker.start()
    assert produce_one(bootstrap, "limited", 5000) == E.MESSAGE_TOO_LARGE
    assert produce_one(bootstrap, "roomy", 5000) == 0
    topic = describe(bootstrap, "TOPIC", "roomy")
    assert (topic["max.message.bytes"].value, topic["max.message.bytes"].source) == ("100000", 1)
    # (confluent-kafka keeps synonyms in a dict by name, so read the list with our client)
    import asyncio

    from client import Admin

    async def synonyms() -> list[tuple[str, str | None, str]]:
        async with Admin(bootstrap_servers=bootstrap) as admin:
            (entry,) = await admin.describe_config_entries("topic", "limited", ["max.message.bytes"])
            return entry.synonyms

    assert asyncio.run(synonyms()) == [("max.message.bytes", "2000", "DYNAMIC_TOPIC_CONFIG"),
                                       ("message.max.bytes", "3000", "DYNAMIC_DEFAULT_BROKER_CONFIG"),
                                       ("message.max.bytes", "1048588", "DEFAULT_CONFIG")]
    node = describe(bootstrap, "BROKER", "1")["message.max.bytes"]
    assert (node.value, node.source, node.is_read_only) == ("3000", 3, False)


def test_broker_configs_are_described_by_their_declarations(broker: BrokerProcess) -> None:
    """DescribeConfigs v4 of a broker: each setting's type, whether it may change and (when asked) its
    documentation come from its declaration."""
    from broker.config.settings import SETTINGS

    def entries(c: Any, include_documentation: bool) -> dict[str, Any]:
        resp = c.request(ApiKey.DESCRIBE_CONFIGS, 4, {
            "resources": [{"resource_type": 4, "resource_name": "1", "configuration_keys": None}],
            "include_synonyms": False, "include_documentation": include_documentation})
        return {e.name: e for e in resp.results[0].configs}

    with broker.raw() as c:
        documented = entries(c, True)
        plain = entries(c, False)
    retention = documented["log.retention.ms"]
    assert retention.documentation == SETTINGS["log.retention.ms"].plain_doc
    assert (retention.config_type, retention.read_only) == (5, False)  # LONG, dynamic
    assert (documented["log.cleanup.policy"].config_type, documented["port"].config_type) == (7, 3)  # LIST, INT
    assert documented["port"].read_only and documented["port"].documentation
    assert documented["broker.id"].documentation is None  # Kafka's name of node.id, not a setting here
    assert set(plain) == set(documented) and all(e.documentation is None for e in plain.values())


def test_a_dynamic_connection_limit_applies_to_the_next_connection(broker: BrokerProcess) -> None:
    """``max.connections`` changed at run time reaches the network edge (it is given new settings):
    set, further connections are closed as they arrive; deleted, they are served again."""

    def alter(c: Any, operation: int, value: str | None) -> int:
        resp = c.request(ApiKey.INCREMENTAL_ALTER_CONFIGS, 0, {"validate_only": False, "resources": [
            {"resource_type": 4, "resource_name": "1",
             "configs": [{"name": "max.connections", "config_operation": operation, "value": value}]}]})
        return resp.responses[0].error_code

    def served() -> bool:
        try:
            with broker.raw(timeout=10) as probe:
                probe.request(ApiKey.API_VERSIONS, 0, {})
            return True
        except OSError:  # closed (EOF, reset) as it arrived
            return False

    def wait_until(expected: bool) -> None:
        deadline = time.monotonic() + 30
        while served() != expected:
            assert time.monotonic() < deadline, f"a new connection is still {'not ' if expected else ''}served"
            time.sleep(0.1)

    with broker.raw() as held:
        assert served()
        assert alter(held, 0, "1") == 0  # SET: only the connection held here
        wait_until(False)
        assert alter(held, 1, None) == 0  # DELETE: the static limit again
        wait_until(True)


def test_retention_change_applies_to_a_live_topic(broker: BrokerProcess) -> None:
    bootstrap = broker.bootstrap_servers
    from confluent_kafka.admin import NewTopic

    admin = confluent_admin(bootstrap)
    admin.create_topics([NewTopic("aging", 1, 1, config={"segment.bytes": "1000"})])["aging"].result(30)
    for _ in range(20):
        assert produce_one(bootstrap, "aging", 300) == 0
    with broker.raw() as c:
        assert c.list_offset("aging", 0, -2).offset == 0
        incremental(bootstrap, "TOPIC", "aging", ("SET", "retention.ms", "1"))
        end = time.monotonic() + 30  # liveness bound: the retention check runs every 200 ms
        while c.list_offset("aging", 0, -2).offset == 0:
            assert time.monotonic() < end, "retention.ms=1 deleted nothing"
            time.sleep(0.1)
        assert c.list_offset("aging", 0, -2).offset > 0


@pytest.mark.parametrize("kind,name,ops,code", [
    ("TOPIC", "no-such-topic", [("SET", "retention.ms", "1")], E.UNKNOWN_TOPIC_OR_PARTITION),
    ("TOPIC", "t", [("SET", "retention.hours", "1")], E.INVALID_CONFIG),
    ("TOPIC", "t", [("SET", "min.cleanable.dirty.ratio", "2")], E.INVALID_CONFIG),
    ("TOPIC", "t", [("APPEND", "retention.ms", "1")], E.INVALID_CONFIG),
    ("TOPIC", "t", [("SET", "remote.storage.enable", "true")], E.INVALID_CONFIG),
    ("BROKER", "1", [("SET", "node.id", "7")], E.INVALID_REQUEST),
    ("BROKER", "1", [("SET", "log.retention.ms", "soon")], E.INVALID_REQUEST),
])
def test_refused_changes_get_kafkas_error_codes(broker: BrokerProcess, kind: str, name: str, ops: list, code: int
                                                ) -> None:
    from confluent_kafka import KafkaException

    with broker.raw() as c:
        c.create_topic("t")
    with pytest.raises(KafkaException) as ei:
        incremental(broker.bootstrap_servers, kind, name, *ops)
    assert ei.value.args[0].code() == code


def test_record_errors_name_the_records_a_produce_refused(broker: BrokerProcess) -> None:
    now = int(time.time() * 1000)
    with broker.raw() as c:
        assert c.create_topic("keys", configs={"cleanup.policy": "compact"}) == 0
        resp = c.produce("keys", 0, encode_batch([(b"a", b"1", None, now), (None, b"2", None, now),
                                                  (b"c", b"3", None, now), (None, b"4", None, now)]))
        assert resp.error_code == E.INVALID_RECORD
        assert [e.batch_index for e in resp.record_errors] == [1, 3]
        assert "Compacted topic cannot accept message without key" in resp.record_errors[0].batch_index_error_message
        assert resp.error_message.startswith("One or more records have been rejected due to 2 record errors")
        assert c.list_offset("keys", 0, -1).offset == 0  # nothing of the batch was appended

        assert c.create_topic("clock", configs={"message.timestamp.after.max.ms": "60000"}) == 0
        resp = c.produce("clock", 0, encode_batch([(b"a", b"1", None, now), (b"b", b"2", None, now + 3_600_000),
                                                   (b"c", b"3", None, now)]))
        assert resp.error_code == E.INVALID_TIMESTAMP
        assert [e.batch_index for e in resp.record_errors] == [1]
        assert "out of range" in resp.record_errors[0].batch_index_error_message
        ok = c.produce("clock", 0, encode_batch([(b"a", b"1", None, now)]))
        assert (ok.error_code, ok.base_offset) == (0, 0)


def test_librdkafka_fails_exactly_the_keyless_records_of_a_batch(broker: BrokerProcess) -> None:
    """librdkafka (confluent-kafka) maps record_errors to INVALID_RECORD for the records named and
    _INVALID_DIFFERENT_RECORD for the rest of their batch (its test 0011 relies on it)."""
    from confluent_kafka import Producer

    with broker.raw() as c:
        assert c.create_topic("keys-rdkafka", configs={"cleanup.policy": "compact"}) == 0
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 200})
    results: dict[int, int] = {}
    for i in range(10):
        producer.produce("keys-rdkafka", key=None if i % 5 == 0 else b"k%d" % i, value=b"v%d" % i, partition=0,
                         on_delivery=lambda err, msg, i=i: results.__setitem__(i, err.code() if err else 0))
    assert producer.flush(30) == 0
    from confluent_kafka import KafkaError

    assert {i for i, code in results.items() if code == E.INVALID_RECORD} == {0, 5}
    assert {code for i, code in results.items() if i not in (0, 5)} == {KafkaError._INVALID_DIFFERENT_RECORD}


def test_describe_log_dirs_with_kafka_python(broker: BrokerProcess) -> None:
    from kafka.admin import KafkaAdminClient

    with broker.raw() as c:
        c.create_topic("sized", 2)
        c.produce("sized", 1, encode_batch([(b"k", b"x" * 1000, None, None)]))
        resp = c.request(ApiKey.DESCRIBE_LOG_DIRS, 4, {"topics": [{"topic": "sized", "partitions": [0, 1]}]})
    (result,) = resp.results
    assert result.error_code == 0 and result.log_dir == str(broker.data_dir.resolve())
    sizes = {p.partition_index: p.partition_size for t in result.topics for p in t.partitions}
    assert sizes[0] == 0 and sizes[1] > 1000
    assert result.total_bytes >= result.usable_bytes > 0
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap_servers)
    try:
        described = admin.describe_log_dirs()
    finally:
        admin.close()
    assert "sized" in str(described)
