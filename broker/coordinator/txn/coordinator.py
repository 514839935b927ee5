"""The transaction coordinator of one ``__transaction_state`` partition, as a pure state machine.

Kafka's ``TransactionCoordinator`` + ``TransactionStateManager`` + ``TransactionMetadata``:
no sockets, no asyncio, no sleeps.  Every entry point takes the time ``now_ms`` and returns
:class:`Effects`; the edge (:mod:`broker.coordinator.txn.service` over the shared coordinator runtime)

1. sends ``replies`` (token → response dict with the schema's snake_case fields);
2. appends ``writes`` (one record each: a transactional id's new state, or its tombstone) to
   this partition and reports each with :meth:`write_committed` / :meth:`write_failed` — a
   state change takes effect, and the replies that wait on it go out, only once it is durable:
   the committed record is replayed by :meth:`TransactionCoordinator.replay`, the code a load runs
   for the records of the log (:class:`TxnRecord`);
3. sends ``markers`` (COMMIT/ABORT for every partition of a transaction, over WriteTxnMarkers
   to each partition's leader) and calls :meth:`markers_written` once all are written;
4. calls :meth:`poll` once ``next_deadline_ms`` has passed (transaction timeouts, id expiry).

States (``TxnState``, stored as Kafka's status byte)::

    Empty ──AddPartitions/AddOffsets──▶ Ongoing ──EndTxn──▶ PrepareCommit/PrepareAbort
      ▲                                   │  timeout or InitProducerId: fence (epoch+1), abort
      │                                   ▼                    │ markers written
    InitProducerId (epoch+1) ◀── CompleteCommit/CompleteAbort ◀┘
    Empty/Complete* idle for transactional.id.expiration.ms ──▶ Dead (tombstone, forgotten)

While a state change is being written (``pending``) or markers are out (Prepare*), other
requests for the id answer CONCURRENT_TRANSACTIONS and the client retries.  A request with
another producer id answers INVALID_PRODUCER_ID_MAPPING, an older epoch PRODUCER_FENCED (the
service maps it to INVALID_PRODUCER_EPOCH for clients too old to know it).  A transaction
open longer than its timeout is aborted with a bumped epoch, which fences the producer that
opened it (transaction version 1, as Kafka).  After a load, transactions found in
Prepare* have their markers sent again; Ongoing ones get their timeout back.

Transaction version 2 (KIP-890), for clients that use EndTxn v5+ / Produce v12+ /
TxnOffsetCommit v5+: every EndTxn bumps the epoch (returned in the response) and the markers
carry the bumped epoch; partitions join by the leader's implicit add (AddPartitionsToTxn
v4+ without ``verify_only``); an abort with nothing added is allowed.  KIP-890 part 1
verification for everyone: a leader asks (``verify_only``) whether a partition belongs to the
ongoing transaction before appending the producer's first batch there.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field, replace
from enum import IntEnum
from typing import Any, NamedTuple

from broker.coordinator.group.timers import KeyedTimers
from broker.coordinator.write import InFlightWrites, PendingWrite, Write, append_error, write_error
from protocol.error_codes import ErrorCode

from .records import TxnLogValue, decode_txn_key, decode_txn_value, encode_txn_key, encode_txn_value

__all__ = ["Effects", "MarkerRequest", "TransactionCoordinator", "TxnConfig", "TxnMetadata", "TxnRecord", "TxnState"]

log = logging.getLogger(__name__)

E = ErrorCode
Response = dict[str, Any]
TopicPartition = tuple[str, int]
NO_EPOCH = -1
MAX_EPOCH = 32767

_TIMEOUT = "timeout"
_EXPIRE = "expire"


class TxnState(IntEnum):
    EMPTY = 0
    ONGOING = 1
    PREPARE_COMMIT = 2
    PREPARE_ABORT = 3
    COMPLETE_COMMIT = 4
    COMPLETE_ABORT = 5
    DEAD = 6
    PREPARE_EPOCH_FENCE = 7

    @property
    def label(self) -> str:
        """The name DescribeTransactions / ListTransactions use (Kafka's ``TransactionState.name``)."""
        return _LABELS[self]


_LABELS = {TxnState.EMPTY: "Empty", TxnState.ONGOING: "Ongoing", TxnState.PREPARE_COMMIT: "PrepareCommit",
           TxnState.PREPARE_ABORT: "PrepareAbort", TxnState.COMPLETE_COMMIT: "CompleteCommit",
           TxnState.COMPLETE_ABORT: "CompleteAbort", TxnState.DEAD: "Dead",
           TxnState.PREPARE_EPOCH_FENCE: "PrepareEpochFence"}
STATE_BY_LABEL = {label: state for state, label in _LABELS.items()}
_PREPARED = (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT)
_COMPLETE = (TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT)
_IDLE = (TxnState.EMPTY, *_COMPLETE)


@dataclass(frozen=True, slots=True)
class TxnConfig:
    max_timeout_ms: int = 900_000                 # transaction.max.timeout.ms
    id_expiration_ms: int = 7 * 24 * 3600 * 1000  # transactional.id.expiration.ms
    #: re-check of a timed-out transaction that was busy when its timeout fired
    #: (transaction.abort.timed.out.transaction.cleanup.interval.ms)
    abort_retry_ms: int = 10_000
    two_phase_commit_enable: bool = False         # transaction.two.phase.commit.enable (KIP-939: refused)


@dataclass(slots=True)
class TxnMetadata:
    """What the coordinator knows of one transactional id (Kafka's ``TransactionMetadata``)."""

    transactional_id: str
    producer_id: int
    producer_epoch: int = NO_EPOCH
    last_producer_epoch: int = NO_EPOCH
    timeout_ms: int = 60_000
    state: TxnState = TxnState.EMPTY
    partitions: frozenset[TopicPartition] = frozenset()
    start_ms: int = -1
    last_update_ms: int = -1
    client_version: int = 0
    previous_producer_id: int = -1
    #: the state change being written (requests for the id wait for it: CONCURRENT_TRANSACTIONS)
    pending: TxnMetadata | None = None
    #: markers of the prepared transaction all written while a write was pending: complete after it
    markers_done: bool = False

    def transit(self, **changes: Any) -> TxnMetadata:
        return replace(self, pending=None, markers_done=False, **changes)

    def log_value(self) -> TxnLogValue:
        return TxnLogValue(self.producer_id, self.previous_producer_id, -1, self.producer_epoch, -1, self.timeout_ms,
                           int(self.state), tuple(sorted(self.partitions)), self.last_update_ms, self.start_ms,
                           self.client_version)

    @property
    def epoch_exhausted(self) -> bool:
        return self.producer_epoch >= MAX_EPOCH - 1


@dataclass(frozen=True, slots=True)
class MarkerRequest:
    """Write ``commit``/abort markers of ``producer_id`` at ``producer_epoch`` to every partition."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    commit: bool
    coordinator_epoch: int
    partitions: frozenset[TopicPartition]


@dataclass(slots=True)
class Effects:
    """Send ``replies``, append and report ``writes``, send ``markers``; ``completed`` counts ended
    transactions (``(transactional_id, committed)``) for the metrics."""

    replies: list[tuple[Hashable, Response]] = field(default_factory=list)
    writes: list[Write] = field(default_factory=list)
    markers: list[MarkerRequest] = field(default_factory=list)
    completed: list[tuple[str, bool]] = field(default_factory=list)
    next_deadline_ms: int | None = None


class TxnRecord(NamedTuple):
    """A ``__transaction_state`` record as the coordinator replays it: a transactional id's state, or
    (``metadata`` None) its tombstone.  The log keeps what :meth:`TxnMetadata.log_value` holds; a record
    written here also carries the state the log does not (the epoch before the last bump, as Kafka keeps
    ``lastProducerEpoch`` in memory only), which a load does without."""

    transactional_id: str
    metadata: TxnMetadata | None

    def encode(self) -> tuple[bytes, bytes | None]:
        key = encode_txn_key(self.transactional_id)
        return key, None if self.metadata is None else encode_txn_value(self.metadata.log_value())

    @classmethod
    def decode(cls, key: bytes, value: bytes | None) -> TxnRecord:
        tid = decode_txn_key(key)
        if value is None:
            return cls(tid, None)
        v = decode_txn_value(value)
        return cls(tid, TxnMetadata(tid, v.producer_id, v.producer_epoch, NO_EPOCH, v.timeout_ms, TxnState(v.status),
                                    frozenset(v.partitions), v.start_ms, v.last_update_ms, v.client_version,
                                    v.previous_producer_id))


class _TxnWrite(PendingWrite):
    """A handed-out write: its record (replayed when it commits) and ``target``, the state it moves its id
    to (the id's ``pending`` until then; a Dead target is written as the tombstone)."""

    __slots__ = ("record", "target")

    def __init__(self, write: Write, record: TxnRecord, target: TxnMetadata) -> None:
        super().__init__(write)
        self.record = record
        self.target = target


class TransactionCoordinator:
    """The transactional ids of one ``__transaction_state`` partition, led in ``coordinator_epoch``.

    ``partition_count(topic)`` says whether a partition a client adds exists; ``offsets_partition(group)``
    is the ``__consumer_offsets`` partition of a group (AddOffsetsToTxn); ``allocate_producer_id()`` a
    fresh producer id (None: none at hand now, the client retries).
    """

    def __init__(self, config: TxnConfig, *, partition: int, coordinator_epoch: int, now_ms: int,
                 allocate_producer_id: Callable[[], int | None],
                 partition_count: Callable[[str], int | None] | None = None,
                 offsets_partition: Callable[[str], TopicPartition] | None = None,
                 wheel_factory: Callable[[int], Any] | None = None) -> None:
        self.config = config
        self.partition = partition
        self.coordinator_epoch = coordinator_epoch
        self.txns: dict[str, TxnMetadata] = {}
        self.timers = KeyedTimers(now_ms, wheel_factory)
        self._allocate = allocate_producer_id
        self._partition_count = partition_count
        self._offsets_partition = offsets_partition
        self._now = now_ms
        self._fx = Effects()
        self._inflight: InFlightWrites[_TxnWrite] = InFlightWrites()
        self._next_write_id = 1

    # ============================================================================ plumbing

    def _begin(self, now_ms: int) -> None:
        self._now = now_ms
        self._fx = Effects()

    def _finish(self) -> Effects:
        fx = self._fx
        fx.next_deadline_ms = self.timers.next_deadline()
        return fx

    def _reply(self, token: Hashable, response: Response) -> None:
        self._fx.replies.append((token, response))

    def next_deadline(self) -> int | None:
        return self.timers.next_deadline()

    def _write(self, txn: TxnMetadata, target: TxnMetadata) -> _TxnWrite:
        """Start writing ``txn``'s change to ``target`` (a Dead target writes the id's tombstone)."""
        record = TxnRecord(txn.transactional_id, None if target.state is TxnState.DEAD else target)
        write = Write(self._next_write_id, self.partition, [record.encode()])
        self._next_write_id += 1
        pw = _TxnWrite(write, record, target)
        txn.pending = target
        self._inflight.add(self.partition, write.write_id, pw)
        self._fx.writes.append(write)
        return pw

    def write_committed(self, now_ms: int, write_id: int) -> Effects:
        """A write is durable: its record is replayed (the state change takes effect, as a load applies it);
        the id's timers follow the new state, and what waited on the write goes on."""
        self._begin(now_ms)
        pw = self._inflight.take(write_id)
        tid = pw.record.transactional_id
        current = self.txns.get(tid)
        # markers of the prepared transaction all written while this write was pending: complete it now
        done = current is not None and current.pending is pw.target and current.markers_done
        self.replay(pw.record)
        applied = self.txns.get(tid)
        if applied is not None:
            self._schedule(applied)
            if done and applied.state in _PREPARED:
                self._complete(applied)
        pw.committed()
        return self._finish()

    def write_failed(self, now_ms: int, write_id: int, error_code: int) -> Effects:
        """A write failed: nothing changes; what waited on it gets the mapped error."""
        self._begin(now_ms)
        pw = self._inflight.take(write_id)
        error = write_error(append_error(error_code))
        tid = pw.record.transactional_id
        current = self.txns.get(tid)
        log.warning("__transaction_state-%d: write for %s failed with %s", self.partition, tid, error.name)
        if current is not None and current.pending is pw.target:
            current.pending = None
            if current.markers_done and current.state in _PREPARED:
                self._complete(current)
            self._schedule(current)
        pw.failed(error)
        return self._finish()

    def writes_in_flight(self) -> int:
        return len(self._inflight)

    def _schedule(self, txn: TxnMetadata) -> None:
        tid = txn.transactional_id
        if txn.state is TxnState.ONGOING:
            self.timers.schedule((_TIMEOUT, tid), txn.start_ms + txn.timeout_ms)
        else:
            self.timers.cancel((_TIMEOUT, tid))
        if txn.state in _IDLE:
            self.timers.schedule((_EXPIRE, tid), txn.last_update_ms + self.config.id_expiration_ms)
        else:
            self.timers.cancel((_EXPIRE, tid))

    # ============================================================================ InitProducerId

    def init_producer_id(self, now_ms: int, version: int, request: Any, token: Hashable) -> Effects:
        """InitProducerId with a transactional id (KIP-98, KIP-360 recovery with producer id/epoch)."""
        self._begin(now_ms)
        g = request.get
        tid: str = g("transactional_id") or ""
        timeout = g("transaction_timeout_ms")
        expected_pid = g("producer_id", -1) if version >= 3 else -1
        expected_epoch = g("producer_epoch", -1) if version >= 3 else -1

        def reply(error: ErrorCode, pid: int = -1, epoch: int = -1) -> None:
            resp: Response = {"throttle_time_ms": 0, "error_code": error, "producer_id": pid, "producer_epoch": epoch}
            if version >= 6:
                resp["ongoing_txn_producer_id"] = -1
                resp["ongoing_txn_producer_epoch"] = -1
            self._reply(token, resp)

        if not tid:
            reply(E.INVALID_REQUEST)
            return self._finish()
        if version >= 6 and (g("enable2_pc") or g("keep_prepared_txn")) and not self.config.two_phase_commit_enable:
            reply(E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
            return self._finish()
        if timeout is None or timeout <= 0 or timeout > self.config.max_timeout_ms:
            reply(E.INVALID_TRANSACTION_TIMEOUT)
            return self._finish()
        txn = self.txns.get(tid)
        if txn is None:
            pid = self._allocate()
            if pid is None:
                reply(E.COORDINATOR_LOAD_IN_PROGRESS)
                return self._finish()
            txn = self.txns[tid] = TxnMetadata(tid, pid, timeout_ms=timeout, last_update_ms=now_ms)
        if txn.pending is not None or txn.state in _PREPARED:
            reply(E.CONCURRENT_TRANSACTIONS)
            return self._finish()
        if expected_pid >= 0 and not self._is_current(txn, expected_pid, expected_epoch):
            reply(E.PRODUCER_FENCED)
            return self._finish()
        if txn.state is TxnState.ONGOING:
            # abort the open transaction first (with a fencing epoch); the client retries meanwhile
            pw = self._fence_and_abort(txn)
            pw.wait(lambda: reply(E.CONCURRENT_TRANSACTIONS), lambda error: reply(error))
            return self._finish()
        if txn.state not in _IDLE:
            reply(E.CONCURRENT_TRANSACTIONS)
            return self._finish()
        idle = {"timeout_ms": timeout, "state": TxnState.EMPTY, "partitions": frozenset(), "start_ms": -1,
                "last_update_ms": now_ms}
        if 0 <= expected_pid != txn.producer_id:
            target = txn.transit(**idle)  # a retry after the id was rotated: the new id as it is
        elif txn.epoch_exhausted and (expected_epoch < 0 or expected_epoch == txn.producer_epoch):
            pid = self._allocate()
            if pid is None:
                reply(E.COORDINATOR_LOAD_IN_PROGRESS)
                return self._finish()
            target = txn.transit(producer_id=pid, previous_producer_id=txn.producer_id, producer_epoch=0,
                                 last_producer_epoch=NO_EPOCH, **idle)
        elif expected_epoch < 0 or txn.producer_epoch == NO_EPOCH or expected_epoch == txn.producer_epoch:
            last = NO_EPOCH if expected_epoch < 0 else txn.producer_epoch
            target = txn.transit(producer_epoch=txn.producer_epoch + 1, last_producer_epoch=last, **idle)
        elif expected_epoch == txn.last_producer_epoch:
            target = txn.transit(**idle)  # a retry of a bump that already happened
        else:
            reply(E.PRODUCER_FENCED)
            return self._finish()
        pw = self._write(txn, target)
        pw.wait(lambda: reply(E.NONE, target.producer_id, target.producer_epoch), lambda error: reply(error))
        return self._finish()

    @staticmethod
    def _is_current(txn: TxnMetadata, pid: int, epoch: int) -> bool:
        """KIP-360 (Kafka's ``isValidProducerId``): a producer naming its id and epoch may go on if the
        metadata was just created, the id is the current one (its epoch is checked when bumped), or it
        is the one before a rotation its producer did not hear of (its epoch was used up)."""
        if txn.producer_epoch == NO_EPOCH or pid == txn.producer_id:
            return True
        return pid == txn.previous_producer_id and epoch >= MAX_EPOCH - 1

    def _fence_and_abort(self, txn: TxnMetadata) -> _TxnWrite:
        """Abort ``txn``'s open transaction with the next epoch (fencing its producer); markers follow."""
        epoch = txn.producer_epoch + 1 if txn.producer_epoch < MAX_EPOCH else txn.producer_epoch
        target = txn.transit(producer_epoch=epoch, last_producer_epoch=NO_EPOCH, state=TxnState.PREPARE_ABORT,
                             last_update_ms=self._now)
        pw = self._write(txn, target)
        pw.wait(lambda: self._send_markers(target), lambda _error: None)
        return pw

    # ============================================================================ AddPartitions / AddOffsets

    def add_partitions(self, now_ms: int, version: int, request: Any, token: Hashable) -> Effects:
        """AddPartitionsToTxn: v0-3 from clients (one transaction), v4+ from brokers (several; ``verify_only``
        asks whether partitions already belong to the ongoing transaction)."""
        self._begin(now_ms)
        g = request.get
        if version < 4:
            topics = g("v3_and_below_topics") or ()
            results = self._add_one(g("v3_and_below_transactional_id") or "", g("v3_and_below_producer_id"),
                                    g("v3_and_below_producer_epoch"), topics, False, 0)
            resp: Response = {"throttle_time_ms": 0}

            def send_v3() -> None:
                resp["results_by_topic_v3_and_below"] = _by_topic(results.codes)
                self._reply(token, resp)

            results.when_done(send_v3)
            return self._finish()
        entries: list[tuple[str, _Results]] = []
        for t in g("transactions") or ():
            tid = t.get("transactional_id") or ""
            entries.append((tid, self._add_one(tid, t.get("producer_id"), t.get("producer_epoch"), t.get("topics") or (),
                                               bool(t.get("verify_only")), 2)))
        left = [len(entries)]
        body: Response = {"throttle_time_ms": 0, "error_code": E.NONE}

        def settle() -> None:
            left[0] -= 1
            if left[0] <= 0:
                body["results_by_transaction"] = [{"transactional_id": tid, "topic_results": _by_topic(r.codes)}
                                                  for tid, r in entries]
                self._reply(token, body)

        if not entries:
            left[0] = 1
            settle()
        for _, r in entries:
            r.when_done(settle)
        return self._finish()

    def _add_one(self, tid: str, pid: int, epoch: int, topics: Iterable[Any], verify_only: bool,
                 client_version: int) -> _Results:
        wanted = [(t.get("name"), int(p)) for t in topics for p in t.get("partitions") or ()]
        results = _Results(wanted)
        unknown = [tp for tp in wanted if not self._exists(tp)]
        if unknown:
            results.fill(E.OPERATION_NOT_ATTEMPTED)
            for tp in unknown:
                results.codes[tp] = E.UNKNOWN_TOPIC_OR_PARTITION
            return results.done()
        code, txn = self._check(tid, pid, epoch)
        if txn is None or code != E.NONE:
            return results.fill(code).done()
        if verify_only:
            if txn.state is not TxnState.ONGOING:
                return results.fill(E.TRANSACTION_ABORTABLE).done()
            for tp in wanted:
                results.codes[tp] = E.NONE if tp in txn.partitions else E.TRANSACTION_ABORTABLE
            return results.done()
        pw = self._add(txn, frozenset(wanted), client_version)
        if pw is None:
            return results.fill(E.NONE).done()
        pw.wait(lambda: results.fill(E.NONE).done(), lambda error: results.fill(error).done())
        return results

    def add_offsets(self, now_ms: int, version: int, request: Any, token: Hashable) -> Effects:
        """AddOffsetsToTxn: the group's ``__consumer_offsets`` partition joins the transaction."""
        self._begin(now_ms)
        g = request.get

        def reply(error: ErrorCode) -> None:
            self._reply(token, {"throttle_time_ms": 0, "error_code": error})

        code, txn = self._check(g("transactional_id") or "", g("producer_id"), g("producer_epoch"))
        if txn is None or code != E.NONE:
            reply(code)
            return self._finish()
        if self._offsets_partition is None:
            reply(E.COORDINATOR_NOT_AVAILABLE)
            return self._finish()
        pw = self._add(txn, frozenset([self._offsets_partition(g("group_id") or "")]), txn.client_version)
        if pw is None:
            reply(E.NONE)
        else:
            pw.wait(lambda: reply(E.NONE), reply)
        return self._finish()

    def _exists(self, tp: TopicPartition) -> bool:
        if self._partition_count is None:
            return True
        count = self._partition_count(tp[0])
        return count is not None and 0 <= tp[1] < count

    def _check(self, tid: str, pid: int, epoch: int) -> tuple[ErrorCode, TxnMetadata | None]:
        """The checks every request of a producer goes through (Kafka's order)."""
        if not tid:
            return E.INVALID_REQUEST, None
        txn = self.txns.get(tid)
        if txn is None or txn.producer_id != pid:
            return E.INVALID_PRODUCER_ID_MAPPING, None
        if txn.producer_epoch != epoch:
            return E.PRODUCER_FENCED, None
        if txn.pending is not None or txn.state in _PREPARED or txn.state is TxnState.DEAD:
            return E.CONCURRENT_TRANSACTIONS, None
        return E.NONE, txn

    def _add(self, txn: TxnMetadata, partitions: frozenset[TopicPartition],
             client_version: int) -> _TxnWrite | None:
        """Add ``partitions`` to ``txn`` (opening it); None when they are all in it already."""
        if txn.state is TxnState.ONGOING and partitions <= txn.partitions:
            return None
        start = self._now if txn.state is not TxnState.ONGOING else txn.start_ms
        target = txn.transit(state=TxnState.ONGOING, partitions=txn.partitions | partitions, start_ms=start,
                             last_update_ms=self._now, client_version=max(txn.client_version, client_version))
        return self._write(txn, target)

    # ============================================================================ EndTxn

    def end_txn(self, now_ms: int, version: int, request: Any, token: Hashable) -> Effects:
        """EndTxn: commit or abort the ongoing transaction (v5+: transaction version 2, epoch bump)."""
        self._begin(now_ms)
        g = request.get
        tid = g("transactional_id") or ""
        pid, epoch, commit = g("producer_id"), g("producer_epoch"), bool(g("committed"))
        tv2 = version >= 5

        def reply(error: ErrorCode, txn: TxnMetadata | None = None) -> None:
            resp: Response = {"throttle_time_ms": 0, "error_code": error}
            if version >= 5:
                ok = error == E.NONE and txn is not None
                resp["producer_id"] = txn.producer_id if ok and txn is not None else -1
                resp["producer_epoch"] = txn.producer_epoch if ok and txn is not None else -1
            self._reply(token, resp)

        if not tid:
            reply(E.INVALID_REQUEST)
            return self._finish()
        txn = self.txns.get(tid)
        if txn is None or txn.producer_id != pid:
            reply(E.INVALID_PRODUCER_ID_MAPPING)
            return self._finish()
        if txn.pending is not None:
            reply(E.CONCURRENT_TRANSACTIONS)
            return self._finish()
        done_state = TxnState.COMPLETE_COMMIT if commit else TxnState.COMPLETE_ABORT
        prepared_state = TxnState.PREPARE_COMMIT if commit else TxnState.PREPARE_ABORT
        if epoch != txn.producer_epoch:
            # transaction version 2: a retry of an EndTxn whose epoch bump already happened
            if tv2 and epoch == txn.last_producer_epoch and txn.state in (done_state, prepared_state):
                reply(E.NONE if txn.state is done_state else E.CONCURRENT_TRANSACTIONS, txn)
            else:
                reply(E.PRODUCER_FENCED)
            return self._finish()
        state = txn.state
        if state is TxnState.ONGOING or (tv2 and not commit and state in _IDLE):
            target = self._prepared(txn, prepared_state, tv2)
            if target is None:
                reply(E.CONCURRENT_TRANSACTIONS)
                return self._finish()
            pw = self._write(txn, target)
            pw.wait(lambda: (reply(E.NONE, target), self._send_markers(target)), lambda error: reply(error))
        elif state is done_state and not tv2:
            reply(E.NONE, txn)  # a retry of an EndTxn that completed
        elif state is prepared_state and not tv2:
            reply(E.CONCURRENT_TRANSACTIONS)
        else:
            reply(E.INVALID_TXN_STATE)
        return self._finish()

    def _prepared(self, txn: TxnMetadata, state: TxnState, tv2: bool) -> TxnMetadata | None:
        """``txn`` in PrepareCommit/PrepareAbort; with transaction version 2 at a bumped epoch (or a new
        producer id when the epoch is used up).  None when no producer id is at hand for that."""
        if not tv2:
            return txn.transit(state=state, last_update_ms=self._now)
        if txn.epoch_exhausted:
            pid = self._allocate()
            if pid is None:
                return None
            return txn.transit(state=state, producer_id=pid, previous_producer_id=txn.producer_id, producer_epoch=0,
                               last_producer_epoch=NO_EPOCH, last_update_ms=self._now, client_version=2)
        return txn.transit(state=state, producer_epoch=txn.producer_epoch + 1, last_producer_epoch=txn.producer_epoch,
                           last_update_ms=self._now, client_version=2)

    # ============================================================================ markers

    def _send_markers(self, prepared: TxnMetadata) -> None:
        txn = self.txns.get(prepared.transactional_id)
        if txn is None or txn.state not in _PREPARED:
            return
        if not txn.partitions:  # nothing to mark (an abort of an empty transaction)
            self._complete(txn)
            return
        # markers of a bumped transaction-version-2 epoch name the producer id they end
        self._fx.markers.append(MarkerRequest(txn.transactional_id, txn.producer_id, txn.producer_epoch,
                                              txn.state is TxnState.PREPARE_COMMIT, self.coordinator_epoch,
                                              txn.partitions))

    def markers_written(self, now_ms: int, transactional_id: str, producer_id: int, producer_epoch: int) -> Effects:
        """Every marker of the prepared transaction is written: record it complete."""
        self._begin(now_ms)
        txn = self.txns.get(transactional_id)
        if (txn is not None and txn.state in _PREPARED and txn.producer_id == producer_id
                and txn.producer_epoch == producer_epoch):
            if txn.pending is not None:
                txn.markers_done = True  # completes once the pending write settles
            else:
                self._complete(txn)
        return self._finish()

    def _complete(self, txn: TxnMetadata) -> None:
        commit = txn.state is TxnState.PREPARE_COMMIT
        target = txn.transit(state=TxnState.COMPLETE_COMMIT if commit else TxnState.COMPLETE_ABORT,
                             partitions=frozenset(), last_update_ms=self._now)
        pw = self._write(txn, target)

        def retry(_: ErrorCode) -> None:
            # stays prepared; markers are idempotent per epoch: send them again
            current = self.txns.get(txn.transactional_id)
            if current is not None and current.state in _PREPARED:
                self._send_markers(current)

        pw.wait(lambda: self._fx.completed.append((txn.transactional_id, commit)), retry)

    # ============================================================================ timers

    def poll(self, now_ms: int) -> Effects:
        """Abort transactions past their timeout; forget ids idle past ``transactional.id.expiration.ms``."""
        self._begin(now_ms)
        for key in self.timers.expire(now_ms):
            kind, tid = key  # type: ignore[misc]
            txn = self.txns.get(tid)
            if txn is None:
                continue
            if txn.pending is not None:
                self.timers.schedule(key, now_ms + self.config.abort_retry_ms)
                continue
            if kind == _TIMEOUT and txn.state is TxnState.ONGOING:
                log.info("transaction %s (producer %d) timed out after %d ms: aborting", tid, txn.producer_id,
                         txn.timeout_ms)
                self._fence_and_abort(txn)
            elif kind == _EXPIRE and txn.state in _IDLE:
                log.info("transactional id %s expired", tid)
                self._write(txn, txn.transit(state=TxnState.DEAD, last_update_ms=now_ms))
        return self._finish()

    # ============================================================================ Describe / List

    def describe(self, transactional_id: str) -> Response:
        """One DescribeTransactions entry (this shard owns the id's partition)."""
        txn = self.txns.get(transactional_id)
        if txn is None or txn.state is TxnState.DEAD:
            return {"error_code": E.TRANSACTIONAL_ID_NOT_FOUND, "transactional_id": transactional_id,
                    "transaction_state": "", "transaction_timeout_ms": 0, "transaction_start_time_ms": -1,
                    "producer_id": -1, "producer_epoch": -1, "topics": []}
        return {"error_code": E.NONE, "transactional_id": transactional_id, "transaction_state": txn.state.label,
                "transaction_timeout_ms": txn.timeout_ms, "transaction_start_time_ms": txn.start_ms,
                "producer_id": txn.producer_id, "producer_epoch": txn.producer_epoch,
                "topics": [{"topic": t, "partitions": ps} for t, ps in _grouped(txn.partitions)]}

    def list_transactions(self, now_ms: int, states: set[TxnState] | None, producer_ids: set[int] | None,
                          min_duration_ms: int = -1) -> list[Response]:
        """ListTransactions entries matching the filters (None / empty: any; ``min_duration_ms`` >= 0:
        only transactions running at least that long)."""
        out = []
        for tid, txn in self.txns.items():
            if txn.state is TxnState.DEAD:
                continue
            if states and txn.state not in states:
                continue
            if producer_ids and txn.producer_id not in producer_ids:
                continue
            if min_duration_ms >= 0 and (txn.start_ms < 0 or now_ms - txn.start_ms < min_duration_ms):
                continue
            out.append({"transactional_id": tid, "producer_id": txn.producer_id,
                        "transaction_state": txn.state.label})
        return out

    # ============================================================================ loading

    def load(self, partition: int, key: bytes, value: bytes | None, producer_id: int = -1) -> None:
        """Replay one ``__transaction_state`` record of the log (in log order)."""
        self.replay(TxnRecord.decode(key, value))

    def replay(self, record: TxnRecord) -> None:
        """Apply one record: read from the log on load, or carried by a write that just committed.  A
        transactional id's state replaces what it had; its tombstone forgets it."""
        tid = record.transactional_id
        if record.metadata is None:
            self.txns.pop(tid, None)
            self.timers.cancel((_TIMEOUT, tid))
            self.timers.cancel((_EXPIRE, tid))
        else:
            self.txns[tid] = record.metadata

    def load_marker(self, partition: int, producer_id: int, commit: bool) -> None:
        """Markers never land in ``__transaction_state``."""

    def complete_load(self, now_ms: int) -> Effects:
        """After replay: transactions caught between prepare and complete get their markers again,
        open ones their timeout, idle ids their expiry."""
        self._begin(now_ms)
        for txn in list(self.txns.values()):
            if txn.state is TxnState.DEAD:
                del self.txns[txn.transactional_id]
                continue
            self._schedule(txn)
            if txn.state in _PREPARED:
                log.info("transaction %s was %s: writing its markers", txn.transactional_id, txn.state.label)
                self._send_markers(txn)
        return self._finish()

    # ============================================================================ inspection

    def count_by_state(self) -> dict[TxnState, int]:
        out: dict[TxnState, int] = {}
        for txn in self.txns.values():
            out[txn.state] = out.get(txn.state, 0) + 1
        return out


class _Results:
    """Per-partition answers of one AddPartitionsToTxn transaction, possibly waiting for a write."""

    __slots__ = ("_callbacks", "_done", "codes")

    def __init__(self, wanted: list[TopicPartition]) -> None:
        self.codes: dict[TopicPartition, int] = dict.fromkeys(wanted, E.NONE)
        self._done = False
        self._callbacks: list[Callable[[], None]] = []

    def fill(self, code: int) -> _Results:
        for tp in self.codes:
            self.codes[tp] = code
        return self

    def done(self) -> _Results:
        self._done = True
        for callback in self._callbacks:
            callback()
        self._callbacks = []
        return self

    def when_done(self, callback: Callable[[], None]) -> None:
        if self._done:
            callback()
        else:
            self._callbacks.append(callback)


def _grouped(partitions: Iterable[TopicPartition]) -> list[tuple[str, list[int]]]:
    by_topic: dict[str, list[int]] = {}
    for topic, p in sorted(partitions):
        by_topic.setdefault(topic, []).append(p)
    return list(by_topic.items())


def _by_topic(codes: dict[TopicPartition, int]) -> list[Response]:
    by_topic: dict[str, list[Response]] = {}
    for (topic, p), code in codes.items():
        by_topic.setdefault(topic, []).append({"partition_index": p, "partition_error_code": code})
    return [{"name": t, "results_by_partition": parts} for t, parts in by_topic.items()]
