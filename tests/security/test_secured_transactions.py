"""Transactions on a secured single broker, set up as the README documents it: SASL_SSL with SCRAM (the
step-by-step example, with no inter-broker credentials), SASL_SSL and SSL listeners with client
certificates requested (the TOML example), SASL_PLAINTEXT with SCRAM and with PLAIN.  Every setup
has the authorizer on; ``alice`` is no super user and has only the ACLs her transactions need.

A transaction ends with the broker writing COMMIT/ABORT markers to its own partitions (and, before
that, checking a producer's partitions with its own transaction coordinator): none of that may
depend on the broker logging in to itself.  confluent-kafka's transactional producer aborts and
commits (offsets included), and a read_committed consumer sees exactly the committed records.
(The README's cluster setup, SASL_SSL with inter-broker credentials, is test_cluster_security's.)"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from secure_clients import Login, confluent_conf, create_topics_and_acls
from security_helpers import Pki

from broker.testing.harness import BrokerProcess

pytestmark = pytest.mark.slow

PASSWORDS = {"admin": "change-me", "broker": "change-me-too", "alice": "alice-password"}
TOPIC, SOURCE = "orders", "orders-in"
TIMEOUT_S = 30


@dataclass(frozen=True)
class Setup:
    listeners: tuple[str, ...]
    settings: tuple[str, ...]
    #: alice's listener and SASL mechanism (None: a client certificate, principal User:alice)
    listener: str
    mechanism: str | None


SETUPS = {
    # README "A secured broker, step by step"
    "sasl-ssl-scram": Setup(("SASL_SSL",), (), "SASL_SSL", "SCRAM-SHA-256"),
    # README's TOML example: SASL_SSL and SSL, client certificates requested
    "ssl-client-certificate": Setup(("SASL_SSL", "SSL"), ("ssl.client.auth=requested",), "SSL", None),
    "sasl-ssl-plain": Setup(("SASL_SSL", "SSL"), ("ssl.client.auth=requested",), "SASL_SSL", "PLAIN"),
    "sasl-plaintext-scram": Setup(("SASL_PLAINTEXT",), (), "SASL_PLAINTEXT", "SCRAM-SHA-512"),
    "sasl-plaintext-plain": Setup(("SASL_PLAINTEXT",), (), "SASL_PLAINTEXT", "PLAIN"),
}


@pytest.fixture(params=sorted(SETUPS))
def secured(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
            pki: Pki) -> Iterator[tuple[BrokerProcess, Setup]]:
    setup = SETUPS[request.param]
    directory = tmp_path_factory.mktemp(request.param)
    users = directory / "users.txt"
    users.write_text("".join(f"{user}:{password}\n" for user, password in PASSWORDS.items()))
    users.chmod(0o600)
    args = ["--set", f"ssl.certfile={pki.server_cert}", "--set", f"ssl.keyfile={pki.server_key}",
            "--set", f"ssl.cafile={pki.ca}", "--set", f"sasl.users.file={users}",
            "--set", "authorizer.enabled=true", "--set", "super.users=User:admin;User:broker"]
    for setting in setup.settings:
        args += ["--set", setting]
    broker = BrokerProcess(directory / "data", listeners=list(setup.listeners), extra_args=args)
    broker.start()
    try:
        yield broker, setup
    finally:
        alive = broker.alive()
        broker.stop()
        assert alive, f"the broker died:\n{broker.log_tail()}"


def conf(broker: BrokerProcess, pki: Pki, listener: str, mechanism: str | None, user: str) -> dict[str, Any]:
    tls = listener in ("SSL", "SASL_SSL")
    if mechanism is None:
        login = Login(broker.bootstrap(listener), listener, cafile=str(pki.ca), certfile=str(pki.client_cert),
                      keyfile=str(pki.client_key))
    else:
        login = Login(broker.bootstrap(listener), listener, mechanism, user, PASSWORDS[user],
                      str(pki.ca) if tls else None)
    return confluent_conf(login)


def prepare(admin_conf: dict[str, Any]) -> None:
    """The topics, and alice's ACLs: write and read the topics, her transactional ids and groups."""
    create_topics_and_acls(admin_conf, {TOPIC: 3, SOURCE: 1}, [
        ("User:alice", "TOPIC", "orders", "WRITE", True), ("User:alice", "TOPIC", "orders", "READ", True),
        ("User:alice", "TRANSACTIONAL_ID", "alice-", "WRITE", True), ("User:alice", "GROUP", "alice-", "READ", True)])


def test_transactions_commit_and_abort(secured: tuple[BrokerProcess, Setup], pki: Pki) -> None:
    from confluent_kafka import Consumer, Producer, TopicPartition

    broker, setup = secured
    admin_listener = next(lst for lst in setup.listeners if lst.startswith("SASL"))
    prepare(conf(broker, pki, admin_listener, "SCRAM-SHA-512", "admin"))
    alice = conf(broker, pki, setup.listener, setup.mechanism, "alice")

    producer = Producer({**alice, "transactional.id": "alice-tx", "transaction.timeout.ms": 60_000})
    producer.init_transactions(TIMEOUT_S)
    producer.begin_transaction()
    for i in range(9):
        producer.produce(TOPIC, f"aborted-{i}".encode(), partition=i % 3)
    producer.abort_transaction(TIMEOUT_S)  # markers to this broker's own partitions

    source = Consumer({**alice, "group.id": "alice-app", "enable.auto.commit": False})
    producer.begin_transaction()
    for i in range(9):
        producer.produce(TOPIC, f"committed-{i}".encode(), partition=i % 3)
    producer.send_offsets_to_transaction([TopicPartition(SOURCE, 0, 42)], source.consumer_group_metadata(),
                                         TIMEOUT_S)  # a marker on __consumer_offsets too
    producer.commit_transaction(TIMEOUT_S)
    assert producer.flush(TIMEOUT_S) == 0
    source.close()

    consumer = Consumer({**alice, "group.id": "alice-verify", "enable.auto.commit": False,
                         "isolation.level": "read_committed", "fetch.wait.max.ms": 100})
    try:
        consumer.assign([TopicPartition(TOPIC, p, 0) for p in range(3)])
        got: list[str] = []
        deadline = time.monotonic() + TIMEOUT_S
        while len(got) < 9 and time.monotonic() < deadline:
            got += [m.value().decode() for m in consumer.consume(100, 0.5) if m.error() is None]
        assert sorted(got) == sorted(f"committed-{i}" for i in range(9))
        # nothing after the committed records either: the aborted ones stay hidden
        assert not [m for m in consumer.consume(100, 1.0) if m.error() is None]
    finally:
        consumer.close()
    checker = Consumer({**alice, "group.id": "alice-app", "enable.auto.commit": False})
    try:
        assert [tp.offset for tp in checker.committed([TopicPartition(SOURCE, 0)], TIMEOUT_S)] == [42]
    finally:
        checker.close()
