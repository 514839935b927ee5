"""The README's settings tables, written from the settings' declarations.

README.md marks each table's place with a pair of comments naming the groups it shows
(:class:`~broker.config.declare.Group`, in lower case)::

    <!-- settings: limits topics -->
    ...generated...
    <!-- /settings -->

``python -m broker.config.docs`` rewrites what lies between every such pair (``--check``: only say
whether README.md is up to date, exit 1 when it is not).  Each group is a table of its settings: name,
default, whether it is dynamic, and what it does; a region of several groups titles each table.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from broker.config.declare import Dynamic, Group, Setting
from broker.config.settings import SETTINGS

__all__ = ["README", "main", "regions", "render", "update"]

README = Path(__file__).resolve().parents[2] / "README.md"

_REGION = re.compile(r"(<!-- settings: ([a-z_ ]+) -->\n)(.*?)(<!-- /settings -->)", re.S)


def _group(key: str) -> Group:
    try:
        return Group[key.upper()]
    except KeyError:
        raise ValueError(f"README.md names an unknown settings group {key!r} "
                         f"(known: {', '.join(g.name.lower() for g in Group)})") from None


def _dynamic_text(s: Setting) -> str:
    if s.dynamic is Dynamic.STORED:
        return "stored only, per broker" if s.per_broker_only else "stored only"
    return s.dynamic.value


def _what(s: Setting) -> str:
    parts = [s.doc]
    if s.topic is not None and s.spelling_of is None:
        parts.append(f"Reported among the synonyms of the topic config `{s.topic}`." if s.dynamic is Dynamic.STORED
                     else f"The default of the topic config `{s.topic}`.")
    spellings = [n for n, x in SETTINGS.items() if x.spelling_of == s.name]
    if spellings:
        parts.append(f"Dynamic configs may give it as {' or '.join(f'`{n}`' for n in spellings)}.")
    return " ".join(parts).replace("|", "\\|")


def _table(group: Group) -> list[str]:
    lines = ["| setting | default | dynamic | what it does |", "|---|---|---|---|"]
    for s in SETTINGS.values():
        if s.group is group and s.spelling_of is None:
            lines.append(f"| `{s.name}` | {s.shown_default} | {_dynamic_text(s)} | {_what(s)} |")
    return lines


def render(groups: list[Group]) -> str:
    """The generated text of a region showing ``groups``."""
    lines: list[str] = []
    for group in groups:
        if len(groups) > 1:
            lines += [f"**{group.value}**", ""]
        lines += [*_table(group), ""]
    return "\n".join(lines)


def update(text: str) -> str:
    """``text`` (README.md) with every settings region generated anew."""
    return _REGION.sub(lambda m: m.group(1) + render([_group(k) for k in m.group(2).split()]) + m.group(4), text)


def regions(text: str) -> list[list[Group]]:
    """The groups each region of ``text`` shows, in order."""
    return [[_group(k) for k in m.group(2).split()] for m in _REGION.finditer(text)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m broker.config.docs",
                                     description="write the README's settings tables from the declarations")
    parser.add_argument("--check", action="store_true", help="only check that README.md is up to date (exit 1 if not)")
    parser.add_argument("--readme", type=Path, default=README, help=f"the file to update (default {README})")
    args = parser.parse_args(argv)
    text = args.readme.read_text()
    new = update(text)
    if args.check:
        if new != text:
            print(f"{args.readme} is stale: run python -m broker.config.docs", file=sys.stderr)
            return 1
        return 0
    if new != text:
        args.readme.write_text(new)
        print(f"updated {args.readme}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
