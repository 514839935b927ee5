"""ACLs end to end against ``python -m broker`` with ``authorizer.enabled=true``, managed with
confluent-kafka's AdminClient (CreateAcls / DescribeAcls / DeleteAcls, AlterUserScramCredentials) and
with ``kbroker acls`` / ``kbroker users``: a user without ACLs cannot produce, consume, join a group
or see a topic; a PREFIXED allow opens matching topics only; a DENY overrides an ALLOW; describe and
delete round-trip; ACLs and users survive a restart."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from secure_clients import Login, confluent_conf
from security_helpers import Pki

from broker.testing.harness import BrokerProcess

pytestmark = pytest.mark.slow

ADMIN_PASSWORD = "admin-secret"


@pytest.fixture(scope="module")
def acl_broker(tmp_path_factory: pytest.TempPathFactory, pki: Pki) -> Iterator[BrokerProcess]:
    directory = tmp_path_factory.mktemp("acls")
    users = directory / "users.txt"
    users.write_text(f"admin:{ADMIN_PASSWORD}\nalice:alice-secret\n")
    broker = BrokerProcess(directory / "data", listeners=["SASL_PLAINTEXT", "PLAINTEXT", "SSL"], extra_args=[
        "--set", f"sasl.users.file={users}", "--set", "authorizer.enabled=true", "--set", "super.users=User:admin",
        "--set", f"ssl.certfile={pki.server_cert}", "--set", f"ssl.keyfile={pki.server_key}",
        "--set", f"ssl.cafile={pki.ca}", "--set", "ssl.client.auth=requested"])
    broker.start()
    yield broker
    if broker.alive():
        assert broker.stop() == 0


def as_user(broker: BrokerProcess, user: str, password: str) -> dict[str, Any]:
    return confluent_conf(Login(broker.bootstrap("SASL_PLAINTEXT"), "SASL_PLAINTEXT", "SCRAM-SHA-256", user, password))


def admin_client(broker: BrokerProcess) -> Any:
    from confluent_kafka.admin import AdminClient

    return AdminClient(as_user(broker, "admin", ADMIN_PASSWORD))


def binding(name: str, op: str, *, principal: str = "User:alice", prefixed: bool = False, deny: bool = False,
            resource: str = "TOPIC") -> Any:
    from confluent_kafka.admin import (
        AclBinding,
        AclOperation,
        AclPermissionType,
        ResourcePatternType,
        ResourceType,
    )

    return AclBinding(ResourceType[resource], name,
                      ResourcePatternType.PREFIXED if prefixed else ResourcePatternType.LITERAL, principal, "*",
                      AclOperation[op], AclPermissionType.DENY if deny else AclPermissionType.ALLOW)


def everything() -> Any:
    from confluent_kafka.admin import (
        AclBindingFilter,
        AclOperation,
        AclPermissionType,
        ResourcePatternType,
        ResourceType,
    )

    return AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None, AclOperation.ANY,
                            AclPermissionType.ANY)


def produce(conf: dict[str, Any], topic: str) -> str | None:
    """Produce one record with a fresh producer (librdkafka remembers a topic it was refused);
    None when acknowledged, else the error's name."""
    from confluent_kafka import KafkaException, Producer

    producer = Producer({**conf, "acks": "all", "message.timeout.ms": 15000})
    outcome: list[Any] = []
    try:
        producer.produce(topic, b"v", on_delivery=lambda err, _m: outcome.append(err))
    except KafkaException as exc:
        return str(exc.args[0].name())
    producer.flush(30)
    assert len(outcome) == 1
    return None if outcome[0] is None else str(outcome[0].name())


def consume_group(conf: dict[str, Any], topic: str, group: str, timeout_s: float = 20) -> tuple[int, str | None]:
    """Join ``group`` and read ``topic``: (records read, first error name)."""
    from confluent_kafka import Consumer

    consumer = Consumer({**conf, "group.id": group, "auto.offset.reset": "earliest", "enable.auto.commit": False})
    got, error = 0, None
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and not got and error is None:
            message = consumer.poll(0.5)
            if message is None:
                continue
            if message.error():
                error = message.error().name()
            else:
                got += 1
    finally:
        consumer.close()
    return got, error


def test_acls_end_to_end(acl_broker: BrokerProcess) -> None:
    from confluent_kafka.admin import NewTopic

    admin = admin_client(acl_broker)
    for future in admin.create_topics([NewTopic(t, 1, 1) for t in ("orders-eu", "orders-us", "secret")]).values():
        future.result(30)
    assert produce(as_user(acl_broker, "admin", ADMIN_PASSWORD), "orders-eu") is None  # super user
    alice = as_user(acl_broker, "alice", "alice-secret")
    from confluent_kafka.admin import AdminClient

    # no ACL: alice sees no topic, cannot produce, consume or join a group
    assert not set(AdminClient(alice).list_topics(timeout=10).topics) & {"orders-eu", "orders-us", "secret"}
    assert produce(alice, "orders-eu") == "TOPIC_AUTHORIZATION_FAILED"
    got, error = consume_group(alice, "orders-eu", "alice-group")
    assert got == 0 and error in ("GROUP_AUTHORIZATION_FAILED", "TOPIC_AUTHORIZATION_FAILED")

    # a PREFIXED allow opens the matching topics only
    created = [binding("orders-", op, prefixed=True) for op in ("WRITE", "READ")] + \
        [binding("alice-", "READ", prefixed=True, resource="GROUP")]
    for future in admin.create_acls(created).values():
        assert future.result(30) is None
    assert produce(alice, "orders-eu") is None
    assert produce(alice, "orders-us") is None
    assert produce(alice, "secret") == "TOPIC_AUTHORIZATION_FAILED"
    got, error = consume_group(alice, "orders-eu", "alice-group")
    assert got >= 1 and error is None
    assert set(AdminClient(alice).list_topics(timeout=10).topics) >= {"orders-eu", "orders-us"}
    assert "secret" not in AdminClient(alice).list_topics(timeout=10).topics

    # a DENY overrides the ALLOW
    deny = binding("orders-us", "WRITE", deny=True)
    for future in admin.create_acls([deny]).values():
        future.result(30)
    assert produce(alice, "orders-us") == "TOPIC_AUTHORIZATION_FAILED"
    assert produce(alice, "orders-eu") is None

    # describe and delete round-trip
    described = admin.describe_acls(everything()).result(30)
    assert sorted(map(str, described)) == sorted(map(str, [*created, deny]))
    from confluent_kafka.admin import (
        AclBindingFilter,
        AclOperation,
        AclPermissionType,
        ResourcePatternType,
        ResourceType,
    )

    only_deny = AclBindingFilter(ResourceType.TOPIC, "orders-us", ResourcePatternType.LITERAL, "User:alice", "*",
                                 AclOperation.WRITE, AclPermissionType.DENY)
    deleted = [result for future in admin.delete_acls([only_deny]).values() for result in future.result(30)]
    assert [str(b) for b in deleted] == [str(deny)]
    assert produce(alice, "orders-us") is None
    assert sorted(map(str, admin.describe_acls(everything()).result(30))) == sorted(map(str, created))

    # a user added at run time, then a restart: ACLs and users are still there
    from confluent_kafka.admin import ScramCredentialInfo, ScramMechanism, UserScramCredentialUpsertion

    upsert = UserScramCredentialUpsertion("carol", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096),
                                          b"carol-secret")
    for future in admin.alter_user_scram_credentials([upsert]).values():
        future.result(30)
    acl_broker.stop()
    acl_broker.start()
    admin = admin_client(acl_broker)
    assert sorted(map(str, admin.describe_acls(everything()).result(30))) == sorted(map(str, created))
    users = admin.describe_user_scram_credentials().result(30)
    assert sorted(users) == ["admin", "alice", "carol"]
    carol = as_user(acl_broker, "carol", "carol-secret")
    assert produce(carol, "orders-eu") == "TOPIC_AUTHORIZATION_FAILED"  # logged in; no ACL of hers
    assert produce(as_user(acl_broker, "alice", "alice-secret"), "orders-eu") is None


def test_a_client_certificate_is_its_cn_principal(acl_broker: BrokerProcess, pki: Pki) -> None:
    from confluent_kafka.admin import NewTopic

    admin = admin_client(acl_broker)
    admin.create_topics([NewTopic("certified", 1, 1)])["certified"].result(30)
    tls = Login(acl_broker.bootstrap("SSL"), "SSL", cafile=str(pki.ca))
    with_cert = confluent_conf(tls.but(certfile=str(pki.client_cert), keyfile=str(pki.client_key)))
    assert produce(with_cert, "certified") == "TOPIC_AUTHORIZATION_FAILED"
    for future in admin.create_acls([binding("certified", "WRITE")]).values():  # User:alice: the certificate's CN
        future.result(30)
    assert produce(with_cert, "certified") is None
    assert produce(confluent_conf(tls), "certified") == "TOPIC_AUTHORIZATION_FAILED"  # no cert: ANONYMOUS
    plain = confluent_conf(Login(acl_broker.bootstrap("PLAINTEXT"), "PLAINTEXT"))
    assert produce(plain, "certified") == "TOPIC_AUTHORIZATION_FAILED"


def kbroker(broker: BrokerProcess, config: Path, *args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([sys.executable, "-m", "kbroker_cli", "-b", broker.bootstrap("SASL_PLAINTEXT"),
                           "--command-config", str(config), *args], input=stdin, capture_output=True, timeout=60)
    return subprocess.CompletedProcess(proc.args, proc.returncode, proc.stdout.decode(), proc.stderr.decode())


def test_the_cli_manages_acls_and_users(acl_broker: BrokerProcess, tmp_path: Path) -> None:
    admin_config = tmp_path / "admin.properties"
    admin_config.write_text("# kbroker --command-config\nsecurity.protocol=SASL_PLAINTEXT\n"
                            f"sasl.mechanism=SCRAM-SHA-512\nsasl.username=admin\nsasl.password={ADMIN_PASSWORD}\n")
    added = kbroker(acl_broker, admin_config, "users", "add", "dave", stdin=b"dave-secret\n")
    assert added.returncode == 0, added.stderr
    listed = json.loads(kbroker(acl_broker, admin_config, "users", "list", "--json").stdout)
    assert [c["mechanism"] for c in listed["dave"]] == ["SCRAM-SHA-256", "SCRAM-SHA-512"]
    dave_config = tmp_path / "dave.properties"
    dave_config.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.username=dave\n"
                           "sasl.password=dave-secret\n")
    refused = kbroker(acl_broker, dave_config, "acls", "list")
    assert refused.returncode == 1 and "not authorized" in refused.stderr
    created = kbroker(acl_broker, dave_config, "topics", "create", "dave-topic", "--partitions", "1")
    assert created.returncode == 1 and "TOPIC_AUTHORIZATION_FAILED" in created.stderr
    ok = kbroker(acl_broker, admin_config, "acls", "add", "--allow-principal", "User:dave", "--operation", "CREATE",
                 "--operation", "DESCRIBE", "--topic", "dave-", "--resource-pattern-type", "prefixed")
    assert ok.returncode == 0, ok.stderr
    listed_acls = json.loads(kbroker(acl_broker, admin_config, "acls", "list", "--principal", "User:dave",
                                     "--json").stdout)
    assert sorted(a["operation"] for a in listed_acls) == ["CREATE", "DESCRIBE"]
    assert {a["pattern_type"] for a in listed_acls} == {"PREFIXED"}
    created = kbroker(acl_broker, dave_config, "topics", "create", "dave-topic", "--partitions", "1")
    assert created.returncode == 0, created.stderr
    assert "dave-topic" in kbroker(acl_broker, dave_config, "topics", "list").stdout.split()
    removed = kbroker(acl_broker, admin_config, "acls", "remove", "--principal", "User:dave")
    assert removed.returncode == 0 and "removed 2 ACL(s)" in removed.stderr
    assert "dave-topic" not in kbroker(acl_broker, dave_config, "topics", "list").stdout.split()
    assert kbroker(acl_broker, admin_config, "users", "remove", "dave").returncode == 0
    gone = kbroker(acl_broker, dave_config, "topics", "list")
    assert gone.returncode == 1 and "authentication failed" in gone.stderr
