"""The share-group side of the ``kbroker`` streaming source (``option("shareGroup", "G")``, KIP-932).

A query reading a share group is one member of it: its driver-side stream reader (the Python process
Spark keeps for the query's offsets) holds one :class:`~client.sync.SyncShareConsumer`, and every
acquisition and acknowledgement goes through that one share session, because a broker takes a
record's acknowledgement only from the member it delivered the record to.

* ``latestOffset`` acquires records (:meth:`ShareBatches.acquire`) and files them under a new batch
  number; the offsets Spark checkpoints are just ``{"shareBatch": n}``.
* ``partitions`` hands the batch's records to the executors inside the input partitions
  (:meth:`ShareBatches.records_between`): executors never talk to the share group.
* ``commit`` (which Spark sends once the micro-batch's output is committed) accepts them
  (:meth:`ShareBatches.accept_through`).  Spark commits a batch only when it plans the next one, so
  after a batch with records the next ``latestOffset`` always moves on (an empty batch, if nothing
  new came) and the records are accepted promptly, even by a query with ``availableNow`` that ends.
* Records are held with RENEW while their batch runs, and renewed again every half lock duration (by a
  thread, and between the slices of a poll's wait), so a slow batch keeps them.  A fetch acquires whole
  log batches: what it brings beyond a batch's limit is held (and renewed) for the next batch.
* When a query fails or is stopped, Spark ends this process (``stop`` is not called): its connections
  close, and the brokers end the member's share sessions and release what it held at once.  Where the
  connections do not close (a host lost), the locks run out.  Either way the records go to other
  members (or the next run) with a higher delivery count, and nothing accepted comes back.
* A batch re-run after a restart (planned, not committed) finds no records here (they were held by
  the dead run's session and come back to the group) and is empty.

Pure option checks (:func:`share_options`) are here too.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from client.share_fetcher import AcknowledgeType
from client.sync import SyncShareConsumer
from client.types import Record, TopicPartition

log = logging.getLogger(__name__)

#: the key of the offsets a share-group stream checkpoints
OFFSET_KEY = "shareBatch"

#: source options that do not apply to a share group (the group decides what each query reads)
NOT_FOR_SHARE_GROUPS = {
    "assign": "a share group assigns partitions itself; use 'subscribe'",
    "subscribepattern": "use 'subscribe' with topic names",
    "startingoffsets": "where a share group starts is its share.auto.offset.reset group config "
                       "(or kbroker share-groups reset-offsets)",
    "startingoffsetsbytimestamp": "where a share group starts is its share.auto.offset.reset group config",
    "startingtimestamp": "where a share group starts is its share.auto.offset.reset group config",
    "startingoffsetsbytimestampstrategy": "where a share group starts is its share.auto.offset.reset group config",
    "endingoffsets": "share groups are read as streams only",
    "endingoffsetsbytimestamp": "share groups are read as streams only",
    "endingtimestamp": "share groups are read as streams only",
    "failondataloss": "a share group skips records that are gone by itself",
    "minpartitions": "a micro-batch has one Spark partition per topic-partition it got records from",
    "maxrecordsperpartition": "a micro-batch has one Spark partition per topic-partition it got records from",
    "minoffsetspertrigger": "not supported with shareGroup",
    "maxtriggerdelay": "not supported with shareGroup",
    "groupidprefix": "the group is the shareGroup option",
    "kafka.group.id": "the group is the shareGroup option",
    "kafkaconsumer.polltimeoutms": "executors do not poll a share group; see shareGroup.pollTimeoutMs",
}
DEFAULT_POLL_TIMEOUT_MS = 1000
#: max_records of a poll without a limit (the brokers bound what a member holds anyway:
#: group.share.partition.max.record.locks)
_POLL_ALL = 1 << 30
#: how long the first micro-batch waits for the group to assign partitions to the new member
JOIN_TIMEOUT_MS = 30_000


@dataclass(frozen=True)
class ShareOptions:
    group: str
    topics: tuple[str, ...]
    poll_timeout_ms: int


def is_share(options: Mapping[str, str]) -> bool:
    """Whether the (lower-cased) source options read a share group."""
    return options.get("sharegroup") is not None


def share_options(options: Mapping[str, str]) -> ShareOptions:
    """Check the (lower-cased) options of a share-group stream: ``shareGroup``, ``subscribe`` and what
    applies; every option that does not apply is refused, saying why."""
    group = str(options.get("sharegroup") or "").strip()
    if not group:
        raise ValueError("option 'shareGroup' must name a share group")
    for name, why in NOT_FOR_SHARE_GROUPS.items():
        if options.get(name) not in (None, ""):
            raise ValueError(f"option '{name}' can't be used with 'shareGroup': {why}")
    topics = tuple(t.strip() for t in str(options.get("subscribe") or "").split(",") if t.strip())
    if not topics:
        raise ValueError("option 'shareGroup' needs 'subscribe' with the topics the group reads")
    raw = options.get("sharegroup.polltimeoutms")
    try:
        poll = DEFAULT_POLL_TIMEOUT_MS if raw in (None, "") else int(str(raw))
    except ValueError:
        poll = -1
    if poll < 0:
        raise ValueError(f"option 'shareGroup.pollTimeoutMs' must be milliseconds >= 0, not {raw!r}")
    return ShareOptions(group, topics, poll)


def batch_number(offset: Mapping[str, Any] | None) -> int:
    """The batch number of a checkpointed offset (0 for none)."""
    return int((offset or {}).get(OFFSET_KEY, 0))


def offset(batch: int) -> dict[str, int]:
    return {OFFSET_KEY: batch}


class ShareBatches:
    """The driver-side member of the share group: records acquired per micro-batch, held until the batch
    commits.  ``config`` is the consumer's keyword arguments (``group_id`` included).  Not picklable
    state: made where it is used (the stream reader creates it lazily)."""

    def __init__(self, topics: tuple[str, ...], config: dict[str, Any], poll_timeout_ms: int) -> None:
        self._topics = topics
        self._config = config
        self._poll_timeout_ms = poll_timeout_ms
        self._consumer: SyncShareConsumer | None = None
        self._batches: dict[int, list[Record]] = {}  # batch number -> records held (RENEWed) for it
        self._spare: list[Record] = []  # acquired beyond a batch's limit: held for the next batch
        self._lock = threading.RLock()  # the consumer is called from Spark's calls and the renewal thread
        self._closed = threading.Event()
        self._renewer: threading.Thread | None = None
        self._renewed_at = time.monotonic()

    # -- the consumer ----------------------------------------------------------------------------

    def _sc(self) -> SyncShareConsumer:
        if self._consumer is None:
            self._consumer = SyncShareConsumer(*self._topics, acknowledgement_mode="explicit", **self._config)
            self._renewer = threading.Thread(target=self._renew_loop, name="kbroker-share-renew", daemon=True)
            self._renewer.start()
        return self._consumer

    def close(self) -> None:
        """Leave the group; the brokers release the records still held (they go to other members)."""
        self._closed.set()
        with self._lock:
            if self._consumer is not None:
                self._consumer.close()
                self._consumer = None
            self._batches.clear()
            self._spare.clear()

    # -- acquiring -------------------------------------------------------------------------------

    def acquire(self, batch: int, max_records: int | None = None,
                below: Mapping[TopicPartition, int] | None = None) -> int:
        """Records for micro-batch ``batch`` (at most ``max_records``): those held over from the last
        acquisition first, then new ones — waiting up to the poll timeout for the first, then taking what is
        there without waiting.  A fetch acquires whole log batches, so it may bring more than asked: the
        rest is held (and renewed) for the next batch.  With ``below`` (availableNow: the log end offsets
        when the query started) only records under those offsets are taken; later ones are released at
        once.  Returns how many records the batch got."""
        with self._lock:
            fresh = self._consumer is None
            sc = self._sc()
            pool, self._spare = self._spare, []
            pending = self._join(sc, max_records) if fresh else {}
            timeout = self._poll_timeout_ms
            while max_records is None or len(pool) < max_records:
                want = _POLL_ALL if max_records is None else max_records - len(pool)
                kept, released = self._take(sc, pending or self._poll(sc, timeout, want),
                                            pool, below)
                pending = {}
                if not kept or released:
                    break
                timeout = 0
            if sc.buffered:  # acquired by the last fetch beyond what it handed out: held for later
                self._take(sc, sc.getmany(timeout_ms=0, max_records=sc.buffered), pool, below)
            got = pool if max_records is None else pool[:max_records]
            self._spare = pool[len(got):]
            if got:
                self._batches[batch] = got
            return len(got)

    @staticmethod
    def _take(sc: SyncShareConsumer, polled: Mapping[TopicPartition, list[Record]], pool: list[Record],
              below: Mapping[TopicPartition, int] | None) -> tuple[int, int]:
        """Hold the records of a poll (RENEW: explicit mode wants each acknowledged before the next poll)
        into ``pool``, or release those at or past ``below``; returns (held, released)."""
        kept = released = 0
        for tp, records in polled.items():
            for r in records:
                if below is not None and r.offset >= below.get(tp, 0):
                    sc.acknowledge(r, AcknowledgeType.RELEASE)
                    released += 1
                else:
                    sc.acknowledge(r, AcknowledgeType.RENEW)
                    pool.append(r)
                    kept += 1
        if released:
            sc.commit()  # now, not with a later fetch (which would acquire them again)
        return kept, released

    @staticmethod
    def _join(sc: SyncShareConsumer, max_records: int | None) -> dict[TopicPartition, list[Record]]:
        """A new member: poll until the group has assigned it partitions (nothing is delivered before),
        so that the first micro-batch (of an ``availableNow`` query above all) does not come back empty
        just because the member was still joining.  Returns what the last poll delivered."""
        deadline = time.monotonic() + JOIN_TIMEOUT_MS / 1000
        while not sc.assignment() and time.monotonic() < deadline:
            polled = sc.getmany(timeout_ms=100, max_records=max_records or _POLL_ALL)
            if polled:
                return polled
        return {}

    def holding(self, upto: int) -> bool:
        """Whether records of a batch numbered ``upto`` or lower wait for their batch to commit."""
        with self._lock:
            return any(b <= upto for b in self._batches)

    def records_between(self, start: int, end: int) -> list[Record]:
        """The records of batches ``start < n <= end`` (none for batches this member did not acquire)."""
        with self._lock:
            return [r for b in sorted(self._batches) if start < b <= end for r in self._batches[b]]

    # -- acknowledging ---------------------------------------------------------------------------

    def accept_through(self, end: int) -> None:
        """Batches up to ``end`` committed: accept their records (logged if a lock had run out first: the
        record then went back to the group and may come again)."""
        with self._lock:
            done = [b for b in self._batches if b <= end]
            if not done or self._consumer is None:
                return
            sc = self._consumer
            for b in done:
                for r in self._batches.pop(b):
                    sc.acknowledge(r, AcknowledgeType.ACCEPT)
            for tp, error in sc.commit().items():
                if error is not None:
                    log.warning("share group %s: accepting the records of %s-%d failed (%s); records "
                                "whose lock ran out before are delivered again", self._config.get("group_id"),
                                tp.topic, tp.partition, error)

    def _renew_loop(self) -> None:
        """Every half lock duration, renew the locks of the records held (for batches still running, or for
        the next batch)."""
        while not self._closed.wait(0.1):
            with self._lock:
                if self._consumer is not None:
                    self._renew_due(self._consumer)

    def _renew_due(self, sc: SyncShareConsumer) -> None:
        """Renew the held records' locks if half a lock duration passed since the last time (the caller
        holds ``self._lock``)."""
        now = time.monotonic()
        if now - self._renewed_at < self._renew_interval_s():
            return
        self._renewed_at = now
        held = [r for records in self._batches.values() for r in records] + self._spare
        if not held:
            return
        try:
            for r in held:
                sc.acknowledge(r, AcknowledgeType.RENEW)
            sc.commit()
        except Exception as exc:  # a broker away for a moment: the next round tries again
            log.warning("share group %s: renewing record locks failed: %s", self._config.get("group_id"), exc)

    def _poll(self, sc: SyncShareConsumer, timeout_ms: int, max_records: int) -> dict[TopicPartition, list[Record]]:
        """``getmany``, waiting in slices so that the held records' locks are renewed meanwhile."""
        deadline = time.monotonic() + timeout_ms / 1000
        while True:
            left_ms = max(0, int((deadline - time.monotonic()) * 1000))
            polled = sc.getmany(timeout_ms=min(left_ms, int(self._renew_interval_s() * 1000)),
                                max_records=max_records)
            if polled or time.monotonic() >= deadline:
                return polled
            self._renew_due(sc)

    def _renew_interval_s(self) -> float:
        """Half the lock duration the brokers announced (they tell it with each fetch; until then, soon)."""
        sc = self._consumer
        lock_ms = sc.acquisition_lock_timeout_ms if sc is not None else None
        return 0.2 if lock_ms is None else max(0.2, lock_ms / 2000)
