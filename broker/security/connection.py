"""What a client connection needs from the broker's security, shared by every connection (pure).

:class:`ConnectionSecurity` hands each connection on a SASL listener its
:class:`~broker.security.sasl.SaslServer`, makes the :class:`~broker.security.acl.AuthorizationSession`
of a principal once it is known (None while ``authorizer.enabled`` is false: nothing is checked),
and records outcomes: successful and failed authentications (counted per listener and mechanism,
failures logged with the peer and a secret-free reason) and authorization denials.

How the connection uses it (``broker.network.server``): a PLAINTEXT connection is ``User:ANONYMOUS``, an SSL
one the principal of its client certificate (``User:<CN>``, ANONYMOUS without one); a SASL connection
answers only ApiVersions, SaslHandshake and SaslAuthenticate until it has authenticated, and takes
the SASL principal then.  A failed authentication is answered at once and the connection closed only after
``connection.failed.authentication.delay.ms``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from broker.security.acl import AuthorizationSession, Authorizer
from broker.security.sasl import SaslConfig, SaslServer
from broker.security.scram import CredentialStore

__all__ = ["AuthEvents", "ConnectionSecurity"]

log = logging.getLogger("kbroker.security")


@dataclass
class AuthEvents:
    """Where outcomes go (the broker's metrics); each callback takes ``(listener, mechanism)``,
    ``denied`` takes ``(api name, resource type name)``."""

    succeeded: Callable[[str, str], None] = lambda listener, mechanism: None
    failed: Callable[[str, str], None] = lambda listener, mechanism: None
    denied: Callable[[str, str], None] = lambda api, resource_type: None


@dataclass
class ConnectionSecurity:
    """The broker-wide half of connection security (see the module docstring)."""

    credentials: CredentialStore
    sasl: SaslConfig = field(default_factory=SaslConfig)
    authorizer: Authorizer | None = None
    failed_authentication_delay_ms: int = 100
    session_cache_entries: int = 1024
    events: AuthEvents = field(default_factory=AuthEvents)
    clock: Callable[[], float] = time.monotonic

    @property
    def failed_authentication_delay_s(self) -> float:
        return max(0, self.failed_authentication_delay_ms) / 1000

    def new_sasl_server(self) -> SaslServer:
        return SaslServer(self.sasl, self.credentials, clock=self.clock)

    def session(self, principal: str, host: str) -> AuthorizationSession | None:
        """The decision cache of a connection's principal; None when authorization is off."""
        if self.authorizer is None:
            return None
        return self.authorizer.session(principal, host, max_entries=self.session_cache_entries)

    def authenticated(self, listener: str, mechanism: str, principal: str, peer: str) -> None:
        log.debug("%s authenticated as %s with %s on %s", peer, principal, mechanism, listener)
        self.events.succeeded(listener, mechanism)

    def authentication_failed(self, listener: str, mechanism: str | None, reason: str, peer: str) -> None:
        """A failed login: logged (``reason`` holds no secret) and counted."""
        log.info("authentication failed: %s on %s with %s: %s", peer, listener, mechanism or "no mechanism", reason)
        self.events.failed(listener, mechanism or "none")
