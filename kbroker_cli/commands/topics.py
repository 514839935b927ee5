"""``kbroker topics list|create|describe|delete``: the topics of the cluster.

``describe`` prints the ``kafka-topics --describe`` layout plus each partition's log start and end
offsets, and the configs set on the topic itself.
"""

from __future__ import annotations

import argparse
import json
import sys

from client import Admin, NewTopic
from client.errors import KafkaError
from client.offsets import LATEST, list_offsets
from client.types import TopicPartition
from kbroker_cli.command import CommandGroup, arg, json_flag
from kbroker_cli.common import (
    EXIT_OK,
    CliError,
    Ctx,
    UsageError,
    admin,
    kafka_errors,
    parse_kv,
    replicas_and_isr,
    topic_partitions,
)
from protocol.api import ApiKey
from protocol.error_codes import ErrorCode

CONFIG_SOURCE_TOPIC = 1  # DescribeConfigs config_source: DYNAMIC_TOPIC_CONFIG (set on the topic)
RESOURCE_TOPIC = 2

group = CommandGroup("topics", "list, create, describe, delete topics")


@group.command("list", "topic names, one per line",
               arg("--internal", action="store_true", help="include internal topics (__consumer_offsets)"),
               json_flag("JSON output: {name: partitions}"))
async def list_topics(ctx: Ctx, args: argparse.Namespace) -> int:
    async with admin(ctx) as client:
        topics = await client.list_topics(include_internal=args.internal)
    if args.json:
        print(json.dumps(dict(sorted(topics.items()))))
    else:
        for name in sorted(topics):
            print(name)
    return EXIT_OK


@group.command("create", "create a topic",
               arg("name"),
               arg("-p", "--partitions", type=int, required=True, metavar="N"),
               arg("--replication-factor", type=int, default=-1, metavar="N",
                   help="replicas per partition (default: the broker's default.replication.factor)"),
               arg("-c", "--config", action="append", default=[], metavar="KEY=VALUE",
                   help="topic config, e.g. retention.ms=86400000 (repeatable)"),
               arg("--if-not-exists", action="store_true", help="succeed if the topic exists already"))
async def create(ctx: Ctx, args: argparse.Namespace) -> int:
    if args.partitions < 1:
        raise UsageError("--partitions must be at least 1")
    configs = parse_kv(args.config, "--config")
    async with admin(ctx) as client:
        with kafka_errors({ErrorCode.TOPIC_ALREADY_EXISTS: f"topic {args.name!r} already exists",
                           ErrorCode.INVALID_TOPIC_EXCEPTION: f"invalid topic name {args.name!r}"},
                          otherwise=lambda exc: f"cannot create topic {args.name!r}: {exc}"):
            await client.create_topics([NewTopic(args.name, args.partitions, args.replication_factor, configs)],
                                       timeout_ms=ctx.timeout_ms, ignore_existing=args.if_not_exists)
    print(f"created topic {args.name!r} with {args.partitions} partition(s)", file=sys.stderr)
    return EXIT_OK


async def _topic_overrides(client: Admin, topic: str) -> dict[str, str | None]:
    """Configs set on the topic itself (not broker defaults), via a raw DescribeConfigs."""
    body = {"resources": [{"resource_type": RESOURCE_TOPIC, "resource_name": topic, "configuration_keys": None}],
            "include_synonyms": False, "include_documentation": False}
    _, resp = await client.net.send_any(ApiKey.DESCRIBE_CONFIGS, body)
    out: dict[str, str | None] = {}
    for r in resp.results:
        if r.error_code:
            raise KafkaError(r.error_code, f"describe configs of {topic!r}")
        for c in r.configs:
            source = c.get("config_source", -1)
            is_default = c.get("is_default", False)
            if source == CONFIG_SOURCE_TOPIC or (source == -1 and not is_default):
                out[c.name] = c.value
    return out


@group.command("describe", "partitions, leaders, offsets and configs of a topic",
               arg("name"),
               json_flag())
async def describe(ctx: Ctx, args: argparse.Namespace) -> int:
    async with admin(ctx) as client:
        parts = await topic_partitions(client, args.name)
        info = client.net.metadata.topics[args.name]
        tps = [TopicPartition(args.name, p) for p in parts]
        earliest = await list_offsets(client.net, dict.fromkeys(tps, -2))
        latest = await list_offsets(client.net, dict.fromkeys(tps, LATEST))
        configs = await _topic_overrides(client, args.name)
    rf = max((len(pi.replicas) for pi in info.partitions.values()), default=0)
    data = {
        "topic": args.name, "topic_id": str(info.topic_id) if info.topic_id else None,
        "partition_count": len(parts), "replication_factor": rf, "internal": info.is_internal,
        "configs": configs,
        "partitions": [
            {"partition": p, "leader": info.partitions[p].leader, "replicas": list(info.partitions[p].replicas),
             "isr": list(info.partitions[p].isr), "log_start_offset": earliest[TopicPartition(args.name, p)][0],
             "log_end_offset": latest[TopicPartition(args.name, p)][0],
             "records": latest[TopicPartition(args.name, p)][0] - earliest[TopicPartition(args.name, p)][0]}
            for p in parts],
    }
    if args.json:
        print(json.dumps(data))
        return EXIT_OK
    cfg = ",".join(f"{k}={v}" for k, v in sorted(configs.items()))
    print(f"Topic: {args.name}\tTopicId: {data['topic_id']}\tPartitionCount: {len(parts)}\t"
          f"ReplicationFactor: {rf}\tConfigs: {cfg}")
    for row in data["partitions"]:
        print(f"\tTopic: {args.name}\tPartition: {row['partition']}\tLeader: {row['leader']}\t"
              f"{replicas_and_isr(row['replicas'], row['isr'])}\t"
              f"LogStartOffset: {row['log_start_offset']}\tLogEndOffset: {row['log_end_offset']}")
    return EXIT_OK


@group.command("delete", "delete a topic",
               arg("name"),
               arg("--if-exists", action="store_true", help="succeed if the topic does not exist"))
async def delete(ctx: Ctx, args: argparse.Namespace) -> int:
    async with admin(ctx) as client:
        try:
            await client.delete_topics([args.name], timeout_ms=ctx.timeout_ms)
        except KafkaError as exc:
            if exc.code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
                if args.if_exists:
                    return EXIT_OK
                raise CliError(f"topic {args.name!r} does not exist") from None
            raise CliError(f"cannot delete topic {args.name!r}: {exc}") from None
    print(f"deleted topic {args.name!r}", file=sys.stderr)
    return EXIT_OK
