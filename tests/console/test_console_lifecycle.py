"""The console's place in the broker's life: an embedded broker serves it when given a listener (port 0:
any free port) and closes it when it stops; a console that cannot listen is reported and left off while
the broker serves Kafka clients all the same."""

from __future__ import annotations

import logging
import socket
import urllib.error
import urllib.request

import pytest

from broker.testing.embedded import BrokerThread


def test_an_embedded_broker_serves_its_console_and_closes_it(tmp_path) -> None:
    with BrokerThread(data_dir=str(tmp_path / "d"), console_listener="http://127.0.0.1:0") as broker:
        console = broker.core.console
        assert console is not None and console.bound is not None and console.bound[1] > 0
        with urllib.request.urlopen(console.url + "brokers", timeout=30) as response:
            assert response.status == 200 and b'id="broker-1"' in response.read()
        url = console.url
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(url, timeout=5)


def test_a_console_that_cannot_listen_is_left_off(tmp_path, caplog: pytest.LogCaptureFixture) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with caplog.at_level(logging.ERROR, logger="kbroker"), \
                BrokerThread(data_dir=str(tmp_path / "d"), console_listener=f"http://127.0.0.1:{port}") as broker:
            assert broker.core.console is None
            with socket.create_connection((broker.host, broker.port), timeout=10):
                pass  # Kafka clients are served
    assert f"the console cannot listen on http://127.0.0.1:{port}" in caplog.text
