"""The request path's modules compiled from their own source, and the import hook that loads them.

The modules in :data:`MODULES` (the codecs; in the broker the connection, the dispatcher, the hot
handlers, the group coordinator, the replica manager and the log) are plain Python.  The install
(``setup.py``) also compiles each with Cython — the same source, nothing rewritten or skipped —
into ``<module>.<tag>.<ABI suffix>`` beside its ``.py``, where the tag is a hash of that source.
The hook installed by :func:`install` (the ``protocol`` package does it on import, before any
of these modules can be imported) loads that file when the tag matches the ``.py`` as it is now,
and the ``.py`` otherwise: a compiled module never stands in for a source edited after the build,
and a machine without a compiler runs the same code in pure Python.

``KBROKER_PURE_PYTHON=1`` turns the hook off (profilers such as py-spy only see Python frames);
``KBROKER_PURE_PYTHON=broker.log.segment,...`` keeps just the modules named as Python.
:func:`in_use` says which modules run compiled in this process.
"""

from __future__ import annotations

import hashlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
from collections.abc import Sequence
from types import ModuleType

#: the modules compiled at install time (dotted names); the rest of the project is imported as source.
#: Code that is mostly short coroutines awaiting each other runs slower compiled (a Cython coroutine
#: costs more to create and resume than CPython's own), so our client and the ShareFetch path (the
#: share-partition manager, its sessions and the persister's writes) are left out: benchmarks/RESULTS.md,
#: "the request path compiled", has the measurements behind this list.
MODULES: tuple[str, ...] = (
    "protocol.api",
    "protocol.framing",
    "protocol.primitives",
    "protocol.records",
    "protocol.schema",
    "protocol.timing_wheel",
    "broker.network.server",
    "broker.handlers.authorization",
    "broker.handlers.common",
    "broker.handlers.consumer_group_heartbeat",
    "broker.handlers.context",
    "broker.handlers.dispatch",
    "broker.handlers.fetch",
    "broker.handlers.heartbeat",
    "broker.handlers.join_group",
    "broker.handlers.metadata",
    "broker.handlers.offset_commit",
    "broker.handlers.produce",
    "broker.handlers.share_group_heartbeat",
    "broker.handlers.sync_group",
    "broker.coordinator.runtime",
    "broker.coordinator.group.consumer_group",
    "broker.coordinator.group.coordinator",
    "broker.coordinator.group.group_configs",
    "broker.coordinator.group.group_records",
    "broker.coordinator.group.membership",
    "broker.coordinator.group.service",
    "broker.coordinator.group.timers",
    "broker.coordinator.group.share_apis",
    "broker.coordinator.group.share_group",
    "broker.coordinator.group.share_service",
    "broker.coordinator.group.writes",
    "broker.cluster.internal_topics",
    "broker.cluster.metadata",
    "broker.replication.partition",
    "broker.replication.purgatory",
    "broker.replication.replica_manager",
    "broker.log.config",
    "broker.log.dir_failure",
    "broker.log.epoch_cache",
    "broker.log.index",
    "broker.log.partition_log",
    "broker.log.producer_state",
    "broker.log.recompress",
    "broker.log.segment",
    "broker.log.validation",
    "broker.observability.metrics",
)

#: the environment variable that keeps every module in pure Python
PURE_PYTHON_ENV = "KBROKER_PURE_PYTHON"

_SUFFIX = importlib.machinery.EXTENSION_SUFFIXES[0]  # e.g. ".cpython-311-x86_64-linux-gnu.so"


def source_tag(source: bytes) -> str:
    """The tag a compiled module's file name carries: a hash of the source it was compiled from."""
    return "kbc" + hashlib.sha256(source).hexdigest()[:16]


def compiled_path(source_path: str) -> str:
    """Where the compiled twin of the ``.py`` at ``source_path`` is, as that source is now."""
    with open(source_path, "rb") as f:
        tag = source_tag(f.read())
    stem = source_path[:-3]
    return f"{stem}.{tag}{_SUFFIX}"


class _CompiledFinder(importlib.abc.MetaPathFinder):
    """Finds a listed module's compiled twin when it was built from the source as it is now."""

    def __init__(self, names: frozenset[str]) -> None:
        self.names = names

    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if fullname not in self.names or not path:
            return None
        leaf = fullname.rpartition(".")[2]
        for directory in path:
            source = os.path.join(directory, leaf + ".py")
            try:
                compiled = compiled_path(source)
            except OSError:
                continue
            if not os.path.exists(compiled):
                return None  # not built, or built from another version of the source: the .py
            loader = importlib.machinery.ExtensionFileLoader(fullname, compiled)
            return importlib.util.spec_from_file_location(fullname, compiled, loader=loader)
        return None


_FINDER = _CompiledFinder(frozenset(MODULES))


def install() -> None:
    """Put the hook first on ``sys.meta_path`` (once), unless ``KBROKER_PURE_PYTHON`` is ``1`` (every
    module as Python); a comma-separated list of module names there keeps just those as Python."""
    pure = os.environ.get(PURE_PYTHON_ENV, "").strip()
    if pure == "1" or _FINDER in sys.meta_path:
        return
    if pure not in ("", "0"):
        _FINDER.names = _FINDER.names - {name.strip() for name in pure.split(",")}
    sys.meta_path.insert(0, _FINDER)


def in_use() -> list[str]:
    """The listed modules imported in this process that run compiled."""
    return [name for name in MODULES
            if (mod := sys.modules.get(name)) is not None and str(getattr(mod, "__file__", "")).endswith(_SUFFIX)]


def missing() -> list[str]:
    """The listed modules that would be imported as Python here (not built, or built from other source)."""
    out = []
    for name in MODULES:
        spec = importlib.util.find_spec(name)
        if spec is None or not str(spec.origin or "").endswith(_SUFFIX):
            out.append(name)
    return out
