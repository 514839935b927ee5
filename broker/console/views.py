"""Formatting for the console's pages: sizes, rates, times, pages of rows, record bodies and charts.

Pure functions of their arguments; the templates escape everything they print (a record's key, a
group's name), so nothing here builds markup.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

__all__ = ["Body", "Chart", "Page", "body", "chart", "human_bytes", "human_rate", "page_of", "when"]

T = TypeVar("T")
FORMATS = ("text", "json", "hex")


def human_bytes(n: float | None) -> str:
    if n is None or n < 0:
        return "—"
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"


def human_rate(per_s: float | None, unit: str = "/s") -> str:
    if per_s is None:
        return "—"
    if per_s >= 1_000_000:
        return f"{per_s / 1_000_000:.1f} M{unit}"
    if per_s >= 1000:
        return f"{per_s / 1000:.1f} k{unit}"
    return f"{per_s:.1f} {unit}" if per_s < 10 else f"{per_s:.0f} {unit}"


def when(ms: int | None) -> str:
    """A record timestamp (ms since the epoch) as UTC text."""
    if ms is None or ms < 0:
        return "—"
    seconds, millis = divmod(int(ms), 1000)
    try:
        return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(seconds)) + f".{millis:03d} UTC"
    except (OverflowError, OSError, ValueError):
        return str(ms)


@dataclass(frozen=True, slots=True)
class Page:
    number: int
    count: int
    size: int
    total: int

    @property
    def has_previous(self) -> bool:
        return self.number > 1

    @property
    def has_next(self) -> bool:
        return self.number < self.count

    @property
    def first_row(self) -> int:
        return (self.number - 1) * self.size


def page_of(items: Sequence[T], number: Any, size: int) -> tuple[list[T], Page]:
    """The ``number``-th page (1-based, clamped; any text taken as 1) of ``items``."""
    try:
        n = int(number)
    except (TypeError, ValueError):
        n = 1
    count = max(1, math.ceil(len(items) / size))
    n = min(max(1, n), count)
    start = (n - 1) * size
    return list(items[start:start + size]), Page(n, count, size, len(items))


@dataclass(frozen=True, slots=True)
class Body:
    """A record's key, value or header value as shown: ``text`` in ``format``; ``note`` says why it is not
    in the format asked for, or that it was cut short."""

    text: str | None
    format: str
    size: int
    truncated: bool
    note: str = ""


def body(data: bytes | None, fmt: str, limit: int) -> Body:
    """``data`` shown as text (UTF-8, invalid bytes replaced), pretty JSON, or hex — at most ``limit`` bytes of it."""
    if data is None:
        return Body(None, fmt, 0, False)
    data = bytes(data)
    size = len(data)
    cut = data[:limit]
    truncated = size > limit
    note = f"first {limit} of {size} bytes" if truncated else ""
    if fmt == "hex":
        lines = [cut[i:i + 16].hex(" ") for i in range(0, len(cut), 16)]
        return Body("\n".join(lines), "hex", size, truncated, note)
    text = cut.decode("utf-8", errors="replace")
    if fmt == "json":
        if truncated:
            return Body(text, "text", size, True, note + "; too long to format as JSON")
        try:
            return Body(json.dumps(json.loads(text), indent=2, ensure_ascii=False), "json", size, False)
        except ValueError:
            return Body(text, "text", size, False, "not JSON")
    return Body(text, "text", size, truncated, note)


@dataclass(frozen=True, slots=True)
class Chart:
    """A line chart's geometry (drawn by the ``chart`` template macro as SVG)."""

    title: str
    width: int
    height: int
    #: (label, CSS class, "x,y x,y ...") per line
    lines: list[tuple[str, str, str]]
    y_max_text: str
    x_start_text: str
    x_end_text: str
    empty: bool
    #: the latest value of each line, as text (what a screen reader reads)
    summary: str


def chart(title: str, series: Sequence[tuple[str, Sequence[tuple[float, float]]]], fmt: Any = human_rate, *,
          width: int = 560, height: int = 140, window_s: float = 3600.0, now: float | None = None) -> Chart:
    """``series`` (label, [(unix time, value), ...]) over the last ``window_s`` seconds (or since the first
    sample, when that is more recent)."""
    end = time.time() if now is None else now
    start = end - window_s
    first = min((t for _, points in series for t, _ in points if t >= start), default=None)
    if first is not None and first < end:  # a younger broker: its history so far fills the width
        start = first
        window_s = end - start
    peak = max((v for _, points in series for t, v in points if t >= start), default=0.0)
    top = peak * 1.1 if peak > 0 else 1.0
    lines = []
    latest = []
    for i, (label, points) in enumerate(series):
        shown = [(t, v) for t, v in points if t >= start]
        coords = " ".join(f"{(t - start) / window_s * width:.1f},{height - v / top * height:.1f}" for t, v in shown)
        lines.append((label, f"line{i % 4}", coords))
        latest.append(f"{label}: {fmt(shown[-1][1]) if shown else 'no data'}")
    return Chart(title, width, height, lines, fmt(peak) if peak else "0",
                 time.strftime("%H:%M", time.localtime(start)), time.strftime("%H:%M", time.localtime(end)),
                 not any(line[2] for line in lines), "; ".join(latest))
