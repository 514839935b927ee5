"""Suite-wide test setup: the shared helper modules of ``tests/`` are importable everywhere, and
messages are encoded strictly.

``peers`` (test peers: skip when missing, fail in CI) lives here, next to this file; every test
package imports it as ``from peers import ...``.

Strict encoding (:func:`protocol.schema.set_strict`): a dict handed to the encoder with a key no
version of its message has a field for raises :class:`~protocol.errors.UnknownFieldError` instead of
being dropped.  It is on in this process and, through the environment, in every broker or client
process a test starts; each refusal is also written to a log that the fixture below reads after
every test, so a refusal a broker turned into a closed connection still fails the test that caused
it.  (A test whose refusals are the point removes ``KB_STRICT_MESSAGES_LOG`` from its
environment.)
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from protocol import schema

_TESTS_DIR = str(Path(__file__).resolve().parent)
if _TESTS_DIR not in sys.path:
    sys.path.insert(0, _TESTS_DIR)

_fd, _log_name = tempfile.mkstemp(prefix="kbroker-strict-messages-", suffix=".log")
os.close(_fd)
STRICT_LOG = Path(_log_name)
os.environ[schema.STRICT_ENV] = "1"
os.environ[schema.STRICT_LOG_ENV] = str(STRICT_LOG)
schema.set_strict(True)
_reported = 0


def _new_refusals() -> str:
    global _reported
    with STRICT_LOG.open("rb") as f:
        f.seek(_reported)
        data = f.read()
    _reported += len(data)
    return data.decode("utf-8", "replace")


@pytest.fixture(autouse=True)
def _strict_messages() -> Iterator[None]:
    """Fail the test when any process encoded a message with a key its message has no field for."""
    _new_refusals()  # refusals from before this test were reported already
    yield
    refused = _new_refusals()
    if refused:
        pytest.fail(f"strict message encoding refused:\n{refused}", pytrace=False)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    refused = _new_refusals()
    if refused:  # written after the last test (a session-scoped broker stopping)
        sys.stderr.write(f"\nstrict message encoding refused after the last test:\n{refused}")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    STRICT_LOG.unlink(missing_ok=True)
