"""Share sessions (KIP-932): epochs, the session limit, closing, connections — Kafka's ShareSessionCache, pure."""

from __future__ import annotations

import uuid

from broker.replication.share.sessions import FINAL_EPOCH, ShareSessionCache
from protocol.error_codes import ErrorCode as E

T = uuid.UUID(int=1)


def test_epochs_advance_and_are_checked() -> None:
    cache = ShareSessionCache(max_sessions=10)
    assert cache.next("g", "m", 1) == (E.SHARE_SESSION_NOT_FOUND, None)
    code, session, old = cache.open("g", "m", "conn-1", [(T, 0)])
    assert code == E.NONE and session is not None and old is None and session.epoch == 1
    assert cache.next("g", "m", 2)[0] == E.INVALID_SHARE_SESSION_EPOCH
    assert cache.next("g", "m", 1)[0] == E.NONE and session.epoch == 2
    session.epoch = 2**31 - 1
    assert cache.next("g", "m", 2**31 - 1)[0] == E.NONE and session.epoch == 1  # wraps to 1
    # epoch 0 again replaces the session
    code, again, old = cache.open("g", "m", "conn-1", [(T, 1)])
    assert old is session and again is not None and list(again.partitions) == [(T, 1)]
    assert cache.next("g", "m", FINAL_EPOCH) == (E.NONE, again)
    assert cache.close(again) and cache.next("g", "m", 1)[0] == E.SHARE_SESSION_NOT_FOUND


def test_the_session_limit_and_closed_connections() -> None:
    cache = ShareSessionCache(max_sessions=2)
    assert cache.open("g", "a", "c1", [])[0] == E.NONE
    assert cache.open("g", "b", "c2", [(T, 0), (T, 1)])[0] == E.NONE
    assert cache.open("g", "c", "c3", [])[0] == E.SHARE_SESSION_LIMIT_REACHED
    assert cache.open("g", "a", "c1", [])[0] == E.NONE  # replacing one's own session is no new session
    assert cache.partition_count() == 2
    [gone] = cache.drop_connection("c2")
    assert gone.member_id == "b" and cache.evictions == 1 and len(cache) == 1
    assert cache.open("g", "c", "c3", [])[0] == E.NONE
