"""Tests for broker.security.tls: contexts from PEM files, real handshakes, the peer principal."""

from __future__ import annotations

import socket
import ssl
import threading
from dataclasses import dataclass
from pathlib import Path

import pytest
from security_helpers import KEY_PASSWORD, Pki

from broker.security.acl import ANONYMOUS
from broker.security.tls import ClientAuth, client_context, principal_from_certificate, server_context


@dataclass
class Outcome:
    principal: str | None = None
    server_error: BaseException | None = None
    client_error: BaseException | None = None
    echoed: bytes | None = None


def run_handshake(server_ctx: ssl.SSLContext, client_ctx: ssl.SSLContext | None,
                  server_hostname: str = "localhost") -> Outcome:
    """A TLS handshake over a socket pair, then one echo; ``client_ctx`` None sends plaintext Kafka bytes."""
    out = Outcome()
    a, b = socket.socketpair()
    a.settimeout(10)
    b.settimeout(10)

    def serve() -> None:
        try:
            with server_ctx.wrap_socket(a, server_side=True) as s:
                out.principal = principal_from_certificate(s.getpeercert())
                s.sendall(s.recv(5))
        except (ssl.SSLError, OSError) as exc:
            out.server_error = exc
        finally:
            a.close()

    thread = threading.Thread(target=serve)
    thread.start()
    try:
        if client_ctx is None:
            b.sendall(b"\x00\x00\x00\x15\x00\x12\x00\x03\x00\x00\x00\x01\x00\x07kbroker\x00")
            out.echoed = b.recv(100)
        else:
            with client_ctx.wrap_socket(b, server_hostname=server_hostname) as c:
                c.sendall(b"hello")
                out.echoed = c.recv(5)
    except (ssl.SSLError, OSError) as exc:
        out.client_error = exc
    finally:
        b.close()
        thread.join(20)
    assert not thread.is_alive()
    return out


def server(pki: Pki, auth: str = "none", **kw: object) -> ssl.SSLContext:
    return server_context(certfile=pki.server_cert, keyfile=pki.server_key, cafile=pki.ca, client_auth=auth, **kw)  # type: ignore[arg-type]


def client(pki: Pki, *, cert: bool = True, **kw: object) -> ssl.SSLContext:
    if cert:
        return client_context(cafile=pki.ca, certfile=pki.client_cert, keyfile=pki.client_key, **kw)  # type: ignore[arg-type]
    return client_context(cafile=pki.ca, **kw)  # type: ignore[arg-type]


def test_mutual_tls_gives_the_certificate_cn_as_principal(pki: Pki) -> None:
    out = run_handshake(server(pki, "required"), client(pki))
    assert out.server_error is None and out.client_error is None
    assert out.principal == "User:alice"
    assert out.echoed == b"hello"


def test_required_client_auth_refuses_a_client_without_certificate(pki: Pki) -> None:
    out = run_handshake(server(pki, "required"), client(pki, cert=False))
    assert isinstance(out.server_error, ssl.SSLError)
    assert out.principal is None
    assert out.client_error is not None and out.echoed is None


def test_required_client_auth_refuses_a_certificate_of_another_ca(pki: Pki, tmp_path: Path) -> None:
    ctx = server_context(certfile=pki.server_cert, keyfile=pki.server_key, cafile=pki.other_ca,
                         client_auth="required")
    out = run_handshake(ctx, client(pki))
    assert isinstance(out.server_error, ssl.SSLError)
    assert out.principal is None


def test_requested_client_auth_lets_anonymous_clients_in(pki: Pki) -> None:
    assert run_handshake(server(pki, "requested"), client(pki, cert=False)).principal == ANONYMOUS
    assert run_handshake(server(pki, "requested"), client(pki)).principal == "User:alice"


def test_without_client_auth_a_client_certificate_is_not_asked_for(pki: Pki) -> None:
    out = run_handshake(server(pki, "none"), client(pki))
    assert out.principal == ANONYMOUS and out.echoed == b"hello"


def test_a_certificate_without_cn_gives_its_distinguished_name(pki: Pki) -> None:
    ctx = client_context(cafile=pki.ca, certfile=pki.nocn_cert, keyfile=pki.nocn_key)
    assert run_handshake(server(pki, "required"), ctx).principal == r"User:OU=ops,O=Acme\, Inc.,C=US"


def test_an_encrypted_key_loads_with_its_password_only(pki: Pki) -> None:
    ctx = client_context(cafile=pki.ca, certfile=pki.client_cert, keyfile=pki.client_key_encrypted,
                         keyfile_password=KEY_PASSWORD)
    assert run_handshake(server(pki, "required"), ctx).principal == "User:alice"
    for password in ("wrong-password", None):
        with pytest.raises(ValueError, match="keyfile") as info:
            client_context(cafile=pki.ca, certfile=pki.client_cert, keyfile=pki.client_key_encrypted,
                           keyfile_password=password)
        assert KEY_PASSWORD not in str(info.value)
        assert "wrong-password" not in str(info.value)


def test_the_client_checks_the_broker_host_name(pki: Pki) -> None:
    out = run_handshake(server(pki), client(pki, cert=False), server_hostname="broker.example")
    assert isinstance(out.client_error, ssl.SSLCertVerificationError)
    out = run_handshake(server(pki), client(pki, cert=False, check_hostname=False), server_hostname="broker.example")
    assert out.client_error is None and out.echoed == b"hello"


def test_the_client_refuses_a_broker_of_another_ca(pki: Pki) -> None:
    out = run_handshake(server(pki), client_context(cafile=pki.other_ca))
    assert isinstance(out.client_error, ssl.SSLCertVerificationError)


def test_a_plaintext_client_on_a_tls_listener_is_refused(pki: Pki) -> None:
    out = run_handshake(server(pki), None)
    assert isinstance(out.server_error, ssl.SSLError)
    assert out.principal is None
    assert not out.echoed  # nothing but possibly an alert comes back, never the request


def test_contexts_are_tls12_or_newer_and_trust_only_the_configured_ca(pki: Pki) -> None:
    srv, cli = server(pki, "required"), client(pki)
    assert srv.minimum_version >= ssl.TLSVersion.TLSv1_2 and cli.minimum_version >= ssl.TLSVersion.TLSv1_2
    assert srv.verify_mode == ssl.CERT_REQUIRED and cli.verify_mode == ssl.CERT_REQUIRED and cli.check_hostname
    assert len(srv.get_ca_certs()) == 1  # the system store is not trusted for client certificates
    assert server(pki, ClientAuth.REQUESTED).verify_mode == ssl.CERT_OPTIONAL
    assert server(pki, " None ").verify_mode == ssl.CERT_NONE


def test_bad_settings_name_the_setting(pki: Pki, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"ssl.client.auth"):
        server(pki, "sometimes")
    with pytest.raises(ValueError, match=r"needs ssl.cafile"):
        server_context(certfile=pki.server_cert, keyfile=pki.server_key, client_auth="required")
    with pytest.raises(ValueError, match=r"ssl.certfile: no such file"):
        server_context(certfile=tmp_path / "missing.pem", keyfile=pki.server_key)
    with pytest.raises(ValueError, match=r"ssl.keyfile: no such file"):
        server_context(certfile=pki.server_cert, keyfile=tmp_path / "missing.key")
    with pytest.raises(ValueError, match=r"ssl.cafile: no such file"):
        client_context(cafile=tmp_path / "missing-ca.pem")
    garbage = tmp_path / "garbage.pem"
    garbage.write_text("not a certificate\n")
    with pytest.raises(ValueError, match=r"ssl.cafile: cannot load"):
        client_context(cafile=garbage)
    with pytest.raises(ValueError, match="cannot load the certificate and key"):
        server_context(certfile=garbage, keyfile=pki.server_key)
    with pytest.raises(ValueError, match="cannot load the certificate and key"):
        server_context(certfile=pki.server_cert, keyfile=pki.client_key)  # not this certificate's key
    with pytest.raises(ValueError, match=r"without ssl.certfile"):
        client_context(cafile=pki.ca, keyfile=pki.client_key)


@pytest.mark.parametrize(("cert", "principal"), [
    (None, ANONYMOUS),
    ({}, ANONYMOUS),
    ({"subject": ()}, ANONYMOUS),
    ({"subject": ((("commonName", "bob"),),)}, "User:bob"),
    ({"subject": ((("countryName", "US"),), (("commonName", "outer"),), (("commonName", "inner"),))}, "User:inner"),
    ({"subject": ((("organizationName", "A+B"),), (("organizationalUnitName", " x"),))}, r"User:OU=\ x,O=A\+B"),
    ({"subject": ((("domainComponent", "com"), ("userId", "u1")),)}, "User:DC=com+UID=u1"),
    ({"subject": ((("2.5.4.99", "v#"),),)}, "User:2.5.4.99=v#"),
])
def test_principal_from_certificate_dicts(cert: dict[str, object] | None, principal: str) -> None:
    assert principal_from_certificate(cert) == principal
