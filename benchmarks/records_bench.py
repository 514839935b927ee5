"""Micro-benchmarks for protocol.records: header parsing, CRC validation, encode/decode per codec.

Run: ``.venv/bin/python benchmarks/records_bench.py``.  Prints figures only.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable

from protocol.records import (
    GZIP,
    LZ4,
    NONE,
    SNAPPY,
    ZSTD,
    crc_ok,
    decode_batch,
    encode_batch,
    iter_batch_headers,
    parse_batch_header,
    stamp_base_offset,
)

CODECS = {"none": NONE, "gzip": GZIP, "snappy": SNAPPY, "lz4": LZ4, "zstd": ZSTD}


def per_call(fn: Callable[[], object], min_seconds: float = 0.1, repeats: int = 7) -> float:
    """Best-of-``repeats`` seconds per call, each repeat running for at least ``min_seconds``."""
    fn()
    n = 1
    while True:
        start = time.perf_counter()
        for _ in range(n):
            fn()
        if time.perf_counter() - start >= min_seconds:
            break
        n *= 2
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(n):
            fn()
        best = min(best, (time.perf_counter() - start) / n)
    return best


def sample_records(count: int, value_size: int) -> list[tuple[bytes | None, bytes | None, list, int]]:
    base = 1_700_000_000_000
    text = (b'{"user": %d, "event": "click", "page": "/home", "ms": %d}' * 8)[:value_size]
    return [(b"user-%d" % (i % 97), text, [("trace", b"abc123")], base + i) for i in range(count)]


def main() -> None:
    big = encode_batch([(None, os.urandom(1024), None, 0) for _ in range(1024)])
    header = parse_batch_header(big)
    t = per_call(lambda: crc_ok(big, 0, header))
    print(f"crc_ok on a {len(big) / 2**20:.2f} MiB batch: {t * 1e6:8.1f} us  ({len(big) / t / 1e9:.2f} GB/s)")
    t = per_call(lambda: parse_batch_header(big))
    print(f"parse_batch_header:                 {t * 1e9:8.0f} ns")
    many = b"".join(encode_batch([(None, b"x" * 100, None, i)]) for i in range(1000))
    t = per_call(lambda: sum(1 for _ in iter_batch_headers(many)))
    print(f"iter_batch_headers, 1000 batches:   {t * 1e6:8.1f} us  ({t * 1e9 / 1000:.0f} ns/batch)")
    buf = bytearray(many)
    t = per_call(lambda: stamp_base_offset(buf, 0, 12345))
    print(f"stamp_base_offset:                  {t * 1e9:8.0f} ns")

    recs = sample_records(100, 200)
    print("\n100 records x ~220 B (key, 200 B value, one header):")
    print(f"{'codec':8}{'bytes':>8}{'encode us':>12}{'decode us':>12}{'enc us/rec':>12}{'dec us/rec':>12}")
    for name, codec in CODECS.items():
        batch = encode_batch(recs, compression=codec)
        te = per_call(lambda codec=codec: encode_batch(recs, compression=codec))
        td = per_call(lambda batch=batch: decode_batch(batch))
        print(f"{name:8}{len(batch):8}{te * 1e6:12.1f}{td * 1e6:12.1f}{te * 1e4:12.2f}{td * 1e4:12.2f}")

    tiny = [(None, b"v" * 10, None, 1_700_000_000_000 + i) for i in range(100)]
    batch = encode_batch(tiny)
    te = per_call(lambda: encode_batch(tiny))
    td = per_call(lambda: decode_batch(batch))
    print(
        f"\n100 tiny records (null key, 10 B value, no headers): encode {te * 1e6:.1f} us, decode {td * 1e6:.1f} us"
    )


if __name__ == "__main__":
    main()
