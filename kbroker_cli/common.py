"""What every command shares: the global options and the connection they describe, errors, output.

* Exit codes and the two failures a command raises: :class:`CliError` (exit 1) and
  :class:`UsageError` (exit 2); :func:`kafka_errors` turns a broker's error code into the line the
  user reads.
* The global options (``--bootstrap-servers`` / ``KBROKER_BOOTSTRAP``, ``--timeout``, ``--client-id``,
  the security settings of ``--command-config``, ``-X`` and the named flags, ``-v``) and the
  :class:`Ctx` a command gets from them; :func:`admin` and :func:`start` connect a client.
* Output helpers: :func:`table`, :func:`dash`, :func:`partition_label`, :func:`host_label`, :func:`err`.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import IO, Any, Protocol

from client import Admin
from client.config import AdminConfig, build_config
from client.errors import ConfigError, KafkaConnectionError, KafkaError, KafkaTimeoutError
from client.types import TopicPartition
from protocol.error_codes import ErrorCode

DEFAULT_BOOTSTRAP = "127.0.0.1:9092"
ENV_BOOTSTRAP = "KBROKER_BOOTSTRAP"

EXIT_OK, EXIT_ERROR, EXIT_USAGE = 0, 1, 2


class CliError(Exception):
    """A failure reported to the user as ``kbroker: <message>`` with exit code 1."""


class UsageError(CliError):
    """A bad combination of arguments (exit code 2)."""


# -- the global options and the connection ---------------------------------------------------------

_SECURITY_FLAGS = (("--security-protocol", "PROTOCOL"), ("--sasl-mechanism", "MECHANISM"),
                   ("--sasl-username", "NAME"), ("--sasl-password", "PASSWORD"), ("--ssl-cafile", "PEM"),
                   ("--ssl-certfile", "PEM"), ("--ssl-keyfile", "PEM"))


def add_global_options(p: argparse.ArgumentParser) -> None:
    """The options before the command: which broker, how long to wait, how to log in, how much to log."""
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
    for flag, metavar in _SECURITY_FLAGS:
        sec.add_argument(flag, metavar=metavar, help=f"same as -X {flag[2:].replace('-', '.')}=...")
    p.add_argument("-v", "--verbose", action="count", default=0,
                   help="log the client's activity on stderr (-v info, -vv debug)")


@dataclass
class Ctx:
    """The connection every command uses, from the global options."""

    bootstrap: str
    timeout_ms: int
    client_id: str
    #: security settings with their Java / librdkafka names (security.protocol, ...)
    security: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> Ctx:
        """The global options checked (a bad setting or an unreadable certificate is a :class:`UsageError`)."""
        if args.timeout <= 0:
            raise UsageError("--timeout must be positive")
        ctx = cls(args.bootstrap_servers, int(args.timeout * 1000), args.client_id, security_settings(args))
        try:
            build_config(AdminConfig, ctx.common())
        except ConfigError as exc:
            raise UsageError(str(exc)) from None
        return ctx

    def common(self) -> dict[str, Any]:
        """The settings every client of this command gets (bootstrap, client id, timeout, security)."""
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
    settings.update(parse_kv(args.client_config, "-X"))
    for flag, _ in _SECURITY_FLAGS:
        value = getattr(args, flag[2:].replace("-", "_"))
        if value is not None:
            settings[flag[2:].replace("-", ".")] = value
    return settings


def parse_kv(items: Iterable[str], what: str) -> dict[str, str]:
    """``KEY=VALUE`` arguments of the option ``what`` as a dict (a malformed one is a usage error)."""
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UsageError(f"{what} expects KEY=VALUE, got {item!r}")
        out[key] = value
    return out


class _Client(Protocol):
    async def start(self) -> None: ...


async def start(client: _Client, ctx: Ctx) -> None:
    """Start a client (admin, producer, consumer), or fail with ``cannot connect to BOOTSTRAP (why)``."""
    try:
        await client.start()
    except (KafkaConnectionError, KafkaTimeoutError, OSError) as exc:
        raise CliError(f"cannot connect to {ctx.bootstrap} ({exc})") from None


@contextlib.asynccontextmanager
async def admin(ctx: Ctx) -> AsyncIterator[Admin]:
    """A started admin client, closed on the way out."""
    client = Admin(**ctx.common())
    try:
        await start(client, ctx)
        yield client
    finally:
        await client.close()


async def topic_partitions(admin: Admin, topic: str) -> list[int]:
    """The partitions of an existing topic the user may describe, else a :class:`CliError`."""
    md = await admin.net.refresh_metadata()
    info = md.topics.get(topic)
    if info is not None and info.error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED:
        raise CliError(f"not authorized to describe topic {topic!r}")
    if info is None or (info.error_code and not info.partitions):
        raise CliError(f"topic {topic!r} does not exist")
    return sorted(info.partitions)


# -- errors ----------------------------------------------------------------------------------------


def explain(exc: KafkaError, what: str = "") -> str:
    """A broker error as one line, prefixed with ``what:`` when given."""
    code = exc.code
    detail = exc.detail or ""
    prefix = f"{what}: " if what else ""
    if code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
        return f"{prefix}unknown topic or partition" + (f" ({detail})" if detail else "")
    return f"{prefix}{exc}"


Message = str | Callable[[KafkaError], str]


@contextlib.contextmanager
def kafka_errors(known: Mapping[ErrorCode, Message] | None = None,
                 otherwise: Callable[[KafkaError], str] | None = None) -> Iterator[None]:
    """Report a :class:`KafkaError` raised in the block as a :class:`CliError`: the message of its code
    in ``known``, else ``otherwise(exc)``; without ``otherwise`` other errors go on as they are."""
    try:
        yield
    except KafkaError as exc:
        message = (known or {}).get(exc.code)
        if message is None and otherwise is None:
            raise
        if message is None:
            message = otherwise
        raise CliError(message if isinstance(message, str) else message(exc)) from None


def err(message: str) -> None:
    """``kbroker: message`` on stderr."""
    print(f"kbroker: {message}", file=sys.stderr)


# -- output ----------------------------------------------------------------------------------------


def table(rows: list[list[str]], out: IO[str] | None = None) -> None:
    """Left-aligned columns as wide as their widest cell; the first row is the header."""
    out = out or sys.stdout
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        out.write(" ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() + "\n")


def dash(value: Any) -> str:
    """A table cell: ``-`` for nothing."""
    return "-" if value is None or value == "" else str(value)


def host_label(host: str | None) -> str:
    """A member's host as Kafka's tools print it (``/127.0.0.1``), ``-`` for none."""
    return "-" if not host else (host if host.startswith("/") else "/" + host)


def partition_label(tp: TopicPartition) -> str:
    """``topic-partition``, as Kafka's tools print a partition."""
    return f"{tp.topic}-{tp.partition}"


def replicas_and_isr(replicas: Iterable[int], isr: Iterable[int]) -> str:
    """The ``Replicas: 1,2,3\\tIsr: 1,2`` columns of a partition line."""
    return f"Replicas: {','.join(map(str, replicas))}\tIsr: {','.join(map(str, isr))}"
