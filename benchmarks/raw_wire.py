"""The broker's own ceiling: raw Kafka requests over the wire, no client library in the way.

    .venv/bin/python benchmarks/raw_wire.py [--cases ingest,egress,small,many,memory,tls]
        [--ingest-mb 2000] [--memory-gb 10] [--broker-cpu 0] [--loadgen-cpu 1] [--broker-memory-mb MIB]
        [--profile DIR]
        [--compare-pure [--compare-rounds 2]]

Starts ``python -m broker`` (the pinned command line, default settings: ``log.flush.interval.ms``
250, i.e. the periodic fsync is on) through :class:`broker.testing.harness.BrokerProcess`, pinned to
``--broker-cpu``; this process (the load generator) runs on ``--loadgen-cpu``.  Requests are
encoded once, before the clock starts: record batches are pre-built and re-sent, so nothing but
the broker and the kernel is measured.  Every case prints its rate and its ratio to a limit
measured in the same run (``benchmarks/limits.py``, pinned the same way):

* ``ingest``   acks=1 Produce of one pre-built batch per request (1 MB and 64 KiB batches of
  1,000-byte records; also 100-byte records at 1 MB), 8 requests in flight on one connection,
  against the loopback socket rate, and beside it what the page cache takes of the same pieces
  (``limits.page_cache_write_rates``: ``pwrite`` into fresh pages, and into pages just freed);
* ``egress``   a consumer reading the 1 MB-batch topic from the beginning (Fetch with
  ``partition_max_bytes`` 16 MiB, one request at a time, as librdkafka does; each response read as
  it arrives in 1 MiB pieces, as the limit's receiver reads, looking only at batch headers; after an
  ``os.sync()``, so the ingest cases' writeback does not run meanwhile) against the rate of
  ``os.sendfile`` of the same segment file;
* ``small``    Heartbeats/s of a Stable one-member group, ConsumerGroupHeartbeats/s of a KIP-848
  member that owns its partition (steady state: nothing changed since its last heartbeat) and acks=1
  Produce requests/s of one 10-record batch (100-byte records), 4 connections x 64 in flight; with
  ``--compare-pure`` these also with every module as Python (``KBROKER_PURE_PYTHON=1``) in
  ``--compare-rounds`` alternating rounds, and the ratios compiled / Python (protocol/compiled.py);
* ``many``     100 producer connections over a 10-partition topic (64 KiB batches, 2 in flight
  each) against one connection (64 KiB batches, 8 in flight), then the produce latency of those
  100 connections sending at half the measured peak rate, evenly spread (each connection's schedule
  offset by 1/100 of its interval; ``--latency-lockstep``: all at once, a burst of 100 requests every
  interval), for ``--latency-seconds``, once per
  ``--latency-acks`` setting (``1,all``): p50, p99, p99.9, max, and the responses later than 50 ms
  with the stalls they make up (late responses arriving within 50 ms of each other are one stall); the
  five worst stalls are listed with when they began, how long the broker's event-loop thread ran and
  waited for a CPU around them (``/proc/<pid>/schedstat``: waiting is other processes, or the broker's
  own threads, holding its core) and how much of the page cache was dirty or under writeback then
  (``/proc/meminfo``; both sampled every 250 ms).  Latency is counted from the
  scheduled send time, so a stall is not hidden by the sender waiting.  The latency topic has
  ``segment.bytes`` and ``retention.bytes`` set (``--latency-segment-mb``, ``--latency-retention-mb``)
  and the broker checks retention every ``--retention-check-ms``, so segment rolls, deletions and
  the periodic fsync all happen during a long run;
* ``tls``      one broker with a PLAINTEXT and an SSL listener (a throwaway CA made with openssl): acks=1
  Produce of 1 MB batches (8 in flight) over each, then the egress fetch above over each (both of
  the same topic, written over PLAINTEXT), in ``--tls-rounds`` alternating rounds, the best of each
  kept; prints SSL / PLAINTEXT for produce and for fetch (PLAINTEXT's fetch is ``sendfile``; over
  TLS the broker copies record data through OpenSSL), and the loopback TLS limit beside them (a
  Python ``ssl`` sender and receiver pinned like the broker and this process).  The load generator
  decrypts and encrypts with Python's ``ssl`` (OpenSSL) on its own core;
* ``memory``   broker peak RSS (``/proc/<pid>/status`` VmRSS, sampled every 50 ms) while
  ingesting ``--memory-gb`` GB of 1 MB batches over 4 connections.

``--broker-memory-mb MIB`` holds the broker's memory, its page cache included, to that much (a memory cgroup,
``limits.confine_memory``), and ``many`` fills it with a scratch topic before it measures: the writes then
reuse the pages of the broker's older data, as on a machine whose memory is full of a long-running broker's
log.  Without it a broker on a machine with much free memory writes into fresh pages, and on a virtual
machine that reports freed memory to its host (virtio-balloon free page reporting) the first write to
each page waits for the host to supply it: the ingest case's page-cache line shows how much that costs.

``--profile DIR`` records each case's broker with ``py-spy`` (``pip install py-spy``) into
``DIR/<case>.txt`` (collapsed stacks) and prints the top functions by own time; profiling
(``--profile``, ``--cprofile``) runs every module as Python, since the profilers see Python frames only.
MB = 10^6 bytes.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import dataclasses
import os
import shutil
import socket
import ssl
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

from limits import (
    CHUNK,
    confine_memory,
    page_cache_write_rates,
    pinned,
    release_memory,
    sendfile_rate,
    socket_rate,
    tls_socket_rate,
)
from security import make_pki

from broker.testing.harness import BrokerProcess
from protocol.api import APIS, ApiKey, decode_response, encode_request
from protocol.compiled import PURE_PYTHON_ENV
from protocol.primitives import rd_uvarint
from protocol.records import encode_batch

MB = 1_000_000
PRODUCE_V = APIS[ApiKey.PRODUCE].max_version
FETCH_V = APIS[ApiKey.FETCH].max_version
_size = struct.Struct(">i")


# ------------------------------------------------------------------------------------ requests


def batch(record_bytes: int, batch_bytes: int) -> bytes:
    """One pre-built v2 batch of ``record_bytes`` values totalling about ``batch_bytes``."""
    value = os.urandom(record_bytes)
    per = max(1, batch_bytes // (record_bytes + 8))
    now = int(time.time() * 1000)
    return encode_batch([(None, value, None, now)] * per)


def produce_frame(topic: str, partition: int, records: bytes, acks: int = 1, cid: int = 1) -> bytes:
    return encode_request(ApiKey.PRODUCE, PRODUCE_V, cid, "raw-wire", {
        "transactional_id": None, "acks": acks, "timeout_ms": 30000,
        "topic_data": [{"name": topic, "partition_data": [{"index": partition, "records": records}]}]})


def call(sock: socket.socket, key: int, version: int, body: dict[str, Any]) -> Any:
    """One blocking request/response (setup only)."""
    sock.sendall(encode_request(key, version, 7, "raw-wire", body))
    return decode_response(key, version, read_frame(sock))[1]


def read_frame(sock: socket.socket, into: bytearray | None = None) -> memoryview:
    """The next response frame (without its size prefix); read into ``into`` when it is big enough."""
    (size,) = _size.unpack(read_exactly(sock, 4))
    return read_exactly(sock, size, into)


def read_exactly(sock: socket.socket, n: int, into: bytearray | None = None) -> memoryview:
    buf = into if into is not None and len(into) >= n else bytearray(n)
    view = memoryview(buf)[:n]
    got = 0
    while got < n:
        k = sock.recv_into(view[got:])
        if not k:
            raise ConnectionError("broker closed the connection")
        got += k
    return view


def create_topic(port: int, name: str, partitions: int, configs: dict[str, str] | None = None) -> None:
    with socket.create_connection(("127.0.0.1", port)) as sock:
        resp = call(sock, ApiKey.CREATE_TOPICS, 5, {"topics": [{"name": name, "num_partitions": partitions,
                                                                 "replication_factor": 1, "assignments": [],
                                                                 "configs": [{"name": k, "value": v} for k, v
                                                                             in (configs or {}).items()]}],
                                                    "timeout_ms": 30000, "validate_only": False})
        code = resp.topics[0].error_code
        if code not in (0, 36):
            raise SystemExit(f"CreateTopics {name}: error {code}")


def error_codes(node: Any) -> list[int]:
    """Every non-zero error_code in a decoded response."""
    out: list[int] = []
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, dict):
            for k, v in n.items():
                if k == "error_code" and v:
                    out.append(v)
                elif isinstance(v, list | dict):
                    stack.append(v)
        elif isinstance(n, list):
            stack.extend(n)
    return out


# ------------------------------------------------------------------------------ load generator


class Pipeline(asyncio.Protocol):
    """One connection writing pre-built request blobs while at most ``window`` requests are in flight.

    ``blobs`` are cycled; each holds ``per_blob`` requests.  Responses are counted by their size
    prefix; one in ``sample_every`` is kept for checking.  With ``latencies`` each response's time
    since its request was scheduled is appended (and its arrival time to ``arrivals``).  With ``rate`` (requests/s) requests are sent on a
    schedule instead of as fast as the window allows, the first ``phase`` seconds after :meth:`begin`
    (connections of one rate given phases spread over one interval send evenly, not all at once).
    """

    def __init__(self, blobs: list[bytes], per_blob: int, window: int, total: int, *, api: int, version: int,
                 done: Callable[[], None], sample_every: int = 512, rate: float | None = None,
                 latencies: list[float] | None = None, arrivals: list[float] | None = None,
                 phase: float = 0.0) -> None:
        self.blobs, self.per_blob, self.window, self.total = blobs, per_blob, window, total
        self.phase = phase
        self.api, self.version, self.done_cb = api, version, done
        self.sample_every, self.rate, self.latencies = sample_every, rate, latencies
        self.arrivals = arrivals
        self.sent = self.answered = 0
        self.next_blob = 0
        self.buf = bytearray()
        self.samples: list[bytes] = []
        self.sent_at: collections.deque[float] = collections.deque()
        self.transport: asyncio.Transport | None = None
        self.error: str | None = None
        self.finished = False
        self._paused = False
        self._start = 0.0

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        sock = transport.get_extra_info("socket")
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def begin(self) -> None:
        self._start = time.perf_counter() + self.phase
        if self.rate is None:
            self._fill()
        else:
            self._tick()

    def _send_one_blob(self, scheduled: float) -> None:
        assert self.transport is not None
        blob = self.blobs[self.next_blob]
        self.next_blob = (self.next_blob + 1) % len(self.blobs)
        self.transport.write(blob)
        self.sent += self.per_blob
        if self.latencies is not None:
            for _ in range(self.per_blob):
                self.sent_at.append(scheduled)

    def _fill(self) -> None:
        while (not self._paused and self.sent < self.total
               and self.sent - self.answered + self.per_blob <= self.window):
            self._send_one_blob(time.perf_counter())

    def _tick(self) -> None:
        assert self.rate is not None
        loop = asyncio.get_running_loop()
        interval = self.per_blob / self.rate
        now = time.perf_counter()
        due = self._start + (self.sent // self.per_blob) * interval
        while self.sent < self.total and due <= now:
            self._send_one_blob(due)
            due += interval
        if self.sent < self.total:
            loop.call_later(max(0.0, due - time.perf_counter()), self._tick)

    def pause_writing(self) -> None:
        self._paused = True

    def resume_writing(self) -> None:
        self._paused = False
        if self.rate is None:
            self._fill()

    def data_received(self, data: bytes) -> None:
        buf = self.buf
        buf += data
        pos = 0
        end = len(buf)
        now = time.perf_counter() if self.latencies is not None else 0.0
        while end - pos >= 4:
            (size,) = _size.unpack_from(buf, pos)
            if end - pos - 4 < size:
                break
            if self.answered % self.sample_every == 0:
                self.samples.append(bytes(buf[pos + 4:pos + 4 + size]))
            pos += 4 + size
            self.answered += 1
            if self.latencies is not None:
                self.latencies.append(now - self.sent_at.popleft())
                if self.arrivals is not None:
                    self.arrivals.append(now)
        if pos:
            del buf[:pos]
        if self.answered >= self.total and not self.finished:
            self.finished = True
            self.done_cb()
        elif self.rate is None:
            self._fill()

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.finished:
            self.error = f"connection lost after {self.answered} responses: {exc}"
            self.finished = True
            self.done_cb()

    def check(self) -> None:
        if self.error:
            raise SystemExit(self.error)
        for frame in self.samples:
            _, body = decode_response(self.api, self.version, frame)
            codes = error_codes(body)
            if codes:
                raise SystemExit(f"API {self.api} answered errors {codes}")


async def _run_pipelines(port: int, specs: list[dict[str, Any]],
                         tls: ssl.SSLContext | None = None) -> tuple[float, list[Pipeline]]:
    loop = asyncio.get_running_loop()
    remaining = [len(specs)]
    all_done = loop.create_future()

    def one_done() -> None:
        remaining[0] -= 1
        if remaining[0] == 0 and not all_done.done():
            all_done.set_result(None)

    pipes: list[Pipeline] = []
    for spec in specs:
        _, proto = await loop.create_connection(lambda s=spec: Pipeline(done=one_done, **s), "127.0.0.1", port,
                                                ssl=tls, server_hostname="localhost" if tls else None)
        pipes.append(proto)
    start = time.perf_counter()
    for p in pipes:
        p.begin()
    await all_done
    elapsed = time.perf_counter() - start
    for p in pipes:
        assert p.transport is not None
        p.transport.close()
        p.check()
    return elapsed, pipes


def run_pipelines(port: int, specs: list[dict[str, Any]],
                  tls: ssl.SSLContext | None = None) -> tuple[float, list[Pipeline]]:
    try:
        import uvloop

        return uvloop.run(_run_pipelines(port, specs, tls))
    except ImportError:
        return asyncio.run(_run_pipelines(port, specs, tls))


# ------------------------------------------------------------------------------------- profiling


class Profiler:
    """py-spy on the broker for the duration of a case (``--profile``)."""

    def __init__(self, directory: str | None, pid: int) -> None:
        self.directory, self.pid = directory, pid
        self.proc: subprocess.Popen[bytes] | None = None
        self.path = ""

    def start(self, case: str) -> None:
        if self.directory is None:
            return
        exe = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
        self.path = os.path.join(self.directory, f"{case}.txt")
        self.proc = subprocess.Popen([exe, "record", "-p", str(self.pid), "-r", "1000", "-f", "raw", "-o", self.path,
                                      "--nonblocking"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(0.5)

    def stop(self) -> None:
        if self.proc is None:
            return
        self.proc.send_signal(2)
        self.proc.wait(30)
        self.proc = None
        print(summarize_profile(self.path), flush=True)


def summarize_profile(path: str, top: int = 12) -> str:
    """Own time and total time per function from py-spy's collapsed stacks."""
    own: collections.Counter[str] = collections.Counter()
    total: collections.Counter[str] = collections.Counter()
    samples = 0
    try:
        lines = Path(path).read_text().splitlines()
    except OSError:
        return f"  (no profile at {path})"
    for line in lines:
        stack, _, count = line.rpartition(" ")
        if not count.isdigit():
            continue  # a frame name py-spy could not read cut the line
        n = int(count)
        frames = [f.split(" (")[0] + " (" + f.split(" (")[1].split(":")[0].rsplit("/", 1)[-1] + ")" if " (" in f else f
                  for f in stack.split(";")]
        samples += n
        own[frames[-1]] += n
        for f in set(frames):
            total[f] += n
    out = [f"  profile {path}: {samples} samples; top own time:"]
    for name, n in own.most_common(top):
        out.append(f"    {n / samples:6.1%} own {total[name] / samples:6.1%} total  {name}")
    return "\n".join(out)


# ------------------------------------------------------------------------------------- the cases


class Measured:
    """Broker CPU seconds spent during a measured block."""

    cpu = user = system = 0.0

    def per_cpu(self, amount: float) -> float:
        return amount / self.cpu if self.cpu > 0 else float("nan")


class CProfiledBroker(BrokerProcess):
    """The broker under ``cProfile`` (``--cprofile DIR``): exact call counts, written at SIGTERM."""

    def __init__(self, *args: Any, output: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.output = output

    def command(self) -> list[str]:
        cmd = super().command()
        return [cmd[0], "-m", "cProfile", "-o", self.output, *cmd[1:]]


class Bench:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.tmp = tempfile.mkdtemp(prefix="kbroker-raw-", dir=args.dir)
        self.broker: BrokerProcess | None = None
        self.profiler: Profiler | None = None
        self.cgroup: str | None = None
        self.results: list[str] = []

    def start_broker(self, name: str, settings: list[str] | None = None, listeners: list[str] | None = None) -> int:
        extra = ["--log-level", "WARNING"]
        for s in [*(settings or []), *self.args.broker_set]:
            extra += ["--set", s]
        if self.args.cprofile:
            self.broker = CProfiledBroker(os.path.join(self.tmp, name), extra_args=extra, listeners=listeners,
                                          output=os.path.join(self.args.cprofile, f"{name}.prof"))
        else:
            self.broker = BrokerProcess(os.path.join(self.tmp, name), extra_args=extra, listeners=listeners)
        self.broker.start()
        assert self.broker.proc is not None
        if self.args.broker_cpu is not None:
            os.sched_setaffinity(self.broker.proc.pid, {self.args.broker_cpu})
        if self.args.broker_memory_mb:
            self.cgroup = confine_memory(self.broker.proc.pid, self.args.broker_memory_mb * 2**20)
            print(f"broker memory (page cache included) held to {self.args.broker_memory_mb} MiB: "
                  f"{self.cgroup or 'not possible here, running without'}", flush=True)
        self.profiler = Profiler(self.args.profile, self.broker.proc.pid)
        return self.broker.port

    def stop_broker(self) -> None:
        if self.broker is not None:
            self.broker.stop(60)
            if self.args.broker_logs:
                os.makedirs(self.args.broker_logs, exist_ok=True)
                shutil.copy(self.broker.log_path, self.args.broker_logs)
            shutil.rmtree(self.broker.data_dir, ignore_errors=True)
            self.broker = None
            release_memory(self.cgroup)
            self.cgroup = None

    def report(self, line: str) -> None:
        self.results.append(line)
        print(line, flush=True)

    @contextlib.contextmanager
    def measure(self, case: str) -> Iterator[Measured]:
        """Profile the broker (with ``--profile``) and count its CPU time during the block."""
        assert self.profiler is not None and self.broker is not None and self.broker.proc is not None
        pid = self.broker.proc.pid
        m = Measured()
        self.profiler.start(case)
        before = cpu_times(pid)
        own_before = os.times()
        start = time.perf_counter()
        try:
            yield m
        finally:
            after = cpu_times(pid)
            own_after = os.times()
            wall = time.perf_counter() - start
            m.user, m.system = after[0] - before[0], after[1] - before[1]
            m.cpu = m.user + m.system
            self.profiler.stop()
            if self.args.verbose:
                own = (own_after.user - own_before.user) + (own_after.system - own_before.system)
                print(f"  [{case}: {wall:.2f} s; broker CPU {m.user:.2f} s user + {m.system:.2f} s system "
                      f"({m.cpu / wall:.0%}); load generator CPU {own:.2f} s ({own / wall:.0%})]", flush=True)

    def produce_rate(self, port: int, topic: str, partitions: int, record_bytes: int, batch_bytes: int,
                     total_bytes: int, window: int, conns: int = 1, *, case: str,
                     tls: ssl.SSLContext | None = None) -> tuple[float, float]:
        """Bytes/s of record batches acknowledged (acks=1), and bytes per broker CPU second."""
        records = batch(record_bytes, batch_bytes)
        n = max(window * 2, total_bytes // len(records))
        per_conn = max(window, n // conns)
        specs = []
        for c in range(conns):
            frames = [produce_frame(topic, (c + i) % partitions, records) for i in range(partitions)]
            specs.append({"blobs": frames, "per_blob": 1, "window": window, "total": per_conn,
                          "api": ApiKey.PRODUCE, "version": PRODUCE_V})
        with self.measure(case) as m:
            elapsed, _ = run_pipelines(port, specs, tls)
        nbytes = per_conn * conns * len(records)
        return nbytes / elapsed, m.per_cpu(nbytes)

    # -- cases ---------------------------------------------------------------------------------

    def ingest_and_egress(self, do_egress: bool) -> None:
        a = self.args
        port = self.start_broker("ingest")
        total = a.ingest_mb * MB
        sock = socket_rate(min(total, 2000 * MB), sender_cpu=a.loadgen_cpu, receiver_cpu=a.broker_cpu)
        self.report(f"loopback socket (sendall/recv_into, 1 MiB):        {sock / MB:9.1f} MB/s")
        cases = [("ingest 1 MB batches, 1000 B records", 1000, 1_000_000, "ingest-1mb"),
                 ("ingest 1 MB batches, 100 B records", 100, 1_000_000, "ingest-1mb-100b"),
                 ("ingest 64 KiB batches, 1000 B records", 1000, 65_536, "ingest-64k")]
        for label, rb, bb, topic in cases:
            create_topic(port, topic, 1)
            # the previous case's data at rest: its writeback must not slow this case's writes (measured
            # without this, the second case of 1 GB ran at 40 % of the first's rate whatever its records)
            os.sync()
            # what the page cache takes of the same writes, on the broker's core, just before
            fresh, reused = page_cache_write_rates(str(self.broker.data_dir if self.broker else "."),
                                                   min(total, 1000 * MB), bb, cpu=a.broker_cpu)
            rate, per_cpu = self.produce_rate(port, topic, 1, rb, bb, total, 8, case=topic)
            self.report(f"{label:50s} {rate / MB:9.1f} MB/s  {rate / sock:6.1%} of loopback socket; "
                        f"{per_cpu / MB:7.1f} MB per broker CPU-s ({per_cpu / sock:6.1%})")
            self.report(f"  {'page cache: pwrite of the same pieces, fresh pages':48s} {fresh / MB:9.1f} MB/s  "
                        f"(ingest {rate / fresh:6.1%}); into pages just freed {reused / MB:9.1f} MB/s")
        if do_egress:
            self.egress(port, "ingest-1mb")
        self.stop_broker()

    def egress(self, port: int, topic: str) -> None:
        a = self.args
        seg_dir = Path(self.broker.data_dir if self.broker else "", f"{topic}-0")
        segment = max(seg_dir.glob("*.log"), key=lambda p: p.stat().st_size)
        os.sync()  # the ingest cases' data at rest: no writeback competing with the reads (nor with the limit)
        with self.measure("egress") as m, pinned(a.loadgen_cpu):
            nbytes, elapsed = fetch_all(port, topic, 16 << 20)
        limit = sendfile_rate(str(segment), min(nbytes, segment.stat().st_size), sender_cpu=a.broker_cpu,
                              receiver_cpu=a.loadgen_cpu)
        rate = nbytes / elapsed
        self.report(f"loopback sendfile of the segment file:             {limit / MB:9.1f} MB/s")
        per_cpu = m.per_cpu(nbytes)
        self.report(f"{'egress from the beginning, 16 MiB per fetch':50s} {rate / MB:9.1f} MB/s  "
                    f"{rate / limit:6.1%} of loopback sendfile; {per_cpu / MB:7.1f} MB per broker CPU-s")

    def tls(self) -> None:
        """Produce and fetch over a TLS listener beside the PLAINTEXT one of the same broker."""
        a = self.args
        pki = Path(self.tmp, "pki")
        pki.mkdir()
        ca, cert, key = make_pki(pki)
        port = self.start_broker("tls", [f"ssl.certfile={cert}", f"ssl.keyfile={key}"], listeners=["PLAINTEXT", "SSL"])
        assert self.broker is not None
        tls_port = self.broker.listeners["SSL"]
        context = ssl.create_default_context(cafile=str(ca))
        total = a.ingest_mb * MB
        rates: dict[str, tuple[float, float]] = {}
        for rounds in range(a.tls_rounds):  # alternating, so a change of the machine's load hits both
            for name, p, tls in (("PLAINTEXT", port, None), ("SSL", tls_port, context)):
                topic = f"tls-{name.lower()}-{rounds}"
                create_topic(port, topic, 1)
                os.sync()
                rate, per_cpu = self.produce_rate(p, topic, 1, 1000, 1_000_000, total, 8, case=f"tls-produce-{name}",
                                                  tls=tls)
                best = rates.get(f"produce {name}", (0.0, 0.0))
                rates[f"produce {name}"] = max(best, (rate, per_cpu))
        os.sync()
        for _ in range(a.tls_rounds):
            for name, p, tls in (("PLAINTEXT", port, None), ("SSL", tls_port, context)):
                with self.measure(f"tls-fetch-{name}") as m, pinned(a.loadgen_cpu):
                    nbytes, elapsed = fetch_all(p, "tls-plaintext-0", 16 << 20, tls)
                best = rates.get(f"fetch {name}", (0.0, 0.0))
                rates[f"fetch {name}"] = max(best, (nbytes / elapsed, m.per_cpu(nbytes)))
        limit = tls_socket_rate(min(total, 1000 * MB), str(ca), str(cert), str(key), sender_cpu=a.broker_cpu,
                                receiver_cpu=a.loadgen_cpu)
        for label, (rate, per_cpu) in rates.items():
            self.report(f"{f'TLS case: {label} (1 MB batches, best of {a.tls_rounds})':50s} {rate / MB:9.1f} MB/s  "
                        f"{per_cpu / MB:7.1f} MB per broker CPU-s")
        self.report(f"{'loopback TLS socket (ssl sendall/recv_into, 1 MiB)':50s} {limit / MB:9.1f} MB/s")
        produce = rates["produce SSL"][0] / rates["produce PLAINTEXT"][0]
        fetch = rates["fetch SSL"][0] / rates["fetch PLAINTEXT"][0]
        self.report(f"{'TLS: produce over SSL / PLAINTEXT (aim >= 0.8)':50s} {produce:9.2f}x")
        self.report(f"{'TLS: fetch over SSL / PLAINTEXT sendfile (aim >= 0.5)':50s} {fetch:9.2f}x  "
                    f"(the loopback TLS socket is {limit / rates['fetch PLAINTEXT'][0]:.2f}x; fetch over SSL "
                    f"{rates['fetch SSL'][0] / limit:.0%} of it)")
        self.stop_broker()

    def small(self, tag: str = "") -> list[float]:
        """Heartbeat, ConsumerGroupHeartbeat and small Produce rates (requests/s), each reported."""
        a = self.args
        port = self.start_broker("small")
        rates = []
        hb = heartbeat_frames(port)
        n = a.small_requests
        conns, window, group = 4, 64, 16
        spec = {"blobs": [b"".join(hb[:group])], "per_blob": group, "window": window, "total": n // conns,
                "api": ApiKey.HEARTBEAT, "version": 4}
        with self.measure("heartbeat") as m:
            elapsed, _ = run_pipelines(port, [dict(spec) for _ in range(conns)])
        done = n // conns * conns
        rates.append(done / elapsed)
        self.report(f"{'Heartbeats/s, 4 connections x 64 in flight' + tag:50s} {done / elapsed:11,.0f}  "
                    f"{m.per_cpu(done):11,.0f} per broker CPU-s")
        cgh = consumer_group_heartbeat_frames(port)
        spec = {"blobs": [b"".join(cgh[:group])], "per_blob": group, "window": window, "total": n // conns,
                "api": ApiKey.CONSUMER_GROUP_HEARTBEAT, "version": CGH_V}
        with self.measure("consumer-group-heartbeat") as m:
            elapsed, _ = run_pipelines(port, [dict(spec) for _ in range(conns)])
        rates.append(done / elapsed)
        self.report(f"{'ConsumerGroupHeartbeats/s, 4 x 64 in flight' + tag:50s} {done / elapsed:11,.0f}  "
                    f"{m.per_cpu(done):11,.0f} per broker CPU-s")
        create_topic(port, "small", 1)
        records = batch(100, 10 * 108)
        frames = [produce_frame("small", 0, records, cid=i + 1) for i in range(group)]
        spec = {"blobs": [b"".join(frames)], "per_blob": group, "window": window, "total": n // conns,
                "api": ApiKey.PRODUCE, "version": PRODUCE_V}
        with self.measure("produce-small") as m:
            elapsed, _ = run_pipelines(port, [dict(spec) for _ in range(conns)])
        rates.append(done / elapsed)
        self.report(f"{'acks=1 Produce/s (10 x 100 B), 4 x 64 in flight' + tag:50s} {done / elapsed:11,.0f}  "
                    f"{m.per_cpu(done):11,.0f} per broker CPU-s")
        self.stop_broker()
        return rates

    def small_compared(self) -> None:
        """The small-request cases with every module as Python (``KBROKER_PURE_PYTHON=1``), then as the
        install built them (protocol/compiled.py), in alternating rounds; the ratios of the medians of each
        (the machine's speed drifts between rounds) and of the best."""
        pure: list[list[float]] = []
        built: list[list[float]] = []
        for _ in range(self.args.compare_rounds):
            os.environ[PURE_PYTHON_ENV] = "1"
            try:
                pure.append(self.small(" [Python]"))
            finally:
                os.environ.pop(PURE_PYTHON_ENV, None)
            built.append(self.small(" [compiled]"))
        for i, what in enumerate(("Heartbeats/s", "ConsumerGroupHeartbeats/s", "acks=1 small Produce/s")):
            med_pure, med_built = statistics.median(r[i] for r in pure), statistics.median(r[i] for r in built)
            best_pure, best_built = max(r[i] for r in pure), max(r[i] for r in built)
            self.report(f"{what + ' compiled / Python':50s} {med_built / med_pure:11.2f}x median "
                        f"({med_built:,.0f} against {med_pure:,.0f}), {best_built / best_pure:.2f}x best "
                        f"({best_built:,.0f} against {best_pure:,.0f}) of {len(pure)} rounds each")

    def many(self) -> None:
        a = self.args
        port = self.start_broker("many", [f"log.retention.check.interval.ms={a.retention_check_ms}"])
        create_topic(port, "one", 1)
        create_topic(port, "many", 10)
        total = a.ingest_mb * MB
        if self.cgroup is not None:
            # the page cache the broker is held to, filled first: every write measured below reuses its pages
            create_topic(port, "fill", 1)
            fill = int(a.broker_memory_mb * 2**20 * 1.1)
            rate, _ = self.produce_rate(port, "fill", 1, 1000, 1_000_000, fill, 8, case="many-fill")
            print(f"page cache filled first: {fill / MB:,.0f} MB in 1 MB batches at {rate / MB:,.0f} MB/s", flush=True)
        single, single_cpu = self.produce_rate(port, "one", 1, 1000, 65_536, total, 8, case="many-single")
        agg, agg_cpu = self.produce_rate(port, "many", 10, 1000, 65_536, total, 2, conns=100, case="many-100")
        self.report(f"{'ingest 64 KiB batches, 1 connection':50s} {single / MB:9.1f} MB/s  "
                    f"{single_cpu / MB:7.1f} MB per broker CPU-s")
        self.report(f"{'ingest 64 KiB batches, 100 connections x 10 parts':50s} {agg / MB:9.1f} MB/s  "
                    f"{agg / single:6.1%} of one connection; {agg_cpu / MB:7.1f} MB per broker CPU-s "
                    f"({agg_cpu / single_cpu:6.1%})")
        # latency at half the peak (the better of the two figures), spread over the 100 connections, for each
        # acks setting; on a topic with retention, so that segment rolls and deletions happen during the run
        create_topic(port, "latency", 10, configs={"segment.bytes": str(a.latency_segment_mb << 20),
                                                   "retention.bytes": str(a.latency_retention_mb << 20)})
        records = batch(1000, 65_536)
        target = max(single, agg) / 2 if a.latency_rate_mb is None else a.latency_rate_mb * MB  # bytes/s
        rate = target / len(records)  # requests/s in all
        seconds = max(5.0, a.latency_seconds)
        for acks in a.latency_acks.split(","):
            self.latency(port, records, rate, seconds, -1 if acks == "all" else int(acks))
        self.stop_broker()

    def latency(self, port: int, records: bytes, rate: float, seconds: float, acks: int) -> None:
        """Produce latency of 100 connections sending ``rate`` requests/s in all for ``seconds``."""
        per_conn = max(10, int(rate * seconds / 100))
        latencies: list[float] = []
        arrivals: list[float] = []
        specs = [{"blobs": [produce_frame("latency", c % 10, records, acks=acks)], "per_blob": 1, "window": 1 << 30,
                  "total": per_conn, "api": ApiKey.PRODUCE, "version": PRODUCE_V, "rate": rate / 100,
                  "latencies": latencies, "arrivals": arrivals,
                  # each connection's schedule is offset by 1/100 of its interval (c / rate), so the 100 send
                  # evenly; --latency-lockstep starts all at once, a burst of 100 requests every interval
                  "phase": 0.0 if self.args.latency_lockstep else c / rate} for c in range(100)]
        assert self.broker is not None and self.broker.proc is not None
        sampler = Sampler(self.broker.proc.pid, cpu=self.args.broker_cpu)
        sampler.start()
        begin = time.perf_counter()
        with self.measure(f"latency-acks{acks}"):
            elapsed, _ = run_pipelines(port, specs)
        sampler.halt.set()
        sampler.join()
        st, stalls = latency_stats(latencies, arrivals, STALL)
        name = "all" if acks == -1 else str(acks)
        at = "half the peak" if self.args.latency_rate_mb is None else "a set rate"
        self.report(f"{f'produce latency acks={name} at {at}, 100 conns':50s} p50 {st['p50']:7.2f} ms  "
                    f"p99 {st['p99']:7.2f} ms  p99.9 {st['p99.9']:7.2f} ms  max {st['max']:7.1f} ms; "
                    f"{st['over']:,} responses over {STALL * 1000:.0f} ms in {st['stalls']:,} stalls "
                    f"({rate * len(records) / MB:.0f} MB/s, {len(latencies):,} requests in {elapsed:.0f} s; "
                    f"page cache dirty up to {max((x[1] for x in sampler.samples), default=0) / MB:.0f} MB)")
        for s in sorted(stalls, key=lambda s: -s.worst)[:5]:
            # the late responses were sent (scheduled) up to ``worst`` before they arrived
            x = sampler.around(s.start - s.worst, s.end)
            print(f"  stall at +{s.start - begin:6.1f} s for {(s.end - s.start) * 1000:5.0f} ms: worst "
                  f"{s.worst * 1000:5.0f} ms, {s.responses:,} late responses; over the {x.span:.2f} s around it the "
                  f"broker's loop ran {x.run:.2f} s (user {x.user:.2f}, kernel {x.system:.2f}) and waited "
                  f"{x.wait:.2f} s for a CPU, the hypervisor took {x.steal:.2f} s of that CPU; dirty up to "
                  f"{x.dirty / MB:.0f} MB, writeback up to {x.writeback / MB:.0f} MB", flush=True)

    def memory(self) -> None:
        a = self.args
        port = self.start_broker("memory")
        create_topic(port, "memory", 4)
        assert self.broker is not None and self.broker.proc is not None
        pid = self.broker.proc.pid
        peak = [rss_bytes(pid)]
        stop = threading.Event()

        def sample() -> None:
            while not stop.wait(0.05):
                peak[0] = max(peak[0], rss_bytes(pid))

        t = threading.Thread(target=sample, daemon=True)
        t.start()
        before = rss_bytes(pid)
        rate, _ = self.produce_rate(port, "memory", 4, 1000, 1_000_000, int(a.memory_gb * 1000 * MB), 8, conns=4,
                                    case="memory")
        stop.set()
        t.join()
        self.report(f"{f'broker RSS ingesting {a.memory_gb:g} GB (4 conns x 8 x 1 MB)':50s} peak "
                    f"{peak[0] / 2**20:7.1f} MiB (at start {before / 2**20:.1f} MiB; {rate / MB:.0f} MB/s)")
        self.stop_broker()


STALL = 0.050  # a response later than this after its scheduled send counts as part of a stall


@dataclasses.dataclass
class Stall:
    """Late responses (over the stall threshold) arriving within the threshold of each other."""

    start: float  # arrival of the first, seconds
    end: float  # arrival of the last
    worst: float  # the largest latency, seconds
    responses: int


def latency_stats(latencies: list[float], arrivals: list[float], stall: float) -> tuple[dict[str, float], list[Stall]]:
    """p50/p99/p99.9/max in ms of ``latencies`` (seconds), the number of responses later than ``stall``, and
    the stalls they make up: late responses arriving (``arrivals``, seconds) within ``stall`` of the previous
    late one belong to the same stall."""
    stalls: list[Stall] = []
    for x, at in zip(latencies, arrivals, strict=True):
        if x > stall:
            if stalls and at - stalls[-1].end <= stall:
                last = stalls[-1]
                last.end, last.worst, last.responses = at, max(last.worst, x), last.responses + 1
            else:
                stalls.append(Stall(at, at, x, 1))
    ordered = sorted(latencies)
    n = len(ordered)

    def q(f: float) -> float:
        return ordered[min(n - 1, int(n * f))] * 1000

    return ({"p50": q(0.5), "p99": q(0.99), "p99.9": q(0.999), "max": ordered[-1] * 1000,
             "over": sum(s.responses for s in stalls), "stalls": len(stalls)}, stalls)


class Sampler(threading.Thread):
    """Every ``interval``: the kernel's dirty and under-writeback page cache (``/proc/meminfo``), the
    broker's main thread's time on a CPU and waiting for one (``/proc/<pid>/schedstat``, ns), that time split
    into user and kernel (``/proc/<pid>/task/<pid>/stat``, :func:`cpu_times`), and the time the hypervisor took from
    the broker's CPU (``cpu`` in ``/proc/stat``: steal, clock ticks; None: the whole machine's)."""

    def __init__(self, pid: int, interval: float = 0.25, cpu: int | None = None) -> None:
        super().__init__(daemon=True)
        self.pid, self.interval = pid, interval
        self.cpu_line = "cpu " if cpu is None else f"cpu{cpu} "
        # (perf_counter, dirty, writeback, run ns, wait ns, user s, system s, steal ticks)
        self.samples: list[tuple[float, int, int, int, int, float, float, int]] = []
        self.halt = threading.Event()

    def run(self) -> None:
        while not self.halt.wait(self.interval):
            values = {}
            with open("/proc/meminfo") as fh:
                for line in fh:
                    key, _, rest = line.partition(":")
                    if key in ("Dirty", "Writeback"):
                        values[key] = int(rest.split()[0]) * 1024
            steal = 0
            with open("/proc/stat") as fh:
                for line in fh:
                    if line.startswith(self.cpu_line):
                        steal = int(line.split()[8])
                        break
            try:
                with open(f"/proc/{self.pid}/schedstat") as fh:
                    run, wait = (int(x) for x in fh.read().split()[:2])
                user, system = cpu_times(self.pid, thread=self.pid)
            except OSError:
                run = wait = 0
                user = system = 0.0
            self.samples.append((time.perf_counter(), values.get("Dirty", 0), values.get("Writeback", 0), run, wait,
                                 user, system, steal))

    def around(self, start: float, end: float) -> Around:
        """From the sample before ``start`` to the one after ``end``."""
        samples = self.samples or [(0.0, 0, 0, 0, 0, 0.0, 0.0, 0)]
        first = max((i for i, x in enumerate(samples) if x[0] <= start), default=0)
        last = min((i for i, x in enumerate(samples) if x[0] >= end), default=len(samples) - 1)
        span = samples[first:last + 1]
        a, b = samples[first], samples[last]
        tick = os.sysconf("SC_CLK_TCK")
        return Around(max(x[1] for x in span), max(x[2] for x in span), b[0] - a[0], (b[3] - a[3]) / 1e9,
                      (b[4] - a[4]) / 1e9, b[5] - a[5], b[6] - a[6], (b[7] - a[7]) / tick)


class Around(NamedTuple):
    """What :class:`Sampler` saw around a stall: the largest Dirty and Writeback bytes, the seconds between
    the samples, the broker's main thread's seconds on a CPU (``run``: of it ``user`` and ``system``) and
    waiting for one, and the seconds the hypervisor took from the broker's CPU (``steal``)."""

    dirty: int
    writeback: int
    span: float
    run: float
    wait: float
    user: float
    system: float
    steal: float


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of process ``pid`` (all its threads) so far."""
    user, system = cpu_times(pid)
    return user + system


def cpu_times(pid: int, thread: int | None = None) -> tuple[float, float]:
    """(user, system) CPU seconds of process ``pid`` (all its threads), or of its thread ``thread``, so far."""
    with open(f"/proc/{pid}/stat" if thread is None else f"/proc/{pid}/task/{thread}/stat") as fh:
        fields = fh.read().rpartition(")")[2].split()
    tick = os.sysconf("SC_CLK_TCK")
    return int(fields[11]) / tick, int(fields[12]) / tick


def rss_bytes(pid: int) -> int:
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def wait_for_coordinator(sock: socket.socket, key: str, key_type: int = 0) -> None:
    """Ask FindCoordinator until the coordinator of ``key`` is available (its partition loaded)."""
    deadline = time.monotonic() + 30
    while True:
        resp = call(sock, ApiKey.FIND_COORDINATOR, 4, {"key_type": key_type, "coordinator_keys": [key]})
        if resp.coordinators[0].error_code == 0:
            return
        if time.monotonic() > deadline:
            raise SystemExit(f"no coordinator: {resp}")
        time.sleep(0.1)


def heartbeat_frames(port: int) -> list[bytes]:
    """Join a one-member group (JoinGroup two-step, SyncGroup) and pre-encode its Heartbeats."""
    group = "raw-wire"
    with socket.create_connection(("127.0.0.1", port)) as sock:
        wait_for_coordinator(sock, group)
        join = {"group_id": group, "session_timeout_ms": 30000, "rebalance_timeout_ms": 30000, "member_id": "",
                "group_instance_id": None, "protocol_type": "consumer", "reason": None,
                "protocols": [{"name": "range", "metadata": b"\0\0\0\0\0\0\0\0\0\0"}]}
        resp = call(sock, ApiKey.JOIN_GROUP, 9, join)
        if resp.error_code == 79:  # MEMBER_ID_REQUIRED
            join["member_id"] = resp.member_id
            resp = call(sock, ApiKey.JOIN_GROUP, 9, join)
        if resp.error_code:
            raise SystemExit(f"JoinGroup failed: {resp.error_code}")
        member, generation = resp.member_id, resp.generation_id
        resp = call(sock, ApiKey.SYNC_GROUP, 5, {"group_id": group, "generation_id": generation, "member_id": member,
                                                  "group_instance_id": None, "protocol_type": "consumer",
                                                  "protocol_name": "range",
                                                  "assignments": [{"member_id": member, "assignment": b""}]})
        if resp.error_code:
            raise SystemExit(f"SyncGroup failed: {resp.error_code}")
    body = {"group_id": group, "generation_id": generation, "member_id": member, "group_instance_id": None}
    return [encode_request(ApiKey.HEARTBEAT, 4, i + 1, "raw-wire", body) for i in range(64)]


CGH_V = APIS[ApiKey.CONSUMER_GROUP_HEARTBEAT].max_version


def consumer_group_heartbeat_frames(port: int, topic: str = "raw-wire-cgh") -> list[bytes]:
    """One KIP-848 member of a group subscribed to a one-partition topic, heartbeating until it owns the
    partition and has acknowledged it; then its steady-state ConsumerGroupHeartbeats pre-encoded (the
    member's epoch, every optional field null: nothing changed since the last heartbeat)."""
    group = "raw-wire-cgh"
    create_topic(port, topic, 1)
    member = str(uuid.uuid4())
    with socket.create_connection(("127.0.0.1", port)) as sock:
        wait_for_coordinator(sock, group)
        body: dict[str, Any] = {"group_id": group, "member_id": member, "member_epoch": 0, "instance_id": None,
                                "rack_id": None, "rebalance_timeout_ms": 30_000, "subscribed_topic_names": [topic],
                                "subscribed_topic_regex": None, "server_assignor": None, "topic_partitions": []}
        owned: list[dict[str, Any]] | None = None
        deadline = time.monotonic() + 30
        while True:
            resp = call(sock, ApiKey.CONSUMER_GROUP_HEARTBEAT, CGH_V, body)
            if resp.error_code:
                raise SystemExit(f"ConsumerGroupHeartbeat failed: {resp.error_code} {resp.error_message}")
            steady = body["topic_partitions"] is None and resp.assignment is None
            if resp.assignment is not None:
                owned = [{"topic_id": tp.topic_id, "partitions": list(tp.partitions)}
                         for tp in resp.assignment.topic_partitions]
            if steady and owned and any(tp["partitions"] for tp in owned):
                body = {**body, "member_epoch": resp.member_epoch}
                break
            if time.monotonic() > deadline:
                raise SystemExit(f"no assignment: {resp}")
            # acknowledge what was assigned (the reconciled partitions), then heartbeat with nothing changed
            body = {**body, "member_epoch": resp.member_epoch, "rebalance_timeout_ms": -1,
                    "subscribed_topic_names": None,
                    "topic_partitions": owned if resp.assignment is not None else None}
            if resp.assignment is None and not owned:
                time.sleep(0.1)
    return [encode_request(ApiKey.CONSUMER_GROUP_HEARTBEAT, CGH_V, i + 1, "raw-wire", body) for i in range(64)]


def fetch_all(port: int, topic: str, partition_max: int, tls: ssl.SSLContext | None = None) -> tuple[int, float]:
    """Read the partition from offset 0 to its end, one Fetch at a time; (record bytes, seconds).

    Each response is read as it arrives, in pieces of at most ``limits.CHUNK`` bytes into one reused
    buffer — the way the sendfile limit's receiver reads — and only its batch headers are looked at
    (for the next fetch offset), so the load generator adds no copy of the records the limit does
    not have."""
    assert FETCH_V >= 13, "the response layout below is Fetch v13+ (topic ids, flexible versions)"
    raw = socket.create_connection(("127.0.0.1", port))
    raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    with tls.wrap_socket(raw, server_hostname="localhost") if tls else raw as sock:
        meta = call(sock, ApiKey.METADATA, 12, {"topics": [{"name": topic}], "allow_auto_topic_creation": False})
        topic_id = meta.topics[0].topic_id
        offsets = call(sock, ApiKey.LIST_OFFSETS, 7, {"replica_id": -1, "isolation_level": 0, "topics": [
            {"name": topic, "partitions": [{"partition_index": 0, "timestamp": -1, "current_leader_epoch": -1}]}]})
        end = offsets.topics[0].partitions[0].offset
        offset, nbytes = 0, 0
        piece = memoryview(bytearray(CHUNK))
        start = time.perf_counter()
        while offset < end:
            body = {"replica_id": -1, "max_wait_ms": 500, "min_bytes": 1, "max_bytes": 50 << 20,
                    "isolation_level": 0, "session_id": 0, "session_epoch": -1,
                    "topics": [{"topic": topic, "topic_id": topic_id, "partitions": [
                        {"partition": 0, "fetch_offset": offset, "log_start_offset": -1,
                         "partition_max_bytes": partition_max}]}], "forgotten_topics_data": [], "rack_id": ""}
            sock.sendall(encode_request(ApiKey.FETCH, FETCH_V, 1, "raw-wire", body))
            records, next_offset = _stream_fetch_response(sock, piece)
            if next_offset is None:
                raise SystemExit(f"Fetch at offset {offset} returned no whole batch")
            nbytes += records
            offset = next_offset
        return nbytes, time.perf_counter() - start


_BATCH_HEAD = 27  # base offset, length, leader epoch, magic, crc, attributes, last offset delta


class _BatchWalker:
    """Follows the batch headers of a record set arriving in pieces: remembers the offset after the
    last whole batch, copying only a header split between two pieces."""

    def __init__(self, length: int) -> None:
        self.length = length  # bytes of the record set
        self.batch_at = 0  # position of the next batch header in the record set
        self.carry = b""  # the first bytes of that header when it started in an earlier piece
        self.next_offset: int | None = None

    def feed(self, data: memoryview | bytes, p0: int) -> None:
        """``data`` holds the record set's bytes from position ``p0`` on (it may run past its end)."""
        p_end = p0 + len(data)
        while self.batch_at + _BATCH_HEAD <= self.length:
            at = self.batch_at
            if at + _BATCH_HEAD > p_end:  # the header goes on in the next piece
                if at < p_end:
                    self.carry = (self.carry if at < p0 else b"") + bytes(data[max(at - p0, 0):])
                return
            if at >= p0:
                head: memoryview | bytes = data[at - p0:at - p0 + _BATCH_HEAD]
            else:
                head = self.carry + bytes(data[:at + _BATCH_HEAD - p0])
            base, blen = struct.unpack_from(">qi", head, 0)
            (delta,) = struct.unpack_from(">i", head, 23)
            self.carry = b""
            if at + 12 + blen > self.length:  # a partial batch ends the set
                self.batch_at = self.length
                return
            self.next_offset = base + delta + 1
            self.batch_at = at + 12 + blen


def _stream_fetch_response(sock: socket.socket, piece: memoryview) -> tuple[int, int | None]:
    """Receive one single-partition Fetch response; (record bytes, the offset after its last whole batch)."""
    (size,) = _size.unpack(read_exactly(sock, 4))
    head = bytes(read_exactly(sock, min(size, 256)))
    pos = 4  # correlation id
    _, pos = rd_uvarint(head, pos)  # header tagged fields (none)
    pos += 4 + 2 + 4  # throttle, error, session id
    _, pos = rd_uvarint(head, pos)  # responses
    pos += 16  # topic id
    _, pos = rd_uvarint(head, pos)  # partitions
    (error,) = struct.unpack_from(">h", head, pos + 4)
    if error:
        raise SystemExit(f"Fetch error {error}")
    pos += 4 + 2 + 8 + 8 + 8  # index, error, high watermark, last stable offset, log start
    aborted, pos = rd_uvarint(head, pos)
    assert aborted <= 1, "no aborted transactions expected"
    pos += 4  # preferred read replica
    n, pos = rd_uvarint(head, pos)
    walker = _BatchWalker(max(n - 1, 0))
    walker.feed(head[pos:], 0)
    received = len(head)
    while received < size:
        k = sock.recv_into(piece[:min(len(piece), size - received)])
        if not k:
            raise ConnectionError("broker closed the connection")
        walker.feed(piece[:k], received - pos)
        received += k
    return walker.length, walker.next_offset


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", default="ingest,egress,small,many,memory,tls")
    ap.add_argument("--ingest-mb", type=int, default=2000, help="MB produced per ingest case")
    ap.add_argument("--memory-gb", type=float, default=10.0, help="GB ingested by the memory case")
    ap.add_argument("--tls-rounds", type=int, default=2, help="alternating rounds of the tls case (best kept)")
    ap.add_argument("--small-requests", type=int, default=400_000, help="requests per small-request case")
    ap.add_argument("--latency-seconds", type=float, default=10.0, help="seconds of each latency run")
    ap.add_argument("--latency-acks", default="1,all", help="the acks settings of the latency runs")
    ap.add_argument("--latency-rate-mb", type=float, default=None,
                    help="the latency runs' rate in MB/s (default: half the peak the many case measured)")
    ap.add_argument("--latency-lockstep", action="store_true",
                    help="the latency runs' 100 connections send at the same instants (a burst of 100 requests "
                         "every interval) instead of evenly spread")
    ap.add_argument("--latency-segment-mb", type=int, default=128, help="segment.bytes of the latency topic (MiB)")
    ap.add_argument("--latency-retention-mb", type=int, default=512,
                    help="retention.bytes of each of the latency topic's 10 partitions (MiB)")
    ap.add_argument("--retention-check-ms", type=int, default=30_000,
                    help="log.retention.check.interval.ms of the many case's broker")
    cpus = os.cpu_count() or 1
    ap.add_argument("--broker-cpu", type=int, default=0 if cpus >= 2 else None)
    ap.add_argument("--loadgen-cpu", type=int, default=1 if cpus >= 2 else None)
    ap.add_argument("--broker-memory-mb", type=int, default=0, metavar="MIB",
                    help="hold the broker's memory, its page cache included, to this many MiB (a memory cgroup): "
                         "its writes then reuse its own page cache's pages, as on a machine full of a "
                         "long-running broker's log, instead of taking free memory (0: not held)")
    ap.add_argument("--broker-set", action="append", default=[], metavar="NAME=VALUE",
                    help="a broker setting for every case's broker (repeatable)")
    ap.add_argument("--profile", default=None, help="directory for py-spy profiles of each case")
    ap.add_argument("-v", "--verbose", action="store_true", help="print the broker's user/system CPU per case")
    ap.add_argument("--cprofile", default=None, help="directory for cProfile output of each broker run")
    ap.add_argument("--dir", default=None, help="parent of the temporary data directories")
    ap.add_argument("--broker-logs", default=None, metavar="DIR",
                    help="keep each broker's log there (with --broker-set event.loop.stall.warn.ms=N, the stack "
                         "of every event loop stall over N ms)")
    ap.add_argument("--compare-pure", action="store_true",
                    help="the small cases also with every module as Python (KBROKER_PURE_PYTHON=1), and the ratios")
    ap.add_argument("--compare-rounds", type=int, default=2, help="alternating rounds of --compare-pure")
    args = ap.parse_args()
    if (args.profile or args.cprofile) and not args.compare_pure:
        # the profilers see Python frames only: profile the modules as Python (protocol/compiled.py)
        os.environ[PURE_PYTHON_ENV] = "1"
        print(f"profiling: {PURE_PYTHON_ENV}=1 (every module as Python, so the profile sees it)", flush=True)
    for d in (args.profile, args.cprofile):
        if d:
            os.makedirs(d, exist_ok=True)
    cases = set(args.cases.split(","))
    bench = Bench(args)
    print(f"load average {os.getloadavg()[0]:.2f}; broker on CPU {args.broker_cpu}, load generator on CPU "
          f"{args.loadgen_cpu}", flush=True)
    try:
        with pinned(args.loadgen_cpu):
            if cases & {"ingest", "egress"}:
                bench.ingest_and_egress("egress" in cases)
            if "small" in cases and args.compare_pure:
                bench.small_compared()
            elif "small" in cases:
                bench.small()
            if "many" in cases:
                bench.many()
            if "memory" in cases:
                bench.memory()
            if "tls" in cases:
                bench.tls()
    finally:
        bench.stop_broker()
        shutil.rmtree(bench.tmp, ignore_errors=True)
    print("\nsummary")
    for line in bench.results:
        print("  " + line)
    print(f"load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
