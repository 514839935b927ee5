"""Committed offsets (Kafka's ``OffsetMetadataManager``): OffsetCommit, TxnOffsetCommit, OffsetFetch, OffsetDelete, expiry.

Owns the committed offsets of one ``__consumer_offsets`` shard and the transactional offsets waiting
for their producer's marker.  Both change only through :meth:`OffsetMetadataManager.replay` (an
offset record) and :meth:`OffsetMetadataManager.replay_end_transaction` (a COMMIT/ABORT marker) —
the same code on load, for the records of the log, and when a write commits, for the records it
carries — so OffsetFetch, the metrics and expiry read committed state only.  What is written and
not committed yet is read from the writes in flight themselves (:class:`~broker.coordinator.group.writes.GroupWrite`):
a group with offsets in flight has offsets to delete, and a transactional commit in flight makes
OffsetFetch with ``require_stable`` answer UNSTABLE_OFFSET_COMMIT (KIP-447).  A write that fails
changes nothing here.

Who may commit, which offsets a group keeps, and the "simple" group committed offsets make are
the membership manager's (:mod:`broker.coordinator.group.membership`) answers.  Pure: every call
runs inside the shard's :class:`~broker.coordinator.group.writes.ShardWrites`.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from typing import Any

from protocol.error_codes import ErrorCode

from .config import GroupConfig
from .membership import GroupMetadataManager
from .model import OffsetEntry
from .records import OffsetCommitRecord
from .writes import GroupWrite, ShardWrites, commit_error, group_write_error

__all__ = ["OffsetMetadataManager"]

E = ErrorCode
Request = Any
Response = dict[str, Any]
TopicPartition = tuple[str, int]


class OffsetMetadataManager:
    """The committed offsets of one shard (see the module doc).

    ``partition_count(topic)`` (optional) returns the number of partitions of ``topic`` or None when it
    does not exist; OffsetCommit then answers UNKNOWN_TOPIC_OR_PARTITION for unknown topic-partitions.
    """

    def __init__(self, config: GroupConfig, writes: ShardWrites, groups: GroupMetadataManager, *,
                 partition_count: Callable[[str], int | None] | None = None) -> None:
        self.config = config
        self._w = writes
        self._groups = groups
        self._partition_count = partition_count
        #: group -> topic-partition -> its committed offset
        self.offsets: dict[str, dict[TopicPartition, OffsetEntry]] = {}
        #: transactional offset commits written and waiting for their producer's marker:
        #: producer id -> group -> topic-partition -> offset (committed offsets once COMMIT is written)
        self.txn_offsets: dict[int, dict[str, dict[TopicPartition, OffsetEntry]]] = {}

    # ============================================================================ replay

    def replay(self, record: OffsetCommitRecord, producer_id: int) -> None:
        """Apply one offset record, read from the log on load or carried by a write that committed.

        In a transactional batch (``producer_id`` >= 0) the offset waits for its producer's marker;
        otherwise it replaces the group's committed offset (a tombstone deletes it).
        """
        group_id, tp, entry = record.group_id, (record.topic, record.partition), record.offset
        if entry is None:
            offsets = self.offsets.get(group_id)
            if offsets is not None:
                offsets.pop(tp, None)
                if not offsets:
                    del self.offsets[group_id]
        elif producer_id >= 0:
            self.txn_offsets.setdefault(producer_id, {}).setdefault(group_id, {})[tp] = entry
        else:
            self.offsets.setdefault(group_id, {})[tp] = entry
            self._groups.ensure_group(group_id)

    def replay_end_transaction(self, partition: int, producer_id: int, commit: bool) -> None:
        """Apply ``producer_id``'s COMMIT (``commit``) or ABORT marker on offsets partition ``partition``: its
        transactional offsets of the groups of that partition become committed offsets, or are dropped."""
        pending = self.txn_offsets.get(producer_id)
        if not pending:
            return
        for group_id in [g for g in pending if self._w.partition(g) == partition]:
            offsets = pending.pop(group_id)
            if not commit:
                continue
            self.offsets.setdefault(group_id, {}).update(offsets)
            self._groups.ensure_group(group_id)
        if not pending:
            del self.txn_offsets[producer_id]

    # ============================================================================ in flight

    def in_flight(self, group_id: str) -> set[TopicPartition]:
        """The topic-partitions of ``group_id`` whose offset changes are written but not committed yet."""
        return {(r.topic, r.partition) for pw in self._w.pending() for r in pw.offsets if r.group_id == group_id}

    def groups_in_flight(self) -> set[str]:
        """The groups with offset changes written but not committed yet."""
        return {r.group_id for pw in self._w.pending() for r in pw.offsets}

    def has_offsets(self, group_id: str) -> bool:
        """Committed offsets, or offset changes in flight, exist for ``group_id``."""
        return group_id in self.offsets or any(r.group_id == group_id for pw in self._w.pending() for r in pw.offsets)

    def _unstable(self, group_id: str, tp: TopicPartition) -> bool:
        """A transactional commit for ``tp`` is being written or waits for its marker (KIP-447)."""
        return any(tp in by_group.get(group_id, ()) for by_group in self.txn_offsets.values()) or any(
            pw.write.producer_id >= 0 and any(r.group_id == group_id and (r.topic, r.partition) == tp
                                              for r in pw.offsets)
            for pw in self._w.in_flight())

    # ============================================================================ writing

    def write_offset(self, pw: GroupWrite, group_id: str, tp: TopicPartition, entry: OffsetEntry | None) -> None:
        """Add an offset commit (or, with ``entry`` None, its tombstone) to ``pw``; replayed when it commits."""
        record = OffsetCommitRecord(group_id, tp[0], tp[1], entry)
        pw.write.records.append(record.encode())
        pw.offsets.append(record)

    def delete_all(self, pw: GroupWrite, group_id: str) -> None:
        """Tombstone every offset of ``group_id``, committed or in flight (the group is being deleted)."""
        for tp in sorted(set(self.offsets.get(group_id, ())) | self.in_flight(group_id)):
            self.write_offset(pw, group_id, tp, None)

    # ============================================================================ OffsetCommit

    def offset_commit(self, api_version: int, request: Request, token: Hashable) -> None:
        """OffsetCommit v2-9."""
        g = request.get
        v = api_version
        group_id = g("group_id") or ""
        retention = g("retention_time_ms", -1) if v <= 4 else -1
        error = self._groups.validate_offset_commit(group_id, g("member_id") or "",
                                                    g("group_instance_id") if v >= 7 else None,
                                                    g("generation_id_or_member_epoch", -1), v)
        now = self._w.now
        expire = now + retention if retention is not None and retention >= 0 else -1
        resp: Response = {}
        if v >= 3:
            resp["throttle_time_ms"] = 0
        self._commit_offsets(group_id, g("topics") or (), error, v >= 6, expire, token, resp)

    def txn_offset_commit(self, api_version: int, request: Request, token: Hashable) -> None:
        """TxnOffsetCommit v0-5: offsets written as the producer's transactional batch; they become the
        group's committed offsets when the producer's COMMIT marker is replayed on this partition, and are
        dropped by ABORT."""
        g = request.get
        v = api_version
        group_id = g("group_id") or ""
        error = self._groups.validate_txn_offset_commit(
            group_id, (g("member_id") or "") if v >= 3 else "", g("group_instance_id") if v >= 3 else None,
            g("generation_id", -1) if v >= 3 else -1)
        self._commit_offsets(group_id, g("topics") or (), error, v >= 2, -1, token, {"throttle_time_ms": 0},
                             g("producer_id"), g("producer_epoch"))

    def _commit_offsets(self, group_id: str, topics: Iterable[Any], error: ErrorCode | None, with_epoch: bool,
                        expire: int, token: Hashable, resp: Response, producer_id: int = -1,
                        producer_epoch: int = -1) -> None:
        """Write the offsets of an (Txn)OffsetCommit that passed validation (``error`` None) and reply once
        durable; ``producer_id``: a transactional commit of that producer."""
        counts = self._partition_count
        max_meta = self.config.offset_metadata_max_bytes
        now = self._w.now
        pw: GroupWrite | None = None
        accepted: list[Response] = []
        out_topics = []
        for t in topics:
            name = t.get("name")
            count = counts(name) if counts is not None else None
            out_parts = []
            for p in t.get("partitions") or ():
                index = p.get("partition_index")
                if counts is not None and (count is None or not 0 <= index < count):
                    code: ErrorCode = E.UNKNOWN_TOPIC_OR_PARTITION
                elif error is not None:
                    code = error
                else:
                    metadata = p.get("committed_metadata") or ""
                    if len(metadata) > max_meta:
                        code = E.OFFSET_METADATA_TOO_LARGE
                    else:
                        code = E.NONE
                        epoch = p.get("committed_leader_epoch", -1) if with_epoch else -1
                        if pw is None:
                            pw = self._w.write(self._w.partition(group_id), producer_id, producer_epoch)
                        self.write_offset(pw, group_id, (name, index), OffsetEntry(
                            p.get("committed_offset"), epoch, metadata, now, expire))
                part: Response = {"partition_index": index, "error_code": code}
                if code == E.NONE:
                    accepted.append(part)
                out_parts.append(part)
            out_topics.append({"name": name, "partitions": out_parts})
        resp["topics"] = out_topics

        def failed(_pw: GroupWrite, append_error: ErrorCode) -> None:
            code = commit_error(append_error)
            for part in accepted:
                part["error_code"] = code

        self._w.reply_after([pw] if pw is not None else [], token, resp, failed)

    # ============================================================================ OffsetFetch

    def offset_fetch(self, api_version: int, request: Request, token: Hashable) -> None:
        """OffsetFetch v1-9 (v8+: several groups per request)."""
        g = request.get
        v = api_version
        if v >= 8:
            groups = []
            stable = bool(g("require_stable"))
            for req_group in g("groups") or ():
                gid = req_group.get("group_id") or ""
                error = self._groups.validate_offset_fetch(gid, req_group.get("member_id"),
                                                           req_group.get("member_epoch", -1)) if v >= 9 else None
                if error is not None:
                    groups.append({"group_id": gid, "topics": [], "error_code": error})
                    continue
                groups.append({"group_id": gid, "topics": self._fetch_topics(gid, req_group.get("topics"), v, stable),
                               "error_code": E.NONE})
            self._w.reply(token, {"throttle_time_ms": 0, "groups": groups})
        else:
            topics = g("topics")
            stable = v >= 7 and bool(g("require_stable"))
            resp: Response = {"topics": self._fetch_topics(g("group_id") or "", topics if v >= 2 else topics or [], v,
                                                           stable)}
            if v >= 2:
                resp["error_code"] = E.NONE
            if v >= 3:
                resp["throttle_time_ms"] = 0
            self._w.reply(token, resp)

    def _fetch_topics(self, group_id: str, topics: Iterable[Any] | None, version: int,
                      require_stable: bool = False) -> list[Response]:
        offsets = self.offsets.get(group_id, {})
        with_epoch = version >= 5
        wanted: list[tuple[str, list[int]]]
        if topics is None:
            by_topic: dict[str, list[int]] = {}
            for topic, index in sorted(offsets):
                by_topic.setdefault(topic, []).append(index)
            wanted = list(by_topic.items())
        else:
            wanted = [(t.get("name"), list(t.get("partition_indexes") or ())) for t in topics]
        out = []
        for name, indexes in wanted:
            parts = []
            for index in indexes:
                entry = offsets.get((name, index))
                if require_stable and self._unstable(group_id, (name, index)):
                    entry = None
                    code: ErrorCode = E.UNSTABLE_OFFSET_COMMIT
                else:
                    code = E.NONE
                part: Response = {"partition_index": index,
                                  "committed_offset": entry.offset if entry else -1,
                                  "metadata": entry.metadata if entry else "",
                                  "error_code": code}
                if with_epoch:
                    part["committed_leader_epoch"] = entry.leader_epoch if entry else -1
                parts.append(part)
            out.append({"name": name, "partitions": parts})
        return out

    # ============================================================================ OffsetDelete

    def offset_delete(self, api_version: int, request: Request, token: Hashable) -> None:
        """OffsetDelete v0: refused for topics a live consumer group is subscribed to."""
        g = request.get
        group_id = g("group_id") or ""
        error, subscribed = self._groups.validate_offset_delete(group_id, self.has_offsets(group_id))
        out_topics = []
        pw: GroupWrite | None = None
        if error is None:
            offsets = self.offsets.get(group_id, {})
            pending = self.in_flight(group_id)
            for t in g("topics") or ():
                name = t.get("name")
                refused = subscribed is not None and name in subscribed
                parts = []
                for p in t.get("partitions") or ():
                    index = p.get("partition_index")
                    if refused:
                        parts.append({"partition_index": index, "error_code": E.GROUP_SUBSCRIBED_TO_TOPIC})
                        continue
                    if (name, index) in offsets or (name, index) in pending:
                        if pw is None:
                            pw = self._w.for_group(group_id)
                        self.write_offset(pw, group_id, (name, index), None)
                    parts.append({"partition_index": index, "error_code": E.NONE})
                out_topics.append({"name": name, "partitions": parts})
        resp: Response = {"error_code": E.NONE if error is None else error, "throttle_time_ms": 0,
                          "topics": out_topics}

        def failed(_pw: GroupWrite, append_error: ErrorCode) -> None:
            resp["error_code"] = group_write_error(append_error)
            resp["topics"] = []

        self._w.reply_after([pw] if pw is not None else [], token, resp, failed)

    # ============================================================================ expiry

    def expired(self, group_id: str, keep: frozenset[str], since: int | None) -> list[TopicPartition]:
        """The committed offsets of ``group_id`` past retention now (docs/classic-groups.md "Offset expiry"): an offset with an explicit
        expiry goes then; any other once ``offsets.retention.ms`` passed ``since`` (None: its commit).
        Offsets of the topics in ``keep`` stay."""
        now = self._w.now
        retention = self.config.offsets_retention_ms
        out = []
        for tp, entry in self.offsets.get(group_id, {}).items():
            if tp[0] in keep:
                continue
            if entry.expire_timestamp >= 0:
                gone = now >= entry.expire_timestamp
            else:
                gone = now - (entry.commit_timestamp if since is None else since) >= retention
            if gone:
                out.append(tp)
        return out
