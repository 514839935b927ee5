"""The records of KIP-848 consumer groups and KIP-932 share groups in ``__consumer_offsets``, and what
their managers share about them.

:class:`RecordCodecs` encodes and decodes one family of record types (a key and a value schema per type,
version 0 written, newer versions read: they only add tagged fields).  :class:`GroupRecords` is the base of
a shard's group manager: a change emits records, applied at once and drained by the shard's write;
``committed`` keeps each group's durable records so that ``restore`` can rebuild the groups a failed write
touched; ``replay`` applies a loaded record.  The manager itself says how a record changes its groups
(``_apply``).
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Mapping
from typing import Any

from protocol.schema import Message

__all__ = ["GroupRecords", "Record", "RecordCodecs"]

#: an encoded record: key, value (None: a tombstone)
Record = tuple[bytes, bytes | None]

_I16 = struct.Struct(">h")


class RecordCodecs:
    """The key and value schemas of a family of record types, by type (``what`` names the family in
    errors)."""

    def __init__(self, codecs: Mapping[int, tuple[Message, Message]], what: str) -> None:
        self._codecs = dict(codecs)
        self.what = what
        #: the record types of the family
        self.types = frozenset(codecs)

    def encode(self, record_type: int, key: dict[str, Any], value: dict[str, Any] | None) -> Record:
        key_codec, value_codec = self._codecs[record_type]
        k = _I16.pack(record_type) + key_codec.encode(0, key)
        return k, None if value is None else _I16.pack(0) + value_codec.encode(0, value)

    def decode(self, key: bytes, value: bytes | None) -> tuple[int, dict[str, Any], dict[str, Any] | None] | None:
        """A record of the family as ``(type, key, value)``; None for other record types."""
        (record_type,) = _I16.unpack_from(key)
        codecs = self._codecs.get(record_type)
        if codecs is None:
            return None
        k = dict(codecs[0].decode(0, key, 2))
        if value is None:
            return record_type, k, None
        if len(value) < 2:
            raise ValueError(f"{self.what} record value shorter than its version")
        return record_type, k, dict(codecs[1].decode(0, value, 2))  # newer versions add tagged fields only

    def owns(self, key: bytes) -> bool:
        """Whether an encoded key is of this family."""
        return len(key) >= 2 and _I16.unpack_from(key)[0] in self.types


class GroupRecords:
    """Records in and out of one shard's groups of one kind (see the module doc)."""

    #: the family of records the manager writes and reads (set by each subclass)
    codecs: RecordCodecs
    #: group id -> the group (each has an in-memory ``checked_stamp``)
    groups: dict[str, Any]

    def __init__(self) -> None:
        self._out: list[tuple[str, bytes, bytes | None]] = []
        #: group id -> its committed records, key -> value, in the order of their last write
        self._committed: dict[str, dict[bytes, bytes]] = {}
        self._epoch_bumps = 0
        #: moves on whenever the topics may have changed (and on load); see :meth:`_checked`
        self._metadata_stamp = 0

    def drain(self) -> list[tuple[str, bytes, bytes | None]]:
        """The records emitted since the last call, as ``(group id, key, value)``, in order."""
        out, self._out = self._out, []
        return out

    def take_epoch_bumps(self) -> int:
        """Group epochs bumped (rebalances started) since the last call."""
        n, self._epoch_bumps = self._epoch_bumps, 0
        return n

    def replay(self, key: bytes, value: bytes | None) -> bool:
        """Apply one loaded (so committed) record; False when it is not of this manager's family."""
        gid = self._apply_raw(key, value)
        if gid is None:
            return False
        self._remember(gid, key, value)
        return True

    def committed(self, records: Iterable[tuple[str, bytes, bytes | None]]) -> None:
        """``records`` (as the shard's writes carried them) were written durably; only this family's
        records are kept (a shard's writes carry other groups' too)."""
        owns = self.codecs.owns
        for gid, key, value in records:
            if owns(key):
                self._remember(gid, key, value)

    def _emit(self, group_id: str, record_type: int, key: dict[str, Any], value: dict[str, Any] | None) -> None:
        k, v = self.codecs.encode(record_type, key, value)
        self._apply(record_type, key, value)
        self._out.append((group_id, k, v))
        group = self.groups.get(group_id)
        if group is not None:
            group.checked_stamp = -1  # changed: its next heartbeat takes the full path

    # A heartbeat that changes nothing may skip recomputing the group's subscription from the topics —
    # as long as no record changed the group and the topics have not changed since the full path last
    # did it.  ``checked_stamp`` (each group's, in memory only) holds the stamp of then.

    def _topics_changed(self) -> None:
        """The topics may have changed (or the groups were just loaded): every group checks again."""
        self._metadata_stamp += 1

    def _mark_checked(self, group: Any) -> None:
        """``group``'s subscription was just brought up to date with the topics."""
        group.checked_stamp = self._metadata_stamp

    def _checked(self, group: Any) -> bool:
        """Whether ``group`` is unchanged since its subscription was last brought up to date."""
        return bool(group.checked_stamp == self._metadata_stamp)

    def _restore(self, group_ids: set[str], in_flight: Iterable[tuple[str, bytes, bytes | None]]) -> None:
        """Apply again the committed records of ``group_ids``, then those of ``in_flight`` (the writes not
        completed yet, in order) that belong to them: the groups as a coordinator that loaded them would
        have them (the caller has dropped their in-memory state first)."""
        for gid in group_ids:
            for key, value in self._committed.get(gid, {}).items():
                self._apply_raw(key, value)
        for gid, key, value in in_flight:
            if gid in group_ids:
                self._apply_raw(key, value)

    def _remember(self, gid: str, key: bytes, value: bytes | None) -> None:
        kept = self._committed.get(gid)
        if kept is None:
            if value is None:
                return
            kept = self._committed[gid] = {}
        kept.pop(key, None)
        if value is not None:
            kept[key] = value
        elif not kept:
            del self._committed[gid]

    def _apply_raw(self, key: bytes, value: bytes | None) -> str | None:
        """Apply an encoded record; its group id, or None when it is not of this family."""
        decoded = self.codecs.decode(key, value)
        if decoded is None:
            return None
        self._apply(*decoded)
        return str(decoded[1]["group_id"])

    def _apply(self, record_type: int, key: dict[str, Any], value: dict[str, Any] | None) -> None:
        raise NotImplementedError
