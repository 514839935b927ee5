"""``python -m broker``: run the broker until SIGTERM or SIGINT (exit 0), until its data
directory fails (exit ``EXIT_LOG_DIR_FAILURE`` = 74, EX_IOERR) or until it loses its place in
the cluster (exit ``EXIT_CLUSTER_FAILURE`` = 69, EX_UNAVAILABLE); 1 when it cannot start."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import signal
import sys

from broker.cluster.kv import KVError
from broker.cluster.metadata import DuplicateBrokerError
from broker.core import BrokerCore, load_config
from broker.log.errors import LogError
from broker.observability.logging_setup import configure_logging

#: allocations between two young-generation collections of the cyclic garbage collector (Python's: 700)
_GC_YOUNG_THRESHOLD = 10_000


def _settle_gc() -> None:
    """Once the broker serves: what start-up made (modules, settings, its services) moves to the
    collector's permanent generation, and young collections run every ``_GC_YOUNG_THRESHOLD`` allocations.

    A full collection walks every tracked object.  Without this, the requests of a burst — ten thousand
    members joining one group, each holding a parked JoinGroup — promote enough objects to trigger
    several full collections, each walking the broker's whole heap: in that benchmark, a third of the
    broker's CPU (benchmarks/RESULTS.md, "one big group")."""
    gc.collect()
    gc.freeze()
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(_GC_YOUNG_THRESHOLD, older, oldest)


async def _started(core: BrokerCore, stop: asyncio.Event) -> bool:
    """Start the broker; False when SIGTERM/SIGINT came first.  Starting may wait a long time (the metadata
    store unreachable: retried for a minute; a large log to recover), and a signal meanwhile stops it at
    once — the start is cancelled, which undoes what it had done."""
    starting = asyncio.ensure_future(core.start())
    signalled = asyncio.ensure_future(stop.wait())
    await asyncio.wait([starting, signalled], return_when=asyncio.FIRST_COMPLETED)
    signalled.cancel()
    if starting.done():
        starting.result()  # a failed start raises here
        return True
    starting.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await starting
    return False


async def _serve(core: BrokerCore) -> int:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    if not await _started(core, stop):
        logging.getLogger("kbroker").info("stopped while starting")
        return 0
    _settle_gc()
    waiters = [asyncio.ensure_future(stop.wait()), asyncio.ensure_future(core.wait_stopped())]
    await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
    for waiter in waiters:
        waiter.cancel()
    if core.exit_code == 0:
        logging.getLogger("kbroker").info("shutting down")
    await core.stop()
    return core.exit_code


def main(argv: list[str] | None = None) -> int:
    config = load_config(argv)
    configure_logging(config.log_level)
    core = BrokerCore(config)
    try:
        import uvloop

        run = uvloop.run
    except ImportError:
        run = asyncio.run
    try:
        return int(run(_serve(core)))
    except (OSError, LogError, KVError, DuplicateBrokerError, ValueError) as exc:
        # the port is taken, the data directory is locked or belongs to another node, etcd cannot be
        # reached, the node id is taken, --cluster is malformed: one line, no traceback
        logging.getLogger("kbroker").error("cannot start: %s", exc)
        return 1


if __name__ == "__main__":
    sys.exit(main())
