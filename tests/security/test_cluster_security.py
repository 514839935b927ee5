"""Three brokers (real processes on etcd) whose only listener is SASL_SSL, with an authorizer: the
brokers replicate to each other over it with their own credentials (``inter.broker.sasl.username``,
a super user, as Kafka deployments make the brokers' principal), clients produce with acks=all, and
after a kill -9 of a leader the cluster fails over and the broker catches up when it returns."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from peers import require_etcd
from secure_clients import Login, confluent_conf
from security_helpers import Pki

from broker.testing.harness import KBrokerCluster

pytestmark = pytest.mark.slow

TOPIC = "replicated"


def wait_for(predicate: Any, what: str, timeout: float = 60.0) -> Any:
    deadline = time.monotonic() + timeout
    last: Exception | None = None
    while time.monotonic() < deadline:
        try:
            value = predicate()
            if value:
                return value
        except Exception as exc:  # a broker may be restarting
            last = exc
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}" + (f" ({last})" if last else ""))


@pytest.fixture
def secure_cluster(tmp_path: Path, pki: Pki) -> Iterator[KBrokerCluster]:
    require_etcd()
    users = tmp_path / "users.txt"
    users.write_text("admin:admin-secret\nbroker:broker-secret\nalice:alice-secret\n")
    settings = {
        "ssl.certfile": pki.server_cert, "ssl.keyfile": pki.server_key, "ssl.cafile": pki.ca,
        "sasl.users.file": users, "authorizer.enabled": True, "super.users": "User:admin;User:broker",
        "inter.broker.listener.name": "SASL_SSL", "inter.broker.sasl.username": "broker",
        "inter.broker.sasl.password": "broker-secret", "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-512",
    }
    with KBrokerCluster(3, tmp_path / "cluster", settings=settings, listeners=["SASL_SSL"]) as cluster:
        yield cluster


def conf(cluster: KBrokerCluster, pki: Pki, user: str = "admin") -> dict[str, Any]:
    return confluent_conf(Login(cluster.bootstrap("SASL_SSL"), "SASL_SSL", "SCRAM-SHA-256", user, f"{user}-secret",
                                str(pki.ca)))


def partition(cluster: KBrokerCluster, pki: Pki) -> Any:
    from confluent_kafka.admin import AdminClient

    md = AdminClient(conf(cluster, pki)).list_topics(TOPIC, timeout=10)
    t = md.topics.get(TOPIC)
    return None if t is None or t.error is not None else t.partitions.get(0)


def test_brokers_replicate_and_fail_over_on_sasl_ssl(secure_cluster: KBrokerCluster, pki: Pki) -> None:
    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient(conf(secure_cluster, pki))
    admin.create_topics([NewTopic(TOPIC, 1, 3, config={"min.insync.replicas": "2"})])[TOPIC].result(60)
    wait_for(lambda: (p := partition(secure_cluster, pki)) is not None and p.leader > 0 and len(p.isrs) == 3,
             "three in-sync replicas (followers fetching over SASL_SSL)")
    acked: list[int] = []
    failed: list[str] = []

    def produce(values: range) -> None:
        producer = Producer({**conf(secure_cluster, pki), "acks": "all", "enable.idempotence": True,
                             "message.timeout.ms": 120_000, "reconnect.backoff.max.ms": 500})
        for i in values:
            producer.produce(TOPIC, str(i).encode(), partition=0,
                             on_delivery=lambda err, m: failed.append(str(err)) if err else acked.append(int(m.value())))
            producer.poll(0)
        assert producer.flush(120) == 0

    produce(range(0, 300))
    victim = partition(secure_cluster, pki).leader
    secure_cluster.kill(victim)
    wait_for(lambda: (p := partition(secure_cluster, pki)) is not None and p.leader not in (-1, victim),
             "a new leader")
    produce(range(300, 600))
    assert not failed and sorted(acked) == list(range(600))
    secure_cluster.restart(victim)
    wait_for(lambda: sorted(partition(secure_cluster, pki).isrs) == [1, 2, 3], "the restarted broker back in the ISR")

    consumer = Consumer({**conf(secure_cluster, pki), "group.id": "verify", "enable.auto.commit": False})
    consumer.assign([TopicPartition(TOPIC, 0, 0)])
    got: list[int] = []
    deadline = time.monotonic() + 60
    while len(got) < 600 and time.monotonic() < deadline:
        got += [int(m.value()) for m in consumer.consume(500, 0.5) if m.error() is None]
    consumer.close()
    assert got == list(range(600))
    # every replica holds the same records: the restarted one caught up over the authenticated link
    files = {b.data_dir / f"{TOPIC}-0" for b in secure_cluster.brokers.values()}
    wait_for(lambda: len({b"".join(p.read_bytes() for p in sorted(d.glob("*.log"))) for d in files}) == 1,
             "byte-identical replicas")
    # a user without ACLs sees nothing: the brokers' principal is the only non-admin one allowed in
    assert TOPIC not in AdminClient(conf(secure_cluster, pki, "alice")).list_topics(timeout=10).topics


def test_transactions_commit_across_brokers_over_sasl_ssl(secure_cluster: KBrokerCluster, pki: Pki) -> None:
    """Markers and the leaders' checks with the coordinator travel between brokers on the SASL_SSL
    listener as ``User:broker`` (CLUSTER_ACTION); a user without WRITE on a transactional id is refused."""
    from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    topic = "txn-secure"
    admin = AdminClient(conf(secure_cluster, pki))  # referenced until the result is in
    admin.create_topics([NewTopic(topic, 3, 3)])[topic].result(60)
    producer = Producer({**conf(secure_cluster, pki), "transactional.id": "secure-tx"})
    producer.init_transactions(60)
    for committed in (False, True):
        producer.begin_transaction()
        for i in range(30):
            producer.produce(topic, f"{committed}-{i}".encode(), partition=i % 3)
        if committed:
            producer.commit_transaction(60)
        else:
            producer.abort_transaction(60)
    consumer = Consumer({**conf(secure_cluster, pki), "group.id": "txn-verify", "enable.auto.commit": False,
                         "isolation.level": "read_committed"})
    consumer.assign([TopicPartition(topic, p, 0) for p in range(3)])
    got: list[str] = []
    deadline = time.monotonic() + 60
    while len(got) < 30 and time.monotonic() < deadline:
        got += [m.value().decode() for m in consumer.consume(100, 0.5) if m.error() is None]
    consumer.close()
    assert sorted(got) == sorted(f"True-{i}" for i in range(30))

    intruder = Producer({**conf(secure_cluster, pki, "alice"), "transactional.id": "secure-tx"})
    with pytest.raises(KafkaException) as refused:
        intruder.init_transactions(30)
    assert "TRANSACTIONAL_ID_AUTHORIZATION_FAILED" in str(refused.value) or "uthoriz" in str(refused.value)
