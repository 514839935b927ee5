"""Client-side security: TLS contexts for reaching brokers, and SASL authentication (PLAIN, SCRAM).

Settings, with the Java / librdkafka names (our clients take them with dots or underscores)::

    security.protocol   PLAINTEXT | SSL | SASL_PLAINTEXT | SASL_SSL        (default PLAINTEXT)
    sasl.mechanism      PLAIN | SCRAM-SHA-256 | SCRAM-SHA-512               (default PLAIN, as Kafka)
    sasl.username, sasl.password
    ssl.cafile          CA certificates that sign the broker's certificate (else the system store)
    ssl.certfile, ssl.keyfile, ssl.keyfile.password    a client certificate, for mutual TLS
    ssl.endpoint.identification.algorithm             https (default: check the broker's host name) or empty

:func:`client_context` (and the PEM loaders the broker's server contexts share) uses the standard
library's :mod:`ssl` only, TLS 1.2 at least.  :class:`SaslClientExchange` is the sans-IO client side
of one SASL exchange: PLAIN (RFC 4616) or SCRAM-SHA-256/512 (RFC 5802/7677) on scramp, which checks
the server's signature, so a broker that does not know the password cannot pose as one that does.
The connection (``client.conn``) runs it over SaslHandshake v1 and SaslAuthenticate.
"""

from __future__ import annotations

import os
import ssl
from dataclasses import dataclass, field

import scramp

__all__ = [
    "SASL_MECHANISMS",
    "SECURITY_PROTOCOLS",
    "ClientSecurity",
    "SaslClientExchange",
    "SaslExchangeError",
    "client_context",
    "harden",
    "load_ca",
    "load_cert_chain",
]

SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")


# ---------------------------------------------------------------------------
# TLS
# ---------------------------------------------------------------------------


def harden(ctx: ssl.SSLContext) -> None:
    """TLS 1.2 at least; no compression, no renegotiation."""
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.options |= ssl.OP_NO_COMPRESSION | getattr(ssl, "OP_NO_RENEGOTIATION", 0)


def _require_file(setting: str, path: str | os.PathLike[str]) -> str:
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise ValueError(f"{setting}: no such file: {path}")
    return path


def load_cert_chain(ctx: ssl.SSLContext, certfile: str | os.PathLike[str],
                    keyfile: str | os.PathLike[str] | None, password: str | None) -> None:
    """Load a PEM certificate chain and key; ValueError naming the settings (never the password)."""
    cert = _require_file("ssl.certfile", certfile)
    key = _require_file("ssl.keyfile", keyfile) if keyfile else None
    secret = (password or "").encode()
    try:
        # Always a callable: with none, OpenSSL would prompt on the terminal for an encrypted key.
        ctx.load_cert_chain(cert, key, password=lambda: secret)
    except (ssl.SSLError, OSError) as exc:
        hint = " (wrong or missing ssl.keyfile.password?)" if key or password is not None else ""
        reason = getattr(exc, "reason", None) or exc.__class__.__name__
        raise ValueError(f"ssl.certfile / ssl.keyfile: cannot load the certificate and key: {reason}{hint}") from None


def load_ca(ctx: ssl.SSLContext, cafile: str | os.PathLike[str]) -> None:
    """Trust the PEM CA certificates of ``cafile``; ValueError naming the setting."""
    try:
        ctx.load_verify_locations(cafile=_require_file("ssl.cafile", cafile))
    except ssl.SSLError as exc:
        raise ValueError(f"ssl.cafile: cannot load CA certificates: {exc.reason or exc}") from None


def client_context(*, cafile: str | os.PathLike[str] | None = None,
                   certfile: str | os.PathLike[str] | None = None,
                   keyfile: str | os.PathLike[str] | None = None, keyfile_password: str | None = None,
                   check_hostname: bool = True) -> ssl.SSLContext:
    """The context of a client connecting to an SSL / SASL_SSL listener (a broker's, ours or another's)."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    harden(ctx)
    if cafile is not None:
        load_ca(ctx, cafile)
    else:
        ctx.load_default_certs(ssl.Purpose.SERVER_AUTH)
    if certfile is not None:
        load_cert_chain(ctx, certfile, keyfile, keyfile_password)
    elif keyfile is not None:
        raise ValueError("ssl.keyfile is set without ssl.certfile")
    ctx.check_hostname = check_hostname
    ctx.verify_mode = ssl.CERT_REQUIRED
    return ctx


# ---------------------------------------------------------------------------
# the settings, checked
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class ClientSecurity:
    """How a connection is secured: the checked form of the settings above (the repr hides the password)."""

    protocol: str = "PLAINTEXT"
    sasl_mechanism: str = "PLAIN"
    sasl_username: str | None = None
    sasl_password: str | None = field(default=None, repr=False)
    ssl_context: ssl.SSLContext | None = field(default=None, repr=False)

    @property
    def uses_tls(self) -> bool:
        return self.protocol in ("SSL", "SASL_SSL")

    @property
    def uses_sasl(self) -> bool:
        return self.protocol in ("SASL_PLAINTEXT", "SASL_SSL")

    @classmethod
    def from_settings(cls, *, security_protocol: str = "PLAINTEXT", sasl_mechanism: str | None = None,
                      sasl_username: str | None = None, sasl_password: str | None = None,
                      ssl_cafile: str | None = None, ssl_certfile: str | None = None,
                      ssl_keyfile: str | None = None, ssl_keyfile_password: str | None = None,
                      ssl_endpoint_identification_algorithm: str | None = "https") -> ClientSecurity:
        """Check the settings and load the TLS files; ValueError naming the setting that is wrong."""
        protocol = str(security_protocol or "PLAINTEXT").strip().upper()
        if protocol not in SECURITY_PROTOCOLS:
            raise ValueError(f"security.protocol must be one of {', '.join(SECURITY_PROTOCOLS)}, "
                             f"not {security_protocol!r}")
        mechanism = str(sasl_mechanism or "PLAIN").strip().upper()
        context: ssl.SSLContext | None = None
        if protocol in ("SASL_PLAINTEXT", "SASL_SSL"):
            if mechanism not in SASL_MECHANISMS:
                raise ValueError(f"sasl.mechanism must be one of {', '.join(SASL_MECHANISMS)}, "
                                 f"not {sasl_mechanism!r}")
            if not sasl_username or sasl_password is None:
                raise ValueError(f"security.protocol={protocol} needs sasl.username and sasl.password")
        if protocol in ("SSL", "SASL_SSL"):
            algorithm = (ssl_endpoint_identification_algorithm or "").strip().lower()
            if algorithm not in ("", "https"):
                raise ValueError("ssl.endpoint.identification.algorithm must be https or empty, "
                                 f"not {ssl_endpoint_identification_algorithm!r}")
            context = client_context(cafile=ssl_cafile, certfile=ssl_certfile, keyfile=ssl_keyfile,
                                     keyfile_password=ssl_keyfile_password, check_hostname=algorithm == "https")
        return cls(protocol, mechanism, sasl_username, sasl_password, context)


# ---------------------------------------------------------------------------
# SASL, client side
# ---------------------------------------------------------------------------


class SaslExchangeError(Exception):
    """The server's SASL answer is malformed or its SCRAM signature is wrong (no secret in the message)."""


class SaslClientExchange:
    """One SASL exchange, client side (sans-IO).

    ``first()`` is the first token to send; ``respond(server_token)`` takes each answer and returns the
    next token, or None once the exchange is complete (the server is then verified, for SCRAM).
    """

    def __init__(self, mechanism: str, username: str, password: str) -> None:
        if mechanism not in SASL_MECHANISMS:
            raise ValueError(f"unsupported SASL mechanism {mechanism!r}")
        self.mechanism = mechanism
        self._username = username
        self._password = password
        self._scram: scramp.ScramClient | None = None
        self._step = 0

    def first(self) -> bytes:
        if self.mechanism == "PLAIN":
            self._step = 2
            return b"\0" + self._username.encode() + b"\0" + self._password.encode()
        self._scram = scramp.ScramClient([self.mechanism], self._username, self._password)
        self._step = 1
        return self._scram.get_client_first().encode()

    def respond(self, server_token: bytes) -> bytes | None:
        scram = self._scram
        try:
            if self._step == 1 and scram is not None:
                scram.set_server_first(bytes(server_token).decode("utf-8"))
                self._step = 2
                return scram.get_client_final().encode()
            if self._step == 2:
                if scram is not None:
                    scram.set_server_final(bytes(server_token).decode("utf-8"))
                self._step = 3
                return None
        except (scramp.ScramException, UnicodeDecodeError, ValueError) as exc:
            raise SaslExchangeError(f"{self.mechanism}: the broker's answer does not verify "
                                    f"({type(exc).__name__})") from None
        raise SaslExchangeError(f"{self.mechanism}: unexpected server token")

    @property
    def complete(self) -> bool:
        return self._step == 3
