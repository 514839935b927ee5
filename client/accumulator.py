"""Per-partition record batching for the producer (pure: no I/O, the clock is passed in).

Records are appended to the open batch of their partition; a batch is *ready* when it is full
(``batch_size`` bytes, estimated), its ``linger_ms`` has passed, or a flush is in progress.  A
partition with a batch in flight yields no further batch until that one completes, which keeps
per-partition ordering (and idempotent sequence numbers) simple under retries.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any

from client.types import TopicPartition
from protocol.records import encode_batch
from protocol.timer_service import monotonic_ms

RECORD_OVERHEAD = 22
BATCH_OVERHEAD = 61


def estimate_size(key: bytes | None, value: bytes | None, headers: list[tuple[str, bytes | None]] | None) -> int:
    size = RECORD_OVERHEAD + (len(key) if key else 0) + (len(value) if value else 0)
    if headers:
        for k, v in headers:
            size += len(k) + (len(v) if v else 0) + 4
    return size


def py_complete_deliveries(futures: list[Any], records: list[Any], row_type: type, topic: str, partition: int,
                           base_offset: int, step: int, log_append_time: int) -> None:
    """Resolve each future of an acknowledged batch that is not done yet with
    ``row_type(topic, partition, offset, timestamp)``: offsets from ``base_offset`` in steps of
    ``step`` (0 when the broker gave none), the timestamp ``log_append_time`` unless it is -1, else
    the record's own.  Pure-Python twin of ``protocol._crecords.complete_deliveries``."""
    if not isinstance(row_type, type) or not issubclass(row_type, tuple):
        raise TypeError("row_type must be a tuple subclass")
    if len(records) != len(futures):
        raise ValueError(f"{len(futures)} futures for {len(records)} records")
    make = tuple.__new__  # the row without its Python-level __new__, one per record
    offset = base_offset
    for fut, rec in zip(futures, records, strict=True):
        if not fut.done():
            fut.set_result(make(row_type, (topic, partition, offset, log_append_time if log_append_time != -1
                                            else rec[3])))
        offset += step


complete_deliveries: Callable[[list[Any], list[Any], type, str, int, int, int, int], None]
try:
    from protocol._crecords import complete_deliveries  # the compiled twin (built at install time)
except ImportError:
    complete_deliveries = py_complete_deliveries


class ProducerBatch:
    __slots__ = ("attempts", "base_sequence", "created_ms", "encoded", "futures", "records", "retry_at_ms",
                 "size", "tp")

    def __init__(self, tp: TopicPartition, now_ms: float) -> None:
        self.tp = tp
        self.records: list[tuple[bytes | None, bytes | None, Any, int | None]] = []
        self.futures: list[Any] = []
        self.size = BATCH_OVERHEAD
        self.created_ms = now_ms
        self.attempts = 0
        self.retry_at_ms = 0.0
        self.base_sequence = -1
        self.encoded: bytes | None = None

    def __len__(self) -> int:
        return len(self.records)

    def encode(self, compression: int, producer_id: int, producer_epoch: int, base_sequence: int,
               transactional: bool = False) -> bytes:
        if self.encoded is None:
            self.base_sequence = base_sequence
            self.encoded = encode_batch(self.records, compression=compression, producer_id=producer_id,
                                        producer_epoch=producer_epoch, base_sequence=base_sequence,
                                        is_transactional=transactional)
        return self.encoded


class RecordAccumulator:
    def __init__(self, batch_size: int, linger_ms: int, clock: Callable[[], float] = monotonic_ms) -> None:
        #: the time a batch opens, when ``append`` is not given ``now_ms``
        self.clock = clock
        self.batch_size = batch_size
        self.linger_ms = linger_ms
        self.open: dict[TopicPartition, ProducerBatch] = {}
        self.queued: dict[TopicPartition, deque[ProducerBatch]] = {}
        self.in_flight: set[TopicPartition] = set()
        self.buffered_bytes = 0
        self.flushing = 0

    def append(self, tp: TopicPartition, key: bytes | None, value: bytes | None, headers: Any,
               timestamp_ms: int | None, future: Any, now_ms: float | None = None,
               size: int | None = None) -> tuple[bool, bool]:
        """Add a record (of ``estimate_size`` ``size``) at ``now_ms`` (default: the clock, read only
        when a batch opens); returns (closed a full batch, opened a new batch): in either case the
        sender should look again."""
        if size is None:
            size = estimate_size(key, value, headers)
        batch = self.open.get(tp)
        closed = False
        if batch is not None and batch.size + size > self.batch_size and batch.records:
            self._close(tp)
            batch = None
            closed = True
        opened = batch is None
        if opened:
            batch = self.open[tp] = ProducerBatch(tp, now_ms if now_ms is not None else self.clock())
        batch.records.append((key, value, headers, timestamp_ms))
        batch.futures.append(future)
        batch.size += size
        self.buffered_bytes += size
        if batch.size >= self.batch_size:
            self._close(tp)
            closed = True
        return closed, opened

    def _close(self, tp: TopicPartition) -> None:
        batch = self.open.pop(tp, None)
        if batch is not None:
            self.queued.setdefault(tp, deque()).append(batch)

    def requeue(self, batch: ProducerBatch, retry_at_ms: float) -> None:
        batch.retry_at_ms = retry_at_ms
        self.queued.setdefault(batch.tp, deque()).appendleft(batch)

    def complete(self, batch: ProducerBatch) -> None:
        self.in_flight.discard(batch.tp)
        self.buffered_bytes -= batch.size - BATCH_OVERHEAD

    def ready(self, now_ms: float, leader: Callable[[TopicPartition], int | None]) -> dict[int, list[ProducerBatch]]:
        """Take one sendable batch per idle partition, grouped by leader node."""
        for tp, batch in list(self.open.items()):
            if self.flushing or now_ms - batch.created_ms >= self.linger_ms:
                self._close(tp)
        out: dict[int, list[ProducerBatch]] = {}
        for tp, q in self.queued.items():
            if not q or tp in self.in_flight or q[0].retry_at_ms > now_ms:
                continue
            node = leader(tp)
            if node is None:
                continue
            batch = q.popleft()
            self.in_flight.add(tp)
            out.setdefault(node, []).append(batch)
        return out

    def next_deadline(self, sendable: Callable[[TopicPartition], bool] | None = None) -> float | None:
        """When a batch next becomes ready (``sendable``: partitions whose batches are held back, e.g.
        until a transaction has added them, are not waited for)."""
        times = [b.created_ms + self.linger_ms for b in self.open.values()]
        times += [q[0].retry_at_ms for tp, q in self.queued.items()
                  if q and tp not in self.in_flight and (sendable is None or sendable(tp))]
        return min(times) if times else None

    def has_unsent(self) -> bool:
        return bool(self.open) or any(self.queued.values())

    def expire(self, now_ms: float, timeout_ms: float) -> list[ProducerBatch]:
        """Remove and return queued batches older than ``timeout_ms``."""
        expired: list[ProducerBatch] = []
        for q in self.queued.values():
            while q and now_ms - q[0].created_ms > timeout_ms:
                batch = q.popleft()
                self.buffered_bytes -= batch.size - BATCH_OVERHEAD
                expired.append(batch)
        return expired

    def take_unsent(self) -> list[ProducerBatch]:
        """Remove and return every batch not taken for sending (open and queued ones); each is then
        :meth:`forget`-ed by the caller."""
        for tp in list(self.open):
            self._close(tp)
        out = [b for q in self.queued.values() for b in q]
        self.queued.clear()
        return out

    def forget(self, batch: ProducerBatch) -> None:
        """A batch that was never taken for sending is dropped (its partition's in-flight one, if
        any, is still in flight)."""
        self.buffered_bytes -= batch.size - BATCH_OVERHEAD

    def drain_all(self) -> list[ProducerBatch]:
        for tp in list(self.open):
            self._close(tp)
        out = [b for q in self.queued.values() for b in q]
        self.queued.clear()
        self.buffered_bytes = 0
        return out
