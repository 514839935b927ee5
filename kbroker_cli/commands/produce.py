"""``kbroker produce TOPIC``: one record per input line (stdin or ``--file``), with a progress report.

Lines are read off the event loop so the producer keeps sending meanwhile; empty lines are skipped
and ``\\r\\n`` endings stripped; ``--key-separator`` splits a line into key and value.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import sys
import time
from collections.abc import Iterator
from typing import IO, Any

from client import Producer
from client.errors import KafkaError, KafkaTimeoutError
from kbroker_cli.command import Command, arg
from kbroker_cli.common import EXIT_OK, CliError, Ctx, UsageError, admin, explain, parse_kv, start

command = Command(
    "produce", "produce one record per input line",
    arg("topic"),
    arg("-f", "--file", help="read records from this file instead of stdin"),
    arg("-K", "--key-separator", metavar="SEP", help="split each line at the first SEP into key and value"),
    arg("-p", "--partition", type=int, help="send every record to this partition"),
    arg("-H", "--header", action="append", default=[], metavar="NAME=VALUE",
        help="add this header to every record (repeatable)"),
    arg("--acks", choices=("0", "1", "all"), default="all"),
    arg("-z", "--compression", choices=("none", "gzip", "snappy", "lz4", "zstd"), default="none"),
    arg("--progress", action="store_true", help="report progress on stderr even when it is not a terminal"),
    arg("--no-progress", action="store_true", help="never report progress"),
    arg("--progress-every", type=int, default=10000, metavar="N",
        help="progress update every N records (default 10000; terminals also every 0.2 s)"),
    arg("-q", "--quiet", action="store_true", help="no summary line on stderr"),
)


class Progress:
    """Progress on stderr: a redrawn bar on a terminal, a line per update otherwise."""

    def __init__(self, enabled: bool, every: int, total_bytes: int | None, stream: IO[str]) -> None:
        self.enabled = enabled
        self.every = max(1, every)
        self.total = total_bytes if total_bytes else None
        self.stream = stream
        self.tty = stream.isatty()
        self.started = time.monotonic()
        self._last_draw = 0.0
        self._next_count = self.every
        self._drawn = False

    def update(self, records: int, nbytes: int, force: bool = False) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        due = records >= self._next_count or (self.tty and now - self._last_draw >= 0.2)
        if not (due or force):
            return
        while self._next_count <= records:
            self._next_count += self.every
        self._last_draw = now
        elapsed = max(now - self.started, 1e-6)
        text = f"{records} records, {_human(nbytes)}, {records / elapsed:,.0f} records/s"
        if self.total:
            frac = min(1.0, nbytes / self.total)
            filled = int(frac * 30)
            text = f"[{'#' * filled}{'.' * (30 - filled)}] {frac * 100:5.1f}% " + text
        if self.tty:
            self.stream.write("\r" + text + "\033[K")
        else:
            self.stream.write(text + "\n")
        self.stream.flush()
        self._drawn = True

    def finish(self) -> None:
        if self.enabled and self.tty and self._drawn:
            self.stream.write("\n")
            self.stream.flush()


def _human(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"


@command.runs
async def produce(ctx: Ctx, args: argparse.Namespace) -> int:
    headers = [(k, v.encode()) for k, v in parse_kv(args.header, "--header").items()] or None
    sep = args.key_separator.encode() if args.key_separator else None
    if args.key_separator == "":
        raise UsageError("--key-separator must not be empty")
    total: int | None = None
    if args.file:
        try:
            stream: IO[bytes] = open(args.file, "rb")  # noqa: SIM115 - closed below
        except OSError as exc:
            raise CliError(f"cannot read {args.file}: {exc.strerror}") from None
        with contextlib.suppress(OSError):
            total = os.fstat(stream.fileno()).st_size
    else:
        stream = sys.stdin.buffer
    show = not args.no_progress and (args.progress or sys.stderr.isatty())
    progress = Progress(show, args.progress_every, total, sys.stderr)
    async with admin(ctx) as client:
        md = await client.net.refresh_metadata()
        info = md.topics.get(args.topic)
        if info is not None and args.partition is not None and args.partition not in info.partitions:
            raise CliError(f"topic {args.topic!r} has no partition {args.partition}")
    acks = -1 if args.acks == "all" else int(args.acks)
    producer = Producer(**ctx.common(), acks=acks, linger_ms=20, batch_size=256 * 1024,
                        compression_type=None if args.compression == "none" else args.compression)
    await start(producer, ctx)
    count = nbytes = 0
    failures: list[BaseException] = []
    pending: set[asyncio.Future[Any]] = set()

    def done(fut: asyncio.Future[Any]) -> None:
        pending.discard(fut)
        if not fut.cancelled() and fut.exception() is not None and len(failures) < 10:
            failures.append(fut.exception())  # type: ignore[arg-type]

    try:
        loop = asyncio.get_running_loop()
        reader = iter(stream)
        while True:
            # reading a pipe blocks: do it off the loop so the producer keeps sending meanwhile
            chunk = await loop.run_in_executor(None, _take, reader, 1000)
            if not chunk:
                break
            for raw in chunk:
                nbytes += len(raw)
                line = raw.rstrip(b"\n")
                if line.endswith(b"\r"):
                    line = line[:-1]
                if not line:
                    continue
                key: bytes | None = None
                value = line
                if sep is not None:
                    k, found, v = line.partition(sep)
                    if found:
                        key, value = k, v
                try:
                    fut = await producer.enqueue(args.topic, value=value, key=key, headers=headers,
                                                 partition=args.partition)
                except KafkaTimeoutError:
                    raise CliError(f"topic {args.topic!r} does not exist (and the broker did not create it)") \
                        from None
                except KafkaError as exc:
                    raise CliError(explain(exc, f"cannot produce to {args.topic!r}")) from None
                pending.add(fut)
                fut.add_done_callback(done)
                count += 1
                progress.update(count, nbytes)
            if failures:
                break
        await producer.flush(ctx.timeout_ms / 1000 * 6)
    finally:
        if stream is not sys.stdin.buffer:
            stream.close()
        progress.update(count, nbytes, force=True)
        progress.finish()
        await producer.close(5)
    if failures:
        raise CliError(f"delivery to {args.topic!r} failed: {failures[0]}")
    if not args.quiet:
        print(f"produced {count} record(s) to {args.topic!r}", file=sys.stderr)
    return EXIT_OK


def _take(it: Iterator[bytes], n: int) -> list[bytes]:
    out = []
    for line in it:
        out.append(line)
        if len(out) >= n:
            break
    return out
