"""Fixtures for the cluster tests: an etcd server per test module, and a three-broker cluster per test
(both skipped, or failed under CI, without etcd).  Modules needing other settings define their own
``cluster``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from peers import require_etcd

from broker.testing.harness import EtcdServer, KBrokerCluster


@pytest.fixture(scope="module")
def etcd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EtcdServer]:
    require_etcd()
    server = EtcdServer(tmp_path_factory.mktemp("etcd"))
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[KBrokerCluster]:
    require_etcd()
    with KBrokerCluster(3, tmp_path / "cluster") as c:
        yield c
