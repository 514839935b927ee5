"""Micro-benchmark of broker.log: append and read throughput with 16 KiB batches.

    .venv/bin/python benchmarks/log_bench.py [--mb 256] [--batch-kib 16] [--dir /tmp/x]

Append = header parse + CRC check + stamp + pwrite (+ sparse index entry), no fsync
(default flush policy is fsync by interval, off the append path).  Read = the
Fetch path (locate batch, slice) plus copying the bytes out with pread, which is
an upper bound on the cost of ``sendfile``.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from broker.log import LogConfig, PartitionLog
from protocol.records import encode_batch, iter_batch_headers


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=int, default=256)
    ap.add_argument("--batch-kib", type=int, default=16)
    ap.add_argument("--dir", default=None)
    args = ap.parse_args()
    value = os.urandom(1000)
    per_batch = max(1, args.batch_kib * 1024 // 1030)
    batch = encode_batch([(b"key", value, None, int(time.time() * 1000))] * per_batch)
    n = args.mb * 1024 * 1024 // len(batch)
    with tempfile.TemporaryDirectory(dir=args.dir) as d:
        log = PartitionLog(os.path.join(d, "bench-0"), "bench", 0,
                           LogConfig.from_dict({"segment.bytes": str(128 * 1024 * 1024), "flush.ms": str(10**12)}))
        t = time.perf_counter()
        for _ in range(n):
            log.append(batch)
        dt = time.perf_counter() - t
        total = n * len(batch)
        print(f"append: {n} batches of {len(batch)} B in {dt:.2f}s = {total / dt / 2**20:.0f} MiB/s, "
              f"{n / dt:.0f} batches/s, {dt / n * 1e6:.1f} us/batch")
        t = time.perf_counter()
        log.flush()
        print(f"flush (fsync {total / 2**20:.0f} MiB): {time.perf_counter() - t:.2f}s")

        for label, max_bytes in (("read 1 MiB fetches", 1 << 20), ("read 64 KiB fetches", 64 << 10)):
            t = time.perf_counter()
            offset, got, fetches = 0, 0, 0
            while offset < log.log_end_offset:
                data = log.read(offset, max_bytes).to_bytes()
                got += len(data)
                fetches += 1
                offset = [h for _, h in iter_batch_headers(data)][-1].next_offset
            dt = time.perf_counter() - t
            print(f"{label}: {got / dt / 2**20:.0f} MiB/s, {fetches / dt:.0f} fetches/s")
        log.close()


if __name__ == "__main__":
    main()
