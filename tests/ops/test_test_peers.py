"""The test-peer rule: a missing peer skips its tests, except in CI (``CI=true``), where it fails
them, and ``tests/setup_tools.sh`` fails the run when it cannot install a peer."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from peers import peer_missing, require_tool

SETUP = Path(__file__).resolve().parents[1] / "setup_tools.sh"
ABSENT = "kbroker-no-such-peer"


def test_a_missing_peer_skips_outside_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="not installed"):
        require_tool(ABSENT)
    monkeypatch.setenv("CI", "false")
    with pytest.raises(pytest.skip.Exception):
        peer_missing("kafkajs is not installed")


@pytest.mark.parametrize("value", ["true", "TRUE", "1"])
def test_a_missing_peer_fails_in_ci(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("CI", value)
    with pytest.raises(pytest.fail.Exception, match=f"{ABSENT} is not installed"):
        require_tool(ABSENT)


def test_a_present_peer_is_found(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")
    assert require_tool("sh") == shutil.which("sh")


def _run_setup_without_peers(tmp_path: Path, ci: str | None) -> subprocess.CompletedProcess[str]:
    """The setup script on a PATH with none of the peers and no apt-get/npm to install them."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    dirname = shutil.which("dirname")
    assert dirname is not None
    (bin_dir / "dirname").symlink_to(dirname)
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env["PATH"] = str(bin_dir)
    if ci is not None:
        env["CI"] = ci
    bash = shutil.which("bash")
    assert bash is not None
    return subprocess.run([bash, str(SETUP)], env=env, capture_output=True, text=True, timeout=60)


def test_setup_fails_in_ci_when_a_peer_cannot_be_installed(tmp_path: Path) -> None:
    result = _run_setup_without_peers(tmp_path, "true")
    assert result.returncode != 0
    assert "kcat prometheus etcd node" in result.stderr


def test_setup_reports_and_succeeds_outside_ci(tmp_path: Path) -> None:
    result = _run_setup_without_peers(tmp_path, None)
    assert result.returncode == 0, result.stderr
    assert "etcd-server" in result.stdout  # what it would have installed
    assert "the tests that need them will skip" in result.stdout
