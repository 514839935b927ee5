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
host name unless told not to (Kafka's ``ssl.endpoint.identification.algorithm=``); it and the PEM
loaders are :mod:`client.security`'s (re-exported here), shared by our clients and the broker's
inter-broker connections.

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
from client.security import client_context, harden, load_ca, load_cert_chain

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


def server_context(*, certfile: str | os.PathLike[str], keyfile: str | os.PathLike[str] | None = None,
                   keyfile_password: str | None = None, cafile: str | os.PathLike[str] | None = None,
                   client_auth: str | ClientAuth = ClientAuth.NONE) -> ssl.SSLContext:
    """The context of an SSL / SASL_SSL listener.  Raises ValueError naming the bad setting."""
    try:
        auth = ClientAuth(str(client_auth).strip().lower())
    except ValueError:
        raise ValueError(f"ssl.client.auth: expected none, requested or required, got {client_auth!r}") from None
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    harden(ctx)
    load_cert_chain(ctx, certfile, keyfile, keyfile_password)
    if auth is not ClientAuth.NONE:
        if cafile is None:
            raise ValueError(f"ssl.client.auth={auth.value} needs ssl.cafile to verify client certificates")
        load_ca(ctx, cafile)
    elif cafile is not None:
        load_ca(ctx, cafile)
    ctx.verify_mode = _VERIFY_MODE[auth]
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
