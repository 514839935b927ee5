"""The group coordinator shard's writes: what one call yields and the writes it hands out until they complete.

A call on the shard (:class:`~broker.coordinator.group.coordinator.GroupCoordinator`) runs inside a
:class:`ShardWrites`: the time of the call, the :class:`Effects` it builds, and one open
:class:`GroupWrite` per ``__consumer_offsets`` partition it writes to (one batch each).  When the
call finishes, its writes are handed out; they complete (``write_committed`` / ``write_failed``) in
that order per partition.  The membership and offset managers write through the same
:class:`ShardWrites`, so the records of one call share one batch per partition.

A :class:`GroupWrite` says what its outcome settles (see its doc): the records the shard replays
when it commits, the group tombstones it carries, its KIP-848 records, and the waiters — the replies
held back until it is durable.  Pure: no I/O, no clock of its own.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator
from typing import Any

from broker.coordinator.write import (
    TOO_LARGE,
    InFlightWrites,
    PendingWrite,
    TxnMarker,
    Write,
    coordinator_unavailable,
    write_error,
)
from protocol.error_codes import ErrorCode

from .model import Group, GroupState
from .partitioning import coordinator_partition
from .records import OffsetCommitRecord

__all__ = ["Effects", "GroupWrite", "ShardWrites", "commit_error", "group_write_error"]

E = ErrorCode
Response = dict[str, Any]
Record = tuple[int, bytes, bytes | None]
#: a classic group's state before a transition a write makes, to go back to if the write fails
StateBefore = tuple[GroupState, GroupState | None, int]


class Effects:
    """What the edge must do after a call: send ``replies``, append and complete ``writes``.

    ``next_deadline_ms`` is when :meth:`GroupCoordinator.poll` should next be called (None = no
    timer armed).  It is a lower bound: polling early is harmless.  ``removed_groups`` names the
    groups that ceased to exist in this call (their deletion was committed), for the edge's
    per-group bookkeeping.

    A plain class, not a dataclass: one is made per call on the shard (every heartbeat), and a
    dataclass's ``__init__`` is generated at import and so stays interpreted in the compiled build.
    """

    __slots__ = ("next_deadline_ms", "removed_groups", "replies", "writes")

    def __init__(self, replies: list[tuple[Hashable, Response]] | None = None, writes: list[Write] | None = None,
                 next_deadline_ms: int | None = None, removed_groups: list[str] | None = None) -> None:
        self.replies: list[tuple[Hashable, Response]] = [] if replies is None else replies
        self.writes: list[Write] = [] if writes is None else writes
        self.next_deadline_ms = next_deadline_ms
        self.removed_groups: list[str] = [] if removed_groups is None else removed_groups

    def __repr__(self) -> str:
        return (f"Effects(replies={self.replies!r}, writes={self.writes!r}, "
                f"next_deadline_ms={self.next_deadline_ms!r}, removed_groups={self.removed_groups!r})")

    @property
    def records(self) -> list[Record]:
        """Every record of :attr:`writes` as ``(partition, key, value)``, in order."""
        return [(w.partition, key, value) for w in self.writes for key, value in w.records]


class GroupWrite(PendingWrite):
    """A handed-out write of the shard and what its outcome settles.

    What it carries, by the way it reaches the shard's state:

    * ``offsets`` — offset records, replayed (:meth:`GroupCoordinator.replay`) when the write commits;
      with a producer id the batch is a transactional offset commit, and with a ``marker`` the write is
      that producer's COMMIT/ABORT marker, replayed by :meth:`GroupCoordinator.replay_end_transaction`;
    * ``deletions`` — the group tombstones it carries, with the classic group each deletes (Dead until
      the write completes, then gone — the tombstone replayed — or back to what it was; None when
      only the group's offsets existed);
    * ``consumer_records`` — KIP-848 group records, replayed when they were emitted: committed with the
      write, or their groups reverted when it fails;
    * ``waiters`` (:class:`~broker.coordinator.write.PendingWrite`) — the replies held back, and the
      completion of a classic group's stored metadata (Stable after SyncGroup, a static member's new id).
    """

    __slots__ = ("consumer_records", "deletions", "offsets")

    def __init__(self, write: Write) -> None:
        super().__init__(write)
        self.offsets: list[OffsetCommitRecord] = []
        self.deletions: list[tuple[str, Group | None, StateBefore]] = []
        #: as (group id, key, value)
        self.consumer_records: list[tuple[str, bytes, bytes | None]] = []


def commit_error(append_error: ErrorCode) -> ErrorCode:
    """The OffsetCommit error for a failed ``__consumer_offsets`` append (Kafka's ``storeOffsets``)."""
    if append_error in TOO_LARGE:
        return E.INVALID_COMMIT_OFFSET_SIZE
    return coordinator_unavailable(append_error)


#: The error for any other failed group write (Kafka's ``appendGroupMetadataErrorToResponseError``).
group_write_error = write_error


class ShardWrites:
    """The call running on a shard (``now``, the effects ``fx`` it builds) and the writes handed out.

    ``partitions``: how many partitions ``__consumer_offsets`` has (a group's partition).
    """

    __slots__ = ("_inflight", "_next_write_id", "_open", "_partitions", "fx", "now")

    def __init__(self, now_ms: int, partitions: int) -> None:
        self.now = now_ms
        self.fx = Effects()
        self._partitions = partitions
        # the writes the current call is building (one per partition), then the handed-out ones until
        # they commit or fail, in hand-out order per partition
        self._open: dict[int, GroupWrite] = {}
        self._inflight: InFlightWrites[GroupWrite] = InFlightWrites()
        self._next_write_id = 1

    def __len__(self) -> int:
        """How many handed-out writes have not completed yet."""
        return len(self._inflight)

    def begin(self, now_ms: int) -> None:
        """Start a call at ``now_ms``."""
        self.now = now_ms
        self.fx = Effects()
        self._open = {}

    def finish(self, next_deadline_ms: int | None) -> Effects:
        """End the call: hand its writes out; its effects."""
        fx = self.fx
        for pw in self._open.values():
            self._inflight.add(pw.write.partition, pw.write.write_id, pw)
            fx.writes.append(pw.write)
        self._open = {}
        fx.next_deadline_ms = next_deadline_ms
        return fx

    def reply(self, token: Hashable, response: Response) -> None:
        self.fx.replies.append((token, response))

    def partition(self, group_id: str) -> int:
        """The ``__consumer_offsets`` partition of ``group_id``."""
        return coordinator_partition(group_id, self._partitions)

    def write(self, partition: int, producer_id: int = -1, producer_epoch: int = -1,
              marker: TxnMarker | None = None) -> GroupWrite:
        """The write the current call appends to ``partition`` (one batch per partition and call); with a
        producer id, that producer's transactional batch (or, with ``marker``, its COMMIT/ABORT marker)."""
        pw = self._open.get(partition)
        if pw is None:
            pw = self._open[partition] = GroupWrite(Write(self._next_write_id, partition, [], producer_id,
                                                            producer_epoch, marker))
            self._next_write_id += 1
        elif (pw.write.producer_id, pw.write.marker) != (producer_id, marker):
            raise ValueError(f"one batch per partition and call: {pw.write} and producer {producer_id}")
        return pw

    def for_group(self, group_id: str) -> GroupWrite:
        """The write of the current call to ``group_id``'s partition."""
        return self.write(self.partition(group_id))

    def reply_after(self, writes: list[GroupWrite], token: Hashable, response: Response,
                    on_error: Callable[[GroupWrite, ErrorCode], None]) -> None:
        """Send ``response`` to ``token`` once every write in ``writes`` has completed.

        A failed write first calls ``on_error(write, append_error)`` to put its error into the
        response.  With no writes the response goes out at once.
        """
        if not writes:
            self.reply(token, response)
            return
        left = [len(writes)]

        def settle() -> None:
            left[0] -= 1
            if not left[0]:
                self.reply(token, response)

        for pw in writes:
            def failed(error: ErrorCode, pw: GroupWrite = pw) -> None:
                on_error(pw, error)
                settle()

            pw.wait(settle, failed)

    def take(self, write_id: int) -> GroupWrite:
        """The handed-out write ``write_id``, which completes now (the oldest of its partition)."""
        return self._inflight.take(write_id)

    def in_flight(self) -> list[GroupWrite]:
        """The handed-out writes not completed yet, oldest first per partition."""
        return self._inflight.items()

    def pending(self) -> Iterator[GroupWrite]:
        """The writes not committed yet: those handed out, then those the current call is building."""
        yield from self._inflight.items()
        yield from self._open.values()
