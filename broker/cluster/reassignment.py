"""Partition reassignment (KIP-455), decided from the image: no I/O.

A reassignment replaces a partition's replicas with a target list.  It starts by recording, in
the partition's record, the replicas as the target followed by those being removed, which of
them are being added and which removed (:func:`start`); the new replicas then fetch from the
leader and join the ISR like any follower.  It completes (:func:`completion`) once every target
replica is in sync: the removed replicas leave the record, the ISR and — when they come to apply
it — their brokers, which delete their logs.  A new target given meanwhile replaces the old one
(it is computed from the current full list); ``None`` cancels (:func:`cancel`): the replicas being
added leave, the ones being removed stay.

Leadership: a leader that stays is kept.  A leader that is being removed hands leadership to an
in-sync target replica itself, once that replica has its whole log, and completes the
reassignment in the same write (:mod:`broker.replication.replica_manager`) — nothing it
acknowledged is lost; the controller completes only reassignments whose leader stays, or is gone.
Every completion that drops a replica raises the leader epoch, as Kafka's does.

Errors are Kafka's (``ReplicationControlManager``): an unknown topic or partition, an empty
target, a broker that is not registered, a broker twice (INVALID_REPLICA_ASSIGNMENT), a new
replication factor when it may not change (INVALID_REPLICATION_FACTOR), a cancel with nothing to
cancel (NO_REASSIGNMENT_IN_PROGRESS), or one that would need an unclean election.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from broker.cluster.image import MetadataImage, PartitionImage
from broker.cluster.records import NO_LEADER, PartitionChange, PartitionRecord
from protocol.error_codes import ErrorCode

__all__ = ["ReassignmentError", "cancel", "completion", "completed_record", "start"]

E = ErrorCode


class ReassignmentError(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def start(image: MetadataImage, p: PartitionImage, target: Sequence[int], *,
          allow_replication_factor_change: bool = True) -> PartitionChange:
    """The record that starts moving ``p`` to ``target`` (or finishes at once when nothing needs to
    catch up: a reordering, or only removals of replicas whose others are in sync)."""
    target = tuple(target)
    if not target:
        raise ReassignmentError(E.INVALID_REPLICA_ASSIGNMENT, "the replica list is empty")
    if len(set(target)) != len(target):
        raise ReassignmentError(E.INVALID_REPLICA_ASSIGNMENT, f"a broker appears twice in {list(target)}")
    unknown = [b for b in target if not image.is_alive(b)]
    if unknown:
        raise ReassignmentError(E.INVALID_REPLICA_ASSIGNMENT, f"brokers {unknown} are not registered")
    rec = p.record
    if not allow_replication_factor_change and len(target) != len(rec.target or p.replicas):
        raise ReassignmentError(E.INVALID_REPLICATION_FACTOR,
                                f"the replication factor would change from {len(rec.target or p.replicas)} "
                                f"to {len(target)}")
    current = p.replicas
    removing = tuple(r for r in current if r not in target)
    adding = tuple(r for r in target if r not in current)
    record = dataclasses.replace(rec, replicas=(*target, *removing), adding=adding, removing=removing,
                                 partition_epoch=rec.partition_epoch + 1)
    done = completed_record(image, record)
    if done is not None and done.leader == rec.leader:
        record = done  # nothing to wait for, and the leader stays
    return PartitionChange(p.topic, p.partition, p.mod_revision, record, "reassignment started")


def cancel(image: MetadataImage, p: PartitionImage, *, unclean_allowed: bool) -> PartitionChange:
    """The record that reverts ``p``'s reassignment: the original replicas (those being added
    leave, those being removed stay), the ISR without the replicas being added."""
    rec = p.record
    if not rec.reassigning:
        raise ReassignmentError(E.NO_REASSIGNMENT_IN_PROGRESS, f"no reassignment of {p.topic}-{p.partition}")
    replicas = tuple(r for r in rec.replicas if r not in rec.adding)
    keep = [i for i, r in enumerate(rec.isr) if r not in rec.adding]
    isr = tuple(rec.isr[i] for i in keep)
    epochs = tuple(rec.isr_epochs[i] for i in keep) if rec.isr_epochs else ()
    if not isr:
        if not unclean_allowed:
            raise ReassignmentError(E.INVALID_REPLICA_ASSIGNMENT,
                                    "cancelling would leave no in-sync replica (unclean leader election is off)")
        isr, epochs = replicas[:1], (image.broker_epoch(replicas[0]),)
    leader = rec.leader
    if leader not in isr or not image.is_current(rec, leader):
        candidates = [r for r in replicas if r in isr and image.is_current(rec, r)]
        leader = candidates[0] if candidates else NO_LEADER
    record = PartitionRecord(leader, rec.leader_epoch + 1 if leader != rec.leader or rec.adding else rec.leader_epoch,
                             isr, rec.partition_epoch + 1, epochs, replicas)
    return PartitionChange(p.topic, p.partition, p.mod_revision, record, "reassignment cancelled")


def completed_record(image: MetadataImage, rec: PartitionRecord, leader: int | None = None) -> PartitionRecord | None:
    """``rec`` with its reassignment completed, if every target replica is in sync (as the
    incarnation that joined); ``leader``: who leads after it (default: the leader if it stays,
    else the first in-sync target replica).  None while some target replica is not in sync."""
    if not rec.reassigning:
        return None
    target = rec.target
    in_sync = {r for r in rec.isr if image.is_current(rec, r)}
    if not target or not set(target) <= in_sync:
        return None
    keep = [i for i, r in enumerate(rec.isr) if r not in rec.removing]
    isr = tuple(rec.isr[i] for i in keep)
    epochs = tuple(rec.isr_epochs[i] for i in keep) if rec.isr_epochs else ()
    if leader is None:
        leader = rec.leader if rec.leader in target else next(
            (r for r in target if r in isr and not image.is_shutting_down(r)), target[0])
    epoch = rec.leader_epoch + 1 if rec.removing or leader != rec.leader else rec.leader_epoch
    return PartitionRecord(leader, epoch, isr, rec.partition_epoch + 1, epochs, target)


def completion(image: MetadataImage, p: PartitionImage) -> PartitionChange | None:
    """What the controller writes for ``p``: its reassignment completed, when every target replica
    is in sync and the leader stays (or is gone); a live leader being removed completes it itself."""
    rec = p.record
    if not rec.reassigning:
        return None
    if rec.leader in rec.removing and image.is_current(rec, rec.leader) and not image.is_shutting_down(rec.leader):
        return None  # the leader hands over itself
    record = completed_record(image, rec)
    if record is None:
        return None
    return PartitionChange(p.topic, p.partition, p.mod_revision, record, "reassignment completed")
