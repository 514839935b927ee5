"""Outside clients configured for a secured listener: confluent-kafka, kafka-python, aiokafka, kcat,
kafkajs, and our own client.

A :class:`Login` says where and how to connect; for each client, ``ROUNDTRIP[name](login, topic,
values)`` produces ``values`` to partition 0 of ``topic`` and returns what it reads back from the
beginning, and ``FAILED_LOGIN[name](login)`` tries to connect with credentials the broker must refuse
and returns the client's error text (it fails the test when the client got in, and bounds how long
the client may take to give up: a client that hangs is a failure).
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import os
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from peers import NODE_DIR

TIMEOUT_S = 60
NODE_SCRIPT = NODE_DIR / "produce_consume.js"
OAUTHBEARER = "OAUTHBEARER"  # a mechanism every client speaks and the broker does not


@dataclass(frozen=True)
class Login:
    bootstrap: str
    protocol: str
    mechanism: str | None = None
    user: str | None = None
    password: str | None = None
    cafile: str | None = None
    certfile: str | None = None
    keyfile: str | None = None

    def but(self, **changes: Any) -> Login:
        return replace(self, **changes)


# -- configurations ------------------------------------------------------------------------------


def confluent_conf(login: Login) -> dict[str, Any]:
    conf: dict[str, Any] = {"bootstrap.servers": login.bootstrap, "security.protocol": login.protocol}
    if login.cafile:
        conf["ssl.ca.location"] = login.cafile
    if login.certfile:
        conf.update({"ssl.certificate.location": login.certfile, "ssl.key.location": login.keyfile})
    if login.mechanism == OAUTHBEARER:
        conf.update({"sasl.mechanism": OAUTHBEARER, "enable.sasl.oauthbearer.unsecure.jwt": True,
                     "sasl.oauthbearer.config": "principal=alice"})
    elif login.mechanism:
        conf.update({"sasl.mechanism": login.mechanism, "sasl.username": login.user, "sasl.password": login.password})
    return conf


def kafka_python_conf(login: Login) -> dict[str, Any]:
    conf: dict[str, Any] = {"bootstrap_servers": login.bootstrap, "security_protocol": login.protocol}
    if login.cafile:
        conf["ssl_cafile"] = login.cafile
    if login.certfile:
        conf.update(ssl_certfile=login.certfile, ssl_keyfile=login.keyfile)
    if login.mechanism == OAUTHBEARER:
        from kafka.net.sasl.oauth import AbstractTokenProvider

        class Token(AbstractTokenProvider):  # type: ignore[misc]
            def token(self) -> str:
                return "header.payload.signature"

        conf.update(sasl_mechanism=OAUTHBEARER, sasl_oauth_token_provider=Token())
    elif login.mechanism:
        conf.update(sasl_mechanism=login.mechanism, sasl_plain_username=login.user,
                    sasl_plain_password=login.password)
    return conf


def aiokafka_conf(login: Login) -> dict[str, Any]:
    conf: dict[str, Any] = {"bootstrap_servers": login.bootstrap, "security_protocol": login.protocol}
    if login.cafile:
        from aiokafka.helpers import create_ssl_context

        conf["ssl_context"] = create_ssl_context(cafile=login.cafile, certfile=login.certfile, keyfile=login.keyfile)
    if login.mechanism == OAUTHBEARER:
        from aiokafka.abc import AbstractTokenProvider

        class Token(AbstractTokenProvider):  # type: ignore[misc]
            async def token(self) -> str:
                return "header.payload.signature"

        conf.update(sasl_mechanism=OAUTHBEARER, sasl_oauth_token_provider=Token())
    elif login.mechanism:
        conf.update(sasl_mechanism=login.mechanism, sasl_plain_username=login.user, sasl_plain_password=login.password)
    return conf


def ours_conf(login: Login) -> dict[str, Any]:
    conf: dict[str, Any] = {"bootstrap_servers": login.bootstrap, "security.protocol": login.protocol,
                            "request_timeout_ms": 15_000}
    for key, value in (("ssl.cafile", login.cafile), ("ssl.certfile", login.certfile), ("ssl.keyfile", login.keyfile),
                       ("sasl.mechanism", login.mechanism), ("sasl.username", login.user),
                       ("sasl.password", login.password)):
        if value is not None:
            conf[key] = value
    return conf


def kcat_args(login: Login) -> list[str]:
    return [f"-X{key}={value}" for key, value in confluent_conf(login).items() if key != "bootstrap.servers"] + \
        ["-b", login.bootstrap]


def kafkajs_env(login: Login) -> dict[str, str]:
    env: dict[str, str] = {}
    if login.cafile:
        env["SSL_CA"] = login.cafile
    if login.certfile and login.keyfile:
        env.update(SSL_CERT=login.certfile, SSL_KEY=login.keyfile)
    if login.mechanism:
        env.update(SASL_MECHANISM=login.mechanism.lower(), SASL_USERNAME=login.user or "",
                   SASL_PASSWORD=login.password or "")
    return env


def create_topics_and_acls(admin_conf: dict[str, Any], topics: dict[str, int],
                           allows: list[tuple[str, str, str, str, bool]]) -> None:
    """With confluent-kafka's AdminClient: create ``topics`` (name -> partitions), then the ALLOW ACLs
    ``(principal, resource type, resource name, operation, prefixed)`` (names as confluent-kafka's enums)."""
    from confluent_kafka.admin import (
        AclBinding,
        AclOperation,
        AclPermissionType,
        AdminClient,
        NewTopic,
        ResourcePatternType,
        ResourceType,
    )

    admin = AdminClient(admin_conf)
    for future in admin.create_topics([NewTopic(name, n, 1) for name, n in topics.items()]).values():
        future.result(TIMEOUT_S)
    bindings = [AclBinding(ResourceType[resource], name,
                           ResourcePatternType.PREFIXED if prefixed else ResourcePatternType.LITERAL, principal, "*",
                           AclOperation[op], AclPermissionType.ALLOW)
                for principal, resource, name, op, prefixed in allows]
    for future in admin.create_acls(bindings).values():
        future.result(TIMEOUT_S)


# -- produce, then read back ---------------------------------------------------------------------


def roundtrip_confluent(login: Login, topic: str, values: list[bytes]) -> list[bytes]:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition

    producer = Producer({**confluent_conf(login), "acks": "all", "linger.ms": 5})
    errors: list[Any] = []
    for v in values:
        producer.produce(topic, v, partition=0, on_delivery=lambda err, _m: errors.append(err) if err else None)
    assert producer.flush(TIMEOUT_S) == 0 and not errors, errors
    consumer = Consumer({**confluent_conf(login), "group.id": f"rt-{topic}", "enable.auto.commit": False,
                         "fetch.wait.max.ms": 100})
    try:
        consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        got: list[bytes] = []
        deadline = time.monotonic() + TIMEOUT_S
        while len(got) < len(values) and time.monotonic() < deadline:
            for m in consumer.consume(100, 0.5):
                assert m.error() is None, m.error()
                got.append(m.value())
        return got
    finally:
        consumer.close()


def roundtrip_kafka_python(login: Login, topic: str, values: list[bytes]) -> list[bytes]:
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    producer = KafkaProducer(**kafka_python_conf(login), acks="all")
    try:
        for future in [producer.send(topic, v, partition=0) for v in values]:
            future.get(TIMEOUT_S)
    finally:
        producer.close(10)
    consumer = KafkaConsumer(**kafka_python_conf(login), enable_auto_commit=False, consumer_timeout_ms=2000)
    try:
        tp = TopicPartition(topic, 0)
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        got: list[bytes] = []
        deadline = time.monotonic() + TIMEOUT_S
        while len(got) < len(values) and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=500).values():
                got += [r.value for r in records]
        return got
    finally:
        consumer.close()


async def _read_back(consumer: Any, n: int) -> list[bytes]:
    """Values from an asyncio consumer's ``getmany`` (aiokafka's and ours) until ``n`` arrived."""
    got: list[bytes] = []
    deadline = time.monotonic() + TIMEOUT_S
    while len(got) < n and time.monotonic() < deadline:
        for records in (await consumer.getmany(timeout_ms=500)).values():
            got += [r.value for r in records]
    return got


def roundtrip_aiokafka(login: Login, topic: str, values: list[bytes]) -> list[bytes]:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

    async def run() -> list[bytes]:
        producer = AIOKafkaProducer(**aiokafka_conf(login), acks="all")
        await producer.start()
        try:
            for v in values:
                await producer.send_and_wait(topic, v, partition=0)
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(**aiokafka_conf(login), enable_auto_commit=False, auto_offset_reset="earliest")
        await consumer.start()
        try:
            consumer.assign([TopicPartition(topic, 0)])
            await consumer.seek_to_beginning(TopicPartition(topic, 0))
            return await _read_back(consumer, len(values))
        finally:
            await consumer.stop()

    return asyncio.run(run())


def roundtrip_ours(login: Login, topic: str, values: list[bytes]) -> list[bytes]:
    from client import Consumer, Producer, TopicPartition

    async def run() -> list[bytes]:
        async with Producer(**ours_conf(login), acks=-1) as producer:
            for v in values:
                await producer.send(topic, v, partition=0)
        async with Consumer(**ours_conf(login), auto_offset_reset="earliest", enable_auto_commit=False) as consumer:
            consumer.assign([TopicPartition(topic, 0)])
            return await _read_back(consumer, len(values))

    return asyncio.run(run())


def roundtrip_kcat(login: Login, topic: str, values: list[bytes]) -> list[bytes]:
    from peers import require_tool

    kcat = require_tool("kcat")
    produced = subprocess.run([kcat, *kcat_args(login), "-P", "-t", topic, "-p", "0", "-X", "acks=all"],
                              input=b"\n".join(values) + b"\n", capture_output=True, timeout=TIMEOUT_S)
    assert produced.returncode == 0, produced.stderr.decode()[-2000:]
    consumed = subprocess.run([kcat, *kcat_args(login), "-C", "-t", topic, "-p", "0", "-o", "beginning", "-e",
                               "-c", str(len(values)), "-f", "%s\n"], capture_output=True, timeout=TIMEOUT_S)
    assert consumed.returncode == 0, consumed.stderr.decode()[-2000:]
    return consumed.stdout.splitlines()


def _node(login: Login, mode: str, topic: str, values: list[bytes]) -> subprocess.CompletedProcess[bytes]:
    from peers import require_kafkajs

    node = require_kafkajs()
    records = [{"key": None, "value": base64.b64encode(v).decode(), "headers": [], "partition": 0} for v in values]
    env = {**os.environ, "PARTITIONS": "1", "EXPECT": str(len(values)), "GROUP": f"js-{topic}",
           "TIMEOUT_MS": str(TIMEOUT_S * 1000), **kafkajs_env(login)}
    return subprocess.run([node, str(NODE_SCRIPT), mode, login.bootstrap, topic], input=json.dumps(records).encode(),
                          capture_output=True, timeout=TIMEOUT_S + 30, cwd=str(NODE_DIR), env=env)


def roundtrip_kafkajs(login: Login, topic: str, values: list[bytes]) -> list[bytes]:
    proc = _node(login, "both", topic, values)
    assert proc.returncode == 0, proc.stderr.decode()[-3000:]
    result = json.loads(proc.stdout.decode().strip().splitlines()[-1])
    consumed = sorted(result["consumed"], key=lambda m: m["offset"])
    return [base64.b64decode(m["value"]) for m in consumed]


ROUNDTRIP: dict[str, Callable[[Login, str, list[bytes]], list[bytes]]] = {
    "confluent-kafka": roundtrip_confluent, "kafka-python": roundtrip_kafka_python, "aiokafka": roundtrip_aiokafka,
    "kcat": roundtrip_kcat, "kafkajs": roundtrip_kafkajs, "kbroker-client": roundtrip_ours,
}


# -- refused logins: the client's error text ------------------------------------------------------


def failed_confluent(login: Login) -> str:
    from confluent_kafka import KafkaError, Producer

    errors: list[Any] = []
    producer = Producer({**confluent_conf(login), "error_cb": errors.append})
    deadline = time.monotonic() + TIMEOUT_S
    while not any(e.code() == KafkaError._AUTHENTICATION for e in errors) and time.monotonic() < deadline:
        producer.poll(0.1)
    auth = [e for e in errors if e.code() == KafkaError._AUTHENTICATION]
    assert auth, f"no authentication error reported: {errors}"
    return str(auth[0].str())


def failed_kafka_python(login: Login) -> str:
    from kafka import KafkaProducer

    records: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    handler = Keep(logging.WARNING)
    kafka_log = logging.getLogger("kafka")
    level = kafka_log.level
    kafka_log.setLevel(logging.WARNING)  # whatever another test set it to: the refusal is logged at WARNING+
    kafka_log.addHandler(handler)
    try:
        try:
            KafkaProducer(**kafka_python_conf(login), bootstrap_timeout_ms=8000).close(1)
        except Exception as exc:  # kafka-python gives up bootstrapping and says why in its log
            raised = f"{type(exc).__name__}: {exc}"
        else:
            raise AssertionError("kafka-python logged in with refused credentials")
    finally:
        kafka_log.removeHandler(handler)
        kafka_log.setLevel(level)
    return raised + "\n" + "\n".join(r.getMessage() for r in records)


def failed_aiokafka(login: Login) -> str:
    from aiokafka import AIOKafkaProducer

    records: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record.getMessage())

    async def run() -> str:
        producer = AIOKafkaProducer(**aiokafka_conf(login))
        try:
            await producer.start()
        except Exception as exc:
            return f"{type(exc).__name__}: {exc}"
        finally:
            await producer.stop()
        raise AssertionError("aiokafka logged in with refused credentials")

    handler = Keep(logging.ERROR)
    logging.getLogger("aiokafka").addHandler(handler)
    try:
        return asyncio.run(run()) + "\n" + "\n".join(records)
    finally:
        logging.getLogger("aiokafka").removeHandler(handler)


def failed_ours(login: Login) -> str:
    from client import Admin
    from client.errors import AuthenticationError

    async def run() -> str:
        try:
            async with Admin(**ours_conf(login)):
                pass
        except AuthenticationError as exc:
            return f"AuthenticationError: {exc}"
        raise AssertionError("our client logged in with refused credentials")

    return asyncio.run(run())


def failed_kcat(login: Login) -> str:
    from peers import require_tool

    kcat = require_tool("kcat")
    proc = subprocess.run([kcat, *kcat_args(login), "-L", "-m", "5"], capture_output=True, timeout=TIMEOUT_S)
    assert proc.returncode != 0, "kcat logged in with refused credentials"
    return proc.stderr.decode()


def failed_kafkajs(login: Login) -> str:
    proc = _node(login, "produce", "refused", [b"x"])
    assert proc.returncode != 0, "kafkajs logged in with refused credentials"
    return proc.stderr.decode()


FAILED_LOGIN: dict[str, Callable[[Login], str]] = {
    "confluent-kafka": failed_confluent, "kafka-python": failed_kafka_python, "aiokafka": failed_aiokafka,
    "kcat": failed_kcat, "kafkajs": failed_kafkajs, "kbroker-client": failed_ours,
}
