"""The security integration inside one process: listeners, the SASL gate on connections, users and ACLs
kept in the metadata store (followed by every broker of a cluster), authorization of requests, and
answers naming the listener a client came in on.  Our own client is the peer (outside clients run
in test_security_clients.py against ``python -m broker``)."""

from __future__ import annotations

import asyncio
import struct
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from security_helpers import Pki

from broker.cluster.local_kv import LocalKV
from broker.config.settings import BrokerConfig
from broker.core import BrokerCore
from broker.testing.embedded import Broker
from client import Acl, AclFilter, Admin, Producer
from client.errors import AuthenticationError, KafkaError
from protocol.api import ApiKey, decode_response, encode_request
from protocol.error_codes import ErrorCode

E = ErrorCode
USERS = "admin:admin-pass\nalice:alice-pass\n"


def users_file(tmp_path: Path) -> str:
    path = tmp_path / "users.txt"
    path.write_text(USERS)
    return str(path)


def addr(broker: Broker | BrokerCore, listener: str) -> str:
    core = broker.core if isinstance(broker, Broker) else broker
    host, port = core.server.bound[listener]
    return f"{host}:{port}"


def sasl(broker: Broker | BrokerCore, user: str = "alice", password: str = "alice-pass",
         mechanism: str = "SCRAM-SHA-512", **extra: Any) -> dict[str, Any]:
    return {"bootstrap_servers": addr(broker, "SASL_PLAINTEXT"), "security_protocol": "SASL_PLAINTEXT",
            "sasl_mechanism": mechanism, "sasl_username": user, "sasl_password": password,
            "request_timeout_ms": 10_000, **extra}


def auth_count(broker: Broker, result: str, mechanism: str, listener: str = "SASL_PLAINTEXT") -> float:
    value = broker.core.metrics.registry.get_sample_value(
        "kbroker_authentications_total", {"listener": listener, "mechanism": mechanism, "result": result})
    return value or 0.0


@pytest.fixture
async def sasl_broker(tmp_path: Path) -> AsyncIterator[Broker]:
    async with Broker(listeners="SASL_PLAINTEXT://127.0.0.1:0,PLAINTEXT://127.0.0.1:0",
                      sasl_users_file=users_file(tmp_path), data_dir=str(tmp_path / "data"),
                      connection_failed_authentication_delay_ms=0) as broker:
        yield broker


class Raw:
    """A raw protocol connection on the broker's own event loop (asyncio streams)."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer
        self.cid = 0

    @classmethod
    async def open(cls, address: str) -> Raw:
        host, port = address.rsplit(":", 1)
        return cls(*await asyncio.open_connection(host, int(port)))

    def send(self, api_key: int, version: int, body: dict[str, Any]) -> int:
        self.cid += 1
        self.writer.write(encode_request(api_key, version, self.cid, "raw", body))
        return self.cid

    def send_frame(self, payload: bytes) -> None:
        self.writer.write(struct.pack(">i", len(payload)) + payload)

    async def frame(self, timeout: float = 10.0) -> bytes | None:
        """The next frame, or None once the broker closed the connection."""
        try:
            size = struct.unpack(">i", await asyncio.wait_for(self.reader.readexactly(4), timeout))[0]
            return await asyncio.wait_for(self.reader.readexactly(size), timeout)
        except (asyncio.IncompleteReadError, ConnectionResetError):
            return None

    async def call(self, api_key: int, version: int, body: dict[str, Any]) -> Any:
        cid = self.send(api_key, version, body)
        frame = await self.frame()
        assert frame is not None, f"connection closed instead of answering {api_key}"
        got, resp = decode_response(api_key, version, frame)
        assert got == cid
        return resp

    def close(self) -> None:
        self.writer.close()


METADATA_ALL = {"topics": None, "allow_auto_topic_creation": False, "include_topic_authorized_operations": False}


# -- SASL ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
async def test_our_client_logs_in_with_each_mechanism(sasl_broker: Broker, mechanism: str) -> None:
    async with Admin(**sasl(sasl_broker, mechanism=mechanism)) as admin:
        await admin.create_topics({"orders": 1})
        assert "orders" in await admin.list_topics()
    assert auth_count(sasl_broker, "success", mechanism) >= 1
    with pytest.raises(AuthenticationError, match=f"invalid credentials with SASL mechanism {mechanism}"):
        async with Admin(**sasl(sasl_broker, password="wrong", mechanism=mechanism)):
            pass
    with pytest.raises(AuthenticationError):
        async with Admin(**sasl(sasl_broker, user="nobody", mechanism=mechanism)):
            pass
    assert auth_count(sasl_broker, "failure", mechanism) == 2


async def test_only_sasl_requests_are_answered_before_authentication(sasl_broker: Broker) -> None:
    raw = await Raw.open(addr(sasl_broker, "SASL_PLAINTEXT"))
    versions = await raw.call(ApiKey.API_VERSIONS, 3, {"client_software_name": "raw",
                                                       "client_software_version": "1"})
    assert versions.error_code == 0
    raw.send(ApiKey.METADATA, 12, METADATA_ALL)
    assert await raw.frame() is None  # closed, nothing answered
    raw.close()
    # the PLAINTEXT listener of the same broker needs no login, and SaslHandshake there is Kafka's refusal
    plain = await Raw.open(addr(sasl_broker, "PLAINTEXT"))
    assert (await plain.call(ApiKey.METADATA, 12, METADATA_ALL)).brokers
    assert (await plain.call(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"})).error_code == E.ILLEGAL_SASL_STATE
    plain.close()


async def test_a_v0_handshake_switches_to_raw_tokens(sasl_broker: Broker) -> None:
    raw = await Raw.open(addr(sasl_broker, "SASL_PLAINTEXT"))
    hs = await raw.call(ApiKey.SASL_HANDSHAKE, 0, {"mechanism": "PLAIN"})
    assert hs.error_code == 0 and "SCRAM-SHA-512" in hs.mechanisms
    raw.send_frame(b"\0alice\0alice-pass")
    assert await raw.frame() == b""  # the (empty) PLAIN answer, as a bare frame
    assert (await raw.call(ApiKey.METADATA, 12, METADATA_ALL)).brokers  # authenticated now
    raw.close()
    bad = await Raw.open(addr(sasl_broker, "SASL_PLAINTEXT"))
    await bad.call(ApiKey.SASL_HANDSHAKE, 0, {"mechanism": "PLAIN"})
    bad.send_frame(b"\0alice\0nope")
    assert await bad.frame() is None  # a failed raw token closes the connection without an answer
    bad.close()


@pytest.mark.parametrize("token", [b"", b"\xff\xfe garbage", b"\0alice", b"alice\0alice\0alice-pass\0x",
                                   b"n,,n=alice,r=" + b"A" * 10, b"\0" * 2])
async def test_garbage_tokens_fail_the_login_and_close(sasl_broker: Broker, token: bytes) -> None:
    for mechanism in ("PLAIN", "SCRAM-SHA-256"):
        raw = await Raw.open(addr(sasl_broker, "SASL_PLAINTEXT"))
        assert (await raw.call(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": mechanism})).error_code == 0
        first = await raw.call(ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": token})
        if first.error_code == 0:  # a well-formed SCRAM client-first: now a truncated client-final
            last = await raw.call(ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": b"c=biws,r=" + token[-10:]})
            assert last.error_code == E.SASL_AUTHENTICATION_FAILED
        else:
            assert first.error_code == E.SASL_AUTHENTICATION_FAILED
            assert "alice-pass" not in (first.error_message or "")
        assert await raw.frame() is None
        raw.close()
    async with Admin(**sasl(sasl_broker)) as admin:  # still serving
        await admin.list_topics()


async def test_frames_before_authentication_are_bounded(tmp_path: Path) -> None:
    async with Broker(listeners="SASL_PLAINTEXT://127.0.0.1:0", sasl_users_file=users_file(tmp_path),
                      data_dir=str(tmp_path / "data"), sasl_server_max_receive_size=4096) as broker:
        raw = await Raw.open(addr(broker, "SASL_PLAINTEXT"))
        await raw.call(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"})
        raw.send(ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": b"x" * 10_000})
        assert await raw.frame() is None
        raw.close()
        async with Admin(**sasl(broker)) as admin:  # a normal login is far below the bound
            await admin.list_topics()
            conn = next(iter(broker.core.server.connections))
            assert conn.receiver.max_frame_bytes == broker.config.max_frame_bytes  # lifted once authenticated


async def test_failed_logins_are_answered_at_once_and_closed_after_the_delay_without_holding_up_others(
        tmp_path: Path) -> None:
    """As Kafka: the client reads why its login failed straight away (a close racing the answer would
    leave it guessing), and the connection ends only after connection.failed.authentication.delay.ms."""
    async with Broker(listeners="SASL_PLAINTEXT://127.0.0.1:0", sasl_users_file=users_file(tmp_path),
                      data_dir=str(tmp_path / "data"), connection_failed_authentication_delay_ms=6000) as broker:
        failing = []
        for _ in range(5):
            raw = await Raw.open(addr(broker, "SASL_PLAINTEXT"))
            await raw.call(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"})
            raw.send(ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": b"\0alice\0wrong"})
            failing.append(raw)
        loop = asyncio.get_running_loop()
        started = loop.time()
        for raw in failing:
            frame = await raw.frame(timeout=30)
            assert frame is not None
            assert decode_response(ApiKey.SASL_AUTHENTICATE, 2, frame)[1].error_code == E.SASL_AUTHENTICATION_FAILED
        assert auth_count(broker, "failure", "PLAIN") == 5
        # meanwhile another client logs in and is served: the delay holds no thread and no loop
        async with Admin(**sasl(broker, mechanism="PLAIN")) as admin:
            await admin.list_topics()
        if loop.time() - started < 5:  # (on a machine this busy the check below would prove nothing)
            assert not any(raw.reader.at_eof() for raw in failing), "closed before the delay was out"
        for raw in failing:  # then each connection ends
            assert await raw.frame(timeout=30) is None
            raw.close()
        assert loop.time() - started > 4


# -- users and ACLs in the metadata store ------------------------------------------------------------


async def test_users_added_at_run_time_log_in_and_deleted_ones_do_not(sasl_broker: Broker) -> None:
    async with Admin(**sasl(sasl_broker, user="admin", password="admin-pass")) as admin:
        await admin.alter_user_scram_credentials(upsertions=[("carol", "SCRAM-SHA-256", "carol-pass"),
                                                             ("carol", "SCRAM-SHA-512", "carol-pass")])
        users = await admin.describe_user_scram_credentials()
        assert sorted(users) == ["admin", "alice", "carol"]
        assert [c.mechanism for c in users["carol"]] == ["SCRAM-SHA-256", "SCRAM-SHA-512"]
        for mechanism in ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"):
            async with Admin(**sasl(sasl_broker, user="carol", password="carol-pass", mechanism=mechanism)) as c:
                await c.list_topics()
        await admin.alter_user_scram_credentials(deletions=[("carol", "SCRAM-SHA-256"), ("carol", "SCRAM-SHA-512")])
        with pytest.raises(KafkaError) as info:
            await admin.describe_user_scram_credentials(["carol"])
        assert info.value.code == E.RESOURCE_NOT_FOUND
    with pytest.raises(AuthenticationError):
        async with Admin(**sasl(sasl_broker, user="carol", password="carol-pass")):
            pass
    assert "carol" not in sasl_broker.core.metadata.image.users


async def test_acl_apis_answer_security_disabled_without_an_authorizer(sasl_broker: Broker) -> None:
    async with Admin(**sasl(sasl_broker)) as admin:
        with pytest.raises(KafkaError) as info:
            await admin.describe_acls()
        assert info.value.code == E.SECURITY_DISABLED


async def test_acls_written_through_one_broker_are_enforced_by_every_broker(tmp_path: Path) -> None:
    """Two brokers sharing one metadata store (an in-process cluster): ACLs and users written through
    either are followed by both."""
    shared = LocalKV(expire_leases=True)

    class View:
        def __getattr__(self, name: str) -> Any:
            return getattr(shared, name)

        async def close(self) -> None:
            pass

    cores = []
    for node in (1, 2):
        config = BrokerConfig(node_id=node, data_dir=str(tmp_path / f"d{node}"), metrics_port=None,
                              listeners="SASL_PLAINTEXT://127.0.0.1:0", sasl_users_file=users_file(tmp_path),
                              authorizer_enabled=True, super_users="User:admin",
                              inter_broker_sasl_username="admin", inter_broker_sasl_password="admin-pass",
                              group_initial_rebalance_delay_ms=0, offsets_topic_replication_factor=1)
        core = BrokerCore(config, kv=View())  # type: ignore[arg-type]
        await core.start()
        cores.append(core)
    try:
        async with Admin(**sasl(cores[0], user="admin", password="admin-pass")) as admin:
            await admin.create_topics({"orders-eu": 2, "secret": 1})
            await admin.create_acls([Acl("TOPIC", "orders-", "User:alice", "WRITE", pattern_type="PREFIXED")])
            await admin.alter_user_scram_credentials(upsertions=[("dave", "SCRAM-SHA-512", "dave-pass")])
        deadline = asyncio.get_running_loop().time() + 10
        while len(cores[1].security_admin.authorizer) != 1 or "dave" not in cores[1].security_admin.credentials:
            assert asyncio.get_running_loop().time() < deadline
            await asyncio.sleep(0.01)
        for core in cores:
            async with Producer(**sasl(core), acks=-1) as producer:
                await producer.send("orders-eu", b"allowed", partition=0)
                with pytest.raises(KafkaError) as info:
                    await producer.send("secret", b"refused", partition=0)
                assert info.value.code == E.TOPIC_AUTHORIZATION_FAILED
            async with Admin(**sasl(core, user="dave", password="dave-pass")) as dave:
                assert await dave.list_topics() == {}  # logged in, sees nothing without DESCRIBE
        async with Admin(**sasl(cores[1], user="admin", password="admin-pass")) as admin:
            removed = await admin.delete_acls([AclFilter(principal="User:alice")])
            assert [a.resource_name for a in removed] == ["orders-"]
        for core in cores:
            deadline = asyncio.get_running_loop().time() + 10
            while len(core.security_admin.authorizer):
                assert asyncio.get_running_loop().time() < deadline
                await asyncio.sleep(0.01)
    finally:
        for core in reversed(cores):
            await core.stop()
        await shared.close()


# -- listeners -------------------------------------------------------------------------------------


async def test_metadata_coordinator_and_cluster_answer_with_the_clients_listener(tmp_path: Path) -> None:
    async with Broker(listeners="PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
                      advertised_listeners="SASL_PLAINTEXT://localhost:19999",
                      sasl_users_file=users_file(tmp_path), data_dir=str(tmp_path / "data")) as broker:
        registration = broker.core.metadata.image.brokers[1]
        plain_port = broker.core.server.bound["PLAINTEXT"][1]
        assert [(e.listener, e.host, e.port, e.security_protocol) for e in registration.endpoints] == [
            ("PLAINTEXT", "127.0.0.1", plain_port, "PLAINTEXT"), ("SASL_PLAINTEXT", "localhost", 19999, "SASL_PLAINTEXT")]
        plain = await Raw.open(addr(broker, "PLAINTEXT"))
        secured = await Raw.open(addr(broker, "SASL_PLAINTEXT"))
        await secured.call(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"})
        assert (await secured.call(ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": b"\0alice\0alice-pass"})).error_code == 0
        for raw, expected in ((plain, ("127.0.0.1", plain_port)), (secured, ("localhost", 19999))):
            md = await raw.call(ApiKey.METADATA, 12, METADATA_ALL)
            assert [(b.host, b.port) for b in md.brokers] == [expected]
            cluster = await raw.call(ApiKey.DESCRIBE_CLUSTER, 1, {"include_cluster_authorized_operations": False,
                                                                  "endpoint_type": 1})
            assert [(b.host, b.port) for b in cluster.brokers] == [expected]
            coordinator = await raw.call(ApiKey.FIND_COORDINATOR, 4, {"key_type": 0, "coordinator_keys": ["g"]})
            assert (coordinator.coordinators[0].host, coordinator.coordinators[0].port) == expected
            configs = await raw.call(ApiKey.DESCRIBE_CONFIGS, 4, {"resources": [
                {"resource_type": 4, "resource_name": "1", "configuration_keys": ["advertised.listeners"]}],
                "include_synonyms": False, "include_documentation": False})
            assert configs.results[0].configs[0].value == \
                f"PLAINTEXT://127.0.0.1:{plain_port},SASL_PLAINTEXT://localhost:19999"
            raw.close()


async def test_tls_record_data_is_copied_and_plaintext_uses_sendfile(pki: Pki, tmp_path: Path) -> None:
    async with Broker(listeners="PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0", ssl_certfile=str(pki.server_cert),
                      ssl_keyfile=str(pki.server_key), data_dir=str(tmp_path / "data")) as broker:
        server = broker.core.server
        plain = {"bootstrap_servers": addr(broker, "PLAINTEXT")}
        tls = {"bootstrap_servers": addr(broker, "SSL"), "security_protocol": "SSL", "ssl_cafile": str(pki.ca)}
        async with Producer(**plain) as producer:
            for i in range(20):
                await producer.send("big", b"%05d" % i + b"x" * 10_000, partition=0)
        from client import Consumer, TopicPartition

        async def read_all(cfg: dict[str, Any]) -> list[bytes]:
            async with Consumer(**cfg, auto_offset_reset="earliest", enable_auto_commit=False) as consumer:
                consumer.assign([TopicPartition("big", 0)])
                got: list[bytes] = []
                while len(got) < 20:
                    for records in (await consumer.getmany(timeout_ms=1000)).values():
                        got += [r.value for r in records]
                return got

        before = server.sendfile_bytes
        assert [v[:5] for v in await read_all(tls)] == [b"%05d" % i for i in range(20)]
        assert server.sendfile_bytes == before  # never sendfile under TLS
        assert [v[:5] for v in await read_all(plain)] == [b"%05d" % i for i in range(20)]
        assert server.sendfile_bytes > before


async def test_a_mechanism_the_broker_does_not_enable_is_refused(tmp_path: Path) -> None:
    async with Broker(listeners="SASL_PLAINTEXT://127.0.0.1:0", sasl_users_file=users_file(tmp_path),
                      sasl_enabled_mechanisms="SCRAM-SHA-512", data_dir=str(tmp_path / "data")) as broker:
        with pytest.raises(AuthenticationError, match=r"does not accept SASL mechanism PLAIN \(enabled: SCRAM-SHA-512\)"):
            async with Admin(**sasl(broker, mechanism="PLAIN")):
                pass
        async with Admin(**sasl(broker, mechanism="SCRAM-SHA-512")) as admin:
            await admin.list_topics()
        assert auth_count(broker, "failure", "none") == 1


async def test_mutual_tls_required_refuses_a_client_without_a_certificate(pki: Pki, tmp_path: Path) -> None:
    async with Broker(listeners="SSL://127.0.0.1:0", ssl_certfile=str(pki.server_cert),
                      ssl_keyfile=str(pki.server_key), ssl_cafile=str(pki.ca), ssl_client_auth="required",
                      data_dir=str(tmp_path / "data"), authorizer_enabled=True, super_users="User:alice") as broker:
        # the broker ends the TLS session of a client without an accepted certificate; the client's
        # retries end with its (short) request timeout
        tls = {"bootstrap_servers": addr(broker, "SSL"), "security_protocol": "SSL", "ssl_cafile": str(pki.ca),
               "request_timeout_ms": 2_000}
        with pytest.raises(KafkaError):
            async with Admin(**tls):
                pass
        # a certificate from another CA is refused too
        with pytest.raises(KafkaError):
            async with Admin(**tls, ssl_certfile=str(pki.other_ca), ssl_keyfile=str(pki.other_ca.with_suffix(".key"))):
                pass
        assert not broker.core.server.connections  # none of them got in
        async with Admin(**tls, ssl_certfile=str(pki.client_cert), ssl_keyfile=str(pki.client_key)) as admin:
            await admin.create_topics({"certified": 1})  # User:alice (the CN) is a super user here
            assert {c.principal for c in broker.core.server.connections} == {"User:alice"}
