"""TransactionService: the transaction coordinator's service — transaction APIs over shards of ``__transaction_state``.

Transactional id T belongs to partition ``abs(hashCode(T)) % partitions`` of
``__transaction_state`` and is coordinated by that partition's leader (FindCoordinator
key type 1).  The shards (one pure :class:`~broker.coordinator.txn.coordinator.TransactionCoordinator`
per partition this broker leads: loading, NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS,
ordered writes, timers) are the shared :class:`~broker.coordinator.runtime.CoordinatorRuntime`'s,
the same runtime the group coordinator uses.  This module adds:

* routing by transactional id — InitProducerId (with a transactional id), AddPartitionsToTxn
  (v0-3 from producers; v4+ from partition leaders, split by shard and merged),
  AddOffsetsToTxn, EndTxn, DescribeTransactions; ListTransactions asks every shard;
* producer ids for the coordinator (cluster-wide blocks, fetched ahead of InitProducerId);
* the markers a shard asks for, handed to the :class:`~broker.coordinator.txn.markers.TxnMarkerSender`,
  and the shard told when they are all written; a shard that goes away stops its markers
  (the next coordinator of the partition sends them again after its load);
* PRODUCER_FENCED read as INVALID_PRODUCER_EPOCH by clients too old to know it (KIP-588);
* metrics: open transactions by state, commits and aborts.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Hashable, Iterator
from typing import TYPE_CHECKING, Any

from broker.cluster.internal_topics import TRANSACTION_STATE_TOPIC
from broker.coordinator.group.partitioning import coordinator_partition
from broker.coordinator.runtime import CoordinatorRuntime, Shard, now_ms
from broker.coordinator.txn.coordinator import (
    STATE_BY_LABEL,
    Effects,
    MarkerRequest,
    TransactionCoordinator,
    TxnConfig,
    TxnState,
)
from broker.coordinator.txn.markers import TxnMarkerSender
from protocol.api import ApiKey
from protocol.error_codes import ErrorCode
from protocol.error_response import error_response
from protocol.primitives import Obj

if TYPE_CHECKING:
    from broker.cluster.image import MetadataImage
    from broker.cluster.producer_ids import ProducerIdManager
    from broker.observability.metrics import BrokerMetrics
    from broker.replication.replica_manager import ReplicaManager
    from protocol.timer_service import WheelTimer

log = logging.getLogger("kbroker.txn")

__all__ = ["TransactionService"]

E = ErrorCode
TxnShard = Shard[TransactionCoordinator]
TopicPartition = tuple[str, int]

#: Below these versions a client does not know PRODUCER_FENCED and gets INVALID_PRODUCER_EPOCH (KIP-588).
_FENCED_SINCE = {ApiKey.INIT_PRODUCER_ID: 4, ApiKey.ADD_PARTITIONS_TO_TXN: 2, ApiKey.ADD_OFFSETS_TO_TXN: 2,
                 ApiKey.END_TXN: 2}


class TransactionService:
    def __init__(self, *, settings: TxnConfig, num_partitions: int, replica: ReplicaManager, metrics: BrokerMetrics,
                 timer: WheelTimer, image: MetadataImage, producer_ids: ProducerIdManager, markers: TxnMarkerSender,
                 offsets_partition: Callable[[str], int]) -> None:
        self.settings = settings
        #: ``transaction.state.log.num.partitions``: the count ``__transaction_state`` is created with
        self.configured_partitions = num_partitions
        self.metrics = metrics
        self.image = image
        self.producer_ids = producer_ids
        self.markers = markers
        self._offsets_partition = offsets_partition
        self._warned_partitions = False
        self.runtime: CoordinatorRuntime[TransactionCoordinator] = CoordinatorRuntime(
            topic=TRANSACTION_STATE_TOPIC, replica=replica, timer=timer, new_coordinator=self._new_coordinator,
            on_effects=self._on_effects, on_unload=self._on_unload, on_load_error=metrics.txn_state_load_errors.inc)

    # -- placement -------------------------------------------------------------------
    @property
    def shards(self) -> dict[int, TxnShard]:
        return self.runtime.shards

    @property
    def num_partitions(self) -> int:
        """The existing topic's partition count (the setting only sizes the topic when it is created)."""
        configured = self.configured_partitions
        t = self.image.topic(TRANSACTION_STATE_TOPIC)
        count = t.partition_count if t is not None else None
        if not count:
            return configured
        if count != configured and not self._warned_partitions:
            self._warned_partitions = True
            log.warning("%s has %d partitions; transaction.state.log.num.partitions=%d applies only when the topic "
                        "is created", TRANSACTION_STATE_TOPIC, count, configured)
        return count

    def partition_for(self, transactional_id: str) -> int:
        return coordinator_partition(transactional_id, self.num_partitions)

    def coordinator_node(self, transactional_id: str) -> int | None:
        """The broker coordinating ``transactional_id`` now (None: its partition has no live leader)."""
        part = self.image.partition(TRANSACTION_STATE_TOPIC, self.partition_for(transactional_id))
        if part is None or part.leader < 0 or not self.image.is_alive(part.leader):
            return None
        return part.leader

    def _new_coordinator(self, partition: int, epoch: int) -> TransactionCoordinator:
        def partition_count(topic: str) -> int | None:
            t = self.image.topic(topic)
            return None if t is None else t.partition_count

        from broker.cluster.internal_topics import OFFSETS_TOPIC

        return TransactionCoordinator(self.settings, partition=partition, coordinator_epoch=epoch, now_ms=now_ms(),
                                      allocate_producer_id=self.producer_ids.try_next, partition_count=partition_count,
                                      offsets_partition=lambda group: (OFFSETS_TOPIC, self._offsets_partition(group)))

    # -- effects ---------------------------------------------------------------------
    def _on_effects(self, shard: TxnShard, effects: Effects) -> None:
        for request in effects.markers:
            self.markers.send((shard.partition, shard.epoch), request,
                              lambda r, shard=shard: self._markers_written(shard, r))
        for _, committed in effects.completed:
            (self.metrics.txn_commits if committed else self.metrics.txn_aborts).inc()

    def _markers_written(self, shard: TxnShard, request: MarkerRequest) -> None:
        if self.shards.get(shard.partition) is not shard or shard.coordinator is None:
            return
        self.runtime.apply(shard, shard.coordinator.markers_written(now_ms(), request.transactional_id,
                                                                    request.producer_id, request.producer_epoch))

    def _on_unload(self, shard: TxnShard) -> None:
        self.markers.cancel((shard.partition, shard.epoch))

    # -- requests --------------------------------------------------------------------
    def init_producer_id(self, version: int, req: Obj) -> Awaitable[Obj]:
        """InitProducerId of a transactional producer (a non-transactional one gets a fresh id from the
        handler itself)."""
        return self._init_producer_id(version, req)

    def add_partitions(self, version: int, req: Obj) -> Obj | Awaitable[Obj]:
        if version >= 4:
            return self._add_partitions_batched(version, req)
        return self._route(ApiKey.ADD_PARTITIONS_TO_TXN, version, req, req.v3_and_below_transactional_id,
                           TransactionCoordinator.add_partitions, lambda code: _add_partitions_v3_error(req, code))

    def add_offsets(self, version: int, req: Obj) -> Obj | Awaitable[Obj]:
        return self._route(ApiKey.ADD_OFFSETS_TO_TXN, version, req, req.transactional_id,
                           TransactionCoordinator.add_offsets)

    def end_txn(self, version: int, req: Obj) -> Obj | Awaitable[Obj]:
        return self._route(ApiKey.END_TXN, version, req, req.transactional_id, TransactionCoordinator.end_txn)

    def _route(self, key: int, version: int, req: Obj, transactional_id: str | None,
               method: Callable[..., Effects], on_error: Callable[[int], Any] | None = None) -> Any:
        now = now_ms()

        def call(coordinator: TransactionCoordinator, token: Hashable) -> Effects:
            return method(coordinator, now, version, req, token)

        def fail(code: int) -> Any:
            return on_error(code) if on_error is not None else error_response(key, version, req, code)

        if not transactional_id:
            return fail(E.INVALID_REQUEST)
        result = self.runtime.run_on_partition(self.partition_for(transactional_id), call, fail)
        threshold = _FENCED_SINCE.get(key, 0)
        if version >= threshold:
            return result
        if isinstance(result, dict):
            return _unfence(result)
        return _unfence_later(result)

    async def _init_producer_id(self, version: int, req: Obj) -> Any:
        if self.producer_ids.available == 0:
            try:
                await self.producer_ids.prefetch()
            except Exception as exc:
                log.warning("no producer ids: %s", exc)
                return Obj(throttle_time_ms=0, error_code=E.COORDINATOR_NOT_AVAILABLE, producer_id=-1,
                           producer_epoch=-1)
        result = self._route(ApiKey.INIT_PRODUCER_ID, version, req, req.transactional_id,
                             TransactionCoordinator.init_producer_id)
        return result if isinstance(result, dict) else await result

    def _add_partitions_batched(self, version: int, req: Obj) -> Any:
        """AddPartitionsToTxn v4+ (from partition leaders): one sub-request per shard, answers merged."""
        by_shard: dict[int, list[Any]] = {}
        answers: dict[int, Any] = {}
        txns = list(req.transactions or [])
        for i, t in enumerate(txns):
            shard, code = self.runtime.shard(self.partition_for(t.transactional_id or ""))
            if shard is None or not t.transactional_id:
                answers[i] = _txn_error(t, code if t.transactional_id else E.INVALID_REQUEST)
            else:
                by_shard.setdefault(shard.partition, []).append((i, t))
        now = now_ms()
        subs: list[tuple[list[tuple[int, Any]], Any]] = []
        for partition, entries in by_shard.items():
            sub = Obj(req)
            sub["transactions"] = [t for _, t in entries]

            def call(coordinator: TransactionCoordinator, token: Hashable, sub: Obj = sub) -> Effects:
                return coordinator.add_partitions(now, version, sub, token)

            def fail(code: int, entries: list[tuple[int, Any]] = entries) -> Obj:
                return Obj(throttle_time_ms=0, error_code=0,
                           results_by_transaction=[_txn_error(t, code) for _, t in entries])

            subs.append((entries, self.runtime.run(self.shards[partition], call, fail)))

        def merge(results: list[Any]) -> Obj:
            for (entries, _), result in zip(subs, results, strict=True):
                for (i, _), entry in zip(entries, result["results_by_transaction"], strict=True):
                    answers[i] = entry
            return Obj(throttle_time_ms=0, error_code=0, results_by_transaction=[answers[i] for i in range(len(txns))])

        if all(isinstance(r, dict) for _, r in subs):
            return merge([r for _, r in subs])

        async def gather() -> Obj:
            return merge([r if isinstance(r, dict) else await r for _, r in subs])

        return gather()

    def describe_transactions(self, req: Obj) -> Obj:
        states = []
        for tid in req.transactional_ids or []:
            shard, code = self.runtime.shard(self.partition_for(tid))
            if shard is None or shard.coordinator is None:
                states.append({"error_code": code, "transactional_id": tid, "transaction_state": "",
                               "transaction_timeout_ms": 0, "transaction_start_time_ms": -1, "producer_id": -1,
                               "producer_epoch": -1, "topics": []})
            else:
                states.append(shard.coordinator.describe(tid))
        return Obj(throttle_time_ms=0, transaction_states=states)

    def list_transactions(self, version: int, req: Obj) -> Obj:
        wanted: set[TxnState] = set()
        unknown: list[str] = []
        for name in req.state_filters or []:
            state = STATE_BY_LABEL.get(name)
            if state is None:
                unknown.append(name)
            else:
                wanted.add(state)
        pids = set(req.producer_id_filters or [])
        duration = req.get("duration_filter", -1) if version >= 1 else -1
        error = E.NONE
        entries: list[dict[str, Any]] = []
        now = now_ms()
        for shard in list(self.shards.values()):
            if shard.loading or shard.coordinator is None:
                error = E.COORDINATOR_LOAD_IN_PROGRESS
                continue
            if unknown and not wanted:
                continue  # only unknown states asked for: nothing matches
            entries += shard.coordinator.list_transactions(now, wanted or None, pids or None, duration)
        return Obj(throttle_time_ms=0, error_code=error, unknown_state_filters=unknown, transaction_states=entries)

    def close(self) -> None:
        self.runtime.close()
        self.markers.close()

    # -- inspection ------------------------------------------------------------------
    def coordinators(self) -> Iterator[TransactionCoordinator]:
        return self.runtime.coordinators()

    def collect_metrics(self) -> Iterator[Any]:
        from prometheus_client.core import GaugeMetricFamily

        by_state = GaugeMetricFamily("kbroker_transactions", "Transactional ids this broker coordinates, by state",
                                     labels=["state"])
        counts: dict[TxnState, int] = {}
        for coordinator in self.coordinators():
            for state, n in coordinator.count_by_state().items():
                counts[state] = counts.get(state, 0) + n
        for state in TxnState:
            if state is not TxnState.DEAD:
                by_state.add_metric([state.label], counts.get(state, 0))
        yield by_state
        ongoing = GaugeMetricFamily("kbroker_transactions_ongoing",
                                    "Transactions this broker coordinates that are open or being completed")
        ongoing.add_metric([], sum(counts.get(s, 0) for s in (TxnState.ONGOING, TxnState.PREPARE_COMMIT,
                                                               TxnState.PREPARE_ABORT)))
        yield ongoing


def _unfence(body: Any) -> Any:
    """PRODUCER_FENCED → INVALID_PRODUCER_EPOCH everywhere in a response body."""
    if isinstance(body, dict):
        for key, value in body.items():
            if key in ("error_code", "partition_error_code") and value == E.PRODUCER_FENCED:
                body[key] = E.INVALID_PRODUCER_EPOCH
            else:
                _unfence(value)
    elif isinstance(body, list):
        for item in body:
            _unfence(item)
    return body


async def _unfence_later(result: Any) -> Any:
    return _unfence(await result)


def _add_partitions_v3_error(req: Obj, code: int) -> Obj:
    return Obj(throttle_time_ms=0, results_by_topic_v3_and_below=[
        {"name": t.name, "results_by_partition": [{"partition_index": p, "partition_error_code": code}
                                                  for p in t.partitions]}
        for t in req.v3_and_below_topics or []])


def _txn_error(t: Any, code: int) -> dict[str, Any]:
    return {"transactional_id": t.transactional_id, "topic_results": [
        {"name": x.name, "results_by_partition": [{"partition_index": p, "partition_error_code": code}
                                                  for p in x.partitions]}
        for x in t.topics or []]}
