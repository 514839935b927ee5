"""Fixtures for the end-to-end suite: ``python -m broker`` as a real subprocess (see ``e2e_helpers``)."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
from e2e_helpers import BrokerProcess


@pytest.fixture
def broker_process(tmp_path: Path) -> Iterator[BrokerProcess]:
    """A fresh ``python -m broker`` per test; the test may kill and restart it."""
    bp = BrokerProcess(tmp_path / "data")
    bp.start()
    try:
        yield bp
    finally:
        if bp.alive():
            bp.stop()
        elif bp.proc is not None and bp.proc.returncode not in (0, -signal.SIGKILL):
            pytest.fail(f"broker died with {bp.proc.returncode}:\n{bp.log_tail()}")


@pytest.fixture(scope="module")
def shared_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    """One ``python -m broker`` for a whole test module (interop and hostile tests).

    After the module the broker must still be alive and must stop cleanly on SIGTERM.
    """
    bp = BrokerProcess(tmp_path_factory.mktemp("e2e") / "data")
    bp.start()
    yield bp
    assert bp.alive(), f"broker died during the module:\n{bp.log_tail()}"
    code = bp.stop()
    assert code == 0, f"broker exit code {code} after SIGTERM:\n{bp.log_tail()}"
