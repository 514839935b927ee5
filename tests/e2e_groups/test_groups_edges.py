"""Members that fail half-way through a rebalance (raw protocol): the group still settles.

* a leader that never sends its SyncGroup (followers parked in CompletingRebalance);
* a member that took a KIP-394 member id and never came back (pending member);
* a member whose parked JoinGroup connection died before the generation completed.
"""

from __future__ import annotations

import asyncio
import time

from groups_e2e import BrokerProcess, create_topic, unique
from raw_members import JOIN_V, Connection, RawMember, describe, subscription

from protocol.api import ApiKey
from protocol.error_codes import ErrorCode

SESSION_MS = 6000


async def _stable_without(broker: BrokerProcess, group: str, members: list[RawMember], topic: str,
                          partitions: int, absent: set[str], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        for m in members:
            if m.task is not None and m.task.done() and m.task.exception() is not None:
                raise m.task.exception()  # type: ignore[misc]
        desc = await describe("127.0.0.1", broker.port, group)
        ids = {m.member_id for m in desc.members}
        gens = {m.stable_generation for m in members}
        owned = sorted(tp for m in members for tp in m.assigned)
        if (desc.group_state == "Stable" and ids == {m.member_id for m in members} and not ids & absent
                and len(gens) == 1 and -1 not in gens and owned == [(topic, p) for p in range(partitions)]):
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"{group}: not Stable without {absent}: state {desc.group_state}, members {ids}, "
                                 f"generations {gens}, owned {owned}")
        await asyncio.sleep(0.1)


def _member(broker: BrokerProcess, group: str, topic: str, partitions: int, name: str, **kw: object) -> RawMember:
    return RawMember("127.0.0.1", broker.port, group, topic, partitions, name=name, session_ms=SESSION_MS,
                     rebalance_ms=SESSION_MS, heartbeat_ms=500, **kw)  # type: ignore[arg-type]


async def test_leader_that_never_syncs_is_removed(broker: BrokerProcess) -> None:
    topic, group, partitions = unique("stall"), unique("g-stall"), 6
    create_topic(broker.bootstrap, topic, partitions)
    staller = _member(broker, group, topic, partitions, "stall-leader", stall_sync_as_leader=True).start()
    await asyncio.sleep(0.3)  # first in: the leader
    followers = [_member(broker, group, topic, partitions, f"stall-f{i}").start() for i in range(2)]
    try:
        while staller.stalled_generation < 0:  # it led a generation with the followers and went quiet
            await asyncio.sleep(0.05)
        await _stable_without(broker, group, followers, topic, partitions, {staller.member_id})
        assert all(m.stable_generation > staller.stalled_generation for m in followers)
        assert all(len(m.assigned) == 3 for m in followers)
    finally:
        await asyncio.gather(*(m.leave() for m in [*followers, staller]), return_exceptions=True)


async def test_pending_member_that_never_rejoins_expires(broker: BrokerProcess) -> None:
    topic, group, partitions = unique("pending"), unique("g-pending"), 6
    create_topic(broker.bootstrap, topic, partitions)
    ghost = await Connection.open("127.0.0.1", broker.port, "ghost")
    resp = await ghost.request(ApiKey.JOIN_GROUP, JOIN_V, {
        "group_id": group, "session_timeout_ms": SESSION_MS, "rebalance_timeout_ms": SESSION_MS, "member_id": "",
        "group_instance_id": None, "protocol_type": "consumer",
        "protocols": [{"name": "range", "metadata": subscription([topic])}], "reason": None})
    assert resp.error_code == ErrorCode.MEMBER_ID_REQUIRED
    members = [_member(broker, group, topic, partitions, f"pending-{i}").start() for i in range(3)]
    try:
        await _stable_without(broker, group, members, topic, partitions, {resp.member_id})
        assert all(len(m.assigned) == 2 for m in members)
        assert sum(m.unknown_member for m in members) == 0
    finally:
        await asyncio.gather(*(m.leave() for m in members), return_exceptions=True)
        await ghost.close()


async def test_member_whose_parked_join_connection_died(broker: BrokerProcess) -> None:
    topic, group, partitions = unique("deadjoin"), unique("g-deadjoin"), 6
    create_topic(broker.bootstrap, topic, partitions)
    members = [_member(broker, group, topic, partitions, f"deadjoin-{i}").start() for i in range(2)]
    try:
        await _stable_without(broker, group, members, topic, partitions, set())
        # a third member gets its id, sends the JoinGroup that parks until the others rejoin, then dies
        dying = await Connection.open("127.0.0.1", broker.port, "dying")
        join = {"group_id": group, "session_timeout_ms": SESSION_MS, "rebalance_timeout_ms": SESSION_MS,
                "member_id": "", "group_instance_id": None, "protocol_type": "consumer",
                "protocols": [{"name": "range", "metadata": subscription([topic])}], "reason": None}
        first = await dying.request(ApiKey.JOIN_GROUP, JOIN_V, join)
        assert first.error_code == ErrorCode.MEMBER_ID_REQUIRED
        dying.send(ApiKey.JOIN_GROUP, JOIN_V, {**join, "member_id": first.member_id})
        await asyncio.sleep(0.1)
        await dying.close()
        await _stable_without(broker, group, members, topic, partitions, {first.member_id})
        assert all(len(m.assigned) == 3 for m in members)
    finally:
        await asyncio.gather(*(m.leave() for m in members), return_exceptions=True)
