"""``kbroker``: the admin command line (topics, groups, transactions, produce, consume), built on our own client.

    kbroker topics list
    kbroker topics create orders --partitions 6 --config retention.ms=86400000
    kbroker topics describe orders
    kbroker topics delete orders
    kbroker cluster describe
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
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import getpass
import json
import os
import re
import signal
import sys
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import IO, Any

from client import Acl, AclFilter, Admin, Consumer, NewTopic, Producer
from client.config import AdminConfig, build_config
from client.errors import (
    AuthenticationError,
    ConfigError,
    KafkaConnectionError,
    KafkaError,
    KafkaTimeoutError,
)
from client.offsets import LATEST, list_offsets
from client.types import Record, TopicPartition
from protocol.api import ApiKey
from protocol.error_codes import ErrorCode

DEFAULT_BOOTSTRAP = "127.0.0.1:9092"
ENV_BOOTSTRAP = "KBROKER_BOOTSTRAP"
CONFIG_SOURCE_TOPIC = 1  # DescribeConfigs config_source: DYNAMIC_TOPIC_CONFIG (set on the topic)
RESOURCE_TOPIC = 2

EXIT_OK, EXIT_ERROR, EXIT_USAGE = 0, 1, 2


class CliError(Exception):
    """A failure reported to the user as ``kbroker: <message>`` with exit code 1."""


class UsageError(CliError):
    """A bad combination of arguments (exit code 2)."""


# -- argument parsing ------------------------------------------------------------------------------


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # argparse's own errors: usage on stderr, exit 2
        self.print_usage(sys.stderr)
        raise UsageError(message)


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="kbroker", description="Administer a kbroker (or any Kafka) broker: topics, groups, "
                "produce and consume.", formatter_class=argparse.RawDescriptionHelpFormatter,
                epilog="exit codes: 0 ok, 1 error, 2 usage")
    p.add_argument("-b", "--bootstrap-servers", default=os.environ.get(ENV_BOOTSTRAP, DEFAULT_BOOTSTRAP),
                   metavar="HOST:PORT", help=f"broker to talk to (env {ENV_BOOTSTRAP}, default {DEFAULT_BOOTSTRAP})")
    p.add_argument("--timeout", type=float, default=10.0, metavar="SECONDS",
                   help="give up on a request (or connecting) after this long (default 10)")
    p.add_argument("--client-id", default="kbroker-cli", help="client id sent to the broker")
    sec = p.add_argument_group("security", "how to reach a secured listener (also in --command-config)")
    sec.add_argument("--command-config", metavar="FILE",
                     help="client settings as key=value lines (security.protocol=SASL_SSL, sasl.password=...)")
    sec.add_argument("-X", dest="client_config", action="append", default=[], metavar="KEY=VALUE",
                     help="a client setting, e.g. -X security.protocol=SSL (repeatable)")
    for flag, metavar in (("--security-protocol", "PROTOCOL"), ("--sasl-mechanism", "MECHANISM"),
                          ("--sasl-username", "NAME"), ("--sasl-password", "PASSWORD"), ("--ssl-cafile", "PEM"),
                          ("--ssl-certfile", "PEM"), ("--ssl-keyfile", "PEM")):
        sec.add_argument(flag, metavar=metavar, help=f"same as -X {flag[2:].replace('-', '.')}=...")
    p.add_argument("-v", "--verbose", action="count", default=0,
                   help="log the client's activity on stderr (-v info, -vv debug)")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    topics = sub.add_parser("topics", help="list, create, describe, delete topics")
    tsub = topics.add_subparsers(dest="action", metavar="ACTION", parser_class=_Parser)
    t = tsub.add_parser("list", help="topic names, one per line")
    t.add_argument("--internal", action="store_true", help="include internal topics (__consumer_offsets)")
    t.add_argument("--json", action="store_true", help="JSON output: {name: partitions}")
    t = tsub.add_parser("create", help="create a topic")
    t.add_argument("name")
    t.add_argument("-p", "--partitions", type=int, required=True, metavar="N")
    t.add_argument("--replication-factor", type=int, default=-1, metavar="N",
                   help="replicas per partition (default: the broker's default.replication.factor)")
    t.add_argument("-c", "--config", action="append", default=[], metavar="KEY=VALUE",
                   help="topic config, e.g. retention.ms=86400000 (repeatable)")
    t.add_argument("--if-not-exists", action="store_true", help="succeed if the topic exists already")
    t = tsub.add_parser("describe", help="partitions, leaders, offsets and configs of a topic")
    t.add_argument("name")
    t.add_argument("--json", action="store_true")
    t = tsub.add_parser("delete", help="delete a topic")
    t.add_argument("name")
    t.add_argument("--if-exists", action="store_true", help="succeed if the topic does not exist")

    cluster = sub.add_parser("cluster", help="brokers, controller and partition health of the cluster")
    csub = cluster.add_subparsers(dest="action", metavar="ACTION")
    c = csub.add_parser("describe", help="brokers, controller, under-replicated and offline partitions")
    c.add_argument("--json", action="store_true", help="one JSON object")

    groups = sub.add_parser("groups", help="list and describe consumer groups")
    gsub = groups.add_subparsers(dest="action", metavar="ACTION", parser_class=_Parser)
    g = gsub.add_parser("list", help="group ids with state and protocol type")
    g.add_argument("--json", action="store_true")
    g = gsub.add_parser("describe", help="members, assignments, committed offsets and lag "
                        "(like kafka-consumer-groups --describe)")
    g.add_argument("group")
    g.add_argument("--json", action="store_true")
    g = gsub.add_parser("delete", help="delete an empty group and its committed offsets")
    g.add_argument("group")

    configs = sub.add_parser("configs", help="describe and change topic and broker configs (live, persisted)")
    fsub = configs.add_subparsers(dest="action", metavar="ACTION", parser_class=_Parser)
    for action, text in (("describe", "configs of a topic or broker: the ones set on it, or --all with their "
                                      "sources"),
                         ("alter", "set, delete, append to or subtract from configs (IncrementalAlterConfigs)")):
        f = fsub.add_parser(action, help=text)
        which = f.add_mutually_exclusive_group(required=True)
        which.add_argument("--topic", metavar="NAME")
        which.add_argument("--broker", type=int, metavar="ID", help="one broker's own dynamic configs")
        which.add_argument("--broker-defaults", action="store_true",
                           help="the cluster-wide defaults of the dynamic broker configs")
        which.add_argument("--group", metavar="GROUP_ID",
                           help="a consumer group's group configs (consumer.session.timeout.ms, "
                                "consumer.heartbeat.interval.ms)")
        if action == "describe":
            f.add_argument("--all", action="store_true", help="every config with its value and source, "
                                                              "not only those set on the resource")
            f.add_argument("--json", action="store_true")
        else:
            f.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
            f.add_argument("--delete", action="append", default=[], metavar="KEY",
                           help="remove the setting (back to the default)")
            f.add_argument("--append", action="append", default=[], metavar="KEY=VALUE",
                           help="add to a list config, e.g. cleanup.policy=compact")
            f.add_argument("--subtract", action="append", default=[], metavar="KEY=VALUE",
                           help="remove from a list config")
            f.add_argument("--validate-only", action="store_true", help="check the change, apply nothing")

    transactions = sub.add_parser("transactions", help="list and describe transactional producers' transactions")
    xsub = transactions.add_subparsers(dest="action", metavar="ACTION", parser_class=_Parser)
    x = xsub.add_parser("list", help="transactional ids with producer id and state")
    x.add_argument("--state", action="append", default=[], metavar="STATE",
                   help="only these states (repeatable): Empty, Ongoing, PrepareCommit, PrepareAbort, "
                        "CompleteCommit, CompleteAbort, PrepareEpochFence")
    x.add_argument("--json", action="store_true")
    x = xsub.add_parser("describe", help="state, producer, timeout and partitions of transactional ids")
    x.add_argument("transactional_id", nargs="+")
    x.add_argument("--json", action="store_true")

    pr = sub.add_parser("produce", help="produce one record per input line")
    pr.add_argument("topic")
    pr.add_argument("-f", "--file", help="read records from this file instead of stdin")
    pr.add_argument("-K", "--key-separator", metavar="SEP",
                    help="split each line at the first SEP into key and value")
    pr.add_argument("-p", "--partition", type=int, help="send every record to this partition")
    pr.add_argument("-H", "--header", action="append", default=[], metavar="NAME=VALUE",
                    help="add this header to every record (repeatable)")
    pr.add_argument("--acks", choices=("0", "1", "all"), default="all")
    pr.add_argument("-z", "--compression", choices=("none", "gzip", "snappy", "lz4", "zstd"), default="none")
    pr.add_argument("--progress", action="store_true",
                    help="report progress on stderr even when it is not a terminal")
    pr.add_argument("--no-progress", action="store_true", help="never report progress")
    pr.add_argument("--progress-every", type=int, default=10000, metavar="N",
                    help="progress update every N records (default 10000; terminals also every 0.2 s)")
    pr.add_argument("-q", "--quiet", action="store_true", help="no summary line on stderr")

    co = sub.add_parser("consume", help="print records (kcat-like)",
                        formatter_class=argparse.RawDescriptionHelpFormatter,
                        epilog="format tokens: %%t topic  %%p partition  %%o offset  %%k key  %%s value\n"
                               "  %%T timestamp (ms)  %%K key length  %%S value length  %%h headers\n"
                               "  %%%% a percent sign; escapes \\n \\t \\r \\\\")
    co.add_argument("topic")
    co.add_argument("-o", "--offset", default=None, metavar="beginning|end|N|-N",
                    help="where to start: beginning, end, an absolute offset N, or -N (N before the end); "
                         "with --group only for partitions without a committed offset (beginning|end). "
                         "Default: end, or the committed offset with --group")
    co.add_argument("-c", "--count", type=int, metavar="N", help="exit after N records")
    co.add_argument("-p", "--partition", type=int, action="append", metavar="P",
                    help="only this partition (repeatable; not with --group)")
    co.add_argument("-f", "--format", default="%s\\n", metavar="FMT", help="output format (default '%%s\\n')")
    co.add_argument("-g", "--group", help="consume as a member of this group, committing what was printed")
    co.add_argument("-e", "--exit", action="store_true",
                    help="exit once the end of every partition (as of when it was assigned) is reached")
    co.add_argument("--null", default="", metavar="TEXT", help="text printed for a null key or value")

    acls = sub.add_parser("acls", help="add, list and remove ACLs (the broker needs authorizer.enabled=true)")
    asub = acls.add_subparsers(dest="action", metavar="ACTION", parser_class=_Parser)
    a = asub.add_parser("add", help="allow or deny principals operations on a resource")
    a.add_argument("--allow-principal", action="append", default=[], metavar="User:NAME")
    a.add_argument("--deny-principal", action="append", default=[], metavar="User:NAME")
    a.add_argument("--operation", action="append", default=[], metavar="OP",
                   help="READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, CLUSTER_ACTION, DESCRIBE_CONFIGS, "
                        "ALTER_CONFIGS, IDEMPOTENT_WRITE or ALL (repeatable)")
    a.add_argument("--host", default="*", help="the client address it applies to (default * = any)")
    _acl_resource_args(a, pattern_default="literal")
    a = asub.add_parser("list", help="ACLs, optionally of one resource or principal")
    _acl_resource_args(a, pattern_default="any")
    a.add_argument("--principal", metavar="User:NAME")
    a.add_argument("--json", action="store_true")
    a = asub.add_parser("remove", help="remove the ACLs matching every criterion given")
    _acl_resource_args(a, pattern_default="any")
    a.add_argument("--principal", metavar="User:NAME")
    a.add_argument("--operation", metavar="OP")
    a.add_argument("--permission", choices=("allow", "deny"))
    a.add_argument("--host")
    a.add_argument("--all", action="store_true", help="remove every ACL (no other criterion needed)")

    users = sub.add_parser("users", help="add, list and remove SASL/SCRAM users")
    usub = users.add_subparsers(dest="action", metavar="ACTION", parser_class=_Parser)
    u = usub.add_parser("add", help="create a user, or set a user's password (the broker stores a salted hash)")
    u.add_argument("name")
    u.add_argument("--password", help="the password (visible to other users of this machine: prefer "
                                      "--password-file or standard input)")
    u.add_argument("--password-file", metavar="FILE", help="read the password from the first line of FILE")
    u.add_argument("--mechanism", action="append", choices=("SCRAM-SHA-256", "SCRAM-SHA-512"),
                   help="default: both (PLAIN logins check either)")
    u.add_argument("--iterations", type=int, default=4096, help="4096..16384 (default 4096)")
    u = usub.add_parser("list", help="users and their SCRAM mechanisms")
    u.add_argument("--json", action="store_true")
    u = usub.add_parser("remove", help="delete a user's credentials")
    u.add_argument("name")
    u.add_argument("--mechanism", action="append", choices=("SCRAM-SHA-256", "SCRAM-SHA-512"),
                   help="only this mechanism's credential (default: all of them)")
    return p


def _acl_resource_args(parser: argparse.ArgumentParser, *, pattern_default: str) -> None:
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--topic", metavar="NAME", help="a topic (or prefix); * for every topic")
    group.add_argument("--group", metavar="NAME", help="a consumer group (or prefix); * for every group")
    group.add_argument("--transactional-id", metavar="ID")
    group.add_argument("--cluster", action="store_true", help="the cluster (kafka-cluster)")
    choices = ("literal", "prefixed") if pattern_default == "literal" else ("any", "match", "literal", "prefixed")
    parser.add_argument("--resource-pattern-type", default=pattern_default, choices=choices,
                        help=f"how the resource name matches (default {pattern_default})")


# -- helpers ---------------------------------------------------------------------------------------


@dataclass
class Ctx:
    bootstrap: str
    timeout_ms: int
    client_id: str
    #: security settings with their Java / librdkafka names (security.protocol, ...)
    security: dict[str, str] = field(default_factory=dict)

    def common(self) -> dict[str, Any]:
        return {"bootstrap_servers": self.bootstrap, "client_id": self.client_id,
                "request_timeout_ms": self.timeout_ms, **self.security}


def read_properties(path: str) -> dict[str, str]:
    """``key=value`` (or ``key: value``) lines of a Java-style properties file; ``#``/``!`` comments."""
    try:
        with open(path, encoding="utf-8") as fh:
            lines = fh.read().splitlines()
    except OSError as exc:
        raise UsageError(f"--command-config {path}: {exc.strerror or exc}") from None
    out: dict[str, str] = {}
    for lineno, raw in enumerate(lines, 1):
        line = raw.strip()
        if not line or line.startswith(("#", "!")):
            continue
        key, sep, value = line.partition("=")
        if not sep:
            key, sep, value = line.partition(":")
        if not sep or not key.strip():
            raise UsageError(f"--command-config {path}: line {lineno}: expected key=value")
        out[key.strip()] = value.strip()
    return out


def security_settings(args: argparse.Namespace) -> dict[str, str]:
    """The client settings of --command-config, -X and the named flags, later ones winning."""
    settings = read_properties(args.command_config) if args.command_config else {}
    settings.update(_parse_kv(args.client_config, "-X"))
    for name in ("security_protocol", "sasl_mechanism", "sasl_username", "sasl_password", "ssl_cafile",
                 "ssl_certfile", "ssl_keyfile"):
        value = getattr(args, name)
        if value is not None:
            settings[name.replace("_", ".")] = value
    return settings


def _err(message: str) -> None:
    print(f"kbroker: {message}", file=sys.stderr)


@contextlib.asynccontextmanager
async def _admin(ctx: Ctx) -> Any:
    admin = Admin(**ctx.common())
    try:
        await admin.start()
    except (KafkaConnectionError, KafkaTimeoutError, OSError) as exc:
        await admin.close()
        raise CliError(f"cannot connect to {ctx.bootstrap} ({exc})") from None
    try:
        yield admin
    finally:
        await admin.close()


def _explain(exc: KafkaError, what: str = "") -> str:
    code = exc.code
    detail = exc.detail or ""
    prefix = f"{what}: " if what else ""
    if code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
        return f"{prefix}unknown topic or partition" + (f" ({detail})" if detail else "")
    return f"{prefix}{exc}"


async def _topic_partitions(admin: Admin, topic: str) -> list[int]:
    md = await admin.net.refresh_metadata()
    info = md.topics.get(topic)
    if info is not None and info.error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED:
        raise CliError(f"not authorized to describe topic {topic!r}")
    if info is None or (info.error_code and not info.partitions):
        raise CliError(f"topic {topic!r} does not exist")
    return sorted(info.partitions)


def _table(rows: list[list[str]], out: IO[str]) -> None:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        out.write(" ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() + "\n")


def _parse_kv(items: Iterable[str], what: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UsageError(f"{what} expects KEY=VALUE, got {item!r}")
        out[key] = value
    return out


# -- topics ----------------------------------------------------------------------------------------


async def topics_list(ctx: Ctx, args: argparse.Namespace) -> int:
    async with _admin(ctx) as admin:
        topics = await admin.list_topics(include_internal=args.internal)
    if args.json:
        print(json.dumps(dict(sorted(topics.items()))))
    else:
        for name in sorted(topics):
            print(name)
    return EXIT_OK


async def topics_create(ctx: Ctx, args: argparse.Namespace) -> int:
    if args.partitions < 1:
        raise UsageError("--partitions must be at least 1")
    configs = _parse_kv(args.config, "--config")
    async with _admin(ctx) as admin:
        try:
            await admin.create_topics([NewTopic(args.name, args.partitions, args.replication_factor, configs)],
                                      timeout_ms=ctx.timeout_ms, ignore_existing=args.if_not_exists)
        except KafkaError as exc:
            if exc.code == ErrorCode.TOPIC_ALREADY_EXISTS:
                raise CliError(f"topic {args.name!r} already exists") from None
            if exc.code == ErrorCode.INVALID_TOPIC_EXCEPTION:
                raise CliError(f"invalid topic name {args.name!r}") from None
            raise CliError(f"cannot create topic {args.name!r}: {exc}") from None
    print(f"created topic {args.name!r} with {args.partitions} partition(s)", file=sys.stderr)
    return EXIT_OK


async def topics_delete(ctx: Ctx, args: argparse.Namespace) -> int:
    async with _admin(ctx) as admin:
        try:
            await admin.delete_topics([args.name], timeout_ms=ctx.timeout_ms)
        except KafkaError as exc:
            if exc.code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
                if args.if_exists:
                    return EXIT_OK
                raise CliError(f"topic {args.name!r} does not exist") from None
            raise CliError(f"cannot delete topic {args.name!r}: {exc}") from None
    print(f"deleted topic {args.name!r}", file=sys.stderr)
    return EXIT_OK


async def _topic_overrides(admin: Admin, topic: str) -> dict[str, str | None]:
    """Configs set on the topic itself (not broker defaults), via a raw DescribeConfigs."""
    body = {"resources": [{"resource_type": RESOURCE_TOPIC, "resource_name": topic, "configuration_keys": None}],
            "include_synonyms": False, "include_documentation": False}
    _, resp = await admin.net.send_any(ApiKey.DESCRIBE_CONFIGS, body)
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


async def topics_describe(ctx: Ctx, args: argparse.Namespace) -> int:
    async with _admin(ctx) as admin:
        parts = await _topic_partitions(admin, args.name)
        info = admin.net.metadata.topics[args.name]
        tps = [TopicPartition(args.name, p) for p in parts]
        earliest = await list_offsets(admin.net, dict.fromkeys(tps, -2))
        latest = await list_offsets(admin.net, dict.fromkeys(tps, LATEST))
        configs = await _topic_overrides(admin, args.name)
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
              f"Replicas: {','.join(map(str, row['replicas']))}\tIsr: {','.join(map(str, row['isr']))}\t"
              f"LogStartOffset: {row['log_start_offset']}\tLogEndOffset: {row['log_end_offset']}")
    return EXIT_OK


# -- configs ---------------------------------------------------------------------------------------

_SET_HERE = {"topic": ("DYNAMIC_TOPIC_CONFIG",), "broker": ("DYNAMIC_BROKER_CONFIG",),
             "defaults": ("DYNAMIC_DEFAULT_BROKER_CONFIG",), "group": ("GROUP_CONFIG",)}


def _config_resource(args: argparse.Namespace) -> tuple[str, str, str]:
    """(resource kind for the client, resource name, label for messages)."""
    if args.topic is not None:
        return "topic", args.topic, f"topic {args.topic!r}"
    if args.broker is not None:
        return "broker", str(args.broker), f"broker {args.broker}"
    if args.group is not None:
        return "group", args.group, f"group {args.group!r}"
    return "broker", "", "the cluster-wide broker defaults"


async def configs_describe(ctx: Ctx, args: argparse.Namespace) -> int:
    kind, name, label = _config_resource(args)
    async with _admin(ctx) as admin:
        try:
            entries = await admin.describe_config_entries(kind, name)
        except KafkaError as exc:
            raise CliError(_explain(exc, f"cannot describe {label}")) from None
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


async def configs_alter(ctx: Ctx, args: argparse.Namespace) -> int:
    kind, name, label = _config_resource(args)
    ops: list[tuple[str, str, str | None]] = []
    for op in ("set", "append", "subtract"):
        ops += [(op, k, v) for k, v in _parse_kv(getattr(args, op), f"--{op}").items()]
    ops += [("delete", k, None) for k in args.delete]
    if not ops:
        raise UsageError("nothing to change: give --set, --delete, --append or --subtract")
    async with _admin(ctx) as admin:
        try:
            await admin.incremental_alter_configs(kind, name, ops, validate_only=args.validate_only)
        except KafkaError as exc:
            raise CliError(_explain(exc, f"cannot alter {label}")) from None
    verb = "validated" if args.validate_only else "altered"
    print(f"{verb} {len(ops)} config(s) of {label}", file=sys.stderr)
    return EXIT_OK


# -- cluster ---------------------------------------------------------------------------------------


async def cluster_describe(ctx: Ctx, args: argparse.Namespace) -> int:
    async with _admin(ctx) as admin:
        desc = await admin.describe_cluster()
        admin.net.set_topics(None)
        md = await admin.net.refresh_metadata()
    brokers = sorted(desc.brokers, key=lambda b: b.node_id)
    under, offline = [], []
    for name, t in sorted(md.topics.items()):
        for p, info in sorted(t.partitions.items()):
            row = {"topic": name, "partition": p, "leader": info.leader, "replicas": list(info.replicas),
                   "isr": list(info.isr)}
            if info.leader < 0:
                offline.append(row)
            elif len(info.isr) < len(info.replicas):
                under.append(row)
    data = {"cluster_id": desc.cluster_id, "controller": desc.controller_id,
            "brokers": [{"id": b.node_id, "host": b.host, "port": b.port, "rack": b.rack} for b in brokers],
            "under_replicated_partitions": under, "offline_partitions": offline}
    if args.json:
        print(json.dumps(data))
        return EXIT_OK
    print(f"ClusterId: {desc.cluster_id}\tController: {desc.controller_id}\tBrokers: {len(brokers)}")
    _table([["ID", "HOST", "PORT", "RACK", "ROLE"]] + [
        [str(b.node_id), b.host, str(b.port), b.rack or "-", "controller" if b.node_id == desc.controller_id else ""]
        for b in brokers], sys.stdout)
    for title, rows in (("Under-replicated partitions", under), ("Offline partitions", offline)):
        print(f"{title}: {len(rows)}")
        for r in rows:
            print(f"\t{r['topic']}-{r['partition']}\tLeader: {r['leader']}\t"
                  f"Replicas: {','.join(map(str, r['replicas']))}\tIsr: {','.join(map(str, r['isr']))}")
    return EXIT_OK


# -- transactions ----------------------------------------------------------------------------------


async def transactions_list(ctx: Ctx, args: argparse.Namespace) -> int:
    async with _admin(ctx) as admin:
        listed = sorted(await admin.list_transactions(args.state), key=lambda t: t.transactional_id)
    if args.json:
        print(json.dumps([{"transactional_id": t.transactional_id, "producer_id": t.producer_id, "state": t.state}
                          for t in listed]))
        return EXIT_OK
    if listed:
        _table([["TRANSACTIONAL-ID", "PRODUCER-ID", "STATE"]]
               + [[t.transactional_id, str(t.producer_id), t.state] for t in listed], sys.stdout)
    return EXIT_OK


async def transactions_describe(ctx: Ctx, args: argparse.Namespace) -> int:
    async with _admin(ctx) as admin:
        try:
            found = await admin.describe_transactions(args.transactional_id)
        except KafkaError as exc:
            if exc.code == ErrorCode.TRANSACTIONAL_ID_NOT_FOUND:
                raise CliError(f"{exc}: no such transactional id") from None
            raise
    now = int(time.time() * 1000)
    rows = []
    for tid in args.transactional_id:
        t = found[tid]
        rows.append({"transactional_id": tid, "state": t.state, "producer_id": t.producer_id,
                     "producer_epoch": t.producer_epoch, "timeout_ms": t.timeout_ms,
                     "start_time_ms": t.start_time_ms,
                     "duration_ms": now - t.start_time_ms if t.start_time_ms >= 0 else None,
                     "partitions": [f"{tp.topic}-{tp.partition}" for tp in sorted(t.partitions)]})
    if args.json:
        print(json.dumps(rows))
        return EXIT_OK
    _table([["TRANSACTIONAL-ID", "STATE", "PRODUCER-ID", "EPOCH", "TIMEOUT-MS", "DURATION-MS", "PARTITIONS"]]
           + [[r["transactional_id"], r["state"], str(r["producer_id"]), str(r["producer_epoch"]),
               str(r["timeout_ms"]), _dash(r["duration_ms"]), ",".join(r["partitions"]) or "-"] for r in rows],
           sys.stdout)
    return EXIT_OK


# -- groups ----------------------------------------------------------------------------------------


async def groups_list(ctx: Ctx, args: argparse.Namespace) -> int:
    async with _admin(ctx) as admin:
        groups = sorted(await admin.list_groups(), key=lambda g: g.group_id)
    if args.json:
        print(json.dumps([{"group": g.group_id, "state": g.state, "protocol_type": g.protocol_type,
                           "type": g.group_type or "classic"} for g in groups]))
        return EXIT_OK
    if not groups:
        return EXIT_OK
    rows = [["GROUP", "TYPE", "STATE", "PROTOCOL-TYPE"]]
    rows += [[g.group_id, g.group_type or "classic", g.state or "-", g.protocol_type or "-"] for g in groups]
    _table(rows, sys.stdout)
    return EXIT_OK


async def describe_group(admin: Admin, group: str) -> dict[str, Any]:
    """Everything ``groups describe`` shows, as plain data."""
    try:
        desc = (await admin.describe_groups([group])).get(group)
    except KafkaError as exc:
        if exc.code in (ErrorCode.GROUP_ID_NOT_FOUND, ErrorCode.INVALID_GROUP_ID):
            raise CliError(f"group {group!r} does not exist") from None
        raise
    offsets = await admin.list_group_offsets(group)
    if desc is None or (desc.state in ("Dead", "") and not offsets):
        raise CliError(f"group {group!r} does not exist")
    owner: dict[TopicPartition, Any] = {}
    for m in desc.members:
        for tp in m.assignment:
            owner[tp] = m
    missing = [tp for tp in owner if tp not in offsets]
    ends = {tp: off for tp, (off, _) in (await list_offsets(admin.net, dict.fromkeys(missing, LATEST))).items()} \
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
                  "client_id": m.client_id, "assignment": [f"{tp.topic}-{tp.partition}" for tp in sorted(m.assignment)]}
        if consumer:
            member["member_epoch"] = m.member_epoch
            member["target_assignment"] = [f"{tp.topic}-{tp.partition}" for tp in sorted(m.target_assignment)]
        members.append(member)
    data = {"group": group, "type": desc.group_type, "state": desc.state, "protocol_type": desc.protocol_type,
            "protocol": desc.protocol, "members": members, "partitions": rows,
            "total_lag": sum(r["lag"] for r in rows if r["lag"] is not None)}
    if consumer:
        data["group_epoch"], data["assignment_epoch"] = desc.group_epoch, desc.assignment_epoch
    return data


def _dash(value: Any) -> str:
    return "-" if value is None or value == "" else str(value)


def _host(host: str | None) -> str:
    return "-" if not host else (host if host.startswith("/") else "/" + host)


async def groups_describe(ctx: Ctx, args: argparse.Namespace) -> int:
    async with _admin(ctx) as admin:
        data = await describe_group(admin, args.group)
    if args.json:
        print(json.dumps(data))
        return EXIT_OK
    out = sys.stdout
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
        rows.append([g, r["topic"], str(r["partition"]), _dash(r["current_offset"]), _dash(r["log_end_offset"]),
                     _dash(r["lag"]), _dash(r["consumer_id"]), _host(r["host"]), _dash(r["client_id"])])
    _table(rows, out)
    if data["members"]:
        print()
        mrows = [["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS", "ASSIGNMENT"]]
        if data["type"] == "consumer":
            mrows[0] += ["EPOCH", "TARGET-ASSIGNMENT"]
        for m in data["members"]:
            row = [g, m["consumer_id"], _host(m["host"]), _dash(m["client_id"]), str(len(m["assignment"])),
                   ",".join(m["assignment"]) or "-"]
            if data["type"] == "consumer":
                row += [str(m["member_epoch"]), ",".join(m["target_assignment"]) or "-"]
            mrows.append(row)
        _table(mrows, out)
    return EXIT_OK


async def groups_delete(ctx: Ctx, args: argparse.Namespace) -> int:
    async with _admin(ctx) as admin:
        try:
            await admin.delete_groups([args.group])
        except KafkaError as exc:
            if exc.code == ErrorCode.GROUP_ID_NOT_FOUND:
                raise CliError(f"group {args.group!r} does not exist") from None
            if exc.code == ErrorCode.NON_EMPTY_GROUP:
                raise CliError(f"group {args.group!r} still has members") from None
            raise
    print(f"deleted group {args.group!r}", file=sys.stderr)
    return EXIT_OK


# -- produce ---------------------------------------------------------------------------------------


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


async def produce(ctx: Ctx, args: argparse.Namespace) -> int:
    headers = [(k, v.encode()) for k, v in _parse_kv(args.header, "--header").items()] or None
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
    async with _admin(ctx) as admin:
        md = await admin.net.refresh_metadata()
        info = md.topics.get(args.topic)
        if info is not None and args.partition is not None and args.partition not in info.partitions:
            raise CliError(f"topic {args.topic!r} has no partition {args.partition}")
    acks = -1 if args.acks == "all" else int(args.acks)
    producer = Producer(**ctx.common(), acks=acks, linger_ms=20, batch_size=256 * 1024,
                        compression_type=None if args.compression == "none" else args.compression)
    try:
        await producer.start()
    except (KafkaConnectionError, KafkaTimeoutError) as exc:
        raise CliError(f"cannot connect to {ctx.bootstrap} ({exc})") from None
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
                    raise CliError(_explain(exc, f"cannot produce to {args.topic!r}")) from None
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


# -- consume ---------------------------------------------------------------------------------------

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


async def consume(ctx: Ctx, args: argparse.Namespace) -> int:
    mode, n = _parse_offset(args.offset)
    if args.group and args.partition:
        raise UsageError("--partition cannot be combined with --group (the group assigns partitions)")
    if args.group and mode in ("absolute", "relative"):
        raise UsageError("with --group, --offset may only be beginning or end (used when nothing is committed)")
    if args.count is not None and args.count < 1:
        raise UsageError("--count must be at least 1")
    render = compile_format(args.format, args.null.encode())
    async with _admin(ctx) as admin:
        parts = await _topic_partitions(admin, args.topic)
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
        try:
            await consumer.start()
        except (KafkaConnectionError, KafkaTimeoutError) as exc:
            raise CliError(f"cannot connect to {ctx.bootstrap} ({exc})") from None
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


# -- ACLs and users --------------------------------------------------------------------------------


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


def _explain_acl_error(exc: KafkaError) -> CliError:
    if exc.code == ErrorCode.SECURITY_DISABLED:
        return CliError("the broker has no authorizer (start it with --set authorizer.enabled=true)")
    if exc.code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED:
        return CliError("not authorized: managing ACLs needs ALTER (listing them DESCRIBE) on the cluster")
    return CliError(_explain(exc))


async def acls_add(ctx: Ctx, args: argparse.Namespace) -> int:
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
    async with _admin(ctx) as admin:
        try:
            await admin.create_acls(acls)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        except KafkaError as exc:
            raise _explain_acl_error(exc) from None
    print(f"added {len(acls)} ACL(s)", file=sys.stderr)
    return EXIT_OK


def _acl_filter(args: argparse.Namespace) -> AclFilter:
    resource_type, name = _acl_resource(args)
    return AclFilter(resource_type, name, args.resource_pattern_type.upper(), args.principal,
                     getattr(args, "host", None), (getattr(args, "operation", None) or "ANY").upper(),
                     (getattr(args, "permission", None) or "ANY").upper())


async def acls_list(ctx: Ctx, args: argparse.Namespace) -> int:
    async with _admin(ctx) as admin:
        try:
            acls = await admin.describe_acls(_acl_filter(args))
        except KafkaError as exc:
            raise _explain_acl_error(exc) from None
    if args.json:
        print(json.dumps([_acl_json(a) for a in acls]))
    elif acls:
        _table(_acl_rows(acls), sys.stdout)
    return EXIT_OK


async def acls_remove(ctx: Ctx, args: argparse.Namespace) -> int:
    acl_filter = _acl_filter(args)
    if not args.all and acl_filter == AclFilter():
        raise UsageError("give a resource, --principal, --operation, --permission or --host (or --all)")
    async with _admin(ctx) as admin:
        try:
            removed = await admin.delete_acls([acl_filter])
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        except KafkaError as exc:
            raise _explain_acl_error(exc) from None
    if removed:
        _table(_acl_rows(removed), sys.stdout)
    print(f"removed {len(removed)} ACL(s)", file=sys.stderr)
    return EXIT_OK


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


async def users_add(ctx: Ctx, args: argparse.Namespace) -> int:
    password = _read_password(args)
    mechanisms = args.mechanism or ["SCRAM-SHA-256", "SCRAM-SHA-512"]
    async with _admin(ctx) as admin:
        try:
            await admin.alter_user_scram_credentials(upsertions=[(args.name, m, password) for m in mechanisms],
                                                     iterations=args.iterations)
        except KafkaError as exc:
            if exc.code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED:
                raise CliError("not authorized: managing users needs ALTER on the cluster") from None
            raise CliError(_explain(exc, f"user {args.name!r}")) from None
    print(f"user {args.name!r} has {', '.join(mechanisms)} credentials", file=sys.stderr)
    return EXIT_OK


async def users_list(ctx: Ctx, args: argparse.Namespace) -> int:
    async with _admin(ctx) as admin:
        users = await admin.describe_user_scram_credentials()
    if args.json:
        print(json.dumps({name: [{"mechanism": c.mechanism, "iterations": c.iterations} for c in creds]
                          for name, creds in sorted(users.items())}))
    elif users:
        _table([["USER", "MECHANISMS"]] + [[name, ",".join(f"{c.mechanism}({c.iterations})" for c in creds)]
                                         for name, creds in sorted(users.items())], sys.stdout)
    return EXIT_OK


async def users_remove(ctx: Ctx, args: argparse.Namespace) -> int:
    async with _admin(ctx) as admin:
        try:
            mechanisms = args.mechanism or [c.mechanism for c in
                                            (await admin.describe_user_scram_credentials([args.name]))[args.name]]
            await admin.alter_user_scram_credentials(deletions=[(args.name, m) for m in mechanisms])
        except KafkaError as exc:
            if exc.code == ErrorCode.RESOURCE_NOT_FOUND:
                raise CliError(f"user {args.name!r} has no such credential") from None
            raise CliError(_explain(exc, f"user {args.name!r}")) from None
    print(f"removed user {args.name!r} ({', '.join(mechanisms)})", file=sys.stderr)
    return EXIT_OK


# -- entry point -----------------------------------------------------------------------------------

_COMMANDS = {
    ("topics", "list"): topics_list,
    ("topics", "create"): topics_create,
    ("topics", "describe"): topics_describe,
    ("topics", "delete"): topics_delete,
    ("cluster", "describe"): cluster_describe,
    ("groups", "list"): groups_list,
    ("groups", "describe"): groups_describe,
    ("groups", "delete"): groups_delete,
    ("transactions", "list"): transactions_list,
    ("transactions", "describe"): transactions_describe,
    ("produce", None): produce,
    ("consume", None): consume,
    ("configs", "describe"): configs_describe,
    ("configs", "alter"): configs_alter,
    ("acls", "add"): acls_add,
    ("acls", "list"): acls_list,
    ("acls", "remove"): acls_remove,
    ("users", "add"): users_add,
    ("users", "list"): users_list,
    ("users", "remove"): users_remove,
}


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except UsageError as exc:
        _err(str(exc))
        return EXIT_USAGE
    except SystemExit as exc:  # --help
        return int(exc.code or 0)
    if args.command is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    action = getattr(args, "action", None)
    handler = _COMMANDS.get((args.command, action))
    if handler is None:
        _err(f"{args.command}: missing action (try 'kbroker {args.command} --help')")
        return EXIT_USAGE
    if args.timeout <= 0:
        _err("--timeout must be positive")
        return EXIT_USAGE
    try:
        ctx = Ctx(args.bootstrap_servers, int(args.timeout * 1000), args.client_id, security_settings(args))
        build_config(AdminConfig, ctx.common())  # bad settings or unreadable certificates: a usage error
    except (UsageError, ConfigError) as exc:
        _err(str(exc))
        return EXIT_USAGE
    from broker.observability.logging_setup import configure_logging

    configure_logging(("WARNING", "INFO", "DEBUG")[min(args.verbose, 2)])
    try:
        return asyncio.run(handler(ctx, args))
    except UsageError as exc:
        _err(str(exc))
        return EXIT_USAGE
    except CliError as exc:
        _err(str(exc))
        return EXIT_ERROR
    except KafkaConnectionError as exc:
        _err(f"lost the connection to {ctx.bootstrap} ({exc})")
        return EXIT_ERROR
    except AuthenticationError as exc:
        _err(f"authentication failed: {exc}")
        return EXIT_ERROR
    except KafkaTimeoutError as exc:
        _err(f"timed out talking to {ctx.bootstrap}: {exc}")
        return EXIT_ERROR
    except KafkaError as exc:
        _err(_explain(exc))
        return EXIT_ERROR
    except BrokenPipeError:
        # the reader went away (e.g. `| head`): not an error; silence the flush at exit
        with contextlib.suppress(OSError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        return EXIT_OK
    except KeyboardInterrupt:
        return 130
    except OSError as exc:
        _err(str(exc))
        return EXIT_ERROR


if __name__ == "__main__":
    sys.exit(main())
