"""Log lines: levelled, with key=value context (bound or per call), JSON on request, secrets redacted."""

from __future__ import annotations

import asyncio
import io
import json
import logging

import pytest

from broker.observability.logging_setup import REDACTED, bind, configure_logging


@pytest.fixture
def captured(monkeypatch):
    root = logging.getLogger()
    saved = (root.handlers[:], root.level)

    def setup(fmt: str = "text", level: str = "INFO") -> io.StringIO:
        stream = io.StringIO()
        monkeypatch.setattr("sys.stderr", stream)
        configure_logging(level, fmt)
        return stream

    yield setup
    root.handlers[:] = saved[0]
    root.setLevel(saved[1])


def test_text_lines_carry_level_logger_and_context(captured):
    out = captured("text")
    log = logging.getLogger("kbroker.group")
    with bind(conn="10.0.0.7:5123", client_id="billing app"):
        log.info("member joined", extra={"ctx": {"group": "g1", "sasl_password": "hunter2"}})
    log.debug("not shown at INFO")
    line = out.getvalue().strip()
    assert " INFO    kbroker.group member joined " in line
    assert 'conn=10.0.0.7:5123 client_id="billing app" group=g1' in line
    assert f"sasl_password={REDACTED}" in line and "hunter2" not in line
    assert "not shown" not in out.getvalue()


def test_json_lines_and_context_in_tasks(captured):
    out = captured("json", "DEBUG")
    log = logging.getLogger("kbroker.server")

    async def handler() -> None:
        log.warning("slow request", extra={"ctx": {"api": "Fetch", "token": "abc"}})

    async def main() -> None:
        with bind(conn="peer:1"):
            await asyncio.get_running_loop().create_task(handler())  # tasks inherit the bound context

    asyncio.run(main())
    record = json.loads(out.getvalue().strip().splitlines()[-1])
    assert record["level"] == "WARNING" and record["logger"] == "kbroker.server" and record["msg"] == "slow request"
    assert record["conn"] == "peer:1" and record["api"] == "Fetch" and record["token"] == REDACTED


def test_context_is_unbound_after_the_block(captured):
    out = captured("text")
    with bind(group="g"):
        pass
    logging.getLogger("kbroker").error("plain")
    assert out.getvalue().strip().endswith("kbroker plain")
