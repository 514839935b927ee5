"""The group coordinator shard of one ``__consumer_offsets`` partition (Kafka's ``GroupCoordinatorShard``).

A pure, effect-returning state machine composed of two managers: membership
(:class:`~broker.coordinator.group.membership.GroupMetadataManager`: classic, KIP-848 and share groups)
and offsets (:class:`~broker.coordinator.group.offsets.OffsetMetadataManager`: committed and
transactional offsets).  The shard owns what spans both — the API entry points, group deletion
(DeleteGroups and expiry, which tombstone a group's offsets and the group), the retention timer,
transaction markers — and the one path records take into the state: :meth:`GroupCoordinator.replay`.
The share-group entry points are :class:`~broker.coordinator.group.share_apis.ShareGroupApis`'.

No sockets, no asyncio, no sleeps: every entry point takes the current time ``now_ms`` and returns
an :class:`~broker.coordinator.group.writes.Effects`.  The caller (the asyncio edge) must

1. send ``effects.replies`` — ``(reply_token, response_dict)`` pairs, possibly for *other*
   parked requests (the last joiner completes everybody's JoinGroup);
2. append each of ``effects.writes`` (a :class:`Write`: records for one ``__consumer_offsets``
   partition, ``(key, value)``, value ``None`` = tombstone) as one batch, and once it is durable
   call :meth:`GroupCoordinator.write_committed` — or :meth:`GroupCoordinator.write_failed` with the
   append's error code — and handle the effects those return the same way.  Writes of one partition
   complete in the order they were handed out; several may be in flight at once;
3. call :meth:`GroupCoordinator.poll` once ``effects.next_deadline_ms`` has passed.

This is Kafka 4.x's coordinator-runtime shape: a request yields records and a response, and the
response is held back until the records are committed.  Every record is applied by the same code
whether it comes out of the log on load (:meth:`load`, :meth:`load_marker`) or out of a write that
commits (:meth:`write_committed`): offsets and transaction markers are replayed when their write
commits, so OffsetFetch, DescribeGroups, ListGroups and the metrics read committed state only; a
deleted group disappears when its tombstone is replayed; the membership records — a classic group's
snapshot, a consumer group's records — are applied when the request runs, as Kafka's do (see
:mod:`broker.coordinator.group.membership`).  When a write fails nothing it carried is applied, the
consumer groups it carried records of revert to what is stored, a group it was deleting is back,
and every reply that waited on it gets the error Kafka maps the append error to
(:func:`~broker.coordinator.group.writes.commit_error` for OffsetCommit,
:func:`~broker.coordinator.group.writes.group_write_error` for the rest).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Hashable, Mapping
from typing import Any

from broker.coordinator.write import TxnMarker, Write, append_error
from protocol.api import ApiKey
from protocol.error_codes import ErrorCode

from .config import GroupConfig
from .consumer_group import TopicCatalog, TopicView
from .membership import GroupMetadataManager, default_member_id
from .model import Group, OffsetEntry
from .offsets import OffsetMetadataManager
from .records import GroupCoordinatorRecord, GroupMetadataRecord, OffsetCommitRecord, decode_record
from .share_apis import ShareGroupApis
from .timers import KeyedTimers
from .writes import Effects, GroupWrite, ShardWrites, commit_error, group_write_error

__all__ = ["Effects", "GroupCoordinator", "Write", "commit_error", "group_write_error"]

log = logging.getLogger(__name__)

E = ErrorCode
Request = Any           # a dict or a construct Container / protocol Obj with the schema's field names
Response = dict[str, Any]

#: the group APIs as plain ints for the request path (an IntEnum comparison costs more)
_JOIN_GROUP = int(ApiKey.JOIN_GROUP)
_CONSUMER_GROUP_HEARTBEAT = int(ApiKey.CONSUMER_GROUP_HEARTBEAT)
_SHARE_GROUP_HEARTBEAT = int(ApiKey.SHARE_GROUP_HEARTBEAT)
_CLASSIC_MEMBERSHIP = frozenset({_JOIN_GROUP, int(ApiKey.HEARTBEAT), int(ApiKey.LEAVE_GROUP),
                                 int(ApiKey.SYNC_GROUP)})
_RETENTION = "retention"


class GroupCoordinator(ShareGroupApis):
    """The group coordinator shard: every group and committed offset of this broker's ``__consumer_offsets``
    partitions, through its membership (:attr:`membership`) and offset (:attr:`offset_manager`) managers.

    ``partition_count(topic)`` (optional) returns the number of partitions of ``topic`` or None
    when it does not exist; OffsetCommit then answers UNKNOWN_TOPIC_OR_PARTITION for unknown
    topic-partitions.  ``member_id_factory(prefix)`` makes member ids (Kafka: prefix + "-" +
    UUID); ``wheel_factory(start_ms)`` builds the timing wheel (tests may inject one).
    """

    def __init__(self, config: GroupConfig | None = None, *, now_ms: int = 0,
                 partition_count: Callable[[str], int | None] | None = None,
                 member_id_factory: Callable[[str], str] = default_member_id,
                 wheel_factory: Callable[[int], Any] | None = None,
                 topics: TopicCatalog | None = None,
                 group_configs: Callable[[str], Mapping[str, str]] = lambda _gid: {}) -> None:
        self.config = config or GroupConfig()
        self.timers = KeyedTimers(now_ms, wheel_factory)
        self._w = ShardWrites(now_ms, self.config.offsets_topic_num_partitions)
        self.membership = GroupMetadataManager(self.config, self._w, self.timers, topics=topics,
                                               member_id_factory=member_id_factory, group_configs=group_configs)
        self.offset_manager = OffsetMetadataManager(self.config, self._w, self.membership,
                                                    partition_count=partition_count)
        self.timers.schedule((_RETENTION,), now_ms + self.config.offsets_retention_check_interval_ms)

    # -- the state, as the service, the metrics and tests read it --------------------------------
    @property
    def groups(self) -> dict[str, Group]:
        """The classic groups (a "simple" group stands for committed offsets without membership)."""
        return self.membership.groups

    @property
    def consumer(self) -> Any:
        """The KIP-848 consumer groups (:class:`~broker.coordinator.group.consumer_group.ConsumerGroups`)."""
        return self.membership.consumer

    @property
    def offsets(self) -> dict[str, dict[tuple[str, int], OffsetEntry]]:
        """Committed offsets: group -> topic-partition -> offset."""
        return self.offset_manager.offsets

    @property
    def txn_offsets(self) -> dict[int, dict[str, dict[tuple[str, int], OffsetEntry]]]:
        """Transactional offsets waiting for their producer's marker: producer id -> group -> offsets."""
        return self.offset_manager.txn_offsets

    # -- calls -----------------------------------------------------------------------------------
    def _begin(self, now_ms: int) -> None:
        self._w.begin(now_ms)

    def _finish(self) -> Effects:
        return self._w.finish(self.timers.next_deadline())

    def next_deadline(self) -> int | None:
        """When :meth:`poll` should next run (a lower bound), or None when no timer is armed."""
        return self.timers.next_deadline()

    def writes_in_flight(self) -> int:
        """How many handed-out writes have not completed yet."""
        return len(self._w)

    def handle(self, api_key: int, now_ms: int, api_version: int, request: Request, token: Hashable,
               *, client_id: str = "", client_host: str = "", topic_view: TopicView = None) -> Effects:
        """Dispatch by Kafka API key (the group APIs); ``topic_view``: which topics the requesting
        principal may DESCRIBE (None: all), for a consumer group's regular expressions."""
        if api_key == _CONSUMER_GROUP_HEARTBEAT:
            return self.consumer_group_heartbeat(now_ms, api_version, request, token, client_id=client_id,
                                                 client_host=client_host, topic_view=topic_view)
        if api_key == _SHARE_GROUP_HEARTBEAT:
            return self.share_group_heartbeat(now_ms, api_version, request, token, client_id=client_id,
                                              client_host=client_host)
        if api_key in _CLASSIC_MEMBERSHIP and self.membership.names_other_group(request):
            self._begin(now_ms)
            self.membership.classic_on_other_group(api_key, api_version, request, token)
            return self._finish()
        if api_key == _JOIN_GROUP:
            return self.join_group(now_ms, api_version, request, token, client_id=client_id, client_host=client_host)
        handler = _BY_KEY.get(api_key)
        if handler is None:
            raise ValueError(f"API key {api_key} is not a group-coordinator API")
        return handler(self, now_ms, api_version, request, token)

    # -- membership APIs -------------------------------------------------------------------------
    def join_group(self, now_ms: int, api_version: int, request: Request, token: Hashable, *,
                   client_id: str = "", client_host: str = "") -> Effects:
        """JoinGroup v2-9. ``client_id``/``client_host`` come from the request header/connection."""
        self._begin(now_ms)
        self.membership.join_group(api_version, request, token, client_id=client_id, client_host=client_host)
        return self._finish()

    def sync_group(self, now_ms: int, api_version: int, request: Request, token: Hashable) -> Effects:
        """SyncGroup v0-5."""
        self._begin(now_ms)
        self.membership.sync_group(api_version, request, token)
        return self._finish()

    def heartbeat(self, now_ms: int, api_version: int, request: Request, token: Hashable) -> Effects:
        """Heartbeat v0-4."""
        self._begin(now_ms)
        self.membership.heartbeat(api_version, request, token)
        return self._finish()

    def heartbeat_now(self, now_ms: int, api_version: int, request: Request) -> Response | None:
        """Heartbeat's common case answered at once, without effects (None: call :meth:`heartbeat`)."""
        return self.membership.heartbeat_now(now_ms, api_version, request)

    def leave_group(self, now_ms: int, api_version: int, request: Request, token: Hashable) -> Effects:
        """LeaveGroup v0-5."""
        self._begin(now_ms)
        self.membership.leave_group(api_version, request, token)
        return self._finish()

    def describe_groups(self, now_ms: int, api_version: int, request: Request, token: Hashable) -> Effects:
        """DescribeGroups v0-6."""
        self._begin(now_ms)
        self.membership.describe_groups(api_version, request, token)
        return self._finish()

    def list_groups(self, now_ms: int, api_version: int, request: Request, token: Hashable) -> Effects:
        """ListGroups v0-5."""
        self._begin(now_ms)
        self.membership.list_groups(api_version, request, token)
        return self._finish()

    def consumer_group_heartbeat(self, now_ms: int, api_version: int, request: Request, token: Hashable, *,
                                 client_id: str = "", client_host: str = "", topic_view: TopicView = None) -> Effects:
        """ConsumerGroupHeartbeat v0-1; the reply waits for its records."""
        self._begin(now_ms)
        self.membership.consumer_group_heartbeat(api_version, request, token, client_id=client_id,
                                                 client_host=client_host, topic_view=topic_view)
        return self._finish()

    def consumer_group_describe(self, now_ms: int, api_version: int, request: Request, token: Hashable) -> Effects:
        """ConsumerGroupDescribe v0-1."""
        self._begin(now_ms)
        self.membership.consumer_group_describe(api_version, request, token)
        return self._finish()

    def metadata_changed(self, now_ms: int) -> Effects:
        """Topics were created, deleted or changed: consumer and share groups refresh their subscriptions (and
        targets)."""
        self._begin(now_ms)
        self.membership.metadata_changed()
        return self._finish()

    # -- offset APIs -----------------------------------------------------------------------------
    def offset_commit(self, now_ms: int, api_version: int, request: Request, token: Hashable) -> Effects:
        """OffsetCommit v2-9."""
        self._begin(now_ms)
        self.offset_manager.offset_commit(api_version, request, token)
        return self._finish()

    def txn_offset_commit(self, now_ms: int, api_version: int, request: Request, token: Hashable) -> Effects:
        """TxnOffsetCommit v0-5: committed by the producer's marker (:meth:`complete_transaction`)."""
        self._begin(now_ms)
        self.offset_manager.txn_offset_commit(api_version, request, token)
        return self._finish()

    def offset_fetch(self, now_ms: int, api_version: int, request: Request, token: Hashable) -> Effects:
        """OffsetFetch v1-9 (v8+: several groups per request)."""
        self._begin(now_ms)
        self.offset_manager.offset_fetch(api_version, request, token)
        return self._finish()

    def offset_delete(self, now_ms: int, api_version: int, request: Request, token: Hashable) -> Effects:
        """OffsetDelete v0: refused for topics a live consumer group is subscribed to."""
        self._begin(now_ms)
        self.offset_manager.offset_delete(api_version, request, token)
        return self._finish()

    def complete_transaction(self, now_ms: int, partition: int, producer_id: int, producer_epoch: int, commit: bool,
                             coordinator_epoch: int, token: Hashable) -> Effects:
        """WriteTxnMarkers for this offsets partition: write the producer's marker here; once it commits it is
        replayed (the producer's transactional offsets become committed, or are dropped); reply
        ``{"error_code"}``."""
        self._begin(now_ms)
        pw = self._w.write(partition, producer_id, producer_epoch, TxnMarker(commit, coordinator_epoch))
        pw.wait(lambda: self._w.reply(token, {"error_code": E.NONE}),
                lambda error: self._w.reply(token, {"error_code": error}))
        return self._finish()

    # -- deletion --------------------------------------------------------------------------------
    def delete_groups(self, now_ms: int, api_version: int, request: Request, token: Hashable) -> Effects:
        """DeleteGroups v0-2: only Empty groups; writes offset and group tombstones."""
        self._begin(now_ms)
        results = []
        waits: dict[int, tuple[GroupWrite, list[Response]]] = {}
        for gid in request.get("groups_names") or ():
            entry: Response = {"group_id": gid, "error_code": E.NONE}
            error = self.membership.delete_check(gid, self.offset_manager.has_offsets(gid))
            if error is not None:
                entry["error_code"] = error
            else:
                pw = self._delete_group(gid)
                waits.setdefault(pw.write.write_id, (pw, []))[1].append(entry)
            results.append(entry)

        def failed(pw: GroupWrite, append_error: ErrorCode) -> None:
            for entry in waits[pw.write.write_id][1]:
                entry["error_code"] = group_write_error(append_error)

        self._w.reply_after([pw for pw, _ in waits.values()], token, {"throttle_time_ms": 0, "results": results},
                            failed)
        return self._finish()

    def _delete_group(self, group_id: str) -> GroupWrite:
        """Tombstone the group's offsets and the group (Kafka's ``deleteAllOffsets`` then the group's
        tombstone records); see :meth:`GroupMetadataManager.delete_group`."""
        pw = self._w.for_group(group_id)
        self.offset_manager.delete_all(pw, group_id)
        self.membership.delete_group(pw, group_id)
        return pw

    # -- timers ----------------------------------------------------------------------------------
    def poll(self, now_ms: int) -> Effects:
        """Fire every timer due at ``now_ms`` (sessions, joins, syncs, pending members, retention)."""
        self._begin(now_ms)
        for key in self.timers.expire(now_ms):
            if key in self.timers:
                continue  # re-armed by an earlier timer of this batch: no longer due
            if key[0] == _RETENTION:  # type: ignore[index]
                self._cleanup_offsets()
                self.timers.schedule((_RETENTION,), now_ms + self.config.offsets_retention_check_interval_ms)
            else:
                self.membership.on_timer(key)
        return self._finish()

    def _cleanup_offsets(self) -> None:
        """Expire offsets (Kafka's ``cleanupGroupMetadata``) and delete groups left without offsets.

        Works on committed offsets; groups with offset changes or a deletion in flight wait for the next run.
        """
        offsets, membership = self.offset_manager, self.membership
        busy = offsets.groups_in_flight()
        for group_id in list(offsets.offsets):
            if group_id in busy:
                continue
            policy = membership.retention(group_id)
            if policy is None:
                continue
            expired = offsets.expired(group_id, *policy)
            if not expired:
                continue
            if len(expired) == len(offsets.offsets[group_id]) and membership.deletable_when_expired(group_id):
                self._delete_group(group_id)  # tombstones every offset and the group
                continue
            pw = self._w.for_group(group_id)
            for tp in expired:
                offsets.write_offset(pw, group_id, tp, None)
        busy = offsets.groups_in_flight()
        for group_id in membership.idle_groups():
            if group_id not in offsets.offsets and group_id not in busy:
                self._delete_group(group_id)

    # -- writes completing -----------------------------------------------------------------------
    def write_committed(self, now_ms: int, write_id: int) -> Effects:
        """``write_id`` is durable: replay what it carried (as a load replays it) and release what waited on it."""
        self._begin(now_ms)
        pw = self._w.take(write_id)
        write = pw.write
        replay_offset = self.offset_manager.replay  # offset records only: replay()'s own dispatch is not needed
        for record in pw.offsets:
            replay_offset(record, write.producer_id)
        if write.marker is not None:
            self.replay_end_transaction(write.partition, write.producer_id, write.marker.commit)
        for gid, group, _ in pw.deletions:
            if self.membership.deletion_committed(gid, group):
                self.replay(GroupMetadataRecord(gid, None))
                self._w.fx.removed_groups.append(gid)
                log.info("group %s: deleted", gid)
        if pw.consumer_records:
            self.membership.consumer_records_committed(pw.consumer_records)
        pw.committed()
        return self._finish()

    def write_failed(self, now_ms: int, write_id: int, error_code: int) -> Effects:
        """``write_id`` could not be appended (``error_code``: the append's Kafka error): nothing it
        carried is applied, and every reply that waited on it gets the mapped error."""
        self._begin(now_ms)
        pw = self._w.take(write_id)
        error = append_error(error_code)
        log.warning("__consumer_offsets-%d: write of %d record(s) failed with %s", pw.write.partition,
                    len(pw.write.records), error.name)
        for _, group, before in pw.deletions:
            self.membership.deletion_failed(group, before)
        if pw.consumer_records:
            in_flight = [r for other in self._w.in_flight() for r in other.consumer_records]
            reverted = self.membership.consumer_records_failed(pw.consumer_records, in_flight)
            for gid in reverted & self.offsets.keys():
                self.membership.ensure_group(gid)  # a group it took away had committed offsets meanwhile
        pw.failed(error)
        return self._finish()

    # -- replay ----------------------------------------------------------------------------------
    def replay(self, record: GroupCoordinatorRecord, producer_id: int = -1) -> None:
        """Apply one record: read from the log on load, or carried by a write that just committed.

        Offset records go to the offset manager (``producer_id`` >= 0: a transactional batch's, waiting
        for the producer's marker), a classic group's record to the membership manager.
        """
        if isinstance(record, OffsetCommitRecord):
            self.offset_manager.replay(record, producer_id)
        else:
            self.membership.replay(record)

    def replay_end_transaction(self, partition: int, producer_id: int, commit: bool) -> None:
        """Apply a COMMIT/ABORT marker of ``producer_id`` written on offsets partition ``partition``."""
        self.offset_manager.replay_end_transaction(partition, producer_id, commit)

    def load(self, partition: int, key: bytes, value: bytes | None, producer_id: int = -1) -> None:
        """Replay one ``__consumer_offsets`` record of the log (in log order) to rebuild groups and offsets;
        ``producer_id``: the batch's when it is transactional.  Call :meth:`complete_load` at the end."""
        record = decode_record(key, value)
        if record is None:
            self.consumer.replay(key, value) or self.share.replay(key, value)
        else:
            self.replay(record, producer_id)

    def load_marker(self, partition: int, producer_id: int, commit: bool) -> None:
        """Replay a COMMIT/ABORT marker of ``producer_id`` (in log order, between :meth:`load` calls)."""
        self.replay_end_transaction(partition, producer_id, commit)

    def complete_load(self, now_ms: int) -> Effects:
        """After replay: arm a session timer for every reloaded member (Kafka's onLoaded)."""
        self._begin(now_ms)
        self.membership.complete_load(now_ms)
        return self._finish()


_BY_KEY: dict[int, Callable[..., Effects]] = {
    ApiKey.OFFSET_COMMIT: GroupCoordinator.offset_commit,
    ApiKey.TXN_OFFSET_COMMIT: GroupCoordinator.txn_offset_commit,
    ApiKey.OFFSET_FETCH: GroupCoordinator.offset_fetch,
    ApiKey.HEARTBEAT: GroupCoordinator.heartbeat,
    ApiKey.LEAVE_GROUP: GroupCoordinator.leave_group,
    ApiKey.SYNC_GROUP: GroupCoordinator.sync_group,
    ApiKey.DESCRIBE_GROUPS: GroupCoordinator.describe_groups,
    ApiKey.LIST_GROUPS: GroupCoordinator.list_groups,
    ApiKey.DELETE_GROUPS: GroupCoordinator.delete_groups,
    ApiKey.OFFSET_DELETE: GroupCoordinator.offset_delete,
    ApiKey.CONSUMER_GROUP_DESCRIBE: GroupCoordinator.consumer_group_describe,
    ApiKey.SHARE_GROUP_DESCRIBE: GroupCoordinator.share_group_describe,
}
