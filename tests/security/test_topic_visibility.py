"""What a principal may not DESCRIBE stays hidden from it, on ``python -m broker`` with SASL + SCRAM,
``authorizer.enabled=true`` and ``allow.everyone.if.no.acl.found=false``: ``mallory`` may READ (so
DESCRIBE) the topic ``public`` and READ groups named ``mallory-*``; ``secret`` is not hers.

* KIP-848 groups (confluent-kafka, ``group.protocol=consumer``, and raw ConsumerGroupHeartbeat): a
  subscription naming ``secret`` is refused with TOPIC_AUTHORIZATION_FAILED, a regex resolves over the
  topics she may describe only, and ConsumerGroupDescribe refuses a group whose assignments name a
  topic she may not see (TOPIC_AUTHORIZATION_FAILED, no members) and gives the authorized operations
  when asked for;
* Metadata v12 by topic id names no topic she may not describe (a null name, error 29);
* a refused FindCoordinator v3 answers Kafka's "no node" (-1, "", -1);
* DescribeConfigs hides only the values of secret settings (``inter.broker.sasl.password``), and shows
  the security settings that are not secrets.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from e2e.e2e_helpers import RawClient
from secure_clients import Login, confluent_conf, create_topics_and_acls

from broker.testing.harness import BrokerProcess
from protocol.api import ApiKey
from protocol.error_codes import ErrorCode

pytestmark = pytest.mark.slow

E = ErrorCode
PASSWORDS = {"admin": "admin-secret", "mallory": "mallory-secret"}
INTER_BROKER_PASSWORD = "inter-broker-secret"
PUBLIC, SECRET = "public", "secret"
TIMEOUT_S = 30
KIP848 = {"group.protocol": "consumer"}


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    directory: Path = tmp_path_factory.mktemp("visibility")
    users = directory / "users.txt"
    users.write_text("".join(f"{u}:{p}\n" for u, p in PASSWORDS.items()))
    settings = {
        "sasl.users.file": users, "authorizer.enabled": "true", "super.users": "User:admin",
        "allow.everyone.if.no.acl.found": "false", "inter.broker.sasl.username": "admin",
        "inter.broker.sasl.password": INTER_BROKER_PASSWORD,
        "group.consumer.heartbeat.interval.ms": 300, "group.consumer.min.heartbeat.interval.ms": 100,
        "group.consumer.session.timeout.ms": 6000, "group.consumer.min.session.timeout.ms": 1000,
    }
    args = [arg for key, value in settings.items() for arg in ("--set", f"{key}={value}")]
    b = BrokerProcess(directory / "data", listeners=["SASL_PLAINTEXT"], extra_args=args).start()
    try:
        prepare(conf(b, "admin"))
        yield b
    finally:
        alive = b.alive()
        b.stop()
        assert alive, f"the broker died:\n{b.log_tail()}"
    assert INTER_BROKER_PASSWORD not in b.log_path.read_text()


def conf(broker: BrokerProcess, user: str) -> dict[str, Any]:
    return confluent_conf(Login(broker.bootstrap("SASL_PLAINTEXT"), "SASL_PLAINTEXT", "SCRAM-SHA-512", user,
                                PASSWORDS[user]))


def prepare(admin_conf: dict[str, Any]) -> None:
    create_topics_and_acls(admin_conf, {PUBLIC: 2, SECRET: 3}, [
        ("User:mallory", "TOPIC", PUBLIC, "READ", False), ("User:mallory", "TOPIC", PUBLIC, "DESCRIBE", False),
        ("User:mallory", "GROUP", "mallory-", "READ", True)])


def wait_for(predicate: Callable[[], Any], what: str, timeout: float = TIMEOUT_S) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


class Member:
    """A confluent-kafka KIP-848 consumer, polled by the test: every assignment it ever had, its errors."""

    def __init__(self, broker: BrokerProcess, user: str, group: str, subscription: list[str]) -> None:
        from confluent_kafka import Consumer

        self.consumer = Consumer({**conf(broker, user), **KIP848, "group.id": group, "enable.auto.commit": False,
                                  "auto.offset.reset": "earliest"})
        self.consumer.subscribe(subscription)
        self.seen: set[tuple[str, int]] = set()
        self.errors: list[str] = []

    def poll(self) -> set[tuple[str, int]]:
        message = self.consumer.poll(0.1)
        if message is not None and message.error() is not None:
            self.errors.append(message.error().name())
        now = {(tp.topic, tp.partition) for tp in self.consumer.assignment()}
        self.seen |= now
        return now

    def poll_for(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            self.poll()

    def close(self) -> None:
        self.consumer.close()


@pytest.fixture
def members() -> Iterator[list[Member]]:
    made: list[Member] = []
    yield made
    for member in made:
        member.close()


def topic_ids(broker: BrokerProcess) -> dict[str, Any]:
    with raw_login(broker, "admin") as raw:
        md = raw.request(ApiKey.METADATA, 12, {"topics": None, "allow_auto_topic_creation": False,
                                               "include_topic_authorized_operations": False})
    return {t.name: t.topic_id for t in md.topics}


def raw_login(broker: BrokerProcess, user: str) -> RawClient:
    raw = RawClient(*broker.address("SASL_PLAINTEXT"))
    assert raw.request(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"}).error_code == 0
    answer = raw.request(ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": f"\0{user}\0{PASSWORDS[user]}".encode()})
    assert answer.error_code == 0
    return raw


# -- KIP-848 consumer groups ------------------------------------------------------------------------


def test_a_subscription_naming_a_hidden_topic_is_refused(broker: BrokerProcess, members: list[Member]) -> None:
    member = Member(broker, "mallory", "mallory-names", [PUBLIC, SECRET])
    members.append(member)
    wait_for(lambda: member.poll() or "TOPIC_AUTHORIZATION_FAILED" in member.errors,
             "the subscription to be refused")
    member.poll_for(2)
    assert "TOPIC_AUTHORIZATION_FAILED" in member.errors
    assert not member.seen, f"assigned {member.seen}"
    allowed = Member(broker, "mallory", "mallory-names-ok", [PUBLIC])  # her own topic: assigned
    members.append(allowed)
    wait_for(lambda: allowed.poll() == {(PUBLIC, 0), (PUBLIC, 1)}, "public's partitions")


def test_a_regex_resolves_over_the_topics_the_member_may_describe(broker: BrokerProcess,
                                                                 members: list[Member]) -> None:
    from confluent_kafka.admin import AdminClient

    member = Member(broker, "mallory", "mallory-regex", ["^(public|secret)$"])
    members.append(member)
    wait_for(lambda: member.poll() == {(PUBLIC, 0), (PUBLIC, 1)}, "public's partitions")
    member.poll_for(2)  # a later resolution does not bring the hidden topic either
    assert member.seen == {(PUBLIC, 0), (PUBLIC, 1)}
    # the client drops ids it cannot name from what it shows: the group itself must not hold them
    admin_client = AdminClient(conf(broker, "admin"))
    group = admin_client.describe_consumer_groups(["mallory-regex"])["mallory-regex"].result(TIMEOUT_S)
    assert {tp.topic for m in group.members for tp in m.assignment.topic_partitions} == {PUBLIC}
    # the same regex for a principal that may describe everything
    admin = Member(broker, "admin", "admin-regex", ["^(public|secret)$"])
    members.append(admin)
    wait_for(lambda: admin.poll() == {(PUBLIC, 0), (PUBLIC, 1), (SECRET, 0), (SECRET, 1), (SECRET, 2)},
             "both topics for the admin")


def heartbeat(raw: RawClient, group: str, member_id: str, epoch: int, **subscription: Any) -> Any:
    """One ConsumerGroupHeartbeat v1 (a join when ``epoch`` is 0)."""
    return raw.request(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, {
        "group_id": group, "member_id": member_id, "member_epoch": epoch, "instance_id": None, "rack_id": None,
        "rebalance_timeout_ms": 30_000 if epoch == 0 else -1, "server_assignor": None,
        "topic_partitions": [] if epoch == 0 else None, "subscribed_topic_names": None,
        "subscribed_topic_regex": None, **subscription})


def test_a_raw_heartbeat_naming_a_hidden_topic_is_refused(broker: BrokerProcess) -> None:
    with raw_login(broker, "mallory") as raw:
        refused = heartbeat(raw, "mallory-raw-names", "m-names", 0, subscribed_topic_names=[PUBLIC, SECRET])
        assert refused.error_code == E.TOPIC_AUTHORIZATION_FAILED and refused.assignment is None
        allowed = heartbeat(raw, "mallory-raw-names", "m-names", 0, subscribed_topic_names=[PUBLIC])
        assert allowed.error_code == 0


def test_a_raw_regex_heartbeat_never_shows_a_hidden_topic(broker: BrokerProcess) -> None:
    ids = topic_ids(broker)
    with raw_login(broker, "mallory") as raw:
        first = heartbeat(raw, "mallory-cg", "m-regex", 0, subscribed_topic_names=[], subscribed_topic_regex=".*")
        assert first.error_code == 0
        epoch = [first.member_epoch]

        def assigned() -> Any:
            answer = heartbeat(raw, "mallory-cg", "m-regex", epoch[0])
            assert answer.error_code == 0, answer
            epoch[0] = answer.member_epoch
            return answer.assignment is not None and answer.assignment.topic_partitions and answer.assignment

        assignment = wait_for(assigned, "the regex to be resolved")
        assert {t.topic_id for t in assignment.topic_partitions} == {ids[PUBLIC]}
        described = raw.request(ApiKey.CONSUMER_GROUP_DESCRIBE, 0, {"group_ids": ["mallory-cg"],
                                                                    "include_authorized_operations": False})
        group = described.groups[0]
        assert group.error_code == 0
        names = {tp.topic_name for m in group.members for a in (m.assignment, m.target_assignment)
                 for tp in a.topic_partitions}
        assert names == {PUBLIC}


def test_describing_a_group_with_hidden_topics_is_refused(broker: BrokerProcess, members: list[Member]) -> None:
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AclOperation, AdminClient

    admin = Member(broker, "admin", "mallory-shared", [PUBLIC, SECRET])  # a group she may read, with secret in it
    members.append(admin)
    wait_for(lambda: len(admin.poll()) == 5, "the admin's member to own every partition")
    theirs = AdminClient(conf(broker, "mallory"))
    with pytest.raises(KafkaException) as refused:
        theirs.describe_consumer_groups(["mallory-shared"])["mallory-shared"].result(TIMEOUT_S)
    assert refused.value.args[0].name() == "TOPIC_AUTHORIZATION_FAILED"
    admin_client = AdminClient(conf(broker, "admin"))
    full = admin_client.describe_consumer_groups(["mallory-shared"], include_authorized_operations=True)[
        "mallory-shared"].result(TIMEOUT_S)
    assert {tp.topic for m in full.members for tp in m.assignment.topic_partitions} == {PUBLIC, SECRET}
    assert AclOperation.DELETE in full.authorized_operations


def test_consumer_group_describe_gives_the_authorized_operations(broker: BrokerProcess,
                                                                 members: list[Member]) -> None:
    from confluent_kafka.admin import AclOperation, AdminClient

    theirs = AdminClient(conf(broker, "mallory"))
    mine = Member(broker, "mallory", "mallory-own", [PUBLIC])
    members.append(mine)
    wait_for(lambda: len(mine.poll()) == 2, "her member to own public")
    own = theirs.describe_consumer_groups(["mallory-own"], include_authorized_operations=True)["mallory-own"].result(
        TIMEOUT_S)
    assert {tp.topic for m in own.members for tp in m.assignment.topic_partitions} == {PUBLIC}
    assert set(own.authorized_operations) == {AclOperation.READ, AclOperation.DESCRIBE}


# -- Metadata by id, FindCoordinator ----------------------------------------------------------------


def test_metadata_by_topic_id_names_no_hidden_topic(broker: BrokerProcess) -> None:
    ids = topic_ids(broker)
    with raw_login(broker, "mallory") as raw:
        md = raw.request(ApiKey.METADATA, 12, {"topics": [{"name": None, "topic_id": ids[SECRET]},
                                                          {"name": None, "topic_id": ids[PUBLIC]}],
                                               "allow_auto_topic_creation": False,
                                               "include_topic_authorized_operations": False})
    by_id = {t.topic_id: t for t in md.topics}
    hidden, visible = by_id[ids[SECRET]], by_id[ids[PUBLIC]]
    assert (hidden.error_code, hidden.name, list(hidden.partitions)) == (E.TOPIC_AUTHORIZATION_FAILED, None, [])
    assert (visible.error_code, visible.name, len(visible.partitions)) == (0, PUBLIC, 2)


def test_a_refused_find_coordinator_v3_names_no_node(broker: BrokerProcess) -> None:
    with raw_login(broker, "mallory") as raw:
        refused = raw.request(ApiKey.FIND_COORDINATOR, 3, {"key": "someone-elses", "key_type": 0})
        allowed = raw.request(ApiKey.FIND_COORDINATOR, 3, {"key": "mallory-g", "key_type": 0})
    assert (refused.error_code, refused.node_id, refused.host, refused.port) == (E.GROUP_AUTHORIZATION_FAILED, -1,
                                                                                  "", -1)
    assert (allowed.error_code, allowed.node_id) == (0, 1)


# -- DescribeConfigs --------------------------------------------------------------------------------


def test_describe_configs_hides_only_secrets(broker: BrokerProcess) -> None:
    from confluent_kafka.admin import AdminClient, ConfigResource, ResourceType

    resource = ConfigResource(ResourceType.BROKER, "1")
    admin = AdminClient(conf(broker, "admin"))  # referenced until the result is in
    entries = admin.describe_configs([resource])[resource].result(TIMEOUT_S)
    shown = {name: (entry.value, entry.is_sensitive) for name, entry in entries.items()}
    assert shown["authorizer.enabled"] == ("true", False)
    assert shown["sasl.enabled.mechanisms"] == ("PLAIN,SCRAM-SHA-256,SCRAM-SHA-512", False)
    assert shown["ssl.client.auth"] == ("none", False)
    assert shown["connections.max.reauth.ms"] == ("0", False)
    assert shown["connection.failed.authentication.delay.ms"] == ("100", False)
    assert shown["inter.broker.sasl.username"] == ("admin", False)
    assert shown["inter.broker.sasl.password"] == (None, True)
