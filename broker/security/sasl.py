"""The SASL server state machine of one connection on a SASL_PLAINTEXT / SASL_SSL listener.

Sans-IO: the network edge decodes SaslHandshake / SaslAuthenticate requests, hands their fields to
:meth:`SaslServer.handshake` / :meth:`SaslServer.authenticate`, encodes the response bodies they
return, and closes the connection after sending when :attr:`SaslServer.failed` is set.  It asks
:meth:`SaslServer.allows` before handling any other request (false: close the connection).  Time
comes from an injected clock (seconds, monotonic).

Protocol, as Kafka's ``SaslServerAuthenticator`` runs it:

* Before authentication only ApiVersions and SaslHandshake are allowed.  SaslHandshake (v0/v1) picks
  a mechanism of ``sasl.enabled.mechanisms`` (default ``PLAIN,SCRAM-SHA-256,SCRAM-SHA-512``), else
  UNSUPPORTED_SASL_MECHANISM with the enabled list, and the connection closes.
* After a v1 handshake the tokens travel in SaslAuthenticate requests (v0-v2, KIP-152).  After a v0
  handshake they travel as raw size-prefixed frames (:attr:`SaslServer.raw_tokens` tells the edge to
  switch its framing; :meth:`SaslServer.raw_token` answers them; a failure closes the connection).
* PLAIN: ``authzid NUL user NUL password``; the authzid must be empty or the user; the password is
  checked against the user's stored SCRAM credential.  SCRAM-SHA-256/512: client-first,
  server-first, client-final, server-final (:class:`broker.security.scram.ScramServerExchange`).
* Success sets :attr:`SaslServer.principal` (``User:<name>``) and, with
  ``connections.max.reauth.ms`` > 0, a session lifetime (KIP-368): reported in SaslAuthenticate v1+,
  and once it has passed, every request but a SaslHandshake that starts re-authentication closes
  the connection.  Re-authentication keeps the mechanism and must keep the principal; at most one
  starts per second.
* Failures answer SASL_AUTHENTICATION_FAILED with one message per mechanism, the same for an
  unknown user, a wrong password and a malformed token, and never a secret
  (:attr:`SaslServer.failure_reason` has the detail for the broker's log, also secret-free).
  Out-of-order requests answer ILLEGAL_SASL_STATE.  Tokens larger than
  ``sasl.server.max.receive.size`` (default 64 KiB here; Kafka's 512 KiB default exists for
  GSSAPI and OAUTHBEARER tokens, which we do not speak) fail without being looked at.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import Enum
from typing import Any

from broker.security.acl import user_principal
from broker.security.scram import CredentialStore, ScramError, ScramMechanism, ScramServerExchange
from protocol.api import ApiKey
from protocol.error_codes import ErrorCode

__all__ = [
    "DEFAULT_MAX_RECEIVE_SIZE",
    "DEFAULT_MECHANISMS",
    "SUPPORTED_MECHANISMS",
    "SaslConfig",
    "SaslError",
    "SaslServer",
    "SaslState",
    "parse_mechanisms",
]

DEFAULT_MECHANISMS: tuple[str, ...] = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
SUPPORTED_MECHANISMS = frozenset(DEFAULT_MECHANISMS)
DEFAULT_MAX_RECEIVE_SIZE = 64 * 1024
MIN_REAUTH_INTERVAL_S = 1.0  # Kafka's KafkaChannel.MIN_REAUTH_INTERVAL_ONE_SECOND_NANOS


def parse_mechanisms(value: str | Iterable[str]) -> tuple[str, ...]:
    """``sasl.enabled.mechanisms``: a comma-separated list (or an iterable) of supported names."""
    items = value.split(",") if isinstance(value, str) else list(value)
    mechanisms: list[str] = []
    for item in items:
        name = item.strip().upper()
        if not name:
            continue
        if name not in SUPPORTED_MECHANISMS:
            raise ValueError(f"sasl.enabled.mechanisms: unsupported mechanism {item.strip()!r} "
                             f"(supported: {', '.join(DEFAULT_MECHANISMS)})")
        if name not in mechanisms:
            mechanisms.append(name)
    if not mechanisms:
        raise ValueError("sasl.enabled.mechanisms: no SASL mechanism is enabled")
    return tuple(mechanisms)


@dataclass(frozen=True, slots=True)
class SaslConfig:
    """The settings ``sasl.enabled.mechanisms``, ``sasl.server.max.receive.size`` and
    ``connections.max.reauth.ms``."""

    enabled_mechanisms: tuple[str, ...] = DEFAULT_MECHANISMS
    max_receive_size: int = DEFAULT_MAX_RECEIVE_SIZE
    connections_max_reauth_ms: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "enabled_mechanisms", parse_mechanisms(self.enabled_mechanisms))
        if self.max_receive_size < 1:
            raise ValueError("sasl.server.max.receive.size must be positive")
        if self.connections_max_reauth_ms < 0:
            raise ValueError("connections.max.reauth.ms must not be negative")


class SaslState(Enum):
    HANDSHAKE = "handshake"          # waiting for SaslHandshake
    AUTHENTICATE = "authenticate"    # exchanging tokens
    COMPLETE = "complete"            # authenticated
    FAILED = "failed"                # close the connection once the response is sent


class SaslError(Exception):
    """A failure in raw-token mode (v0 handshake): the edge closes the connection, sending nothing."""

    def __init__(self, error_code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.error_code = error_code
        self.message = message


class _AuthFailure(Exception):
    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message)
        self.message = message
        self.reason = reason


_ALLOWED_BEFORE_AUTH = frozenset((ApiKey.API_VERSIONS, ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE))


class SaslServer:
    """One connection's SASL state (see the module docstring)."""

    def __init__(self, config: SaslConfig, credentials: CredentialStore, *,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.config = config
        self.credentials = credentials
        self.clock = clock
        self.state = SaslState.HANDSHAKE
        self.mechanism: str | None = None
        self.principal: str | None = None
        self._raw = False
        self.session_expires_at: float | None = None
        self.failure_reason: str | None = None
        self._scram: ScramServerExchange | None = None
        self._previous_principal: str | None = None
        self._reauth_bad_mechanism: str | None = None
        self._last_reauth_start: float | None = None

    @property
    def failed(self) -> bool:
        return self.state is SaslState.FAILED

    @property
    def authenticated(self) -> bool:
        return self.state is SaslState.COMPLETE

    @property
    def raw_tokens(self) -> bool:
        """Whether the next client frames are raw tokens (a v0 handshake, until the exchange ends)."""
        return self._raw and self.state is SaslState.AUTHENTICATE

    @property
    def reauthenticating(self) -> bool:
        return self._previous_principal is not None

    def session_expired(self) -> bool:
        return self.session_expires_at is not None and self.clock() > self.session_expires_at

    def allows(self, api_key: int) -> bool:
        """Whether a request of ``api_key`` may be handled now; False: close the connection.

        SaslHandshake and SaslAuthenticate are always let through to :meth:`handshake` and
        :meth:`authenticate`, which answer them (ILLEGAL_SASL_STATE when out of order).
        """
        if self.state is SaslState.FAILED:
            return False
        if api_key in (ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE):
            return True
        if self.state is SaslState.COMPLETE:
            return not self.session_expired()
        return self.state is SaslState.HANDSHAKE and api_key in _ALLOWED_BEFORE_AUTH

    # -- SaslHandshake --------------------------------------------------------------

    def handshake(self, version: int, mechanism: str) -> dict[str, Any]:
        """The SaslHandshakeResponse body for a SaslHandshake request."""
        enabled = list(self.config.enabled_mechanisms)
        if self.state is SaslState.COMPLETE and self._can_begin_reauthentication():
            self._last_reauth_start = self.clock()
            self._previous_principal = self.principal
        elif self.state is not SaslState.HANDSHAKE:
            if self.state is SaslState.COMPLETE and not self.session_expired():
                return {"error_code": int(ErrorCode.ILLEGAL_SASL_STATE), "mechanisms": enabled}
            return self._fail_handshake(ErrorCode.ILLEGAL_SASL_STATE, "unexpected SaslHandshake")
        if mechanism not in enabled:
            return self._fail_handshake(ErrorCode.UNSUPPORTED_SASL_MECHANISM,
                                        f"unsupported mechanism {mechanism[:64]!r}")
        if self.reauthenticating and mechanism != self.mechanism:
            self._reauth_bad_mechanism = (f"SASL mechanism '{mechanism}' requested by client is not supported for "
                                          f"re-authentication of mechanism '{self.mechanism}'")
        self.mechanism = mechanism
        self._raw = version == 0
        self.state = SaslState.AUTHENTICATE
        self._scram = None
        scram_mechanism = ScramMechanism.from_sasl_name(mechanism)
        if scram_mechanism is not None:
            self._scram = ScramServerExchange(scram_mechanism, self.credentials.get)
        return {"error_code": 0, "mechanisms": enabled}

    def _can_begin_reauthentication(self) -> bool:
        if self.session_expires_at is None:  # connections.max.reauth.ms is 0: no re-authentication
            return False
        last = self._last_reauth_start
        return last is None or self.clock() - last >= MIN_REAUTH_INTERVAL_S

    def _fail_handshake(self, code: ErrorCode, reason: str) -> dict[str, Any]:
        self.state = SaslState.FAILED
        self.failure_reason = reason
        return {"error_code": int(code), "mechanisms": list(self.config.enabled_mechanisms)}

    # -- tokens ------------------------------------------------------------------------

    def authenticate(self, version: int, auth_bytes: bytes) -> dict[str, Any]:
        """The SaslAuthenticateResponse body for a SaslAuthenticate request."""
        if self.state is SaslState.COMPLETE:
            return self._response(ErrorCode.ILLEGAL_SASL_STATE,
                                  "SaslAuthenticate request received after successful authentication")
        if self.state is not SaslState.AUTHENTICATE or self._raw:
            self.state = SaslState.FAILED
            self.failure_reason = "SaslAuthenticate out of order"
            return self._response(ErrorCode.ILLEGAL_SASL_STATE,
                                  "Unexpected SaslAuthenticate request: no SaslHandshake v1 preceded it")
        try:
            token = self._evaluate(auth_bytes)
        except _AuthFailure as failure:
            self.state = SaslState.FAILED
            self.failure_reason = failure.reason
            return self._response(ErrorCode.SASL_AUTHENTICATION_FAILED, failure.message)
        lifetime = self._session_lifetime_ms() if self.state is SaslState.COMPLETE else 0
        return self._response(ErrorCode.NONE, None, token, lifetime)

    def raw_token(self, token: bytes) -> bytes:
        """The answer to a raw SASL token (after a v0 handshake), to send as a size-prefixed frame even
        when empty (as Kafka does); SaslError closes the connection without an answer."""
        if not self.raw_tokens:
            self.state = SaslState.FAILED
            self.failure_reason = "raw SASL token out of order"
            raise SaslError(ErrorCode.ILLEGAL_SASL_STATE, "Unexpected raw SASL token")
        try:
            answer = self._evaluate(token)
        except _AuthFailure as failure:
            self.state = SaslState.FAILED
            self.failure_reason = failure.reason
            raise SaslError(ErrorCode.SASL_AUTHENTICATION_FAILED, failure.message) from None
        if self.state is SaslState.COMPLETE:
            self._session_lifetime_ms()
        return answer

    @staticmethod
    def _response(code: ErrorCode, message: str | None, token: bytes = b"", lifetime_ms: int = 0) -> dict[str, Any]:
        return {"error_code": int(code), "error_message": message, "auth_bytes": token,
                "session_lifetime_ms": lifetime_ms}

    def _session_lifetime_ms(self) -> int:
        lifetime = self.config.connections_max_reauth_ms
        self.session_expires_at = self.clock() + lifetime / 1000 if lifetime > 0 else None
        return lifetime

    def _evaluate(self, token: bytes) -> bytes:
        """Advance the exchange by one client token; _AuthFailure on any failure."""
        mechanism = self.mechanism or ""
        generic = ("Authentication failed during authentication due to invalid credentials "
                   f"with SASL mechanism {mechanism}")
        if len(token) > self.config.max_receive_size:
            raise _AuthFailure("Failing SASL authentication due to invalid receive size",
                               f"token of {len(token)} bytes exceeds sasl.server.max.receive.size")
        if self._reauth_bad_mechanism is not None:
            raise _AuthFailure(self._reauth_bad_mechanism, "mechanism changed during re-authentication")
        if self._scram is None:
            name = self._plain(bytes(token), generic)
            answer = b""
        else:
            try:
                if self._scram.username is None:
                    return self._scram.client_first(bytes(token))
                answer = self._scram.client_final(bytes(token))
            except ScramError as exc:
                raise _AuthFailure(generic, f"{mechanism}: {exc.reason}") from None
            name = self._scram.username
            assert name is not None
        principal = user_principal(name)
        if self._previous_principal is not None and principal != self._previous_principal:
            raise _AuthFailure(f"Cannot change principals during re-authentication from "
                               f"{self._previous_principal}: {principal}", "principal changed on re-authentication")
        self.principal = principal
        self.state = SaslState.COMPLETE
        self._previous_principal = None
        return answer

    def _plain(self, token: bytes, generic: str) -> str:
        """The user of a valid PLAIN token (RFC 4616)."""
        parts = token.split(b"\0")
        if len(parts) != 3:
            raise _AuthFailure(generic, f"PLAIN: expected 3 tokens, got {len(parts)}")
        try:
            authzid, user, password = (p.decode("utf-8") for p in parts)
        except UnicodeDecodeError:
            raise _AuthFailure(generic, "PLAIN: not UTF-8") from None
        if not user or not password:
            raise _AuthFailure(generic, "PLAIN: empty user name or password")
        if authzid and authzid != user:
            raise _AuthFailure(generic, "PLAIN: authorization id differs from the user name")
        if not self.credentials.verify_plain(user, password):
            raise _AuthFailure(generic, "PLAIN: unknown user or wrong password")
        return user
