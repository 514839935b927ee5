"""``__consumer_offsets`` keys and values in Kafka's exact byte format (docs/classic-groups.md,
"What ``__consumer_offsets`` holds").

* key   = ``int16 record_type`` + key struct  (1 = OffsetCommitKey, 2 = GroupMetadataKey;
  type 0 is the legacy offset key with identical bytes and is accepted when reading);
* value = ``int16 value_version`` + value struct; ``None`` is a tombstone.

We write OffsetCommitValue v3 (v1 when an explicit expire timestamp is set, as Kafka does for
OffsetCommit v2-4 with ``retention_time_ms``) and GroupMetadataValue v3, and read every version
0-4.  The struct codecs are the shared ones from :mod:`protocol.schema` (schemas in
:mod:`protocol.schemas.misc`); this module only adds the type/version prefixes and the
consumer embedded-protocol helpers.

:class:`OffsetCommitRecord` and :class:`GroupMetadataRecord` are those records decoded (Kafka's
``CoordinatorRecord``): what a write carries and what the shard's ``replay`` applies, whether the
record comes out of the log on load (:func:`decode_record`) or out of a write that committed.
Consumer-group records (types 3-8, 16) are :mod:`broker.coordinator.group.consumer_group`'s.
"""

from __future__ import annotations

import struct
from typing import Any, NamedTuple

from protocol.errors import ProtocolError
from protocol.schemas.misc import (
    ConsumerProtocolSubscription,
    GroupMetadataKey,
    GroupMetadataValue,
    OffsetCommitKey,
    OffsetCommitValue,
)

from .model import OffsetEntry

__all__ = [
    "GROUP_METADATA_KEY_TYPE",
    "OFFSET_COMMIT_KEY_TYPE",
    "DecodedKey",
    "GroupCoordinatorRecord",
    "GroupMetadataRecord",
    "OffsetCommitRecord",
    "decode_group_metadata_value",
    "decode_key",
    "decode_offset_commit_value",
    "decode_record",
    "encode_group_metadata_key",
    "encode_group_metadata_value",
    "encode_offset_commit_key",
    "encode_offset_commit_value",
    "subscribed_topics",
]

OFFSET_COMMIT_KEY_TYPE = 1
LEGACY_OFFSET_COMMIT_KEY_TYPE = 0
GROUP_METADATA_KEY_TYPE = 2
GROUP_METADATA_VALUE_VERSION = 3
OFFSET_COMMIT_VALUE_VERSION = 3

_I16 = struct.Struct(">h")


class DecodedKey(NamedTuple):
    """A decoded ``__consumer_offsets`` key; ``topic``/``partition`` only for offset keys."""

    record_type: int
    group: str
    topic: str | None = None
    partition: int | None = None


def encode_offset_commit_key(group: str, topic: str, partition: int) -> bytes:
    return _I16.pack(OFFSET_COMMIT_KEY_TYPE) + OffsetCommitKey.encode(
        0, {"group": group, "topic": topic, "partition": partition})


def encode_group_metadata_key(group: str) -> bytes:
    return _I16.pack(GROUP_METADATA_KEY_TYPE) + GroupMetadataKey.encode(0, {"group": group})


def encode_offset_commit_value(offset: int, leader_epoch: int, metadata: str, commit_timestamp: int,
                               expire_timestamp: int = -1) -> bytes:
    """OffsetCommitValue v3, or v1 (no leader epoch) when ``expire_timestamp`` is set."""
    version = 1 if expire_timestamp >= 0 else OFFSET_COMMIT_VALUE_VERSION
    return _I16.pack(version) + OffsetCommitValue.encode(version, {
        "offset": offset, "leader_epoch": leader_epoch, "metadata": metadata,
        "commit_timestamp": commit_timestamp, "expire_timestamp": expire_timestamp})


def encode_group_metadata_value(value: dict[str, Any]) -> bytes:
    """GroupMetadataValue v3 from a dict with the schema's field names."""
    return _I16.pack(GROUP_METADATA_VALUE_VERSION) + GroupMetadataValue.encode(
        GROUP_METADATA_VALUE_VERSION, value)


def decode_key(key: bytes) -> DecodedKey | None:
    """Decode a key; ``None`` for record types this coordinator does not own (KIP-848, share)."""
    if len(key) < 2:
        raise ProtocolError("__consumer_offsets key shorter than its type")
    (record_type,) = _I16.unpack_from(key)
    if record_type in (LEGACY_OFFSET_COMMIT_KEY_TYPE, OFFSET_COMMIT_KEY_TYPE):
        k = OffsetCommitKey.decode(0, key, 2)
        return DecodedKey(record_type, k["group"], k["topic"], k["partition"])
    if record_type == GROUP_METADATA_KEY_TYPE:
        return DecodedKey(record_type, GroupMetadataKey.decode(0, key, 2)["group"])
    return None


def _value_version(value: bytes, maximum: int, name: str) -> int:
    if len(value) < 2:
        raise ProtocolError(f"{name} shorter than its version")
    (version,) = _I16.unpack_from(value)
    if not 0 <= version <= maximum:
        raise ProtocolError(f"unknown {name} version {version}")
    return version


def decode_offset_commit_value(value: bytes) -> dict[str, Any]:
    """Decode any OffsetCommitValue version (0-4); absent fields take their defaults."""
    version = _value_version(value, 4, "OffsetCommitValue")
    return OffsetCommitValue.decode(version, value, 2)


def decode_group_metadata_value(value: bytes) -> dict[str, Any]:
    """Decode any GroupMetadataValue version (0-4); absent fields take their defaults."""
    version = _value_version(value, 4, "GroupMetadataValue")
    return GroupMetadataValue.decode(version, value, 2)


class OffsetCommitRecord(NamedTuple):
    """An OffsetCommitKey/Value; ``offset`` None is the tombstone that deletes the committed offset."""

    group_id: str
    topic: str
    partition: int
    offset: OffsetEntry | None

    def encode(self) -> tuple[bytes, bytes | None]:
        key = encode_offset_commit_key(self.group_id, self.topic, self.partition)
        e = self.offset
        if e is None:
            return key, None
        return key, encode_offset_commit_value(e.offset, e.leader_epoch, e.metadata, e.commit_timestamp,
                                               e.expire_timestamp)


class GroupMetadataRecord(NamedTuple):
    """A GroupMetadataKey/Value (``value``: the GroupMetadataValue fields); ``value`` None is the group's
    tombstone."""

    group_id: str
    value: dict[str, Any] | None

    def encode(self) -> tuple[bytes, bytes | None]:
        key = encode_group_metadata_key(self.group_id)
        return key, None if self.value is None else encode_group_metadata_value(self.value)


GroupCoordinatorRecord = OffsetCommitRecord | GroupMetadataRecord


def decode_record(key: bytes, value: bytes | None) -> GroupCoordinatorRecord | None:
    """A ``__consumer_offsets`` record as the shard replays it; None for record types that are not offsets
    or classic groups (a KIP-848 group's, or one this coordinator does not know)."""
    k = decode_key(key)
    if k is None:
        return None
    if k.record_type == GROUP_METADATA_KEY_TYPE:
        return GroupMetadataRecord(k.group, None if value is None else decode_group_metadata_value(value))
    assert k.topic is not None and k.partition is not None
    if value is None:
        return OffsetCommitRecord(k.group, k.topic, k.partition, None)
    v = decode_offset_commit_value(value)
    return OffsetCommitRecord(k.group, k.topic, k.partition, OffsetEntry(
        v["offset"], v["leader_epoch"], v["metadata"], v["commit_timestamp"], v["expire_timestamp"]))


def subscribed_topics(metadata: bytes) -> frozenset[str] | None:
    """Topics of a consumer-protocol subscription (``int16 version`` + ConsumerProtocolSubscription).

    Versions above the highest we know are read as the highest (Kafka's forward-compatibility
    rule for the embedded protocol). ``None`` when the bytes do not parse.
    """
    try:
        (version,) = _I16.unpack_from(metadata)
        if version < 0:
            return None
        sub = ConsumerProtocolSubscription.decode(min(version, 3), metadata, 2)
    except (ProtocolError, struct.error):
        return None
    return frozenset(sub["topics"])
