"""Partition: one partition's replication state on this broker (Kafka's ``Partition``), sans-IO.

As **leader** it tracks each follower's log end offset (from the offsets its
Fetch requests carry), advances the high watermark to the smallest log end
offset in the ISR, and proposes ISR changes: a follower that has not caught up
for ``replica.lag.time.max.ms`` leaves it, one that reached the high watermark
and the start of the current leader epoch rejoins it.  While a change is being
written to the metadata store the *maximal* ISR (old and proposed together) is
used for the high watermark, so it never runs ahead of any replica that might
still be in the ISR.  As **follower** it only knows its leader and epoch; the
replica fetcher appends what the leader sends and sets the high watermark.

Broker epochs (KIP-380): the partition record names the incarnation of each ISR
member; this broker leads only when the record names its current incarnation (a
restarted broker never leads at its old epoch), and as leader it counts only
fetches of a follower's current incarnation, and proposes only those for the ISR.

During a controlled shutdown the leader stops taking appends (:attr:`handing_over`)
so that its in-sync followers can reach its log end before leadership moves.

The clock is passed in (milliseconds); the log is the partition's
:class:`~broker.log.partition_log.PartitionLog`.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass

from broker.cluster.records import NO_LEADER, PartitionRecord
from broker.log.partition_log import PartitionLog
from protocol.error_codes import ErrorCode

__all__ = ["FollowerState", "Partition"]

E = ErrorCode


@dataclass(slots=True)
class FollowerState:
    log_end_offset: int = -1
    last_caught_up_ms: int = 0
    last_fetch_ms: int = 0
    #: The leader's LEO when this follower's previous fetch arrived (Kafka's lastFetchLeaderLogEndOffset).
    leader_leo_at_last_fetch: int = -1
    broker_epoch: int = -1


class Partition:
    def __init__(self, topic: str, partition: int, topic_id: uuid.UUID, local_id: int, log: PartitionLog) -> None:
        self.topic = topic
        self.partition = partition
        self.topic_id = topic_id
        self.local_id = local_id
        self.log = log
        self.replicas: tuple[int, ...] = ()
        self.leader = NO_LEADER
        self.leader_epoch = -1
        self.partition_epoch = -1
        self.isr: tuple[int, ...] = ()
        self.record_revision = 0
        #: the partition's record as last taken in (what ISR changes and handovers rewrite)
        self.record = PartitionRecord(NO_LEADER, -1, ())
        self.followers: dict[int, FollowerState] = {}
        #: ISR change written to the store but not yet seen back in the image.
        self.pending_isr: tuple[int, ...] | None = None
        #: Start offset of the current leader epoch (a follower must reach it to rejoin the ISR).
        self.epoch_start_offset = 0
        #: The broker epoch each ISR member joined with (-1: unknown), from the record.
        self.isr_epochs: dict[int, int] = {}
        #: Controlled shutdown: no more appends; leadership moves once the followers have everything.
        self.handing_over = False
        #: how many times this broker became the leader: a term lasts through leader-epoch bumps that keep
        #: it leader (a reassignment completing), during which its log is never truncated
        self.leader_term = 0
        #: replication throttles naming this replica (topic configs ``leader``/``follower.replication.
        #: throttled.replicas``): as leader, out-of-sync followers wait for the quota; as follower, it does
        self.leader_throttled = False
        self.follower_throttled = False

    # -- role changes ------------------------------------------------------------------
    @property
    def is_leader(self) -> bool:
        return self.leader == self.local_id

    def apply_record(self, record: PartitionRecord, replicas: tuple[int, ...], revision: int,
                     now_ms: int, local_epoch: int = -1) -> str | None:
        """Take in the partition's record from the image; returns "leader"/"follower" on a role change.

        ``local_epoch``: this broker's current broker epoch.  A record naming this broker leader at
        the epoch of an earlier incarnation is not followed: until the controller elects again, the
        partition has no leader here."""
        was_leader, old_epoch = self.is_leader, self.leader_epoch
        self.record = record
        self.replicas = replicas
        self.isr = record.isr
        self.isr_epochs = {r: record.epoch_of(r) for r in record.isr}
        self.partition_epoch = record.partition_epoch
        self.record_revision = revision
        self.pending_isr = None
        leader = record.leader
        if leader == self.local_id and local_epoch >= 0 and record.epoch_of(leader) not in (-1, local_epoch):
            leader = NO_LEADER  # an earlier incarnation of this broker: it may have lost what it had
        if leader == self.local_id:
            if not was_leader or record.leader_epoch != old_epoch:
                if not was_leader:
                    self.leader_term += 1
                self.leader, self.leader_epoch = leader, record.leader_epoch
                self.handing_over = False
                self._become_leader(now_ms)
                return "leader"
            self._sync_followers(now_ms)
            return None
        changed = was_leader or leader != self.leader or record.leader_epoch != old_epoch
        self.leader, self.leader_epoch = leader, record.leader_epoch
        self.handing_over = False
        if changed:
            self.followers = {}
            return "follower"
        return None

    def _become_leader(self, now_ms: int) -> None:
        log = self.log
        self.epoch_start_offset = log.log_end_offset
        log.assign_leader_epoch(self.leader_epoch)
        self.followers = {}
        self._sync_followers(now_ms)
        # A new leader's HW stays where it was until the ISR has caught up (never moves backwards).

    def _sync_followers(self, now_ms: int) -> None:
        for r in self.replicas:
            if r != self.local_id and r not in self.followers:
                # ISR members count as caught up now (Kafka: lastCaughtUpTime = leader election time).
                self.followers[r] = FollowerState(last_caught_up_ms=now_ms if r in self.isr else 0)
        for r in list(self.followers):
            if r not in self.replicas:
                del self.followers[r]

    # -- leader: follower progress and the high watermark ----------------------------
    @property
    def maximal_isr(self) -> tuple[int, ...]:
        if self.pending_isr is None:
            return self.isr
        return tuple(dict.fromkeys((*self.isr, *self.pending_isr)))

    def check_leader_epoch(self, current_leader_epoch: int) -> int:
        """Kafka's epoch check for Fetch/ListOffsets/OffsetsForLeaderEpoch (-1 skips it)."""
        if current_leader_epoch < 0 or current_leader_epoch == self.leader_epoch:
            return E.NONE
        if current_leader_epoch < self.leader_epoch:
            return E.FENCED_LEADER_EPOCH
        return E.UNKNOWN_LEADER_EPOCH

    def update_follower(self, replica_id: int, fetch_offset: int, now_ms: int, broker_epoch: int = -1) -> bool:
        """A follower fetched from ``fetch_offset``: record its progress; True if the high watermark moved.

        ``broker_epoch``: the incarnation the fetch came from (-1: not said).  A new incarnation starts
        its progress afresh (it may have lost what the old one had)."""
        state = self.followers.get(replica_id)
        if state is None:
            return False
        if broker_epoch >= 0 and broker_epoch != state.broker_epoch:
            if broker_epoch < state.broker_epoch:
                return False  # a fetch of an earlier incarnation, still in flight
            if state.broker_epoch >= 0:
                state.last_caught_up_ms = 0
                state.leader_leo_at_last_fetch = -1
        leo = self.log.log_end_offset
        if fetch_offset >= leo:
            state.last_caught_up_ms = now_ms
        elif fetch_offset >= state.leader_leo_at_last_fetch >= 0:
            state.last_caught_up_ms = max(state.last_caught_up_ms, state.last_fetch_ms)
        state.log_end_offset = fetch_offset
        state.leader_leo_at_last_fetch = leo
        state.last_fetch_ms = now_ms
        if broker_epoch >= 0:
            state.broker_epoch = broker_epoch
        return self.maybe_advance_high_watermark()

    def caught_up(self, broker: int) -> bool:
        """The follower has fetched everything this leader has."""
        state = self.followers.get(broker)
        return state is not None and state.log_end_offset >= self.log.log_end_offset

    def maybe_advance_high_watermark(self) -> bool:
        log = self.log
        new_hw = log.log_end_offset
        for r in self.maximal_isr:
            if r == self.local_id:
                continue
            state = self.followers.get(r)
            if state is None:
                continue
            new_hw = min(new_hw, max(state.log_end_offset, 0))
        if new_hw > log.high_watermark:
            log.high_watermark = new_hw
            return True
        return False

    def isr_change(self, now_ms: int, lag_max_ms: int,
                   epochs: Mapping[int, int] | None = None) -> tuple[int, ...] | None:
        """The ISR this leader should propose now, or None (nothing to change, or a change is in flight).

        ``epochs``: the live brokers and their current broker epochs; only a follower fetching as its
        current incarnation may join."""
        if not self.is_leader or self.pending_isr is not None:
            return None
        hw = self.log.high_watermark
        leo = self.log.log_end_offset
        isr = list(self.isr)
        for r, state in self.followers.items():
            if r in isr:
                lagging = state.log_end_offset < leo and now_ms - state.last_caught_up_ms > lag_max_ms
                if lagging:
                    isr.remove(r)
            elif (state.log_end_offset >= hw and state.log_end_offset >= self.epoch_start_offset
                  and state.log_end_offset >= 0 and (epochs is None or self._current(r, state, epochs))):
                isr.append(r)
        if self.local_id not in isr:
            isr.insert(0, self.local_id)
        new = tuple(r for r in self.replicas if r in isr)
        return new if set(new) != set(self.isr) else None

    @staticmethod
    def _current(broker: int, state: FollowerState, epochs: Mapping[int, int]) -> bool:
        epoch = epochs.get(broker)
        return epoch is not None and state.broker_epoch in (-1, epoch)

    def joining_epoch(self, broker: int, epochs: Mapping[int, int]) -> int:
        """The broker epoch to record for ``broker`` in a proposed ISR: the one it joined with if it
        is a member, else the incarnation its fetches come from."""
        if broker in self.isr_epochs:
            return self.isr_epochs[broker]
        state = self.followers.get(broker)
        if state is not None and state.broker_epoch >= 0:
            return state.broker_epoch
        return epochs.get(broker, -1)

    def in_sync_count(self) -> int:
        return len(self.isr)

    @property
    def under_replicated(self) -> bool:
        return self.is_leader and len(self.isr) < len(self.replicas)
