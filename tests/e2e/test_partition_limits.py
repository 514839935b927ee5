"""How many partitions one request may create: ``max.partitions.per.request`` (10,000 by default, the batch
Kafka's controller takes).  A CreateTopics or CreatePartitions asking for more — over all of its topics —
is refused whole with POLICY_VIOLATION, as Kafka refuses it, and creates nothing; before the limit, one
request could ask for two billion partitions and the broker opened files until it ran out.  Checked with
confluent-kafka's admin client against ``python -m broker``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from e2e_helpers import RawClient

from broker.testing.harness import BrokerProcess
from protocol.api import ApiKey
from protocol.error_codes import ErrorCode as E

LIMIT = 8


@pytest.fixture
def bootstrap(tmp_path: Path) -> Iterator[str]:
    proc = BrokerProcess(tmp_path / "data", extra_args=["--set", f"max.partitions.per.request={LIMIT}"],
                         cwd=Path(__file__).resolve().parents[2])
    proc.start()
    try:
        yield proc.bootstrap_servers
        assert proc.alive()
    finally:
        proc.stop()


def _admin(bootstrap: str):  # type: ignore[no-untyped-def]
    from confluent_kafka.admin import AdminClient

    return AdminClient({"bootstrap.servers": bootstrap, "socket.timeout.ms": 10_000})


def _errors(futures: dict) -> dict[str, object]:  # type: ignore[type-arg]
    out: dict[str, object] = {}
    for name, future in futures.items():
        try:
            future.result(30)
            out[name] = None
        except Exception as exc:  # KafkaException carrying the error
            out[name] = exc.args[0]
    return out


def _topics(bootstrap: str) -> dict[str, int]:
    md = _admin(bootstrap).list_topics(timeout=30)
    return {name: len(t.partitions) for name, t in md.topics.items() if not name.startswith("__")}


def test_create_topics_over_the_limit_is_refused_whole(bootstrap: str) -> None:
    from confluent_kafka import KafkaError
    from confluent_kafka.admin import NewTopic

    admin = _admin(bootstrap)
    errors = _errors(admin.create_topics([NewTopic("a", 5), NewTopic("b", 4)]))
    assert set(errors) == {"a", "b"}
    for err in errors.values():
        assert err is not None and err.code() == KafkaError.POLICY_VIOLATION, err
        assert "max.partitions.per.request" in err.str()
    # a huge count in one topic, validate-only or not (librdkafka allows up to 100,000)
    for validate_only in (True, False):
        errors = _errors(admin.create_topics([NewTopic("huge", 100_000)], validate_only=validate_only))
        assert errors["huge"].code() == KafkaError.POLICY_VIOLATION  # type: ignore[union-attr]
    # the most a request can ask for, sent raw
    host, port = bootstrap.split(":")
    with RawClient(host, int(port)) as raw:
        resp = raw.request(ApiKey.CREATE_TOPICS, 7, {"topics": [
            {"name": "huge", "num_partitions": 2**31 - 1, "replication_factor": -1, "assignments": [],
             "configs": []}], "timeout_ms": 5000, "validate_only": False})
        assert [t.error_code for t in resp.topics] == [E.POLICY_VIOLATION]
    assert _topics(bootstrap) == {}
    # at the limit, over two topics: created
    assert _errors(admin.create_topics([NewTopic("a", 4), NewTopic("b", 4)])) == {"a": None, "b": None}
    assert _topics(bootstrap) == {"a": 4, "b": 4}


def test_create_partitions_over_the_limit_is_refused_whole(bootstrap: str) -> None:
    from confluent_kafka import KafkaError
    from confluent_kafka.admin import NewPartitions, NewTopic

    admin = _admin(bootstrap)
    assert _errors(admin.create_topics([NewTopic("a", 1), NewTopic("b", 1)])) == {"a": None, "b": None}
    errors = _errors(admin.create_partitions([NewPartitions("a", 6), NewPartitions("b", 5)]))  # 5 + 4 new
    for err in errors.values():
        assert err is not None and err.code() == KafkaError.POLICY_VIOLATION, err
    errors = _errors(admin.create_partitions([NewPartitions("a", 100_000)]))
    assert errors["a"].code() == KafkaError.POLICY_VIOLATION  # type: ignore[union-attr]
    assert _topics(bootstrap) == {"a": 1, "b": 1}
    assert _errors(admin.create_partitions([NewPartitions("a", 5), NewPartitions("b", 5)])) == {"a": None, "b": None}
    assert _topics(bootstrap) == {"a": 5, "b": 5}
