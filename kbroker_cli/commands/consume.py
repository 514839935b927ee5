"""``kbroker consume TOPIC``: print records with a kcat-like ``--format``, from chosen partitions and
offsets or as a member of a group that commits what was printed; ``--count``, ``--exit`` and
Ctrl-C stop it."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import re
import signal
import sys
from typing import Any

from client import Consumer
from client.errors import KafkaError, KafkaTimeoutError
from client.types import Record, TopicPartition
from kbroker_cli.command import Command, arg
from kbroker_cli.common import EXIT_OK, CliError, Ctx, UsageError, admin, start, topic_partitions

command = Command(
    "consume", "print records (kcat-like)",
    arg("topic"),
    arg("-o", "--offset", default=None, metavar="beginning|end|N|-N",
        help="where to start: beginning, end, an absolute offset N, or -N (N before the end); "
             "with --group only for partitions without a committed offset (beginning|end). "
             "Default: end, or the committed offset with --group"),
    arg("-c", "--count", type=int, metavar="N", help="exit after N records"),
    arg("-p", "--partition", type=int, action="append", metavar="P",
        help="only this partition (repeatable; not with --group)"),
    arg("-f", "--format", default="%s\\n", metavar="FMT", help="output format (default '%%s\\n')"),
    arg("-g", "--group", help="consume as a member of this group, committing what was printed"),
    arg("-e", "--exit", action="store_true",
        help="exit once the end of every partition (as of when it was assigned) is reached"),
    arg("--null", default="", metavar="TEXT", help="text printed for a null key or value"),
    formatter_class=argparse.RawDescriptionHelpFormatter,
    epilog="format tokens: %%t topic  %%p partition  %%o offset  %%k key  %%s value\n"
           "  %%T timestamp (ms)  %%K key length  %%S value length  %%h headers\n"
           "  %%%% a percent sign; escapes \\n \\t \\r \\\\",
)

_TOKEN = re.compile(r"%[ktpoTsKSh%]|\\[ntr\\]")
_ESCAPES = {"\\n": b"\n", "\\t": b"\t", "\\r": b"\r", "\\\\": b"\\"}


def compile_format(fmt: str, null: bytes = b"") -> Any:
    """Turn a kcat-style format into ``record -> bytes``."""
    parts: list[Any] = []
    pos = 0
    for m in _TOKEN.finditer(fmt):
        if m.start() > pos:
            parts.append(fmt[pos:m.start()].encode())
        tok = m.group()
        parts.append(_ESCAPES.get(tok, tok))
        pos = m.end()
    if pos < len(fmt):
        parts.append(fmt[pos:].encode())

    def render(r: Record) -> bytes:
        out = bytearray()
        for part in parts:
            if isinstance(part, bytes):
                out += part
            elif part == "%s":
                out += null if r.value is None else r.value
            elif part == "%k":
                out += null if r.key is None else r.key
            elif part == "%t":
                out += r.topic.encode()
            elif part == "%p":
                out += str(r.partition).encode()
            elif part == "%o":
                out += str(r.offset).encode()
            elif part == "%T":
                out += str(r.timestamp).encode()
            elif part == "%S":
                out += str(-1 if r.value is None else len(r.value)).encode()
            elif part == "%K":
                out += str(-1 if r.key is None else len(r.key)).encode()
            elif part == "%h":
                out += b",".join(k.encode() + b"=" + (v if v is not None else null) for k, v in r.headers or [])
            elif part == "%%":
                out += b"%"
        return bytes(out)

    return render


def _parse_offset(raw: str | None) -> tuple[str, int]:
    if raw is None:
        return "default", 0
    if raw in ("beginning", "earliest", "start"):
        return "beginning", 0
    if raw in ("end", "latest"):
        return "end", 0
    try:
        n = int(raw)
    except ValueError:
        raise UsageError(f"--offset must be beginning, end, N or -N, not {raw!r}") from None
    return ("relative", -n) if n < 0 else ("absolute", n)


@command.runs
async def consume(ctx: Ctx, args: argparse.Namespace) -> int:
    mode, n = _parse_offset(args.offset)
    if args.group and args.partition:
        raise UsageError("--partition cannot be combined with --group (the group assigns partitions)")
    if args.group and mode in ("absolute", "relative"):
        raise UsageError("with --group, --offset may only be beginning or end (used when nothing is committed)")
    if args.count is not None and args.count < 1:
        raise UsageError("--count must be at least 1")
    render = compile_format(args.format, args.null.encode())
    async with admin(ctx) as client:
        parts = await topic_partitions(client, args.topic)
    for p in args.partition or []:
        if p not in parts:
            raise CliError(f"topic {args.topic!r} has no partition {p}")
    config: dict[str, Any] = {**ctx.common(), "request_timeout_ms": max(ctx.timeout_ms, 30000),
                              "enable_auto_commit": False}
    if args.group:
        config.update(group_id=args.group, auto_offset_reset="earliest" if mode == "beginning" else "latest")
    else:
        config.update(auto_offset_reset="earliest" if mode == "beginning" else "latest")
    consumer = Consumer(**config)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    out = sys.stdout.buffer
    printed = 0
    ends: dict[TopicPartition, int] = {}
    try:
        await start(consumer, ctx)
        if args.group:
            consumer.subscribe([args.topic])
        else:
            tps = [TopicPartition(args.topic, p) for p in (args.partition or parts)]
            consumer.assign(tps)
            if mode == "beginning":
                await consumer.seek_to_beginning(*tps)
            elif mode in ("end", "default"):
                await consumer.seek_to_end(*tps)
            else:
                first = await consumer.beginning_offsets(tps)
                last = await consumer.end_offsets(tps)
                for tp in tps:
                    target = n if mode == "absolute" else last[tp] - n
                    consumer.seek(tp, max(first[tp], min(target, last[tp])))
        while not stop.is_set():
            if args.exit:
                assigned = consumer.assignment()
                new = [tp for tp in assigned if tp not in ends]
                if new:
                    ends.update(await consumer.end_offsets(new))
                if assigned and await _at_end(consumer, assigned, ends):
                    break
            getter = asyncio.ensure_future(consumer.getmany(timeout_ms=500))
            stopper = asyncio.ensure_future(stop.wait())
            await asyncio.wait([getter, stopper], return_when=asyncio.FIRST_COMPLETED)
            stopper.cancel()
            if not getter.done():
                getter.cancel()
                with contextlib.suppress(asyncio.CancelledError, KafkaError):
                    await getter
                break
            batch = getter.result()
            commit: dict[TopicPartition, int] = {}
            limit_hit = False
            for tp in sorted(batch):
                for r in batch[tp]:
                    out.write(render(r))
                    printed += 1
                    commit[tp] = r.offset + 1
                    if args.count is not None and printed >= args.count:
                        limit_hit = True
                        break
                if limit_hit:
                    break
            out.flush()
            if args.group and commit:
                await consumer.commit(commit)
            if limit_hit:
                break
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.remove_signal_handler(sig)
        with contextlib.suppress(Exception):
            await asyncio.wait_for(consumer.close(), 10)
    return EXIT_OK


async def _at_end(consumer: Consumer, assigned: set[TopicPartition], ends: dict[TopicPartition, int]) -> bool:
    for tp in assigned:
        try:
            if await consumer.position(tp) < ends[tp]:
                return False
        except KafkaTimeoutError:  # position not known yet
            return False
    return True
