"""TxnMarkerSender: the transaction coordinator's COMMIT/ABORT markers, to every partition's leader.

Kafka's ``TransactionMarkerChannelManager``: for each transaction being completed, the
markers go to the current leader of each of its partitions in WriteTxnMarkers requests, one
queue per destination broker (the markers of several transactions share a request).  The
leader answers per partition once the marker is replicated.  Then:

* NONE — that partition is done; when every partition of a transaction is, ``on_done`` runs
  (the coordinator records the transaction complete);
* a partition whose topic no longer exists is done too (nothing left to mark);
* NOT_LEADER_OR_FOLLOWER, NOT_ENOUGH_REPLICAS, REQUEST_TIMED_OUT, a storage error, a lost
  connection, ... — the partition goes back to the queue of whoever leads it now, after a
  backoff (``retry_backoff_ms``);
* INVALID_PRODUCER_EPOCH / TRANSACTION_COORDINATOR_FENCED — a newer coordinator or epoch has
  taken over: sending stops and the transaction is left prepared (its coordinator finishes it).

Requests go through a :class:`~broker.coordinator.txn.channel.TxnChannel` (the markers for this broker's own
partitions are written in process, with no connection).  Sends are grouped by owner (the coordinator shard); :meth:`cancel` drops an
owner's when it loses the partition.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field

from broker.coordinator.txn.channel import TxnChannel
from broker.coordinator.txn.coordinator import MarkerRequest
from protocol.api import ApiKey
from protocol.error_codes import ErrorCode, error_name

log = logging.getLogger("kbroker.txn.markers")

__all__ = ["TxnMarkerSender"]

E = ErrorCode
TopicPartition = tuple[str, int]
_STOP = (E.INVALID_PRODUCER_EPOCH, E.TRANSACTION_COORDINATOR_FENCED)
_DONE = (E.NONE, E.UNSUPPORTED_FOR_MESSAGE_FORMAT)


@dataclass(slots=True, eq=False)
class _Send:
    owner: Hashable
    request: MarkerRequest
    remaining: set[TopicPartition]
    on_done: Callable[[MarkerRequest], None]
    cancelled: bool = False
    failures: dict[TopicPartition, int] = field(default_factory=dict)


class TxnMarkerSender:
    """Queues markers per destination broker and drains each queue with one request at a time."""

    def __init__(self, channel: TxnChannel, *, leader_of: Callable[[str, int], int | None],
                 topic_exists: Callable[[str], bool], retry_backoff_ms: int, request_timeout_ms: int) -> None:
        self.channel = channel
        self.leader_of = leader_of
        self.topic_exists = topic_exists
        self.retry_backoff_ms = retry_backoff_ms
        self.request_timeout_ms = request_timeout_ms
        self._queues: dict[int, list[tuple[_Send, TopicPartition]]] = {}
        self._drainers: dict[int, asyncio.Task[None]] = {}
        self._sends: set[_Send] = set()
        self._retry_tasks: set[asyncio.Task[None]] = set()
        self._closed = False

    @property
    def in_flight(self) -> int:
        """Transactions whose markers are not all written yet."""
        return sum(1 for s in self._sends if not s.cancelled)

    def send(self, owner: Hashable, request: MarkerRequest, on_done: Callable[[MarkerRequest], None]) -> None:
        send = _Send(owner, request, set(request.partitions), on_done)
        self._sends.add(send)
        for tp in sorted(request.partitions):
            self._route(send, tp)
        self._maybe_done(send)

    def cancel(self, owner: Hashable) -> None:
        """Stop sending ``owner``'s markers (its coordinator shard went away)."""
        for send in list(self._sends):
            if send.owner == owner:
                send.cancelled = True
                self._sends.discard(send)

    def _route(self, send: _Send, tp: TopicPartition) -> None:
        if send.cancelled or self._closed:
            return
        if not self.topic_exists(tp[0]):
            send.remaining.discard(tp)  # deleted: nothing to mark
            return
        leader = self.leader_of(*tp)
        if leader is None or leader < 0:
            self._retry_later(send, tp)
            return
        self._queues.setdefault(leader, []).append((send, tp))
        if leader not in self._drainers:
            self._drainers[leader] = asyncio.ensure_future(self._drain(leader))

    def _retry_later(self, send: _Send, tp: TopicPartition) -> None:
        async def later() -> None:
            await asyncio.sleep(self.retry_backoff_ms / 1000)
            self._route(send, tp)
            self._maybe_done(send)

        task = asyncio.ensure_future(later())
        self._retry_tasks.add(task)
        task.add_done_callback(self._retry_tasks.discard)

    def _maybe_done(self, send: _Send) -> None:
        if send.remaining or send.cancelled or send not in self._sends:
            return
        self._sends.discard(send)
        try:
            send.on_done(send.request)
        except Exception:
            log.exception("completing transaction %s failed", send.request.transactional_id)

    async def _drain(self, node: int) -> None:
        try:
            while not self._closed:
                batch = [(s, tp) for s, tp in self._queues.pop(node, []) if not s.cancelled]
                if not batch:
                    return
                await self._send_batch(node, batch)
        finally:
            self._drainers.pop(node, None)
            if self._queues.get(node) and not self._closed:
                self._drainers[node] = asyncio.ensure_future(self._drain(node))

    async def _send_batch(self, node: int, batch: list[tuple[_Send, TopicPartition]]) -> None:
        by_send: dict[int, tuple[_Send, list[TopicPartition]]] = {}
        for send, tp in batch:
            by_send.setdefault(id(send), (send, []))[1].append(tp)
        markers = []
        for send, tps in by_send.values():
            r = send.request
            topics: dict[str, list[int]] = {}
            for topic, p in tps:
                topics.setdefault(topic, []).append(p)
            markers.append({"producer_id": r.producer_id, "producer_epoch": r.producer_epoch,
                            "transaction_result": r.commit, "coordinator_epoch": r.coordinator_epoch,
                            "topics": [{"name": t, "partition_indexes": ps} for t, ps in topics.items()]})
        try:
            resp = await self.channel.request(node, ApiKey.WRITE_TXN_MARKERS, {"markers": markers}, version=1,
                                              timeout_ms=self.request_timeout_ms)
        except Exception as exc:
            if not self._closed:
                log.debug("WriteTxnMarkers to broker %d failed: %s", node, exc)
                for send, tp in batch:
                    self._retry_later(send, tp)
            return
        answered: dict[int, dict[TopicPartition, int]] = {}
        for m in resp.markers:
            for t in m.topics:
                for p in t.partitions:
                    answered.setdefault(m.producer_id, {})[(t.name, p.partition_index)] = p.error_code
        for send, tps in by_send.values():
            codes = answered.get(send.request.producer_id, {})
            for tp in tps:
                self._handle(send, tp, codes.get(tp, E.UNKNOWN_SERVER_ERROR))
            self._maybe_done(send)

    def _handle(self, send: _Send, tp: TopicPartition, code: int) -> None:
        if send.cancelled:
            return
        if code in _DONE:
            send.remaining.discard(tp)
        elif code in _STOP:
            log.warning("markers of transaction %s: %s on %s-%d; leaving it to the current coordinator",
                        send.request.transactional_id, ErrorCode(code).name, *tp)
            send.cancelled = True
            self._sends.discard(send)
        elif code == E.UNKNOWN_TOPIC_OR_PARTITION and not self.topic_exists(tp[0]):
            send.remaining.discard(tp)
        else:
            n = send.failures[tp] = send.failures.get(tp, 0) + 1
            if n in (1, 10, 100):
                log.info("marker of transaction %s for %s-%d: %s (attempt %d); retrying",
                         send.request.transactional_id, tp[0], tp[1], error_name(code), n)
            self._retry_later(send, tp)

    def close(self) -> None:
        self._closed = True
        for task in [*self._drainers.values(), *self._retry_tasks]:
            task.cancel()
        self._drainers.clear()
        self._queues.clear()
        self._sends.clear()
