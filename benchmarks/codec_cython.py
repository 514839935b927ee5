"""Would compiling the codecs' generated functions speed them up?  Measured, not assumed.

    .venv/bin/python benchmarks/codec_cython.py [--rounds 3]

``protocol/schema.py`` generates a parse and a build function for every message version and runs them
with ``exec``: they stay interpreted even in the compiled build (``protocol/compiled.py`` compiles the
modules they call — ``protocol.primitives``, ``protocol.schema`` — not them).  This writes the generated
source of a few hot messages into a scratch directory, compiles each copy with Cython (the same
directives as the install: ``language_level=3``), and times the interpreted and the compiled function on
the same bytes and the same decoded object, alternating, in one run.  Prints ns a call and the ratio
(interpreted / compiled: above 1 means compiling helps).  Needs Cython and a C compiler (the install's).
"""

from __future__ import annotations

import argparse
import importlib
import os
import subprocess
import sys
import tempfile
import timeit
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import protocol  # noqa: E402,F401  (installs the hook that loads the compiled modules)
import protocol.compiled as compiled  # noqa: E402
from protocol import schema  # noqa: E402
from protocol.api import APIS, ApiKey  # noqa: E402

#: (label, API, version, "request"/"response", body: None = the version's defaults)
CASES: list[tuple[str, ApiKey, int, str, dict[str, Any] | None]] = [
    ("Heartbeat v4 request", ApiKey.HEARTBEAT, 4, "request",
     {"group_id": "g", "generation_id": 3, "member_id": "m-" + "x" * 36, "group_instance_id": None}),
    ("Heartbeat v4 response", ApiKey.HEARTBEAT, 4, "response", None),
    ("ConsumerGroupHeartbeat v0 request", ApiKey.CONSUMER_GROUP_HEARTBEAT, 0, "request", None),
    ("ConsumerGroupHeartbeat v0 response", ApiKey.CONSUMER_GROUP_HEARTBEAT, 0, "response", None),
]
# (Messages whose generated source refers to objects it is linked with at run time — a nested struct's
# defaults, as in Produce's response — are not self-contained source: they would need those written out too.)


def best_ns(fn: Any, number: int) -> float:
    return min(timeit.repeat(fn, number=number, repeat=5)) / number * 1e9


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3, help="alternating rounds (the best of each kept)")
    ap.add_argument("--number", type=int, default=100_000, help="calls per timing")
    args = ap.parse_args()
    print("compiled modules in use:", ", ".join(m for m in ("protocol.primitives", "protocol.schema")
                                                 if m in compiled.in_use()) or "none (pure Python)")
    scratch = Path(tempfile.mkdtemp(prefix="kbroker-codec-cython-"))
    names = []
    for i, (_, key, version, kind, _) in enumerate(CASES):
        source = schema._compiled(getattr(APIS[key], kind), version).source
        for suffix in ("py", "cy"):
            (scratch / f"case{i}_{suffix}.py").write_text(source)
        names.append(f"case{i}")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    subprocess.run([sys.executable, "-m", "Cython.Build.Cythonize", "-i", "-3", "-q",
                    *(str(scratch / f"{n}_cy.py") for n in names)], check=True, cwd=scratch, env=env,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    sys.path.insert(0, str(scratch))
    print(f"{'message':36s} {'':6s} {'interpreted':>12s} {'compiled':>10s} {'ratio':>7s}")
    for (label, key, version, kind, body), name in zip(CASES, names, strict=True):
        message = getattr(APIS[key], kind)
        data = message.encode(version, body if body is not None else message.default(version))
        py = importlib.import_module(f"{name}_py")
        cy = importlib.import_module(f"{name}_cy")
        assert cy.__file__ is not None and not cy.__file__.endswith(".py"), "the Cython copy did not build"
        decoded = py.pstruct_1(data, 0)[0]
        assert cy.pstruct_1(data, 0)[0] == decoded
        best: dict[tuple[str, str], float] = {}
        for _ in range(args.rounds):
            for tag, mod in (("py", py), ("cy", cy)):
                parse = best_ns(lambda mod=mod, data=data: mod.pstruct_1(data, 0), args.number)
                build = best_ns(lambda mod=mod, obj=decoded: mod.bstruct_1(obj, bytearray()), args.number)
                best[(tag, "parse")] = min(best.get((tag, "parse"), parse), parse)
                best[(tag, "build")] = min(best.get((tag, "build"), build), build)
        for op in ("parse", "build"):
            py_ns, cy_ns = best[("py", op)], best[("cy", op)]
            print(f"{label:36s} {op:6s} {py_ns:9.0f} ns {cy_ns:7.0f} ns {py_ns / cy_ns:6.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
