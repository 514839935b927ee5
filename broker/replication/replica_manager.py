"""ReplicaManager: the partitions this broker hosts, as leader or follower (Kafka's ``ReplicaManager``).

It follows the metadata image: for every partition assigned to this broker it
opens the log and keeps a :class:`~broker.replication.partition.Partition` whose role
(leader, follower) and ISR come from the partition's record; followers are
handed to the replica fetchers, leaders serve Produce, Fetch and ListOffsets.

* **Produce** appends to leaders only (NOT_LEADER_OR_FOLLOWER elsewhere).  With
  acks=all it first checks the ISR against ``min.insync.replicas``
  (NOT_ENOUGH_REPLICAS, nothing appended), then parks the request in the produce
  purgatory until the high watermark passes the batch (or the ISR shrank below
  the minimum meanwhile: NOT_ENOUGH_REPLICAS_AFTER_APPEND; or the leadership
  moved: NOT_LEADER_OR_FOLLOWER; or ``timeout_ms``: REQUEST_TIMED_OUT).
* **Fetch** from consumers reads up to the high watermark (KIP-392: with ``replica.selector.class``
  the leader may send a consumer in another rack to an in-sync replica in its own —
  ``preferred_read_replica`` — and followers serve consumers that send client metadata, up to
  the high watermark they know); from followers
  (``replica_id`` / ``replica_state``) up to the log end, after checking their
  leader epoch and last fetched epoch (``diverging_epoch``), and records their
  progress — which may move the high watermark and grow the ISR.  Record data
  stays in the segment files (sent with ``sendfile``); a Fetch that cannot be
  satisfied yet waits in the fetch purgatory.
* A periodic task shrinks the ISR of lagging followers; ISR changes are written
  to the metadata store by compare-and-set and take effect when the image
  brings them back.

* An ``acks=0``/``acks=1`` Produce needs proof of leadership
  (:meth:`MetadataService.may_lead`): a broker that was paused or cut off from the
  store past its lease answers NOT_LEADER_OR_FOLLOWER until it has caught up, so
  nothing it acknowledges can be lost to a leader elected meanwhile.  Writes that
  wait for the high watermark (acks=all, coordinator writes, markers) need none:
  a leader is only ever elected from the ISR, whose members all have what the high
  watermark covers — so they go on while the store is down for everyone.
* Controlled shutdown (:meth:`ReplicaManager.hand_over_leadership`): the broker
  stops appending to the partitions it leads, waits until their in-sync followers
  have its whole log, and only then moves each leadership to one of them — so a
  rolling restart loses no acknowledged record at any ``acks``.

Components interested in leadership (the group coordinator for
``__consumer_offsets``) subscribe with :meth:`ReplicaManager.add_leadership_listener`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import Awaitable, Callable, Hashable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from broker.cluster import reassignment
from broker.cluster.image import MetadataDelta, MetadataImage
from broker.cluster.internal_topics import is_internal_topic
from broker.cluster.kv import KVError
from broker.cluster.records import PartitionChange, PartitionRecord
from broker.log.errors import (
    InvalidTimestampError,
    LogError,
    OffsetOutOfRangeError,
    UnknownTopicOrPartitionError,
)
from broker.log.recompress import compression_level, recompress_for_topic, target_codec
from broker.log.region import FileRegion, release_parts
from broker.log.validation import RecordValidationError, check_keys, with_timestamp_errors
from broker.replication.partition import Partition
from broker.replication.purgatory import DelayedOperation, DelayedOperationPurgatory
from broker.replication.quota import UNLIMITED, RateQuota, throttled
from protocol.error_codes import ErrorCode
from protocol.primitives import Obj
from protocol.records import ZSTD, CorruptRecordError, parse_batch_header

if TYPE_CHECKING:
    from broker.cluster.metadata import MetadataService
    from broker.coordinator.txn.verifier import TxnVerifier
    from broker.log.manager import LogManager
    from broker.log.partition_log import AppendResult, PartitionLog, ReadResult
    from broker.log.producer_state import VerificationGuard
    from broker.observability.metrics import BrokerMetrics
    from broker.replication.fetcher import ReplicaFetcherManager
    from protocol.timer_service import WheelTimer

log = logging.getLogger("kbroker.replica")

E = ErrorCode
LATEST, EARLIEST, MAX_TIMESTAMP, EARLIEST_LOCAL, LATEST_TIERED = -1, -2, -3, -4, -5
TopicPartition = tuple[str, int]
LeadershipListener = Callable[[str, int, bool, int], None]


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def _records_region(result: ReadResult, on_sent: Callable[[int], None]) -> FileRegion | None:
    """The read's file slices as a region that keeps their files open until it is released."""
    if not result.slices:
        return None
    return FileRegion([(s.handle, s.position, s.length) for s in result.slices], on_sent)


class _FetchPartition:
    __slots__ = ("current_leader_epoch", "fetch_offset", "last_fetched_epoch", "max_bytes", "name", "partition",
                 "topic_id", "topic_index")

    def __init__(self, name: str | None, topic_id: Any, partition: int, fetch_offset: int, max_bytes: int,
                 topic_index: int, current_leader_epoch: int = -1, last_fetched_epoch: int = -1) -> None:
        self.name = name
        self.topic_id = topic_id
        self.partition = partition
        self.fetch_offset = fetch_offset
        self.max_bytes = max_bytes
        self.topic_index = topic_index
        self.current_leader_epoch = current_leader_epoch
        self.last_fetched_epoch = last_fetched_epoch


class DelayedFetch(DelayedOperation):
    """A long-poll Fetch waiting for ``min_bytes`` or ``max_wait_ms``."""

    def __init__(self, manager: ReplicaManager, version: int, request: Obj, parts: list[_FetchPartition],
                 min_bytes: int, max_wait_ms: int, replica_id: int, listener: str | None = None) -> None:
        super().__init__(max_wait_ms)
        self.listener = listener
        self.manager = manager
        self.version = version
        self.request = request
        self.parts = parts
        self.min_bytes = min_bytes
        self.replica_id = replica_id
        self.future: asyncio.Future[Obj] = asyncio.get_running_loop().create_future()
        # the connection went away (its request task was cancelled): leave the purgatory now
        self.future.add_done_callback(lambda f: f.cancelled() and self.force_complete())

    def try_complete(self) -> bool:
        isolation = self.request.get("isolation_level", 0) or 0
        client = self.manager.client_metadata(self.version, self.request, self.replica_id)
        if self.manager.available_bytes(self.parts, self.replica_id, isolation, client) >= self.min_bytes:
            return self.force_complete()
        return False

    def on_complete(self) -> None:
        if self.future.done():
            return
        try:
            body, _ = self.manager.read_fetch(self.version, self.request, self.parts, self.replica_id, self.listener)
        except Exception as exc:  # surfaced to the connection, which closes
            self.future.set_exception(exc)
            return
        self.future.set_result(body)


class _ProduceWait:
    """One partition of a parked acks=all produce: done once the high watermark reaches ``required``."""

    __slots__ = ("entry", "leader_term", "partition", "required")

    def __init__(self, partition: Partition, required: int, entry: dict[str, Any]) -> None:
        self.partition = partition
        self.required = required
        self.leader_term = partition.leader_term
        self.entry = entry

    def status(self) -> int | None:
        """The partition's answer if it has one now (None: still waiting).  A leader-epoch bump that keeps
        this broker leader (a reassignment completing) does not fail the wait: the appended batch is
        still in the log, and commits when the high watermark passes it (as Kafka answers); only
        losing the leadership does (the log may have been truncated since)."""
        p = self.partition
        if not p.is_leader or p.leader_term != self.leader_term:
            return E.NOT_LEADER_OR_FOLLOWER
        if p.log.high_watermark >= self.required:
            if len(p.isr) < p.log.config.min_insync_replicas:
                return E.NOT_ENOUGH_REPLICAS_AFTER_APPEND
            return E.NONE
        return None


class DelayedProduce(DelayedOperation):
    """An acks=all Produce (or coordinator write) waiting for its partitions' high watermarks."""

    def __init__(self, waits: list[_ProduceWait], timeout_ms: int,
                 complete: Callable[[list[_ProduceWait]], None]) -> None:
        super().__init__(timeout_ms)
        self.waits = waits
        self._complete = complete

    def try_complete(self) -> bool:
        if all(w.entry["error_code"] != E.NONE or w.status() is not None for w in self.waits):
            return self.force_complete()
        return False

    def on_complete(self) -> None:
        for w in self.waits:
            if w.entry["error_code"] == E.NONE:
                status = w.status()
                w.entry["error_code"] = E.REQUEST_TIMED_OUT if status is None else status
                if w.entry["error_code"] != E.NONE:
                    w.entry["base_offset"] = -1
        self._complete(self.waits)


def produce_verification_error(code: int, produce_version: int) -> int:
    """The Produce error for a failed check with the transaction coordinator (Kafka's
    ``AddPartitionsToTxnManager``): coordinator trouble is retriable (NOT_ENOUGH_REPLICAS), a fenced
    producer INVALID_PRODUCER_EPOCH, a partition outside the transaction TRANSACTION_ABORTABLE for
    clients that know it (Produce v11+) and INVALID_TXN_STATE for older ones."""
    if code in (E.NOT_COORDINATOR, E.COORDINATOR_NOT_AVAILABLE, E.COORDINATOR_LOAD_IN_PROGRESS,
                E.CONCURRENT_TRANSACTIONS, E.REQUEST_TIMED_OUT, E.NETWORK_EXCEPTION):
        return E.NOT_ENOUGH_REPLICAS
    if code == E.PRODUCER_FENCED:
        return E.INVALID_PRODUCER_EPOCH
    if code == E.TRANSACTION_ABORTABLE and produce_version < 11:
        return E.INVALID_TXN_STATE
    return code


@dataclass(frozen=True, slots=True)
class ReplicaSettings:
    """What the replica manager reads of the broker settings (none of them dynamic)."""

    #: ``replica.lag.time.max.ms``: a follower behind for this long leaves the ISR
    lag_time_max_ms: int
    #: ``fetch.purgatory.purge.interval.requests``
    purge_interval_requests: int
    #: ``fetch.max.bytes``: the most record data one Fetch response carries
    fetch_max_bytes: int
    #: ``message.max.decompressed.bytes``: the most a produced batch may inflate to when recompressed
    max_decompressed_bytes: int
    #: ``replica.selector.class`` (KIP-392): None/"" for leaders only
    replica_selector: str | None = None
    #: ``controlled.shutdown.timeout.ms``: how long a leadership handover waits for followers
    handover_timeout_ms: int = 5000


class ReplicaManager:
    def __init__(self, *, local_id: int, settings: ReplicaSettings, logs: LogManager, metrics: BrokerMetrics,
                 timer: WheelTimer, metadata: MetadataService, fetchers: ReplicaFetcherManager,
                 leader_quota: RateQuota | None = None) -> None:
        self.local_id = local_id
        self.settings = settings
        self.logs = logs
        self.metrics = metrics
        self.timer = timer
        self.metadata = metadata
        self.image: MetadataImage = metadata.image
        self.fetchers = fetchers
        # a follower's new records (and high watermark) answer the consumer fetches parked on it (KIP-392)
        fetchers.on_follower_progress = lambda p: self.fetch_purgatory.check_and_complete((p.topic, p.partition))
        self.partitions: dict[TopicPartition, Partition] = {}
        self._listeners: list[LeadershipListener] = []
        clock = lambda: int(timer.now_ms())  # noqa: E731
        purge = settings.purge_interval_requests
        self.fetch_purgatory = DelayedOperationPurgatory("fetch", schedule=timer.call_at_ms, clock=clock,
                                                         purge_interval=purge)
        self.produce_purgatory = DelayedOperationPurgatory("produce", schedule=timer.call_at_ms, clock=clock,
                                                           purge_interval=purge)
        self._isr_task: asyncio.Task[None] | None = None
        #: set on follower progress and metadata changes while leadership is being handed over
        self._progress: set[asyncio.Event] = set()
        #: partitions whose leadership a reassignment is moving off this broker
        self._moving: dict[TopicPartition, asyncio.Task[int]] = {}
        self._alter_tasks: set[asyncio.Task[None]] = set()
        #: bytes sent to followers of throttled partitions (``leader.replication.throttled.rate``)
        self.leader_quota = leader_quota if leader_quota is not None else RateQuota(lambda: UNLIMITED)
        #: checks transactional batches with their transaction coordinator (set by the composition root)
        self.txn_verifier: TxnVerifier | None = None

    def add_leadership_listener(self, fn: LeadershipListener) -> None:
        """``fn(topic, partition, is_leader, leader_epoch)`` on every role change of a hosted partition."""
        self._listeners.append(fn)

    def start(self) -> None:
        self._isr_task = asyncio.ensure_future(self._isr_loop())

    async def stop(self) -> None:
        if self._isr_task is not None:
            self._isr_task.cancel()
        for task in list(self._alter_tasks):
            task.cancel()
        await self.fetchers.close()

    # -- following the metadata ------------------------------------------------------
    def on_metadata(self, delta: MetadataDelta, image: MetadataImage) -> None:
        for name, topic_id in delta.topics_deleted.items():
            self._remove_all([tp for tp, p in self.partitions.items() if tp[0] == name and p.topic_id == topic_id])
        touched: set[TopicPartition] = set(delta.partitions_changed)
        for name in delta.topics_created | delta.topics_changed:
            t = image.topic(name)
            if t is not None:
                touched.update((name, p) for p in t.partitions)
                if any(tp[0] == name for tp in self.partitions):
                    self.logs.set_topic_configs(name, t.configs)
        if delta.full or self.local_id in delta.brokers_added:
            # (a new incarnation of this broker: its leaderships of an earlier one are not followed)
            touched.update((p.topic, p.partition) for p in image.partitions())
        if delta.full:
            for tp in list(self.partitions):
                if image.partition(*tp) is None:
                    self._remove(tp, delete=False)
            for tp in list(self.logs.hosted()):
                if tp not in touched and image.topic(tp[0]) is None:
                    self.logs.set_aside(*tp)
        now = _now_ms()
        for tp in sorted(touched):
            self._apply_partition(image, tp, now)
        for broker in delta.brokers_removed:
            self.fetchers.leader_gone(broker)
        for event in self._progress:
            event.set()
        self._reassignment_leader_moves()

    def _apply_partition(self, image: MetadataImage, tp: TopicPartition, now: int) -> None:
        pimg = image.partition(*tp)
        timg = image.topic(tp[0])
        if pimg is None or timg is None:
            return
        partition = self.partitions.get(tp)
        if self.local_id not in pimg.replicas:
            if partition is not None:
                self._remove(tp, delete=True)
            elif self.logs.topic_id_of(*tp) is not None:
                self.logs.delete_log(*tp)
            return
        if partition is not None and partition.topic_id != timg.topic_id:
            self._remove(tp, delete=True)
            partition = None
        if partition is None:
            plog = self.logs.ensure_log(tp[0], tp[1], timg.topic_id, timg.configs)
            partition = Partition(tp[0], tp[1], timg.topic_id, self.local_id, plog)
            self.partitions[tp] = partition
        partition.leader_throttled = throttled(timg.configs.get("leader.replication.throttled.replicas"), tp[1],
                                               self.local_id)
        partition.follower_throttled = throttled(timg.configs.get("follower.replication.throttled.replicas"),
                                                 tp[1], self.local_id)
        role = partition.apply_record(pimg.record, pimg.replicas, pimg.mod_revision, now,
                                      self.metadata.broker_epoch)
        if role == "leader":
            self.fetchers.unfollow(tp)
            log.log(logging.DEBUG if is_internal_topic(tp[0]) else logging.INFO, "%s-%d: leader in epoch %d, ISR %s",
                    tp[0], tp[1], partition.leader_epoch, list(partition.isr))
            self._notify(tp, True, partition.leader_epoch)
        elif role == "follower":
            self.fetchers.follow(partition)
            log.log(logging.DEBUG if is_internal_topic(tp[0]) else logging.INFO, "%s-%d: follower of %d in epoch %d",
                    tp[0], tp[1], partition.leader, partition.leader_epoch)
            self._notify(tp, False, partition.leader_epoch)
        if partition.is_leader:
            partition.maybe_advance_high_watermark()
        self._wake(tp)

    def _notify(self, tp: TopicPartition, is_leader: bool, epoch: int) -> None:
        for fn in self._listeners:
            try:
                fn(tp[0], tp[1], is_leader, epoch)
            except Exception:
                log.exception("leadership listener failed for %s-%d", *tp)

    def _remove(self, tp: TopicPartition, *, delete: bool) -> None:
        self._remove_all([tp], delete=delete)

    def _remove_all(self, tps: list[TopicPartition], *, delete: bool = True) -> None:
        """Stop hosting ``tps``: all of them first, then answer what was parked on them (a fetch
        parked on several sees them all gone), then drop their logs."""
        for tp in tps:
            partition = self.partitions.pop(tp, None)
            self.fetchers.unfollow(tp)
            if partition is not None:
                partition.leader = -2  # neither leader nor follower: parked requests answer NOT_LEADER
                self._notify(tp, False, partition.leader_epoch)
        self.partitions_removed(tps)
        if delete:
            for tp in tps:
                self.logs.delete_log(*tp)

    def partitions_removed(self, keys: Iterable[Hashable]) -> None:
        """Partitions went away (topic deleted, replica moved): answer the requests parked on them at
        once (they now see the error) and drop their watch lists."""
        for purgatory in (self.produce_purgatory, self.fetch_purgatory):
            for key in keys:
                purgatory.check_and_complete(key)
                purgatory.cancel_for_key(key)

    def _wake(self, tp: TopicPartition) -> None:
        """Something changed for ``tp`` (data, high watermark, role): let parked requests look again."""
        self.produce_purgatory.check_and_complete(tp)
        self.fetch_purgatory.check_and_complete(tp)

    # -- ISR maintenance -------------------------------------------------------------
    async def _isr_loop(self) -> None:
        interval = max(0.05, self.settings.lag_time_max_ms / 2000)
        while True:
            await asyncio.sleep(interval)
            now = _now_ms()
            for partition in list(self.partitions.values()):
                if partition.is_leader:
                    self._maybe_change_isr(partition, now)

    def _broker_epochs(self) -> dict[int, int]:
        return {node: reg.epoch for node, reg in self.image.brokers.items()}

    def _maybe_change_isr(self, partition: Partition, now: int) -> None:
        if partition.handing_over:
            return  # the handover writes the partition's last record from here
        epochs = self._broker_epochs()
        new_isr = partition.isr_change(now, self.settings.lag_time_max_ms, epochs)
        if new_isr is None:
            return
        partition.pending_isr = new_isr
        member_epochs = tuple(partition.joining_epoch(r, epochs) for r in new_isr)
        record = dataclasses.replace(partition.record, isr=new_isr, isr_epochs=member_epochs,
                                     partition_epoch=partition.partition_epoch + 1, replicas=partition.replicas)
        joining = {r: e for r, e in zip(new_isr, member_epochs, strict=True) if r not in partition.isr}
        shrink = len(new_isr) < len(partition.isr)
        task = asyncio.ensure_future(self._alter_isr(partition, partition.record_revision, record, shrink, joining))
        self._alter_tasks.add(task)
        task.add_done_callback(self._alter_tasks.discard)

    async def _alter_isr(self, partition: Partition, revision: int, record: PartitionRecord, shrink: bool,
                         joining: dict[int, int]) -> None:
        before = list(partition.isr)
        try:
            ok = await self.metadata.alter_partition(partition.topic, partition.partition, revision, record,
                                                     joining)
        except KVError as exc:
            log.warning("%s-%d: ISR change to %s not written: %s", partition.topic, partition.partition,
                        list(record.isr), exc)
            ok = False
        if ok:
            (self.metrics.isr_shrinks if shrink else self.metrics.isr_expands).inc()
            log.info("%s-%d: ISR %s -> %s", partition.topic, partition.partition, before, list(record.isr))
        elif partition.pending_isr == record.isr:
            partition.pending_isr = None  # someone else changed the partition; the image will tell

    # -- moving leadership without losing anything (controlled shutdown, reassignment) --------
    def _successors(self, p: Partition, among: Iterable[int] | None = None) -> list[int]:
        """Who may take ``p`` over from this broker: ISR members alive as the incarnation that joined,
        not shutting down themselves, in replica order (only those ``among``, when given)."""
        image = self.image
        allowed = set(p.replicas if among is None else among)
        return [r for r in p.replicas
                if r != self.local_id and r in allowed and r in p.isr and image.broker_epoch(r) >= 0
                and p.isr_epochs.get(r, -1) in (-1, image.broker_epoch(r)) and not image.is_shutting_down(r)]

    def _shutdown_record(self, p: Partition, successor: int) -> PartitionRecord:
        """Controlled shutdown: ``successor`` leads, this broker leaves the ISR."""
        keep = [i for i, r in enumerate(p.record.isr) if r != self.local_id]
        rec = p.record
        return dataclasses.replace(rec, leader=successor, leader_epoch=rec.leader_epoch + 1,
                                   isr=tuple(rec.isr[i] for i in keep), partition_epoch=rec.partition_epoch + 1,
                                   isr_epochs=tuple(rec.isr_epochs[i] for i in keep) if rec.isr_epochs else (),
                                   replicas=p.replicas)

    async def hand_over_leadership(self, timeout_s: float) -> int:
        """Controlled shutdown: move every leadership this broker holds to an in-sync follower that has
        its whole log (see :meth:`_move_leadership`).  A partition no other in-sync replica can take
        stays here (and goes offline when the broker leaves).  Returns how many leaderships are left."""
        return await self._move_leadership(lambda p: self._successors(p) if p.is_leader else None,
                                           self._shutdown_record, timeout_s, "controlled shutdown")

    def _reassignment_leader_moves(self) -> None:
        """Partitions this broker leads that a reassignment removes it from: once every target replica
        is in sync, hand leadership to one of them and complete the reassignment in the same write."""
        for tp, p in self.partitions.items():
            rec = p.record
            if (not p.is_leader or self.local_id not in rec.removing or tp in self._moving
                    or reassignment.completed_record(self.image, rec) is None):
                continue

            def select(q: Partition, tp: TopicPartition = tp) -> list[int] | None:
                if (q.topic, q.partition) != tp or not q.is_leader or self.local_id not in q.record.removing:
                    return None
                return self._successors(q, among=q.record.target)

            def record(q: Partition, successor: int) -> PartitionRecord:
                done = reassignment.completed_record(self.image, q.record, leader=successor)
                return done if done is not None else self._shutdown_record(q, successor)

            task = asyncio.ensure_future(self._move_leadership(select, record, self.settings.handover_timeout_ms
                                                               / 1000, "reassignment"))
            self._moving[tp] = task
            task.add_done_callback(lambda _t, tp=tp: self._moving.pop(tp, None))

    async def _move_leadership(self, select: Callable[[Partition], list[int] | None],
                               make_record: Callable[[Partition, int], PartitionRecord], timeout_s: float,
                               reason: str) -> int:
        """Move the leadership of every partition ``select`` names (giving the replicas that may take
        it) to one that has this leader's whole log.  Appends to them stop first
        (NOT_LEADER_OR_FOLLOWER), so the log end stays put while the followers fetch the rest; a
        partition moves as soon as all its candidates have everything (acks=all requests parked
        here are then answered), or, after half of ``timeout_s``, as soon as one has; at the end, to
        the candidate that has most.  ``make_record(partition, successor)`` is the record written
        (compare-and-set, :meth:`MetadataService.hand_over`).  Returns how many are left."""
        loop = asyncio.get_running_loop()
        start = loop.time()
        deadline = start + timeout_s
        event = asyncio.Event()
        self._progress.add(event)
        written: dict[TopicPartition, int] = {}  # partition -> the record revision a move was written over
        frozen: list[Partition] = []
        try:
            while True:
                event.clear()
                now = loop.time()
                final = now >= deadline
                patient = now < start + timeout_s / 2
                moves: list[tuple[PartitionChange, int, int]] = []
                left = 0
                for tp, p in self.partitions.items():
                    successors = select(p)
                    if not successors:
                        continue  # not moving, or nobody can take it: it stays writable
                    left += 1
                    if not p.handing_over:
                        p.handing_over = True
                        frozen.append(p)
                        self._wake(tp)
                    if written.get(tp) == p.record_revision:
                        continue  # written; waiting for the image to bring it back
                    caught_up = [r for r in successors if p.caught_up(r)]
                    successor = None
                    if caught_up and (not patient or len(caught_up) == len(successors)):
                        successor = caught_up[0]
                    elif final:
                        successor = max(successors, key=lambda r: p.followers[r].log_end_offset
                                        if r in p.followers else -1)
                    if successor is not None:
                        change = PartitionChange(p.topic, p.partition, p.record_revision, make_record(p, successor),
                                                 reason)
                        moves.append((change, successor, self.image.broker_epoch(successor)))
                if not left or (final and not moves):
                    return left
                if moves:
                    for change, _, _ in moves:
                        written[(change.topic, change.partition)] = change.expected_revision
                    try:
                        moved = await self.metadata.hand_over(moves)
                    except KVError as exc:
                        log.warning("%s: handing leadership over failed: %s", reason, exc)
                        moved = set()
                    for change, _, _ in moves:
                        if (change.topic, change.partition) not in moved:
                            written.pop((change.topic, change.partition), None)
                    if final and not moved:
                        return left
                    if moved:
                        continue
                try:
                    await asyncio.wait_for(event.wait(), max(0.0, min(0.1, deadline - loop.time())) or 0.01)
                except TimeoutError:
                    pass
        finally:
            self._progress.discard(event)
            for p in frozen:
                if p.handing_over and p.is_leader and select(p) is None:
                    p.handing_over = False  # it no longer needs to move: writable again

    def answer_waiting_fetches(self) -> None:
        """Shutting down: answer every parked Fetch now, with what it has."""
        for op in self.fetch_purgatory.shutdown():
            op.force_complete()

    # -- produce ---------------------------------------------------------------------
    def produce(self, version: int, req: Obj) -> Obj | Awaitable[Obj]:
        """Append every partition of a Produce request; the response body now, or (acks=all, or a
        transactional producer's first batch in a partition) an awaitable of it."""
        if req["transactional_id"] is not None:  # item access: the request path avoids Obj's attribute fallback
            return self._produce_transactional(version, req)
        return self._produce(version, req)

    def _produce(self, version: int, req: Obj, guards: dict[TopicPartition, VerificationGuard] | None = None,
                 refused: dict[TopicPartition, int] | None = None) -> Obj | asyncio.Future[Obj]:
        """Append every partition of a Produce; ``guards``: verification guards of transactional batches,
        ``refused``: partitions answered with an error instead (their verification failed)."""
        acks = req["acks"]
        bad_acks = acks not in (0, 1, -1)
        responses = []
        waits: list[_ProduceWait] = []
        for topic in req["topic_data"]:
            name = topic["name"]
            internal = is_internal_topic(name)
            parts = []
            for pd in topic["partition_data"]:
                index = pd["index"]
                if bad_acks:
                    entry = self._produce_error(index, E.INVALID_REQUIRED_ACKS)
                elif internal:
                    # only the coordinators write their topics: a forged record would be replayed when loading
                    entry = self._produce_error(index, E.INVALID_TOPIC_EXCEPTION,
                                                f"Cannot append to internal topic {name}")
                elif refused is not None and (name, index) in refused:
                    entry = self._produce_error(index, refused[(name, index)])
                else:
                    guard = guards.get((name, index)) if guards is not None else None
                    entry = self._append_partition(name, index, pd["records"], version, acks, waits, guard)
                parts.append(entry)
            responses.append({"name": name, "partition_responses": parts})
        body = Obj(responses=responses, throttle_time_ms=0)
        if not waits:
            return body
        future: asyncio.Future[Obj] = asyncio.get_running_loop().create_future()

        def done(_: list[_ProduceWait]) -> None:
            if not future.done():
                future.set_result(body)

        op = DelayedProduce(waits, max(0, min(req.timeout_ms, 300_000)), done)
        self.produce_purgatory.try_complete_else_watch(op, {(w.partition.topic, w.partition.partition)
                                                            for w in waits})
        return future

    async def _produce_transactional(self, version: int, req: Obj) -> Obj:
        """A transactional producer's Produce: the batches that would open its transaction in a partition
        are checked with its transaction coordinator first (KIP-890; Produce v12+ adds the partition
        to the transaction instead), then everything is appended as usual."""
        guards: dict[TopicPartition, VerificationGuard] = {}
        refused: dict[TopicPartition, int] = {}
        producer: tuple[int, int] | None = None
        for topic in req.topic_data:
            for pd in topic.partition_data:
                tp = (topic.name, pd.index)
                try:
                    header = parse_batch_header(pd.records or b"", 0)
                except CorruptRecordError:
                    continue  # answered by the append
                if not header.is_transactional or header.producer_id < 0:
                    continue
                if producer is None:
                    producer = (header.producer_id, header.producer_epoch)
                elif producer != (header.producer_id, header.producer_epoch):
                    refused[tp] = E.INVALID_PRODUCER_ID_MAPPING  # one producer per request
                    continue
                p = self.partitions.get(tp)
                if p is None or not p.is_leader or p.log.producer_state.in_transaction(header.producer_id,
                                                                                        header.producer_epoch):
                    continue  # not ours (answered by the append), or its transaction is open here
                guards[tp] = p.log.producer_state.start_verification(header.producer_id)
        verifier = self.txn_verifier
        if guards and producer is not None:
            if verifier is None:
                codes = dict.fromkeys(guards, int(E.NOT_ENOUGH_REPLICAS))
            else:
                codes = await verifier.verify(req.transactional_id, producer[0], producer[1], list(guards),
                                              add=version >= 12)
            for tp, code in codes.items():
                if code != E.NONE:
                    guards.pop(tp, None)
                    refused[tp] = produce_verification_error(code, version)
        result = self._produce(version, req, guards, refused)
        if isinstance(result, asyncio.Future):
            return await result
        return result

    @staticmethod
    def _produce_error(index: int, code: int, message: str | None = None) -> dict[str, Any]:
        return {"index": index, "error_code": code, "base_offset": -1, "log_append_time_ms": -1,
                "log_start_offset": -1, "record_errors": [], "error_message": message}

    def leader_partition(self, topic: str, partition: int) -> Partition:
        """The hosted partition if this broker leads it; raises a LogError mapping to the right code."""
        p = self.partitions.get((topic, partition))
        if p is not None and p.is_leader:
            return p
        timg = self.image.topic(topic)
        if timg is None or partition >= timg.partition_count or partition < 0:
            raise UnknownTopicOrPartitionError(f"unknown partition {topic}-{partition}")
        raise _NotLeader(f"broker {self.local_id} does not lead {topic}-{partition}")

    def writable_partition(self, topic: str, partition: int, *, prove: bool = False) -> Partition:
        """The partition to write to as leader: as :meth:`leader_partition`, and NOT_LEADER_OR_FOLLOWER
        while the leadership is being handed over or, with ``prove`` (a write acknowledged before it
        is replicated), cannot be proven (see the module docstring)."""
        p = self.leader_partition(topic, partition)
        if p.handing_over:
            raise _NotLeader(f"broker {self.local_id} is handing {topic}-{partition} over (shutting down)")
        if prove and not self.metadata.may_lead():
            raise _NotLeader(f"broker {self.local_id} cannot prove it still leads {topic}-{partition}")
        return p

    def _append_partition(self, topic: str, partition: int, records: memoryview | bytes | None, version: int, acks: int,
                          waits: list[_ProduceWait], guard: VerificationGuard | None = None) -> dict[str, Any]:
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
            p = self.writable_partition(topic, partition, prove=acks != -1)
            plog = p.log
            min_isr = plog.config.min_insync_replicas
            if acks == -1 and len(p.isr) < min_isr:
                # Kafka's Partition.appendRecordsToLeader: nothing is appended
                return self._produce_error(partition, E.NOT_ENOUGH_REPLICAS,
                                           f"The size of the current ISR {list(p.isr)} is insufficient to satisfy "
                                           f"the min.isr requirement of {min_isr} for partition {topic}-{partition}")
            config = plog.config
            if header.size > config.max_message_bytes:  # as produced (the append checks what is stored)
                return self._produce_error(partition, E.MESSAGE_TOO_LARGE,
                                           f"The request included a message larger than the max message size "
                                           f"the server will accept ({config.max_message_bytes} bytes).")
            inflate = self.settings.max_decompressed_bytes
            batch = recompress_for_topic(records, header, config.compression_type, max_decompressed_size=inflate,
                                         level=compression_level(config, target_codec(config.compression_type)))
            check_keys(batch, config, f"{topic}-{partition}", max_decompressed_size=inflate)
            try:
                result = plog.append(batch, verification=guard, header=header if batch is records else None)
            except InvalidTimestampError as exc:
                raise with_timestamp_errors(exc, batch, config, plog.clock(), max_decompressed_size=inflate) from None
        except LogError as exc:
            entry = self._produce_error(partition, exc.error_code, exc.detail or None)
            if isinstance(exc, RecordValidationError):
                entry["record_errors"] = [{"batch_index": i, "batch_index_error_message": m}
                                          for i, m in exc.record_errors]
            return entry
        self.metrics.bytes_in(topic, len(records), header.records_count)
        self._after_leader_append(p)
        entry = {"index": partition, "error_code": 0, "base_offset": result.base_offset,
                 "log_append_time_ms": result.log_append_time, "log_start_offset": result.log_start_offset,
                 "record_errors": [], "error_message": None}
        if acks == -1 and plog.high_watermark <= result.last_offset:
            waits.append(_ProduceWait(p, result.last_offset + 1, entry))
        return entry

    def _after_leader_append(self, p: Partition) -> None:
        p.maybe_advance_high_watermark()
        self.fetch_purgatory.check_and_complete((p.topic, p.partition))

    def append_to_leader(self, topic: str, partition: int, batch: bytes | bytearray,
                         timeout_ms: int) -> Awaitable[tuple[int, int]]:
        """A coordinator's write: append to the local leader, wait until replicated (acks=all).

        Resolves to ``(error_code, last_offset)``; error codes are the produce path's.
        """
        return self._leader_write(topic, partition, timeout_ms,
                                  lambda plog: plog.append(bytearray(batch), coordinator=True))

    def write_marker(self, topic: str, partition: int, producer_id: int, producer_epoch: int, commit: bool,
                     coordinator_epoch: int, timeout_ms: int) -> Awaitable[tuple[int, int]]:
        """A COMMIT/ABORT marker on the local leader (WriteTxnMarkers, or a coordinator ending a
        transaction in its own partition), waiting until replicated like any acks=all write."""
        return self._leader_write(topic, partition, timeout_ms,
                                  lambda plog: plog.append_marker(producer_id, producer_epoch, commit,
                                                                  coordinator_epoch))

    def _leader_write(self, topic: str, partition: int, timeout_ms: int,
                      append: Callable[[PartitionLog], AppendResult]) -> Awaitable[tuple[int, int]]:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[tuple[int, int]] = loop.create_future()
        try:
            p = self.writable_partition(topic, partition)
            if len(p.isr) < p.log.config.min_insync_replicas:
                future.set_result((E.NOT_ENOUGH_REPLICAS, -1))
                return future
            result = append(p.log)
        except LogError as exc:
            future.set_result((exc.error_code, -1))
            return future
        self._after_leader_append(p)
        entry = {"error_code": E.NONE, "base_offset": result.base_offset}
        wait = _ProduceWait(p, result.last_offset + 1, entry)

        def done(_: list[_ProduceWait]) -> None:
            if not future.done():
                future.set_result((entry["error_code"], result.last_offset))

        op = DelayedProduce([wait], timeout_ms, done)
        self.produce_purgatory.try_complete_else_watch(op, [(topic, partition)])
        return future

    # -- fetch -----------------------------------------------------------------------
    @staticmethod
    def replica_id_of(version: int, req: Obj) -> int:
        if version >= 15:
            state = req.get("replica_state")
            return state.replica_id if state is not None else -1
        return req.replica_id

    def fetch(self, version: int, req: Obj, listener: str) -> Obj | asyncio.Future[Obj]:
        """A Fetch request (a consumer's, or a follower's with its replica id): the response body now,
        or a future of it when it waits for ``min_bytes`` (up to ``max_wait_ms``).  Leaders named in
        it are given with their addresses on ``listener``."""
        if version >= 7 and (req.session_id != 0 or req.session_epoch > 0):
            return Obj(throttle_time_ms=0, error_code=E.FETCH_SESSION_ID_NOT_FOUND, session_id=0, responses=[])
        replica_id = self.replica_id_of(version, req)
        image = self.image
        parts: list[_FetchPartition] = []
        for index, topic in enumerate(req.topics):
            name = topic.topic if version < 13 else image.topic_name(topic.topic_id)
            for p in topic.partitions:
                parts.append(_FetchPartition(name, topic.get("topic_id"), p.partition, p.fetch_offset,
                                             p.partition_max_bytes, index, p.get("current_leader_epoch", -1),
                                             p.get("last_fetched_epoch", -1)))
        if replica_id >= 0:
            state = req.get("replica_state") if version >= 15 else None
            self._record_follower_fetch(replica_id, parts, state.replica_epoch if state is not None else -1)
        body, ready = self.read_fetch(version, req, parts, replica_id, listener)
        min_bytes = max(1, min(req.min_bytes, req.max_bytes))
        if ready or req.max_wait_ms <= 0 or not parts or self._fetched_bytes(body) >= min_bytes:
            return body
        self._release_records(body)  # not sent: the fetch is answered by a fresh read later
        op = DelayedFetch(self, version, req, parts, min_bytes, min(req.max_wait_ms, 300_000), replica_id, listener)
        keys = [(p.name, p.partition) for p in parts if p.name is not None]
        self.metrics.waiting_fetches.inc()
        op.future.add_done_callback(lambda _f: self.metrics.waiting_fetches.dec())
        self.fetch_purgatory.try_complete_else_watch(op, keys)
        return op.future

    def _record_follower_fetch(self, replica_id: int, parts: list[_FetchPartition], broker_epoch: int = -1) -> None:
        if 0 <= broker_epoch < self.image.broker_epoch(replica_id):
            return  # an earlier incarnation of that broker (KIP-380): its progress says nothing now
        now = _now_ms()
        for fp in parts:
            if fp.name is None:
                continue
            p = self.partitions.get((fp.name, fp.partition))
            if p is None or not p.is_leader or p.check_leader_epoch(fp.current_leader_epoch) != E.NONE:
                continue
            if self._diverging(p, fp) is not None:
                continue
            moved = p.update_follower(replica_id, fp.fetch_offset, now, broker_epoch)
            if moved:
                self._wake((p.topic, p.partition))
            for event in self._progress:
                event.set()
            if replica_id not in p.isr:
                self._maybe_change_isr(p, now)

    @staticmethod
    def _diverging(p: Partition, fp: _FetchPartition) -> tuple[int, int] | None:
        """KIP-595: (epoch, end offset) when the follower's log diverges from ours at its fetch position."""
        if fp.last_fetched_epoch < 0:
            return None
        epoch, end = p.log.epoch_cache.end_offset_for(fp.last_fetched_epoch, p.log.log_end_offset)
        if epoch < fp.last_fetched_epoch or end < fp.fetch_offset:
            return epoch, end
        return None

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

    def _fetchable(self, fp: _FetchPartition, replica_id: int,
                   from_follower: bool = False) -> tuple[Partition | None, int]:
        """The partition to read and the error to answer instead (NONE when readable).
        ``from_follower``: a consumer that sent client metadata (Fetch v11+) may read a follower
        (KIP-392), up to the high watermark the follower knows."""
        if fp.name is None:
            return None, E.UNKNOWN_TOPIC_ID
        p = self.partitions.get((fp.name, fp.partition))
        if p is not None and from_follower and replica_id < 0 and not p.is_leader and p.leader >= 0:
            return p, p.check_leader_epoch(fp.current_leader_epoch)
        if p is None or not p.is_leader:
            timg = self.image.topic(fp.name)
            if timg is None or not 0 <= fp.partition < timg.partition_count:
                return None, E.UNKNOWN_TOPIC_OR_PARTITION
            return None, E.NOT_LEADER_OR_FOLLOWER
        code = p.check_leader_epoch(fp.current_leader_epoch)
        return p, code

    def available_bytes(self, parts: list[_FetchPartition], replica_id: int, isolation: int = 0,
                        client: tuple[str, bool] | None = None) -> int:
        """Bytes a fetch would return now (errors, divergence and a preferred read replica elsewhere
        count as 'ready': answered at once).  ``client``: a consumer's rack and whether it sent client
        metadata (Fetch v11+)."""
        total = 0
        for fp in parts:
            p, code = self._fetchable(fp, replica_id, client is not None and client[1])
            if p is None or code != E.NONE:
                return 1 << 30
            if client is not None and self._preferred_read_replica(p, fp.fetch_offset, client[0]) != self.local_id:
                return 1 << 30
            plog = p.log
            if fp.fetch_offset < plog.log_start_offset or fp.fetch_offset > plog.log_end_offset:
                return 1 << 30
            if replica_id >= 0 and self._diverging(p, fp) is not None:
                return 1 << 30
            if self._held_back(p, replica_id):
                continue
            limit = self._fetch_limit(plog, replica_id, isolation)
            if fp.fetch_offset < limit:
                try:
                    total += plog.read(fp.fetch_offset, max(fp.max_bytes, 1), True, max_offset=limit).size
                except LogError:
                    return 1 << 30
        return total

    def client_metadata(self, version: int, req: Obj, replica_id: int) -> tuple[str, bool] | None:
        """A consumer's rack and that it sent client metadata (Fetch v11+), which lets it read from
        followers; None for followers and older consumers (leader only)."""
        if replica_id >= 0 or version < 11:
            return None
        return req.get("rack_id") or "", True

    def _preferred_read_replica(self, p: Partition, fetch_offset: int, rack: str) -> int:
        """Where a consumer in ``rack`` should read ``p`` (Kafka's ``RackAwareReplicaSelector`` when
        ``replica.selector.class`` names it): this broker unless it leads ``p`` and the leader is in
        another rack while an in-sync replica in the consumer's rack has the offset — then the most
        caught-up of those.  A follower always serves what it is asked (it was chosen)."""
        if not p.is_leader or not rack or not self.settings.replica_selector:
            return self.local_id
        image = self.image
        leader_rack = image.brokers[self.local_id].rack if self.local_id in image.brokers else None
        if leader_rack == rack:
            return self.local_id
        best, best_end = self.local_id, -1
        for r in p.isr:
            state = p.followers.get(r)
            reg = image.brokers.get(r)
            if (r == self.local_id or state is None or reg is None or reg.rack != rack
                    or not p.log.log_start_offset <= fetch_offset <= state.log_end_offset):
                continue
            if state.log_end_offset > best_end:
                best, best_end = r, state.log_end_offset
        return best

    def _held_back(self, p: Partition, replica_id: int) -> bool:
        """A follower's fetch of a throttled partition while the leader's quota is exceeded and the
        follower is not in sync: it gets nothing this time."""
        return self._throttled(p, replica_id) and self.leader_quota.exceeded()

    @staticmethod
    def _throttled(p: Partition, replica_id: int) -> bool:
        """A follower's fetch that counts against the leader's quota: a throttled partition, out of sync."""
        return p.leader_throttled and replica_id not in p.isr

    @staticmethod
    def _fetch_limit(plog: PartitionLog, replica_id: int, isolation: int) -> int:
        """Where a fetch stops: followers at the log end, read_committed consumers at the last stable
        offset, others at the high watermark."""
        if replica_id >= 0:
            return plog.log_end_offset
        return plog.last_stable_offset if isolation == 1 else plog.high_watermark

    def current_leader(self, topic: str, partition: int) -> dict[str, int]:
        """The partition's leader and epoch as the image has them (what a NOT_LEADER_OR_FOLLOWER answer names)."""
        pimg = self.image.partition(topic, partition)
        if pimg is None:
            return {"leader_id": -1, "leader_epoch": -1}
        return {"leader_id": pimg.leader, "leader_epoch": pimg.leader_epoch}

    def read_fetch(self, version: int, req: Obj, parts: list[_FetchPartition],
                   replica_id: int = -1, listener: str | None = None) -> tuple[Obj, bool]:
        """Read every requested partition now.  Returns (response body, must-answer-now); leaders moved
        elsewhere are named with their address on ``listener`` (the one the client came in on)."""
        remaining = max(0, min(req.max_bytes, self.settings.fetch_max_bytes))
        isolation = req.get("isolation_level", 0) or 0
        client = self.client_metadata(version, req, replica_id)
        min_one = True
        urgent = False
        topics: list[dict[str, Any]] = []
        by_index: dict[int, dict[str, Any]] = {}
        leaders: set[int] = set()
        for fp in parts:
            tentry = by_index.get(fp.topic_index)
            if tentry is None:
                tentry = {"topic": fp.name or "", "topic_id": fp.topic_id, "partitions": []}
                by_index[fp.topic_index] = tentry
                topics.append(tentry)
            entry: dict[str, Any] = {"partition_index": fp.partition, "error_code": 0, "high_watermark": -1,
                                     "last_stable_offset": -1, "log_start_offset": -1,
                                     "aborted_transactions": None, "preferred_read_replica": -1, "records": b""}
            tentry["partitions"].append(entry)
            p, code = self._fetchable(fp, replica_id, client is not None and client[1])
            if code == E.UNKNOWN_TOPIC_OR_PARTITION and version >= 13:
                code = E.UNKNOWN_TOPIC_ID
            if code != E.NONE or p is None:
                entry["error_code"] = code
                if code in (E.NOT_LEADER_OR_FOLLOWER, E.FENCED_LEADER_EPOCH) and fp.name is not None:
                    current = self.current_leader(fp.name, fp.partition)
                    entry["current_leader"] = current
                    if current["leader_id"] >= 0:
                        leaders.add(current["leader_id"])
                urgent = True
                continue
            plog: PartitionLog = p.log
            entry["high_watermark"] = plog.high_watermark
            entry["last_stable_offset"] = plog.last_stable_offset
            entry["log_start_offset"] = plog.log_start_offset
            if replica_id >= 0:
                diverging = self._diverging(p, fp)
                if diverging is not None:
                    entry["diverging_epoch"] = {"epoch": diverging[0], "end_offset": diverging[1]}
                    urgent = True
                    continue
                if self._held_back(p, replica_id):
                    continue  # throttled: no data this time (the follower's fetch waits in purgatory)
            elif client is not None:
                preferred = self._preferred_read_replica(p, fp.fetch_offset, client[0])
                if preferred != self.local_id:
                    entry["preferred_read_replica"] = preferred  # KIP-392: read there, nothing here
                    urgent = True
                    continue
            limit_offset = self._fetch_limit(plog, replica_id, isolation)
            max_bytes = min(fp.max_bytes, remaining)
            if replica_id >= 0 and self._throttled(p, replica_id):
                max_bytes = min(max_bytes, self.leader_quota.allowance())  # a window at a time
            try:
                result = plog.read(fp.fetch_offset, max_bytes, min_one, max_offset=limit_offset)
            except OffsetOutOfRangeError:
                entry["error_code"] = E.OFFSET_OUT_OF_RANGE
                urgent = True
                continue
            except LogError as exc:
                entry["error_code"] = exc.error_code
                urgent = True
                continue
            if isolation == 1 and replica_id < 0:
                entry["aborted_transactions"] = [
                    {"producer_id": t.producer_id, "first_offset": t.first_offset}
                    for t in plog.aborted_transactions(fp.fetch_offset, limit_offset)] if result.slices else []
            region = _records_region(result, self._bytes_out_counter(fp.name or ""))
            if region is not None:
                if replica_id >= 0 and p.leader_throttled:
                    self.leader_quota.record(region.size)
                entry["records"] = region
                remaining = max(0, remaining - region.size)
                min_one = False
        body = Obj(throttle_time_ms=0, error_code=0, session_id=0, responses=topics,
                   node_endpoints=self.node_endpoints(leaders, listener) if version >= 16 else [])
        return body, urgent

    def _bytes_out_counter(self, topic: str) -> Callable[[int], None]:
        """Counts a partition's record bytes once its response has actually been sent."""
        metrics = self.metrics
        return lambda nbytes: metrics.bytes_out(topic, nbytes)

    def node_endpoints(self, nodes: set[int], listener: str | None) -> list[dict[str, Any]]:
        """The addresses (on ``listener``) of the brokers a response names as new leaders."""
        out = []
        for node in sorted(nodes):
            reg = self.image.brokers.get(node)
            ep = (reg.endpoint(listener) or reg.endpoint()) if reg is not None else None
            if reg is not None and ep is not None:
                out.append({"node_id": node, "host": ep.host, "port": ep.port, "rack": reg.rack})
        return out

    # -- observability -----------------------------------------------------------------
    def under_replicated(self) -> list[TopicPartition]:
        return sorted(tp for tp, p in self.partitions.items() if p.under_replicated)

    def leader_count(self) -> int:
        return sum(1 for p in self.partitions.values() if p.is_leader)


class _NotLeader(LogError):
    error_name = "NOT_LEADER_OR_FOLLOWER"
    error_code = 6
