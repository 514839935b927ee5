"""``kbroker --help`` lists every command group, and every group's and command's ``--help`` works."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from kbroker_cli.commands import TOP_LEVEL
from kbroker_cli.main import HANDLERS, main

#: the pinned command groups and their commands, in the order the help lists them
PINNED: dict[str, list[str]] = {
    "topics": ["list", "create", "describe", "delete"],
    "cluster": ["describe", "reassign", "decommission", "rebalance"],
    "groups": ["list", "describe", "delete"],
    "share-groups": ["list", "describe", "reset-offsets", "delete"],
    "configs": ["describe", "alter"],
    "transactions": ["list", "describe"],
    "produce": [],
    "consume": [],
    "acls": ["add", "list", "remove"],
    "users": ["add", "list", "remove"],
}


def help_text(*args: str) -> str:
    env = {k: v for k, v in os.environ.items() if k != "KBROKER_BOOTSTRAP"}
    proc = subprocess.run([sys.executable, "-m", "kbroker_cli", *args, "--help"], capture_output=True, text=True,
                          timeout=60, env=env)
    assert (proc.returncode, proc.stderr) == (0, ""), f"kbroker {' '.join(args)} --help: {proc}"
    assert proc.stdout.startswith(f"usage: kbroker {' '.join(args)}".rstrip() + " ")
    return proc.stdout


def listed(text: str, metavar: str) -> list[str]:
    """The names argparse lists under ``metavar`` (``COMMAND`` or ``ACTION``) in a help text."""
    block = re.search(rf"^  {metavar}\n((?:    .*\n)+)", text, re.M)
    assert block is not None, f"no {metavar} list in:\n{text}"
    return re.findall(r"^    (\S+)", block.group(1), re.M)


def test_help_lists_every_command_group_in_order() -> None:
    names = listed(help_text(), "COMMAND")
    assert [n for n in names if n in PINNED] == list(PINNED)
    assert names == [top.name for top in TOP_LEVEL]
    assert "KBROKER_BOOTSTRAP" in help_text()


@pytest.mark.parametrize("group", list(PINNED))
def test_each_group_help_lists_its_commands(group: str) -> None:
    text = help_text(group)
    registered = [action for (name, action) in HANDLERS if name == group and action is not None]
    if PINNED[group]:
        actions = listed(text, "ACTION")
        assert [a for a in actions if a in PINNED[group]] == PINNED[group]
        assert actions == registered
    else:
        assert registered == [] and "ACTION" not in text


def test_every_command_help_works(capsys: pytest.CaptureFixture[str]) -> None:
    assert {(g, a) for g, actions in PINNED.items() for a in actions or [None]} <= set(HANDLERS)
    for group, action in HANDLERS:
        argv = [group] if action is None else [group, action]
        assert main([*argv, "--help"]) == 0, argv
        out, err = capsys.readouterr()
        assert out.startswith(f"usage: kbroker {' '.join(argv)} ") and err == "", (argv, out, err)
