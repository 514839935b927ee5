"""Share sessions (KIP-932): the ShareFetch / ShareAcknowledge session of each (group, member) on this
broker — Kafka's ``ShareSessionCache``, pure.

A session holds the share-partitions a member fetches from here and the epoch its next request must
carry.  Epoch 0 opens one (replacing any existing session of the key; SHARE_SESSION_LIMIT_REACHED
when ``group.share.max.share.sessions`` are open); epoch N > 0 must equal the expected epoch
(INVALID_SHARE_SESSION_EPOCH; no session: SHARE_SESSION_NOT_FOUND) and moves it to N + 1 (after
``Integer.MAX_VALUE`` comes 1); epoch -1 closes it.  ShareFetch's ``Topics`` add partitions to the
session, ``ForgottenTopicsData`` remove them.  Sessions are tied to the connection that opened them:
when it closes they go (and the records their members hold are released by the caller).
"""

from __future__ import annotations

import uuid
from collections.abc import Hashable, Iterable
from dataclasses import dataclass, field

from protocol.error_codes import ErrorCode

__all__ = ["FINAL_EPOCH", "ShareSession", "ShareSessionCache"]

E = ErrorCode
FINAL_EPOCH = -1
_MAX_EPOCH = 2**31 - 1

SessionPartition = tuple[uuid.UUID, int]


@dataclass(slots=True)
class ShareSession:
    group_id: str
    member_id: str
    #: the epoch the next request must carry
    epoch: int
    #: the connection that opened it
    connection: Hashable
    partitions: dict[SessionPartition, None] = field(default_factory=dict)


class ShareSessionCache:
    """Open share sessions by (group, member), at most ``max_sessions``."""

    def __init__(self, max_sessions: int) -> None:
        self.max_sessions = max_sessions
        self.sessions: dict[tuple[str, str], ShareSession] = {}
        self.evictions = 0

    def __len__(self) -> int:
        return len(self.sessions)

    def partition_count(self) -> int:
        return sum(len(s.partitions) for s in self.sessions.values())

    def open(self, group_id: str, member_id: str, connection: Hashable,
             partitions: Iterable[SessionPartition]) -> tuple[ErrorCode, ShareSession | None, ShareSession | None]:
        """Epoch 0: (error, the new session, the session it replaced)."""
        key = (group_id, member_id)
        old = self.sessions.get(key)
        if old is None and len(self.sessions) >= self.max_sessions:
            return E.SHARE_SESSION_LIMIT_REACHED, None, None
        session = ShareSession(group_id, member_id, 1, connection, dict.fromkeys(partitions))
        self.sessions[key] = session
        return E.NONE, session, old

    def next(self, group_id: str, member_id: str, epoch: int) -> tuple[ErrorCode, ShareSession | None]:
        """Epoch N > 0 (or -1): the session, its epoch checked and advanced; -1 leaves it open (the caller
        closes it once its acknowledgements are done)."""
        session = self.sessions.get((group_id, member_id))
        if session is None:
            return E.SHARE_SESSION_NOT_FOUND, None
        if epoch == FINAL_EPOCH:
            return E.NONE, session
        if epoch != session.epoch:
            return E.INVALID_SHARE_SESSION_EPOCH, None
        session.epoch = 1 if epoch == _MAX_EPOCH else epoch + 1
        return E.NONE, session

    def close(self, session: ShareSession) -> bool:
        """Remove ``session`` (if it is still the key's session)."""
        key = (session.group_id, session.member_id)
        if self.sessions.get(key) is session:
            del self.sessions[key]
            return True
        return False

    def drop_connection(self, connection: Hashable) -> list[ShareSession]:
        """The connection closed: its sessions go."""
        gone = [s for s in self.sessions.values() if s.connection == connection]
        for s in gone:
            del self.sessions[(s.group_id, s.member_id)]
        self.evictions += len(gone)
        return gone
