"""``kbroker acls add|list|remove``: the broker's ACLs (CreateAcls, DescribeAcls, DeleteAcls; the broker
needs ``authorizer.enabled=true``)."""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from collections.abc import Iterator

from client import Acl, AclFilter
from kbroker_cli.command import Arg, CommandGroup, arg, json_flag, one_of
from kbroker_cli.common import EXIT_OK, Ctx, UsageError, admin, explain, kafka_errors, table
from protocol.error_codes import ErrorCode

group = CommandGroup("acls", "add, list and remove ACLs (the broker needs authorizer.enabled=true)")


def _resource_args(*, pattern_default: str) -> tuple[Arg, Arg]:
    """Which resource (at most one of --topic, --group, --transactional-id, --cluster) and how its name matches."""
    choices = ("literal", "prefixed") if pattern_default == "literal" else ("any", "match", "literal", "prefixed")
    return (one_of(arg("--topic", metavar="NAME", help="a topic (or prefix); * for every topic"),
                   arg("--group", metavar="NAME", help="a consumer group (or prefix); * for every group"),
                   arg("--transactional-id", metavar="ID"),
                   arg("--cluster", action="store_true", help="the cluster (kafka-cluster)")),
            arg("--resource-pattern-type", default=pattern_default, choices=choices,
                help=f"how the resource name matches (default {pattern_default})"))


def _acl_resource(args: argparse.Namespace) -> tuple[str, str | None]:
    if args.topic is not None:
        return "TOPIC", args.topic
    if args.group is not None:
        return "GROUP", args.group
    if args.transactional_id is not None:
        return "TRANSACTIONAL_ID", args.transactional_id
    if args.cluster:
        return "CLUSTER", "kafka-cluster"
    return "ANY", None


def _acl_rows(acls: list[Acl]) -> list[list[str]]:
    rows = [["PRINCIPAL", "PERMISSION", "OPERATION", "RESOURCE-TYPE", "PATTERN", "RESOURCE", "HOST"]]
    for a in sorted(acls, key=lambda a: (a.resource_type, a.resource_name, a.principal, a.operation)):
        rows.append([a.principal, a.permission, a.operation, a.resource_type, a.pattern_type, a.resource_name,
                     a.host])
    return rows


def _acl_json(a: Acl) -> dict[str, str]:
    return {"principal": a.principal, "permission": a.permission, "operation": a.operation,
            "resource_type": a.resource_type, "pattern_type": a.pattern_type, "resource_name": a.resource_name,
            "host": a.host}


@contextlib.contextmanager
def _acl_errors() -> Iterator[None]:
    """How a failed ACL request is reported; a name the client does not know (ValueError) is a usage error."""
    with kafka_errors({
        ErrorCode.SECURITY_DISABLED: "the broker has no authorizer (start it with --set authorizer.enabled=true)",
        ErrorCode.CLUSTER_AUTHORIZATION_FAILED: "not authorized: managing ACLs needs ALTER (listing them DESCRIBE) "
                                                "on the cluster",
    }, otherwise=explain):
        try:
            yield
        except ValueError as exc:
            raise UsageError(str(exc)) from None


@group.command("add", "allow or deny principals operations on a resource",
               arg("--allow-principal", action="append", default=[], metavar="User:NAME"),
               arg("--deny-principal", action="append", default=[], metavar="User:NAME"),
               arg("--operation", action="append", default=[], metavar="OP",
                   help="READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, CLUSTER_ACTION, DESCRIBE_CONFIGS, "
                        "ALTER_CONFIGS, IDEMPOTENT_WRITE or ALL (repeatable)"),
               arg("--host", default="*", help="the client address it applies to (default * = any)"),
               *_resource_args(pattern_default="literal"))
async def add(ctx: Ctx, args: argparse.Namespace) -> int:
    resource_type, name = _acl_resource(args)
    if name is None:
        raise UsageError("name the resource: --topic, --group, --transactional-id or --cluster")
    if not args.allow_principal and not args.deny_principal:
        raise UsageError("give --allow-principal or --deny-principal")
    if not args.operation:
        raise UsageError("give --operation")
    pattern = args.resource_pattern_type.upper()
    acls = [Acl(resource_type, name, principal, op.upper(), permission, pattern, args.host)
            for permission, principals in (("ALLOW", args.allow_principal), ("DENY", args.deny_principal))
            for principal in principals for op in args.operation]
    async with admin(ctx) as client:
        with _acl_errors():
            await client.create_acls(acls)
    print(f"added {len(acls)} ACL(s)", file=sys.stderr)
    return EXIT_OK


def _acl_filter(args: argparse.Namespace) -> AclFilter:
    resource_type, name = _acl_resource(args)
    return AclFilter(resource_type, name, args.resource_pattern_type.upper(), args.principal,
                     getattr(args, "host", None), (getattr(args, "operation", None) or "ANY").upper(),
                     (getattr(args, "permission", None) or "ANY").upper())


@group.command("list", "ACLs, optionally of one resource or principal",
               *_resource_args(pattern_default="any"),
               arg("--principal", metavar="User:NAME"),
               json_flag())
async def list_acls(ctx: Ctx, args: argparse.Namespace) -> int:
    async with admin(ctx) as client:
        with _acl_errors():
            acls = await client.describe_acls(_acl_filter(args))
    if args.json:
        print(json.dumps([_acl_json(a) for a in acls]))
    elif acls:
        table(_acl_rows(acls))
    return EXIT_OK


@group.command("remove", "remove the ACLs matching every criterion given",
               *_resource_args(pattern_default="any"),
               arg("--principal", metavar="User:NAME"),
               arg("--operation", metavar="OP"),
               arg("--permission", choices=("allow", "deny")),
               arg("--host"),
               arg("--all", action="store_true", help="remove every ACL (no other criterion needed)"))
async def remove(ctx: Ctx, args: argparse.Namespace) -> int:
    acl_filter = _acl_filter(args)
    if not args.all and acl_filter == AclFilter():
        raise UsageError("give a resource, --principal, --operation, --permission or --host (or --all)")
    async with admin(ctx) as client:
        with _acl_errors():
            removed = await client.delete_acls([acl_filter])
    if removed:
        table(_acl_rows(removed))
    print(f"removed {len(removed)} ACL(s)", file=sys.stderr)
    return EXIT_OK
