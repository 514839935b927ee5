"""Prefetching fetcher: one Fetch loop per broker read from, record sets buffered per partition.

A partition is read from its leader, or — with ``client_rack`` set and the brokers configured
with a replica selector (KIP-392) — from the in-sync replica in our rack its leader names
(``preferred_read_replica``), until ``metadata_max_age_ms`` has passed or that replica fails us.

Owns fetch positions (the next offset to request) and the buffers of fetched record sets; the
consumer owns the application positions and drains the buffers.  A partition is fetched when
it is assigned, not paused, has a position and its buffer is below ``max_partition_fetch_bytes``;
each broker has at most one Fetch in flight (on its ``fetch`` connection).  Responses for
partitions whose position moved meanwhile (seek, revoke) are dropped.

Record sets are kept as the broker sent them (views of the response frame) and decoded when
drained: into :class:`~client.types.Record` rows by ``protocol.records.decode_rows`` (compiled
when available: no Python call per record), or handed over undecoded to readers that decode
them into columns themselves (:meth:`Fetcher.drain_record_sets`).  Only the batch headers are
read at fetch time, to move the fetch position past the last whole batch.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from collections.abc import Callable
from typing import Any, TypeAlias

from client.config import ConsumerConfig
from client.errors import KafkaConnectionError, KafkaError, KafkaTimeoutError
from client.net import ZERO_UUID, NetworkClient
from client.types import Record, TopicPartition
from protocol.api import ApiKey
from protocol.error_codes import ErrorCode
from protocol.records import CorruptRecordError, data_batches, decode_rows, encode_batch, iter_batch_headers

log = logging.getLogger(__name__)

#: A fetched record set as the broker sent it: ``(data, min_offset, aborted)`` — records below
#: ``min_offset`` are to be skipped; ``aborted`` is the Fetch answer's aborted transactions as
#: ``(producer_id, first_offset)`` for read_committed (None: read_uncommitted)
RecordSet: TypeAlias = tuple[Any, int, list[tuple[int, int]] | None]


class PartitionBuffer:
    __slots__ = ("bytes", "chunks", "records")

    def __init__(self) -> None:
        #: fetched record sets not decoded yet, each with the offset it was fetched from and its
        #: aborted transactions (read_committed) or None
        self.chunks: deque[RecordSet] = deque()
        #: records decoded but not drained yet (a drain limited by ``max_records``)
        self.records: list[Record] = []
        #: bytes of fetched data held (raw record sets, and what decoded leftovers came from)
        self.bytes = 0

    def __bool__(self) -> bool:
        return bool(self.chunks or self.records)


class Fetcher:
    def __init__(self, net: NetworkClient, config: ConsumerConfig,
                 on_out_of_range: Callable[[TopicPartition], None]) -> None:
        self.net = net
        self.config = config
        self.on_out_of_range = on_out_of_range
        self.fetch_positions: dict[TopicPartition, int] = {}
        self.buffers: dict[TopicPartition, PartitionBuffer] = {}
        self.paused: set[TopicPartition] = set()
        self.high_watermarks: dict[TopicPartition, int] = {}
        #: where the fetch position went past batches with nothing to hand out (markers, aborted
        #: transactions) after the last buffered record: the consumer's position follows once drained
        self.skipped: dict[TopicPartition, int] = {}
        self.data_ready = asyncio.Event()
        self._wake = asyncio.Event()
        self._loops: dict[int, asyncio.Task[None]] = {}
        self._manager: asyncio.Task[None] | None = None
        self._error: KafkaError | None = None
        #: KIP-392: the replica a leader sent us to for a partition (``client_rack``), and until when
        #: (monotonic seconds; ``metadata_max_age_ms`` after it was given) we read there
        self.preferred: dict[TopicPartition, tuple[int, float]] = {}

    def start(self) -> None:
        self._manager = asyncio.get_running_loop().create_task(self._manage())

    async def close(self) -> None:
        tasks = [t for t in (self._manager, *self._loops.values()) if t is not None]
        for t in tasks:
            t.cancel()
        for t in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await t

    def wake(self) -> None:
        self._wake.set()

    def set_position(self, tp: TopicPartition, offset: int) -> None:
        self.fetch_positions[tp] = offset
        self.buffers.pop(tp, None)
        self.skipped.pop(tp, None)
        self.wake()

    def remove(self, tp: TopicPartition) -> None:
        self.fetch_positions.pop(tp, None)
        self.buffers.pop(tp, None)
        self.skipped.pop(tp, None)
        self.paused.discard(tp)
        self.preferred.pop(tp, None)

    def take_error(self) -> KafkaError | None:
        err, self._error = self._error, None
        return err

    def _fetchable(self) -> dict[int, list[TopicPartition]]:
        by_node: dict[int, list[TopicPartition]] = {}
        limit = self.config.max_partition_fetch_bytes
        md = self.net.metadata
        for tp in self.fetch_positions:
            if tp in self.paused:
                continue
            buf = self.buffers.get(tp)
            if buf is not None and buf.bytes >= limit:
                continue
            leader = md.leader_for(tp.topic, tp.partition)
            if leader is None:
                self.net.add_topics([tp.topic])
                self.net.request_metadata_update()
                continue
            by_node.setdefault(self._read_replica(tp, leader), []).append(tp)
        return by_node

    def _read_replica(self, tp: TopicPartition, leader: int) -> int:
        """Where to fetch ``tp``: the replica its leader preferred for our rack while that holds, else
        the leader."""
        preferred = self.preferred.get(tp)
        if preferred is None:
            return leader
        node, until = preferred
        if time.monotonic() >= until or node not in self.net.metadata.brokers:
            del self.preferred[tp]
            return leader
        return node

    async def _manage(self) -> None:
        while True:
            self._wake.clear()
            for node, tps in self._fetchable().items():
                if node not in self._loops:
                    self._loops[node] = asyncio.get_running_loop().create_task(self._fetch_once(node, tps))
            await self._wake.wait()

    async def _fetch_once(self, node: int, tps: list[TopicPartition]) -> None:
        try:
            if not await self._fetch(node, tps):
                # Nothing usable came back (retriable partition errors, topics we cannot name):
                # back off instead of re-sending the same Fetch in a hot loop.
                await asyncio.sleep(self.config.retry_backoff_ms / 1000)
        except asyncio.CancelledError:
            raise
        except (KafkaConnectionError, KafkaTimeoutError) as exc:
            log.debug("fetch from node %s failed: %s", node, exc)
            self.net.request_metadata_update()
            await asyncio.sleep(self.config.retry_backoff_ms / 1000)
        except Exception:
            log.exception("fetch from node %s failed", node)
            await asyncio.sleep(self.config.retry_backoff_ms / 1000)
        finally:
            self._loops.pop(node, None)
            self.wake()

    async def _fetch(self, node: int, tps: list[TopicPartition]) -> bool:
        """One Fetch to ``node``; False when the response needs a back-off before the next one."""
        cfg = self.config
        md = self.net.metadata
        # Positions may have changed (seek, revoke, out-of-range) since the manager picked ``tps``.
        requested = {tp: pos for tp in tps if (pos := self.fetch_positions.get(tp)) is not None
                     and tp not in self.paused}
        if not requested:
            return True
        by_topic: dict[str, list[TopicPartition]] = {}
        for tp in requested:
            by_topic.setdefault(tp.topic, []).append(tp)

        def build(version: int) -> dict[str, Any]:
            topics = []
            for topic, parts in by_topic.items():
                entry: dict[str, Any] = {"topic": topic, "partitions": [
                    {"partition": tp.partition, "fetch_offset": requested[tp], "log_start_offset": -1,
                     "partition_max_bytes": cfg.max_partition_fetch_bytes} for tp in parts]}
                if version >= 13:
                    entry["topic_id"] = md.topic_id(topic) or ZERO_UUID
                topics.append(entry)
            body = {"replica_id": -1, "max_wait_ms": cfg.fetch_max_wait_ms, "min_bytes": cfg.fetch_min_bytes,
                    "max_bytes": cfg.fetch_max_bytes, "isolation_level": cfg.isolation, "session_id": 0,
                    "session_epoch": -1, "topics": topics}
            if version >= 11 and cfg.client_rack:
                body["rack_id"] = cfg.client_rack
            return body

        resp = await self.net.send(node, ApiKey.FETCH, {}, kind="fetch", build=build,
                                   timeout_ms=cfg.request_timeout_ms + cfg.fetch_max_wait_ms)
        if resp.error_code:
            raise KafkaError(resp.error_code, "Fetch")
        got_data = False
        healthy = True
        for t in resp.responses:
            topic = t.topic or md.topic_name(t.topic_id)
            if topic is None:
                # A topic id our metadata does not know (recreated topic, stale snapshot).
                healthy = False
                self.net.request_metadata_update()
                continue
            for p in t.partitions:
                tp = TopicPartition(topic, p.partition_index)
                offset = requested.get(tp)
                if offset is None or self.fetch_positions.get(tp) != offset:
                    continue
                if p.error_code:
                    if tp in self.preferred:
                        # the replica we were sent to cannot serve us (out of range, no longer a
                        # replica): back to the leader, without resetting the position
                        del self.preferred[tp]
                        continue
                    healthy &= self._partition_error(tp, p.error_code)
                    continue
                preferred = p.get("preferred_read_replica", -1)
                if preferred is not None and preferred >= 0 and preferred != node:
                    self.preferred[tp] = (preferred, time.monotonic() + cfg.metadata_max_age_ms / 1000)
                    got_data = True  # fetch again at once, there
                    continue
                self.high_watermarks[tp] = p.high_watermark
                if p.records:
                    aborted = None
                    if cfg.isolation == 1:
                        aborted = [(a.producer_id, a.first_offset) for a in p.get("aborted_transactions") or ()]
                    got_data |= self._append(tp, offset, p.records, aborted)
        if got_data:
            self.data_ready.set()
        return healthy or got_data

    def _append(self, tp: TopicPartition, offset: int, data: Any,
                aborted: list[tuple[int, int]] | None = None) -> bool:
        """Buffer a fetched record set (``aborted``: read_committed, aborted transactions are dropped
        when it is decoded); True when it holds records to hand out at or after ``offset``.  Only the
        batch headers are read: the fetch position moves past every whole batch, also those with
        nothing to hand out (markers, aborted transactions), and the consumer's position follows
        once everything buffered before them is drained (``skipped``)."""
        last = None
        has_data = False
        try:
            for _, header in iter_batch_headers(data):
                last = header
            if last is not None:
                has_data = any(True for _ in data_batches(data, offset, aborted))
        except CorruptRecordError as exc:
            self._error = KafkaError(ErrorCode.CORRUPT_MESSAGE, f"{tp}: {exc}")
            self.data_ready.set()
            return False
        if last is None or last.next_offset <= offset:
            return False
        self.fetch_positions[tp] = last.next_offset
        self.skipped[tp] = last.next_offset
        if not has_data:
            self.data_ready.set()  # nothing to hand out, but the position moved
            return False
        buf = self.buffers.get(tp)
        if buf is None:
            buf = self.buffers[tp] = PartitionBuffer()
        buf.chunks.append((data, offset, aborted))
        buf.bytes += len(data)
        return True

    def _partition_error(self, tp: TopicPartition, code: int) -> bool:
        """Handle a partition-level Fetch error; False when the next Fetch should back off."""
        if code == ErrorCode.OFFSET_OUT_OF_RANGE:
            self.fetch_positions.pop(tp, None)
            self.on_out_of_range(tp)
            return True
        if ErrorCode.from_code(code).retriable:
            self.net.request_metadata_update()
            return False
        self._error = KafkaError(code, f"Fetch {tp.topic}-{tp.partition}")
        self.data_ready.set()
        return True

    def _ready(self, tps: set[TopicPartition] | None) -> list[tuple[TopicPartition, PartitionBuffer]]:
        return [(tp, buf) for tp, buf in self.buffers.items()
                if buf and (tps is None or tp in tps) and tp not in self.paused]

    def _drained(self) -> None:
        if not any(self.buffers.values()):
            self.data_ready.clear()
        self.wake()

    def drain(self, tps: set[TopicPartition] | None, max_records: int | None) -> dict[TopicPartition, list[Record]]:
        """Decode and take buffered records (at most ``max_records`` in all)."""
        out: dict[TopicPartition, list[Record]] = {}
        budget = max_records if max_records is not None else 1 << 62
        for tp, buf in self._ready(tps):
            if budget <= 0:
                break
            recs = buf.records
            buf.records = []
            while buf.chunks and len(recs) < budget:
                data, offset, aborted = buf.chunks.popleft()
                try:
                    recs += decode_rows(data, Record, tp.topic, tp.partition, min_offset=offset, aborted=aborted)
                except CorruptRecordError as exc:
                    # refetch from the bad record set: the error stays until the data is readable
                    self.fetch_positions[tp] = offset
                    self.skipped.pop(tp, None)
                    buf.chunks.clear()
                    buf.records = []
                    buf.bytes = 0
                    self._drained()
                    raise KafkaError(ErrorCode.CORRUPT_MESSAGE, f"{tp}: {exc}") from None
            if len(recs) > budget:
                rest = len(recs) - budget
                held = sum(len(c[0]) for c in buf.chunks)
                buf.bytes = held + (buf.bytes - held) * rest // len(recs)
                buf.records = recs[budget:]
                recs = recs[:budget]
            else:
                buf.bytes = sum(len(c[0]) for c in buf.chunks)
            if recs:
                out[tp] = recs
                budget -= len(recs)
        self._drained()
        return out

    def drain_record_sets(self, tps: set[TopicPartition] | None) -> dict[TopicPartition, list[RecordSet]]:
        """Take the buffered record sets undecoded (see :data:`RecordSet`).  Records already decoded
        by a limited ``drain`` come first, re-encoded as batches."""
        out: dict[TopicPartition, list[RecordSet]] = {}
        for tp, buf in self._ready(tps):
            sets: list[RecordSet] = []
            if buf.records:
                sets.append((_rebatch(buf.records), buf.records[0].offset, None))
                buf.records = []
            sets.extend(buf.chunks)
            buf.chunks.clear()
            buf.bytes = 0
            out[tp] = sets
        self._drained()
        return out


def _rebatch(records: list[Record]) -> bytes:
    """Records decoded already, as batches again (one per record: offsets and timestamps kept)."""
    return b"".join(encode_batch([(r.key, r.value, r.headers, r.timestamp)], base_offset=r.offset,
                                 timestamp_type=r.timestamp_type) for r in records)
