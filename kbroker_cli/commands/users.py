"""``kbroker users add|list|remove``: SASL/SCRAM users (AlterUserScramCredentials and
DescribeUserScramCredentials; the broker stores a salted hash, never the password)."""

from __future__ import annotations

import argparse
import getpass
import json
import sys

from kbroker_cli.command import CommandGroup, arg, json_flag
from kbroker_cli.common import EXIT_OK, Ctx, UsageError, admin, explain, kafka_errors, table
from protocol.error_codes import ErrorCode

group = CommandGroup("users", "add, list and remove SASL/SCRAM users")

MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")


def _read_password(args: argparse.Namespace) -> str:
    if args.password is not None and args.password_file is not None:
        raise UsageError("give --password or --password-file, not both")
    if args.password is not None:
        password = args.password
    elif args.password_file is not None:
        try:
            with open(args.password_file, encoding="utf-8") as fh:
                password = fh.readline().rstrip("\r\n")
        except OSError as exc:
            raise UsageError(f"--password-file {args.password_file}: {exc.strerror or exc}") from None
    elif sys.stdin.isatty():
        password = getpass.getpass(f"password for {args.name}: ")
    else:
        password = sys.stdin.readline().rstrip("\r\n")
    if not password:
        raise UsageError("the password must not be empty")
    return password


@group.command("add", "create a user, or set a user's password (the broker stores a salted hash)",
               arg("name"),
               arg("--password", help="the password (visible to other users of this machine: prefer "
                                      "--password-file or standard input)"),
               arg("--password-file", metavar="FILE", help="read the password from the first line of FILE"),
               arg("--mechanism", action="append", choices=MECHANISMS,
                   help="default: both (PLAIN logins check either)"),
               arg("--iterations", type=int, default=4096, help="4096..16384 (default 4096)"))
async def add(ctx: Ctx, args: argparse.Namespace) -> int:
    password = _read_password(args)
    mechanisms = args.mechanism or list(MECHANISMS)
    async with admin(ctx) as client:
        with kafka_errors({ErrorCode.CLUSTER_AUTHORIZATION_FAILED: "not authorized: managing users needs ALTER on "
                                                                   "the cluster"},
                          otherwise=lambda exc: explain(exc, f"user {args.name!r}")):
            await client.alter_user_scram_credentials(upsertions=[(args.name, m, password) for m in mechanisms],
                                                      iterations=args.iterations)
    print(f"user {args.name!r} has {', '.join(mechanisms)} credentials", file=sys.stderr)
    return EXIT_OK


@group.command("list", "users and their SCRAM mechanisms",
               json_flag())
async def list_users(ctx: Ctx, args: argparse.Namespace) -> int:
    async with admin(ctx) as client:
        users = await client.describe_user_scram_credentials()
    if args.json:
        print(json.dumps({name: [{"mechanism": c.mechanism, "iterations": c.iterations} for c in creds]
                          for name, creds in sorted(users.items())}))
    elif users:
        table([["USER", "MECHANISMS"]] + [[name, ",".join(f"{c.mechanism}({c.iterations})" for c in creds)]
                                        for name, creds in sorted(users.items())])
    return EXIT_OK


@group.command("remove", "delete a user's credentials",
               arg("name"),
               arg("--mechanism", action="append", choices=MECHANISMS,
                   help="only this mechanism's credential (default: all of them)"))
async def remove(ctx: Ctx, args: argparse.Namespace) -> int:
    async with admin(ctx) as client:
        with kafka_errors({ErrorCode.RESOURCE_NOT_FOUND: f"user {args.name!r} has no such credential"},
                          otherwise=lambda exc: explain(exc, f"user {args.name!r}")):
            mechanisms = args.mechanism or [c.mechanism for c in
                                            (await client.describe_user_scram_credentials([args.name]))[args.name]]
            await client.alter_user_scram_credentials(deletions=[(args.name, m) for m in mechanisms])
    print(f"removed user {args.name!r} ({', '.join(mechanisms)})", file=sys.stderr)
    return EXIT_OK
