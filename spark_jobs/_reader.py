"""The thin layer between the Spark source and kbroker's client.

Everything that talks to the broker goes through here, on top of the client's public pieces:

* :func:`client_config` turns Spark-style ``kafka.*`` options into client keyword arguments;
* :class:`OffsetReader` (driver side) lists topic-partitions and resolves earliest / latest /
  by-timestamp offsets with a group-less :class:`~client.sync.SyncConsumer`;
* :func:`read_range` (executor side) yields the records of one partition between two offsets
  as column buffers: the fetched record sets (:meth:`~client.sync.SyncConsumer.getmany_record_sets`)
  are decoded straight into :class:`~protocol.records.RecordColumns` (Arrow's layout, no object
  per record), and records that are gone (retention, DeleteRecords) are handled the way Spark's
  Kafka source does: fail, or skip to what is still there.
"""

from __future__ import annotations

import dataclasses
import logging
import re
import time
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from client.config import AdminConfig, ConsumerConfig, ProducerConfig
from client.errors import KafkaError, NoOffsetForPartitionError
from client.sync import SyncConsumer
from client.types import TopicPartition
from protocol.error_codes import ErrorCode
from protocol.records import CorruptRecordError, RecordColumns

log = logging.getLogger(__name__)

# Kafka settings Spark refuses to take through kafka.* (the source manages them itself).
FORBIDDEN = {
    "auto.offset.reset": "use startingOffsets instead",
    "key.deserializer": "keys are always returned as binary",
    "value.deserializer": "values are always returned as binary",
    "key.serializer": "keys are always written as binary",
    "value.serializer": "values are always written as binary",
    "enable.auto.commit": "the source never commits offsets",
    "interceptor.classes": "interceptors are not supported",
}
# Accepted for compatibility but unused: the source tracks offsets in Spark's checkpoint, not in a group.
IGNORED = {"group.id"}

_CONFIG_CLASSES = {"consumer": ConsumerConfig, "producer": ProducerConfig, "admin": AdminConfig}
# Executor defaults (a user's kafka.* option wins).
_EXECUTOR_DEFAULTS = {"max_partition_fetch_bytes": 8 << 20, "fetch_max_bytes": 64 << 20}


class DataLossError(RuntimeError):
    """Records the query needs are no longer in the log (and failOnDataLoss is true)."""


def _coerce(raw: str, default: Any) -> Any:
    if isinstance(default, bool):
        low = raw.strip().lower()
        if low not in ("true", "false"):
            raise ValueError(f"expected true/false, got {raw!r}")
        return low == "true"
    if isinstance(default, int):
        try:
            return int(raw)
        except ValueError:
            return raw  # e.g. acks=all; the client validates
    return raw


def client_config(options: Mapping[str, str], kind: str = "consumer") -> dict[str, Any]:
    """``kafka.bootstrap.servers`` -> ``bootstrap_servers`` etc. for a client of ``kind``.

    Settings the client does not know are dropped with a warning (as a Kafka client does);
    settings Spark forbids raise ``ValueError``.
    """
    cls = _CONFIG_CLASSES[kind]
    fields = {f.name: f for f in dataclasses.fields(cls)}
    out: dict[str, Any] = {}
    for key, value in options.items():
        low = key.lower()
        if not low.startswith("kafka."):
            continue
        name = low[len("kafka."):]
        if name in IGNORED:
            continue
        if name in FORBIDDEN:
            raise ValueError(f"Kafka option '{name}' is not supported: {FORBIDDEN[name]}")
        attr = name.replace(".", "_")
        f = fields.get(attr)
        if f is None:
            log.warning("kafka.%s is not a known %s setting of the kbroker client; ignored", name, kind)
            continue
        default = f.default if f.default is not dataclasses.MISSING else None
        out[attr] = _coerce(str(value), default) if default is not None else value
    if "bootstrap_servers" not in out:
        raise ValueError("option 'kafka.bootstrap.servers' is required")
    return out


def consumer_kwargs(options: Mapping[str, str], executor: bool = False) -> dict[str, Any]:
    cfg = client_config(options, "consumer")
    if executor:
        for k, v in _EXECUTOR_DEFAULTS.items():
            cfg.setdefault(k, v)
    cfg.update(group_id=None, enable_auto_commit=False, auto_offset_reset="none")
    return cfg


class OffsetReader:
    """Driver-side metadata and offset look-ups; ``with OffsetReader(cfg) as r: ...``."""

    def __init__(self, config: dict[str, Any]) -> None:
        self._config = config
        self._consumer: SyncConsumer | None = None

    @property
    def consumer(self) -> SyncConsumer:
        if self._consumer is None:
            self._consumer = SyncConsumer(**self._config)
        return self._consumer

    def close(self) -> None:
        if self._consumer is not None:
            self._consumer.close()
            self._consumer = None

    def __enter__(self) -> OffsetReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __getstate__(self) -> dict[str, Any]:  # never ship a live client
        return {"_config": self._config, "_consumer": None}

    # -- topic-partitions -----------------------------------------------------------------------

    def topic_partitions(self, *, subscribe: Iterable[str] = (), pattern: str | None = None,
                         assign: Iterable[TopicPartition] | None = None) -> list[TopicPartition]:
        """Current partitions of the subscribed / matching topics (assign is returned as is)."""
        if assign is not None:
            return sorted(set(assign))
        existing = self.consumer.topics()  # also refreshes metadata
        if pattern is not None:
            rx = re.compile(pattern)
            topics = sorted(t for t in existing if rx.fullmatch(t))
        else:
            topics = [t for t in dict.fromkeys(subscribe) if t in existing]
        out: list[TopicPartition] = []
        for t in topics:
            parts = self.consumer.partitions_for_topic(t) or set()
            out += [TopicPartition(t, p) for p in sorted(parts)]
        return out

    # -- offsets --------------------------------------------------------------------------------

    def earliest(self, tps: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        tps = list(tps)
        return dict(self.consumer.beginning_offsets(tps)) if tps else {}

    def latest(self, tps: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        tps = list(tps)
        return dict(self.consumer.end_offsets(tps)) if tps else {}

    def for_times(self, timestamps: Mapping[TopicPartition, int]) -> dict[TopicPartition, int | None]:
        """Earliest offset whose timestamp >= the given ms per partition; None when there is none."""
        if not timestamps:
            return {}
        res = self.consumer.offsets_for_times(dict(timestamps))
        return {tp: (None if v is None else v.offset) for tp, v in res.items()}


#: ``RecordColumns.finish()`` of one chunk: ``(length, offsets, timestamps, timestamp_types, key,
#: value, headers)`` (see :class:`~protocol.records.RecordColumns`)
Columns = tuple[Any, ...]


def read_range(config: dict[str, Any], topic: str, partition: int, start: int, end: int, *,
               headers: bool = False, fail_on_data_loss: bool = True, poll_timeout_ms: int = 120_000,
               min_chunk: int = 65_536) -> Iterator[Columns]:
    """Yield the records of ``topic``/``partition`` with ``start <= offset < end`` as column chunks
    (``RecordColumns.finish()`` tuples), in offset order.  A chunk is handed out once it holds
    ``min_chunk`` records or was decoded from ``max_partition_fetch_bytes`` (the client setting in
    ``config``) of fetched data, whichever comes first, so its size stays bounded however large the
    records are.

    Offsets missing inside the range (compaction, transaction markers, aborted records with
    ``kafka.isolation.level=read_committed``) are simply absent.  When
    ``start`` (or the current position) is below the log start offset because records were
    deleted, raise :class:`DataLossError` or, with ``fail_on_data_loss=False``, continue from
    the log start.  When no progress is made for ``poll_timeout_ms`` a ``TimeoutError`` is raised;
    a malformed record set raises ``KafkaError(CORRUPT_MESSAGE)``.
    """
    if end <= start:
        return
    tp = TopicPartition(topic, partition)
    pos = start
    chunk_bytes = int(config.get("max_partition_fetch_bytes", ConsumerConfig.max_partition_fetch_bytes))
    cols = RecordColumns(headers=headers)
    fetched = 0
    with SyncConsumer(**config) as c:
        c.assign([tp])
        c.seek(tp, start)
        last_progress = time.monotonic()
        while pos < end:
            try:
                data = c.getmany_record_sets(tp, timeout_ms=200)
            except NoOffsetForPartitionError:
                data = None
            except KafkaError as exc:
                if exc.code != ErrorCode.OFFSET_OUT_OF_RANGE:
                    raise
                data = None
            if data is None:  # out of range: the records at pos are gone (or not there yet)
                new_pos = _handle_out_of_range(c, tp, pos, end, fail_on_data_loss)
                if new_pos >= end:
                    break
                pos = new_pos
                c.seek(tp, pos)
                last_progress = time.monotonic()
                continue
            sets = data.get(tp)
            if not sets:
                moved = c.position(tp)  # past transaction markers / aborted records: nothing to return
                if moved > pos:
                    pos = moved
                    last_progress = time.monotonic()
                    if pos >= end:
                        break
                    continue
                if time.monotonic() - last_progress > poll_timeout_ms / 1000:
                    latest = c.end_offsets([tp])[tp]
                    if latest <= pos:
                        _lost(fail_on_data_loss, f"{topic}-{partition}: wanted offsets up to {end} but the "
                              f"log ends at {latest}")
                        break
                    raise TimeoutError(f"no records from {topic}-{partition} at offset {pos} "
                                       f"after {poll_timeout_ms} ms")
                if c.end_offsets([tp])[tp] <= pos:
                    earliest = c.beginning_offsets([tp])[tp]
                    if earliest > pos:  # deleted beneath us and the log is empty now
                        _lost(fail_on_data_loss, f"{topic}-{partition}: offsets {pos}..{earliest} were deleted")
                        break
                    _lost(fail_on_data_loss, f"{topic}-{partition}: wanted offsets up to {end} but the log "
                          f"ends at {pos}")
                    break
                continue
            last_progress = time.monotonic()
            try:
                for record_set, min_offset, aborted in sets:
                    cols.add(record_set, max(min_offset, start), end, aborted)
                    fetched += len(record_set)
            except CorruptRecordError as exc:
                raise KafkaError(ErrorCode.CORRUPT_MESSAGE, f"{topic}-{partition}: {exc}") from None
            pos = max(pos, c.position(tp))  # past the last whole batch handed out
            if cols.length >= min_chunk or fetched >= chunk_bytes:
                if cols.length:
                    yield cols.finish()
                    cols = RecordColumns(headers=headers)
                fetched = 0
    if cols.length:
        yield cols.finish()


def _lost(fail: bool, message: str) -> None:
    if fail:
        raise DataLossError(message + ". Some data may have been lost because it is not available in the "
                            "broker any more (retention or DeleteRecords). Set failOnDataLoss=false to "
                            "skip it instead.")
    log.warning("%s; skipped (failOnDataLoss=false)", message)


def _handle_out_of_range(c: SyncConsumer, tp: TopicPartition, pos: int, end: int, fail: bool) -> int:
    earliest = c.beginning_offsets([tp])[tp]
    latest = c.end_offsets([tp])[tp]
    if pos < earliest:
        _lost(fail, f"{tp.topic}-{tp.partition}: offsets {pos}..{min(earliest, end)} were deleted "
              f"(log start offset is {earliest})")
        return earliest
    if pos >= latest:
        _lost(fail, f"{tp.topic}-{tp.partition}: offset {pos} is past the log end {latest}")
        return end
    return pos  # transient; retry from the same place
