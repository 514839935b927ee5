"""Listener settings: ``listeners``, ``advertised.listeners`` and ``listener.security.protocol.map``.

Kafka's forms, parsed into typed :class:`Listener` values (pure; nothing is bound here)::

    listeners=PLAINTEXT://127.0.0.1:9092,SSL://host:9093,SASL_PLAINTEXT://[::1]:9094,SASL_SSL://:9095
    listener.security.protocol.map=INTERNAL:SASL_SSL,EXTERNAL:SSL

* A listener is ``NAME://host:port``.  An empty host (``SSL://:9093``) or ``0.0.0.0`` / ``::`` binds
  every interface; IPv6 addresses go in brackets.  Names are case-insensitive (kept upper-case).
* A listener's security protocol comes from the protocol map.  The four protocol names always map to
  themselves, so ``PLAINTEXT://``, ``SSL://``, ``SASL_PLAINTEXT://`` and ``SASL_SSL://`` need no map;
  a custom name (``INTERNAL://``) must be in ``listener.security.protocol.map``, whose entries also
  override the defaults.  (Kafka replaces its default map when the setting is given; extending it
  instead accepts everything Kafka accepts.)
* Every listener needs its own port, as in Kafka; port 0 (an ephemeral port, for tests) may repeat.
* ``advertised.listeners`` uses the same form; each name must be a listener's, ports may repeat
  (several listeners can sit behind one proxy port) and the host must be routable.  Listeners it does
  not name advertise their own address, with a wildcard host replaced by ``default_host``.

Malformed input raises :class:`ValueError` with a message that names the setting and the entry.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any

__all__ = [
    "Endpoint",
    "Listener",
    "SecurityProtocol",
    "parse_advertised_listeners",
    "parse_listeners",
    "parse_security_protocol_map",
]


@dataclass(frozen=True, slots=True)
class Endpoint:
    """One listener of a broker as advertised (in its registration): ``listener`` is its name (PLAINTEXT, SSL, ...)."""

    listener: str
    host: str
    port: int
    security_protocol: str = "PLAINTEXT"

    def to_json(self) -> dict[str, Any]:
        return {"listener": self.listener, "host": self.host, "port": self.port,
                "security_protocol": self.security_protocol}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Endpoint:
        return cls(str(d["listener"]), str(d["host"]), int(d["port"]), str(d.get("security_protocol", "PLAINTEXT")))


class SecurityProtocol(StrEnum):
    """Kafka's security protocols (``SecurityProtocol.java``)."""

    PLAINTEXT = "PLAINTEXT"
    SSL = "SSL"
    SASL_PLAINTEXT = "SASL_PLAINTEXT"
    SASL_SSL = "SASL_SSL"

    @property
    def uses_tls(self) -> bool:
        return self in (SecurityProtocol.SSL, SecurityProtocol.SASL_SSL)

    @property
    def uses_sasl(self) -> bool:
        return self in (SecurityProtocol.SASL_PLAINTEXT, SecurityProtocol.SASL_SSL)


_WILDCARD_HOSTS = frozenset(("", "0.0.0.0", "::"))
_NAME = r"[A-Za-z0-9_-]+"
_ENTRY = re.compile(rf"^(?P<name>{_NAME})://(?P<host>\[[^\]]*\]|[^\[\]/\s]*?)(?::(?P<port>[^:\]]*))?$")


@dataclass(frozen=True, slots=True)
class Listener:
    """One listener: where to bind (or what to advertise) and how connections on it are secured."""

    name: str
    host: str
    port: int
    security_protocol: SecurityProtocol

    @property
    def uses_tls(self) -> bool:
        return self.security_protocol.uses_tls

    @property
    def uses_sasl(self) -> bool:
        return self.security_protocol.uses_sasl

    @property
    def binds_all_interfaces(self) -> bool:
        return self.host in _WILDCARD_HOSTS

    @property
    def bind_host(self) -> str | None:
        """The host for ``asyncio.start_server``: None (every interface) for an empty host."""
        return self.host or None

    def to_endpoint(self) -> Endpoint:
        """The broker-registration form of this (advertised) listener."""
        return Endpoint(self.name, self.host, self.port, str(self.security_protocol))

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.name}://{host}:{self.port}"


def _entries(value: str | Iterable[str] | None) -> list[str]:
    if value is None:
        return []
    items = value.split(",") if isinstance(value, str) else list(value)
    return [item.strip() for item in items if item.strip()]


def parse_security_protocol_map(value: str | Mapping[str, str] | None) -> dict[str, SecurityProtocol]:
    """``NAME:PROTOCOL,...`` (or a mapping) merged over the identity map of the four protocols."""
    result = {p.value: p for p in SecurityProtocol}
    if value is None:
        return result
    pairs: list[tuple[str, str]] = []
    if isinstance(value, Mapping):
        pairs = [(str(k), str(v)) for k, v in value.items()]
    else:
        for entry in _entries(value):
            name, sep, proto = entry.partition(":")
            if not sep or not name.strip() or not proto.strip():
                raise ValueError(f"listener.security.protocol.map: expected NAME:PROTOCOL, got {entry!r}")
            pairs.append((name, proto))
    seen: set[str] = set()
    for raw_name, raw_proto in pairs:
        name, proto = raw_name.strip().upper(), raw_proto.strip().upper()
        if not re.fullmatch(_NAME, name):
            raise ValueError(f"listener.security.protocol.map: invalid listener name {raw_name!r}")
        if name in seen:
            raise ValueError(f"listener.security.protocol.map: listener {name} is mapped twice")
        seen.add(name)
        try:
            result[name] = SecurityProtocol(proto)
        except ValueError:
            known = ", ".join(p.value for p in SecurityProtocol)
            raise ValueError(f"listener.security.protocol.map: unknown security protocol {raw_proto!r} "
                             f"for listener {name} (known: {known})") from None
    return result


def _parse_entry(setting: str, entry: str, protocols: Mapping[str, SecurityProtocol]) -> Listener:
    m = _ENTRY.match(entry)
    if m is None:
        raise ValueError(f"{setting}: expected NAME://host:port, got {entry!r}")
    name, host, port_text = m["name"].upper(), m["host"], m["port"]
    if not port_text:
        raise ValueError(f"{setting}: missing port in {entry!r}")
    if not port_text.isdigit() or int(port_text) > 65535:
        raise ValueError(f"{setting}: invalid port {port_text!r} in {entry!r} (0-65535)")
    if host.startswith("["):
        host = host[1:-1]
        try:
            if ipaddress.ip_address(host).version != 6:
                raise ValueError
        except ValueError:
            raise ValueError(f"{setting}: invalid IPv6 address [{host}] in {entry!r}") from None
    elif ":" in host:
        raise ValueError(f"{setting}: IPv6 addresses go in brackets, got {entry!r}")
    protocol = protocols.get(name)
    if protocol is None:
        raise ValueError(f"{setting}: no security protocol for listener {name} in {entry!r}; "
                         f"add it to listener.security.protocol.map (e.g. {name}:SASL_SSL)")
    return Listener(name, host, int(port_text), protocol)


def parse_listeners(value: str | Iterable[str] | None,
                    protocol_map: str | Mapping[str, str] | None = None) -> tuple[Listener, ...]:
    """The ``listeners`` setting; an empty or missing value gives no listeners (the caller's default)."""
    protocols = parse_security_protocol_map(protocol_map)
    listeners: list[Listener] = []
    names: dict[str, str] = {}
    ports: dict[int, str] = {}
    for entry in _entries(value):
        listener = _parse_entry("listeners", entry, protocols)
        if listener.name in names:
            raise ValueError(f"listeners: listener name {listener.name} is used twice "
                             f"({names[listener.name]!r} and {entry!r})")
        if listener.port != 0 and listener.port in ports:
            raise ValueError(f"listeners: port {listener.port} is used twice "
                             f"({ports[listener.port]!r} and {entry!r}); each listener needs its own port")
        names[listener.name] = entry
        ports[listener.port] = entry
        listeners.append(listener)
    return tuple(listeners)


def parse_advertised_listeners(value: str | Iterable[str] | None, listeners: Sequence[Listener],
                               protocol_map: str | Mapping[str, str] | None = None,
                               default_host: str = "localhost") -> tuple[Listener, ...]:
    """What each listener advertises to clients, in the order of ``listeners``.

    Entries of ``advertised.listeners`` replace the address of the listener with the same name; the
    others advertise their bind address (``default_host`` for a wildcard host).
    """
    protocols = parse_security_protocol_map(protocol_map)
    by_name = {listener.name: listener for listener in listeners}
    advertised: dict[str, Listener] = {}
    for entry in _entries(value):
        listener = _parse_entry("advertised.listeners", entry, protocols)
        if listener.name not in by_name:
            known = ", ".join(by_name) or "none"
            raise ValueError(f"advertised.listeners: {listener.name} is not a listener (listeners: {known})")
        if listener.name in advertised:
            raise ValueError(f"advertised.listeners: listener {listener.name} is advertised twice")
        if listener.binds_all_interfaces:
            raise ValueError(f"advertised.listeners: {entry!r} must name a host clients can reach, "
                             f"not a wildcard address")
        advertised[listener.name] = listener
    return tuple(advertised.get(listener.name)
                 or (replace(listener, host=default_host) if listener.binds_all_interfaces else listener)
                 for listener in listeners)
