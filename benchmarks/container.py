"""Produce/fetch throughput of the broker in its image next to the same broker outside it, in one run.

    python benchmarks/container.py [--size-mb 200] [--rounds 3] [--image localhost/kbroker:latest]

The image must exist: ``make test-container`` builds it (or ``podman build --format docker -t
localhost/kbroker:latest .`` with ``CONTAINERS_CONF=tests/container/containers.conf``).  Both brokers
run with the same settings (one partition per topic, metrics off, log level WARNING, data on the same
disk: a temporary directory outside, a podman volume inside), taking turns round by round (outside,
inside, outside, ...) so the machine's load falls on both alike; confluent-kafka on the host drives
both over 127.0.0.1 (the container on host networking).  The cases and clients are
``benchmarks/throughput.py``'s: produce 100 B and 1000 B values with acks=1, then fetch the 1000 B
topic from the beginning; then produce 100 B values (a quarter as many MB) to a topic whose
``compression.type=lz4`` makes the broker decode and re-encode every batch (the broker's use of the
record codec: a plain produce or fetch moves batches as opaque bytes); and our client producing and
consuming 100 B records, run by the same side's Python (on the host, or ``podman run`` of the image),
where the record codec does its work.  Prints each round, then the median of each case on each side and the
ratio inside/outside, and which record codec each broker runs.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from confluent_kafka.admin import AdminClient, NewTopic
from throughput import MB, consume, create_topic, free_port, produce, start_broker

REPO = Path(__file__).resolve().parents[1]
PODMAN_ENV = {**os.environ, "CONTAINERS_CONF": str(REPO / "tests" / "container" / "containers.conf")}
#: (name, value size, the topic's compression.type); size 0: fetch the 1000 B topic from the beginning
CASES = (("produce  100 B acks=1", 100, None), ("produce 1000 B acks=1", 1000, None),
         ("fetch   1000 B from start", 0, None),
         ("produce  100 B acks=1, topic compression.type=lz4", 100, "lz4"))


PODMAN = ["env", f"CONTAINERS_CONF={PODMAN_ENV['CONTAINERS_CONF']}", "podman"]


def podman(*args: str, check: bool = True) -> str:
    proc = subprocess.run(["podman", *args], env=PODMAN_ENV, capture_output=True, text=True, timeout=120)
    if check and proc.returncode != 0:
        raise SystemExit(f"podman {' '.join(args)}: {proc.stderr.strip()}")
    return proc.stdout.strip()


def wait_listening(port: int, alive: object) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            if callable(alive) and not alive():
                raise SystemExit("the broker exited") from None
            time.sleep(0.05)
    raise SystemExit("the broker did not start")


#: our client producing or consuming 100 B records on one partition, timed inside (the record codec's
#: work: encoding batches, decoding fetched records); run by the interpreter of the broker's side
CLIENT = """
import asyncio, sys, time
from client import Consumer, Producer, TopicPartition
bs, topic, n, mode = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]

async def produce():
    async with Producer(bootstrap_servers=bs, linger_ms=5, batch_size=256 * 1024, acks=1) as p:
        start = time.perf_counter()
        for _ in range(n):
            await p.enqueue(topic, value=b"v" * 100, partition=0)
        await p.flush()
        return time.perf_counter() - start

async def consume():
    async with Consumer(bootstrap_servers=bs, auto_offset_reset="earliest") as c:
        c.assign([TopicPartition(topic, 0)])
        got, start = 0, time.perf_counter()
        while got < n:
            for recs in (await c.getmany(timeout_ms=1000)).values():
                got += len(recs)
        return time.perf_counter() - start

print(n * 100 / 1e6 / asyncio.run(produce() if mode == "produce" else consume()))
"""
CLIENT_CASES = ("our client: produce 100 B", "our client: consume 100 B")


def measure(bootstrap: str, total: int, tag: str, client: list[str]) -> dict[str, float]:
    """MB/s of each case against the broker at ``bootstrap``; ``client``: the command that runs
    :data:`CLIENT` on this side."""
    out: dict[str, float] = {}
    fetch_topic, fetch_records = "", 0
    for name, size, compression in CASES:
        if size:
            topic = f"bench-{tag}-{size}-{compression or 'producer'}"
            if compression is None:
                create_topic(bootstrap, topic, 1)
            else:  # the broker decodes every uncompressed batch and builds it again in the topic's codec
                admin = AdminClient({"bootstrap.servers": bootstrap})
                admin.create_topics([NewTopic(topic, 1, 1, config={"compression.type": compression})])[topic].result(30)
            secs, n = produce(bootstrap, topic, size, "1", total // 4 if compression else total)
            out[name] = n * size / MB / secs
            if size == 1000:
                fetch_topic, fetch_records = topic, n
        else:
            secs, nbytes = consume(bootstrap, fetch_topic, 1, fetch_records)
            out[name] = nbytes / MB / secs
    records = total // 4 // 100
    topic = f"bench-{tag}-client"
    create_topic(bootstrap, topic, 1)
    for name, mode in zip(CLIENT_CASES, ("produce", "consume"), strict=True):
        proc = subprocess.run([*client, bootstrap, topic, str(records), mode], capture_output=True, text=True,
                              timeout=900)
        if proc.returncode != 0:
            raise SystemExit(f"{name}: {proc.stderr[-2000:]}")
        out[name] = float(proc.stdout.split()[-1])
    return out


def outside_env(python: str | None) -> dict[str, str]:
    """The outside broker's environment: with another interpreter, its own installed kbroker (not
    this checkout's, which PYTHONPATH may name)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("KBROKER_")}
    if python is not None:
        env.pop("PYTHONPATH", None)
    return env


def outside(total: int, tag: str, python: str | None) -> dict[str, float]:
    tmp = tempfile.mkdtemp(prefix="kbroker-bench-")
    if python is None:
        proc, bootstrap = start_broker(os.path.join(tmp, "data"))
    else:
        port = free_port()
        proc = subprocess.Popen([python, "-m", "broker", "--host", "127.0.0.1", "--port", str(port), "--data-dir",
                                 os.path.join(tmp, "data"), "--metrics-port", "0", "--log-level", "WARNING"],
                                cwd=tmp, env=outside_env(python))
        bootstrap = f"127.0.0.1:{port}"
        wait_listening(port, lambda: proc.poll() is None)
    try:
        return measure(bootstrap, total, tag, [python or sys.executable, "-c", CLIENT])
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
        shutil.rmtree(tmp, ignore_errors=True)


def inside(image: str, total: int, tag: str) -> dict[str, float]:
    name = f"kbroker-bench-{os.getpid()}-{tag}"
    port = free_port()
    podman("volume", "create", name)
    try:
        podman("run", "-d", "--network", "host", "--name", name, "-v", f"{name}:/data",
               "-e", "KBROKER_HOST=127.0.0.1", "-e", f"KBROKER_PORT={port}", "-e", "KBROKER_METRICS_PORT=0",
               "-e", "KBROKER_LOG_LEVEL=WARNING", image)
        wait_listening(port, lambda: podman("container", "inspect", "--format", "{{.State.Running}}", name,
                                            check=False) == "true")
        return measure(f"127.0.0.1:{port}", total, tag,
                       [*PODMAN, "run", "--rm", "--network", "host", "--entrypoint", "python", image, "-c", CLIENT])
    finally:
        podman("rm", "-f", "-v", "-t", "20", name, check=False)
        podman("volume", "rm", "-f", name, check=False)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size-mb", type=int, default=200, help="MB of record values per produce case")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--image", default="localhost/kbroker:latest")
    ap.add_argument("--outside-python", default=None,
                    help="interpreter of the outside broker, with kbroker installed (default: this one, this checkout)")
    args = ap.parse_args()
    total = args.size_mb * MB

    probe = "import sys, protocol.records as r; print('compiled' if r.COMPILED else 'python', sys.version.split()[0])"
    inside_codec = podman("run", "--rm", "--network", "host", "--entrypoint", "python", args.image, "-c", probe)
    outside_codec = subprocess.run([args.outside_python or sys.executable, "-c", probe], capture_output=True,
                                   text=True, cwd=tempfile.gettempdir(), env=outside_env(args.outside_python),
                                   check=True).stdout.strip()
    print(f"record codec and Python: outside {outside_codec}, inside {inside_codec}", flush=True)
    size = int(podman("image", "inspect", "--format", "{{.Size}}", args.image))
    print(f"image {args.image}: {size / 1e6:.0f} MB", flush=True)

    results: dict[str, list[dict[str, float]]] = {"outside": [], "inside": []}
    for r in range(args.rounds):
        for side in ("outside", "inside"):
            figures = (outside(total, f"o{r}", args.outside_python) if side == "outside"
                       else inside(args.image, total, f"i{r}"))
            results[side].append(figures)
            print(f"round {r + 1} {side:>7}: " + "; ".join(f"{' '.join(k.split())} {v:.1f} MB/s"
                                                          for k, v in figures.items()), flush=True)

    print(f"\nmedian of {args.rounds} rounds, {args.size_mb} MB of values per produce case:")
    print("| case | outside MB/s | inside MB/s | inside / outside |")
    print("|---|---:|---:|---:|")
    for name in [c[0] for c in CASES] + list(CLIENT_CASES):
        out = statistics.median(f[name] for f in results["outside"])
        ins = statistics.median(f[name] for f in results["inside"])
        print(f"| {name.strip()} | {out:.1f} | {ins:.1f} | {ins / out:.2f} |")


if __name__ == "__main__":
    sys.exit(main())
