"""``kbroker configs describe|alter``: live, persisted configs of a topic, a broker, the broker
defaults or a consumer group (DescribeConfigs and IncrementalAlterConfigs)."""

from __future__ import annotations

import argparse
import json
import sys

from kbroker_cli.command import CommandGroup, arg, json_flag, one_of
from kbroker_cli.common import EXIT_OK, Ctx, UsageError, admin, explain, kafka_errors, parse_kv

group = CommandGroup("configs", "describe and change topic and broker configs (live, persisted)")

#: the config sources that mean "set on this resource", by resource kind
_SET_HERE = {"topic": ("DYNAMIC_TOPIC_CONFIG",), "broker": ("DYNAMIC_BROKER_CONFIG",),
             "defaults": ("DYNAMIC_DEFAULT_BROKER_CONFIG",), "group": ("GROUP_CONFIG",)}


#: which resource: exactly one of --topic, --broker, --broker-defaults, --group
_RESOURCE = one_of(
    arg("--topic", metavar="NAME"),
    arg("--broker", type=int, metavar="ID", help="one broker's own dynamic configs"),
    arg("--broker-defaults", action="store_true", help="the cluster-wide defaults of the dynamic broker configs"),
    arg("--group", metavar="GROUP_ID", help="a consumer group's group configs (consumer.session.timeout.ms, "
                                            "consumer.heartbeat.interval.ms)"),
    required=True)


def _config_resource(args: argparse.Namespace) -> tuple[str, str, str]:
    """(resource kind for the client, resource name, label for messages)."""
    if args.topic is not None:
        return "topic", args.topic, f"topic {args.topic!r}"
    if args.broker is not None:
        return "broker", str(args.broker), f"broker {args.broker}"
    if args.group is not None:
        return "group", args.group, f"group {args.group!r}"
    return "broker", "", "the cluster-wide broker defaults"


@group.command("describe", "configs of a topic or broker: the ones set on it, or --all with their sources",
               _RESOURCE,
               arg("--all", action="store_true", help="every config with its value and source, "
                                                      "not only those set on the resource"),
               json_flag())
async def describe(ctx: Ctx, args: argparse.Namespace) -> int:
    kind, name, label = _config_resource(args)
    async with admin(ctx) as client:
        with kafka_errors(otherwise=lambda exc: explain(exc, f"cannot describe {label}")):
            entries = await client.describe_config_entries(kind, name)
    scope = "defaults" if kind == "broker" and not name else kind
    shown = entries if args.all else [e for e in entries if e.source in _SET_HERE[scope]]
    if args.json:
        print(json.dumps([{"name": e.name, "value": e.value, "source": e.source, "read_only": e.read_only,
                           "synonyms": [{"name": n, "value": v, "source": s} for n, v, s in e.synonyms]}
                          for e in shown]))
        return EXIT_OK
    what = "Configs" if args.all else "Dynamic configs"
    print(f"{what} for {label} are:")
    for e in sorted(shown, key=lambda e: e.name):
        synonyms = ", ".join(f"{s}:{n}={v}" for n, v, s in e.synonyms)
        extra = " read-only" if e.read_only and args.all else ""
        print(f"  {e.name}={'' if e.value is None else e.value} ({e.source}{extra}) synonyms={{{synonyms}}}")
    return EXIT_OK


@group.command("alter", "set, delete, append to or subtract from configs (IncrementalAlterConfigs)",
               _RESOURCE,
               arg("--set", action="append", default=[], metavar="KEY=VALUE"),
               arg("--delete", action="append", default=[], metavar="KEY",
                   help="remove the setting (back to the default)"),
               arg("--append", action="append", default=[], metavar="KEY=VALUE",
                   help="add to a list config, e.g. cleanup.policy=compact"),
               arg("--subtract", action="append", default=[], metavar="KEY=VALUE",
                   help="remove from a list config"),
               arg("--validate-only", action="store_true", help="check the change, apply nothing"))
async def alter(ctx: Ctx, args: argparse.Namespace) -> int:
    kind, name, label = _config_resource(args)
    ops: list[tuple[str, str, str | None]] = []
    for op in ("set", "append", "subtract"):
        ops += [(op, k, v) for k, v in parse_kv(getattr(args, op), f"--{op}").items()]
    ops += [("delete", k, None) for k in args.delete]
    if not ops:
        raise UsageError("nothing to change: give --set, --delete, --append or --subtract")
    async with admin(ctx) as client:
        with kafka_errors(otherwise=lambda exc: explain(exc, f"cannot alter {label}")):
            await client.incremental_alter_configs(kind, name, ops, validate_only=args.validate_only)
    verb = "validated" if args.validate_only else "altered"
    print(f"{verb} {len(ops)} config(s) of {label}", file=sys.stderr)
    return EXIT_OK
