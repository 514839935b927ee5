"""Tests for broker.security.scram: credentials, records, the store's KIP-554 rules, the users file
and the server side of the SCRAM exchange (driven by scramp's client and by hand-built messages)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from pathlib import Path
from typing import Any

import pytest
import scramp

from broker.security.scram import (
    MAX_ITERATIONS,
    MIN_ITERATIONS,
    CredentialStore,
    ScramCredential,
    ScramError,
    ScramMechanism,
    ScramServerExchange,
    UserRecord,
    UsersFileError,
    credential_from_password,
    credential_from_salted_password,
    load_users_file,
    parse_users_file,
    user_key,
    verify_password,
)
from protocol.api import APIS, ApiKey
from protocol.error_codes import ErrorCode

SHA256, SHA512 = ScramMechanism.SCRAM_SHA_256, ScramMechanism.SCRAM_SHA_512
ALTER = APIS[ApiKey.ALTER_USER_SCRAM_CREDENTIALS]
DESCRIBE = APIS[ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS]


def b64(text: str) -> bytes:
    return base64.b64decode(text)


# ---------------------------------------------------------------------------
# credentials
# ---------------------------------------------------------------------------


def test_credentials_match_the_rfc7677_example() -> None:
    """RFC 7677 section 3: user "user", password "pencil"; the stored keys must verify its proof
    and produce its server signature."""
    salt, iterations = b64("W22ZaJ0SNY7soEsUEjb6gQ=="), 4096
    cred = credential_from_password(SHA256, "pencil", iterations=iterations, salt=salt)
    auth_message = (b"n=user,r=rOprNGfwEbeRWgbNEkqO,"
                    b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096,"
                    b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0")
    proof = b64("dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
    signature = hmac.digest(cred.stored_key, auth_message, "sha256")
    client_key = bytes(a ^ b for a, b in zip(proof, signature, strict=True))
    assert hashlib.sha256(client_key).digest() == cred.stored_key
    assert hmac.digest(cred.server_key, auth_message, "sha256") == b64("6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=")


@pytest.mark.parametrize("mechanism", list(ScramMechanism))
def test_salted_password_and_password_give_the_same_credential(mechanism: ScramMechanism) -> None:
    salt = b"0123456789abcdef"
    salted = hashlib.pbkdf2_hmac(mechanism.hash_name, "pässword".encode(), salt, 4096)  # as Kafka clients do
    assert credential_from_salted_password(mechanism, salt, salted, 4096) == \
        credential_from_password(mechanism, "pässword", salt=salt)
    assert len(credential_from_password(mechanism, "x").stored_key) == mechanism.digest_size


def test_passwords_are_not_saslprepped_as_in_kafka() -> None:
    """U+00A0 maps to a space under SASLprep; Kafka's ScramFormatter uses the raw UTF-8 bytes."""
    salt = b"0123456789abcdef"
    cred = credential_from_password(SHA256, "a\u00a0b", salt=salt)
    assert verify_password(cred, "a\u00a0b") and not verify_password(cred, "a b")


def test_credentials_are_salted_iterated_and_never_hold_the_password() -> None:
    a, b = credential_from_password(SHA512, "hunter2"), credential_from_password(SHA512, "hunter2")
    assert a.salt != b.salt and a.stored_key != b.stored_key  # fresh salt each time
    assert a.iterations == MIN_ITERATIONS == 4096
    assert verify_password(a, "hunter2") and not verify_password(a, "hunter3")
    assert "hunter2" not in repr(a) and a.salt.hex() not in repr(a) and a.stored_key.hex() not in repr(a)
    with pytest.raises(ValueError, match="iterations"):
        credential_from_password(SHA256, "x", iterations=MIN_ITERATIONS - 1)
    with pytest.raises(ValueError, match="iterations"):
        credential_from_password(SHA256, "x", iterations=MAX_ITERATIONS + 1)
    with pytest.raises(ValueError, match="salt"):
        credential_from_password(SHA256, "x", salt=b"")


def test_mechanism_names_and_codes() -> None:
    assert [(m.sasl_name, int(m)) for m in ScramMechanism] == [("SCRAM-SHA-256", 1), ("SCRAM-SHA-512", 2)]
    assert ScramMechanism.from_sasl_name("SCRAM-SHA-512") is SHA512
    assert ScramMechanism.from_sasl_name("scram-sha-512") is None  # SASL names are exact
    assert ScramMechanism.from_code(0) is None and ScramMechanism.from_code(3) is None


# ---------------------------------------------------------------------------
# records
# ---------------------------------------------------------------------------


def test_user_records_round_trip_without_secrets() -> None:
    creds = (credential_from_password(SHA512, "pw", iterations=8192), credential_from_password(SHA256, "pw"))
    record = UserRecord("team/alice", creds)
    data = record.encode()
    assert b"pw\"" not in data and json.loads(data)["credentials"][0]["mechanism"] == "SCRAM-SHA-256"
    decoded = UserRecord.decode(data)
    assert decoded.name == "team/alice"
    assert sorted(decoded.credentials, key=lambda c: c.mechanism) == sorted(creds, key=lambda c: c.mechanism)
    assert record.key == user_key("team/alice") == "users/team/alice"


def _record_doc(**changes: Any) -> bytes:
    doc = json.loads(UserRecord("u", (credential_from_password(SHA256, "pw"),)).encode())
    cred = doc["credentials"][0]
    for k, v in changes.items():
        if k == "name":
            doc["name"] = v
        elif v is None:
            del cred[k]
        else:
            cred[k] = v
    return json.dumps(doc).encode()


@pytest.mark.parametrize("data", [
    b"", b"[]", b"{}", b"not json", b'{"name": "u", "credentials": [1]}',
    _record_doc(name=""), _record_doc(name=7), _record_doc(mechanism="SCRAM-SHA-1"), _record_doc(iterations=100),
    _record_doc(iterations="4096"), _record_doc(iterations=True), _record_doc(salt="%%%"), _record_doc(stored_key=None),
    _record_doc(server_key=base64.b64encode(b"short").decode()), _record_doc(salt=5),
])
def test_malformed_user_records_are_refused(data: bytes) -> None:
    with pytest.raises(ValueError, match="malformed user record"):
        UserRecord.decode(data)


def test_a_repeated_mechanism_in_a_record_is_refused() -> None:
    doc = json.loads(UserRecord("u", (credential_from_password(SHA256, "pw"),)).encode())
    doc["credentials"] *= 2
    with pytest.raises(ValueError, match="repeated"):
        UserRecord.decode(json.dumps(doc).encode())


# ---------------------------------------------------------------------------
# the store: AlterUserScramCredentials / DescribeUserScramCredentials (KIP-554)
# ---------------------------------------------------------------------------


def upsertion(name: str, mechanism: int = 1, password: str = "pw", iterations: int = 4096,
              salt: bytes = b"salt-salt-salt-salt", salted: bytes | None = None) -> dict[str, Any]:
    m = ScramMechanism.from_code(mechanism) or SHA256
    if salted is None:
        salted = hashlib.pbkdf2_hmac(m.hash_name, password.encode(), salt, iterations)
    return {"name": name, "mechanism": mechanism, "iterations": iterations, "salt": salt, "salted_password": salted}


def alter_via_wire(store: CredentialStore, deletions: list[dict[str, Any]],
                   upsertions: list[dict[str, Any]]) -> dict[str, tuple[int, str | None]]:
    """Encode the request and decode it as the broker would, alter, and encode the response."""
    body = ALTER.request.decode(0, ALTER.request.encode(0, {"deletions": deletions, "upsertions": upsertions}))
    results = store.alter(body["deletions"], body["upsertions"])
    response = ALTER.response.decode(0, ALTER.response.encode(0, {"throttle_time_ms": 0, "results": results}))
    assert len(response["results"]) == len({*(d["name"] for d in deletions), *(u["name"] for u in upsertions)})
    return {r["user"]: (r["error_code"], r["error_message"]) for r in response["results"]}


def test_upsert_describe_and_delete() -> None:
    store = CredentialStore()
    assert alter_via_wire(store, [], [upsertion("alice"), upsertion("bob", 2, iterations=8192)]) == {
        "alice": (0, None), "bob": (0, None)}
    assert alter_via_wire(store, [], [upsertion("alice", 2, "pw2")]) == {"alice": (0, None)}
    assert verify_password(store.get("alice", SHA256), "pw") and verify_password(store.get("alice", SHA512), "pw2")  # type: ignore[arg-type]

    body = DESCRIBE.response.decode(0, DESCRIBE.response.encode(0, {
        "throttle_time_ms": 0, "error_code": 0, "error_message": None, "results": store.describe(None)}))
    assert {r["user"]: [(i["mechanism"], i["iterations"]) for i in r["credential_infos"]] for r in body["results"]} == {
        "alice": [(1, 4096), (2, 4096)], "bob": [(2, 8192)]}
    assert [r["user"] for r in store.describe([])] == ["alice", "bob"]

    assert alter_via_wire(store, [{"name": "alice", "mechanism": 1}], []) == {"alice": (0, None)}
    assert store.get("alice", SHA256) is None and store.get("alice", SHA512) is not None
    assert alter_via_wire(store, [{"name": "alice", "mechanism": 2}], []) == {"alice": (0, None)}
    assert "alice" not in store and store.users() == ["bob"]


def test_describe_names_missing_and_duplicated_users() -> None:
    store = CredentialStore()
    store.alter([], [upsertion("alice")])
    results = {r["user"]: r for r in store.describe([{"name": "alice"}, {"name": "ghost"}, {"name": "bob"},
                                                     {"name": "bob"}])}
    assert results["alice"]["error_code"] == 0 and results["alice"]["credential_infos"] == [
        {"mechanism": 1, "iterations": 4096}]
    assert results["ghost"]["error_code"] == ErrorCode.RESOURCE_NOT_FOUND
    assert results["ghost"]["error_message"] == "Attempt to describe a user credential that does not exist: ghost"
    assert results["bob"]["error_code"] == ErrorCode.DUPLICATE_RESOURCE
    assert "same user twice" in results["bob"]["error_message"]


@pytest.mark.parametrize(("entry", "code", "message"), [
    (upsertion(""), ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty"),
    (upsertion("u", mechanism=0), ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"),
    (upsertion("u", mechanism=3), ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"),
    (upsertion("u", iterations=MIN_ITERATIONS - 1), ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations"),
    (upsertion("u", iterations=MAX_ITERATIONS + 1), ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too many iterations"),
    (upsertion("u", salt=b""), ErrorCode.UNACCEPTABLE_CREDENTIAL, "The salt must not be empty"),
    (upsertion("u", salted=b"x" * 64), ErrorCode.UNACCEPTABLE_CREDENTIAL,
     "The salted password must be 32 bytes for SCRAM-SHA-256"),
])
def test_unacceptable_upsertions(entry: dict[str, Any], code: ErrorCode, message: str) -> None:
    store = CredentialStore()
    assert alter_via_wire(store, [], [entry]) == {entry["name"]: (code, message)}
    assert len(store) == 0


def test_deletions_need_an_existing_credential() -> None:
    store = CredentialStore()
    store.alter([], [upsertion("alice")])
    assert alter_via_wire(store, [{"name": "alice", "mechanism": 2}, {"name": "ghost", "mechanism": 1},
                                  {"name": "", "mechanism": 1}, {"name": "x", "mechanism": 9}], []) == {
        "alice": (ErrorCode.RESOURCE_NOT_FOUND, "Attempt to delete a user credential that does not exist"),
        "ghost": (ErrorCode.RESOURCE_NOT_FOUND, "Attempt to delete a user credential that does not exist"),
        "": (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty"),
        "x": (ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"),
    }
    assert store.get("alice", SHA256) is not None


def test_a_user_named_twice_in_one_request_changes_nothing() -> None:
    """Kafka's ScramControlManager: one alteration per user per request, whatever the mechanisms."""
    store = CredentialStore()
    store.alter([], [upsertion("alice", password="old")])
    before = store.record("alice")
    duplicate = (ErrorCode.DUPLICATE_RESOURCE, "A user credential cannot be altered twice in the same request")
    assert alter_via_wire(store, [{"name": "alice", "mechanism": 1}],
                          [upsertion("alice", password="new"), upsertion("bob")]) == {
        "alice": duplicate, "bob": (0, None)}
    assert alter_via_wire(store, [], [upsertion("carol", 1), upsertion("carol", 2), upsertion("carol", 1)]) == {
        "carol": duplicate}
    assert alter_via_wire(store, [{"name": "bob", "mechanism": 1}, {"name": "bob", "mechanism": 1}], []) == {
        "bob": duplicate}
    assert store.record("alice") == before and "carol" not in store and "bob" in store


def test_plan_alter_changes_nothing_until_applied() -> None:
    store = CredentialStore()
    plan = store.plan_alter([], [upsertion("alice")])
    assert "alice" not in store and set(plan.updates) == {"alice"}
    record = plan.updates["alice"]
    assert record is not None and UserRecord.decode(record.encode()) == record
    store.apply(plan.updates)
    plan = store.plan_alter([{"name": "alice", "mechanism": 1}], [])
    assert plan.updates == {"alice": None} and "alice" in store
    store.apply(plan.updates)
    assert "alice" not in store


def test_seed_from_passwords_only_changes_what_differs() -> None:
    store = CredentialStore()
    updates = store.seed([("alice", "a-pass"), ("bob", "b-pass")])
    assert set(updates) == {"alice", "bob"}
    assert {c.mechanism for c in updates["alice"].credentials} == {SHA256, SHA512}
    store.apply(updates)
    assert store.seed([("alice", "a-pass"), ("bob", "b-pass")]) == {}  # same passwords: no new salts
    changed = store.seed([("alice", "a-pass"), ("bob", "b-new")])
    assert set(changed) == {"bob"}
    store.apply(changed)
    assert store.verify_plain("bob", "b-new") and not store.verify_plain("bob", "b-pass")
    assert store.verify_plain("alice", "a-pass") and not store.verify_plain("ghost", "a-pass")
    store.apply(store.seed([("carol", "c")], iterations=8192, mechanisms=[SHA512]))
    assert store.get("carol", SHA256) is None and store.get("carol", SHA512).iterations == 8192  # type: ignore[union-attr]


# ---------------------------------------------------------------------------
# sasl.users.file
# ---------------------------------------------------------------------------


def test_users_file_lines() -> None:
    text = "# users\n\nalice:wonder:land\r\n  bob :  spaced pass \n   # indented comment\ncarol:#not-a-comment"
    assert parse_users_file(text) == [("alice", "wonder:land"), ("bob", "  spaced pass "), ("carol", "#not-a-comment")]


@pytest.mark.parametrize(("text", "message"), [
    ("alice:ok\nbob-secret-pass\n", "line 2: expected name:password"),
    ("alice:ok\n:secret-pass\n", "line 2: expected name:password"),
    ("\n\nalice:\n", "line 3: empty password for user 'alice'"),
    ("alice:one\n#\nalice:two\n", "line 3: user 'alice' is already defined on line 1"),
])
def test_malformed_users_files_give_the_line_but_never_the_password(text: str, message: str) -> None:
    with pytest.raises(UsersFileError, match=message) as info:
        parse_users_file(text)
    for secret in ("bob-secret-pass", "secret-pass", "one", "two"):
        assert secret not in str(info.value)


def test_users_file_from_disk(tmp_path: Path) -> None:
    path = tmp_path / "users"
    path.write_bytes(b"alice:caf\xc3\xa9\n")
    assert load_users_file(path) == [("alice", "café")]
    path.write_bytes(b"alice:ok\nbob:\xff\xfesecret\n")
    with pytest.raises(UsersFileError, match="line 2: not valid UTF-8") as info:
        load_users_file(path)
    assert "secret" not in str(info.value)
    with pytest.raises(UsersFileError, match="cannot read"):
        load_users_file(tmp_path / "missing")


# ---------------------------------------------------------------------------
# the exchange
# ---------------------------------------------------------------------------


def make_store(**users: str) -> CredentialStore:
    store = CredentialStore()
    store.apply(store.seed(users.items()))
    return store


def client_final(mechanism: ScramMechanism, password: str, client_first_bare: str, server_first: str,
                 *, gs2: str = "n,,", nonce: str | None = None) -> str:
    """A hand-built client-final message (RFC 5802 section 3)."""
    attrs = dict(part.split("=", 1) for part in server_first.split(","))
    salted = hashlib.pbkdf2_hmac(mechanism.hash_name, password.encode(), b64(attrs["s"]), int(attrs["i"]))
    client_key = hmac.digest(salted, b"Client Key", mechanism.hash_name)
    stored_key = hashlib.new(mechanism.hash_name, client_key).digest()
    without_proof = f"c={base64.b64encode(gs2.encode()).decode()},r={nonce or attrs['r']}"
    auth = f"{client_first_bare},{server_first},{without_proof}".encode()
    proof = bytes(a ^ b for a, b in zip(client_key, hmac.digest(stored_key, auth, mechanism.hash_name), strict=True))
    return f"{without_proof},p={base64.b64encode(proof).decode()}"


@pytest.mark.parametrize("mechanism", list(ScramMechanism))
def test_a_full_exchange_with_scramps_client(mechanism: ScramMechanism) -> None:
    store = make_store(alice="pencil")
    exchange = ScramServerExchange(mechanism, store.get)
    client = scramp.ScramClient([mechanism.sasl_name], "alice", "pencil")
    client.set_server_first(exchange.client_first(client.get_client_first().encode()).decode())
    client.set_server_final(exchange.client_final(client.get_client_final().encode()).decode())  # checks v=
    assert exchange.complete and exchange.username == "alice"


@pytest.mark.parametrize("salt", [b"salt", b"s"])
def test_short_salts_from_admin_clients_authenticate(salt: bytes) -> None:
    """Kafka takes any non-empty salt in AlterUserScramCredentials (librdkafka's 0081 upserts b"salt")."""
    store = CredentialStore()
    plan = store.plan_alter([], [upsertion("carol", password="pencil", salt=salt)])
    assert plan.results[0]["error_code"] == ErrorCode.NONE
    store.apply(plan.updates)
    exchange = ScramServerExchange(SHA256, store.get)
    bare = "n=carol,r=clientnonce"
    server_first = exchange.client_first(f"n,,{bare}".encode()).decode()
    assert base64.b64decode(dict(p.split("=", 1) for p in server_first.split(","))["s"]) == salt
    assert exchange.client_final(client_final(SHA256, "pencil", bare, server_first).encode()).startswith(b"v=")
    assert exchange.complete and exchange.username == "carol"


def test_the_y_flag_and_extension_attributes_are_accepted() -> None:
    store = make_store(alice="pencil")
    exchange = ScramServerExchange(SHA256, store.get)
    bare = "n=alice,r=clientnonce,x=an-extension"
    server_first = exchange.client_first(f"y,,{bare}".encode()).decode()
    assert server_first.startswith("r=clientnonce")
    final = exchange.client_final(client_final(SHA256, "pencil", bare, server_first, gs2="y,,").encode())
    assert final.startswith(b"v=") and exchange.complete


def test_escaped_user_names() -> None:
    store = make_store(**{"a,b=c": "pw"})
    exchange = ScramServerExchange(SHA512, store.get)
    bare = "n=a=2Cb=3Dc,r=nonce"
    server_first = exchange.client_first(f"n,,{bare}".encode()).decode()
    exchange.client_final(client_final(SHA512, "pw", bare, server_first).encode())
    assert exchange.username == "a,b=c"


def run_exchange(store: CredentialStore, user: str, password: str, **final_kw: Any) -> bytes:
    exchange = ScramServerExchange(SHA256, store.get)
    bare = f"n={user},r=fixednonce"
    server_first = exchange.client_first(f"n,,{bare}".encode()).decode()
    return exchange.client_final(client_final(SHA256, password, bare, server_first, **final_kw).encode())


def test_wrong_password_unknown_user_bad_nonce_and_channel_binding_fail_alike() -> None:
    store = make_store(alice="pencil")
    assert run_exchange(store, "alice", "pencil").startswith(b"v=")
    for user, password, kw in [("alice", "crayon", {}), ("ghost", "pencil", {}),
                               ("alice", "pencil", {"nonce": "fixednonce-not-the-servers"}),
                               ("alice", "pencil", {"gs2": "y,,"})]:  # flag differs from client-first's
        with pytest.raises(ScramError) as info:
            run_exchange(store, user, password, **kw)
        assert "pencil" not in info.value.reason and "crayon" not in info.value.reason


def test_unknown_users_get_a_stable_decoy_salt() -> None:
    store = make_store(alice="pencil")

    def first(user: str) -> dict[str, str]:
        message = ScramServerExchange(SHA256, store.get).client_first(f"n,,n={user},r=abc".encode()).decode()
        return dict(part.split("=", 1) for part in message.split(","))

    ghost1, ghost2, other = first("ghost"), first("ghost"), first("other-ghost")
    assert ghost1["s"] == ghost2["s"] != other["s"]
    assert ghost1["i"] == first("alice")["i"] == "4096"
    assert len(b64(ghost1["s"])) == len(b64(first("alice")["s"]))


@pytest.mark.parametrize("message", [
    b"", b"n,,", b"n,,n=alice", b"n,,r=abc", b"p=tls-unique,,n=alice,r=abc", b"n,a=alice,n=alice,r=abc",
    b"n,,n=alice,r=abc,m=mandatory", b"n,,n=alice,r=abc,tokenauth=true", b"x,,n=alice,r=abc", b"n,,n=al=ice,r=abc", b"n,,n=alice,r=a,b",
    b"\xff\xfe\x00", b"n,,n=\xc3(,r=abc", b"n,,n=alice,r=\x01", b"\x00" * 100, b"n,,n=alice,r=abc,n=bob",
])
def test_malformed_client_first_messages_fail_cleanly(message: bytes) -> None:
    with pytest.raises(ScramError):
        ScramServerExchange(SHA256, make_store(alice="pw").get).client_first(message)


@pytest.mark.parametrize("message", [
    b"", b"c=biws", b"c=biws,r=abc", b"c=biws,r=abc,p=", b"c=biws,r=abc,p=%%%", b"c=!!,r=abc,p=AAAA",
    b"c=biws,r=abc,p=AAAA", b"r=abc,c=biws,p=AAAA", b"\xff", b"c=biws,r=abc,p=AAAA,x=y",
])
def test_malformed_client_final_messages_fail_cleanly(message: bytes) -> None:
    exchange = ScramServerExchange(SHA256, make_store(alice="pw").get)
    exchange.client_first(b"n,,n=alice,r=abc")
    with pytest.raises(ScramError):
        exchange.client_final(message)
    assert not exchange.complete


def test_out_of_order_steps_fail() -> None:
    exchange = ScramServerExchange(SHA256, make_store(alice="pw").get)
    with pytest.raises(ScramError, match="out of order"):
        exchange.client_final(b"c=biws,r=abc,p=AAAA")
    exchange = ScramServerExchange(SHA256, make_store(alice="pw").get)
    exchange.client_first(b"n,,n=alice,r=abc")
    with pytest.raises(ScramError, match="out of order"):
        exchange.client_first(b"n,,n=alice,r=abc")


def test_stored_credential_fields_are_what_scramp_checks() -> None:
    """A credential built from a salted password (KIP-554 upsertion) authenticates with scramp's client."""
    salt = b"kafka-python-salt-24byte"
    salted = hashlib.pbkdf2_hmac("sha512", b"s3cr3t", salt, 8192)
    store = CredentialStore()
    store.apply({"dave": UserRecord("dave", (credential_from_salted_password(SHA512, salt, salted, 8192),))})
    assert isinstance(store.get("dave", SHA512), ScramCredential)
    exchange = ScramServerExchange(SHA512, store.get)
    client = scramp.ScramClient(["SCRAM-SHA-512"], "dave", "s3cr3t")
    client.set_server_first(exchange.client_first(client.get_client_first().encode()).decode())
    client.set_server_final(exchange.client_final(client.get_client_final().encode()).decode())
    assert exchange.complete
