"""What a pure coordinator asks its edge to append, and the order those appends complete in.

Both coordinators (groups over ``__consumer_offsets``, transactions over
``__transaction_state``) are effect-returning state machines: a request yields
replies and :class:`Write` s, and the replies that depend on a write are held back
until the edge reports it durable (``write_committed``) or failed
(``write_failed``).  On commit a coordinator replays the records the write carries
(the same replay its load runs); :class:`PendingWrite` is a handed-out write with
what waits for its outcome.  Writes of one partition complete in the order they were
handed out; :class:`InFlightWrites` is the bookkeeping both coordinators use to
hold them in that order.  Pure: no I/O, no clock.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from protocol.error_codes import ErrorCode

__all__ = ["InFlightWrites", "PendingWrite", "TxnMarker", "Write", "append_error", "coordinator_unavailable",
           "write_error"]

E = ErrorCode
TOO_LARGE = (E.MESSAGE_TOO_LARGE, E.RECORD_LIST_TOO_LARGE, E.INVALID_FETCH_SIZE)

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class TxnMarker:
    """A COMMIT (``commit``) or ABORT marker written by the transaction coordinator of ``coordinator_epoch``."""

    commit: bool
    coordinator_epoch: int


@dataclass(frozen=True, slots=True)
class Write:
    """Records for one partition of the coordinator's topic, appended as one batch.

    ``records`` are ``(key, value)`` pairs (value ``None`` = tombstone).  With ``producer_id`` set the
    batch is a transactional one of that producer (a transactional offset commit); with ``marker``
    set the write is that producer's COMMIT/ABORT control batch instead of records.  The edge
    reports the outcome by ``write_id``.
    """

    write_id: int
    partition: int
    records: list[tuple[bytes, bytes | None]] = field(default_factory=list)
    producer_id: int = -1
    producer_epoch: int = -1
    marker: TxnMarker | None = None


class PendingWrite:
    """A handed-out :class:`Write` and what waits for its outcome (Kafka's append future): the replies held
    back until it is durable, and what a coordinator finishes or undoes then.  What the write *changes*
    is not here: a coordinator replays the records it carries when it commits."""

    __slots__ = ("waiters", "write")

    def __init__(self, write: Write) -> None:
        self.write = write
        self.waiters: list[tuple[Callable[[], None], Callable[[ErrorCode], None]]] = []

    def wait(self, committed: Callable[[], None], failed: Callable[[ErrorCode], None]) -> None:
        """Call ``committed()`` once the write is durable, or ``failed(append_error)`` if it fails."""
        self.waiters.append((committed, failed))

    def committed(self) -> None:
        for on_commit, _ in self.waiters:
            on_commit()

    def failed(self, error: ErrorCode) -> None:
        for _, on_fail in self.waiters:
            on_fail(error)


class InFlightWrites(Generic[T]):
    """Handed-out writes (with what depends on them, ``T``) until they complete, in order per partition."""

    __slots__ = ("_items", "_order")

    def __init__(self) -> None:
        self._items: dict[int, tuple[int, T]] = {}
        self._order: dict[int, deque[int]] = {}

    def __len__(self) -> int:
        return len(self._items)

    def items(self) -> list[T]:
        """What the writes in flight carry, oldest first per partition."""
        return [item for _, item in self._items.values()]

    def add(self, partition: int, write_id: int, item: T) -> None:
        self._items[write_id] = (partition, item)
        self._order.setdefault(partition, deque()).append(write_id)

    def take(self, write_id: int) -> T:
        """The item of ``write_id``, which must be its partition's oldest write in flight."""
        found = self._items.get(write_id)
        if found is None:
            raise KeyError(f"no write {write_id} in flight")
        partition, item = found
        order = self._order[partition]
        if order[0] != write_id:
            raise ValueError(f"writes of partition {partition} complete in order: {order[0]} before {write_id}")
        order.popleft()
        if not order:
            del self._order[partition]
        del self._items[write_id]
        return item


def append_error(error_code: int) -> ErrorCode:
    """The error a failed append reported, as an :class:`ErrorCode` (an unknown or missing code reads as
    UNKNOWN_SERVER_ERROR)."""
    try:
        return ErrorCode(error_code) if error_code else E.UNKNOWN_SERVER_ERROR
    except ValueError:
        return E.UNKNOWN_SERVER_ERROR


def coordinator_unavailable(append_error: ErrorCode) -> ErrorCode:
    """How a failed append to a coordinator's partition reads to its clients (shared by Kafka's group
    and transaction coordinators): retry the coordinator, or look it up again."""
    if append_error in (E.UNKNOWN_TOPIC_OR_PARTITION, E.NOT_ENOUGH_REPLICAS,
                        E.NOT_ENOUGH_REPLICAS_AFTER_APPEND, E.REQUEST_TIMED_OUT):
        return E.COORDINATOR_NOT_AVAILABLE
    if append_error in (E.NOT_LEADER_OR_FOLLOWER, E.KAFKA_STORAGE_ERROR):
        return E.NOT_COORDINATOR
    return append_error


def write_error(append_error: ErrorCode) -> ErrorCode:
    """The error for a failed coordinator write (Kafka's ``appendGroupMetadataErrorToResponseError``
    and the transaction log's equivalent)."""
    if append_error in TOO_LARGE:
        return E.UNKNOWN_SERVER_ERROR
    return coordinator_unavailable(append_error)
