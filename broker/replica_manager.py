"""ReplicaManager: Produce, Fetch, ListOffsets and DeleteRecords against the partition logs.

Record batches stay opaque bytes: Produce validates the request shape (one
v2 batch per partition), refuses ``acks=all`` when the topic's
``min.insync.replicas`` exceeds the in-sync replica set, recompresses the
batch only when the topic's ``compression.type`` names another codec
(:mod:`broker.log.recompress`), and hands it to the partition log, which
checks the header and CRC, stamps offsets and appends.  Fetch answers with
file regions of the segment files, which the server sends with
``sendfile``.  A Fetch that cannot be satisfied yet is parked in the fetch
purgatory (on the shared timing wheel) and completed by the next append to
one of its partitions or by its ``max_wait_ms``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Hashable, Iterable
from typing import TYPE_CHECKING, Any

from broker.internal_topics import is_internal_topic
from broker.log.errors import LogError, OffsetOutOfRangeError, UnknownTopicOrPartitionError
from broker.log.recompress import recompress_for_topic
from broker.purgatory import DelayedOperation, DelayedOperationPurgatory
from broker.server import FileRegion, release_parts
from protocol.error_codes import ErrorCode
from protocol.primitives import Obj
from protocol.records import ZSTD, CorruptRecordError, parse_batch_header

if TYPE_CHECKING:
    from broker.apis import RequestContext
    from broker.core import BrokerCore
    from broker.log.partition_log import PartitionLog, ReadResult

log = logging.getLogger("kbroker.replica")

E = ErrorCode
LATEST, EARLIEST, MAX_TIMESTAMP, EARLIEST_LOCAL, LATEST_TIERED = -1, -2, -3, -4, -5


def _records_region(result: ReadResult, on_sent: Callable[[int], None]) -> FileRegion | None:
    """The read's file slices as a region that keeps their files open until it is released."""
    if not result.slices:
        return None
    return FileRegion([(s.handle, s.position, s.length) for s in result.slices], on_sent)


class _FetchPartition:
    __slots__ = ("fetch_offset", "max_bytes", "name", "partition", "topic_id", "topic_index")

    def __init__(self, name: str | None, topic_id: Any, partition: int, fetch_offset: int, max_bytes: int,
                 topic_index: int) -> None:
        self.name = name
        self.topic_id = topic_id
        self.partition = partition
        self.fetch_offset = fetch_offset
        self.max_bytes = max_bytes
        self.topic_index = topic_index


class DelayedFetch(DelayedOperation):
    """A long-poll Fetch waiting for ``min_bytes`` or ``max_wait_ms``."""

    def __init__(self, manager: ReplicaManager, version: int, request: Obj, parts: list[_FetchPartition],
                 min_bytes: int, max_wait_ms: int) -> None:
        super().__init__(max_wait_ms)
        self.manager = manager
        self.version = version
        self.request = request
        self.parts = parts
        self.min_bytes = min_bytes
        self.future: asyncio.Future[Obj] = asyncio.get_running_loop().create_future()
        # the connection went away (its request task was cancelled): leave the purgatory now
        self.future.add_done_callback(lambda f: f.cancelled() and self.force_complete())

    def try_complete(self) -> bool:
        if self.manager.available_bytes(self.parts, self.request) >= self.min_bytes:
            return self.force_complete()
        return False

    def on_complete(self) -> None:
        if self.future.done():
            return
        try:
            body, _ = self.manager.read_fetch(self.version, self.request, self.parts)
        except Exception as exc:  # surfaced to the connection, which closes
            self.future.set_exception(exc)
            return
        self.future.set_result(body)


class ReplicaManager:
    def __init__(self, core: BrokerCore) -> None:
        self.core = core
        self.config = core.config
        self.metrics = core.metrics
        timer = core.timer
        self.fetch_purgatory = DelayedOperationPurgatory(
            "fetch", schedule=timer.call_at_ms, clock=lambda: int(timer.now_ms()),
            purge_interval=self.config.fetch_purgatory_purge_interval_requests)

    # -- produce -------------------------------------------------------------------------

    def handle_produce(self, ctx: RequestContext, req: Obj) -> Obj | None:
        version = ctx.version
        acks = req.acks
        responses = []
        any_error = False
        for topic in req.topic_data:
            parts = []
            for pd in topic.partition_data:
                if acks not in (0, 1, -1):
                    entry = self._produce_error(pd.index, E.INVALID_REQUIRED_ACKS)
                elif req.transactional_id is not None:
                    entry = self._produce_error(pd.index, E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
                elif is_internal_topic(topic.name):
                    # only the coordinators write their topics: a forged record would be replayed at startup
                    entry = self._produce_error(pd.index, E.INVALID_TOPIC_EXCEPTION,
                                                f"Cannot append to internal topic {topic.name}")
                else:
                    entry = self._append_partition(topic.name, pd.index, pd.records, version, acks)
                any_error = any_error or entry["error_code"] != 0
                parts.append(entry)
            responses.append({"name": topic.name, "partition_responses": parts})
        if acks == 0:
            if any_error:
                ctx.conn.close_after_flush()
            return None
        return Obj(responses=responses, throttle_time_ms=0)

    @staticmethod
    def _produce_error(index: int, code: int, message: str | None = None) -> dict[str, Any]:
        return {"index": index, "error_code": code, "base_offset": -1, "log_append_time_ms": -1,
                "log_start_offset": -1, "record_errors": [], "error_message": message}

    def in_sync_replica_count(self, topic: str, partition: int) -> int:
        """The size of the partition's in-sync replica set: a single broker is its only replica."""
        return 1

    def _append_partition(self, topic: str, partition: int, records: bytes | None, version: int,
                          acks: int = 1) -> dict[str, Any]:
        if not records:
            return self._produce_error(partition, E.INVALID_RECORD, "empty record set")
        try:
            header = parse_batch_header(records, 0)
        except CorruptRecordError as exc:
            return self._produce_error(partition, E.CORRUPT_MESSAGE, str(exc))
        if header.size != len(records):
            return self._produce_error(partition, E.INVALID_RECORD, "a produce request must hold exactly one batch")
        if header.compression == ZSTD and version < 7:
            return self._produce_error(partition, E.UNSUPPORTED_COMPRESSION_TYPE)
        try:
            plog = self.core.logs.get_log(topic, partition)
        except LogError as exc:
            return self._produce_error(partition, exc.error_code, str(exc))
        min_isr = plog.config.min_insync_replicas
        if acks == -1 and min_isr > (isr := self.in_sync_replica_count(topic, partition)):
            # Kafka's Partition.appendRecordsToLeader: nothing is appended
            return self._produce_error(partition, E.NOT_ENOUGH_REPLICAS,
                                       f"The size of the current ISR {isr} is insufficient to satisfy the "
                                       f"min.isr requirement of {min_isr} for partition {topic}-{partition}")
        try:
            batch = recompress_for_topic(records, header, plog.config.compression_type,
                                         max_decompressed_size=self.config.message_max_decompressed_bytes)
            result = plog.append(bytearray(batch))
        except LogError as exc:
            return self._produce_error(partition, exc.error_code, exc.detail or None)
        self.metrics.bytes_in(topic, len(records), header.records_count)
        self.fetch_purgatory.check_and_complete((topic, partition))
        return {"index": partition, "error_code": 0, "base_offset": result.base_offset,
                "log_append_time_ms": result.log_append_time, "log_start_offset": result.log_start_offset,
                "record_errors": [], "error_message": None}

    def on_internal_append(self, topic: str, partition: int) -> None:
        self.fetch_purgatory.check_and_complete((topic, partition))

    def partitions_removed(self, keys: Iterable[Hashable]) -> None:
        """Partitions went away (topic deleted): answer the fetches parked on them at once
        (they now see the error) and drop their watch lists."""
        purgatory = self.fetch_purgatory
        for key in keys:
            purgatory.check_and_complete(key)
            purgatory.cancel_for_key(key)

    # -- fetch ---------------------------------------------------------------------------

    def handle_fetch(self, ctx: RequestContext, req: Obj) -> Obj | asyncio.Future[Obj]:
        version = ctx.version
        if version >= 7 and (req.session_id != 0 or req.session_epoch > 0):
            return Obj(throttle_time_ms=0, error_code=E.FETCH_SESSION_ID_NOT_FOUND, session_id=0, responses=[])
        logs = self.core.logs
        parts: list[_FetchPartition] = []
        for index, topic in enumerate(req.topics):
            name = topic.topic if version < 13 else logs.topic_name_for_id(topic.topic_id)
            for p in topic.partitions:
                parts.append(_FetchPartition(name, topic.get("topic_id"), p.partition, p.fetch_offset,
                                             p.partition_max_bytes, index))
        body, ready = self.read_fetch(version, req, parts)
        min_bytes = max(1, min(req.min_bytes, req.max_bytes))
        if ready or req.max_wait_ms <= 0 or not parts or self._fetched_bytes(body) >= min_bytes:
            return body
        self._release_records(body)  # not sent: the fetch is answered by a fresh read later
        op = DelayedFetch(self, version, req, parts, min_bytes, min(req.max_wait_ms, 300_000))
        keys = [(p.name, p.partition) for p in parts if p.name is not None]
        self.metrics.waiting_fetches.inc()
        op.future.add_done_callback(lambda _f: self.metrics.waiting_fetches.dec())
        self.fetch_purgatory.try_complete_else_watch(op, keys)
        return op.future

    @staticmethod
    def _release_records(body: Obj) -> None:
        for t in body["responses"]:
            release_parts([p["records"] for p in t["partitions"]])

    @staticmethod
    def _fetched_bytes(body: Obj) -> int:
        total = 0
        for t in body["responses"]:
            for p in t["partitions"]:
                rec = p["records"]
                if isinstance(rec, FileRegion):
                    total += rec.size
        return total

    def available_bytes(self, parts: list[_FetchPartition], request: Obj) -> int:
        """Bytes a fetch would return now (errors count as 'ready': answered at once)."""
        total = 0
        logs = self.core.logs
        for p in parts:
            if p.name is None:
                return 1 << 30
            try:
                plog = logs.get_log(p.name, p.partition)
            except LogError:
                return 1 << 30
            if p.fetch_offset < plog.log_start_offset or p.fetch_offset > plog.log_end_offset:
                return 1 << 30
            if p.fetch_offset < plog.high_watermark:
                try:
                    total += plog.read(p.fetch_offset, max(p.max_bytes, 1), True).size
                except LogError:
                    return 1 << 30
        return total

    def read_fetch(self, version: int, req: Obj, parts: list[_FetchPartition]) -> tuple[Obj, bool]:
        """Read every requested partition now.  Returns (response body, must-answer-now)."""
        logs = self.core.logs
        remaining = max(0, min(req.max_bytes, self.config.fetch_max_bytes))
        min_one = True
        urgent = False
        topics: list[dict[str, Any]] = []
        by_index: dict[int, dict[str, Any]] = {}
        for p in parts:
            tentry = by_index.get(p.topic_index)
            if tentry is None:
                tentry = {"topic": p.name or "", "topic_id": p.topic_id, "partitions": []}
                by_index[p.topic_index] = tentry
                topics.append(tentry)
            entry: dict[str, Any] = {"partition_index": p.partition, "error_code": 0, "high_watermark": -1,
                                     "last_stable_offset": -1, "log_start_offset": -1,
                                     "aborted_transactions": None, "preferred_read_replica": -1, "records": b""}
            tentry["partitions"].append(entry)
            if p.name is None:
                entry["error_code"] = E.UNKNOWN_TOPIC_ID
                urgent = True
                continue
            try:
                plog: PartitionLog = logs.get_log(p.name, p.partition)
                limit = min(p.max_bytes, remaining)
                result = plog.read(p.fetch_offset, limit, min_one)
            except OffsetOutOfRangeError:
                entry["error_code"] = E.OFFSET_OUT_OF_RANGE
                urgent = True
                continue
            except UnknownTopicOrPartitionError:
                entry["error_code"] = E.UNKNOWN_TOPIC_ID if version >= 13 else E.UNKNOWN_TOPIC_OR_PARTITION
                urgent = True
                continue
            except LogError as exc:
                entry["error_code"] = exc.error_code
                urgent = True
                continue
            entry["high_watermark"] = result.high_watermark
            entry["last_stable_offset"] = result.high_watermark
            entry["log_start_offset"] = result.log_start_offset
            if req.isolation_level == 1:
                entry["aborted_transactions"] = []
            region = _records_region(result, self._bytes_out_counter(p.name))
            if region is not None:
                entry["records"] = region
                remaining = max(0, remaining - region.size)
                min_one = False
        body = Obj(throttle_time_ms=0, error_code=0, session_id=0, responses=topics, node_endpoints=[])
        return body, urgent

    def _bytes_out_counter(self, topic: str) -> Callable[[int], None]:
        """Counts a partition's record bytes once its response has actually been sent."""
        metrics = self.metrics
        return lambda nbytes: metrics.bytes_out(topic, nbytes)

    # -- offsets ------------------------------------------------------------------------

    def handle_list_offsets(self, ctx: RequestContext, req: Obj) -> Obj:
        logs = self.core.logs
        topics = []
        for t in req.topics:
            parts = []
            for p in t.partitions:
                entry = {"partition_index": p.partition_index, "error_code": 0, "timestamp": -1, "offset": -1,
                         "leader_epoch": 0}
                try:
                    plog = logs.get_log(t.name, p.partition_index)
                    ts = p.timestamp
                    if ts == LATEST_TIERED:
                        offset, found_ts = -1, -1
                    elif ts == EARLIEST_LOCAL:
                        offset, found_ts = plog.list_offset(EARLIEST)
                    elif ts == MAX_TIMESTAMP and ctx.version < 7:
                        raise LogError("max timestamp needs ListOffsets v7")
                    else:
                        offset, found_ts = plog.list_offset(ts)
                    entry["offset"], entry["timestamp"] = offset, found_ts
                    if offset < 0:
                        entry["leader_epoch"] = -1
                except LogError as exc:
                    entry["error_code"] = exc.error_code if exc.error_code != -1 else E.INVALID_REQUEST
                parts.append(entry)
            topics.append({"name": t.name, "partitions": parts})
        return Obj(throttle_time_ms=0, topics=topics)

    def handle_delete_records(self, ctx: RequestContext, req: Obj) -> Obj:
        logs = self.core.logs
        topics = []
        for t in req.topics:
            parts = []
            for p in t.partitions:
                entry = {"partition_index": p.partition_index, "low_watermark": -1, "error_code": 0}
                try:
                    plog = logs.get_log(t.name, p.partition_index)
                    offset = plog.high_watermark if p.offset == -1 else p.offset
                    if offset < 0 or offset > plog.high_watermark:
                        raise OffsetOutOfRangeError(f"offset {offset} beyond the high watermark")
                    entry["low_watermark"] = plog.delete_records_before(offset)
                except LogError as exc:
                    entry["error_code"] = exc.error_code
                parts.append(entry)
            topics.append({"name": t.name, "partitions": parts})
        return Obj(throttle_time_ms=0, topics=topics)

