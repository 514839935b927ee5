"""Option parsing and offset planning for the kbroker Spark source; pure (no Spark, no network).

Offsets travel as Spark's Kafka source writes them: ``{"topic": {"0": 123, "1": 456}}`` with
``-2`` meaning earliest and ``-1`` latest in user-supplied JSON.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from client.types import TopicPartition

EARLIEST = -2
LATEST = -1

Offsets = dict[TopicPartition, int]


def _bool(options: Mapping[str, str], name: str, default: bool) -> bool:
    raw = options.get(name)
    if raw is None:
        return default
    low = str(raw).strip().lower()
    if low not in ("true", "false"):
        raise ValueError(f"option '{name}' must be true or false, not {raw!r}")
    return low == "true"


def _positive_int(options: Mapping[str, str], name: str) -> int | None:
    raw = options.get(name)
    if raw is None or str(raw).strip() == "":
        return None
    try:
        value = int(str(raw).strip())
    except ValueError:
        raise ValueError(f"option '{name}' must be a positive integer, not {raw!r}") from None
    if value <= 0:
        raise ValueError(f"option '{name}' must be a positive integer, not {raw!r}")
    return value


@dataclass(frozen=True)
class Subscription:
    """Exactly one of subscribe / subscribePattern / assign."""

    topics: tuple[str, ...] = ()
    pattern: str | None = None
    assign: tuple[TopicPartition, ...] | None = None

    @classmethod
    def from_options(cls, options: Mapping[str, str]) -> Subscription:
        given = [k for k in ("subscribe", "subscribepattern", "assign") if options.get(k) not in (None, "")]
        if len(given) != 1:
            raise ValueError("exactly one of the options 'subscribe', 'subscribePattern' or 'assign' must be "
                             f"set (got {len(given)})")
        kind = given[0]
        raw = str(options[kind])
        if kind == "subscribe":
            topics = tuple(t.strip() for t in raw.split(",") if t.strip())
            if not topics:
                raise ValueError("option 'subscribe' lists no topic")
            return cls(topics=topics)
        if kind == "subscribepattern":
            try:
                re.compile(raw)
            except re.error as exc:
                raise ValueError(f"bad subscribePattern {raw!r}: {exc}") from None
            return cls(pattern=raw)
        try:
            spec = json.loads(raw)
            tps = tuple(sorted({TopicPartition(str(t), int(p)) for t, ps in spec.items() for p in ps}))
        except (ValueError, TypeError, AttributeError):
            raise ValueError(f"option 'assign' must be JSON like {{\"topicA\":[0,1]}}, not {raw!r}") from None
        if not tps:
            raise ValueError("option 'assign' lists no partition")
        return cls(assign=tps)


def parse_partition_json(raw: str, name: str) -> dict[TopicPartition, int]:
    """``{"t": {"0": 5}}`` -> ``{TopicPartition("t", 0): 5}``."""
    try:
        spec = json.loads(raw)
        if not isinstance(spec, dict):
            raise TypeError
        return {TopicPartition(str(t), int(p)): int(v) for t, ps in spec.items() for p, v in ps.items()}
    except (ValueError, TypeError, AttributeError):
        raise ValueError(f"option '{name}' must be 'earliest', 'latest' or JSON like "
                         f"{{\"topicA\":{{\"0\":23,\"1\":-1}}}}, not {raw!r}") from None


def offsets_to_json(offsets: Mapping[TopicPartition, int]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for tp in sorted(offsets):
        out.setdefault(tp.topic, {})[str(tp.partition)] = int(offsets[tp])
    return out


def offsets_from_json(data: Mapping[str, Mapping[str, Any]] | None) -> Offsets:
    if not data:
        return {}
    return {TopicPartition(t, int(p)): int(v) for t, ps in data.items() for p, v in ps.items()}


@dataclass(frozen=True)
class OffsetSpec:
    """One unresolved bound: earliest, latest, per-partition offsets, or timestamps."""

    kind: str  # "earliest" | "latest" | "offsets" | "timestamps" | "timestamp"
    offsets: tuple[tuple[TopicPartition, int], ...] = ()
    timestamp: int | None = None

    @property
    def mapping(self) -> dict[TopicPartition, int]:
        return dict(self.offsets)


def offset_spec(options: Mapping[str, str], which: str, default: str) -> OffsetSpec:
    """Read ``<which>Timestamp``, ``<which>OffsetsByTimestamp`` and ``<which>Offsets`` (in that precedence)."""
    ts = options.get(f"{which}timestamp")
    if ts not in (None, ""):
        try:
            return OffsetSpec("timestamp", timestamp=int(str(ts)))
        except ValueError:
            raise ValueError(f"option '{which}Timestamp' must be milliseconds since the epoch") from None
    by_ts = options.get(f"{which}offsetsbytimestamp")
    if by_ts not in (None, ""):
        return OffsetSpec("timestamps", tuple(sorted(parse_partition_json(str(by_ts),
                                                                          f"{which}OffsetsByTimestamp").items())))
    raw = str(options.get(f"{which}offsets") or default).strip()
    if raw.lower() in ("earliest", "latest"):
        return OffsetSpec(raw.lower())
    return OffsetSpec("offsets", tuple(sorted(parse_partition_json(raw, f"{which}Offsets").items())))


def validate_batch_specs(start: OffsetSpec, end: OffsetSpec) -> None:
    if start.kind == "latest" or (start.kind == "offsets" and any(v == LATEST for _, v in start.offsets)):
        raise ValueError("startingOffsets can't be latest (-1) for batch queries")
    if end.kind == "earliest" or (end.kind == "offsets" and any(v == EARLIEST for _, v in end.offsets)):
        raise ValueError("endingOffsets can't be earliest (-2) for batch queries")


def validate_stream_options(options: Mapping[str, str]) -> None:
    for name in ("endingoffsets", "endingoffsetsbytimestamp", "endingtimestamp"):
        if options.get(name) not in (None, ""):
            raise ValueError(f"option '{name}' is for batch queries only")


@dataclass(frozen=True)
class OffsetRange:
    topic: str
    partition: int
    start: int
    end: int

    @property
    def size(self) -> int:
        return self.end - self.start


def plan_ranges(start: Offsets, end: Offsets, *, min_partitions: int | None = None,
                max_records_per_partition: int | None = None) -> list[OffsetRange]:
    """One range per topic-partition with data; split further for minPartitions / maxRecordsPerPartition.

    Like Spark's ``KafkaOffsetRangeCalculator``: when there are fewer ranges than
    ``min_partitions``, each range is cut into pieces in proportion to its share of all records.
    """
    ranges = [OffsetRange(tp.topic, tp.partition, start[tp], end[tp])
              for tp in sorted(end) if tp in start and end[tp] > start[tp]]
    if max_records_per_partition:
        ranges = [piece for r in ranges for piece in _split(r, math.ceil(r.size / max_records_per_partition))]
    if min_partitions and len(ranges) < min_partitions:
        total = sum(r.size for r in ranges)
        split: list[OffsetRange] = []
        for r in ranges:
            parts = max(1, round(r.size / total * min_partitions)) if total else 1
            split += _split(r, parts)
        ranges = split
    return ranges


def _split(r: OffsetRange, parts: int) -> list[OffsetRange]:
    parts = max(1, min(parts, r.size))
    if parts == 1:
        return [r]
    out = []
    for i in range(parts):
        a = r.start + r.size * i // parts
        b = r.start + r.size * (i + 1) // parts
        out.append(OffsetRange(r.topic, r.partition, a, b))
    return out


def rate_limit(start: Offsets, latest: Offsets, max_rows: int) -> Offsets:
    """Spread ``max_rows`` over the partitions in proportion to their backlog (Spark's rule)."""
    sizes = {tp: max(0, latest[tp] - start.get(tp, 0)) for tp in latest}
    total = sum(sizes.values())
    if total <= max_rows:
        return dict(latest)
    out: Offsets = {}
    for tp, end in latest.items():
        begin = start.get(tp, 0)
        size = sizes[tp]
        prorate = max_rows * (size / total)
        step = math.ceil(prorate) if prorate < 1 else math.floor(prorate)
        out[tp] = min(end, begin + step) if size > 0 else end
    return out
