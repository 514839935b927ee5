"""The ``kbroker`` Spark data source: batch and streaming reads and writes of kbroker topics.

Mirrors Spark's built-in Kafka source (columns, option names, offset JSON) so that jobs written
for ``format("kafka")`` run with ``format("kbroker")``.  Readers yield Arrow record batches
built against one fixed schema, straight from the column buffers the executors decode fetched
record batches into (:func:`spark_jobs._reader.read_range`); executors read with kbroker's
synchronous client facade.  Writers are at-least-once, or exactly-once with Kafka transactions
(``deliveryGuarantee``, ``transactionalIdPrefix``; see :mod:`spark_jobs._writer`).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    DataSourceReader,
    DataSourceStreamArrowWriter,
    DataSourceStreamReader,
    InputPartition,
    WriterCommitMessage,
)
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import StructType

from client.types import TopicPartition
from spark_jobs import _reader, _writer
from spark_jobs._writer import KBrokerCommitMessage
from spark_jobs.options import (
    EARLIEST,
    LATEST,
    Offsets,
    OffsetSpec,
    Subscription,
    _bool,
    _positive_int,
    offset_spec,
    offsets_from_json,
    offsets_to_json,
    plan_ranges,
    rate_limit,
    validate_batch_specs,
    validate_stream_options,
)

log = logging.getLogger(__name__)

FORMAT = "kbroker"

SCHEMA_DDL = ("key binary, value binary, topic string, partition int, offset long, "
              "timestamp timestamp, timestampType int")
HEADERS_DDL = "headers array<struct<key: string, value: binary>>"

_TIMESTAMP_MS = pa.timestamp("ms", tz="UTC")  # what records carry
_TIMESTAMP_US = pa.timestamp("us", tz="UTC")  # Spark's timestamp
HEADER_TYPE = pa.list_(pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())]))
ARROW_SCHEMA = pa.schema([
    pa.field("key", pa.binary()),
    pa.field("value", pa.binary()),
    pa.field("topic", pa.string()),
    pa.field("partition", pa.int32()),
    pa.field("offset", pa.int64()),
    pa.field("timestamp", _TIMESTAMP_US),
    pa.field("timestampType", pa.int32()),
])
ARROW_SCHEMA_HEADERS = ARROW_SCHEMA.append(pa.field("headers", HEADER_TYPE))


# -- record batches ----------------------------------------------------------------------------

def to_arrow(columns: _reader.Columns, topic: str, partition: int, include_headers: bool = False
             ) -> pa.RecordBatch:
    """One chunk of a partition's records (:func:`spark_jobs._reader.read_range`) as a batch of the
    fixed source schema; the key, value, offset and timestamp type buffers are used as they are."""
    n, offsets, timestamps, types, key, value, headers = columns
    arrays = [
        _binary(n, key),
        _binary(n, value),
        pa.repeat(pa.scalar(topic, pa.string()), n),
        pa.repeat(pa.scalar(partition, pa.int32()), n),
        pa.Array.from_buffers(pa.int64(), n, [None, pa.py_buffer(offsets)]),
        pa.Array.from_buffers(_TIMESTAMP_MS, n, [None, pa.py_buffer(timestamps)]).cast(_TIMESTAMP_US),
        pa.Array.from_buffers(pa.int32(), n, [None, pa.py_buffer(types)]),
    ]
    if include_headers:
        arrays.append(pa.array([h or None for h in headers], HEADER_TYPE))
        return pa.RecordBatch.from_arrays(arrays, schema=ARROW_SCHEMA_HEADERS)
    return pa.RecordBatch.from_arrays(arrays, schema=ARROW_SCHEMA)


def _binary(n: int, column: tuple[bytearray | None, bytearray, bytearray]) -> pa.Array:
    valid, offsets, data = column
    return pa.Array.from_buffers(pa.binary(), n, [None if valid is None else pa.py_buffer(valid),
                                                  pa.py_buffer(offsets), pa.py_buffer(data)])


# -- partitions --------------------------------------------------------------------------------

class KBrokerPartition(InputPartition):
    """Offsets ``[start, end)`` of one topic-partition (or a slice of it)."""

    def __init__(self, topic: str, partition: int, start: int, end: int) -> None:
        super().__init__((topic, partition, start, end))
        self.topic, self.partition, self.start, self.end = topic, partition, start, end

    def __repr__(self) -> str:
        return f"KBrokerPartition({self.topic}-{self.partition} [{self.start}, {self.end}))"


def _read_partition(options: Mapping[str, str], part: InputPartition, include_headers: bool
                    ) -> Iterator[pa.RecordBatch]:
    if not isinstance(part, KBrokerPartition):  # Spark's placeholder for an empty plan
        return
    cfg = _reader.consumer_kwargs(options, executor=True)
    poll_ms = int(options.get("kafkaconsumer.polltimeoutms") or 120_000)
    fail = _bool(options, "failondataloss", True)
    for chunk in _reader.read_range(cfg, part.topic, part.partition, part.start, part.end,
                                    headers=include_headers, fail_on_data_loss=fail, poll_timeout_ms=poll_ms):
        yield to_arrow(chunk, part.topic, part.partition, include_headers)


def _partitions(start: Offsets, end: Offsets, options: Mapping[str, str]) -> list[InputPartition]:
    ranges = plan_ranges(start, end, min_partitions=_positive_int(options, "minpartitions"),
                         max_records_per_partition=_positive_int(options, "maxrecordsperpartition"))
    return [KBrokerPartition(r.topic, r.partition, r.start, r.end) for r in ranges]


# -- offset resolution (driver side) -----------------------------------------------------------

def _topic_partitions(reader: _reader.OffsetReader, sub: Subscription) -> list[TopicPartition]:
    return reader.topic_partitions(subscribe=sub.topics, pattern=sub.pattern, assign=sub.assign)


def resolve(reader: _reader.OffsetReader, spec: OffsetSpec, tps: list[TopicPartition], *, bound: str,
            strategy: str = "error") -> Offsets:
    """Concrete offsets for ``tps``; ``bound`` is "starting" or "ending" (for messages and defaults)."""
    if spec.kind == "earliest":
        return reader.earliest(tps)
    if spec.kind == "latest":
        return reader.latest(tps)
    if spec.kind == "timestamp":
        assert spec.timestamp is not None
        wanted = dict.fromkeys(tps, spec.timestamp)
    else:
        wanted = spec.mapping
        if set(wanted) != set(tps):
            raise ValueError(
                f"{bound}Offsets{'ByTimestamp' if spec.kind == 'timestamps' else ''} must name every "
                f"TopicPartition of the query: expected {sorted(map(tuple, tps))}, got "
                f"{sorted(map(tuple, wanted))}")
    if spec.kind == "offsets":
        out = dict(wanted)
        need_e = [tp for tp, v in out.items() if v == EARLIEST]
        need_l = [tp for tp, v in out.items() if v == LATEST]
        out.update(reader.earliest(need_e))
        out.update(reader.latest(need_l))
        for tp, v in out.items():
            if v < 0:
                raise ValueError(f"bad {bound} offset {v} for {tp.topic}-{tp.partition}")
        return out
    found = reader.for_times(wanted)
    missing = [tp for tp, v in found.items() if v is None]
    out = {tp: v for tp, v in found.items() if v is not None}
    if missing:
        if bound == "starting" and strategy == "error":
            raise ValueError(f"no offset with a timestamp >= the given one for {sorted(map(tuple, missing))}; "
                             "set startingOffsetsByTimestampStrategy=latest to start at the end instead")
        out.update(reader.latest(missing))
    return out


def _include_headers(options: Mapping[str, str]) -> bool:
    return _bool(options, "includeheaders", False)


# -- data source -------------------------------------------------------------------------------

class KBrokerDataSource(DataSource):
    """``spark.read.format("kbroker")`` / ``readStream`` / ``write`` / ``writeStream``."""

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def schema(self) -> str:
        return SCHEMA_DDL + (", " + HEADERS_DDL if _include_headers(self.options) else "")

    def reader(self, schema: StructType) -> DataSourceReader:
        return KBrokerBatchReader(dict(self.options))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return KBrokerStreamReader(dict(self.options))

    def writer(self, schema: StructType, overwrite: bool) -> KBrokerWriter:
        if overwrite:
            raise ValueError("the kbroker sink only appends; use mode('append')")
        return KBrokerWriter(dict(self.options), schema)

    def streamWriter(self, schema: StructType, overwrite: bool) -> KBrokerStreamWriter:
        return KBrokerStreamWriter(dict(self.options), schema)


def _lower(options: Mapping[str, str]) -> dict[str, str]:
    return {str(k).lower(): str(v) for k, v in options.items()}


class KBrokerBatchReader(DataSourceReader):
    def __init__(self, options: Mapping[str, str]) -> None:
        self.options = _lower(options)
        self.subscription = Subscription.from_options(self.options)
        self.start_spec = offset_spec(self.options, "starting", "earliest")
        self.end_spec = offset_spec(self.options, "ending", "latest")
        validate_batch_specs(self.start_spec, self.end_spec)
        self.include_headers = _include_headers(self.options)
        _reader.consumer_kwargs(self.options)  # fail early on bad kafka.* options

    def partitions(self) -> list[InputPartition]:
        strategy = self.options.get("startingoffsetsbytimestampstrategy", "error").lower()
        with _reader.OffsetReader(_reader.consumer_kwargs(self.options)) as r:
            tps = _topic_partitions(r, self.subscription)
            start = resolve(r, self.start_spec, tps, bound="starting", strategy=strategy)
            end = resolve(r, self.end_spec, tps, bound="ending")
        fail = _bool(self.options, "failondataloss", True)
        for tp in tps:
            if start[tp] > end[tp]:
                msg = (f"{tp.topic}-{tp.partition}: starting offset {start[tp]} is after the ending offset "
                       f"{end[tp]}")
                if fail:
                    raise ValueError(msg)
                log.warning("%s; the partition is skipped", msg)
        return _partitions(start, end, self.options)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        yield from _read_partition(self.options, partition, self.include_headers)


class KBrokerStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Offsets are ``{"topic": {"partition": next_offset}}``; new partitions start at offset 0."""

    def __init__(self, options: Mapping[str, str]) -> None:
        self.options = _lower(options)
        validate_stream_options(self.options)
        self.subscription = Subscription.from_options(self.options)
        self.start_spec = offset_spec(self.options, "starting", "latest")
        self.include_headers = _include_headers(self.options)
        self.max_per_trigger = _positive_int(self.options, "maxoffsetspertrigger")
        self.fail_on_data_loss = _bool(self.options, "failondataloss", True)
        _reader.consumer_kwargs(self.options)
        self._offsets: _reader.OffsetReader | None = None
        self._target: Offsets | None = None

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_offsets"] = None
        return state

    @property
    def _r(self) -> _reader.OffsetReader:
        if self._offsets is None:
            self._offsets = _reader.OffsetReader(_reader.consumer_kwargs(self.options))
        return self._offsets

    def _latest_all(self) -> Offsets:
        return self._r.latest(_topic_partitions(self._r, self.subscription))

    def initialOffset(self) -> dict:
        strategy = self.options.get("startingoffsetsbytimestampstrategy", "error").lower()
        tps = _topic_partitions(self._r, self.subscription)
        return offsets_to_json(resolve(self._r, self.start_spec, tps, bound="starting", strategy=strategy))

    def getDefaultReadLimit(self) -> ReadLimit:
        return ReadMaxRows(self.max_per_trigger) if self.max_per_trigger else ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        self._target = self._latest_all()

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        begin = offsets_from_json(start)
        latest = dict(self._target) if self._target is not None else self._latest_all()
        for tp, off in begin.items():
            if tp not in latest:
                self._data_loss(f"{tp.topic}-{tp.partition} is gone (topic deleted?)")
                latest[tp] = off  # keep tracking it so the offsets never move backwards
            elif latest[tp] < off:
                self._data_loss(f"{tp.topic}-{tp.partition}: offset went back from {off} to {latest[tp]}")
                latest[tp] = off
        if isinstance(limit, ReadMaxRows):
            latest = rate_limit(begin, latest, limit.max_rows)
        return offsets_to_json(latest)

    def reportLatestOffset(self) -> dict | None:
        return offsets_to_json(self._latest_all())

    def _data_loss(self, message: str) -> None:
        if self.fail_on_data_loss:
            raise _reader.DataLossError(message + "; set failOnDataLoss=false to continue anyway")
        log.warning("%s (failOnDataLoss=false)", message)

    def partitions(self, start: dict, end: dict) -> list[InputPartition]:
        begin = offsets_from_json(start)
        stop = offsets_from_json(end)
        begin = {tp: begin.get(tp, 0) for tp in stop}
        return _partitions(begin, stop, self.options)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        yield from _read_partition(self.options, partition, self.include_headers)

    def commit(self, end: dict) -> None:
        """Nothing to do: like Spark's Kafka source, progress lives in the checkpoint only."""

    def stop(self) -> None:
        if self._offsets is not None:
            self._offsets.close()
            self._offsets = None


# -- writers -----------------------------------------------------------------------------------

def _check_write_schema(options: Mapping[str, str], schema: StructType) -> None:
    names = {f.name.lower(): f for f in schema.fields}
    if "value" not in names:
        raise ValueError("the kbroker sink needs a 'value' column (string or binary)")
    for col in ("key", "value"):
        if col in names and names[col].dataType.typeName() not in ("string", "binary"):
            raise ValueError(f"column '{col}' must be string or binary, not {names[col].dataType.simpleString()}")
    if "topic" not in names and not options.get("topic"):
        raise ValueError("no topic: add a 'topic' column or set the 'topic' option")
    if "partition" in names and names["partition"].dataType.typeName() not in ("integer", "long", "short"):
        raise ValueError("column 'partition' must be an int")


class _Writer:
    """What both writers share: the options, checked on the driver (see :mod:`spark_jobs._writer`)."""

    def __init__(self, options: Mapping[str, str], schema: StructType) -> None:
        self.options = _lower(options)
        _check_write_schema(self.options, schema)
        self.sink = _writer.WriteOptions.from_options(self.options)
        _writer.producer_config(self.options, self.sink.exactly_once)


class KBrokerWriter(_Writer, DataSourceArrowWriter):
    """``df.write``: at-least-once, or exactly-once — one transaction per task, all committed by the job's
    commit."""

    def __init__(self, options: Mapping[str, str], schema: StructType) -> None:
        super().__init__(options, schema)
        self.prefix = _writer.batch_prefix(self.sink)

    def write(self, iterator: Iterator[pa.RecordBatch]) -> KBrokerCommitMessage:
        return _writer.write_task(self.options, iterator, prefix=self.prefix, streaming=False)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        _writer.complete(self.options, messages, commit=True)

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        _writer.complete(self.options, messages, commit=False)


class KBrokerStreamWriter(_Writer, DataSourceStreamArrowWriter):
    """``writeStream``: at-least-once (as Spark's Kafka sink), or exactly-once per micro-batch."""

    def write(self, iterator: Iterator[pa.RecordBatch]) -> KBrokerCommitMessage:
        return _writer.write_task(self.options, iterator, prefix=None, streaming=True)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """At-least-once: nothing to do (every record was acknowledged before its task finished);
        exactly-once: commit the transactions the tasks prepared."""
        _writer.complete(self.options, messages, commit=True)

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """At-least-once: records already acknowledged stay in the topic (as Spark's Kafka sink);
        exactly-once: abort the prepared transactions."""
        _writer.complete(self.options, messages, commit=False)
