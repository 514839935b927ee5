"""The security settings end to end but without sockets: the broker refuses bad ones before starting
(one line, exit code 2), the client and the CLI take Kafka's names, the Spark source passes its
``kafka.*`` options on, the SASL client side talks to the SASL server core, and the metadata image
follows users and ACLs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from security_helpers import KEY_PASSWORD, Pki

from broker.cluster.image import MetadataImage
from broker.cluster.kv import KeyValue, WatchEvent
from broker.core import load_config as load
from broker.security.acl import AclBinding, AclOperation, AclPermissionType, PatternType, ResourceType
from broker.security.sasl import SaslConfig, SaslServer
from broker.security.scram import (
    CredentialStore,
    ScramMechanism,
    UserRecord,
    credential_from_password,
    user_key,
)
from broker.security.setup import advertised_endpoints, inter_broker_security, server_listeners
from client.config import ConsumerConfig, build_config
from client.errors import ConfigError
from client.security import SaslClientExchange, SaslExchangeError


def refuse(capsys: pytest.CaptureFixture[str], *settings: str) -> str:
    args = ["--data-dir", "/nonexistent-kbroker-test"]
    for s in settings:
        args += ["--set", s]
    with pytest.raises(SystemExit) as exit_info:
        load(args, environ={})
    assert exit_info.value.code == 2
    return capsys.readouterr().err.strip()


def test_bad_security_settings_stop_the_broker_with_one_line(capsys: pytest.CaptureFixture[str], pki: Pki,
                                                             tmp_path: Path) -> None:
    assert "expected NAME://host:port" in refuse(capsys, "listeners=9092")
    assert "no security protocol for listener INTERNAL" in refuse(capsys, "listeners=INTERNAL://:9092")
    assert "needs ssl.certfile" in refuse(capsys, "listeners=SSL://127.0.0.1:9093")
    assert "wrong or missing ssl.keyfile.password" in refuse(
        capsys, "listeners=SSL://127.0.0.1:9093", f"ssl.certfile={pki.client_cert}",
        f"ssl.keyfile={pki.client_key_encrypted}", "ssl.keyfile.password=wrong")
    assert "unsupported mechanism 'GSSAPI'" in refuse(capsys, "sasl.enabled.mechanisms=GSSAPI")
    assert "super.users" in refuse(capsys, "super.users=admin")
    assert "inter.broker.listener.name: SSL is not a listener" in refuse(
        capsys, "listeners=PLAINTEXT://127.0.0.1:9092", "inter.broker.listener.name=SSL")
    assert "set inter.broker.sasl.username" in refuse(
        capsys, "listeners=SASL_PLAINTEXT://127.0.0.1:9092", "cluster=etcd://127.0.0.1:2379")
    (tmp_path / "users.txt").write_text("alice:ok\nbob\n")
    line = refuse(capsys, f"sasl.users.file={tmp_path / 'users.txt'}")
    assert "line 2" in line and "bob" not in line.split("line 2")[1]  # the line number, never the line


def test_listeners_and_what_they_advertise(pki: Pki) -> None:
    config = load(["--data-dir", "/tmp/x", "--set", "listeners=PLAINTEXT://:0,SASL_SSL://127.0.0.1:9095",
                   "--set", "advertised.listeners=SASL_SSL://broker.example:19095",
                   "--set", f"ssl.certfile={pki.client_cert}", "--set", f"ssl.keyfile={pki.client_key_encrypted}",
                   "--set", f"ssl.keyfile.password={KEY_PASSWORD}"], environ={})
    listeners = server_listeners(config)
    assert [(lst.name, lst.uses_tls, lst.ssl_context is not None) for lst in listeners] == [
        ("PLAINTEXT", False, False), ("SASL_SSL", True, True)]
    endpoints = advertised_endpoints(config, {"PLAINTEXT": 41234, "SASL_SSL": 9095})
    assert [(e.listener, e.host, e.port, e.security_protocol) for e in endpoints] == [
        ("PLAINTEXT", "localhost", 41234, "PLAINTEXT"), ("SASL_SSL", "broker.example", 19095, "SASL_SSL")]
    assert KEY_PASSWORD not in repr(config) and KEY_PASSWORD not in repr(listeners)
    # without `listeners` nothing changes: one PLAINTEXT listener on --host/--port
    plain = load(["--data-dir", "/tmp/x", "--host", "127.0.0.1", "--port", "0"], environ={})
    assert [(lst.name, lst.listener.host, lst.listener.port) for lst in server_listeners(plain)] == [
        ("PLAINTEXT", "127.0.0.1", 0)]
    assert [(e.host, e.port) for e in advertised_endpoints(plain, {"PLAINTEXT": 5555})] == [("127.0.0.1", 5555)]


def test_the_inter_broker_client_uses_the_brokers_own_credentials(pki: Pki) -> None:
    config = load(["--data-dir", "/tmp/x", "--set", "listeners=PLAINTEXT://:0,INTERNAL://127.0.0.1:0",
                   "--set", "listener.security.protocol.map=INTERNAL:SASL_SSL",
                   "--set", "inter.broker.listener.name=internal", "--set", f"ssl.certfile={pki.server_cert}",
                   "--set", f"ssl.keyfile={pki.server_key}", "--set", f"ssl.cafile={pki.ca}",
                   "--set", "inter.broker.sasl.username=broker", "--set", "inter.broker.sasl.password=pw"],
                  environ={})
    security = inter_broker_security(config)
    assert (security.protocol, security.sasl_mechanism, security.sasl_username) == ("SASL_SSL", "SCRAM-SHA-512",
                                                                                     "broker")
    assert security.ssl_context is not None and security.ssl_context.check_hostname
    assert "pw" not in repr(security)


def test_our_client_takes_the_java_names(pki: Pki) -> None:
    cfg = build_config(ConsumerConfig, {"bootstrap_servers": "h:1", "security.protocol": "SASL_SSL",
                                        "sasl.mechanism": "SCRAM-SHA-256", "sasl.username": "alice",
                                        "sasl.password": "secret", "ssl.cafile": str(pki.ca)})
    assert cfg.security.uses_tls and cfg.security.uses_sasl and "secret" not in repr(cfg)
    with pytest.raises(ConfigError, match=r"needs sasl\.username and sasl\.password"):
        build_config(ConsumerConfig, {"security_protocol": "SASL_PLAINTEXT"})
    with pytest.raises(ConfigError, match=r"sasl\.mechanism must be one of"):
        build_config(ConsumerConfig, {"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "GSSAPI",
                                      "sasl_username": "a", "sasl_password": "b"})
    with pytest.raises(ConfigError, match=r"ssl\.cafile: no such file"):
        build_config(ConsumerConfig, {"security_protocol": "SSL", "ssl_cafile": "/nonexistent.pem"})
    with pytest.raises(ConfigError, match="given twice"):
        build_config(ConsumerConfig, {"security_protocol": "SSL", "security.protocol": "SSL"})


def test_the_spark_source_passes_kafka_security_options_on(pki: Pki) -> None:
    from spark_jobs._reader import consumer_kwargs

    kwargs = consumer_kwargs({"kafka.bootstrap.servers": "h:1", "kafka.security.protocol": "SASL_SSL",
                              "kafka.sasl.mechanism": "PLAIN", "kafka.sasl.username": "alice",
                              "kafka.sasl.password": "secret", "kafka.ssl.cafile": str(pki.ca)})
    assert {k: kwargs[k] for k in ("security_protocol", "sasl_mechanism", "sasl_username", "ssl_cafile")} == {
        "security_protocol": "SASL_SSL", "sasl_mechanism": "PLAIN", "sasl_username": "alice",
        "ssl_cafile": str(pki.ca)}
    assert build_config(ConsumerConfig, kwargs).security.sasl_password == "secret"


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_the_client_exchange_logs_in_to_the_server_core(mechanism: str) -> None:
    store = CredentialStore()
    store.apply({"alice": UserRecord("alice", tuple(credential_from_password(m, "pw") for m in ScramMechanism))})

    def run(password: str) -> SaslServer:
        server = SaslServer(SaslConfig(), store)
        assert server.handshake(1, mechanism)["error_code"] == 0
        client = SaslClientExchange(mechanism, "alice", password)
        token: bytes | None = client.first()
        while token is not None:
            answer = server.authenticate(2, token)
            if answer["error_code"]:
                break
            token = client.respond(answer["auth_bytes"])
        return server

    assert run("pw").principal == "User:alice"
    assert run("wrong").failed


def test_a_server_without_the_password_cannot_pose_as_the_broker() -> None:
    """SCRAM's server signature: a server-final that does not verify fails the client's exchange."""
    client = SaslClientExchange("SCRAM-SHA-256", "alice", "pw")
    first = client.first().decode()
    nonce = first.split("r=", 1)[1]
    server_first = f"r={nonce}srv,s=QSXCR+Q6sek8bf92,i=4096".encode()
    client.respond(server_first)
    with pytest.raises(SaslExchangeError):
        client.respond(b"v=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=")


def kv(key: str, value: bytes, rev: int) -> KeyValue:
    return KeyValue(key, value, rev, rev, 1)


def test_the_image_follows_users_and_acls() -> None:
    image = MetadataImage()
    alice = UserRecord("alice", (credential_from_password(ScramMechanism.SCRAM_SHA_256, "pw"),))
    acl = AclBinding(ResourceType.TOPIC, "orders", PatternType.LITERAL, "User:alice", "*", AclOperation.READ,
                     AclPermissionType.ALLOW)
    delta = image.load([kv(user_key("alice"), alice.encode(), 5), kv(acl.key(), acl.encode(), 6),
                        kv("users/mallory", b"{not json", 7)], 7)
    assert delta.full and image.users == {"alice": alice} and image.acls == {acl.key(): acl}
    assert image.user_revisions == {"alice": 5}
    delta = image.apply([WatchEvent("delete", kv(acl.key(), b"", 8)), WatchEvent("put", kv(acl.key(), acl.encode(), 9)),
                         WatchEvent("delete", kv(user_key("alice"), b"", 9))])
    assert delta.acls_changed == {acl.key()} and image.acls == {acl.key(): acl} and image.acl_revisions[acl.key()] == 9
    assert delta.users_changed == {"alice"} and image.users == {}
    forged = json.loads(acl.encode())
    forged["resource_name"] = "secret"  # a record under another binding's key is refused
    delta = image.apply([WatchEvent("put", kv(acl.key(), json.dumps(forged).encode(), 10))])
    assert image.acls[acl.key()] == acl


def test_cli_usage_errors_name_the_setting(tmp_path: Path) -> None:
    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "kbroker_cli", *args], capture_output=True, text=True,
                              timeout=60)

    bad = cli("-X", "security.protocol=BOGUS", "topics", "list")
    assert bad.returncode == 2 and "security.protocol must be one of" in bad.stderr
    missing = cli("--command-config", str(tmp_path / "nope.properties"), "topics", "list")
    assert missing.returncode == 2 and "nope.properties" in missing.stderr
    (tmp_path / "bad.properties").write_text("security.protocol\n")
    assert "line 1: expected key=value" in cli("--command-config", str(tmp_path / "bad.properties"),
                                               "topics", "list").stderr
    assert cli("acls", "add", "--operation", "READ", "--topic", "t").returncode == 2  # no principal
    assert cli("acls", "remove").returncode == 2  # nothing to match: refuses to remove everything
