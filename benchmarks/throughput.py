"""End-to-end throughput of ``python -m broker`` with confluent-kafka, next to the machine's loopback limit.

    .venv/bin/python benchmarks/throughput.py [--size-mb 1024] [--partitions 1]

Starts the broker as a subprocess (the pinned command line, a temporary data
dir, metrics off), then measures:

* produce: MB/s and records/s of record values, confluent-kafka (librdkafka)
  producer, 100 B and 1 KiB values, acks=1 and acks=all, no compression,
  ``--size-mb`` of values per case;
* fetch: MB/s and records/s of a confluent-kafka consumer reading the 1 KiB
  acks=1 topic from the beginning (``--size-mb``; served with sendfile);
* the loopback limit, moving the same number of bytes: a plain TCP socket pair
  on 127.0.0.1 (sendall / recv_into, 1 MiB chunks) and ``os.sendfile`` of a file
  over a loopback TCP socket (best of three runs each);

and prints the ratios broker / loopback.  Sizes are MB = 10^6 bytes.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from limits import loopback_pair, receive_all

REPO = Path(__file__).resolve().parents[1]
MB = 1_000_000


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_broker(data_dir: str) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("KBROKER_")}
    proc = subprocess.Popen([sys.executable, "-m", "broker", "--host", "127.0.0.1", "--port", str(port),
                             "--data-dir", data_dir, "--metrics-port", "0", "--log-level", "WARNING"],
                            cwd=str(REPO), env=env)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return proc, f"127.0.0.1:{port}"
        except OSError:
            if proc.poll() is not None:
                raise SystemExit(f"broker exited with {proc.returncode}") from None
            time.sleep(0.05)
    proc.kill()
    raise SystemExit("broker did not start")


def create_topic(bootstrap: str, topic: str, partitions: int, extra: dict | None = None) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap, **(extra or {})})  # keep a reference until the result is in
    admin.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=1)])[topic].result(30)


def produce(bootstrap: str, topic: str, value_size: int, acks: str, total_bytes: int,
            extra: dict | None = None) -> tuple[float, int]:
    """Returns (seconds, records) to produce ``total_bytes`` of values and have every one acknowledged
    (``extra``: more client settings, e.g. security)."""
    n = max(1, total_bytes // value_size)
    value = os.urandom(value_size)
    errors = [0]

    def on_delivery(err, _msg) -> None:
        if err is not None:
            errors[0] += 1

    p = Producer({"bootstrap.servers": bootstrap, "acks": acks, "linger.ms": 5, "batch.size": 1_000_000,
                  "queue.buffering.max.messages": 1_000_000, "queue.buffering.max.kbytes": 1_048_576,
                  "compression.type": "none", "enable.idempotence": False, **(extra or {})})
    start = time.perf_counter()
    for _ in range(n):
        try:
            p.produce(topic, value, on_delivery=on_delivery)
        except BufferError:
            p.poll(0.005)
            p.produce(topic, value, on_delivery=on_delivery)
        else:
            p.poll(0)
    left = p.flush(300)
    elapsed = time.perf_counter() - start
    if left or errors[0]:
        raise SystemExit(f"produce failed: {left} undelivered, {errors[0]} errors")
    return elapsed, n


def consume(bootstrap: str, topic: str, partitions: int, records: int,
            extra: dict | None = None) -> tuple[float, int]:
    """Returns (seconds, value bytes) to read ``records`` records from the beginning."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench", "enable.auto.commit": False,
                  "fetch.max.bytes": 52_428_800, "max.partition.fetch.bytes": 16_777_216,
                  "queued.max.messages.kbytes": 1_048_576, "fetch.wait.max.ms": 100, **(extra or {})})
    c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
    got = 0
    nbytes = 0
    start = time.perf_counter()
    while got < records:
        for m in c.consume(10_000, 1.0):
            if m.error() is None:
                got += 1
                nbytes += len(m.value())
    elapsed = time.perf_counter() - start
    c.close()
    return elapsed, nbytes


def _drain(sock: socket.socket, total: int, done: threading.Event) -> None:
    receive_all(sock, total)
    done.set()


def loopback_socket(total: int) -> float:
    a, b = loopback_pair()
    done = threading.Event()
    t = threading.Thread(target=_drain, args=(b, total, done))
    chunk = os.urandom(1 << 20)
    t.start()
    start = time.perf_counter()
    sent = 0
    while sent < total:
        a.sendall(chunk[: min(len(chunk), total - sent)])
        sent += min(len(chunk), total - sent)
    done.wait()
    elapsed = time.perf_counter() - start
    t.join()
    a.close()
    b.close()
    return elapsed


def loopback_sendfile(path: str, total: int) -> float:
    a, b = loopback_pair()
    done = threading.Event()
    t = threading.Thread(target=_drain, args=(b, total, done))
    t.start()
    with open(path, "rb") as fh:
        start = time.perf_counter()
        offset = 0
        while offset < total:
            offset += os.sendfile(a.fileno(), fh.fileno(), offset, total - offset)
        done.wait()
        elapsed = time.perf_counter() - start
    t.join()
    a.close()
    b.close()
    return elapsed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size-mb", type=int, default=1000, help="MB of record values per produce case and fetched")
    ap.add_argument("--partitions", type=int, default=1)
    ap.add_argument("--dir", default=None, help="parent of the temporary data dir (default: system temp)")
    args = ap.parse_args()
    total = args.size_mb * MB

    tmp = tempfile.mkdtemp(prefix="kbroker-bench-", dir=args.dir)
    proc, bootstrap = start_broker(os.path.join(tmp, "data"))
    rows: list[tuple[str, float, float]] = []
    try:
        fetch_topic = None
        fetch_records = 0
        for value_size in (100, 1000):
            for acks in ("1", "all"):
                topic = f"bench-{value_size}-acks{acks}"
                create_topic(bootstrap, topic, args.partitions)
                secs, n = produce(bootstrap, topic, value_size, acks, total)
                mbs = n * value_size / MB / secs
                rows.append((f"produce {value_size:>4} B acks={acks:<3}", mbs, n / secs))
                print(f"{rows[-1][0]}: {mbs:8.1f} MB/s {n / secs:11,.0f} rec/s ({n:,} records, {secs:.1f} s)",
                      flush=True)
                if value_size == 1000 and acks == "1":
                    fetch_topic, fetch_records = topic, n
        assert fetch_topic is not None
        secs, nbytes = consume(bootstrap, fetch_topic, args.partitions, fetch_records)
        fetch_mbs = nbytes / MB / secs
        rows.append(("fetch   1000 B from start", fetch_mbs, fetch_records / secs))
        print(f"{rows[-1][0]}: {fetch_mbs:8.1f} MB/s {fetch_records / secs:11,.0f} rec/s "
              f"({nbytes / MB:,.0f} MB, {secs:.1f} s)", flush=True)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()

    # the loopback limit for the same number of bytes, with the broker gone
    seg_dir = Path(tmp, "data", f"{fetch_topic}-0")
    segment = max(seg_dir.glob("*.log"), key=lambda p: p.stat().st_size)
    file_bytes = min(total, segment.stat().st_size)
    # best of three: the loopback figures are the ceiling, so noise should not lower them
    sock_mbs = total / MB / min(loopback_socket(total) for _ in range(3))
    sendfile_mbs = file_bytes / MB / min(loopback_sendfile(str(segment), file_bytes) for _ in range(3))
    print(f"loopback socket pair (sendall/recv_into): {sock_mbs:8.1f} MB/s")
    print(f"loopback sendfile of a segment file:      {sendfile_mbs:8.1f} MB/s")
    print("ratios:")
    for name, mbs, _ in rows:
        base = sendfile_mbs if name.startswith("fetch") else sock_mbs
        which = "sendfile" if name.startswith("fetch") else "socket"
        print(f"  {name}: {mbs / base:6.1%} of loopback {which}")
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
