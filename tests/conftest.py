"""Suite-wide test setup: the shared helper modules of ``tests/`` are importable everywhere.

``peers`` (test peers: skip when missing, fail in CI) lives here, next to this file; every test
package imports it as ``from peers import ...``.
"""

from __future__ import annotations

import sys
from pathlib import Path

_TESTS_DIR = str(Path(__file__).resolve().parent)
if _TESTS_DIR not in sys.path:
    sys.path.insert(0, _TESTS_DIR)
