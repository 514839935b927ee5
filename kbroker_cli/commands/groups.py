"""``kbroker groups list|describe|delete``: classic and consumer (KIP-848) groups.

``describe`` prints what ``kafka-consumer-groups --describe --members`` would: committed offsets and
lag per partition, then the members and their assignments (consumer groups add epochs and each
member's target assignment). :func:`describe_group` gathers it as plain data.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from client import Admin
from client.offsets import LATEST, list_offsets
from client.types import TopicPartition
from kbroker_cli.command import CommandGroup, arg, json_flag
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
)
from protocol.error_codes import ErrorCode

group = CommandGroup("groups", "list and describe consumer groups")


@group.command("list", "group ids with state and protocol type",
               json_flag())
async def list_groups(ctx: Ctx, args: argparse.Namespace) -> int:
    async with admin(ctx) as client:
        groups = sorted(await client.list_groups(), key=lambda g: g.group_id)
    if args.json:
        print(json.dumps([{"group": g.group_id, "state": g.state, "protocol_type": g.protocol_type,
                           "type": g.group_type or "classic"} for g in groups]))
        return EXIT_OK
    if not groups:
        return EXIT_OK
    rows = [["GROUP", "TYPE", "STATE", "PROTOCOL-TYPE"]]
    rows += [[g.group_id, g.group_type or "classic", g.state or "-", g.protocol_type or "-"] for g in groups]
    table(rows)
    return EXIT_OK


async def describe_group(client: Admin, group: str) -> dict[str, Any]:
    """Everything ``groups describe`` shows, as plain data."""
    does_not_exist = f"group {group!r} does not exist"
    with kafka_errors({ErrorCode.GROUP_ID_NOT_FOUND: does_not_exist, ErrorCode.INVALID_GROUP_ID: does_not_exist}):
        desc = (await client.describe_groups([group])).get(group)
    offsets = await client.list_group_offsets(group)
    if desc is None or (desc.state in ("Dead", "") and not offsets):
        raise CliError(does_not_exist)
    owner: dict[TopicPartition, Any] = {}
    for m in desc.members:
        for tp in m.assignment:
            owner[tp] = m
    missing = [tp for tp in owner if tp not in offsets]
    ends = {tp: off for tp, (off, _) in (await list_offsets(client.net, dict.fromkeys(missing, LATEST))).items()} \
        if missing else {}
    rows = []
    for tp in sorted(set(owner) | set(offsets)):
        m = owner.get(tp)
        info = offsets.get(tp)
        rows.append({
            "topic": tp.topic, "partition": tp.partition,
            "current_offset": info.offset if info else None,
            "log_end_offset": info.end_offset if info else ends.get(tp),
            "lag": info.lag if info else None,
            "consumer_id": m.member_id if m else None, "host": m.client_host if m else None,
            "client_id": m.client_id if m else None,
        })
    consumer = desc.group_type == "consumer"
    members = []
    for m in sorted(desc.members, key=lambda m: m.member_id):
        member = {"consumer_id": m.member_id, "group_instance_id": m.group_instance_id, "host": m.client_host,
                  "client_id": m.client_id, "assignment": [partition_label(tp) for tp in sorted(m.assignment)]}
        if consumer:
            member["member_epoch"] = m.member_epoch
            member["target_assignment"] = [partition_label(tp) for tp in sorted(m.target_assignment)]
        members.append(member)
    data = {"group": group, "type": desc.group_type, "state": desc.state, "protocol_type": desc.protocol_type,
            "protocol": desc.protocol, "members": members, "partitions": rows,
            "total_lag": sum(r["lag"] for r in rows if r["lag"] is not None)}
    if consumer:
        data["group_epoch"], data["assignment_epoch"] = desc.group_epoch, desc.assignment_epoch
    return data


@group.command("describe", "members, assignments, committed offsets and lag "
                           "(like kafka-consumer-groups --describe)",
               arg("group"),
               json_flag())
async def describe(ctx: Ctx, args: argparse.Namespace) -> int:
    async with admin(ctx) as client:
        data = await describe_group(client, args.group)
    if args.json:
        print(json.dumps(data))
        return EXIT_OK
    g = args.group
    if data["type"] == "consumer":
        print(f"Group {g!r} (consumer protocol): state {data['state']}, assignor {data['protocol'] or '-'}, "
              f"group epoch {data['group_epoch']}, assignment epoch {data['assignment_epoch']}, "
              f"{len(data['members'])} member(s), total lag {data['total_lag']}")
    else:
        print(f"Group {g!r}: state {data['state']}, protocol {data['protocol'] or '-'}, "
              f"{len(data['members'])} member(s), total lag {data['total_lag']}")
    if not data["members"]:
        print(f"Consumer group {g!r} has no active members.")
    print()
    rows = [["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID", "HOST",
             "CLIENT-ID"]]
    for r in data["partitions"]:
        rows.append([g, r["topic"], str(r["partition"]), dash(r["current_offset"]), dash(r["log_end_offset"]),
                     dash(r["lag"]), dash(r["consumer_id"]), host_label(r["host"]), dash(r["client_id"])])
    table(rows)
    if data["members"]:
        print()
        mrows = [["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS", "ASSIGNMENT"]]
        if data["type"] == "consumer":
            mrows[0] += ["EPOCH", "TARGET-ASSIGNMENT"]
        for m in data["members"]:
            row = [g, m["consumer_id"], host_label(m["host"]), dash(m["client_id"]), str(len(m["assignment"])),
                   ",".join(m["assignment"]) or "-"]
            if data["type"] == "consumer":
                row += [str(m["member_epoch"]), ",".join(m["target_assignment"]) or "-"]
            mrows.append(row)
        table(mrows)
    return EXIT_OK


@group.command("delete", "delete an empty group and its committed offsets",
               arg("group"))
async def delete(ctx: Ctx, args: argparse.Namespace) -> int:
    async with admin(ctx) as client:
        with kafka_errors({ErrorCode.GROUP_ID_NOT_FOUND: f"group {args.group!r} does not exist",
                           ErrorCode.NON_EMPTY_GROUP: f"group {args.group!r} still has members"}):
            await client.delete_groups([args.group])
    print(f"deleted group {args.group!r}", file=sys.stderr)
    return EXIT_OK
