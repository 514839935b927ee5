"""Builds the optional compiled record codec (``protocol/_crecords.pyx``) at install time.

Everything else is declared in ``pyproject.toml``.  When Cython or a C compiler is missing, or
the extension fails to build, the install goes on without it and ``protocol.records`` uses its
pure-Python loops (``protocol.records.COMPILED`` says which one is in use).
"""

from __future__ import annotations

import sys
from typing import Any

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext


class OptionalBuildExt(build_ext):
    """``build_ext`` that warns instead of failing: the compiled codec is an optimisation."""

    def run(self) -> None:
        try:
            super().run()
        except Exception as exc:  # no compiler, no Python headers, ...
            _skipped(exc)

    def build_extension(self, ext: Any) -> None:
        try:
            super().build_extension(ext)
        except Exception as exc:
            _skipped(exc)


def _skipped(exc: BaseException) -> None:
    print(f"kbroker: the compiled record codec was not built ({exc}); the pure-Python one is used",
          file=sys.stderr)


def _extensions() -> list[Extension]:
    try:
        from Cython.Build import cythonize
    except ImportError:
        _skipped(ImportError("Cython is not installed"))
        return []
    try:
        return cythonize([Extension("protocol._crecords", ["protocol/_crecords.pyx"])],  # type: ignore[no-any-return]
                         compiler_directives={"language_level": "3"}, quiet=True)
    except Exception as exc:
        _skipped(exc)
        return []


setup(ext_modules=_extensions(), cmdclass={"build_ext": OptionalBuildExt})
