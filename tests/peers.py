"""Test peers: the outside programs some tests drive (kcat, prometheus, node with kafkajs, etcd,
Chromium and its WebDriver).

``tests/setup_tools.sh`` installs them.  A test whose peer is missing skips and says why —
except in CI (``CI=true``), where it fails instead: a CI run must exercise every peer rather
than pass by skipping.  This module is the one place that rule lives; ``tests/conftest.py``
puts this directory on the import path, so any test module can ``from peers import ...``.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any, NoReturn

import pytest

SETUP_HINT = "run `bash tests/setup_tools.sh`, which installs it"
NODE_DIR = Path(__file__).resolve().parent / "node"


def strict() -> bool:
    """True in CI (``CI=true``, as CI services set it): missing peers fail the run."""
    return os.environ.get("CI", "").strip().lower() in ("true", "1", "yes")


def peer_missing(message: str) -> NoReturn:
    """Skip the current test because a peer is missing — or fail it in CI."""
    if strict():
        pytest.fail(f"{message} [CI=true: a missing test peer fails the run]", pytrace=False)
    pytest.skip(message)


def require_tool(name: str, hint: str = SETUP_HINT) -> str:
    """The path of executable ``name``; skips (fails in CI) when it is not installed."""
    path = shutil.which(name)
    if path is None:
        peer_missing(f"{name} is not installed ({hint})")
    return path


def require_etcd() -> str:
    """The ``etcd`` executable (the cluster tests' metadata store)."""
    return require_tool("etcd", "Debian package etcd-server; tests/setup_tools.sh installs it")


def require_kafkajs() -> str:
    """The ``node`` executable, once kafkajs is installed under ``tests/node``."""
    node = require_tool("node")
    if not (NODE_DIR / "node_modules" / "kafkajs").is_dir():
        peer_missing(f"kafkajs is not installed in {NODE_DIR / 'node_modules'} ({SETUP_HINT})")
    return node


def require_chromium() -> tuple[str, str]:
    """``(chromium, chromedriver)``: Debian's browser and its WebDriver (the console's browser tests)."""
    hint = "Debian packages chromium and chromium-driver; tests/setup_tools.sh installs them"
    return require_tool("chromium", hint), require_tool("chromedriver", hint)


def compiled_codec() -> Any:
    """The compiled record codec module ``protocol._crecords`` (built by ``pip install -e .`` with
    Cython); skips — fails under ``CI=true`` — when it is not built."""
    try:
        from protocol import _crecords
    except ImportError:
        peer_missing("the compiled record codec is not built (pip install -e . builds it with Cython)")
    return _crecords
