"""The ``kbroker`` sink's writing: at-least-once, or exactly-once with Kafka transactions.

``deliveryGuarantee=at-least-once`` (the default, as Spark's Kafka sink): each task sends its rows with a
plain producer and waits for every acknowledgement; a retried task or a replayed micro-batch writes its
rows again.

``deliveryGuarantee=exactly-once`` is a two-phase commit, as Flink's ``TwoPhaseCommitSinkFunction`` /
``KafkaSink`` and Kafka Streams' EOS-v2 do it:

1. **Prepare (executor, per task).**  Task ``p`` owns the transactional id ``<prefix>-<p>``.  Starting its
   producer (InitProducerId) fences every earlier producer of that id — a failed attempt of the task, a
   speculative copy, the same task of a run that crashed — and aborts what it left open.  The task writes
   its rows in one transaction and flushes them (``Producer.prepare_transaction``); it does not commit.  In
   a stream the same transaction also commits, as consumer-group offsets, a **marker** in group
   ``<prefix>-<p>``: offset ``batchId + 1`` (metadata: the query id) on partition 0 of the first topic the
   task wrote.  The task reports the transaction (id, producer id, epoch) in its commit message.
2. **Commit (driver).**  Spark calls the writer's ``commit`` once every task of the micro-batch (or of the
   batch job) succeeded; it ends each reported transaction with an EndTxn commit
   (``client.txn_requests.complete_prepared``), so the records become visible to ``read_committed``
   readers.  ``abort`` (a task failed) ends them with an abort.
3. **Replay.**  Spark writes a micro-batch's offsets before running it and its commit log entry after the
   sink's ``commit``; a driver that dies in between replays the batch after the restart, planning it the
   same way (same offsets from the checkpoint, same tasks).  Each replayed task fences its id (aborting a
   transaction left prepared), writes, then reads its marker: when the marker says this query already
   committed this batch (``offset >= batchId + 1``, same query id), its transaction was committed before
   the crash — the task aborts its new transaction and reports nothing to commit.  Otherwise it prepares
   as in 1.  So each micro-batch's rows reach the topic's committed records exactly once.

Batch writes (``df.write``) use steps 1 and 2 without markers: one transaction per task, all committed
by the job's ``commit``.  Spark's Python data source API gives the driver one ``commit`` call after every
task succeeded, so a job's records become visible together — except when the driver dies *during* that
call, after some EndTxn commits: then those tasks' records are visible and the others are aborted by the
transaction timeout (a batch job has no replay to finish it).

The prefix defaults to ``kbroker-spark-<query id>`` in a stream (the query id is kept in the checkpoint,
so a restart fences its previous run) and to ``kbroker-spark-<random>`` per batch write; set
``transactionalIdPrefix`` to share ids across queries knowingly.  Prepared transactions must be committed
within ``kafka.transaction.timeout.ms`` (default here 300000, at most the broker's
``transaction.max.timeout.ms``), else the broker aborts them and the commit fails the query, whose
restart replays the batch.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import pyarrow as pa
from pyspark.sql.datasource import WriterCommitMessage

from client.config import ProducerConfig, build_config
from client.coordinator import find_coordinator
from client.errors import KafkaError
from client.net import NetworkClient
from client.offsets import fetch_committed
from client.types import OffsetAndMetadata, PreparedTransaction, TopicPartition
from protocol.error_codes import ErrorCode
from protocol.timer_service import WheelTimer
from spark_jobs import _reader
from spark_jobs.options import _bool

log = logging.getLogger(__name__)

T = TypeVar("T")

GUARANTEES = ("at-least-once", "exactly-once")
#: prepared transactions wait for the driver's commit: longer than a producer's default 60 s
SINK_TRANSACTION_TIMEOUT_MS = 300_000
_WRITABLE = {"key", "value", "topic", "partition", "headers", "timestamp"}
BATCH_ID_PROPERTY = "streaming.sql.batchId"
QUERY_ID_PROPERTY = "sql.streaming.queryId"


@dataclass
class KBrokerCommitMessage(WriterCommitMessage):
    records: int
    #: exactly-once: the task's prepared transaction (None: nothing to commit)
    prepared: PreparedTransaction | None = None
    #: exactly-once replay: the task found its records of this micro-batch committed already
    already_committed: bool = False


@dataclass(frozen=True)
class WriteOptions:
    """The sink's own options: ``deliveryGuarantee`` and ``transactionalIdPrefix``."""

    exactly_once: bool
    prefix: str | None

    @classmethod
    def from_options(cls, options: Mapping[str, str]) -> WriteOptions:
        guarantee = options.get("deliveryguarantee", "at-least-once").strip().lower()
        if guarantee not in GUARANTEES:
            raise ValueError(f"deliveryGuarantee must be one of {', '.join(GUARANTEES)}, not {guarantee!r}")
        prefix = options.get("transactionalidprefix")
        if prefix is not None and not prefix.strip():
            raise ValueError("transactionalIdPrefix must not be empty")
        return cls(guarantee == "exactly-once", prefix)


def producer_config(options: Mapping[str, str], exactly_once: bool) -> dict[str, Any]:
    cfg = _reader.client_config(options, "producer")
    if "transactional_id" in cfg:
        raise ValueError("kafka.transactional.id cannot be set: the sink makes one transactional id per task "
                         "(deliveryGuarantee=exactly-once, transactionalIdPrefix)")
    if exactly_once:
        cfg.setdefault("transaction_timeout_ms", SINK_TRANSACTION_TIMEOUT_MS)
        cfg.setdefault("acks", -1)
    return cfg


def batch_prefix(options: WriteOptions) -> str | None:
    """A batch write's prefix, fixed on the driver (shipped to the tasks with the writer)."""
    if not options.exactly_once:
        return None
    return options.prefix or f"kbroker-spark-{uuid.uuid4().hex}"


# -- executor side -----------------------------------------------------------------------------


def write_task(options: Mapping[str, str], batches: Iterator[pa.RecordBatch], *, prefix: str | None,
               streaming: bool) -> KBrokerCommitMessage:
    """One task's rows into the topic(s), as the options' ``deliveryGuarantee`` says."""
    sink = WriteOptions.from_options(options)
    cfg = producer_config(options, sink.exactly_once)
    topic_opt = options.get("topic")
    headers = _bool(options, "includeheaders", True)
    if not sink.exactly_once:
        return KBrokerCommitMessage(asyncio.run(_produce_plain(cfg, topic_opt, batches, headers)))
    from pyspark import TaskContext

    ctx = TaskContext.get()
    if ctx is None:
        raise RuntimeError("deliveryGuarantee=exactly-once writes run in Spark tasks only")
    batch: tuple[int, str] | None = None
    if streaming:
        batch_id, query_id = ctx.getLocalProperty(BATCH_ID_PROPERTY), ctx.getLocalProperty(QUERY_ID_PROPERTY)
        if batch_id is None or query_id is None:
            raise RuntimeError("exactly-once stream writes need Spark's micro-batch id and query id "
                               f"(local properties {BATCH_ID_PROPERTY}, {QUERY_ID_PROPERTY})")
        batch = (int(batch_id), query_id)
        prefix = sink.prefix or f"kbroker-spark-{query_id}"
    if prefix is None:
        raise RuntimeError("no transactionalIdPrefix for an exactly-once write")
    txn_id = f"{prefix}-{ctx.partitionId()}"
    return asyncio.run(_produce_transaction(cfg, txn_id, topic_opt, batches, headers, batch))


async def _produce_plain(cfg: dict[str, Any], topic_opt: str | None, batches: Iterator[pa.RecordBatch],
                         with_headers: bool) -> int:
    from client.producer import Producer

    async with Producer(**cfg) as producer:
        count, _ = await _send_rows(producer, topic_opt, batches, with_headers)
    return count


async def _produce_transaction(cfg: dict[str, Any], txn_id: str, topic_opt: str | None,
                               batches: Iterator[pa.RecordBatch], with_headers: bool,
                               batch: tuple[int, str] | None) -> KBrokerCommitMessage:
    """Phase 1 of the commit: fence the id, write the rows (and the marker) in a transaction, prepare it."""
    from client.producer import Producer

    async with Producer(transactional_id=txn_id, **cfg) as producer:  # InitProducerId fences the id
        await producer.begin_transaction()
        count, topics = await _send_rows(producer, topic_opt, batches, with_headers)
        if not topics:
            await producer.abort_transaction()
            return KBrokerCommitMessage(0)
        if batch is not None:
            batch_id, query_id = batch
            marker = TopicPartition(min(topics), 0)
            if await _marker_reached(cfg, txn_id, marker, batch_id, query_id):
                log.info("%s: micro-batch %d of query %s is committed already; its replay writes nothing",
                         txn_id, batch_id, query_id)
                await producer.abort_transaction()
                return KBrokerCommitMessage(0, already_committed=True)
            await producer.send_offsets_to_transaction({marker: OffsetAndMetadata(batch_id + 1, query_id)}, txn_id)
        prepared = await producer.prepare_transaction()
    return KBrokerCommitMessage(count, prepared)


async def _marker_reached(cfg: dict[str, Any], group: str, marker: TopicPartition, batch_id: int,
                          query_id: str) -> bool:
    async def read(net: NetworkClient, _config: ProducerConfig) -> OffsetAndMetadata | None:
        for _ in range(100):
            node = await find_coordinator(net, group)
            try:
                return (await fetch_committed(net, node, group, [marker], require_stable=True)).get(marker)
            except KafkaError as exc:
                if not exc.retriable and exc.code not in (ErrorCode.NOT_COORDINATOR,
                                                          ErrorCode.COORDINATOR_NOT_AVAILABLE):
                    raise
            await asyncio.sleep(0.1)
        raise KafkaError(ErrorCode.UNSTABLE_OFFSET_COMMIT, f"the sink's marker of {group} stayed undecided")

    committed = await _with_network(cfg, read)
    return committed is not None and committed.metadata == query_id and committed.offset >= batch_id + 1


async def _send_rows(producer: Any, topic_opt: str | None, batches: Iterator[pa.RecordBatch],
                     with_headers: bool) -> tuple[int, set[str]]:
    """Enqueue every row; wait for every delivery (failures raise).  Returns (rows, topics written)."""
    count = 0
    topics: set[str] = set()
    futures: list[asyncio.Future[Any]] = []
    for batch in batches:
        cols = {name.lower(): batch.column(i).to_pylist() for i, name in enumerate(batch.schema.names)
                if name.lower() in _WRITABLE}
        n = batch.num_rows
        values = cols["value"]
        keys = cols.get("key") or [None] * n
        row_topics = [topic_opt] * n if topic_opt else cols["topic"]
        parts = cols.get("partition") or [None] * n
        headers = cols.get("headers") if with_headers else None
        stamps = cols.get("timestamp")
        for i in range(n):
            topic = row_topics[i]
            if topic is None:
                raise ValueError("null topic in a row and no 'topic' option")
            hdrs = None
            if headers is not None and headers[i]:
                hdrs = [(h["key"], _as_bytes(h["value"])) for h in headers[i]]
            ts = stamps[i] if stamps is not None else None
            ts_ms = None if ts is None else _timestamp_ms(ts)
            futures.append(await producer.enqueue(topic, _as_bytes(values[i]), _as_bytes(keys[i]), hdrs,
                                                  parts[i], ts_ms))
            topics.add(topic)
        count += n
        if len(futures) > 50_000:
            await asyncio.gather(*futures)
            futures.clear()
    await producer.flush()
    await asyncio.gather(*futures)
    return count, topics


def _as_bytes(v: Any) -> bytes | None:
    if v is None or isinstance(v, bytes):
        return v
    if isinstance(v, str):
        return v.encode()
    return bytes(v)


def _timestamp_ms(ts: Any) -> int:
    if isinstance(ts, int | float):
        return int(ts * 1000)  # a double column means seconds, as in Spark
    return int(ts.timestamp() * 1000)


# -- driver side -------------------------------------------------------------------------------


def complete(options: Mapping[str, str], messages: list[WriterCommitMessage | None], commit: bool) -> None:
    """Phase 2: commit (or abort) every transaction the tasks prepared."""
    prepared = [m.prepared for m in messages if isinstance(m, KBrokerCommitMessage) and m.prepared is not None]
    if not prepared:
        return
    from client.txn_requests import complete_prepared

    cfg = producer_config(options, True)

    async def end(net: NetworkClient, config: ProducerConfig) -> None:
        results = await asyncio.gather(*(complete_prepared(net, config, p, commit) for p in prepared),
                                       return_exceptions=True)
        errors = [(p.transactional_id, r) for p, r in zip(prepared, results, strict=True)
                  if isinstance(r, BaseException)]
        if errors and commit:
            raise RuntimeError(f"could not commit {len(errors)} of {len(prepared)} prepared transactions "
                               f"(the query's restart replays the batch): {errors[:3]}")
        for tid, exc in errors:
            log.warning("aborting the prepared transaction of %s failed: %s", tid, exc)

    asyncio.run(_with_network(cfg, end))


async def _with_network(cfg: dict[str, Any], fn: Callable[[NetworkClient, ProducerConfig], Awaitable[T]]) -> T:
    config = build_config(ProducerConfig, dict(cfg))
    timers = WheelTimer()
    net = NetworkClient(config, timers)
    try:
        await net.start()
        return await fn(net, config)
    finally:
        await net.close()
        timers.close()
