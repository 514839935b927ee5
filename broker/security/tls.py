"""TLS contexts from PEM files, and the principal of a TLS peer.

Settings (Kafka's names, PEM files instead of key stores)::

    ssl.certfile          the listener's certificate chain (PEM); may also hold the private key
    ssl.keyfile           its private key (PEM), when not in ssl.certfile
    ssl.keyfile.password  the key's password, when it is encrypted (never logged, never in errors)
    ssl.cafile            CA certificates that sign client certificates (server) / the broker's (client)
    ssl.client.auth       none | requested | required   (default none)

Only the standard library's :mod:`ssl`; TLS 1.2 is the floor, renegotiation and compression are off.
A server context trusts nothing but ``ssl.cafile`` for client certificates (never the system store).
A client context verifies the broker against ``ssl.cafile`` (else the system store) and checks its
host name unless told not to (Kafka's ``ssl.endpoint.identification.algorithm=``).

With mutual TLS the principal is ``User:<subject CN>`` (the issue pins the CN; Kafka's default
builder would take the whole DN).  A certificate without a CN gives ``User:<DN>`` in RFC 4514 form,
as Kafka would; no certificate gives ``User:ANONYMOUS``.
"""

from __future__ import annotations

import os
import ssl
from collections.abc import Mapping
from enum import StrEnum
from typing import Any

from broker.security.acl import ANONYMOUS, user_principal

__all__ = ["ClientAuth", "client_context", "principal_from_certificate", "server_context"]


class ClientAuth(StrEnum):
    """``ssl.client.auth``: whether a server listener asks for client certificates."""

    NONE = "none"
    REQUESTED = "requested"
    REQUIRED = "required"


_VERIFY_MODE = {
    ClientAuth.NONE: ssl.CERT_NONE,
    ClientAuth.REQUESTED: ssl.CERT_OPTIONAL,
    ClientAuth.REQUIRED: ssl.CERT_REQUIRED,
}


def _harden(ctx: ssl.SSLContext) -> None:
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.options |= ssl.OP_NO_COMPRESSION | getattr(ssl, "OP_NO_RENEGOTIATION", 0)


def _require_file(setting: str, path: str | os.PathLike[str]) -> str:
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise ValueError(f"{setting}: no such file: {path}")
    return path


def _load_chain(ctx: ssl.SSLContext, certfile: str | os.PathLike[str],
                keyfile: str | os.PathLike[str] | None, password: str | None) -> None:
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


def _load_ca(ctx: ssl.SSLContext, cafile: str | os.PathLike[str]) -> None:
    try:
        ctx.load_verify_locations(cafile=_require_file("ssl.cafile", cafile))
    except ssl.SSLError as exc:
        raise ValueError(f"ssl.cafile: cannot load CA certificates: {exc.reason or exc}") from None


def server_context(*, certfile: str | os.PathLike[str], keyfile: str | os.PathLike[str] | None = None,
                   keyfile_password: str | None = None, cafile: str | os.PathLike[str] | None = None,
                   client_auth: str | ClientAuth = ClientAuth.NONE) -> ssl.SSLContext:
    """The context of an SSL / SASL_SSL listener.  Raises ValueError naming the bad setting."""
    try:
        auth = ClientAuth(str(client_auth).strip().lower())
    except ValueError:
        raise ValueError(f"ssl.client.auth: expected none, requested or required, got {client_auth!r}") from None
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    _harden(ctx)
    _load_chain(ctx, certfile, keyfile, keyfile_password)
    if auth is not ClientAuth.NONE:
        if cafile is None:
            raise ValueError(f"ssl.client.auth={auth.value} needs ssl.cafile to verify client certificates")
        _load_ca(ctx, cafile)
    elif cafile is not None:
        _load_ca(ctx, cafile)
    ctx.verify_mode = _VERIFY_MODE[auth]
    return ctx


def client_context(*, cafile: str | os.PathLike[str] | None = None,
                   certfile: str | os.PathLike[str] | None = None,
                   keyfile: str | os.PathLike[str] | None = None, keyfile_password: str | None = None,
                   check_hostname: bool = True) -> ssl.SSLContext:
    """The context of a client connecting to an SSL / SASL_SSL listener (ours or another broker's)."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    _harden(ctx)
    if cafile is not None:
        _load_ca(ctx, cafile)
    else:
        ctx.load_default_certs(ssl.Purpose.SERVER_AUTH)
    if certfile is not None:
        _load_chain(ctx, certfile, keyfile, keyfile_password)
    elif keyfile is not None:
        raise ValueError("ssl.keyfile is set without ssl.certfile")
    ctx.check_hostname = check_hostname
    ctx.verify_mode = ssl.CERT_REQUIRED
    return ctx


# Short names of RFC 4514 (and the usual extras) for the attribute names ``getpeercert`` reports.
_SHORT_NAMES = {
    "commonName": "CN", "countryName": "C", "localityName": "L", "stateOrProvinceName": "ST",
    "organizationName": "O", "organizationalUnitName": "OU", "streetAddress": "STREET",
    "domainComponent": "DC", "userId": "UID", "emailAddress": "EMAILADDRESS",
}


def _escape_dn_value(value: str) -> str:
    out = "".join("\\" + c if c in ',+"\\<>;=' else c for c in value)
    if out.startswith(("#", " ")):
        out = "\\" + out
    if out.endswith(" ") and not out.endswith("\\ "):
        out = out[:-1] + "\\ "
    return out


def principal_from_certificate(cert: Mapping[str, Any] | None) -> str:
    """``User:<CN>`` of a peer certificate as ``SSLObject.getpeercert()`` returns it.

    ``None`` or ``{}`` (no certificate, or one that was not verified) gives ``User:ANONYMOUS``.  With
    several CNs the most specific (the last) one wins.
    """
    subject = cert.get("subject") if cert else None
    if not subject:
        return ANONYMOUS
    pairs = [(str(k), str(v)) for rdn in subject for k, v in rdn]
    common_names = [v for k, v in pairs if k == "commonName" and v]
    if common_names:
        return user_principal(common_names[-1])
    dn = ",".join("+".join(f"{_SHORT_NAMES.get(k, k)}={_escape_dn_value(v)}" for k, v in rdn)
                  for rdn in reversed(subject))
    return user_principal(dn) if dn else ANONYMOUS
