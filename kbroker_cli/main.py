"""``kbroker``: the admin command line (topics, cluster, groups, transactions, produce, consume), built on our own
client.

    kbroker topics list
    kbroker topics create orders --partitions 6 --config retention.ms=86400000
    kbroker topics describe orders
    kbroker topics delete orders
    kbroker cluster describe
    kbroker cluster reassign --execute plan.json --throttle 10000000
    kbroker cluster reassign --verify plan.json
    kbroker cluster decommission 4 --wait
    kbroker cluster rebalance --dry-run
    kbroker groups list
    kbroker groups describe billing
    kbroker configs describe --topic orders
    kbroker configs alter --topic orders --set retention.ms=3600000 --delete cleanup.policy
    kbroker configs alter --broker-defaults --set log.retention.ms=86400000
    kbroker configs describe --broker 1 --all
    kbroker configs alter --group billing --set consumer.heartbeat.interval.ms=6000
    kbroker transactions list
    kbroker transactions describe payments-tx
    seq 1 1000 | kbroker produce orders
    kbroker produce orders --file data.txt --key-separator :
    kbroker consume orders --offset beginning --exit --format '%p/%o %k=%s\\n'
    kbroker consume orders --group billing --count 10
    kbroker acls add --allow-principal User:alice --operation WRITE --topic orders- --resource-pattern-type prefixed
    kbroker acls list --topic orders
    kbroker users add alice --password-file alice.pass
    kbroker --command-config admin.properties users list

The broker is ``--bootstrap-servers`` / ``KBROKER_BOOTSTRAP`` (default ``127.0.0.1:9092``).  Security
settings (the Java / librdkafka names ``security.protocol``, ``sasl.mechanism``, ``sasl.username``,
``sasl.password``, ``ssl.cafile``, ``ssl.certfile``, ``ssl.keyfile``, ...) come from
``--command-config FILE`` (``key=value`` lines, as Kafka's tools read them), then ``-X key=value``, then
the named flags (``--security-protocol`` ...).
Exit codes: 0 success, 1 error (the message is on stderr), 2 usage error.

This module is the entry point: it builds the parser from the global options
(:mod:`kbroker_cli.common`) and the command groups (:mod:`kbroker_cli.commands`), runs the chosen
command's handler and turns what it raises into the message and exit code.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import sys

from client.errors import AuthenticationError, KafkaConnectionError, KafkaError, KafkaTimeoutError
from kbroker_cli.command import CliParser, Handler
from kbroker_cli.commands import TOP_LEVEL
from kbroker_cli.common import (
    EXIT_ERROR,
    EXIT_OK,
    EXIT_USAGE,
    CliError,
    Ctx,
    UsageError,
    add_global_options,
    err,
    explain,
)

#: (command, action) -> handler; action is None for a command without actions (``produce``)
HANDLERS: dict[tuple[str, str | None], Handler] = dict(pair for top in TOP_LEVEL for pair in top.handlers())


def build_parser() -> argparse.ArgumentParser:
    p = CliParser(prog="kbroker", description="Administer a kbroker (or any Kafka) broker: topics, groups, "
                  "produce and consume.", formatter_class=argparse.RawDescriptionHelpFormatter,
                  epilog="exit codes: 0 ok, 1 error, 2 usage")
    add_global_options(p)
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=CliParser)
    for top in TOP_LEVEL:
        top.add_to(sub)
    return p


def _failure(exc: Exception, bootstrap: str) -> tuple[int, str]:
    """The exit code and the message for what a command raised."""
    if isinstance(exc, UsageError):
        return EXIT_USAGE, str(exc)
    if isinstance(exc, CliError):
        return EXIT_ERROR, str(exc)
    if isinstance(exc, KafkaConnectionError):
        return EXIT_ERROR, f"lost the connection to {bootstrap} ({exc})"
    if isinstance(exc, AuthenticationError):
        return EXIT_ERROR, f"authentication failed: {exc}"
    if isinstance(exc, KafkaTimeoutError):
        return EXIT_ERROR, f"timed out talking to {bootstrap}: {exc}"
    if isinstance(exc, KafkaError):
        return EXIT_ERROR, explain(exc)
    return EXIT_ERROR, str(exc)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        if args.command is None:
            parser.print_help(sys.stderr)
            return EXIT_USAGE
        handler = HANDLERS.get((args.command, getattr(args, "action", None)))
        if handler is None:
            raise UsageError(f"{args.command}: missing action (try 'kbroker {args.command} --help')")
        ctx = Ctx.from_args(args)
    except UsageError as exc:
        err(str(exc))
        return EXIT_USAGE
    except SystemExit as exc:  # --help
        return int(exc.code or 0)
    # the CLI logs like the broker does (same format, KBROKER_LOG_FORMAT=json too)
    from broker.observability.logging_setup import configure_logging

    configure_logging(("WARNING", "INFO", "DEBUG")[min(args.verbose, 2)])
    try:
        return asyncio.run(handler(ctx, args))
    except BrokenPipeError:
        # the reader went away (e.g. `| head`): not an error; silence the flush at exit
        with contextlib.suppress(OSError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        return EXIT_OK
    except KeyboardInterrupt:
        return 130
    except (CliError, KafkaError, OSError) as exc:
        code, message = _failure(exc, ctx.bootstrap)
        err(message)
        return code


if __name__ == "__main__":
    sys.exit(main())
