"""Prefetching fetcher: one Fetch loop per leader broker, records buffered per partition.

Owns fetch positions (the next offset to request) and the buffers of fetched records; the
consumer owns the application positions and drains the buffers.  A partition is fetched when
it is assigned, not paused, has a position and its buffer is below ``max_partition_fetch_bytes``
worth of records; each broker has at most one Fetch in flight (on its ``fetch`` connection).
Responses for partitions whose position moved meanwhile (seek, revoke) are dropped.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import Callable
from typing import Any

from client.config import ConsumerConfig
from client.errors import KafkaConnectionError, KafkaError, KafkaTimeoutError
from client.net import ZERO_UUID, NetworkClient
from client.types import Record, TopicPartition
from protocol.api import ApiKey
from protocol.error_codes import ErrorCode
from protocol.records import (
    CorruptRecordError,
    decode_committed_records,
    decode_record_set,
    iter_batch_headers,
)

log = logging.getLogger(__name__)


class PartitionBuffer:
    __slots__ = ("bytes", "records")

    def __init__(self) -> None:
        self.records: deque[Record] = deque()
        self.bytes = 0


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
            by_node.setdefault(leader, []).append(tp)
        return by_node

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
            return {"replica_id": -1, "max_wait_ms": cfg.fetch_max_wait_ms, "min_bytes": cfg.fetch_min_bytes,
                    "max_bytes": cfg.fetch_max_bytes, "isolation_level": cfg.isolation, "session_id": 0,
                    "session_epoch": -1, "topics": topics}

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
                    healthy &= self._partition_error(tp, p.error_code)
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

    def _append(self, tp: TopicPartition, offset: int, data: bytes,
                aborted: list[tuple[int, int]] | None = None) -> bool:
        """Buffer the records of a Fetch answer (``aborted``: read_committed, drop aborted transactions);
        the fetch position moves past every whole batch, also those with nothing to hand out."""
        buf = self.buffers.get(tp)
        if buf is None:
            buf = self.buffers[tp] = PartitionBuffer()
        topic, partition = tp
        added = 0
        next_offset = offset
        try:
            records = decode_record_set(data) if aborted is None else decode_committed_records(data, aborted)
            for r in records:
                if r.offset < offset:
                    continue
                buf.records.append(Record(topic, partition, r.offset, r.timestamp, r.timestamp_type,
                                          r.key, r.value, r.headers))
                next_offset = r.offset + 1
                added += 1
        except CorruptRecordError as exc:
            self._error = KafkaError(ErrorCode.CORRUPT_MESSAGE, f"{tp}: {exc}")
            self.data_ready.set()
            return False
        if added:
            buf.bytes += len(data)
            self.skipped.pop(tp, None)
        end = next_offset
        for _, header in iter_batch_headers(data):
            end = max(end, header.next_offset)
        self.fetch_positions[tp] = end
        if end > next_offset:
            self.skipped[tp] = end
            if not added:
                self.data_ready.set()  # nothing to hand out, but the position moved
        return added > 0

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

    def drain(self, tps: set[TopicPartition] | None, max_records: int | None) -> dict[TopicPartition, list[Record]]:
        out: dict[TopicPartition, list[Record]] = {}
        budget = max_records if max_records is not None else 1 << 62
        for tp, buf in list(self.buffers.items()):
            if budget <= 0:
                break
            if (tps is not None and tp not in tps) or tp in self.paused or not buf.records:
                continue
            n = min(budget, len(buf.records))
            if n == len(buf.records):
                recs = list(buf.records)
                buf.records.clear()
                buf.bytes = 0
            else:
                recs = [buf.records.popleft() for _ in range(n)]
                buf.bytes = max(0, buf.bytes - buf.bytes * n // (n + len(buf.records)))
            out[tp] = recs
            budget -= n
        if not any(b.records for b in self.buffers.values()):
            self.data_ready.clear()
        self.wake()
        return out
