"""SharePartitionManager: ShareFetch (78) and ShareAcknowledge (79) on this broker — the asyncio edge over
its share sessions (:mod:`.sessions`) and the share-partitions of the partitions it leads
(:mod:`.partition`), Kafka's ``SharePartitionManager``.

* **Share-partitions** are created on the first fetch naming them: the share coordinator's state is
  read (ReadShareGroupState with this leader's epoch, through the injected :class:`StatePersister`) and
  the window rebuilt from it (an uninitialised start offset takes the group's
  ``share.auto.offset.reset``).  They go when the leadership of their partition moves, when the share
  coordinator fences this leader (the next fetch reads the state again), and when no session uses them
  and they hold no records.
* **Acquisition** reads whole batches from the log, from the first AVAILABLE offset up to the high
  watermark (the last stable offset for ``share.isolation.level=read_committed``, whose aborted
  transactions are archived), within the request's byte budget; each acquisition's lock is a timer
  on the broker's timing wheel, and its expiry releases what is still held.
* **Acknowledgements** (piggy-backed on ShareFetch, or in ShareAcknowledge) are answered once the share
  coordinator has their new states (WriteShareGroupState); one write per share-partition is in flight
  at a time and the changes queued meanwhile go in the next one.
* **Long polling**: a fetch that acquires nothing waits (up to ``MaxWaitMs``) in the replica manager's
  fetch purgatory under its partitions, woken by appends, high-watermark moves, releases and lock
  expiries.
* A session that ends (epoch -1, or its connection closes) releases every record its member holds.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Awaitable, Callable, Hashable, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from broker.replication.purgatory import DelayedOperation
from protocol.error_codes import ErrorCode
from protocol.primitives import Obj

from .partition import (
    AckBatch,
    Acquired,
    Lock,
    LogBatch,
    ShareLimits,
    SharePartition,
    expand,
)
from .sessions import FINAL_EPOCH, ShareSession, ShareSessionCache

if TYPE_CHECKING:
    from broker.replication.partition import Partition
    from broker.replication.replica_manager import ReplicaManager
    from protocol.timer_service import WheelTimer

log = logging.getLogger("kbroker.share")

__all__ = ["PersistedState", "ShareGroupSettings", "SharePartitionManager", "StatePersister"]

E = ErrorCode
ShareKey = tuple[str, str, int]
#: the share coordinator fenced this leader: its share-partition is read again
_FENCED = (E.FENCED_LEADER_EPOCH, E.FENCED_STATE_EPOCH)


class PersistedState(NamedTuple):
    """A ReadShareGroupState answer for one share-partition."""

    error_code: int
    state_epoch: int = -1
    start_offset: int = -1
    batches: tuple[tuple[int, int, int, int], ...] = ()


class StatePersister(Protocol):
    """How share-partitions reach the share coordinator (its internal APIs, wherever it runs)."""

    async def read_state(self, group_id: str, topic_id: uuid.UUID, partition: int,
                         leader_epoch: int) -> PersistedState: ...

    async def write_state(self, group_id: str, topic_id: uuid.UUID, partition: int, state_epoch: int,
                          leader_epoch: int, start_offset: int, batches: list[tuple[int, int, int, int]]) -> int: ...


@dataclass(frozen=True, slots=True)
class ShareGroupSettings:
    """A group's share settings now (its group configs over the broker's)."""

    limits: ShareLimits
    #: 0 read_uncommitted, 1 read_committed
    isolation: int = 0
    #: ``share.auto.offset.reset``: ("latest" | "earliest", 0) or ("by_duration", ms)
    reset: tuple[str, int] = ("latest", 0)


def persister_error(code: int) -> int:
    """How a share coordinator's error reads to share clients (Kafka's ``SharePartition.fetchPersisterError``)."""
    if code in (E.NOT_COORDINATOR, E.COORDINATOR_NOT_AVAILABLE, E.COORDINATOR_LOAD_IN_PROGRESS,
                E.REQUEST_TIMED_OUT, E.NETWORK_EXCEPTION):
        return E.COORDINATOR_NOT_AVAILABLE
    if code in _FENCED:
        return E.NOT_LEADER_OR_FOLLOWER
    if code in (E.GROUP_ID_NOT_FOUND, E.UNKNOWN_TOPIC_OR_PARTITION):
        return code
    return E.UNKNOWN_SERVER_ERROR


class _Target(NamedTuple):
    """A partition a request names: its share-partition key, topic id, index, and position in the answer."""

    key: ShareKey
    topic_id: uuid.UUID
    partition: int


class DelayedShareFetch(DelayedOperation):
    """A ShareFetch that acquired nothing, waiting until one of its partitions may have records to acquire."""

    def __init__(self, ready: Callable[[], bool], delay_ms: int) -> None:
        super().__init__(delay_ms)
        self.ready = ready
        self.future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.future.add_done_callback(lambda f: f.cancelled() and self.force_complete())

    def try_complete(self) -> bool:
        if self.ready():
            return self.force_complete()
        return False

    def on_complete(self) -> None:
        if not self.future.done():
            self.future.set_result(None)


class SharePartitionManager:
    """See the module doc.  ``settings_of(group_id)`` gives a group's share settings now."""

    def __init__(self, *, replica: ReplicaManager, persister: StatePersister, timer: WheelTimer,
                 settings_of: Callable[[str], ShareGroupSettings], max_sessions: int,
                 fetch_max_bytes: Callable[[], int]) -> None:
        self.replica = replica
        self.persister = persister
        self.timer = timer
        self.settings_of = settings_of
        self.fetch_max_bytes = fetch_max_bytes
        self.sessions = ShareSessionCache(max_sessions)
        self.cache: dict[ShareKey, SharePartition] = {}
        self._loading: dict[ShareKey, asyncio.Future[None]] = {}
        self._tasks: set[asyncio.Future[Any]] = set()
        self._closed = False
        #: counters for metrics (share-partitions that went away keep counting here)
        self.totals = {"acquired": 0, "accept": 0, "release": 0, "reject": 0, "renew": 0, "archived": 0,
                       "lock_expiries": 0, "fetches": 0, "acknowledgements": 0}
        replica.add_leadership_listener(self._on_leadership)

    def now(self) -> int:
        return int(self.timer.now_ms())

    # ------------------------------------------------------------------ ShareFetch
    async def share_fetch(self, version: int, req: Obj, connection: Hashable, listener: str | None) -> Obj:
        self.totals["fetches"] += 1
        group_id, member_id, epoch = req.group_id or "", req.member_id or "", req.share_session_epoch
        settings = self.settings_of(group_id)
        renew = version >= 2 and bool(req.get("is_renew_ack"))
        acks_present = any(p.acknowledgement_batches for t in req.topics for p in t.partitions)
        if not member_id or not group_id:
            return self._fetch_error(E.INVALID_REQUEST, settings, "GroupId and MemberId are required")
        if renew and (req.max_bytes or req.min_bytes or req.max_records or req.max_wait_ms):
            return self._fetch_error(E.INVALID_REQUEST, settings, "A renewal fetches nothing: MaxBytes, MinBytes, "
                                     "MaxRecords and MaxWaitMs must be 0")
        requested = [(t.topic_id, p.partition_index) for t in req.topics for p in t.partitions]
        forgotten = [(t.topic_id, p) for t in req.forgotten_topics_data for p in t.partitions]
        if epoch == 0:
            if acks_present:
                return self._fetch_error(E.INVALID_REQUEST, settings, "Acknowledgements in a request opening a "
                                                                      "share session")
            code, session, old = self.sessions.open(group_id, member_id, connection, requested)
            if code != E.NONE:
                await asyncio.sleep(max(0, min(req.max_wait_ms, 30_000)) / 1000)
                return self._fetch_error(code, settings)
            if old is not None:
                self._forget(group_id, old.partitions.keys() - session.partitions.keys())  # type: ignore[union-attr]
        else:
            code, session = self.sessions.next(group_id, member_id, epoch)
            if code != E.NONE or session is None:
                return self._fetch_error(code, settings)
            if epoch != FINAL_EPOCH:
                for tp in requested:
                    session.partitions[tp] = None
                for tp in forgotten:
                    session.partitions.pop(tp, None)
        assert session is not None
        answers: dict[tuple[uuid.UUID, int], dict[str, Any]] = {}
        leaders: set[int] = set()
        # piggy-backed acknowledgements first: applied now, so the fetch below can acquire what they released;
        # their state write goes on while the fetch acquires (as Kafka answers a ShareFetch once both are done)
        ack_codes, writes = self._apply_acknowledgements(member_id, group_id, req.topics, version, renew, settings,
                                                         leaders, answers)
        if epoch == FINAL_EPOCH:
            await self._written(ack_codes, writes)  # what failed to be written is released with the rest
            self._end_session(session, settings)
        else:
            if not renew:
                await self._fetch(session, req, settings, answers, leaders, listener)
            await self._written(ack_codes, writes)
        if forgotten and epoch not in (0, FINAL_EPOCH):
            self._forget(group_id, forgotten)
        for tp, code in ack_codes.items():
            answers.setdefault(tp, _partition_entry(tp[1]))["acknowledge_error_code"] = code
        if epoch == 0:
            for tp in requested:
                answers.setdefault(tp, _partition_entry(tp[1]))
        return Obj(throttle_time_ms=0, error_code=E.NONE, error_message=None,
                   acquisition_lock_timeout_ms=settings.limits.lock_ms, responses=_by_topic(answers),
                   node_endpoints=self.replica.node_endpoints(leaders, listener))

    def _fetch_error(self, code: int, settings: ShareGroupSettings, message: str | None = None) -> Obj:
        return Obj(throttle_time_ms=0, error_code=code, error_message=message,
                   acquisition_lock_timeout_ms=settings.limits.lock_ms, responses=[], node_endpoints=[])

    async def _fetch(self, session: ShareSession, req: Obj, settings: ShareGroupSettings,
                     answers: dict[tuple[uuid.UUID, int], dict[str, Any]], leaders: set[int],
                     listener: str | None) -> None:
        """Acquire records of the session's partitions; wait (up to ``MaxWaitMs``) when there are none."""
        targets: list[tuple[_Target, Partition]] = []
        to_load: list[tuple[_Target, Partition]] = []
        for tp in list(session.partitions):
            target, partition, code = self._resolve(session.group_id, *tp)
            if code != E.NONE:
                self._partition_error(answers, tp, code, target, leaders)
                continue
            assert target is not None and partition is not None
            sp = self.cache.get(target.key)
            if sp is not None and sp.leader_epoch == partition.leader_epoch:
                targets.append((target, partition))
            else:
                to_load.append((target, partition))
        # share-partitions not cached yet are read from the share coordinator one after the other; once one
        # has records to acquire, the fetch goes on with what it has while the others load (Kafka, too,
        # initialises share-partitions asynchronously and answers with those ready)
        for i, (target, partition) in enumerate(to_load):
            if any(self._acquirable(t, p, settings) for t, p in targets):
                for later in to_load[i:]:
                    self._spawn(self._share_partition(*later))
                break
            sp, code = await self._share_partition(target, partition)
            if sp is None:
                self._partition_error(answers, (target.topic_id, target.partition), code, target, leaders)
                continue
            targets.append((target, partition))
        mode = req.get("share_acquire_mode", 0) or 0
        max_records = req.max_records if req.max_records > 0 else 500
        got = self._acquire_all(session.member_id, targets, max_records, mode, req.max_bytes, settings, answers)
        if got or not targets or req.max_wait_ms <= 0 or any(a.get("error_code") for a in answers.values()):
            return
        keys = [(t.key[1], t.key[2]) for t, _ in targets]
        wait = DelayedShareFetch(lambda: any(self._acquirable(t, p, settings) for t, p in targets),
                                 min(req.max_wait_ms, 300_000))
        self.replica.fetch_purgatory.try_complete_else_watch(wait, keys)
        await wait.future
        live = []
        for target, partition in targets:
            sp = self.cache.get(target.key)
            if sp is None or not partition.is_leader or partition.leader_epoch != sp.leader_epoch:
                self._partition_error(answers, (target.topic_id, target.partition), E.NOT_LEADER_OR_FOLLOWER,
                                      target, leaders)
            else:
                live.append((target, partition))
        self._acquire_all(session.member_id, live, max_records, mode, req.max_bytes, settings, answers)

    def _acquire_all(self, member_id: str, targets: list[tuple[_Target, Partition]], max_records: int, mode: int,
                     max_bytes: int, settings: ShareGroupSettings,
                     answers: dict[tuple[uuid.UUID, int], dict[str, Any]]) -> int:
        remaining = max(1, min(max_bytes if max_bytes > 0 else 1 << 30, self.fetch_max_bytes()))
        budget = max(1, remaining // max(1, len(targets)))
        taken = 0
        for target, partition in targets:
            if taken >= max_records:
                break
            sp = self.cache.get(target.key)
            if sp is None:
                continue
            records, acquired = self._acquire(sp, partition, member_id, max_records - taken, mode, budget, settings)
            if not acquired:
                continue
            taken += sum(a.last - a.first + 1 for a in acquired)
            entry = answers.setdefault((target.topic_id, target.partition), _partition_entry(target.partition))
            entry["records"] = records
            entry["acquired_records"] = [{"first_offset": a.first, "last_offset": a.last,
                                          "delivery_count": a.delivery_count} for a in acquired]
        self.totals["acquired"] += taken
        return taken

    def _acquire(self, sp: SharePartition, partition: Partition, member_id: str, max_records: int, mode: int,
                 budget: int, settings: ShareGroupSettings) -> tuple[bytes, list[Acquired]]:
        plog = partition.log
        before_archived = sp.archived_records
        sp.advance_to_log_start(plog.log_start_offset)
        limit = plog.last_stable_offset if settings.isolation == 1 else plog.high_watermark
        position = sp.acquire_position()
        if position >= limit:
            self._pump(sp)
            return b"", []
        aborted = plog.aborted_transactions(position, limit) if settings.isolation == 1 else []
        metas: list[LogBatch] = []
        data: list[bytes] = []
        size = new_records = 0
        for header, raw in plog.iter_batches(position):
            if header.last_offset >= limit or (data and size + len(raw) > budget):
                break  # the first batch comes whole; the others within the byte budget
            metas.append(LogBatch(header.base_offset, header.last_offset, header.is_control,
                                  bool(aborted) and header.is_transactional and not header.is_control and any(
                                      t.producer_id == header.producer_id and t.first_offset <= header.base_offset
                                      <= t.last_offset for t in aborted)))
            data.append(raw)
            size += len(raw)
            if header.last_offset >= sp.next:
                new_records += header.last_offset - max(header.base_offset, sp.next) + 1
            if new_records >= max_records:
                break
        acquired, lock = sp.acquire(member_id, metas, max_records, self.now(), settings.limits, mode=mode)
        self.totals["archived"] += sp.archived_records - before_archived
        if lock is not None:
            self._arm(sp, lock)
        self._pump(sp)
        if not acquired:
            return b"", []
        chosen = [raw for meta, raw in zip(metas, data, strict=True)
                  if any(a.first <= meta.last and meta.base <= a.last for a in acquired)]
        return b"".join(chosen), acquired

    def _acquirable(self, target: _Target, partition: Partition, settings: ShareGroupSettings) -> bool:
        """Whether a fetch of ``target`` could acquire something now (or must be answered: leadership moved)."""
        sp = self.cache.get(target.key)
        if sp is None or not partition.is_leader or partition.leader_epoch != sp.leader_epoch:
            return True
        if sp.has_available():
            return True
        plog = partition.log
        limit = plog.last_stable_offset if settings.isolation == 1 else plog.high_watermark
        return limit > max(sp.next, plog.log_start_offset) and sp.in_flight < settings.limits.max_record_locks

    # ------------------------------------------------------------------ acknowledgements
    async def share_acknowledge(self, version: int, req: Obj, connection: Hashable, listener: str | None) -> Obj:
        self.totals["acknowledgements"] += 1
        group_id, member_id, epoch = req.group_id or "", req.member_id or "", req.share_session_epoch
        settings = self.settings_of(group_id)
        renew = version >= 2 and bool(req.get("is_renew_ack"))

        def error(code: int, message: str | None = None) -> Obj:
            return Obj(throttle_time_ms=0, error_code=code, error_message=message,
                       acquisition_lock_timeout_ms=settings.limits.lock_ms, responses=[], node_endpoints=[])

        if not member_id or not group_id:
            return error(E.INVALID_REQUEST, "GroupId and MemberId are required")
        if epoch == 0:
            return error(E.INVALID_SHARE_SESSION_EPOCH, "ShareAcknowledge needs an open share session")
        code, session = self.sessions.next(group_id, member_id, epoch)
        if code != E.NONE or session is None:
            return error(code)
        answers: dict[tuple[uuid.UUID, int], dict[str, Any]] = {}
        leaders: set[int] = set()
        codes, writes = self._apply_acknowledgements(member_id, group_id, req.topics, version, renew, settings,
                                                     leaders, answers)
        await self._written(codes, writes)
        if epoch == FINAL_EPOCH:
            self._end_session(session, settings)
        out = []
        for tp, code in codes.items():
            entry = answers.get(tp) or {}
            out.append((tp, {"partition_index": tp[1], "error_code": code, "error_message": None,
                             "current_leader": entry.get("current_leader", {"leader_id": -1, "leader_epoch": -1})}))
        topics: dict[uuid.UUID, list[dict[str, Any]]] = {}
        for (topic_id, _), entry in out:
            topics.setdefault(topic_id, []).append(entry)
        return Obj(throttle_time_ms=0, error_code=E.NONE, error_message=None,
                   acquisition_lock_timeout_ms=settings.limits.lock_ms,
                   responses=[{"topic_id": t, "partitions": ps} for t, ps in topics.items()],
                   node_endpoints=self.replica.node_endpoints(leaders, listener))

    def _apply_acknowledgements(self, member_id: str, group_id: str, topics: Iterable[Any], version: int,
                                renew: bool, settings: ShareGroupSettings, leaders: set[int],
                                answers: dict[tuple[uuid.UUID, int], dict[str, Any]]
                                ) -> tuple[dict[tuple[uuid.UUID, int], int],
                                           list[tuple[tuple[uuid.UUID, int], asyncio.Future[int]]]]:
        """Apply every partition's acknowledgements: the error codes of those answered already (partition ->
        code), and the state writes the others wait for (see :meth:`_written`)."""
        pending: list[tuple[tuple[uuid.UUID, int], asyncio.Future[int]]] = []
        codes: dict[tuple[uuid.UUID, int], int] = {}
        for t in topics:
            for p in t.partitions:
                batches = p.acknowledgement_batches
                if not batches:
                    continue
                tp = (t.topic_id, p.partition_index)
                parsed = _parse_batches(batches, version, renew)
                if parsed is None:
                    codes[tp] = E.INVALID_REQUEST
                    continue
                target, partition, code = self._resolve(group_id, *tp)
                if code != E.NONE:
                    codes[tp] = code
                    self._partition_error(answers, tp, code, target, leaders, acknowledge=True)
                    continue
                assert target is not None
                sp = self.cache.get(target.key)
                if sp is None or partition is None or sp.leader_epoch != partition.leader_epoch:
                    codes[tp] = E.INVALID_RECORD_STATE  # nothing of this share-partition is acquired here
                    continue
                waiting = self._acknowledge(sp, member_id, parsed, settings)
                if isinstance(waiting, int):
                    codes[tp] = waiting
                else:
                    codes[tp] = E.NONE  # its place in request order; the write's outcome replaces it
                    pending.append((tp, waiting))
        return codes, pending

    @staticmethod
    async def _written(codes: dict[tuple[uuid.UUID, int], int],
                       writes: list[tuple[tuple[uuid.UUID, int], asyncio.Future[int]]]) -> None:
        """Wait for the acknowledgements' state writes: each partition's code is its write's outcome."""
        for tp, waiting in writes:
            codes[tp] = await waiting

    def _acknowledge(self, sp: SharePartition, member_id: str, batches: list[AckBatch],
                     settings: ShareGroupSettings) -> int | asyncio.Future[int]:
        before_archived = sp.archived_records
        future: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        code, _, written = sp.acknowledge(member_id, batches, self.now(), settings.limits, waiter=future)
        self.totals["archived"] += sp.archived_records - before_archived
        if code != E.NONE:
            return int(code)
        for b in batches:
            for first, last, ack in expand(b):
                name = ("gap", "accept", "release", "reject", "renew")[ack]
                if name != "gap":
                    self.totals[name] += last - first + 1
        if sp.renewed is not None:
            self._arm(sp, sp.renewed)
        if not written:
            return E.NONE
        self._pump(sp)
        self._wake(sp)
        return future

    # ------------------------------------------------------------------ share-partitions
    def _resolve(self, group_id: str, topic_id: uuid.UUID, index: int
                 ) -> tuple[_Target | None, Partition | None, int]:
        image = self.replica.image
        name = image.topic_name(topic_id)
        if name is None:
            return None, None, E.UNKNOWN_TOPIC_ID
        target = _Target((group_id, name, index), topic_id, index)
        partition = self.replica.partitions.get((name, index))
        if partition is None or not partition.is_leader:
            t = image.topic(name)
            if t is None or not 0 <= index < t.partition_count:
                return target, None, E.UNKNOWN_TOPIC_OR_PARTITION
            return target, None, E.NOT_LEADER_OR_FOLLOWER
        return target, partition, E.NONE

    def _partition_error(self, answers: dict[tuple[uuid.UUID, int], dict[str, Any]], tp: tuple[uuid.UUID, int],
                         code: int, target: _Target | None, leaders: set[int], *, acknowledge: bool = False) -> None:
        entry = answers.setdefault(tp, _partition_entry(tp[1]))
        entry["acknowledge_error_code" if acknowledge else "error_code"] = code
        if code == E.NOT_LEADER_OR_FOLLOWER and target is not None:
            current = self.replica.current_leader(target.key[1], target.partition)
            entry["current_leader"] = current
            if current["leader_id"] >= 0:
                leaders.add(current["leader_id"])

    async def _share_partition(self, target: _Target, partition: Partition) -> tuple[SharePartition | None, int]:
        """The cached share-partition, read from the share coordinator if need be."""
        key = target.key
        while True:
            sp = self.cache.get(key)
            if sp is not None and sp.leader_epoch == partition.leader_epoch:
                return sp, E.NONE
            loading = self._loading.get(key)
            if loading is None:
                break
            await asyncio.shield(loading)
        if sp is not None:
            self._drop(key, sp)
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._loading[key] = done
        epoch = partition.leader_epoch
        try:
            state = await self.persister.read_state(key[0], target.topic_id, key[2], epoch)
        except Exception as exc:  # a persister that cannot answer: the partition's fetch fails, the next retries
            log.warning("reading the share state of %s failed: %s", key, exc)
            state = PersistedState(E.COORDINATOR_NOT_AVAILABLE)
        finally:
            del self._loading[key]
            done.set_result(None)
        if state.error_code != E.NONE:
            return None, persister_error(state.error_code)
        if not partition.is_leader or partition.leader_epoch != epoch:
            return None, E.NOT_LEADER_OR_FOLLOWER
        settings = self.settings_of(key[0])
        sp = SharePartition(key[0], key[1], key[2], topic_id=target.topic_id, leader_epoch=epoch,
                            state_epoch=state.state_epoch)
        sp.load(state.start_offset, state.batches, reset_offset=self._reset_offset(partition, settings),
                log_start=partition.log.log_start_offset)
        self.cache[key] = sp
        log.debug("share-partition %s loaded: start %d, end %d", key, sp.start, sp.next - 1)
        self._pump(sp)
        return sp, E.NONE

    def _reset_offset(self, partition: Partition, settings: ShareGroupSettings) -> int:
        plog = partition.log
        strategy, ms = settings.reset
        if strategy == "earliest":
            return plog.log_start_offset
        if strategy == "by_duration":
            import time

            offset, _ = plog.offset_for_timestamp(int(time.time() * 1000) - ms)
            return plog.high_watermark if offset < 0 else offset
        return plog.high_watermark

    def _drop(self, key: ShareKey, sp: SharePartition) -> None:
        if self.cache.get(key) is sp:
            del self.cache[key]
        for run in sp.runs:
            if run.lock is not None and run.lock.timer is not None:
                run.lock.timer.cancel()  # type: ignore[attr-defined]

    def _on_leadership(self, topic: str, partition: int, is_leader: bool, epoch: int) -> None:
        for key, sp in list(self.cache.items()):
            if key[1] == topic and key[2] == partition and (not is_leader or sp.leader_epoch != epoch):
                self._drop(key, sp)

    def _forget(self, group_id: str, partitions: Iterable[tuple[uuid.UUID, int]]) -> None:
        """Partitions left a session: share-partitions no session uses and holding nothing are dropped, so the
        next fetch reads the share coordinator's state again (offsets may have been reset meanwhile)."""
        used = {tp for s in self.sessions.sessions.values() if s.group_id == group_id for tp in s.partitions}
        image = self.replica.image
        for topic_id, index in partitions:
            name = image.topic_name(topic_id)
            key = (group_id, name or "", index)
            sp = self.cache.get(key)
            if sp is not None and (topic_id, index) not in used and not sp.holds_records():
                self._drop(key, sp)

    def _end_session(self, session: ShareSession, settings: ShareGroupSettings) -> None:
        """The session closed (epoch -1): its member's records are released, its partitions forgotten."""
        self.sessions.close(session)
        self._release(session, settings)

    def _release(self, session: ShareSession, settings: ShareGroupSettings) -> None:
        image = self.replica.image
        for topic_id, index in session.partitions:
            name = image.topic_name(topic_id)
            sp = self.cache.get((session.group_id, name or "", index))
            if sp is not None and sp.release_member(session.member_id, settings.limits):
                self._pump(sp)
                self._wake(sp)
        self._forget(session.group_id, list(session.partitions))

    def connection_closed(self, connection: Hashable) -> None:
        """A client connection closed: its sessions end and their members' records are released."""
        for session in self.sessions.drop_connection(connection):
            self._release(session, self.settings_of(session.group_id))

    # ------------------------------------------------------------------ locks and writes
    def _arm(self, sp: SharePartition, lock: Lock) -> None:
        key = (sp.group_id, sp.topic, sp.partition)
        lock.timer = self.timer.call_at_ms(lock.deadline, lambda: self._expire(key, sp, lock))

    def _expire(self, key: ShareKey, sp: SharePartition, lock: Lock) -> None:
        if self.cache.get(key) is not sp:
            return
        before_archived = sp.archived_records
        if sp.expire(lock, self.now(), self.settings_of(sp.group_id).limits):
            self.totals["lock_expiries"] += 1
            self.totals["archived"] += sp.archived_records - before_archived
            self._pump(sp)
            self._wake(sp)

    def _wake(self, sp: SharePartition) -> None:
        self.replica.fetch_purgatory.check_and_complete((sp.topic, sp.partition))

    def _pump(self, sp: SharePartition) -> None:
        """Start the share-partition's next state write, if it has changes and none is in flight."""
        if self._closed:
            return
        write = sp.next_write()
        if write is not None:
            self._spawn(self._write(sp, write))

    def _spawn(self, work: Awaitable[Any]) -> None:
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _write(self, sp: SharePartition, write: Any) -> None:
        key = (sp.group_id, sp.topic, sp.partition)
        try:
            assert sp.topic_id is not None
            code = await self.persister.write_state(sp.group_id, sp.topic_id, sp.partition,
                                                    sp.state_epoch, sp.leader_epoch, write.start_offset,
                                                    write.batches)
        except Exception as exc:
            log.warning("writing the share state of %s failed: %s", key, exc)
            code = E.COORDINATOR_NOT_AVAILABLE
        waiters = sp.write_done(write.id, code == E.NONE, self.now())
        answer = E.NONE if code == E.NONE else persister_error(code)
        for waiter in waiters:
            if isinstance(waiter, asyncio.Future) and not waiter.done():
                waiter.set_result(answer)
        if code in _FENCED:
            log.info("share-partition %s: the share coordinator fenced this leader (%s); its state is read again",
                     key, ErrorCode(code).name)
            self._drop(key, sp)
            return
        if self.cache.get(key) is not sp:
            return
        if code != E.NONE:
            for lock in sp.expired_locks(self.now()):
                sp.expire(lock, self.now(), self.settings_of(sp.group_id).limits)
        self._wake(sp)
        self._pump(sp)

    def close(self) -> None:
        self._closed = True
        for key, sp in list(self.cache.items()):
            self._drop(key, sp)
        for task in list(self._tasks):
            task.cancel()

    # ------------------------------------------------------------------ inspection
    def collect_metrics(self, max_labelled: int) -> Iterator[Any]:
        """Share-partitions this broker leads (in flight, acquired, lag; per partition for the first
        ``max_labelled``), what they did since start (records acquired, accepted, released, rejected,
        archived, renewed; lock expiries) and the share sessions."""
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

        labels = ["group", "topic", "partition"]
        in_flight = GaugeMetricFamily("kbroker_share_partition_in_flight_records",
                                      "Records between the share-partition start and end offsets", labels=labels)
        held = GaugeMetricFamily("kbroker_share_partition_acquired_records", "Records acquired (locked) by members",
                                 labels=labels)
        lag = GaugeMetricFamily("kbroker_share_partition_lag", "Records of the partition not yet delivered to "
                                "completion: high watermark minus start offset minus records done beyond it",
                                labels=labels)
        partitions = GaugeMetricFamily("kbroker_share_partitions", "Share-partitions this broker leads (cached)")
        partitions.add_metric([], len(self.cache))
        for n, ((group, topic, index), sp) in enumerate(sorted(self.cache.items())):
            if n >= max_labelled:
                break
            counts = sp.state_counts()
            key = [group, topic, str(index)]
            in_flight.add_metric(key, sp.in_flight)
            held.add_metric(key, counts[1])
            p = self.replica.partitions.get((topic, index))
            if p is not None and p.is_leader:
                lag.add_metric(key, max(0, p.log.high_watermark - sp.start - counts[2] - counts[4]))
        records = CounterMetricFamily("kbroker_share_records", "Records acquired and acknowledged by share "
                                      "consumers, and archived, since start", labels=["action"])
        for action in ("acquired", "accept", "release", "reject", "renew", "archived"):
            records.add_metric([action], self.totals[action])
        expiries = CounterMetricFamily("kbroker_share_lock_expiries", "Acquisition locks that expired with "
                                       "records still acquired")
        expiries.add_metric([], self.totals["lock_expiries"])
        sessions = GaugeMetricFamily("kbroker_share_sessions", "Open share sessions (ShareFetch)")
        sessions.add_metric([], len(self.sessions))
        evictions = CounterMetricFamily("kbroker_share_session_evictions", "Share sessions ended by their "
                                        "connection closing")
        evictions.add_metric([], self.sessions.evictions)
        yield from (partitions, in_flight, held, lag, records, expiries, sessions, evictions)


def _partition_entry(index: int) -> dict[str, Any]:
    return {"partition_index": index, "error_code": E.NONE, "error_message": None, "acknowledge_error_code": E.NONE,
            "acknowledge_error_message": None, "current_leader": {"leader_id": -1, "leader_epoch": -1},
            "records": b"", "acquired_records": []}


def _by_topic(answers: dict[tuple[uuid.UUID, int], dict[str, Any]]) -> list[dict[str, Any]]:
    topics: dict[uuid.UUID, list[dict[str, Any]]] = {}
    for (topic_id, _), entry in answers.items():
        topics.setdefault(topic_id, []).append(entry)
    return [{"topic_id": t, "partitions": ps} for t, ps in topics.items()]


def _parse_batches(batches: Iterable[Any], version: int, renew: bool) -> list[AckBatch] | None:
    """Kafka's ``validateAcknowledgementBatches``: ordered, non-overlapping ranges, one type or one per offset,
    types 0-3 (4, RENEW, from v2 with IsRenewAck); None when invalid."""
    out: list[AckBatch] = []
    previous = -1
    top = 4 if version >= 2 else 3
    for b in batches:
        first, last, types = b.first_offset, b.last_offset, list(b.acknowledge_types or ())
        if first > last or first < 0 or (out and first <= previous):
            return None
        if not types or (len(types) != 1 and len(types) != last - first + 1):
            return None
        if any(t < 0 or t > top for t in types) or (4 in types and not renew):
            return None
        out.append(AckBatch(first, last, types))
        previous = last
    return out
