"""Tests for broker.security.listeners: listeners, advertised.listeners and the protocol map."""

from __future__ import annotations

import pytest

from broker.cluster.records import Endpoint
from broker.security.listeners import (
    Listener,
    SecurityProtocol,
    parse_advertised_listeners,
    parse_listeners,
    parse_security_protocol_map,
)

P = SecurityProtocol


def test_the_four_protocols_name_their_own_listeners() -> None:
    got = parse_listeners("PLAINTEXT://127.0.0.1:9092,SSL://host:9093,SASL_PLAINTEXT://[::1]:9094,"
                          "SASL_SSL://0.0.0.0:9095")
    assert got == (
        Listener("PLAINTEXT", "127.0.0.1", 9092, P.PLAINTEXT),
        Listener("SSL", "host", 9093, P.SSL),
        Listener("SASL_PLAINTEXT", "::1", 9094, P.SASL_PLAINTEXT),
        Listener("SASL_SSL", "0.0.0.0", 9095, P.SASL_SSL),
    )
    assert [(x.uses_tls, x.uses_sasl) for x in got] == [(False, False), (True, False), (False, True), (True, True)]
    assert [str(x) for x in got] == ["PLAINTEXT://127.0.0.1:9092", "SSL://host:9093", "SASL_PLAINTEXT://[::1]:9094",
                                     "SASL_SSL://0.0.0.0:9095"]


@pytest.mark.parametrize("value", ["SSL://h:9093", " SSL://h:9093 , ", ["SSL://h:9093"]])
def test_any_subset_spaces_and_lists(value: object) -> None:
    assert parse_listeners(value) == (Listener("SSL", "h", 9093, P.SSL),)  # type: ignore[arg-type]


@pytest.mark.parametrize("value", [None, "", " , "])
def test_unset_means_no_listeners(value: str | None) -> None:
    assert parse_listeners(value) == ()


def test_empty_host_binds_every_interface_and_names_are_case_insensitive() -> None:
    (listener,) = parse_listeners("ssl://:9093")
    assert listener == Listener("SSL", "", 9093, P.SSL)
    assert listener.bind_host is None and listener.binds_all_interfaces
    assert parse_listeners("SSL://h:1")[0].bind_host == "h"


def test_custom_names_come_from_the_protocol_map() -> None:
    got = parse_listeners("INTERNAL://10.0.0.1:9092,EXTERNAL://:9093,PLAINTEXT://:9094",
                          "INTERNAL:SASL_SSL, external:ssl")
    assert [(x.name, x.security_protocol) for x in got] == [
        ("INTERNAL", P.SASL_SSL), ("EXTERNAL", P.SSL), ("PLAINTEXT", P.PLAINTEXT)]
    assert parse_listeners("INTERNAL://h:1", {"internal": "sasl_plaintext"})[0].security_protocol is P.SASL_PLAINTEXT


def test_the_map_can_override_a_protocol_name() -> None:
    assert parse_listeners("PLAINTEXT://h:1", "PLAINTEXT:SSL")[0].security_protocol is P.SSL


@pytest.mark.parametrize(("value", "message"), [
    ("PLAINTEXT://h", "missing port"),
    ("PLAINTEXT://h:", "missing port"),
    ("PLAINTEXT://[::1]", "missing port"),
    ("PLAINTEXT://h:99999", "invalid port"),
    ("PLAINTEXT://h:-1", "invalid port"),
    ("PLAINTEXT://h:x", "invalid port"),
    ("h:9092", "expected NAME://host:port"),
    ("PLAINTEXT//h:9092", "expected NAME://host:port"),
    ("PLAIN TEXT://h:9092", "expected NAME://host:port"),
    ("PLAINTEXT://::1:9092", "IPv6 addresses go in brackets"),
    ("PLAINTEXT://my host:9092", "expected NAME://host:port"),
    ("PLAINTEXT://h:9092/x", "invalid port"),
    ("PLAINTEXT://[10.0.0.1]:9092", "invalid IPv6 address"),
    ("PLAINTEXT://[nope]:9092", "invalid IPv6 address"),
    ("INTERNAL://h:9092", "no security protocol for listener INTERNAL"),
    ("PLAINTEXT://a:9092,SSL://b:9092", "port 9092 is used twice"),
    ("PLAINTEXT://a:9092,plaintext://b:9093", "listener name PLAINTEXT is used twice"),
])
def test_malformed_listeners_are_explained(value: str, message: str) -> None:
    with pytest.raises(ValueError, match=message) as info:
        parse_listeners(value)
    assert str(info.value).startswith("listeners:")


def test_port_zero_may_repeat() -> None:
    assert [x.port for x in parse_listeners("PLAINTEXT://h:0,SSL://h:0")] == [0, 0]


@pytest.mark.parametrize(("value", "message"), [
    ("INTERNAL", "expected NAME:PROTOCOL"),
    ("INTERNAL:", "expected NAME:PROTOCOL"),
    ("INTERNAL:TLS", "unknown security protocol 'TLS'"),
    ("A:SSL,a:SSL", "mapped twice"),
    ("A B:SSL", "invalid listener name"),
])
def test_malformed_protocol_maps_are_explained(value: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_security_protocol_map(value)


def test_advertised_listeners_replace_addresses_by_name() -> None:
    listeners = parse_listeners("PLAINTEXT://0.0.0.0:9092,SSL://:9093,SASL_SSL://10.1.1.1:9095")
    got = parse_advertised_listeners("SSL://broker.example:443", listeners)
    assert got == (
        Listener("PLAINTEXT", "localhost", 9092, P.PLAINTEXT),  # wildcard: the default host
        Listener("SSL", "broker.example", 443, P.SSL),
        Listener("SASL_SSL", "10.1.1.1", 9095, P.SASL_SSL),
    )
    assert parse_advertised_listeners(None, listeners, default_host="b1")[0].host == "b1"


def test_advertised_ports_may_repeat_behind_a_proxy() -> None:
    listeners = parse_listeners("INTERNAL://:9092,EXTERNAL://:9093", "INTERNAL:SASL_SSL,EXTERNAL:SSL")
    got = parse_advertised_listeners("INTERNAL://proxy:443,EXTERNAL://proxy:443", listeners,
                                     "INTERNAL:SASL_SSL,EXTERNAL:SSL")
    assert [(x.name, x.port, x.security_protocol) for x in got] == [
        ("INTERNAL", 443, P.SASL_SSL), ("EXTERNAL", 443, P.SSL)]


@pytest.mark.parametrize(("value", "message"), [
    ("SASL_SSL://h:1", "SASL_SSL is not a listener"),
    ("SSL://0.0.0.0:1", "not a wildcard address"),
    ("SSL://:1", "not a wildcard address"),
    ("SSL://a:1,SSL://b:2", "advertised twice"),
    ("SSL://a", "missing port"),
])
def test_malformed_advertised_listeners_are_explained(value: str, message: str) -> None:
    listeners = parse_listeners("PLAINTEXT://:9092,SSL://:9093")
    with pytest.raises(ValueError, match=message) as info:
        parse_advertised_listeners(value, listeners)
    assert str(info.value).startswith("advertised.listeners:")


def test_a_listener_becomes_a_registration_endpoint() -> None:
    listener = parse_advertised_listeners("SSL://b.example:9093", parse_listeners("SSL://:9093"))[0]
    assert listener.to_endpoint() == Endpoint("SSL", "b.example", 9093, "SSL")
