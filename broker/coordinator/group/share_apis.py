"""The share-group entry points of the group coordinator's shard (a mixin of
:class:`~broker.coordinator.group.coordinator.GroupCoordinator`).

Each is an effect-returning call like the shard's others: the share groups of the shard
(:class:`~broker.coordinator.group.share_group.ShareGroups`) answer, their records go into the
shard's writes and the reply waits for them.  What needs the share coordinator (initialising,
deleting share state) is done by the edge between two such calls
(:mod:`broker.coordinator.group.share_service`).
"""

from __future__ import annotations

import uuid
from collections.abc import Hashable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from broker.coordinator.write import write_error
from protocol.error_codes import ErrorCode

if TYPE_CHECKING:
    from .membership import GroupMetadataManager
    from .share_group import ShareGroups
    from .writes import Effects, GroupWrite, ShardWrites

__all__ = ["ShareGroupApis"]

E = ErrorCode
Request = Any
Response = dict[str, Any]
Topics = Mapping[uuid.UUID, tuple[str, frozenset[int]]]


class ShareGroupApis:
    """Share-group calls of a group-coordinator shard (see the module doc)."""

    membership: GroupMetadataManager
    _w: ShardWrites

    @property
    def share(self) -> ShareGroups:
        """The share groups (KIP-932) of the shard (:class:`~broker.coordinator.group.share_group.ShareGroups`)."""
        return self.membership.share

    if TYPE_CHECKING:
        def _begin(self, now_ms: int) -> None: ...

        def _finish(self) -> Effects: ...

    def _share_reply_after_writes(self, token: Hashable, response: Response, **on_failure: Any) -> Effects:
        """Reply ``response`` once the records the share groups emitted are written; a failed write
        puts its mapped error (and ``on_failure``) into it."""
        def failed(_pw: GroupWrite, append_error: ErrorCode) -> None:
            response.update(error_code=write_error(append_error), **on_failure)

        self._w.reply_after(self.membership.consumer_writes(), token, response, failed)
        return self._finish()

    def share_group_heartbeat(self, now_ms: int, api_version: int, request: Request, token: Hashable, *,
                              client_id: str = "", client_host: str = "") -> Effects:
        """ShareGroupHeartbeat v1 (see :mod:`broker.coordinator.group.share_group`)."""
        self._begin(now_ms)
        response = self.share.heartbeat(now_ms, api_version, request, client_id, client_host)
        return self._share_reply_after_writes(token, response, assignment=None)

    def share_group_describe(self, now_ms: int, api_version: int, request: Request, token: Hashable) -> Effects:
        """ShareGroupDescribe v1."""
        self._begin(now_ms)
        self._w.reply(token, {"throttle_time_ms": 0, "groups": self.share.describe(request.get("group_ids") or ())})
        return self._finish()

    def share_initialized(self, now_ms: int, group_id: str, topic_id: uuid.UUID, partitions: Iterable[int], ok: bool,
                          token: Hashable) -> Effects:
        """The share coordinator answered an initialisation (see :meth:`ShareGroups.initialized`)."""
        self._begin(now_ms)
        self.share.initialized(now_ms, group_id, topic_id, partitions, ok)
        return self._share_reply_after_writes(token, {"error_code": E.NONE})

    def share_state_change(self, now_ms: int, group_id: str, topics: Topics, token: Hashable, *,
                           deleting: bool = False, done: bool = False) -> Effects:
        """AlterShareGroupOffsets / DeleteShareGroupOffsets, before and after the share coordinator's part:
        ``topics`` of an Empty share group are marked initializing (created if missing) — or, with
        ``deleting``, deleting (``done``: deleted).  Replies ``error_code`` and the group epoch (the state
        epoch of the initialisations) once written."""
        self._begin(now_ms)
        group = self.share.groups.get(group_id)
        if self.membership.other_group_kind(group_id) is not None or (group is None and deleting):
            self._w.reply(token, {"error_code": E.GROUP_ID_NOT_FOUND, "state_epoch": -1})
            return self._finish()
        if group is not None and group.members and not done:
            self._w.reply(token, {"error_code": E.NON_EMPTY_GROUP, "state_epoch": -1})
            return self._finish()
        if deleting:
            self.share.mark_deleting(group_id, topics, done)
        elif done:
            for tid, (_, parts) in topics.items():
                self.share.initialized(now_ms, group_id, tid, parts, True)
        else:
            group = self.share.mark_initializing(group_id, topics)
        epoch = group.group_epoch if group is not None else -1
        return self._share_reply_after_writes(token, {"error_code": E.NONE, "state_epoch": epoch})
