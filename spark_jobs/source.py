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

from client.types import Record, TopicPartition
from spark_jobs import _reader, _share, _writer
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
DELIVERY_COUNT_DDL = "deliveryCount int"  # share-group streams only

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
_DELIVERY_COUNT = pa.field("deliveryCount", pa.int32())


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


def records_to_arrow(records: list[Record], include_headers: bool = False) -> pa.RecordBatch:
    """Records a share group delivered (client :class:`~client.types.Record` s) as a batch of the source
    schema plus ``deliveryCount``."""
    schema = (ARROW_SCHEMA_HEADERS if include_headers else ARROW_SCHEMA).append(_DELIVERY_COUNT)
    arrays = [
        pa.array([r.key for r in records], pa.binary()),
        pa.array([r.value for r in records], pa.binary()),
        pa.array([r.topic for r in records], pa.string()),
        pa.array([r.partition for r in records], pa.int32()),
        pa.array([r.offset for r in records], pa.int64()),
        pa.array([r.timestamp for r in records], pa.int64()).cast(_TIMESTAMP_MS).cast(_TIMESTAMP_US),
        pa.array([r.timestamp_type for r in records], pa.int32()),
    ]
    if include_headers:
        arrays.append(pa.array([[(k, v) for k, v in r.headers] if r.headers else None for r in records],
                               HEADER_TYPE))
    arrays.append(pa.array([r.delivery_count for r in records], pa.int32()))
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


# -- partitions --------------------------------------------------------------------------------

class KBrokerPartition(InputPartition):
    """Offsets ``[start, end)`` of one topic-partition (or a slice of it)."""

    def __init__(self, topic: str, partition: int, start: int, end: int) -> None:
        super().__init__((topic, partition, start, end))
        self.topic, self.partition, self.start, self.end = topic, partition, start, end

    def __repr__(self) -> str:
        return f"KBrokerPartition({self.topic}-{self.partition} [{self.start}, {self.end}))"


class KBrokerShareRecords(InputPartition):
    """The records of one topic-partition that a share-group micro-batch acquired (carried to the
    executors: they never talk to the share group)."""

    def __init__(self, topic: str, partition: int, records: list[Record]) -> None:
        super().__init__((topic, partition, len(records)))
        self.topic, self.partition, self.records = topic, partition, records

    def __repr__(self) -> str:
        return f"KBrokerShareRecords({self.topic}-{self.partition}, {len(self.records)} records)"


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
        options = _lower(self.options)
        return (SCHEMA_DDL + (", " + HEADERS_DDL if _include_headers(options) else "")
                + (", " + DELIVERY_COUNT_DDL if _share.is_share(options) else ""))

    def reader(self, schema: StructType) -> DataSourceReader:
        if _share.is_share(_lower(self.options)):
            raise ValueError("option 'shareGroup' is for streaming reads (spark.readStream) only: a batch "
                             "query has no commit to acknowledge the records with")
        return KBrokerBatchReader(dict(self.options))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        if _share.is_share(_lower(self.options)):
            return KBrokerShareStreamReader(dict(self.options))
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


class KBrokerShareStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """A share group read as a stream (``option("shareGroup", "G")``): each micro-batch is the records the
    query's member acquired for it, accepted when Spark commits the batch (see :mod:`spark_jobs._share`).
    Offsets are ``{"shareBatch": n}``: batch numbers, not positions in the topics."""

    def __init__(self, options: Mapping[str, str]) -> None:
        self.options = _lower(options)
        self.share = _share.share_options(self.options)
        self.include_headers = _include_headers(self.options)
        self.max_per_trigger = _positive_int(self.options, "maxoffsetspertrigger")
        self.config = {**_reader.client_config(self.options, "consumer"), "group_id": self.share.group}
        self._member: _share.ShareBatches | None = None
        self._below: Offsets | None = None

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_member"] = None
        return state

    @property
    def _m(self) -> _share.ShareBatches:
        if self._member is None:
            self._member = _share.ShareBatches(self.share.topics, self.config, self.share.poll_timeout_ms)
        return self._member

    def initialOffset(self) -> dict:
        return _share.offset(0)

    def getDefaultReadLimit(self) -> ReadLimit:
        return ReadMaxRows(self.max_per_trigger) if self.max_per_trigger else ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        """availableNow: the records already in the topics now (later ones are left to the next run)."""
        with _reader.OffsetReader(_reader.consumer_kwargs(self.options)) as r:
            self._below = r.latest(r.topic_partitions(subscribe=self.share.topics))

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        """Acquire the next batch's records; move on also when none came but a batch with records still
        waits for its commit (Spark commits a batch when it plans the next one)."""
        n = _share.batch_number(start)
        max_rows = limit.max_rows if isinstance(limit, ReadMaxRows) else None
        if self._m.acquire(n + 1, max_rows, self._below) or self._m.holding(n):
            return _share.offset(n + 1)
        return _share.offset(n)

    def reportLatestOffset(self) -> dict | None:
        return None

    def partitions(self, start: dict, end: dict) -> list[InputPartition]:
        if self._member is None:  # a batch planned by an earlier run: its records went back to the group
            return []
        by_tp: dict[tuple[str, int], list[Record]] = {}
        for r in self._member.records_between(_share.batch_number(start), _share.batch_number(end)):
            by_tp.setdefault((r.topic, r.partition), []).append(r)
        return [KBrokerShareRecords(t, p, recs) for (t, p), recs in sorted(by_tp.items())]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if isinstance(partition, KBrokerShareRecords) and partition.records:
            yield records_to_arrow(partition.records, self.include_headers)

    def commit(self, end: dict) -> None:
        """The batches up to ``end`` are committed: accept their records."""
        if self._member is not None:
            self._member.accept_through(_share.batch_number(end))

    def stop(self) -> None:
        if self._member is not None:
            self._member.close()
            self._member = None


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
