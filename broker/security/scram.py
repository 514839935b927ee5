"""SCRAM credentials, their records, the credential store, the users file, and SCRAM's server side.

Credentials (RFC 5802 / RFC 7677, as Kafka stores them): for a user and a mechanism
(SCRAM-SHA-256 or SCRAM-SHA-512) the salt, the iteration count (``MIN_ITERATIONS`` 4096 to
``MAX_ITERATIONS`` 16384, Kafka's bounds), StoredKey = H(HMAC(SaltedPassword, "Client Key")) and
ServerKey = HMAC(SaltedPassword, "Server Key").  Never the password, never the salted password.

Derivation uses ``hashlib.pbkdf2_hmac`` over the password's UTF-8 bytes and ``hmac`` for the two keys:
that is what Kafka's ``ScramFormatter`` does (no SASLprep, unlike scramp's ``make_auth_info``, so
non-ASCII passwords give the keys Kafka clients compute), and scramp has no API to turn the salted
password of an AlterUserScramCredentials upsertion into keys.  The exchange itself (message parsing,
nonces, channel-binding flag, proof check, server signature) is scramp's (:class:`ScramServerExchange`).

Persistence: :class:`UserRecord` is the JSON (base64 fields) stored under ``users/<name>`` in the
cluster's metadata store.  :class:`CredentialStore` is the in-memory lookup, with
AlterUserScramCredentials / DescribeUserScramCredentials as Kafka's ``ScramControlManager`` and
``ScramImage`` answer them (KIP-554): UNSUPPORTED_SASL_MECHANISM for an unknown mechanism,
UNACCEPTABLE_CREDENTIAL for an empty user name or iterations out of range, RESOURCE_NOT_FOUND to
delete or describe a missing credential, DUPLICATE_RESOURCE for a user named twice in one request.
Two rules go beyond Kafka's, because such credentials could never authenticate: the salt must not be
empty and the salted password must be as long as the mechanism's digest.  Kafka takes salts of any
length from AlterUserScramCredentials (librdkafka's admin test upserts a 4-byte one), so scramp's own
floor for salts (12 bytes, meant for salts it makes) is lowered to one byte at import.

``sasl.users.file`` (:func:`load_users_file`): ``name:password`` per line (split at the first colon;
the password is taken verbatim), ``#`` comments and blank lines allowed; a malformed line is reported
with its line number and never its content.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import os
import secrets
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import scramp

from protocol.error_codes import ErrorCode
from protocol.security_types import ScramMechanism, salted_password

__all__ = [
    "DEFAULT_ITERATIONS",
    "MAX_ITERATIONS",
    "MIN_ITERATIONS",
    "MIN_SALT_BYTES",
    "USERS_PREFIX",
    "AlterPlan",
    "CredentialStore",
    "ScramCredential",
    "ScramError",
    "ScramMechanism",
    "ScramServerExchange",
    "UserRecord",
    "UsersFileError",
    "credential_from_password",
    "credential_from_salted_password",
    "load_users_file",
    "parse_users_file",
    "user_key",
    "verify_password",
]

MIN_ITERATIONS = 4096
MAX_ITERATIONS = 16384
DEFAULT_ITERATIONS = 4096
MIN_SALT_BYTES = 1  # Kafka's floor: any non-empty salt (see the module doc)
if getattr(scramp.core.Salt, "MIN_LENGTH", 0) > MIN_SALT_BYTES:  # scramp wraps the stored salt in Salt()
    scramp.core.Salt.MIN_LENGTH = MIN_SALT_BYTES
SALT_BYTES = 32  # salts we make
USERS_PREFIX = "users/"


@dataclass(frozen=True, slots=True)
class ScramCredential:
    """What the broker keeps for one user and mechanism (the repr shows no key material)."""

    mechanism: ScramMechanism
    salt: bytes = field(repr=False)
    iterations: int
    stored_key: bytes = field(repr=False)
    server_key: bytes = field(repr=False)


def credential_from_salted_password(mechanism: ScramMechanism, salt: bytes, salted_password: bytes,
                                    iterations: int) -> ScramCredential:
    """The stored form of SaltedPassword = Hi(password, salt, iterations) (RFC 5802 section 3)."""
    digest = mechanism.hash_name
    client_key = hmac.digest(salted_password, b"Client Key", digest)
    return ScramCredential(mechanism, bytes(salt), iterations, hashlib.new(digest, client_key).digest(),
                           hmac.digest(salted_password, b"Server Key", digest))


def credential_from_password(mechanism: ScramMechanism, password: str, *,
                             iterations: int = DEFAULT_ITERATIONS, salt: bytes | None = None) -> ScramCredential:
    """A new credential (a fresh random salt unless one is given)."""
    if not MIN_ITERATIONS <= iterations <= MAX_ITERATIONS:
        raise ValueError(f"iterations must be between {MIN_ITERATIONS} and {MAX_ITERATIONS}")
    salt = secrets.token_bytes(SALT_BYTES) if salt is None else salt
    if len(salt) < MIN_SALT_BYTES:
        raise ValueError("the salt must not be empty")
    return credential_from_salted_password(mechanism, salt, salted_password(mechanism, password, salt, iterations),
                                           iterations)


def verify_password(credential: ScramCredential, password: str) -> bool:
    """Whether ``password`` is the one the credential was made from (for SASL/PLAIN)."""
    candidate = credential_from_password(credential.mechanism, password, iterations=credential.iterations,
                                         salt=credential.salt)
    return hmac.compare_digest(candidate.stored_key, credential.stored_key)


# ---------------------------------------------------------------------------
# records
# ---------------------------------------------------------------------------


def user_key(name: str) -> str:
    """The metadata-store key of a user: everything after ``users/`` is the name."""
    return f"{USERS_PREFIX}{name}"


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _unb64(value: Any) -> bytes:
    if not isinstance(value, str):
        raise ValueError("expected base64 text")
    return base64.b64decode(value, validate=True)


@dataclass(frozen=True, slots=True)
class UserRecord:
    """A user's SCRAM credentials as persisted: JSON with base64 salts and keys."""

    name: str
    credentials: tuple[ScramCredential, ...]

    @property
    def key(self) -> str:
        return user_key(self.name)

    def encode(self) -> bytes:
        doc = {"version": 1, "name": self.name, "credentials": [
            {"mechanism": c.mechanism.sasl_name, "iterations": c.iterations, "salt": _b64(c.salt),
             "stored_key": _b64(c.stored_key), "server_key": _b64(c.server_key)}
            for c in sorted(self.credentials, key=lambda c: c.mechanism)]}
        return json.dumps(doc, separators=(",", ":"), sort_keys=True).encode()

    @classmethod
    def decode(cls, data: bytes) -> UserRecord:
        """The inverse of :meth:`encode`; ValueError for a malformed record."""
        try:
            doc = json.loads(data)
            name = doc["name"]
            if not isinstance(name, str) or not name:
                raise ValueError("bad name")
            creds: dict[ScramMechanism, ScramCredential] = {}
            for c in doc["credentials"]:
                mechanism = ScramMechanism.from_sasl_name(c["mechanism"])
                iterations = c["iterations"]
                if mechanism is None or mechanism in creds:
                    raise ValueError("unknown or repeated mechanism")
                if type(iterations) is not int or not MIN_ITERATIONS <= iterations <= MAX_ITERATIONS:
                    raise ValueError("iterations out of range")
                stored_key, server_key = _unb64(c["stored_key"]), _unb64(c["server_key"])
                if len(stored_key) != mechanism.digest_size or len(server_key) != mechanism.digest_size:
                    raise ValueError("key of the wrong size")
                creds[mechanism] = ScramCredential(mechanism, _unb64(c["salt"]), iterations, stored_key, server_key)
        except (KeyError, TypeError, ValueError, AttributeError, binascii.Error) as exc:
            raise ValueError(f"malformed user record: {exc}") from None
        return cls(name, tuple(creds.values()))


# ---------------------------------------------------------------------------
# the store
# ---------------------------------------------------------------------------


@dataclass
class AlterPlan:
    """An AlterUserScramCredentials request, checked but not applied.

    ``results`` are the response's entries (``user``, ``error_code``, ``error_message``); ``updates``
    maps each changed user to its new record, or None when the user has no credential left.
    """

    results: list[dict[str, Any]]
    updates: dict[str, UserRecord | None]


def _result(user: str, code: ErrorCode = ErrorCode.NONE, message: str | None = None) -> dict[str, Any]:
    return {"user": user, "error_code": int(code), "error_message": message}


class CredentialStore:
    """Users' SCRAM credentials in memory, by user and mechanism."""

    def __init__(self) -> None:
        self._users: dict[str, dict[ScramMechanism, ScramCredential]] = {}

    def __len__(self) -> int:
        return len(self._users)

    def __contains__(self, name: object) -> bool:
        return name in self._users

    def get(self, name: str, mechanism: ScramMechanism) -> ScramCredential | None:
        creds = self._users.get(name)
        return creds.get(mechanism) if creds else None

    def users(self) -> list[str]:
        return sorted(self._users)

    def record(self, name: str) -> UserRecord | None:
        creds = self._users.get(name)
        return UserRecord(name, tuple(creds.values())) if creds else None

    def apply(self, updates: Mapping[str, UserRecord | None]) -> None:
        """Install records (from :meth:`plan_alter`, the users file or the metadata store); None removes."""
        for name, record in updates.items():
            if record is None or not record.credentials:
                self._users.pop(name, None)
            else:
                self._users[name] = {c.mechanism: c for c in record.credentials}

    def verify_plain(self, name: str, password: str) -> bool:
        """SASL/PLAIN against the stored credentials: any of the user's mechanisms will do.

        An unknown user costs the same key derivation as a known one (no timing oracle for names).
        """
        creds = self._users.get(name)
        if not creds:
            verify_password(_decoy(ScramMechanism.SCRAM_SHA_256, name), password)
            return False
        credential = creds.get(ScramMechanism.SCRAM_SHA_256) or next(iter(creds.values()))
        return verify_password(credential, password)

    # -- KIP-554 ------------------------------------------------------------------

    def plan_alter(self, deletions: Iterable[Mapping[str, Any]],
                   upsertions: Iterable[Mapping[str, Any]]) -> AlterPlan:
        """Check AlterUserScramCredentials (``deletions``: name, mechanism; ``upsertions``: name,
        mechanism, iterations, salt, salted_password) with Kafka's rules; nothing changes until
        :meth:`apply`.  A user named more than once gets DUPLICATE_RESOURCE and no change at all.
        """
        deletes: dict[str, ScramMechanism] = {}
        upserts: dict[str, ScramCredential] = {}
        errors: dict[str, tuple[ErrorCode, str]] = {}
        duplicate = (ErrorCode.DUPLICATE_RESOURCE, "A user credential cannot be altered twice in the same request")
        for d in deletions:
            name = d["name"]
            if name in errors:
                continue
            if deletes.pop(name, None) is not None:
                errors[name] = duplicate
                continue
            mechanism = ScramMechanism.from_code(d["mechanism"])
            error = self._check_name_and_mechanism(name, mechanism)
            if error is None and (mechanism is None or self.get(name, mechanism) is None):
                error = (ErrorCode.RESOURCE_NOT_FOUND, "Attempt to delete a user credential that does not exist")
            if error is not None:
                errors[name] = error
            else:
                assert mechanism is not None
                deletes[name] = mechanism
        for u in upsertions:
            name = u["name"]
            if name in errors:
                continue
            if deletes.pop(name, None) is not None or upserts.pop(name, None) is not None:
                errors[name] = duplicate
                continue
            mechanism = ScramMechanism.from_code(u["mechanism"])
            error = self._check_name_and_mechanism(name, mechanism)
            if error is None:
                assert mechanism is not None
                error = self._check_upsertion(mechanism, u)
            if error is not None:
                errors[name] = error
            else:
                assert mechanism is not None
                upserts[name] = credential_from_salted_password(mechanism, u["salt"], u["salted_password"],
                                                                u["iterations"])
        updates: dict[str, UserRecord | None] = {}
        results = []
        for name, mechanism in deletes.items():
            creds = {m: c for m, c in self._users.get(name, {}).items() if m is not mechanism}
            updates[name] = UserRecord(name, tuple(creds.values())) if creds else None
            results.append(_result(name))
        for name, credential in upserts.items():
            creds = dict(self._users.get(name, {}))
            creds[credential.mechanism] = credential
            updates[name] = UserRecord(name, tuple(creds.values()))
            results.append(_result(name))
        results.extend(_result(name, code, message) for name, (code, message) in errors.items())
        return AlterPlan(results, updates)

    @staticmethod
    def _check_name_and_mechanism(name: str, mechanism: ScramMechanism | None) -> tuple[ErrorCode, str] | None:
        if not name:
            return ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty"
        if mechanism is None:
            return ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"
        return None

    @staticmethod
    def _check_upsertion(mechanism: ScramMechanism, u: Mapping[str, Any]) -> tuple[ErrorCode, str] | None:
        if u["iterations"] < MIN_ITERATIONS:
            return ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations"
        if u["iterations"] > MAX_ITERATIONS:
            return ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too many iterations"
        if len(u["salt"]) < MIN_SALT_BYTES:
            return ErrorCode.UNACCEPTABLE_CREDENTIAL, "The salt must not be empty"
        if len(u["salted_password"]) != mechanism.digest_size:
            return (ErrorCode.UNACCEPTABLE_CREDENTIAL,
                    f"The salted password must be {mechanism.digest_size} bytes for {mechanism.sasl_name}")
        return None

    def alter(self, deletions: Iterable[Mapping[str, Any]],
              upsertions: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """:meth:`plan_alter` and :meth:`apply` in one step (a single broker); returns the results."""
        plan = self.plan_alter(deletions, upsertions)
        self.apply(plan.updates)
        return plan.results

    def describe(self, users: Sequence[Mapping[str, Any]] | Sequence[str] | None) -> list[dict[str, Any]]:
        """DescribeUserScramCredentialsResponse ``results`` (Kafka's ``ScramImage.describe``).

        ``users`` is the request's list (``{"name": ...}`` entries or plain names); None or empty
        describes every user.
        """
        names = [u if isinstance(u, str) else u["name"] for u in users or ()]
        wanted: dict[str, bool] = {}  # name -> named more than once
        if not names:
            wanted = dict.fromkeys(sorted(self._users), False)
        for name in names:
            wanted[name] = name in wanted
        results = []
        for name, duplicated in wanted.items():
            if duplicated:
                results.append({"user": name, "error_code": int(ErrorCode.DUPLICATE_RESOURCE),
                                "error_message": "Cannot describe SCRAM credentials for the same user twice "
                                                 f"in a single request: {name}", "credential_infos": []})
                continue
            creds = self._users.get(name)
            if not creds:
                results.append({"user": name, "error_code": int(ErrorCode.RESOURCE_NOT_FOUND),
                                "error_message": f"Attempt to describe a user credential that does not exist: {name}",
                                "credential_infos": []})
                continue
            infos = [{"mechanism": int(m), "iterations": c.iterations} for m, c in sorted(creds.items())]
            results.append({"user": name, "error_code": 0, "error_message": None, "credential_infos": infos})
        return results

    def seed(self, entries: Iterable[tuple[str, str]], *, iterations: int = DEFAULT_ITERATIONS,
             mechanisms: Iterable[ScramMechanism] = tuple(ScramMechanism)) -> dict[str, UserRecord]:
        """Records that make the users of ``entries`` (name, password) log in with those passwords.

        Users whose stored credentials already match keep them (no new salt, nothing to persist).
        Returns the changed records; :meth:`apply` them (and persist them) to take effect.
        """
        updates: dict[str, UserRecord] = {}
        for name, password in entries:
            creds = dict(self._users.get(name, {}))
            changed = False
            for mechanism in mechanisms:
                current = creds.get(mechanism)
                if current is None or not verify_password(current, password):
                    creds[mechanism] = credential_from_password(mechanism, password, iterations=iterations)
                    changed = True
            if changed:
                updates[name] = UserRecord(name, tuple(creds.values()))
        return updates


# ---------------------------------------------------------------------------
# the users file
# ---------------------------------------------------------------------------


class UsersFileError(ValueError):
    """A malformed ``sasl.users.file``; the message has the line number, never the line."""


def parse_users_file(text: str, source: str = "sasl.users.file") -> list[tuple[str, str]]:
    """(name, password) per ``name:password`` line."""
    entries: list[tuple[str, str]] = []
    first_line: dict[str, int] = {}
    for lineno, raw in enumerate(text.split("\n"), 1):
        line = raw.removesuffix("\r")
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        name, sep, password = line.partition(":")
        name = name.strip()
        if not sep or not name:
            raise UsersFileError(f"{source}: line {lineno}: expected name:password")
        if not password:
            raise UsersFileError(f"{source}: line {lineno}: empty password for user {name!r}")
        if name in first_line:
            raise UsersFileError(f"{source}: line {lineno}: user {name!r} is already defined "
                                 f"on line {first_line[name]}")
        first_line[name] = lineno
        entries.append((name, password))
    return entries


def load_users_file(path: str | os.PathLike[str]) -> list[tuple[str, str]]:
    """Read and parse ``sasl.users.file``; UsersFileError when it cannot be read or is malformed."""
    source = f"sasl.users.file {os.fspath(path)}"
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as exc:
        raise UsersFileError(f"{source}: cannot read: {exc.strerror or exc}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        lineno = data.count(b"\n", 0, exc.start) + 1
        raise UsersFileError(f"{source}: line {lineno}: not valid UTF-8") from None
    return parse_users_file(text, source)


# ---------------------------------------------------------------------------
# the exchange
# ---------------------------------------------------------------------------


class ScramError(Exception):
    """A SCRAM exchange failed.  ``reason`` is for the broker's log: it never holds a secret."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


# Unknown users get a made-up credential, stable per user for the life of the process, so that the
# exchange looks the same as for a real user and fails only at the proof (RFC 5802 section 5.1).
_DECOY_SECRET = secrets.token_bytes(32)


def _decoy(mechanism: ScramMechanism, name: str) -> ScramCredential:
    seed = hmac.digest(_DECOY_SECRET, f"{mechanism.sasl_name}\0{name}".encode(), "sha512")
    keys = hmac.digest(_DECOY_SECRET, seed, mechanism.hash_name)
    return ScramCredential(mechanism, seed[:SALT_BYTES], DEFAULT_ITERATIONS, keys, keys)


class ScramServerExchange:
    """The server side of one SCRAM authentication (client-first, server-first, client-final,
    server-final), on scramp.  ``lookup(name, mechanism)`` returns the user's credential or None.

    Any failure (malformed or non-UTF-8 message, unknown user, bad nonce, bad proof, channel binding
    ``p=`` which we cannot do, out-of-order call) raises :class:`ScramError`; nothing else escapes.
    The ``n`` and ``y`` channel-binding flags are accepted; RFC 5802 extension attributes (one letter)
    in the client-first message are ignored; Kafka's named extensions (``tokenauth=true``, for
    delegation tokens, which we do not have) are refused, as Kafka refuses extensions it does not
    support; an authzid in the GS2 header is refused (scramp's rule; Kafka clients never send one).

    librdkafka before 2.6.1 (Debian's kcat among them) sends the client nonce twice in its
    client-final message (``r=<client nonce><client nonce><server nonce>``; librdkafka#4895).  As
    Kafka 3.8.1-3.9 do, that exact form is accepted: it still carries the server nonce, and the proof
    is checked by scramp over the message the client actually signed.  Any other nonce fails.
    """

    def __init__(self, mechanism: ScramMechanism,
                 lookup: Callable[[str, ScramMechanism], ScramCredential | None]) -> None:
        self.mechanism = mechanism
        self._lookup = lookup
        self._server = scramp.ScramMechanism(mechanism.sasl_name).make_server(self._auth_info)
        self._known_user = False
        self._step = 0
        self.username: str | None = None
        self.complete = False

    def _auth_info(self, name: str) -> tuple[bytes, bytes, bytes, int]:
        credential = self._lookup(name, self.mechanism)
        self._known_user = credential is not None
        if credential is None:
            credential = _decoy(self.mechanism, name)
        self.username = name
        return credential.salt, credential.stored_key, credential.server_key, credential.iterations

    def _text(self, message: bytes) -> str:
        try:
            return bytes(message).decode("utf-8")
        except UnicodeDecodeError:
            raise ScramError("the message is not UTF-8") from None

    def client_first(self, message: bytes) -> bytes:
        """The server-first message for the client-first one."""
        if self._step != 0:
            raise ScramError("client-first message out of order")
        self._step = 1
        text = self._text(message)
        try:
            self._server.set_client_first(text)
            return self._server.get_server_first().encode("utf-8")
        except Exception as exc:  # scramp parses hostile input: whatever it raises is a failed login
            raise ScramError(f"bad client-first message: {type(exc).__name__}: {exc}") from None

    def client_final(self, message: bytes) -> bytes:
        """The server-final message (``v=`` server signature) for a valid client-final one."""
        if self._step != 1:
            raise ScramError("client-final message out of order")
        self._step = 2
        text = self._text(message)
        self._accept_legacy_nonce(text)
        try:
            self._server.set_client_final(text)
            final = self._server.get_server_final()
        except Exception as exc:  # scramp parses hostile input: whatever it raises is a failed login
            raise ScramError(f"bad client-final message: {type(exc).__name__}: {exc}") from None
        if not self._known_user or not final.startswith("v="):
            raise ScramError("unknown user")
        self.complete = True
        return final.encode("utf-8")

    def _accept_legacy_nonce(self, client_final: str) -> None:
        """Let scramp expect ``<client nonce><nonce>`` when that is what an old librdkafka sent."""
        server = self._server
        nonce, server_part = getattr(server, "nonce", None), getattr(server, "s_nonce", None)
        if nonce is None or server_part is None:
            return  # not a scramp we know: the nonce is checked strictly
        full = str(nonce)
        client = full[:len(full) - len(str(server_part))]
        sent = next((attr[2:] for attr in client_final.split(",") if attr.startswith("r=")), None)
        if client and sent == client + full:
            server.nonce = type(nonce)(sent)
