"""The request path's compiled modules (protocol/compiled.py): loaded only for the source they were built from.

The rest of the suite runs against whatever the install built (in CI: every listed module compiled);
these tests check the import hook itself on a module compiled here, and that an install in CI
compiled them all.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from protocol import compiled

SUFFIX = importlib.machinery.EXTENSION_SUFFIXES[0]
ROOT = Path(__file__).resolve().parents[2]


def _have_cython() -> bool:
    try:
        import Cython  # noqa: F401
    except ImportError:
        return False
    return shutil.which(os.environ.get("CC", "cc")) is not None or shutil.which("gcc") is not None


def test_every_listed_module_exists_as_source() -> None:
    for name in compiled.MODULES:
        assert (ROOT / (name.replace(".", "/") + ".py")).is_file(), name


def test_an_install_in_ci_compiled_every_listed_module() -> None:
    if os.environ.get("CI") != "true":
        pytest.skip("only an install in CI must have compiled them (elsewhere an edited module runs as Python)")
    assert compiled.missing() == []


def test_kbroker_pure_python_keeps_every_module_in_python() -> None:
    code = ("import importlib, protocol.compiled as c; [importlib.import_module(m) for m in c.MODULES]; "
            "print(len(c.in_use()))")
    env = {**os.environ, compiled.PURE_PYTHON_ENV: "1"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "0"
    env.pop(compiled.PURE_PYTHON_ENV)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True, cwd=ROOT)
    code_missing = "import protocol.compiled as c; print(len(c.MODULES) - len(c.missing()))"
    expected = subprocess.run([sys.executable, "-c", code_missing], env=env, capture_output=True, text=True,
                              check=True, cwd=ROOT).stdout.strip()
    assert out.stdout.strip() == expected


@pytest.mark.skipif(not _have_cython(), reason="needs Cython and a C compiler")
def test_the_hook_loads_a_compiled_twin_only_for_its_own_source(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    pkg = tmp_path / "kbc_probe"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    source = pkg / "mod.py"
    source.write_text("def where() -> str:\n    return 'one'\n")
    subprocess.run([sys.executable, "-m", "Cython.Build.Cythonize", "-q", "-3", "-i", str(source)],
                   check=True, cwd=tmp_path, capture_output=True)
    built = [p for p in pkg.iterdir() if p.name.startswith("mod.") and p.name.endswith(SUFFIX)]
    assert len(built) == 1
    built[0].rename(compiled.compiled_path(str(source)))

    finder = compiled._CompiledFinder(frozenset({"kbc_probe.mod"}))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(sys, "meta_path", [finder, *sys.meta_path])
    for name in ("kbc_probe", "kbc_probe.mod"):
        monkeypatch.delitem(sys.modules, name, raising=False)

    mod = importlib.import_module("kbc_probe.mod")
    assert mod.__file__ is not None and mod.__file__.endswith(SUFFIX)
    assert mod.where() == "one"

    # the source edited after the build: its compiled twin is not the module any more
    source.write_text("def where() -> str:\n    return 'two'\n")
    del sys.modules["kbc_probe.mod"]
    importlib.invalidate_caches()
    mod = importlib.import_module("kbc_probe.mod")
    assert mod.__file__ == str(source)
    assert mod.where() == "two"
