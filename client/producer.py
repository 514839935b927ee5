"""The asyncio Producer: partitioning, batching, the sender, retries, idempotence.

``send()`` picks a partition (explicit, the configured ``partitioner``, or
:class:`client.partitioner.DefaultPartitioner` — Java murmur2 for keys, sticky for keyless),
appends the record to :class:`client.accumulator.RecordAccumulator` and awaits delivery.
``enqueue()`` returns the delivery future without waiting.  Ready batches go out grouped by
leader, one Produce per broker: a full batch from ``enqueue`` itself, a partition's next batch
from the receive callback of the previous one's response (``Connection.request_nowait``), and
lingering, retried and flushed batches from the sender task, which sleeps until the next linger or
retry deadline.  A tight ``enqueue`` loop yields two event-loop turns per full batch, so responses
are handled while it runs.  Retriable errors requeue the batch (same encoded bytes, same sequence
numbers) after ``retry_backoff_ms`` until ``delivery_timeout_ms``.  With ``enable_idempotence`` an InitProducerId gives the producer id
and epoch, and each partition's batches carry consecutive sequence numbers.

With ``transactional_id`` the producer is transactional (:mod:`client.transactions` is its state,
:mod:`client.txn_requests` its requests): ``begin_transaction``, ``send_offsets_to_transaction``,
``commit_transaction``, ``abort_transaction``, ``transaction()``, and ``prepare_transaction`` for a
two-phase commit.  A batch waits until its partition is in the transaction (AddPartitionsToTxn, or the
Produce itself with transaction version 2); a batch that fails for good makes the transaction abortable
and fails the batches not sent yet.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from asyncio import Future
from collections.abc import AsyncIterator, Mapping, Sequence
from functools import partial
from time import time_ns
from typing import Any

from client.accumulator import (
    RECORD_OVERHEAD,
    ProducerBatch,
    RecordAccumulator,
    complete_deliveries,
    estimate_size,
)
from client.config import ProducerConfig, build_config
from client.errors import (
    IllegalStateError,
    KafkaConnectionError,
    KafkaError,
    KafkaTimeoutError,
    RecordTooLargeError,
    TransactionAbortedError,
    TransactionError,
)
from client.net import NetworkClient, partitions_for
from client.offsets import normalize_offsets
from client.partitioner import DefaultPartitioner
from client.transactions import TransactionManager, TxnState
from client.txn_requests import TV1_MAX, TransactionRequests
from client.types import (
    ConsumerGroupMetadata,
    OffsetAndMetadata,
    PreparedTransaction,
    RecordMetadata,
    TopicPartition,
)
from protocol.api import ApiKey
from protocol.error_codes import ErrorCode
from protocol.timer_service import WheelTimer

log = logging.getLogger(__name__)

Headers = Sequence[tuple[str, bytes | None]] | None
#: first retry backoff of a transaction's batch its partition leader could not add to the transaction
#: yet, doubling up to ``retry_backoff_ms`` (Kafka waits 20 ms for AddPartitionsToTxn answered
#: CONCURRENT_TRANSACTIONS)
TXN_ADD_RETRY_BACKOFF_MS = 2


class Producer:
    """``Producer(bootstrap_servers=..., **config)``; use ``async with``."""

    def __init__(self, **config: Any) -> None:
        self.config: ProducerConfig = build_config(ProducerConfig, config)
        self._net: NetworkClient | None = None
        self._timers: WheelTimer | None = None
        self._acc = RecordAccumulator(self.config.batch_size, self.config.linger_ms)
        self._partitioner = DefaultPartitioner()
        #: the sender's wake-up: a future it waits on (with its linger / retry deadline as a timer)
        self._wakeup: asyncio.Future[None] | None = None
        self._space = asyncio.Event()
        self._sender: asyncio.Task[None] | None = None
        self._inflight_tasks: set[asyncio.Task[None]] = set()
        self._node_inflight: dict[int, int] = {}
        self._producer_id = -1
        self._producer_epoch = -1
        self._sequences: dict[TopicPartition, int] = {}
        #: records enqueued and not yet acknowledged or failed; ``_idle`` is set when there are none
        self._outstanding = 0
        self._idle = asyncio.Event()
        self._loop: asyncio.AbstractEventLoop = None  # type: ignore[assignment]  # set by start()
        self._tps_metadata: Any = None
        self._tps: dict[str, list[TopicPartition]] = {}
        #: transactions (``transactional_id``): the state machine, its requests, the AddPartitionsToTxn task
        self._txn: TransactionManager | None = None
        self._txn_requests: TransactionRequests | None = None
        self._add_task: asyncio.Task[None] | None = None
        self._produce_max_version: int | None = None
        self._started = False
        self._closed = False

    async def __aenter__(self) -> Producer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def start(self) -> None:
        if self._started:
            return
        self._loop = asyncio.get_running_loop()
        self._timers = WheelTimer()
        self._acc.clock = self._timers.now_ms
        self._net = NetworkClient(self.config, self._timers, allow_auto_topic_creation=True)
        try:
            await self._net.start()
            if self.config.transactional_id is not None:
                await self._init_transactions(self.config.transactional_id)
            elif self.config.enable_idempotence:
                await self._init_producer_id()
        except BaseException:
            await self._net.close()
            self._timers.close()
            raise
        self._sender = asyncio.get_running_loop().create_task(self._run_sender())
        self._started = True

    async def close(self, timeout_s: float | None = None) -> None:
        """Send what is buffered and close; an open transaction is aborted first (a prepared one is
        left to whoever completes it)."""
        if self._closed:
            return
        if self._started and self._txn is not None and self._txn.in_transaction:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.abort_transaction(), timeout_s)
        if self._started:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.flush(), timeout_s)
        self._closed = True
        if self._sender is not None:
            self._sender.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._sender
        for batch in self._acc.drain_all():
            self._fail(batch, IllegalStateError("producer closed"))
        for t in list(self._inflight_tasks):
            t.cancel()
        if self._net is not None:
            await self._net.close()
        if self._timers is not None:
            self._timers.close()

    async def _init_producer_id(self) -> None:
        assert self._net is not None
        for _ in range(10):
            _, resp = await self._net.send_any(ApiKey.INIT_PRODUCER_ID, {"transactional_id": None,
                                                                         "transaction_timeout_ms": 60000})
            if resp.error_code == 0:
                self._producer_id, self._producer_epoch = resp.producer_id, resp.producer_epoch
                return
            if not ErrorCode.from_code(resp.error_code).retriable:
                raise KafkaError(resp.error_code, "InitProducerId")
            await asyncio.sleep(self.config.retry_backoff_ms / 1000)
        raise KafkaTimeoutError("InitProducerId did not succeed")

    # -- sending ---------------------------------------------------------------------------------

    async def send(self, topic: str, value: Any = None, key: Any = None, headers: Headers = None,
                   partition: int | None = None, timestamp_ms: int | None = None) -> RecordMetadata:
        """Send one record and wait until it is acknowledged (per ``acks``)."""
        return await await_future(await self.enqueue(topic, value, key, headers, partition, timestamp_ms))

    send_and_wait = send

    async def enqueue(self, topic: str, value: Any = None, key: Any = None, headers: Headers = None,
                      partition: int | None = None, timestamp_ms: int | None = None) -> asyncio.Future[RecordMetadata]:
        """Append a record to its batch; returns the delivery future without waiting for it."""
        net = self._net
        if self._closed or not self._started or net is None:
            raise IllegalStateError("producer is not running (use 'async with' or await start())")
        txn = self._txn
        if txn is not None:
            txn.check_send()
        cfg = self.config
        if cfg.key_serializer is not None:
            key = cfg.key_serializer(key)
        if cfg.value_serializer is not None:
            value = cfg.value_serializer(value)
        if headers:
            hdrs: list[tuple[str, bytes | None]] | None = [(k, v) for k, v in headers]
            size = estimate_size(key, value, hdrs)
        else:
            hdrs = None
            size = RECORD_OVERHEAD + (len(key) if key else 0) + (len(value) if value else 0)
        if size > cfg.max_request_size:
            raise RecordTooLargeError(f"record of ~{size} bytes exceeds max_request_size")
        acc = self._acc
        deadline = None
        if acc.buffered_bytes + size > cfg.buffer_memory:
            deadline = net.timers.now_ms() + cfg.max_block_ms
            await self._wait_for_space(size, deadline)
        tps = self._topic_partitions(topic)
        if tps is None:
            if deadline is None:
                deadline = net.timers.now_ms() + cfg.max_block_ms
            remaining = max(1, int(deadline - net.timers.now_ms()))
            await net.wait_for_partitions(topic, min(remaining, cfg.request_timeout_ms))
            tps = self._topic_partitions(topic) or []
        n = len(tps)
        if partition is None:
            if cfg.partitioner is not None:
                partition = cfg.partitioner(key, [tp.partition for tp in tps],
                                             list(net.metadata.available_partitions(topic)))
            else:
                partition = self._partitioner.partition(topic, key, n, net.metadata.available_partitions(topic))
        if not 0 <= partition < n:
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"{topic} has no partition {partition}")
        tp = tps[partition]
        if txn is not None and txn.add_partition(tp):
            self._schedule_add_partitions()
        if timestamp_ms is None:
            timestamp_ms = time_ns() // 1_000_000
        fut: asyncio.Future[RecordMetadata] = Future(loop=self._loop)
        full, first = acc.append(tp, key, value, hdrs, timestamp_ms, fut, size=size)
        self._outstanding += 1
        if full and key is None and cfg.partitioner is None:
            self._partitioner.on_new_batch(topic, partition, n, net.metadata.available_partitions(topic))
        if full:
            # Send the full batch now and let the responses that came meanwhile be handled: a caller
            # enqueueing in a loop never yields otherwise, and records would pile up to
            # buffer_memory before any is sent.  Two turns: in the first the loop polls the sockets
            # and queues their callbacks behind this task; the second lets them run (a response
            # completes its batch and writes the partition's next one) before this task goes on.
            self._send_ready()
            await asyncio.sleep(0)
            await asyncio.sleep(0)
        elif first or cfg.linger_ms == 0:
            self._kick()
        return fut

    def _topic_partitions(self, topic: str) -> list[TopicPartition] | None:
        """``TopicPartition``s of ``topic`` by partition number, from the current metadata (None if unknown)."""
        assert self._net is not None
        md = self._net.metadata
        if md is not self._tps_metadata:
            self._tps_metadata = md
            self._tps = {}
        tps = self._tps.get(topic)
        if tps is None:
            parts = partitions_for(md, topic)
            if not parts:
                return None
            tps = self._tps[topic] = [TopicPartition(topic, p) for p in range(len(parts))]
        return tps

    async def _wait_for_space(self, size: int, deadline: float) -> None:
        assert self._net is not None
        while self._acc.buffered_bytes + size > self.config.buffer_memory:
            self._space.clear()
            self._kick()
            remaining = deadline - self._net.timers.now_ms()
            try:
                await asyncio.wait_for(self._space.wait(), max(remaining, 0) / 1000)
            except TimeoutError:
                raise KafkaTimeoutError(f"buffer_memory ({self.config.buffer_memory} bytes) still full after "
                                        f"max_block_ms={self.config.max_block_ms}") from None

    async def flush(self, timeout_s: float | None = None) -> None:
        """Send everything buffered now (ignoring linger) and wait for all deliveries."""
        if not self._outstanding:
            return
        self._acc.flushing += 1
        self._kick()
        try:
            self._idle.clear()
            await asyncio.wait_for(self._idle.wait(), timeout_s)
        finally:
            self._acc.flushing -= 1

    async def partitions_for(self, topic: str) -> set[int]:
        assert self._net is not None
        return set(await self._net.wait_for_partitions(topic, self.config.request_timeout_ms))

    # -- transactions ----------------------------------------------------------------------------

    async def _init_transactions(self, transactional_id: str) -> None:
        """FindCoordinator + InitProducerId: this producer now owns the id (older producers of it are
        fenced, a transaction they left open is aborted first)."""
        assert self._net is not None
        txn = self._txn = TransactionManager(transactional_id, self.config.transaction_timeout_ms)
        self._txn_requests = TransactionRequests(self._net, self.config, txn)
        txn.begin_init()
        await self._txn_requests.init_producer_id()
        self._sync_producer()

    def _sync_producer(self) -> None:
        """Take the machine's producer id and epoch; a new epoch restarts every sequence at 0."""
        txn = self._txn
        assert txn is not None
        self._produce_max_version = None if txn.tv2 else TV1_MAX[ApiKey.PRODUCE]
        if (txn.producer_id, txn.producer_epoch) != (self._producer_id, self._producer_epoch):
            self._producer_id, self._producer_epoch = txn.producer_id, txn.producer_epoch
            self._sequences = {}

    def _transactional(self) -> tuple[TransactionManager, TransactionRequests]:
        if self._txn is None or self._txn_requests is None:
            if self.config.transactional_id is None:
                raise IllegalStateError("transactions need a transactional_id")
            raise IllegalStateError("producer is not running (use 'async with' or await start())")
        return self._txn, self._txn_requests

    def _schedule_add_partitions(self) -> None:
        if self._add_task is None or self._add_task.done():
            self._add_task = self._loop.create_task(self._add_partitions())

    async def _add_partitions(self) -> None:
        txn, requests = self._transactional()
        try:
            while txn.new and txn.state is TxnState.IN_TRANSACTION:
                await requests.add_partitions()
                self._kick()
        except Exception as exc:
            if txn.error is None:  # no coordinator within max_block_ms and the like: the batches are lost
                log.warning("AddPartitionsToTxn failed: %s", exc)
                txn.on_batch_failed(exc)
            self._abort_unsent(txn.error or exc)
        finally:
            self._kick()

    async def _partitions_added(self) -> None:
        task = self._add_task
        if task is not None and not task.done():
            await asyncio.shield(task)

    async def begin_transaction(self) -> None:
        """Start a transaction: the records sent until :meth:`commit_transaction` (or
        :meth:`abort_transaction`) become visible to ``read_committed`` consumers together, or never."""
        txn, _ = self._transactional()
        txn.begin()

    async def send_offsets_to_transaction(
            self, offsets: Mapping[TopicPartition, int | OffsetAndMetadata | tuple[int, str]],
            group_metadata: ConsumerGroupMetadata | str) -> None:
        """Commit ``offsets`` (the next offset to read per input partition) for the consumer group of
        ``group_metadata`` (``consumer.group_metadata()``; a plain group id skips the group's fencing
        of stale members) as part of the transaction: they take effect only if it commits (KIP-447)."""
        txn, requests = self._transactional()
        txn.check_offsets()
        meta = group_metadata if isinstance(group_metadata, ConsumerGroupMetadata) \
            else ConsumerGroupMetadata(str(group_metadata))
        await requests.send_offsets(normalize_offsets(offsets), meta)

    async def commit_transaction(self) -> None:
        """Send what is buffered, wait until every record of the transaction is acknowledged, then
        commit it.  Raises :class:`~client.errors.AbortableTransactionError` when a record or the offsets
        could not be written (call :meth:`abort_transaction`), :class:`~client.errors.ProducerFencedError`
        (fatal) when a newer producer owns the transactional id, and
        :class:`~client.errors.RetriableTransactionError` when the coordinator did not answer within
        ``max_block_ms`` (call it again)."""
        txn, requests = self._transactional()
        if txn.state is not TxnState.COMMITTING:
            txn.check_ending()
            await self.flush()
            await self._partitions_added()
        if txn.begin_commit():
            await requests.end_txn(True)
        self._sync_producer()

    async def abort_transaction(self) -> None:
        """Drop the transaction: records not sent yet fail with
        :class:`~client.errors.TransactionAbortedError`, the ones written are never shown to
        ``read_committed`` consumers, offsets sent to it are not committed."""
        txn, requests = self._transactional()
        if not txn.needs_epoch_bump:  # else an earlier abort ended the transaction; its epoch bump timed out
            with contextlib.suppress(Exception):
                await self._partitions_added()  # an AddPartitionsToTxn in flight decides whether EndTxn is due
            if txn.begin_abort():
                self._abort_unsent(TransactionAbortedError("abort_transaction() was called"))
                await self.flush()  # what is in flight completes before the abort is decided
                await self._partitions_added()
                await requests.end_txn(False)
            else:
                self._abort_unsent(TransactionAbortedError("abort_transaction() was called"))
        if txn.needs_epoch_bump:  # transaction version 1: a new epoch (KIP-360) after an abortable error
            await requests.init_producer_id()
        self._sync_producer()

    async def prepare_transaction(self) -> PreparedTransaction:
        """Send what is buffered and wait until every record is acknowledged, without ending the
        transaction (the first phase of a two-phase commit, as KIP-939's ``prepareTransaction``).  The
        returned :class:`~client.types.PreparedTransaction` lets another process commit or abort it
        (``client.txn_requests.complete_prepared``) before ``transaction_timeout_ms`` aborts it; this
        producer may still :meth:`commit_transaction` / :meth:`abort_transaction` it, and ``close()``
        leaves it open."""
        txn, _ = self._transactional()
        txn.check_ending()
        await self.flush()
        await self._partitions_added()
        txn.prepare()
        return PreparedTransaction(txn.transactional_id, txn.producer_id, txn.producer_epoch, 2 if txn.tv2 else 1)

    @contextlib.asynccontextmanager
    async def transaction(self) -> AsyncIterator[Producer]:
        """``async with producer.transaction():`` — begin; commit when the block ends, abort when it
        raises (the exception propagates).  A commit that fails with an abortable error is aborted and
        the error raised; one whose answer is late (retriable) is asked again, three times in all."""
        await self.begin_transaction()
        try:
            yield self
        except BaseException:
            txn = self._txn
            if txn is not None and txn.state is not TxnState.FATAL_ERROR and not self._closed:
                with contextlib.suppress(KafkaError):
                    await self.abort_transaction()
            raise
        for attempt in range(3):
            try:
                await self.commit_transaction()
                return
            except TransactionError as exc:
                if exc.abortable:
                    await self.abort_transaction()
                if not exc.retriable or attempt == 2:
                    raise

    # -- sender ----------------------------------------------------------------------------------

    def _leader(self, tp: TopicPartition) -> int | None:
        assert self._net is not None
        if self._txn is not None and not self._txn.sendable(tp):
            return None  # waits until AddPartitionsToTxn added the partition
        leader = self._net.metadata.leader_for(tp.topic, tp.partition)
        if leader is None:
            self._net.request_metadata_update()
        return leader

    def _kick(self) -> None:
        """Wake the sender (a new batch to time, a flush, a retry, a request done)."""
        w = self._wakeup
        if w is not None and not w.done():
            w.set_result(None)

    def _send_ready(self) -> None:
        """Fail expired batches and start a Produce per leader for every batch that can go now.

        Called by the sender, by ``enqueue`` when a batch fills and when a request completes, so
        the next batch of a partition leaves without waiting for the sender task's turn."""
        net = self._net
        assert net is not None
        now = net.timers.now_ms()
        for batch in self._acc.expire(now, self.config.delivery_timeout_ms):
            self._fail(batch, KafkaTimeoutError(f"batch for {batch.tp} expired before it was sent"))
        ready = self._acc.ready(now, self._leader)
        if ready:
            max_inflight = self.config.max_in_flight_requests_per_connection
            for node, batches in ready.items():
                if self._node_inflight.get(node, 0) >= max_inflight:
                    for b in batches:
                        self._acc.in_flight.discard(b.tp)
                        self._acc.requeue(b, 0)
                    continue
                self._node_inflight[node] = self._node_inflight.get(node, 0) + 1
                self._start_produce(node, batches)
        if self._acc.buffered_bytes < self.config.buffer_memory:
            self._space.set()

    async def _run_sender(self) -> None:
        net = self._net
        assert net is not None
        loop = self._loop
        while True:
            self._send_ready()
            deadline = self._acc.next_deadline(None if self._txn is None else self._txn.sendable)
            timeout = None if deadline is None else max(0.0, (deadline - net.timers.now_ms()) / 1000)
            if self._acc.flushing and self._acc.has_unsent():
                timeout = min(timeout or 0.005, 0.005)
            self._wakeup = wakeup = loop.create_future()
            timer = None if timeout is None else loop.call_later(timeout, self._kick)
            try:
                await wakeup
            finally:
                self._wakeup = None
                if timer is not None:
                    timer.cancel()

    def _start_produce(self, node: int, batches: list[ProducerBatch]) -> None:
        """Send one Produce of ``batches`` to ``node``: written at once when the connection is open
        and writable (the response is handled in its receive callback), else by a task that
        connects or waits for the connection to drain first."""
        net = self._net
        assert net is not None
        acks = self.config.acks
        try:
            body = self._produce_body(batches)
        except Exception as exc:
            self._produced(node, batches, None, exc)
            return
        conn = net.ready_connection(node)
        if conn is None:
            task = self._loop.create_task(self._produce_later(node, batches, body))
            self._inflight_tasks.add(task)
            task.add_done_callback(self._inflight_tasks.discard)
            return
        try:
            version = conn.version(ApiKey.PRODUCE)
            if self._produce_max_version is not None:
                version = min(version, self._produce_max_version)
            conn.request_nowait(ApiKey.PRODUCE, body, partial(self._produced, node, batches) if acks else None,
                                version=version)
        except Exception as exc:
            self._produced(node, batches, None, exc)
            return
        if not acks:
            self._produced(node, batches, None, None)

    async def _produce_later(self, node: int, batches: list[ProducerBatch], body: dict[str, Any]) -> None:
        net = self._net
        assert net is not None
        acks = self.config.acks
        try:
            resp = await net.send(node, ApiKey.PRODUCE, body, expect_response=acks != 0,
                                  max_version=self._produce_max_version)
        except asyncio.CancelledError:  # the producer is closing
            self._produced(node, batches, None, IllegalStateError("producer closed"))
            raise
        except Exception as exc:
            self._produced(node, batches, None, exc)
            return
        self._produced(node, batches, resp if acks else None, None)

    def _produce_body(self, batches: list[ProducerBatch]) -> dict[str, Any]:
        cfg = self.config
        txn = self._txn
        topic_data: dict[str, list[dict[str, Any]]] = {}
        for b in batches:
            seq = -1
            if self._producer_id >= 0:
                if b.encoded is None:
                    seq = self._sequences.get(b.tp, 0)
                    self._sequences[b.tp] = (seq + len(b)) & 0x7FFFFFFF
                else:
                    seq = b.base_sequence
            data = b.encode(cfg.compression, self._producer_id, self._producer_epoch, seq, txn is not None)
            topic_data.setdefault(b.tp.topic, []).append({"index": b.tp.partition, "records": data})
            b.attempts += 1
        if txn is not None:
            txn.on_batch_sent()
        return {"transactional_id": cfg.transactional_id, "acks": cfg.acks, "timeout_ms": cfg.request_timeout_ms,
                "topic_data": [{"name": t, "partition_data": pd} for t, pd in topic_data.items()]}

    def _produced(self, node: int, batches: list[ProducerBatch], resp: Any, exc: BaseException | None) -> None:
        """A Produce's outcome (``resp`` None with acks=0); then the next ready batches go."""
        net = self._net
        assert net is not None
        try:
            if exc is not None:
                if isinstance(exc, (KafkaConnectionError, KafkaTimeoutError)):
                    for b in batches:
                        self._retry_or_fail(b, exc)
                    net.request_metadata_update()
                elif isinstance(exc, KafkaError):
                    for b in batches:
                        self._fail(b, exc)
                else:
                    log.error("produce to node %s failed: %r", node, exc)
                    for b in batches:
                        self._fail(b, KafkaError(ErrorCode.UNKNOWN_SERVER_ERROR, str(exc)))
            elif resp is None:
                for b in batches:
                    self._succeed(b, -1, -1)
            else:
                results = {(t.name, p.index): p for t in resp.responses for p in t.partition_responses}
                for b in batches:
                    p = results.get(b.tp)
                    if p is None:
                        self._retry_or_fail(b, KafkaError(ErrorCode.UNKNOWN_SERVER_ERROR, "no partition response"))
                    elif p.error_code == 0 or p.error_code == ErrorCode.DUPLICATE_SEQUENCE_NUMBER:
                        self._succeed(b, p.base_offset, p.log_append_time_ms)
                    else:
                        err = KafkaError(p.error_code, p.error_message)
                        if err.retriable:
                            net.request_metadata_update()
                            self._retry_or_fail(b, err)
                        else:
                            self._fail(b, err)
        except Exception as exc:
            log.exception("handling the produce response of node %s failed", node)
            for b in batches:
                if any(not f.done() for f in b.futures):
                    self._fail(b, KafkaError(ErrorCode.UNKNOWN_SERVER_ERROR, str(exc)))
        finally:
            self._node_inflight[node] -= 1
            if not self._closed:
                try:
                    self._send_ready()
                except Exception:
                    log.exception("sending the next batches failed")
            self._kick()

    def _retry_or_fail(self, batch: ProducerBatch, exc: KafkaError) -> None:
        assert self._net is not None
        now = self._net.timers.now_ms()
        if (self._closed or batch.attempts > self.config.retries
                or now - batch.created_ms > self.config.delivery_timeout_ms):
            self._fail(batch, exc)
            return
        backoff = self.config.retry_backoff_ms
        if self._txn is not None and exc.code in (ErrorCode.CONCURRENT_TRANSACTIONS, ErrorCode.NOT_ENOUGH_REPLICAS):
            # the partition's leader could not add it to the transaction yet (KIP-890: the previous
            # transaction's markers are still being written); that clears in milliseconds
            backoff = min(backoff, TXN_ADD_RETRY_BACKOFF_MS << min(max(batch.attempts - 1, 0), 8))
        self._acc.in_flight.discard(batch.tp)
        self._acc.requeue(batch, now + backoff)

    def _succeed(self, batch: ProducerBatch, base_offset: int, log_append_time: int) -> None:
        self._acc.complete(batch)
        topic, partition = batch.tp
        known = base_offset >= 0  # acks=0 gives no offsets: -1 for every record
        complete_deliveries(batch.futures, batch.records, RecordMetadata, topic, partition,
                            base_offset if known else -1, 1 if known else 0, log_append_time)
        self._completed(len(batch))

    def _fail(self, batch: ProducerBatch, exc: BaseException, *, sent: bool = True) -> None:
        """Fail ``batch``'s deliveries with ``exc`` (``sent``: it was taken for sending, so its partition
        may take the next batch).  A failed batch of a transaction makes the transaction abortable (or
        the producer fenced): the batches not sent yet fail with it."""
        if sent:
            self._acc.complete(batch)
        else:
            self._acc.forget(batch)
        for fut in batch.futures:
            if not fut.done():
                fut.set_exception(exc)
                fut.exception()
        self._completed(len(batch))
        txn = self._txn
        if txn is not None and not isinstance(exc, TransactionAbortedError):
            had_error = txn.error
            txn.on_batch_failed(exc)
            if txn.error is not None and txn.error is not had_error:
                self._abort_unsent(txn.error)

    def _abort_unsent(self, cause: BaseException) -> None:
        """Fail every batch not handed to a Produce yet (the transaction cannot commit them)."""
        for batch in self._acc.take_unsent():
            exc = TransactionAbortedError(f"the transaction is aborted ({cause}); the record was not sent")
            exc.__cause__ = cause
            self._fail(batch, exc, sent=False)

    def _completed(self, records: int) -> None:
        self._outstanding -= records
        if self._outstanding <= 0:
            self._outstanding = 0
            self._idle.set()


async def await_future(fut: asyncio.Future[RecordMetadata]) -> RecordMetadata:
    return await fut
