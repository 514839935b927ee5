"""Builds the optional compiled parts at install time; everything else is declared in ``pyproject.toml``.

* the compiled record codec, ``protocol/_crecords.pyx`` (``protocol.records.COMPILED`` says
  whether it is in use);
* the request path's modules listed in ``protocol/compiled.py``, compiled with Cython from their
  own ``.py`` into ``<module>.<source hash>.<ABI suffix>`` (``protocol.compiled.in_use()`` says
  which run compiled).

When Cython or a C compiler is missing, or an extension fails to build, the install goes on
without it and that part runs in pure Python.  The C compiles run in parallel, one per core.
"""

from __future__ import annotations

import os
import shutil
import sys
from typing import Any

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from protocol.compiled import MODULES, compiled_path  # the source tree's own list and file names


def _source(module: str) -> str:
    return module.replace(".", "/") + ".py"


class OptionalBuildExt(build_ext):
    """``build_ext`` that warns instead of failing (the compiled parts are an optimisation) and names
    each compiled module's file after the source it was built from."""

    def finalize_options(self) -> None:
        super().finalize_options()
        if not self.parallel:
            self.parallel = os.cpu_count() or 1

    def run(self) -> None:
        try:
            super().run()
        except Exception as exc:  # no compiler, no Python headers, ...
            _skipped("the compiled parts", exc)

    def build_extension(self, ext: Any) -> None:
        try:
            if not self._reused(ext):
                super().build_extension(ext)
        except Exception as exc:
            _skipped(ext.name, exc)

    def _reused(self, ext: Any) -> bool:
        """A module already compiled in place from this very source (its file name says which) is
        copied to where the build wants it instead of being compiled again."""
        if ext.name not in MODULES:
            return False
        built = self.get_ext_filename(ext.name)
        target = self.get_ext_fullpath(ext.name)
        if not os.path.exists(built):
            return False
        if os.path.abspath(built) != os.path.abspath(target):
            os.makedirs(os.path.dirname(target) or ".", exist_ok=True)
            shutil.copyfile(built, target)
        return True

    def get_ext_filename(self, fullname: str) -> str:
        if fullname not in MODULES:
            return str(super().get_ext_filename(fullname))
        return compiled_path(_source(fullname))  # the name the import hook looks for

    def get_ext_fullpath(self, ext_name: str) -> str:
        if ext_name not in MODULES:
            return str(super().get_ext_fullpath(ext_name))
        filename = self.get_ext_filename(ext_name)
        if not self.inplace:
            return os.path.join(self.build_lib, filename)
        package_dir = self.get_finalized_command("build_py").get_package_dir(ext_name.rpartition(".")[0])
        return os.path.join(package_dir, os.path.basename(filename))


def _skipped(what: str, exc: BaseException) -> None:
    print(f"kbroker: {what} not built ({exc}); the pure-Python code is used", file=sys.stderr)


def _extensions() -> list[Extension]:
    try:
        from Cython.Build import cythonize
    except ImportError:
        _skipped("the compiled parts", ImportError("Cython is not installed"))
        return []
    extensions = [Extension("protocol._crecords", ["protocol/_crecords.pyx"])]
    # -O1 without debug info compiles in less than half the time of the default -O3 -g (one module: 13.6
    # against 32.2 s; how much speed that gives up was not measured); -w: the warnings are Cython's C's
    extensions += [Extension(m, [_source(m)], extra_compile_args=["-O1", "-g0", "-w"]) for m in MODULES]
    try:
        # Python semantics throughout: annotations are not C types, functions introspect as Python ones
        return cythonize(extensions, quiet=True, nthreads=os.cpu_count() or 1,  # type: ignore[no-any-return]
                         compiler_directives={"language_level": "3", "binding": True, "annotation_typing": False})
    except Exception as exc:
        _skipped("the compiled parts", exc)
        return []


setup(ext_modules=_extensions(), cmdclass={"build_ext": OptionalBuildExt})
