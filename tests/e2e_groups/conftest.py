"""Fixtures for the group-coordinator end-to-end tests; helpers are in ``groups_e2e.py``."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from groups_e2e import BrokerProcess, ConsumerProcess, ConsumerThread


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    """One subprocess broker per test module (tests use distinct group ids and topics)."""
    b = BrokerProcess(tmp_path_factory.mktemp("e2e-groups") / "data").start()
    try:
        yield b
    finally:
        b.stop()


@pytest.fixture
def consumers() -> Iterator[list[ConsumerThread]]:
    """A list tests append their consumers to; every consumer still running is closed afterwards."""
    started: list[ConsumerThread] = []
    yield started
    for c in started:
        if c.is_alive():
            c._stop_event.set()
    for c in started:
        c.closed.wait(30)


@pytest.fixture
def processes() -> Iterator[list[ConsumerProcess]]:
    started: list[ConsumerProcess] = []
    yield started
    # graceful close (dynamic members send LeaveGroup), so that no group of a finished test is
    # still rebalancing on the module's broker while the next test runs
    for p in started:
        if p.alive() and p.proc is not None:
            p.proc.terminate()
    for p in started:
        p.terminate()
