"""``kbroker transactions list|describe``: transactional producers' transactions, as their coordinators see them."""

from __future__ import annotations

import argparse
import json
import time

from kbroker_cli.command import CommandGroup, arg, json_flag
from kbroker_cli.common import EXIT_OK, Ctx, admin, dash, kafka_errors, partition_label, table
from protocol.error_codes import ErrorCode

group = CommandGroup("transactions", "list and describe transactional producers' transactions")


@group.command("list", "transactional ids with producer id and state",
               arg("--state", action="append", default=[], metavar="STATE",
                   help="only these states (repeatable): Empty, Ongoing, PrepareCommit, PrepareAbort, "
                        "CompleteCommit, CompleteAbort, PrepareEpochFence"),
               json_flag())
async def list_transactions(ctx: Ctx, args: argparse.Namespace) -> int:
    async with admin(ctx) as client:
        listed = sorted(await client.list_transactions(args.state), key=lambda t: t.transactional_id)
    if args.json:
        print(json.dumps([{"transactional_id": t.transactional_id, "producer_id": t.producer_id, "state": t.state}
                          for t in listed]))
        return EXIT_OK
    if listed:
        table([["TRANSACTIONAL-ID", "PRODUCER-ID", "STATE"]]
              + [[t.transactional_id, str(t.producer_id), t.state] for t in listed])
    return EXIT_OK


@group.command("describe", "state, producer, timeout and partitions of transactional ids",
               arg("transactional_id", nargs="+"),
               json_flag())
async def describe(ctx: Ctx, args: argparse.Namespace) -> int:
    async with admin(ctx) as client:
        with kafka_errors({ErrorCode.TRANSACTIONAL_ID_NOT_FOUND: lambda exc: f"{exc}: no such transactional id"}):
            found = await client.describe_transactions(args.transactional_id)
    now = int(time.time() * 1000)
    rows = []
    for tid in args.transactional_id:
        t = found[tid]
        rows.append({"transactional_id": tid, "state": t.state, "producer_id": t.producer_id,
                     "producer_epoch": t.producer_epoch, "timeout_ms": t.timeout_ms,
                     "start_time_ms": t.start_time_ms,
                     "duration_ms": now - t.start_time_ms if t.start_time_ms >= 0 else None,
                     "partitions": [partition_label(tp) for tp in sorted(t.partitions)]})
    if args.json:
        print(json.dumps(rows))
        return EXIT_OK
    table([["TRANSACTIONAL-ID", "STATE", "PRODUCER-ID", "EPOCH", "TIMEOUT-MS", "DURATION-MS", "PARTITIONS"]]
          + [[r["transactional_id"], r["state"], str(r["producer_id"]), str(r["producer_epoch"]),
              str(r["timeout_ms"]), dash(r["duration_ms"]), ",".join(r["partitions"]) or "-"] for r in rows])
    return EXIT_OK
