"""pytest plugin: fixtures that give a test a running in-process broker.

Installed with the package (entry point ``pytest11``), so any test suite can use::

    def test_my_consumer(kbroker):
        bootstrap = kbroker.bootstrap_servers
        kbroker.faults.inject("Fetch", error_code=6, times=2)

``kbroker`` is a fresh :class:`broker.BrokerThread` per test with a temporary
data directory; ``kbroker_session`` is one broker shared by the whole session;
``kbroker_cluster`` is etcd and three brokers as real processes
(:class:`broker.testing.harness.KBrokerCluster`), for testing against broker failures.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from broker.testing.embedded import BrokerThread
from broker.testing.harness import EtcdServer, KBrokerCluster


@pytest.fixture
def kbroker(tmp_path: Path) -> Iterator[BrokerThread]:
    """A broker on a free port with its data in ``tmp_path``; stopped after the test."""
    with BrokerThread(data_dir=str(tmp_path / "kbroker-data"), port=0, group_initial_rebalance_delay_ms=0) as broker:
        yield broker


@pytest.fixture(scope="session")
def kbroker_session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerThread]:
    """One broker shared by every test of the session."""
    data = tmp_path_factory.mktemp("kbroker-session")
    with BrokerThread(data_dir=str(data), port=0, group_initial_rebalance_delay_ms=0) as broker:
        yield broker


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "kbroker_cluster(size=3, settings=None): options of the kbroker_cluster "
                                       "fixture (number of brokers, broker settings)")


@pytest.fixture
def kbroker_cluster(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[KBrokerCluster]:
    """etcd and three brokers (node ids 1-3) as real processes; stopped after the test.

    ``kill(node)`` SIGKILLs a broker, ``restart(node)`` starts it again on its data directory,
    ``bootstrap_servers`` lists the brokers; ``@pytest.mark.kbroker_cluster(size=5, settings={...})``
    changes the size and passes settings to every broker.  Skips when etcd is not installed.
    """
    marker = request.node.get_closest_marker("kbroker_cluster")
    size = marker.kwargs.get("size", 3) if marker else 3
    settings = marker.kwargs.get("settings") if marker else None
    if EtcdServer.binary() is None:
        pytest.skip("kbroker_cluster needs etcd (Debian package etcd-server)")
    with KBrokerCluster(size, tmp_path / "kbroker-cluster", settings=settings) as cluster:
        yield cluster
