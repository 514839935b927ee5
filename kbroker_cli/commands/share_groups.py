"""``kbroker share-groups list|describe|reset-offsets|delete``: share groups (KIP-932), as
``kafka-share-groups.sh`` does.

``describe`` prints each partition's share-partition start offset and lag, then the members and
their assignments (members may share partitions); ``reset-offsets`` moves the start offset of a
topic's partitions (the group must have no members); ``delete`` removes an empty share group and its
share state.  :func:`describe_share_group` gathers what ``describe`` shows as plain data.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from client import Admin
from client.offsets import EARLIEST, LATEST, list_offsets
from client.types import TopicPartition
from kbroker_cli.command import CommandGroup, arg, json_flag, one_of
from kbroker_cli.common import (
    EXIT_OK,
    CliError,
    Ctx,
    admin,
    dash,
    host_label,
    kafka_errors,
    partition_label,
    table,
    topic_partitions,
)
from protocol.error_codes import ErrorCode

group = CommandGroup("share-groups", "list, describe, reset and delete share groups (KIP-932)")


def _missing(group_id: str) -> dict[ErrorCode, str]:
    gone = f"share group {group_id!r} does not exist"
    return {ErrorCode.GROUP_ID_NOT_FOUND: gone, ErrorCode.INVALID_GROUP_ID: gone}


@group.command("list", "share group ids with their state",
               json_flag())
async def list_share_groups(ctx: Ctx, args: argparse.Namespace) -> int:
    async with admin(ctx) as client:
        groups = sorted((g for g in await client.list_groups() if g.group_type == "share"), key=lambda g: g.group_id)
    if args.json:
        print(json.dumps([{"group": g.group_id, "state": g.state} for g in groups]))
        return EXIT_OK
    if groups:
        table([["GROUP", "STATE"], *([g.group_id, g.state or "-"] for g in groups)])
    return EXIT_OK


async def describe_share_group(client: Admin, group_id: str) -> dict[str, Any]:
    """Everything ``share-groups describe`` shows, as plain data."""
    with kafka_errors(_missing(group_id)):
        desc = (await client.describe_share_groups([group_id]))[group_id]
        offsets = await client.list_share_group_offsets(group_id)
    partitions = [{"topic": tp.topic, "partition": tp.partition, "start_offset": info.offset,
                   "log_end_offset": info.end_offset, "lag": info.lag if info.lag >= 0 else None}
                  for tp, info in sorted(offsets.items())]
    members = [{"member_id": m.member_id, "host": m.client_host, "client_id": m.client_id,
                "member_epoch": m.member_epoch, "assignment": [partition_label(tp) for tp in sorted(m.assignment)]}
               for m in sorted(desc.members, key=lambda m: m.member_id)]
    return {"group": group_id, "state": desc.state, "assignor": desc.protocol, "group_epoch": desc.group_epoch,
            "assignment_epoch": desc.assignment_epoch, "members": members, "partitions": partitions,
            "total_lag": sum(p["lag"] for p in partitions if p["lag"] is not None)}


@group.command("describe", "members, assignments, start offsets and lag (like kafka-share-groups --describe)",
               arg("group"),
               json_flag())
async def describe(ctx: Ctx, args: argparse.Namespace) -> int:
    async with admin(ctx) as client:
        data = await describe_share_group(client, args.group)
    if args.json:
        print(json.dumps(data))
        return EXIT_OK
    g = args.group
    print(f"Share group {g!r}: state {data['state']}, assignor {data['assignor'] or '-'}, group epoch "
          f"{data['group_epoch']}, assignment epoch {data['assignment_epoch']}, {len(data['members'])} member(s), "
          f"total lag {data['total_lag']}")
    if not data["members"]:
        print(f"Share group {g!r} has no active members.")
    if data["partitions"]:
        print()
        rows = [["GROUP", "TOPIC", "PARTITION", "START-OFFSET", "LOG-END-OFFSET", "LAG"]]
        rows += [[g, p["topic"], str(p["partition"]), str(p["start_offset"]), dash(p["log_end_offset"]),
                  dash(p["lag"])] for p in data["partitions"]]
        table(rows)
    if data["members"]:
        print()
        rows = [["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "EPOCH", "#PARTITIONS", "ASSIGNMENT"]]
        rows += [[g, m["member_id"], host_label(m["host"]), dash(m["client_id"]), str(m["member_epoch"]),
                  str(len(m["assignment"])), ",".join(m["assignment"]) or "-"] for m in data["members"]]
        table(rows)
    return EXIT_OK


@group.command("reset-offsets", "move the start offset of a topic's partitions (the share group must be empty)",
               arg("group"),
               arg("--topic", required=True, help="the topic whose partitions are reset"),
               one_of(arg("--to-earliest", action="store_true", help="the first offset of each partition"),
                      arg("--to-latest", action="store_true", help="the end of each partition"),
                      arg("--to-offset", type=int, metavar="N", help="offset N of each partition"),
                      required=True),
               json_flag())
async def reset_offsets(ctx: Ctx, args: argparse.Namespace) -> int:
    if args.to_offset is not None and args.to_offset < 0:
        raise CliError("--to-offset must be at least 0")
    async with admin(ctx) as client:
        tps = [TopicPartition(args.topic, p) for p in await topic_partitions(client, args.topic)]
        if args.to_offset is not None:
            offsets = dict.fromkeys(tps, args.to_offset)
        else:
            where = EARLIEST if args.to_earliest else LATEST
            offsets = {tp: off for tp, (off, _) in (await list_offsets(client.net, dict.fromkeys(tps, where))).items()}
        with kafka_errors({ErrorCode.NON_EMPTY_GROUP: f"share group {args.group!r} has members: stop them first",
                           ErrorCode.GROUP_ID_NOT_FOUND: f"{args.group!r} is a group of another type"}):
            await client.alter_share_group_offsets(args.group, offsets)
    rows = [{"topic": tp.topic, "partition": tp.partition, "start_offset": off} for tp, off in sorted(offsets.items())]
    if args.json:
        print(json.dumps(rows))
    else:
        table([["GROUP", "TOPIC", "PARTITION", "NEW-START-OFFSET"],
               *([args.group, r["topic"], str(r["partition"]), str(r["start_offset"])] for r in rows)])
    return EXIT_OK


@group.command("delete", "delete an empty share group and its share state",
               arg("group"))
async def delete(ctx: Ctx, args: argparse.Namespace) -> int:
    async with admin(ctx) as client:
        with kafka_errors({**_missing(args.group),
                           ErrorCode.NON_EMPTY_GROUP: f"share group {args.group!r} still has members"}):
            await client.describe_share_groups([args.group])  # a share group's, not a group of another type
            await client.delete_groups([args.group])
    print(f"deleted share group {args.group!r}", file=sys.stderr)
    return EXIT_OK
