"""The broker's security settings, checked, and turned into what its parts use.

* :func:`check_security_settings` makes every cross-check of the settings (``python -m broker`` runs
  it before starting, so a mistake is one line and exit code 2): listeners and advertised listeners
  parse, TLS listeners have a certificate that loads, SASL mechanisms are supported, the
  inter-broker listener exists and, in a cluster, has the credentials it needs.
* :func:`server_listeners` — one :class:`ServerListener` per listener to bind: the ``listeners``
  setting, or without it the single PLAINTEXT listener of ``--host``/``--port`` (nothing changes).
* :func:`advertised_endpoints` — what the broker registers in the metadata store: every listener's
  advertised address (``advertised.listeners``, else the bound address), with the ports actually
  bound for listeners on port 0.
* :func:`inter_broker_security` — how this broker's replica fetchers connect to other brokers:
  the inter-broker listener's protocol with ``inter.broker.sasl.username`` / ``.password`` and
  ``sasl.mechanism.inter.broker.protocol``, and a TLS client context from ``ssl.cafile`` (the
  broker's certificate, ``ssl.certfile``/``ssl.keyfile``, is its client certificate too).

TLS files are read here (once, at start); nothing else does I/O.
"""

from __future__ import annotations

import ssl
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from broker.security.acl import Authorizer, parse_super_users
from broker.security.listeners import (
    Endpoint,
    Listener,
    SecurityProtocol,
    parse_advertised_listeners,
    parse_listeners,
)
from broker.security.sasl import SUPPORTED_MECHANISMS, SaslConfig
from broker.security.scram import load_users_file
from broker.security.tls import server_context
from client.security import ClientSecurity

if TYPE_CHECKING:
    from broker.config.settings import BrokerConfig

__all__ = [
    "ServerListener",
    "advertised_endpoints",
    "check_security_settings",
    "configured_listeners",
    "inter_broker_listener_name",
    "inter_broker_security",
    "new_authorizer",
    "sasl_config",
    "server_listeners",
]

IMPLICIT_LISTENER = "PLAINTEXT"


@dataclass(frozen=True)
class ServerListener:
    """A listener to bind: its address, security protocol and (TLS) server context."""

    listener: Listener
    ssl_context: ssl.SSLContext | None = field(default=None, repr=False)

    @property
    def name(self) -> str:
        return self.listener.name

    @property
    def security_protocol(self) -> SecurityProtocol:
        return self.listener.security_protocol

    @property
    def uses_sasl(self) -> bool:
        return self.listener.uses_sasl

    @property
    def uses_tls(self) -> bool:
        return self.listener.uses_tls


def configured_listeners(config: BrokerConfig) -> tuple[Listener, ...]:
    """``listeners``, or the implicit ``PLAINTEXT://host:port`` without it."""
    if config.listeners and config.listeners.strip():
        return parse_listeners(config.listeners, config.listener_security_protocol_map)
    return (Listener(IMPLICIT_LISTENER, config.host, config.port, SecurityProtocol.PLAINTEXT),)


def _server_tls_context(config: BrokerConfig) -> ssl.SSLContext:
    if not config.ssl_certfile:
        raise ValueError("an SSL or SASL_SSL listener needs ssl.certfile (and ssl.keyfile unless the key is in it)")
    return server_context(certfile=config.ssl_certfile, keyfile=config.ssl_keyfile,
                          keyfile_password=config.ssl_keyfile_password, cafile=config.ssl_cafile,
                          client_auth=config.ssl_client_auth)


def server_listeners(config: BrokerConfig) -> tuple[ServerListener, ...]:
    """The listeners to bind, TLS contexts loaded (one context shared by every TLS listener)."""
    listeners = configured_listeners(config)
    context = _server_tls_context(config) if any(lst.uses_tls for lst in listeners) else None
    return tuple(ServerListener(lst, context if lst.uses_tls else None) for lst in listeners)


def advertised_endpoints(config: BrokerConfig, bound_ports: Mapping[str, int]) -> tuple[Endpoint, ...]:
    """Every listener's address for clients, in the order of the listeners (see the module docstring)."""
    listeners = configured_listeners(config)
    if not (config.listeners and config.listeners.strip()):
        host, port = config.advertised_host_port
        if not config.advertised_listener and config.port == 0:
            port = bound_ports.get(IMPLICIT_LISTENER, port)
        return (Endpoint(IMPLICIT_LISTENER, host, port, str(SecurityProtocol.PLAINTEXT)),)
    bound = tuple(replace(lst, port=bound_ports.get(lst.name, lst.port)) if lst.port == 0 else lst
                  for lst in listeners)
    advertised = parse_advertised_listeners(config.advertised_listeners, bound,
                                            config.listener_security_protocol_map)
    return tuple(lst.to_endpoint() for lst in advertised)


def inter_broker_listener_name(config: BrokerConfig) -> str:
    """``inter.broker.listener.name`` (upper-cased), else the first listener."""
    listeners = configured_listeners(config)
    name = (config.inter_broker_listener_name or "").strip().upper()
    if not name:
        return listeners[0].name
    if name not in {lst.name for lst in listeners}:
        known = ", ".join(lst.name for lst in listeners)
        raise ValueError(f"inter.broker.listener.name: {name} is not a listener (listeners: {known})")
    return name


def inter_broker_security(config: BrokerConfig) -> ClientSecurity:
    """The security of this broker's connections to the other brokers' inter-broker listener."""
    name = inter_broker_listener_name(config)
    listener = next(lst for lst in configured_listeners(config) if lst.name == name)
    protocol = listener.security_protocol
    if protocol.uses_sasl and (not config.inter_broker_sasl_username or config.inter_broker_sasl_password is None):
        raise ValueError(f"the inter-broker listener {name} is {protocol}: set inter.broker.sasl.username and "
                         f"inter.broker.sasl.password (the broker's own credentials)")
    return ClientSecurity.from_settings(
        security_protocol=str(protocol), sasl_mechanism=config.sasl_mechanism_inter_broker_protocol,
        sasl_username=config.inter_broker_sasl_username, sasl_password=config.inter_broker_sasl_password,
        ssl_cafile=config.ssl_cafile, ssl_certfile=config.ssl_certfile if protocol.uses_tls else None,
        ssl_keyfile=config.ssl_keyfile if protocol.uses_tls else None,
        ssl_keyfile_password=config.ssl_keyfile_password,
        ssl_endpoint_identification_algorithm=config.ssl_endpoint_identification_algorithm)


def sasl_config(config: BrokerConfig) -> SaslConfig:
    return SaslConfig(enabled_mechanisms=tuple(config.sasl_enabled_mechanisms.split(",")),
                      max_receive_size=config.sasl_server_max_receive_size,
                      connections_max_reauth_ms=config.connections_max_reauth_ms)


def new_authorizer(config: BrokerConfig) -> Authorizer:
    return Authorizer(super_users=config.super_users,
                      allow_everyone_if_no_acl_found=config.allow_everyone_if_no_acl_found)


def check_security_settings(config: BrokerConfig) -> None:
    """Every cross-check of the security settings; ValueError naming the setting.  (The bounds of
    single settings are their declarations' validators, :mod:`broker.config.settings`.)"""
    listeners = configured_listeners(config)
    advertised_endpoints(config, {})
    if any(lst.uses_tls for lst in listeners):
        _server_tls_context(config)
    elif config.ssl_client_auth.strip().lower() not in ("none", "requested", "required"):
        raise ValueError(f"ssl.client.auth: expected none, requested or required, got {config.ssl_client_auth!r}")
    enabled = sasl_config(config).enabled_mechanisms
    parse_super_users(config.super_users)
    if config.sasl_users_file:
        load_users_file(config.sasl_users_file)
    name = inter_broker_listener_name(config)
    inter = next(lst for lst in listeners if lst.name == name)
    mechanism = config.sasl_mechanism_inter_broker_protocol.strip().upper()
    if mechanism not in SUPPORTED_MECHANISMS:
        raise ValueError(f"sasl.mechanism.inter.broker.protocol: unsupported mechanism {mechanism!r}")
    if inter.uses_sasl and mechanism not in enabled:
        raise ValueError(f"sasl.mechanism.inter.broker.protocol {mechanism} is not in sasl.enabled.mechanisms")
    if config.cluster:
        inter_broker_security(config)
