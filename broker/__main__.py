"""``python -m broker``: run the broker until SIGTERM or SIGINT."""

from __future__ import annotations

import asyncio
import logging
import signal
import sys

from broker.config import load
from broker.core import BrokerCore
from broker.logging_setup import configure_logging


async def _serve(core: BrokerCore) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await core.start()
    await stop.wait()
    logging.getLogger("kbroker").info("shutting down")
    await core.stop()


def main(argv: list[str] | None = None) -> int:
    config = load(argv)
    configure_logging(config.log_level)
    core = BrokerCore(config)
    try:
        import uvloop

        uvloop.run(_serve(core))
    except ImportError:
        asyncio.run(_serve(core))
    except OSError as exc:
        logging.getLogger("kbroker").error("cannot start: %s", exc)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
