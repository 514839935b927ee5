"""The controller: what leadership should be, decided from the image (pure), and applied by CAS.

One broker at a time is the controller (elected through the store, see
:mod:`broker.cluster.metadata`).  Its decisions are pure functions of the
metadata image:

* a partition with no record yet (a new topic or new partitions) starts with the
  first live replica of its assignment as leader and the live replicas as ISR;
* a leader that is gone is replaced by the first replica, in assignment order,
  that is alive and in the ISR (brokers in controlled shutdown last); dead brokers
  leave every ISR, which is never emptied — when its last member dies it stays
  listed and the leader becomes -1 (offline) until that broker returns, unless
  unclean election is enabled (``unclean.leader.election.enable``, also per topic),
  which takes the first live replica with an ISR of just itself;
* broker epochs (KIP-380): each ISR member is recorded with the epoch of the
  incarnation that joined; a broker that registered again since (a restart within
  its session, a lost lease) counts as dead for that partition — it leaves the ISR
  and is never leader at its old epoch — until it catches up and rejoins;
* a broker in controlled shutdown gets no new leadership; the partitions it leads it
  hands over itself once its followers have everything (see ``broker.replication.replica_manager``);
* a reassignment whose target replicas are all in sync completes (:mod:`broker.cluster.reassignment`);
* with ``partition.autobalancer.mode=node_add``, a broker that joins holding no replica gets its
  share of every topic's replicas and preferred leaders by reassignments (:mod:`broker.cluster.balance`);
* the preferred replica (first in the assignment) takes leadership back when it
  is alive and in the ISR and its broker's share of non-preferred leaderships
  exceeds ``leader.imbalance.per.broker.percentage`` (checked every
  ``leader.imbalance.check.interval.seconds``), or on demand (ElectLeaders).

Every leader change raises the leader epoch; every change raises the partition
epoch.  :class:`Controller` writes the decisions as store transactions guarded
by the partition records' revisions and by the controller epoch's revision, so
a deposed controller cannot write anything and no update is lost.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from broker.cluster import balance, reassignment
from broker.cluster.image import MetadataImage, PartitionImage
from broker.cluster.internal_topics import is_internal_topic
from broker.cluster.kv import Compare, KVError, MetadataKV, Put, mod_is
from broker.cluster.records import (
    CONTROLLER_EPOCH_KEY,
    NO_LEADER,
    PartitionChange,
    PartitionRecord,
    partition_key,
)

log = logging.getLogger("kbroker.controller")

__all__ = [
    "Controller",
    "ControllerSettings",
    "PartitionChange",
    "decide",
    "elect_preferred",
    "elect_unclean",
    "imbalanced_partitions",
    "unclean_allowed",
]

TXN_BATCH = 100


@dataclass(frozen=True, slots=True)
class ControllerSettings:
    unclean_leader_election: bool = False
    auto_leader_rebalance: bool = True
    imbalance_percentage: int = 10
    #: ``partition.autobalancer.mode`` (the cluster-wide dynamic value wins): ``off`` or ``node_add``
    autobalancer_mode: str = "off"


def unclean_allowed(image: MetadataImage, topic: str, default: bool) -> bool:
    """The topic's ``unclean.leader.election.enable``, else the cluster-wide dynamic default, else
    ``default`` (the broker's own setting)."""
    t = image.topic(topic)
    value = t.configs.get("unclean.leader.election.enable") if t is not None else None
    if value is None:
        value = image.broker_config(None).get("unclean.leader.election.enable")
    if value is None:
        return default
    return value.strip().lower() == "true"


def _record(p: PartitionImage, image: MetadataImage, leader: int, isr: tuple[int, ...],
            refresh: tuple[int, ...] = ()) -> PartitionRecord:
    """The partition's next record: ``leader`` (a new leader epoch if it changes, or if it is a new
    incarnation) and ``isr``, each member keeping the broker epoch it joined with, and those in
    ``refresh`` taking their current one."""
    old = p.record
    epoch = old.leader_epoch + 1 if leader != old.leader or leader in refresh else old.leader_epoch
    epochs = tuple(image.broker_epoch(r) if r in refresh or old.epoch_of(r) < 0 else old.epoch_of(r)
                   for r in isr)
    return dataclasses.replace(old, leader=leader, leader_epoch=epoch, isr=isr, partition_epoch=old.partition_epoch + 1,
                               isr_epochs=epochs, replicas=p.replicas)


def _ordered(replicas: Iterable[int], keep: Callable[[int], bool]) -> tuple[int, ...]:
    return tuple(r for r in replicas if keep(r))


def _fix_partition(image: MetadataImage, p: PartitionImage, settings: ControllerSettings) -> PartitionChange | None:
    rec = p.record

    def current(r: int) -> bool:
        return image.is_current(rec, r)

    live_isr = _ordered(rec.isr, current)
    if rec.leader != NO_LEADER and current(rec.leader):
        # Members that died, or came back as a new incarnation, leave the ISR (never emptied: the
        # leader is in it).  A leader in controlled shutdown hands its partitions over itself.
        if live_isr != rec.isr:
            return PartitionChange(p.topic, p.partition, p.mod_revision, _record(p, image, rec.leader, live_isr),
                                   "dead or restarted replicas leave the ISR")
        return None
    # No leader, a dead one, or one that restarted (it may have lost what it had): elect another.
    candidates = sorted((r for r in p.replicas if r in live_isr), key=image.is_shutting_down)
    if candidates:
        return PartitionChange(p.topic, p.partition, p.mod_revision, _record(p, image, candidates[0], live_isr),
                               "leader election from the ISR")
    # Every ISR member is dead or a new incarnation: one that is back still holds the most that was
    # acknowledged (as when a dead last member returns), so it leads, with its new epoch.
    returned = [r for r in p.replicas if r in rec.isr and image.is_alive(r)]
    if returned:
        leader = returned[0]
        return PartitionChange(p.topic, p.partition, p.mod_revision,
                               _record(p, image, leader, (leader,), refresh=(leader,)),
                               "leader election from the ISR (the last member is back)")
    if unclean_allowed(image, p.topic, settings.unclean_leader_election):
        live = [r for r in p.replicas if image.is_alive(r)]
        if live:
            return PartitionChange(p.topic, p.partition, p.mod_revision,
                                   _record(p, image, live[0], (live[0],), refresh=(live[0],)),
                                   "unclean leader election")
    if rec.leader != NO_LEADER:
        return PartitionChange(p.topic, p.partition, p.mod_revision, _record(p, image, NO_LEADER, rec.isr),
                               "no live in-sync replica: offline")
    return None


def decide(image: MetadataImage, settings: ControllerSettings) -> list[PartitionChange]:
    """Everything the controller should write now, given the image."""
    changes: list[PartitionChange] = []
    for topic in image.topics.values():
        for index, replicas in enumerate(topic.record.assignment):
            p = topic.partitions.get(index)
            if p is None:
                live = _ordered(replicas, image.is_alive)
                if live:
                    leader = sorted(live, key=image.is_shutting_down)[0]
                    record = PartitionRecord(leader, 0, live, 0, tuple(image.broker_epoch(r) for r in live),
                                             tuple(replicas))
                    changes.append(PartitionChange(topic.name, index, 0, record, "new partition"))
                continue
            change = _fix_partition(image, p, settings) or reassignment.completion(image, p)
            if change is not None:
                changes.append(change)
    return changes


def elect_preferred(image: MetadataImage, p: PartitionImage) -> PartitionChange | None:
    """Move leadership to the preferred replica if it is alive, in sync as the same incarnation and
    not shutting down (None if not possible or no-op)."""
    preferred = p.replicas[0] if p.replicas else NO_LEADER
    if (preferred == p.leader or preferred not in p.isr or not image.is_current(p.record, preferred)
            or image.is_shutting_down(preferred)):
        return None
    return PartitionChange(p.topic, p.partition, p.mod_revision, _record(p, image, preferred, p.isr),
                           "preferred leader election")


def elect_unclean(image: MetadataImage, p: PartitionImage) -> PartitionChange | None:
    """ElectLeaders(unclean) for an offline partition: the first live replica, ISR of itself."""
    if p.leader != NO_LEADER and image.is_current(p.record, p.leader):
        return None
    live_isr = tuple(r for r in p.replicas if r in p.isr and image.is_current(p.record, r))
    if live_isr:
        return PartitionChange(p.topic, p.partition, p.mod_revision, _record(p, image, live_isr[0], live_isr),
                               "leader election from the ISR")
    live = [r for r in p.replicas if image.is_alive(r)]
    if not live:
        return None
    return PartitionChange(p.topic, p.partition, p.mod_revision,
                           _record(p, image, live[0], (live[0],), refresh=(live[0],)), "unclean leader election")


def autobalancer_mode(image: MetadataImage, settings: ControllerSettings) -> str:
    return image.broker_config(None).get("partition.autobalancer.mode") or settings.autobalancer_mode


def node_add_moves(image: MetadataImage, settings: ControllerSettings) -> list[PartitionChange]:
    """``partition.autobalancer.mode=node_add``: when a live broker holds no replica (one just added)
    and no reassignment runs, reassignments that give it its share (:func:`broker.cluster.balance.rebalance`).
    Brokers that are down keep their replicas: they may only be restarting."""
    if autobalancer_mode(image, settings) != "node_add":
        return []
    parts = list(image.partitions())
    if any(p.record.reassigning for p in parts):
        return []
    holding = {r for p in parts for r in p.replicas}
    if all(b in holding for b in image.brokers):
        return []
    brokers: dict[int, str | None] = {b: reg.rack for b, reg in image.brokers.items()}
    brokers.update({b: None for b in holding if b not in brokers})
    plan = balance.rebalance({(p.topic, p.partition): list(p.replicas) for p in parts}, brokers)
    changes = []
    for (topic, index), target in sorted(plan.items()):
        p = image.partition(topic, index)
        if p is not None:
            changes.append(reassignment.start(image, p, target))
    return changes


def imbalanced_partitions(image: MetadataImage, settings: ControllerSettings) -> list[PartitionChange]:
    """Preferred elections for brokers whose non-preferred share exceeds the imbalance threshold."""
    preferred_count: dict[int, int] = {}
    not_leading: dict[int, list[PartitionImage]] = {}
    for p in image.partitions():
        if not p.replicas:
            continue
        pref = p.replicas[0]
        preferred_count[pref] = preferred_count.get(pref, 0) + 1
        if p.leader != pref:
            not_leading.setdefault(pref, []).append(p)
    out = []
    for broker, parts in not_leading.items():
        if not image.is_alive(broker):
            continue
        if len(parts) * 100 > settings.imbalance_percentage * preferred_count[broker]:
            for p in parts:
                change = elect_preferred(image, p)
                if change is not None:
                    out.append(change)
    return out


async def write_changes(kv: MetadataKV, changes: list[PartitionChange],
                        fence: list[Compare]) -> tuple[list[PartitionChange], int]:
    """Write changes in batches, each a CAS transaction; returns (the changes written, how many were refused)."""
    written: list[PartitionChange] = []
    refused = 0
    for i in range(0, len(changes), TXN_BATCH):
        batch = changes[i:i + TXN_BATCH]
        compares = [*fence, *(mod_is(partition_key(c.topic, c.partition), c.expected_revision) for c in batch)]
        puts = [Put(partition_key(c.topic, c.partition), c.record.encode()) for c in batch]
        result = await kv.txn(compares, puts)
        if result.succeeded:
            written.extend(batch)
        else:
            refused += len(batch)
    return written, refused


class Controller:
    """Runs :func:`decide` whenever the image changes while this broker is the controller.

    ``epoch_revision`` is the store revision at which this broker bumped the
    controller epoch; every write is conditioned on it still being the last write
    of that key (so a deposed controller's writes are refused).
    """

    def __init__(self, kv: MetadataKV, image: MetadataImage, settings: ControllerSettings, *,
                 imbalance_check_interval_s: float = 300.0,
                 on_change: Callable[[PartitionChange], None] | None = None) -> None:
        self.kv = kv
        self.image = image
        self.settings = settings
        self.imbalance_check_interval_s = imbalance_check_interval_s
        self.on_change = on_change
        self.epoch_revision = 0
        self.active = False
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._rebalance_task: asyncio.Task[None] | None = None

    def activate(self, epoch_revision: int) -> None:
        self.epoch_revision = epoch_revision
        self.active = True
        self._wake.set()
        if self._task is None or self._task.done():
            self._task = asyncio.ensure_future(self._run())
        if self.settings.auto_leader_rebalance and (self._rebalance_task is None or self._rebalance_task.done()):
            self._rebalance_task = asyncio.ensure_future(self._rebalance_loop())

    def deactivate(self) -> None:
        self.active = False
        for task in (self._task, self._rebalance_task):
            if task is not None:
                task.cancel()
        self._task = self._rebalance_task = None

    def poke(self) -> None:
        """The image changed: look again."""
        if self.active:
            self._wake.set()

    @property
    def fence(self) -> list[Compare]:
        return [mod_is(CONTROLLER_EPOCH_KEY, self.epoch_revision)]

    async def apply(self, changes: list[PartitionChange]) -> tuple[int, int]:
        """Write ``changes`` (fenced); returns (written, refused)."""
        if not changes:
            return 0, 0
        written, refused = await write_changes(self.kv, changes, self.fence)
        quiet: dict[str, int] = {}
        for change in written:
            if is_internal_topic(change.topic):
                quiet[f"{change.topic} ({change.reason})"] = quiet.get(f"{change.topic} ({change.reason})", 0) + 1
            else:
                log.info("controller: %s-%d leader %d epoch %d isr %s (%s)", change.topic, change.partition,
                         change.record.leader, change.record.leader_epoch, list(change.record.isr), change.reason)
            if self.on_change is not None:
                self.on_change(change)
        for what, count in quiet.items():
            log.info("controller: %d partitions of %s", count, what)
        return len(written), refused

    async def _run(self) -> None:
        backoff = 0.05
        while self.active:
            await self._wake.wait()
            self._wake.clear()
            try:
                changes = decide(self.image, self.settings) or node_add_moves(self.image, self.settings)
                _, refused = await self.apply(changes)
                backoff = 0.05
                if refused:
                    # Someone else changed those partitions; the watch will bring the new state.
                    await asyncio.sleep(0.01)
                    self._wake.set()
            except KVError as exc:
                log.warning("controller: metadata store unavailable (%s); retrying", exc)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 2.0)
                self._wake.set()

    async def _rebalance_loop(self) -> None:
        while self.active:
            await asyncio.sleep(self.imbalance_check_interval_s)
            try:
                await self.apply(imbalanced_partitions(self.image, self.settings))
            except KVError as exc:
                log.warning("controller: preferred leader election failed: %s", exc)
