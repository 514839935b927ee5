"""How a command is declared: its name, help, arguments and handler, in one place.

A command group module declares ``group = CommandGroup("topics", "...")`` and each of its commands
with one decorated function::

    @group.command("list", "topic names, one per line", json_flag())
    async def list_topics(ctx: Ctx, args: argparse.Namespace) -> int:
        ...

which is ``kbroker topics list [--json]``. A top-level command without actions (``kbroker produce
TOPIC``) is a :class:`Command` with its handler given by ``@command.runs``. Both put themselves into
the parser (:meth:`add_to`) and name their handlers (:meth:`handlers`); :mod:`kbroker_cli.main`
builds the parser and dispatches from them.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, Protocol

from kbroker_cli.common import Ctx, UsageError


class ArgumentContainer(Protocol):
    """A parser, or a group of its arguments (``add_mutually_exclusive_group``)."""

    def add_argument(self, *flags: str, **options: Any) -> argparse.Action: ...

    def add_mutually_exclusive_group(self, *, required: bool = False) -> Any: ...


#: adds arguments to a command's parser: :func:`arg`, :func:`one_of`, or any function doing so
Arg = Callable[[ArgumentContainer], object]
#: runs a command; returns the exit code
Handler = Callable[[Ctx, argparse.Namespace], Awaitable[int]]


class CliParser(argparse.ArgumentParser):
    """Every parser of the CLI: a bad command line prints the usage and raises :class:`UsageError` (exit 2)."""

    def error(self, message: str) -> Any:
        self.print_usage(sys.stderr)
        raise UsageError(message)


def arg(*flags: str, **options: Any) -> Arg:
    """One ``add_argument(*flags, **options)`` of a command."""
    return lambda parser: parser.add_argument(*flags, **options)


def one_of(*args: Arg, required: bool = False) -> Arg:
    """At most one of these arguments (exactly one when ``required``): argparse's mutually exclusive group."""

    def add(parser: ArgumentContainer) -> None:
        which = parser.add_mutually_exclusive_group(required=required)
        for add_arg in args:
            add_arg(which)

    return add


def json_flag(help: str | None = None) -> Arg:
    """``--json``: print the result as JSON instead of text."""
    return arg("--json", action="store_true", help=help)


class Command:
    """One command: ``kbroker GROUP NAME ...`` inside a group, or ``kbroker NAME ...`` on its own."""

    def __init__(self, name: str, help: str, *args: Arg, **parser_options: Any) -> None:
        self.name = name
        self.help = help
        self.args = args
        self.parser_options = parser_options  # formatter_class, epilog, ...
        self.handler: Handler | None = None

    def runs(self, handler: Handler) -> Handler:
        """Decorator: ``handler`` runs this command."""
        self.handler = handler
        return handler

    def add_to(self, subparsers: Any) -> None:
        parser = subparsers.add_parser(self.name, help=self.help, **self.parser_options)
        for add in self.args:
            add(parser)

    def handlers(self) -> Iterator[tuple[tuple[str, str | None], Handler]]:
        """``((name, None), handler)``: a command on its own has no action."""
        assert self.handler is not None, f"command {self.name!r} has no handler"
        yield (self.name, None), self.handler


class CommandGroup:
    """``kbroker NAME ACTION ...``: a top-level command whose actions are its commands."""

    def __init__(self, name: str, help: str) -> None:
        self.name = name
        self.help = help
        self.commands: list[Command] = []

    def command(self, name: str, help: str, *args: Arg, **parser_options: Any) -> Callable[[Handler], Handler]:
        """Decorator: the function handles ``kbroker GROUP NAME`` with these arguments."""
        command = Command(name, help, *args, **parser_options)
        self.commands.append(command)
        return command.runs

    def add_to(self, subparsers: Any) -> None:
        parser = subparsers.add_parser(self.name, help=self.help)
        actions = parser.add_subparsers(dest="action", metavar="ACTION", parser_class=CliParser)
        for command in self.commands:
            command.add_to(actions)

    def handlers(self) -> Iterator[tuple[tuple[str, str | None], Handler]]:
        """``((group, action), handler)`` for every command of the group."""
        for command in self.commands:
            for (action, _), handler in command.handlers():
                yield (self.name, action), handler


class TopLevel(Protocol):
    """What ``kbroker COMMAND`` can be: a :class:`CommandGroup` or a :class:`Command` on its own."""

    name: str

    def add_to(self, subparsers: Any) -> None: ...

    def handlers(self) -> Iterator[tuple[tuple[str, str | None], Handler]]: ...
