"""Fixtures for the cluster tests: an etcd server per test module (skipped, or failed under CI, without etcd)."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from broker.harness import EtcdServer


def require_etcd() -> None:
    if EtcdServer.binary() is None:
        message = "etcd is not installed (Debian package etcd-server; tests/setup_tools.sh installs it)"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message)
        pytest.skip(message)


@pytest.fixture(scope="module")
def etcd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EtcdServer]:
    require_etcd()
    server = EtcdServer(tmp_path_factory.mktemp("etcd"))
    server.start()
    try:
        yield server
    finally:
        server.stop()
