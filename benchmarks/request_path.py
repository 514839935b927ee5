"""The broker's own cost per request, without sockets: µs of Python from received bytes to response.

    .venv/bin/python benchmarks/request_path.py [--requests 200000] [--cases heartbeat,produce,produce-64k]
        [--cprofile]

An in-process broker (:class:`broker.testing.embedded.Broker`) and one :class:`broker.network.server.KafkaConnection`
on a transport that discards what it is given.  Pre-encoded requests (64 pipelined frames at a time)
are copied into the connection's receive buffer and handed to ``buffer_updated``, exactly as the event
loop would after a ``recv_into``; everything from framing to the encoded response runs, the kernel
does not (no receive, no send — the log's ``pwrite`` still does).  So the figure is the per-request
ceiling of the request path itself, the number the small-request aims of ``raw_wire.py --cases small``
divide into one core; ``--cprofile`` prints where it goes.

* ``heartbeat``    Heartbeat v4 of the one member of a Stable group;
* ``produce``      acks=1 Produce of one 10-record batch (100-byte records);
* ``produce-64k``  acks=1 Produce of one 64 KiB batch (1,000-byte records).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import pstats
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import raw_wire as rw

from broker.network.server import KafkaConnection
from broker.testing.embedded import Broker

PIPELINE = 64


class NullTransport:
    """A transport that takes every write and never pushes back."""

    def write(self, data: Any) -> None:
        pass

    def writelines(self, data: Any) -> None:
        pass

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return default

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        pass

    def get_write_buffer_size(self) -> int:
        return 0

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass

    def is_closing(self) -> bool:
        return False

    def close(self) -> None:
        pass

    def abort(self) -> None:
        pass


async def frames_for(case: str, port: int) -> list[bytes]:
    loop = asyncio.get_running_loop()
    if case == "heartbeat":
        return await loop.run_in_executor(None, rw.heartbeat_frames, port)
    topic = case
    await loop.run_in_executor(None, rw.create_topic, port, topic, 1)
    records = rw.batch(1000, 65_536) if case == "produce-64k" else rw.batch(100, 10 * 108)
    return [rw.produce_frame(topic, 0, records, cid=i + 1) for i in range(PIPELINE)]


async def measure(case: str, requests: int, profile: bool) -> tuple[float, int]:
    """µs per request and the frame size, for ``requests`` requests of ``case``."""
    broker = Broker(port=0)
    await broker.start()
    try:
        port = int(broker.bootstrap_servers.rsplit(":", 1)[1])
        frames = await frames_for(case, port)
        conn = KafkaConnection(broker.core.server)
        conn.connection_made(NullTransport())  # type: ignore[arg-type]
        blob = memoryview(b"".join(frames[:PIPELINE]))
        per = min(PIPELINE, len(frames))

        def feed() -> None:
            off = 0
            while off < len(blob):
                buf = conn.get_buffer(-1)
                k = min(len(buf), len(blob) - off)
                buf[:k] = blob[off:off + k]
                off += k
                conn.buffer_updated(k)

        for _ in range(20):  # warm up: codecs compiled, caches filled
            feed()
        await asyncio.sleep(0.05)
        rounds = max(1, requests // per)
        prof = cProfile.Profile() if profile else None
        start = time.perf_counter()
        if prof is not None:
            prof.enable()
        for _ in range(rounds):
            feed()
            await asyncio.sleep(0)  # let the loop run what the requests scheduled
        if prof is not None:
            prof.disable()
        elapsed = time.perf_counter() - start
        conn.connection_lost(None)
        if prof is not None:
            pstats.Stats(prof).sort_stats("tottime").print_stats(30)
        return elapsed / (rounds * per) * 1e6, len(frames[0])
    finally:
        await broker.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=200_000)
    parser.add_argument("--cases", default="heartbeat,produce,produce-64k")
    parser.add_argument("--cprofile", action="store_true", help="print the top functions by own time")
    args = parser.parse_args()
    try:
        import uvloop

        uvloop.install()
    except ImportError:
        pass
    for case in args.cases.split(","):
        n = args.requests // 10 if case == "produce-64k" else args.requests
        us, size = asyncio.run(measure(case, n, args.cprofile))
        print(f"{case:12s} {us:8.2f} µs/request  {1e6 / us:10,.0f} requests/s on one core  "
              f"({size:,} B frames; {size / us:,.0f} MB/s)")


if __name__ == "__main__":
    main()
