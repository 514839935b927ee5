"""Tests for broker.security.sasl: the per-connection SASL state machine (fake clock, no sockets)."""

from __future__ import annotations

from typing import Any

import pytest
import scramp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from broker.security.sasl import (
    DEFAULT_MAX_RECEIVE_SIZE,
    SaslConfig,
    SaslError,
    SaslServer,
    SaslState,
    parse_mechanisms,
)
from broker.security.scram import CredentialStore
from protocol.api import APIS, ApiKey
from protocol.error_codes import ErrorCode

HANDSHAKE, AUTHENTICATE = APIS[ApiKey.SASL_HANDSHAKE], APIS[ApiKey.SASL_AUTHENTICATE]
GENERIC = "Authentication failed during authentication due to invalid credentials with SASL mechanism {}"
PASSWORDS = {"alice": "alice-pass", "bob": "bob-pass"}


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(scope="module")
def store() -> CredentialStore:
    s = CredentialStore()
    s.apply(s.seed(PASSWORDS.items()))
    return s


def server(store: CredentialStore, clock: Clock | None = None, **config: Any) -> SaslServer:
    return SaslServer(SaslConfig(**config), store, clock=clock or Clock())


def handshake(srv: SaslServer, mechanism: str, version: int = 1) -> dict[str, Any]:
    """Through the wire codecs, as the network edge will do it."""
    request = HANDSHAKE.request.decode(version, HANDSHAKE.request.encode(version, {"mechanism": mechanism}))
    response = srv.handshake(version, request["mechanism"])
    return HANDSHAKE.response.decode(version, HANDSHAKE.response.encode(version, response))


def authenticate(srv: SaslServer, token: bytes, version: int = 2) -> dict[str, Any]:
    request = AUTHENTICATE.request.decode(version, AUTHENTICATE.request.encode(version, {"auth_bytes": token}))
    response = srv.authenticate(version, request["auth_bytes"])
    return AUTHENTICATE.response.decode(version, AUTHENTICATE.response.encode(version, response))


def scram_login(srv: SaslServer, mechanism: str, user: str, password: str, version: int = 2) -> dict[str, Any]:
    assert handshake(srv, mechanism)["error_code"] == 0
    client = scramp.ScramClient([mechanism], user, password)
    first = authenticate(srv, client.get_client_first().encode(), version)
    if first["error_code"]:
        return first
    client.set_server_first(first["auth_bytes"].decode())
    final = authenticate(srv, client.get_client_final().encode(), version)
    if final["error_code"] == 0:
        client.set_server_final(final["auth_bytes"].decode())  # verifies the server signature
    return final


def plain_login(srv: SaslServer, token: bytes) -> dict[str, Any]:
    assert handshake(srv, "PLAIN")["error_code"] == 0
    return authenticate(srv, token)


def assert_failed(srv: SaslServer, response: dict[str, Any], mechanism: str) -> None:
    assert response["error_code"] == ErrorCode.SASL_AUTHENTICATION_FAILED
    assert response["error_message"] == GENERIC.format(mechanism)
    assert srv.failed and srv.principal is None and not srv.allows(ApiKey.METADATA)
    for secret in PASSWORDS.values():
        assert secret not in (srv.failure_reason or "")


# ---------------------------------------------------------------------------
# handshake and ordering
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("version", [0, 1])
def test_handshake_lists_the_enabled_mechanisms(store: CredentialStore, version: int) -> None:
    srv = server(store)
    assert handshake(srv, "SCRAM-SHA-512", version) == {
        "error_code": 0, "mechanisms": ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]}
    assert srv.state is SaslState.AUTHENTICATE and srv.raw_tokens == (version == 0)


@pytest.mark.parametrize("mechanism", ["GSSAPI", "OAUTHBEARER", "plain", "", "PLAIN\x00" * 1000])
def test_an_unsupported_mechanism_is_refused_and_closes(store: CredentialStore, mechanism: str) -> None:
    srv = server(store)
    assert handshake(srv, mechanism) == {"error_code": ErrorCode.UNSUPPORTED_SASL_MECHANISM,
                                         "mechanisms": ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]}
    assert srv.failed and not srv.allows(ApiKey.API_VERSIONS)
    assert len(srv.failure_reason or "") < 200


def test_a_disabled_mechanism_is_refused(store: CredentialStore) -> None:
    srv = server(store, enabled_mechanisms=("SCRAM-SHA-512",))
    assert handshake(srv, "PLAIN") == {"error_code": ErrorCode.UNSUPPORTED_SASL_MECHANISM,
                                       "mechanisms": ["SCRAM-SHA-512"]}


def test_only_sasl_and_api_versions_before_authentication(store: CredentialStore) -> None:
    srv = server(store)
    assert srv.allows(ApiKey.API_VERSIONS) and srv.allows(ApiKey.SASL_HANDSHAKE)
    assert not any(srv.allows(k) for k in (ApiKey.METADATA, ApiKey.PRODUCE, ApiKey.FETCH, 999))
    handshake(srv, "PLAIN")
    assert srv.allows(ApiKey.SASL_AUTHENTICATE)
    assert not srv.allows(ApiKey.METADATA) and not srv.allows(ApiKey.API_VERSIONS)
    assert authenticate(srv, b"\0alice\0alice-pass")["error_code"] == 0
    assert srv.authenticated and srv.principal == "User:alice"
    assert srv.allows(ApiKey.METADATA) and srv.allows(ApiKey.PRODUCE)


def test_authenticate_before_handshake_is_an_illegal_state(store: CredentialStore) -> None:
    srv = server(store)
    response = authenticate(srv, b"\0alice\0alice-pass")
    assert response["error_code"] == ErrorCode.ILLEGAL_SASL_STATE and srv.failed


def test_a_second_handshake_during_authentication_is_an_illegal_state(store: CredentialStore) -> None:
    srv = server(store)
    handshake(srv, "SCRAM-SHA-256")
    assert handshake(srv, "PLAIN")["error_code"] == ErrorCode.ILLEGAL_SASL_STATE
    assert srv.failed


def test_sasl_requests_after_authentication_are_refused_but_keep_the_connection(store: CredentialStore) -> None:
    srv = server(store)
    plain_login(srv, b"\0alice\0alice-pass")
    response = authenticate(srv, b"\0alice\0alice-pass")
    assert response["error_code"] == ErrorCode.ILLEGAL_SASL_STATE
    assert "after successful authentication" in response["error_message"]
    assert handshake(srv, "PLAIN")["error_code"] == ErrorCode.ILLEGAL_SASL_STATE  # no re-authentication configured
    assert srv.authenticated and srv.allows(ApiKey.METADATA)


def test_mechanism_settings() -> None:
    assert parse_mechanisms(" plain , scram-sha-512,PLAIN") == ("PLAIN", "SCRAM-SHA-512")
    assert SaslConfig(enabled_mechanisms="SCRAM-SHA-256").enabled_mechanisms == ("SCRAM-SHA-256",)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unsupported mechanism 'GSSAPI'"):
        parse_mechanisms("PLAIN,GSSAPI")
    with pytest.raises(ValueError, match="no SASL mechanism"):
        parse_mechanisms(" , ")
    with pytest.raises(ValueError, match=r"max\.receive\.size"):
        SaslConfig(max_receive_size=0)
    with pytest.raises(ValueError, match="reauth"):
        SaslConfig(connections_max_reauth_ms=-1)
    assert SaslConfig().max_receive_size == DEFAULT_MAX_RECEIVE_SIZE == 65536


# ---------------------------------------------------------------------------
# PLAIN
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("token", [b"\0alice\0alice-pass", b"alice\0alice\0alice-pass"])
def test_plain_good(store: CredentialStore, token: bytes) -> None:
    srv = server(store)
    response = plain_login(srv, token)
    assert response == {"error_code": 0, "error_message": None, "auth_bytes": b"", "session_lifetime_ms": 0}
    assert srv.principal == "User:alice"


@pytest.mark.parametrize("token", [
    b"\0alice\0bob-pass",            # another user's password
    b"\0ghost\0alice-pass",          # unknown user
    b"bob\0alice\0alice-pass",       # authzid is not the user
    b"\0alice",                      # two tokens
    b"\0alice\0alice-pass\0extra",   # four tokens
    b"\0\0alice-pass",               # empty user
    b"\0alice\0",                    # empty password
    b"",                             # nothing
    b"\0alice\0alice-pass\xff",      # not UTF-8
    b"\xff\xfe\xfd",
])
def test_plain_bad_gives_one_message(store: CredentialStore, token: bytes) -> None:
    srv = server(store)
    assert_failed(srv, plain_login(srv, token), "PLAIN")


# ---------------------------------------------------------------------------
# SCRAM
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
@pytest.mark.parametrize("version", [0, 1, 2])
def test_scram_good(store: CredentialStore, mechanism: str, version: int) -> None:
    srv = server(store)
    response = scram_login(srv, mechanism, "bob", "bob-pass", version)
    assert response["error_code"] == 0 and response["auth_bytes"].startswith(b"v=")
    assert srv.principal == "User:bob" and srv.mechanism == mechanism


@pytest.mark.parametrize(("user", "password"), [("bob", "alice-pass"), ("ghost", "bob-pass")])
def test_scram_wrong_password_and_unknown_user_fail_alike(store: CredentialStore, user: str, password: str) -> None:
    srv = server(store)
    assert_failed(srv, scram_login(srv, "SCRAM-SHA-256", user, password), "SCRAM-SHA-256")


@pytest.mark.parametrize("final", [
    "c=biws,r=clientnonce-not-the-servers,p=AAAA",      # a nonce the server did not make
    "c=biws,r={nonce},p=AAAA",                          # the right nonce, a wrong proof
    "c=cD10bHMtdW5pcXVlLCw=,r={nonce},p=AAAA",          # channel binding data it never offered
    "garbage", "",
])
def test_scram_hostile_client_final_messages(store: CredentialStore, final: str) -> None:
    srv = server(store)
    handshake(srv, "SCRAM-SHA-256")
    first = authenticate(srv, b"n,,n=bob,r=clientnonce")
    nonce = first["auth_bytes"].decode().split(",")[0].removeprefix("r=")
    assert nonce.startswith("clientnonce") and len(nonce) > len("clientnonce")
    assert_failed(srv, authenticate(srv, final.format(nonce=nonce).encode()), "SCRAM-SHA-256")


@pytest.mark.parametrize("first", [b"p=tls-unique,,n=bob,r=abc", b"n,,n=bob", b"n,", b"\xff\xff", b"",
                                   b"n,a=bob,n=bob,r=abc"])
def test_scram_hostile_client_first_messages(store: CredentialStore, first: bytes) -> None:
    srv = server(store)
    handshake(srv, "SCRAM-SHA-512")
    assert_failed(srv, authenticate(srv, first), "SCRAM-SHA-512")


def test_a_token_after_scram_completed_is_an_illegal_state(store: CredentialStore) -> None:
    srv = server(store)
    scram_login(srv, "SCRAM-SHA-256", "bob", "bob-pass")
    assert authenticate(srv, b"n,,n=bob,r=abc")["error_code"] == ErrorCode.ILLEGAL_SASL_STATE
    assert srv.authenticated


# ---------------------------------------------------------------------------
# bounds and hostile input
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256"])
def test_oversized_tokens_fail_before_parsing(store: CredentialStore, mechanism: str) -> None:
    srv = server(store, max_receive_size=100)
    handshake(srv, mechanism)
    response = srv.authenticate(2, b"\0alice\0alice-pass" + b"x" * 100)
    assert response["error_code"] == ErrorCode.SASL_AUTHENTICATION_FAILED
    assert response["error_message"] == "Failing SASL authentication due to invalid receive size"
    assert srv.failed
    ok = server(store, max_receive_size=100)
    assert plain_login(ok, b"\0alice\0alice-pass")["error_code"] == 0  # the limit is not off by one


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(mechanism=st.sampled_from(["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]),
       tokens=st.lists(st.binary(max_size=300), min_size=1, max_size=3), version=st.integers(0, 2))
def test_garbage_tokens_only_ever_answer(store: CredentialStore, mechanism: str, tokens: list[bytes],
                                         version: int) -> None:
    srv = server(store)
    handshake(srv, mechanism)
    for token in tokens:
        response = authenticate(srv, token, version)
        assert response["error_code"] in (0, ErrorCode.SASL_AUTHENTICATION_FAILED, ErrorCode.ILLEGAL_SASL_STATE)
        if srv.failed:
            break
    assert not srv.authenticated


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tokens=st.lists(st.binary(max_size=200), min_size=1, max_size=3))
def test_garbage_raw_tokens_only_raise_sasl_errors(store: CredentialStore, tokens: list[bytes]) -> None:
    srv = server(store)
    handshake(srv, "SCRAM-SHA-256", version=0)
    for token in tokens:
        try:
            srv.raw_token(token)
        except SaslError:
            break
    assert not srv.authenticated


# ---------------------------------------------------------------------------
# raw tokens after a v0 handshake
# ---------------------------------------------------------------------------


def test_v0_handshake_switches_to_raw_tokens(store: CredentialStore) -> None:
    srv = server(store)
    handshake(srv, "SCRAM-SHA-512", version=0)
    assert srv.raw_tokens
    client = scramp.ScramClient(["SCRAM-SHA-512"], "alice", "alice-pass")
    client.set_server_first(srv.raw_token(client.get_client_first().encode()).decode())
    assert srv.raw_tokens  # still mid-exchange
    client.set_server_final(srv.raw_token(client.get_client_final().encode()).decode())
    assert srv.authenticated and srv.principal == "User:alice"
    assert not srv.raw_tokens  # back to Kafka framing

    plain = server(store)
    handshake(plain, "PLAIN", version=0)
    assert plain.raw_token(b"\0bob\0bob-pass") == b"" and plain.principal == "User:bob"


def test_raw_token_failures_raise_and_close(store: CredentialStore) -> None:
    srv = server(store)
    handshake(srv, "PLAIN", version=0)
    with pytest.raises(SaslError) as info:
        srv.raw_token(b"\0bob\0wrong")
    assert info.value.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED and "wrong" not in info.value.message
    assert srv.failed
    with pytest.raises(SaslError):
        srv.raw_token(b"\0bob\0bob-pass")


def test_raw_and_framed_tokens_do_not_mix(store: CredentialStore) -> None:
    v0 = server(store)
    handshake(v0, "PLAIN", version=0)
    assert v0.authenticate(1, b"\0bob\0bob-pass")["error_code"] == ErrorCode.ILLEGAL_SASL_STATE and v0.failed
    v1 = server(store)
    handshake(v1, "PLAIN", version=1)
    with pytest.raises(SaslError) as info:
        v1.raw_token(b"\0bob\0bob-pass")
    assert info.value.error_code == ErrorCode.ILLEGAL_SASL_STATE and v1.failed


# ---------------------------------------------------------------------------
# session lifetime and re-authentication (KIP-368)
# ---------------------------------------------------------------------------


def test_session_lifetime_is_reported_and_enforced(store: CredentialStore) -> None:
    clock = Clock()
    srv = server(store, clock, connections_max_reauth_ms=60_000)
    assert plain_login(srv, b"\0alice\0alice-pass")["session_lifetime_ms"] == 60_000
    clock.now += 60
    assert srv.allows(ApiKey.METADATA) and not srv.session_expired()
    clock.now += 0.001
    assert srv.session_expired() and not srv.allows(ApiKey.METADATA)
    assert srv.allows(ApiKey.SASL_HANDSHAKE)  # re-authentication may still start
    v0 = server(store, clock, connections_max_reauth_ms=60_000)
    assert authenticate_v0_login(v0)["session_lifetime_ms"] == 0  # not in v0: the decoder's default
    assert v0.session_expires_at == clock.now + 60


def authenticate_v0_login(srv: SaslServer) -> dict[str, Any]:
    handshake(srv, "PLAIN")
    return authenticate(srv, b"\0alice\0alice-pass", version=0)


def test_without_reauth_ms_sessions_do_not_expire(store: CredentialStore) -> None:
    clock = Clock()
    srv = server(store, clock)
    plain_login(srv, b"\0alice\0alice-pass")
    clock.now += 10**9
    assert not srv.session_expired() and srv.allows(ApiKey.FETCH)


def test_reauthentication_keeps_the_principal_and_renews_the_session(store: CredentialStore) -> None:
    clock = Clock()
    srv = server(store, clock, connections_max_reauth_ms=10_000)
    assert scram_login(srv, "SCRAM-SHA-256", "alice", "alice-pass")["session_lifetime_ms"] == 10_000
    clock.now += 11
    assert not srv.allows(ApiKey.METADATA)
    response = scram_login(srv, "SCRAM-SHA-256", "alice", "alice-pass")
    assert response["error_code"] == 0 and response["session_lifetime_ms"] == 10_000
    assert srv.authenticated and srv.principal == "User:alice" and srv.allows(ApiKey.METADATA)
    assert srv.session_expires_at == clock.now + 10


def test_reauthentication_as_someone_else_fails(store: CredentialStore) -> None:
    clock = Clock()
    srv = server(store, clock, connections_max_reauth_ms=10_000)
    plain_login(srv, b"\0alice\0alice-pass")
    clock.now += 5
    response = plain_login(srv, b"\0bob\0bob-pass")
    assert response["error_code"] == ErrorCode.SASL_AUTHENTICATION_FAILED
    assert response["error_message"] == "Cannot change principals during re-authentication from User:alice: User:bob"
    assert srv.failed


def test_reauthentication_with_another_mechanism_fails(store: CredentialStore) -> None:
    clock = Clock()
    srv = server(store, clock, connections_max_reauth_ms=10_000)
    plain_login(srv, b"\0alice\0alice-pass")
    clock.now += 5
    assert handshake(srv, "SCRAM-SHA-256")["error_code"] == 0  # as Kafka: refused at the next token
    response = authenticate(srv, b"n,,n=alice,r=abc")
    assert response["error_code"] == ErrorCode.SASL_AUTHENTICATION_FAILED
    assert "not supported for re-authentication of mechanism 'PLAIN'" in response["error_message"]
    assert srv.failed


def test_reauthentication_starts_at_most_once_a_second(store: CredentialStore) -> None:
    clock = Clock()
    srv = server(store, clock, connections_max_reauth_ms=10_000)
    plain_login(srv, b"\0alice\0alice-pass")
    assert plain_login(srv, b"\0alice\0alice-pass")["error_code"] == 0  # the first one may start at once
    clock.now += 0.5
    assert handshake(srv, "PLAIN")["error_code"] == ErrorCode.ILLEGAL_SASL_STATE
    assert srv.authenticated  # refused, not closed: the session is still valid
    clock.now += 0.5
    assert plain_login(srv, b"\0alice\0alice-pass")["error_code"] == 0


def test_a_refused_reauthentication_of_an_expired_session_closes(store: CredentialStore) -> None:
    clock = Clock()
    srv = server(store, clock, connections_max_reauth_ms=100)
    plain_login(srv, b"\0alice\0alice-pass")
    assert plain_login(srv, b"\0alice\0alice-pass")["error_code"] == 0
    clock.now += 0.2  # expired, and the last re-authentication started less than a second ago
    assert handshake(srv, "PLAIN")["error_code"] == ErrorCode.ILLEGAL_SASL_STATE
    assert srv.failed
