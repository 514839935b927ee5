"""Fixtures for the cluster tests: an etcd server per test module (skipped, or failed under CI, without etcd)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from peers import require_etcd

from broker.harness import EtcdServer


@pytest.fixture(scope="module")
def etcd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EtcdServer]:
    require_etcd()
    server = EtcdServer(tmp_path_factory.mktemp("etcd"))
    server.start()
    try:
        yield server
    finally:
        server.stop()
