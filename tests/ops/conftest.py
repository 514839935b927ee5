"""Fixtures of the operations tests (helpers live in ``ops_helpers``)."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from ops_helpers import free_port

from broker import BrokerThread


@pytest.fixture
def fast_data_dir(tmp_path: Path) -> Iterator[str]:
    """A data dir on tmpfs when there is one (fsync-heavy topic creation is ~10x faster there)."""
    shm = Path("/dev/shm")
    if shm.is_dir() and os.access(shm, os.W_OK):
        path = tempfile.mkdtemp(prefix="kbroker-ops-", dir=shm)
        try:
            yield path
        finally:
            shutil.rmtree(path, ignore_errors=True)
    else:
        yield str(tmp_path / "data")


@pytest.fixture
def metrics_broker(tmp_path: Path) -> Iterator[tuple[BrokerThread, int]]:
    """A broker with /metrics on a free port: ``(broker, metrics_port)``."""
    port = free_port()
    with BrokerThread(data_dir=str(tmp_path / "data"), metrics_port=port, metrics_host="127.0.0.1") as broker:
        yield broker, port
