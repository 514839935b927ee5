"""Just enough YAML for docker-compose.yml and prometheus.yml (PyYAML is not a dependency).

Block mappings and sequences, ``- key: value`` items, flow sequences (``[a, "b"]``, possibly over
several lines), quoted and plain scalars, comments.  Scalars stay strings (``None`` for empty).
Anything outside that subset raises ``ValueError`` rather than being misread.
"""

from __future__ import annotations

import json
from typing import Any


def _strip_comment(line: str) -> str:
    quote = None
    for i, ch in enumerate(line):
        if quote:
            if ch == quote:
                quote = None
        elif ch in "\"'":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1] in " \t"):
            return line[:i].rstrip()
    return line.rstrip()


def _logical_lines(text: str) -> list[tuple[int, str]]:
    out: list[tuple[int, str]] = []
    pending: tuple[int, str] | None = None
    for raw in text.splitlines():
        if "\t" in raw[: len(raw) - len(raw.lstrip())]:
            raise ValueError("tabs in indentation")
        line = _strip_comment(raw)
        if not line.strip():
            continue
        if pending is not None:  # inside a multi-line flow sequence
            pending = (pending[0], pending[1] + " " + line.strip())
        else:
            pending = (len(line) - len(line.lstrip()), line.strip())
        if pending[1].count("[") == pending[1].count("]") and pending[1].count("{") == pending[1].count("}"):
            out.append(pending)
            pending = None
    if pending is not None:
        raise ValueError(f"unterminated flow collection: {pending[1]!r}")
    return out


def _split_flow(body: str) -> list[str]:
    items, depth, quote, cur = [], 0, None, ""
    for ch in body:
        if quote:
            cur += ch
            if ch == quote:
                quote = None
            continue
        if ch in "\"'":
            quote = ch
        elif ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
        elif ch == "," and depth == 0:
            items.append(cur.strip())
            cur = ""
            continue
        cur += ch
    if cur.strip():
        items.append(cur.strip())
    return items


def scalar(text: str) -> Any:
    text = text.strip()
    if text == "" or text in ("~", "null"):
        return None
    if text.startswith("[") and text.endswith("]"):
        return [scalar(x) for x in _split_flow(text[1:-1])]
    if text.startswith("{"):
        raise ValueError(f"flow mappings are not supported: {text!r}")
    if text.startswith('"') and text.endswith('"') and len(text) >= 2:
        return json.loads(text)
    if text.startswith("'") and text.endswith("'") and len(text) >= 2:
        return text[1:-1].replace("''", "'")
    if text[0] in "&*!|>":
        raise ValueError(f"unsupported YAML construct: {text!r}")
    return text


def _key_value(text: str) -> tuple[str, str] | None:
    if text.startswith(("'", '"')):
        end = text.index(text[0], 1)
        key, rest = text[1:end], text[end + 1:]
        if not rest.startswith(":"):
            return None
        return key, rest[1:]
    idx = text.find(": ")
    if idx < 0 and text.endswith(":"):
        idx = len(text) - 1
    if idx <= 0 or text.startswith("[") or text.startswith("- "):
        return None
    return text[:idx], text[idx + 1:]


def _parse(lines: list[tuple[int, str]], i: int, indent: int) -> tuple[Any, int]:
    if i >= len(lines):
        return None, i
    is_seq = lines[i][1] == "-" or lines[i][1].startswith("- ")
    node: Any = [] if is_seq else {}
    while i < len(lines):
        ind, text = lines[i]
        if ind < indent:
            break
        if ind > indent:
            raise ValueError(f"unexpected indentation at {text!r}")
        if is_seq:
            if not (text == "-" or text.startswith("- ")):
                break
            rest = text[1:].strip()
            if not rest:
                value, i = _parse(lines, i + 1, lines[i + 1][0]) if i + 1 < len(lines) and \
                    lines[i + 1][0] > indent else (None, i + 1)
                node.append(value)
                continue
            if _key_value(rest) is not None:
                # "- key: value" starts a mapping indented like its first key
                lines[i] = (indent + 2, rest)
                value, i = _parse(lines, i, indent + 2)
                node.append(value)
                continue
            node.append(scalar(rest))
            i += 1
        else:
            kv = _key_value(text)
            if kv is None:
                raise ValueError(f"expected 'key: value', got {text!r}")
            key, rest = kv
            if key in node:
                raise ValueError(f"duplicate key {key!r}")
            if rest.strip():
                node[key] = scalar(rest)
                i += 1
            elif i + 1 < len(lines) and (lines[i + 1][0] > indent or
                                         (lines[i + 1][0] == indent and lines[i + 1][1].startswith("- "))):
                node[key], i = _parse(lines, i + 1, lines[i + 1][0])
            else:
                node[key] = None
                i += 1
    return node, i


def loads(text: str) -> Any:
    lines = _logical_lines(text)
    if not lines:
        return None
    node, i = _parse(lines, 0, lines[0][0])
    if i != len(lines):
        raise ValueError(f"could not parse from {lines[i][1]!r}")
    return node
