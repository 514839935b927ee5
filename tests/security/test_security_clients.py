"""Every client we serve, over every secured listener of ``python -m broker``: confluent-kafka,
kafka-python, aiokafka, kcat, kafkajs and our own client produce and consume over SSL, SASL_SSL with
SCRAM-SHA-256, SCRAM-SHA-512 and PLAIN, and SASL_PLAINTEXT; a wrong password, an unknown user and a
mechanism the broker does not speak are each reported as an authentication error, promptly, while
the broker keeps serving; a plaintext client on a TLS port and a TLS client on a plaintext port are
refused cleanly."""

from __future__ import annotations

import socket
import ssl
from collections.abc import Iterator

import pytest
from secure_clients import FAILED_LOGIN, OAUTHBEARER, ROUNDTRIP, Login
from security_helpers import Pki

from broker.testing.harness import BrokerProcess
from protocol.api import ApiKey, encode_request

pytestmark = pytest.mark.slow

LISTENERS = ["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"]


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory, pki: Pki) -> Iterator[BrokerProcess]:
    directory = tmp_path_factory.mktemp("secured")
    users = directory / "users.txt"
    users.write_text("alice:alice-secret\nbob:b0b-pässword\n")
    broker = BrokerProcess(directory / "data", listeners=LISTENERS, extra_args=[
        "--set", f"ssl.certfile={pki.server_cert}", "--set", f"ssl.keyfile={pki.server_key}",
        "--set", f"sasl.users.file={users}"])
    broker.start()
    yield broker
    assert broker.alive(), f"broker died:\n{broker.log_tail()}"
    assert broker.stop() == 0
    log = broker.log_path.read_text()
    assert "alice-secret" not in log and "b0b-pässword" not in log  # passwords never reach the log


def login(broker: BrokerProcess, pki: Pki, protocol: str, mechanism: str | None = None) -> Login:
    tls = protocol in ("SSL", "SASL_SSL")
    return Login(broker.bootstrap(protocol), protocol, mechanism, "alice" if mechanism else None,
                 "alice-secret" if mechanism else None, str(pki.ca) if tls else None)


CASES = [("SSL", None), ("SASL_SSL", "SCRAM-SHA-256"), ("SASL_SSL", "SCRAM-SHA-512"), ("SASL_SSL", "PLAIN"),
         ("SASL_PLAINTEXT", "SCRAM-SHA-512")]


@pytest.mark.parametrize("client", sorted(ROUNDTRIP))
@pytest.mark.parametrize(("protocol", "mechanism"), CASES, ids=[f"{p}-{m or 'cert'}" for p, m in CASES])
def test_produce_and_consume(secured: BrokerProcess, pki: Pki, client: str, protocol: str,
                             mechanism: str | None) -> None:
    topic = f"{client}-{protocol}-{mechanism or 'tls'}".lower().replace("_", "-")
    values = [f"{client} {i} over {protocol}".encode() for i in range(7)]
    assert ROUNDTRIP[client](login(secured, pki, protocol, mechanism), topic, values) == values


REFUSALS = {"wrong-password": {"password": "not-it"}, "unknown-user": {"user": "mallory"},
            "unsupported-mechanism": {"mechanism": OAUTHBEARER}}


@pytest.mark.parametrize("client", sorted(FAILED_LOGIN))
@pytest.mark.parametrize("case", sorted(REFUSALS))
def test_refused_logins_are_reported_as_authentication_errors(secured: BrokerProcess, pki: Pki, client: str,
                                                             case: str) -> None:
    if client == "kbroker-client" and case == "unsupported-mechanism":
        pytest.skip("our client refuses OAUTHBEARER itself (test_security_broker covers a mechanism the broker "
                    "does not enable)")
    base = login(secured, pki, "SASL_SSL", "SCRAM-SHA-512")
    text = FAILED_LOGIN[client](base.but(**REFUSALS[case]))
    if case == "unsupported-mechanism":
        assert "mechanism" in text.lower() or "UNSUPPORTED_SASL_MECHANISM" in text, text
    else:
        assert "invalid credentials" in text or "SaslAuthenticationFailed" in text, text
    # and the broker goes on serving the others
    assert ROUNDTRIP["kbroker-client"](base, "still-serving", [b"ok"])[-1:] == [b"ok"]


def _no_answer(sock: socket.socket) -> bytes:
    """Everything the peer sends until it closes (an answer would be a Kafka frame)."""
    sock.settimeout(20)
    data = b""
    try:
        while chunk := sock.recv(65536):
            data += chunk
    except (ConnectionResetError, ssl.SSLError):
        pass
    return data


def test_plaintext_on_a_tls_port_and_tls_on_a_plaintext_port_are_refused(secured: BrokerProcess, pki: Pki) -> None:
    api_versions = encode_request(ApiKey.API_VERSIONS, 0, 1, "wrong-port", {})
    with socket.create_connection(secured.address("SSL")) as sock:
        sock.sendall(api_versions)
        data = _no_answer(sock)
        assert not data.startswith(b"\x00\x00"), "a Kafka answer came back in clear text"
    ctx = ssl.create_default_context(cafile=str(pki.ca))
    with socket.create_connection(secured.address("PLAINTEXT")) as raw, \
            pytest.raises((ssl.SSLError, ConnectionResetError, OSError)):
        ctx.wrap_socket(raw, server_hostname="localhost")
    # the broker says so in its log and keeps serving
    base = login(secured, pki, "SSL")
    assert ROUNDTRIP["kbroker-client"](base, "after-wrong-ports", [b"ok"])[-1:] == [b"ok"]


def test_failed_logins_are_logged_without_secrets(secured: BrokerProcess, pki: Pki) -> None:
    base = login(secured, pki, "SASL_PLAINTEXT", "PLAIN")
    FAILED_LOGIN["kbroker-client"](base.but(password="hunter2-wrong"))
    log = secured.log_path.read_text()
    assert "authentication failed" in log and "hunter2-wrong" not in log
