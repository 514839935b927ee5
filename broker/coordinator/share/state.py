"""Share-partition state as the share coordinator stores it, and its records in ``__share_group_state``.

One :class:`ShareState` per share-partition key (group, topic id, partition): the share-partition start
offset, the state epoch (set by InitializeShareGroupState; older writers are fenced), the leader epoch
of the topic-partition's leader that wrote last (older leaders are fenced), and the non-acquired state
of the in-flight records as non-overlapping *state batches* ``(first, last, delivery state, delivery
count)`` — delivery state 0 AVAILABLE, 2 ACKNOWLEDGED, 4 ARCHIVED.

Records (Kafka's formats, ``share-coordinator/*.json``): ``ShareSnapshot`` (type 0) holds a whole
state, ``ShareUpdate`` (type 1) a delta on top of the snapshot of the same snapshot epoch (new batches
overwrite the offsets they cover; a start offset of -1 keeps the old one); a null value deletes.
Both keys are ``(group id, topic id, partition)`` behind their type.  Pure functions and plain data.
"""

from __future__ import annotations

import base64
import struct
import uuid
from dataclasses import dataclass, replace
from typing import Any, NamedTuple

from broker.coordinator.group.partitioning import coordinator_partition
from protocol.schemas.share_records import (
    ShareSnapshotKey,
    ShareSnapshotValue,
    ShareUpdateKey,
    ShareUpdateValue,
)

__all__ = ["ACKNOWLEDGED", "ARCHIVED", "AVAILABLE", "SNAPSHOT", "UPDATE", "Key", "ShareState", "StateBatch",
           "apply_update", "decode_record", "encode_snapshot", "encode_tombstones", "encode_update", "share_key",
           "share_lag", "state_partition", "uuid_text"]

AVAILABLE, ACKNOWLEDGED, ARCHIVED = 0, 2, 4
SNAPSHOT, UPDATE = 0, 1
_I16 = struct.Struct(">h")


def share_lag(end: int, start: int, done: int) -> int:
    """A share-partition's lag: the records from its start offset to the partition's ``end`` whose delivery is
    not complete (``done``: the delivery-complete count, -1 when unknown)."""
    return max(0, end - start - max(0, done))


class Key(NamedTuple):
    """A share-partition: (group id, topic id, partition)."""

    group_id: str
    topic_id: uuid.UUID
    partition: int


class StateBatch(NamedTuple):
    first: int
    last: int
    state: int
    count: int

    def entry(self) -> dict[str, int]:
        return {"first_offset": self.first, "last_offset": self.last, "delivery_state": self.state,
                "delivery_count": self.count}


@dataclass(slots=True)
class ShareState:
    state_epoch: int
    leader_epoch: int = -1
    start_offset: int = -1
    batches: tuple[StateBatch, ...] = ()
    snapshot_epoch: int = 0
    create_timestamp: int = 0
    write_timestamp: int = 0
    #: updates written on top of the last snapshot
    updates: int = 0

    @property
    def delivery_complete_count(self) -> int:
        """Offsets at or above the start offset whose delivery is complete (acknowledged or archived)."""
        if self.start_offset < 0:
            return -1
        return sum(b.last - max(b.first, self.start_offset) + 1 for b in self.batches
                   if b.state in (ACKNOWLEDGED, ARCHIVED) and b.last >= self.start_offset)


def uuid_text(topic_id: uuid.UUID) -> str:
    """Kafka's ``Uuid.toString``: URL-safe base64 of the 16 bytes, without padding."""
    return base64.urlsafe_b64encode(topic_id.bytes).decode().rstrip("=")


def share_key(key: Key) -> str:
    """The coordinator key of a share-partition: ``groupId:topicId:partition``."""
    return f"{key.group_id}:{uuid_text(key.topic_id)}:{key.partition}"


def state_partition(key: Key, num_partitions: int) -> int:
    """The ``__share_group_state`` partition of a share-partition (Kafka's ``ShareCoordinatorService.partitionFor``)."""
    return coordinator_partition(share_key(key), num_partitions)


def merge_batches(old: tuple[StateBatch, ...], new: list[StateBatch], start_offset: int) -> tuple[StateBatch, ...]:
    """``old`` with ``new`` written over the offsets they cover; nothing below ``start_offset``;
    adjacent batches of the same state and count joined."""
    pieces: list[StateBatch] = []
    covered = sorted((b.first, b.last) for b in new)
    for b in old:
        parts = [(b.first, b.last)]
        for first, last in covered:
            nxt = []
            for lo, hi in parts:
                if last < lo or first > hi:
                    nxt.append((lo, hi))
                    continue
                if lo < first:
                    nxt.append((lo, first - 1))
                if hi > last:
                    nxt.append((last + 1, hi))
            parts = nxt
        pieces.extend(StateBatch(lo, hi, b.state, b.count) for lo, hi in parts)
    pieces.extend(new)
    out: list[StateBatch] = []
    for b in sorted(pieces):
        if b.last < start_offset:
            continue
        if b.first < start_offset:
            b = b._replace(first=start_offset)
        if out and out[-1].last + 1 == b.first and (out[-1].state, out[-1].count) == (b.state, b.count):
            out[-1] = out[-1]._replace(last=b.last)
        else:
            out.append(b)
    return tuple(out)


def apply_update(state: ShareState, leader_epoch: int, start_offset: int, batches: list[StateBatch]) -> ShareState:
    """``state`` after a ShareUpdate (start offset -1: unchanged)."""
    start = state.start_offset if start_offset < 0 else start_offset
    return replace(state, leader_epoch=leader_epoch, start_offset=start,
                   batches=merge_batches(state.batches, batches, start), updates=state.updates + 1)


def _batches(entries: Any) -> list[StateBatch]:
    return [StateBatch(e["first_offset"], e["last_offset"], e["delivery_state"], e["delivery_count"])
            for e in entries or ()]


def _key_dict(key: Key) -> dict[str, Any]:
    return {"group_id": key.group_id, "topic_id": key.topic_id, "partition": key.partition}


def encode_snapshot(key: Key, state: ShareState) -> tuple[bytes, bytes]:
    value = {"snapshot_epoch": state.snapshot_epoch, "state_epoch": state.state_epoch,
             "leader_epoch": state.leader_epoch, "start_offset": state.start_offset,
             "delivery_complete_count": state.delivery_complete_count, "create_timestamp": state.create_timestamp,
             "write_timestamp": state.write_timestamp, "state_batches": [b.entry() for b in state.batches]}
    return (_I16.pack(SNAPSHOT) + ShareSnapshotKey.encode(0, _key_dict(key)),
            _I16.pack(0) + ShareSnapshotValue.encode(0, value))


def encode_update(key: Key, snapshot_epoch: int, leader_epoch: int, start_offset: int, delivery_complete_count: int,
                  batches: list[StateBatch]) -> tuple[bytes, bytes]:
    value = {"snapshot_epoch": snapshot_epoch, "leader_epoch": leader_epoch, "start_offset": start_offset,
             "delivery_complete_count": delivery_complete_count, "state_batches": [b.entry() for b in batches]}
    return (_I16.pack(UPDATE) + ShareUpdateKey.encode(0, _key_dict(key)),
            _I16.pack(0) + ShareUpdateValue.encode(0, value))


def encode_tombstones(key: Key) -> list[tuple[bytes, None]]:
    """Both records of a share-partition, deleted."""
    return [(_I16.pack(SNAPSHOT) + ShareSnapshotKey.encode(0, _key_dict(key)), None),
            (_I16.pack(UPDATE) + ShareUpdateKey.encode(0, _key_dict(key)), None)]


def decode_record(key: bytes, value: bytes | None) -> tuple[int, Key, dict[str, Any] | None]:
    """(record type, share-partition, value or None) of a ``__share_group_state`` record; ValueError
    for anything else."""
    if len(key) < 2:
        raise ValueError("share state record key shorter than its type")
    (record_type,) = _I16.unpack_from(key)
    if record_type not in (SNAPSHOT, UPDATE):
        raise ValueError(f"unknown share state record type {record_type}")
    key_codec, value_codec = (ShareSnapshotKey, ShareSnapshotValue) if record_type == SNAPSHOT else \
        (ShareUpdateKey, ShareUpdateValue)
    k = key_codec.decode(0, key, 2)
    share = Key(k["group_id"], k["topic_id"], k["partition"])
    if value is None:
        return record_type, share, None
    if len(value) < 2:
        raise ValueError("share state record value shorter than its version")
    return record_type, share, dict(value_codec.decode(0, value, 2))


def state_from_snapshot(value: dict[str, Any]) -> ShareState:
    return ShareState(value["state_epoch"], value["leader_epoch"], value["start_offset"],
                      merge_batches((), _batches(value["state_batches"]), value["start_offset"]),
                      value["snapshot_epoch"], value["create_timestamp"], value["write_timestamp"])


def update_batches(value: dict[str, Any]) -> list[StateBatch]:
    return _batches(value["state_batches"])
