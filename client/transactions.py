"""The transactional producer's state as a pure machine (no I/O, no clock): KIP-98, KIP-360, KIP-447, KIP-890.

:class:`TransactionManager` owns the producer id and epoch of a transactional id, the state of the
ongoing transaction (Kafka's ``TransactionManager`` states: UNINITIALIZED, INITIALIZING, READY,
IN_TRANSACTION, COMMITTING_TRANSACTION, ABORTING_TRANSACTION, ABORTABLE_ERROR, FATAL_ERROR), the
partitions it holds, and the classification of every error a transactional request or a produced
batch can get.  The asyncio edge (:mod:`client.txn_requests`) sends the requests it asks for and feeds
the responses back; each ``on_*`` method answers what the edge does next (:class:`Next`).

Transaction version 2 (KIP-890 part 2) is used when the broker offers it (its finalized feature
``transaction.version`` >= 2, or, from a broker that finalizes no features, EndTxn v5, Produce v12 and
TxnOffsetCommit v5): partitions and the offsets partition join the transaction with the Produce and the
TxnOffsetCommit themselves (no AddPartitionsToTxn, no AddOffsetsToTxn), and every EndTxn bumps the
epoch (its answer carries the new one; sequence numbers restart).  With version 1 a partition's batches
wait until AddPartitionsToTxn has added it, and an abortable error that needs a new epoch (KIP-360:
UNKNOWN_PRODUCER_ID, a failed batch whose sequence numbers are lost) is followed by an InitProducerId
that names the current producer id and epoch.

Errors as Kafka's clients classify them (see :class:`client.errors.TransactionError`): fenced (a newer
producer has the id) and authorization / protocol errors are fatal; a failed batch, TRANSACTION_ABORTABLE,
offsets the group refuses, unknown producer ids are abortable; coordinator moves, loading and
CONCURRENT_TRANSACTIONS are retried.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from client.errors import (
    AbortableTransactionError,
    CommitFailedError,
    FatalTransactionError,
    IllegalStateError,
    KafkaError,
    ProducerFencedError,
    TransactionError,
)
from client.types import TopicPartition
from protocol.error_codes import ErrorCode

E = ErrorCode


class TxnState(enum.Enum):
    UNINITIALIZED = "uninitialized"
    INITIALIZING = "initializing"
    READY = "ready"
    IN_TRANSACTION = "in_transaction"
    COMMITTING = "committing_transaction"
    ABORTING = "aborting_transaction"
    ABORTABLE_ERROR = "abortable_error"
    FATAL_ERROR = "fatal_error"
    #: every record is acknowledged, the transaction is not ended: someone commits or aborts it (KIP-939)
    PREPARED = "prepared_transaction"


class Next(enum.Enum):
    """What the edge does after feeding a response to the machine."""

    DONE = "done"
    RETRY = "retry"                        # the same request again after retry_backoff_ms
    FIND_COORDINATOR = "find_coordinator"  # look the coordinator up again, then retry
    FAILED = "failed"                      # the operation failed: raise ``manager.error``


#: errors that end the producer whatever the request (Kafka's ``maybeTransitionToErrorState``)
_FATAL_CODES = frozenset({E.CLUSTER_AUTHORIZATION_FAILED, E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                          E.UNSUPPORTED_VERSION, E.UNSUPPORTED_FOR_MESSAGE_FORMAT, E.INVALID_TXN_STATE})
_FENCED_CODES = frozenset({E.PRODUCER_FENCED, E.INVALID_PRODUCER_EPOCH})
_BUMP_CODES = frozenset({E.UNKNOWN_PRODUCER_ID, E.INVALID_PRODUCER_ID_MAPPING})
_COORDINATOR_CODES = frozenset({E.NOT_COORDINATOR, E.COORDINATOR_NOT_AVAILABLE})


def uses_transaction_v2(broker_versions: Mapping[int, tuple[int, int]], features: Mapping[str, int]) -> bool:
    """Whether a broker offers transaction version 2 (see the module docstring); ``broker_versions``
    are its ApiVersions ranges by API key, ``features`` its finalized features (max version level)."""
    from protocol.api import ApiKey

    if "transaction.version" in features:
        return features["transaction.version"] >= 2
    return (broker_versions.get(ApiKey.END_TXN, (0, -1))[1] >= 5
            and broker_versions.get(ApiKey.PRODUCE, (0, -1))[1] >= 12
            and broker_versions.get(ApiKey.TXN_OFFSET_COMMIT, (0, -1))[1] >= 5)


@dataclass
class TransactionManager:
    transactional_id: str
    transaction_timeout_ms: int
    state: TxnState = TxnState.UNINITIALIZED
    producer_id: int = -1
    producer_epoch: int = -1
    #: transaction version 2 in use (decided when the coordinator is first reached)
    tv2: bool = False
    #: the coordinator takes InitProducerId with the current producer id and epoch (v3+: KIP-360 bumps)
    can_bump: bool = True
    #: the error that moved the machine to ABORTABLE_ERROR / FATAL_ERROR
    error: TransactionError | None = None
    epoch_bump_required: bool = False
    #: partitions in the ongoing transaction (their batches may be sent)
    added: set[TopicPartition] = field(default_factory=set)
    #: partitions whose batches wait for an AddPartitionsToTxn not sent yet / in flight
    new: set[TopicPartition] = field(default_factory=set)
    pending: set[TopicPartition] = field(default_factory=set)
    #: something reached the coordinator for this transaction (EndTxn is needed to finish it)
    started: bool = False
    #: bumped whenever the producer id or epoch changes: the producer restarts its sequence numbers
    generation: int = 0

    # -- queries ---------------------------------------------------------------------------------

    @property
    def in_transaction(self) -> bool:
        """A transaction is open and nobody is ending it (closing the producer aborts it)."""
        return self.state in (TxnState.IN_TRANSACTION, TxnState.ABORTABLE_ERROR)

    def sendable(self, tp: TopicPartition) -> bool:
        """Whether a batch for ``tp`` may go to its leader now."""
        if self.state is TxnState.FATAL_ERROR:
            return False
        return self.tv2 or tp in self.added

    def _raise_error(self) -> None:
        if self.error is not None and self.state in (TxnState.ABORTABLE_ERROR, TxnState.FATAL_ERROR):
            raise self.error

    # -- initialization --------------------------------------------------------------------------

    def begin_init(self) -> None:
        if self.state is not TxnState.UNINITIALIZED:
            raise IllegalStateError(f"cannot initialize transactions in state {self.state.value}")
        self.state = TxnState.INITIALIZING

    def init_request(self) -> dict[str, object]:
        """The InitProducerId body: a bump names the current producer id and epoch (KIP-360)."""
        bump = self.epoch_bump_required and self.producer_id >= 0
        return {"transactional_id": self.transactional_id, "transaction_timeout_ms": self.transaction_timeout_ms,
                "producer_id": self.producer_id if bump else -1, "producer_epoch": self.producer_epoch if bump else -1}

    def on_init_producer_id(self, code: int, producer_id: int = -1, producer_epoch: int = -1) -> Next:
        if code == E.NONE:
            self._set_producer(producer_id, producer_epoch)
            self.epoch_bump_required = False
            self.error = None
            self.state = TxnState.READY
            return Next.DONE
        if code in _COORDINATOR_CODES:
            return Next.FIND_COORDINATOR
        if E.from_code(code).retriable:
            return Next.RETRY
        if code in (E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, E.CLUSTER_AUTHORIZATION_FAILED, E.TRANSACTION_ABORTABLE):
            return self._abortable(code, "InitProducerId")
        if code in _FENCED_CODES:
            return self._fenced("InitProducerId")
        return self._fatal(code, "InitProducerId")

    def _set_producer(self, producer_id: int, producer_epoch: int) -> None:
        if (producer_id, producer_epoch) != (self.producer_id, self.producer_epoch):
            self.producer_id, self.producer_epoch = producer_id, producer_epoch
            self.generation += 1

    # -- the transaction -------------------------------------------------------------------------

    def begin(self) -> None:
        self._raise_error()
        if self.needs_epoch_bump:
            raise IllegalStateError("the last abort's epoch bump did not complete: call abort_transaction() again")
        if self.state is not TxnState.READY:
            raise IllegalStateError(f"cannot begin a transaction in state {self.state.value}")
        self.state = TxnState.IN_TRANSACTION
        self.added.clear()
        self.new.clear()
        self.pending.clear()
        self.started = False

    def check_send(self) -> None:
        """Raise unless records may be sent now (a transaction is open and has no error)."""
        self._raise_error()
        if self.state is not TxnState.IN_TRANSACTION:
            raise IllegalStateError(f"cannot send outside a transaction (state {self.state.value}); "
                                    "call begin_transaction() first")

    def add_partition(self, tp: TopicPartition) -> bool:
        """A record for ``tp`` joins the transaction; True when an AddPartitionsToTxn is now needed."""
        if tp in self.added or tp in self.new or tp in self.pending:
            return False
        if self.tv2:
            self.added.add(tp)  # the Produce itself adds it
            return False
        self.new.add(tp)
        return True

    def on_batch_sent(self) -> None:
        self.started = True

    def take_new_partitions(self) -> list[TopicPartition]:
        """The partitions for the next AddPartitionsToTxn (moved to ``pending``)."""
        self.pending |= self.new
        self.new.clear()
        return sorted(self.pending)

    def on_add_partitions(self, codes: Mapping[TopicPartition, int]) -> Next:
        errors = {tp: c for tp, c in codes.items() if c != E.NONE}
        if not errors:
            self.pending -= set(codes)
            self.added |= set(codes)
            self.started = True
            return Next.DONE
        worst = _first(errors.values(), (_COORDINATOR_CODES, {E.CONCURRENT_TRANSACTIONS}))
        if worst in _COORDINATOR_CODES:
            return Next.FIND_COORDINATOR
        if E.from_code(worst).retriable:
            return Next.RETRY
        self.pending -= set(codes)  # batches of these partitions are failed by the abort anyway
        if worst in _FENCED_CODES:
            return self._fenced("AddPartitionsToTxn")
        if worst in _FATAL_CODES:
            return self._fatal(worst, "AddPartitionsToTxn")
        if worst in _BUMP_CODES:
            return self._abortable_bump(worst, "AddPartitionsToTxn")
        if worst in (E.TOPIC_AUTHORIZATION_FAILED, E.OPERATION_NOT_ATTEMPTED, E.TRANSACTION_ABORTABLE):
            real = next((c for c in errors.values() if c != E.OPERATION_NOT_ATTEMPTED), worst)
            return self._abortable(real, f"AddPartitionsToTxn {sorted(errors)}")
        return self._abortable(worst, f"AddPartitionsToTxn {sorted(errors)}")

    def on_batch_failed(self, exc: BaseException) -> None:
        """A batch of the transaction failed for good (Kafka's ``maybeTransitionToErrorState``)."""
        if self.state not in (TxnState.IN_TRANSACTION, TxnState.COMMITTING, TxnState.PREPARED):
            return  # aborting anyway, or the first error is kept
        code = exc.code if isinstance(exc, KafkaError) else E.UNKNOWN_SERVER_ERROR
        if code == E.PRODUCER_FENCED:
            self._fenced("Produce")
        elif code in (E.CLUSTER_AUTHORIZATION_FAILED, E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, E.UNSUPPORTED_VERSION):
            self._fatal(code, "Produce")
        else:
            # the batch's sequence numbers are lost: a new epoch (KIP-360) lets the next transaction start over
            self._abortable_bump(code, f"a batch of the transaction failed: {exc}")

    # -- offsets (KIP-447) -----------------------------------------------------------------------

    def check_offsets(self) -> None:
        self._raise_error()
        if self.state is not TxnState.IN_TRANSACTION:
            raise IllegalStateError(f"cannot send offsets outside a transaction (state {self.state.value})")

    def on_add_offsets(self, code: int) -> Next:
        if code == E.NONE:
            self.started = True
            return Next.DONE
        return self._coordinator_error(code, "AddOffsetsToTxn", group_abortable=True)

    def on_txn_offset_commit(self, codes: Mapping[TopicPartition, int]) -> tuple[Next, set[TopicPartition]]:
        """(what next, the partitions whose offsets are written); a retry sends only the others."""
        done = {tp for tp, c in codes.items() if c == E.NONE}
        errors = {tp: c for tp, c in codes.items() if c != E.NONE}
        if not errors:
            self.started = True
            return Next.DONE, done
        worst = _first(errors.values(), (_COORDINATOR_CODES | {E.REQUEST_TIMED_OUT},))
        if worst in _COORDINATOR_CODES or worst == E.REQUEST_TIMED_OUT:
            return Next.FIND_COORDINATOR, done
        if E.from_code(worst).retriable:
            return Next.RETRY, done
        if worst in (E.UNKNOWN_MEMBER_ID, E.ILLEGAL_GENERATION, E.FENCED_INSTANCE_ID):
            self._to_abortable(CommitFailedError(
                f"TxnOffsetCommit: the group no longer has this consumer's generation "
                f"({E.from_code(worst).name}); abort the transaction", code=worst))
            return Next.FAILED, done
        if worst in _FENCED_CODES:
            return self._fenced("TxnOffsetCommit"), done
        if worst in (E.GROUP_AUTHORIZATION_FAILED, E.TRANSACTION_ABORTABLE):
            return self._abortable(worst, "TxnOffsetCommit"), done
        return self._fatal(worst, "TxnOffsetCommit"), done

    # -- ending ----------------------------------------------------------------------------------

    def check_ending(self) -> None:
        """Raise unless the transaction may be committed or prepared now."""
        self._raise_error()
        if self.state not in (TxnState.IN_TRANSACTION, TxnState.PREPARED):
            raise IllegalStateError(f"no transaction to end (state {self.state.value})")

    def prepare(self) -> None:
        """Everything sent is acknowledged: the transaction is prepared, to be ended by whoever holds
        its producer id and epoch."""
        self._raise_error()
        if self.state is not TxnState.IN_TRANSACTION:
            raise IllegalStateError(f"cannot prepare a transaction in state {self.state.value}")
        self.state = TxnState.PREPARED

    def begin_commit(self) -> bool:
        """Move to COMMITTING; False when nothing reached the coordinator (no EndTxn needed)."""
        if self.state is TxnState.COMMITTING:
            return True  # a commit that timed out, called again
        self._raise_error()
        if self.state not in (TxnState.IN_TRANSACTION, TxnState.PREPARED):
            raise IllegalStateError(f"cannot commit in state {self.state.value}")
        self.state = TxnState.COMMITTING
        if not self.started:
            self._complete()
            return False
        return True

    def begin_abort(self) -> bool:
        """Move to ABORTING; False when there is nothing to end on the coordinator (and no epoch bump
        that an EndTxn gives)."""
        if self.state is TxnState.ABORTING:
            return True
        if self.state is TxnState.FATAL_ERROR:
            self._raise_error()
        if self.state not in (TxnState.IN_TRANSACTION, TxnState.ABORTABLE_ERROR, TxnState.PREPARED):
            raise IllegalStateError(f"cannot abort in state {self.state.value}")
        self.state = TxnState.ABORTING
        self.new.clear()
        if self.started or (self.tv2 and self.epoch_bump_required):
            return True
        self._complete()
        return False

    def end_request(self, commit: bool) -> dict[str, object]:
        return {"transactional_id": self.transactional_id, "producer_id": self.producer_id,
                "producer_epoch": self.producer_epoch, "committed": commit}

    def on_end_txn(self, code: int, producer_id: int = -1, producer_epoch: int = -1) -> Next:
        what = "EndTxn(commit)" if self.state is TxnState.COMMITTING else "EndTxn(abort)"
        if code == E.NONE:
            if self.tv2 and producer_id >= 0:
                self._set_producer(producer_id, producer_epoch)  # every EndTxn v5 bumps the epoch
                self.epoch_bump_required = False
            self._complete()
            return Next.DONE
        return self._coordinator_error(code, what)

    @property
    def needs_epoch_bump(self) -> bool:
        """After an abort: an InitProducerId with the current id and epoch is due (version 1)."""
        return self.state is TxnState.INITIALIZING and self.epoch_bump_required

    def _complete(self) -> None:
        self.state = TxnState.INITIALIZING if self.epoch_bump_required and not self.tv2 else TxnState.READY
        self.epoch_bump_required = self.epoch_bump_required and not self.tv2
        self.error = None
        self.started = False
        self.added.clear()
        self.new.clear()
        self.pending.clear()

    # -- errors ----------------------------------------------------------------------------------

    def _coordinator_error(self, code: int, what: str, group_abortable: bool = False) -> Next:
        if code in _COORDINATOR_CODES:
            return Next.FIND_COORDINATOR
        if E.from_code(code).retriable:
            return Next.RETRY
        if code in _FENCED_CODES:
            return self._fenced(what)
        if code in _FATAL_CODES:
            return self._fatal(code, what)
        if code in _BUMP_CODES:
            return self._abortable_bump(code, what)
        if code == E.TRANSACTION_ABORTABLE or (group_abortable and code == E.GROUP_AUTHORIZATION_FAILED):
            return self._abortable(code, what)
        return self._fatal(code, what)

    def _fenced(self, what: str) -> Next:
        self._to_fatal(ProducerFencedError(
            f"{what}: producer {self.producer_id} epoch {self.producer_epoch} of transactional id "
            f"{self.transactional_id!r} is fenced by a newer producer with the same id"))
        return Next.FAILED

    def fail(self, code: int, what: str) -> Next:
        """A fatal error the edge met outside the machine (FindCoordinator refused the id)."""
        return self._fatal(code, what)

    def _fatal(self, code: int, what: str) -> Next:
        self._to_fatal(FatalTransactionError(f"{what}: {E.from_code(code).name}", code=code))
        return Next.FAILED

    def _abortable(self, code: int, what: str) -> Next:
        self._to_abortable(AbortableTransactionError(f"{what}: {E.from_code(code).name}; abort the transaction",
                                                     code=code))
        return Next.FAILED

    def _abortable_bump(self, code: int, what: str) -> Next:
        if not self.can_bump:
            return self._fatal(code, what)
        if self.state is not TxnState.ABORTING:
            self.epoch_bump_required = True
        self._to_abortable(AbortableTransactionError(f"{what}: {E.from_code(code).name}; abort the transaction",
                                                     code=code))
        return Next.FAILED

    def _to_abortable(self, exc: KafkaError) -> None:
        err = exc if isinstance(exc, TransactionError) else _as_abortable(exc)
        if self.state is TxnState.ABORTING or self.state is TxnState.FATAL_ERROR:
            self.error = self.error or err
            return
        if self.state is TxnState.INITIALIZING and self.producer_id < 0:
            self._to_fatal(FatalTransactionError(str(exc), code=exc.code))
            return
        self.state = TxnState.ABORTABLE_ERROR
        self.error = err

    def _to_fatal(self, exc: TransactionError) -> None:
        self.state = TxnState.FATAL_ERROR
        self.error = exc


def _as_abortable(exc: KafkaError) -> AbortableTransactionError:
    err = AbortableTransactionError(str(exc), code=exc.code)
    err.__cause__ = exc
    return err


def _first(codes: Iterable[int], preferred: tuple[Iterable[int], ...]) -> int:
    """The error to act on among several partitions' codes: a non-retriable one first, then one of
    ``preferred`` (in order), then any."""
    codes = list(codes)
    for c in codes:
        if c != E.OPERATION_NOT_ATTEMPTED and not E.from_code(c).retriable:
            return c
    for group in preferred:
        for c in codes:
            if c in group:
                return c
    return codes[0]
