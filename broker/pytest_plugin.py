"""pytest plugin: fixtures that give a test a running in-process broker.

Installed with the package (entry point ``pytest11``), so any test suite can use::

    def test_my_consumer(kbroker):
        bootstrap = kbroker.bootstrap_servers
        kbroker.faults.inject("Fetch", error_code=6, times=2)

``kbroker`` is a fresh :class:`broker.BrokerThread` per test with a temporary
data directory; ``kbroker_session`` is one broker shared by the whole session.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from broker.embedded import BrokerThread


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
