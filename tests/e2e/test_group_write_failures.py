"""A failed ``__consumer_offsets`` append, end to end over the wire (embedded broker, raw protocol).

The broker must answer every request that waited on the write with Kafka's mapped error — the
committing client, and the other members parked in the same SyncGroup step — keep the connection
open, and change nothing stored: OffsetFetch and DescribeGroups show the state before the write.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from e2e_helpers import RawClient, read_frame

from broker.cluster.internal_topics import OFFSETS_TOPIC
from broker.coordinator.group import coordinator_partition
from broker.log.errors import KafkaStorageError
from broker.testing.embedded import BrokerThread
from protocol.api import ApiKey, decode_response, encode_request
from protocol.error_codes import ErrorCode as E

MAX_MESSAGE = 2000


@pytest.fixture
def broker(tmp_path: Any) -> Iterator[BrokerThread]:
    with BrokerThread(data_dir=str(tmp_path / "data"), message_max_bytes=MAX_MESSAGE) as bt:
        yield bt


def client(bt: BrokerThread) -> RawClient:
    return RawClient(bt.host, bt.port)


def commit(c: RawClient, group: str, offsets: dict[int, tuple[int, str]], *, generation: int = -1,
           member_id: str = "") -> dict[int, int]:
    resp = c.request(ApiKey.OFFSET_COMMIT, 7, {
        "group_id": group, "generation_id_or_member_epoch": generation, "member_id": member_id,
        "group_instance_id": None, "topics": [{"name": "t", "partitions": [
            {"partition_index": p, "committed_offset": o, "committed_leader_epoch": -1, "committed_metadata": m}
            for p, (o, m) in offsets.items()]}]})
    return {p.partition_index: p.error_code for p in resp.topics[0].partitions}


def committed(c: RawClient, group: str, *partitions: int) -> dict[int, tuple[int, str]]:
    resp = c.request(ApiKey.OFFSET_FETCH, 7, {"group_id": group, "require_stable": False,
                                              "topics": [{"name": "t", "partition_indexes": list(partitions)}]})
    assert resp.error_code == 0
    return {p.partition_index: (p.committed_offset, p.metadata) for p in resp.topics[0].partitions}


def describe(c: RawClient, group: str) -> Any:
    return c.request(ApiKey.DESCRIBE_GROUPS, 5, {"groups": [group], "include_authorized_operations": False}).groups[0]


class Member:
    """One group member on its own connection; ``send``/``receive`` split a request so that
    several members can be parked in the coordinator at once."""

    def __init__(self, bt: BrokerThread) -> None:
        self.c = client(bt)
        self.member_id = ""
        self._pending: tuple[int, int, int] | None = None

    def send(self, api_key: int, version: int, body: dict[str, Any]) -> None:
        self.c.correlation_id += 1
        self._pending = (api_key, version, self.c.correlation_id)
        self.c.sock.sendall(encode_request(api_key, version, self.c.correlation_id, "e2e", body))

    def receive(self) -> Any:
        assert self._pending is not None
        api_key, version, cid = self._pending
        got, resp = decode_response(api_key, version, read_frame(self.c.sock))
        assert got == cid
        self._pending = None
        return resp

    def join(self, group: str) -> None:
        self.send(ApiKey.JOIN_GROUP, 5, {
            "group_id": group, "session_timeout_ms": 30_000, "rebalance_timeout_ms": 30_000,
            "member_id": self.member_id, "group_instance_id": None, "protocol_type": "consumer",
            "protocols": [{"name": "range", "metadata": b"m"}]})

    def join_now(self, group: str) -> Any:
        self.join(group)
        resp = self.receive()
        if resp.error_code == E.MEMBER_ID_REQUIRED:
            self.member_id = resp.member_id
            self.join(group)
            resp = self.receive()
        return resp

    def sync(self, group: str, generation: int, assignments: dict[str, bytes]) -> None:
        self.send(ApiKey.SYNC_GROUP, 3, {
            "group_id": group, "generation_id": generation, "member_id": self.member_id,
            "group_instance_id": None,
            "assignments": [{"member_id": m, "assignment": a} for m, a in assignments.items()]})


def test_oversize_commit_answers_invalid_commit_offset_size_and_stores_nothing(broker: BrokerThread) -> None:
    with client(broker) as c:
        assert c.create_topic("t", 2) == 0
        assert commit(c, "g", {0: (5, "small")}) == {0: E.NONE}
        # one partition's metadata is within offset.metadata.max.bytes but the batch exceeds
        # message.max.bytes of __consumer_offsets: the whole commit fails, nothing is applied
        big = "x" * (MAX_MESSAGE + 500)
        assert commit(c, "g", {0: (6, "small"), 1: (9, big)}) == {0: E.INVALID_COMMIT_OFFSET_SIZE,
                                                                  1: E.INVALID_COMMIT_OFFSET_SIZE}
        assert committed(c, "g", 0, 1) == {0: (5, "small"), 1: (-1, "")}
        # the connection is still usable and later commits work
        assert commit(c, "g", {1: (9, "")}) == {1: E.NONE}
        assert committed(c, "g", 0, 1) == {0: (5, "small"), 1: (9, "")}


def test_failed_assignment_write_answers_every_parked_member(broker: BrokerThread) -> None:
    leader, follower = Member(broker), Member(broker)
    with client(broker) as admin:
        assert leader.join_now("g").generation_id == 1
        follower.join("g")                    # MEMBER_ID_REQUIRED, then parked in the rebalance
        first = follower.receive()
        assert first.error_code == E.MEMBER_ID_REQUIRED
        follower.member_id = first.member_id
        follower.join("g")
        joined = leader.join_now("g")         # the leader rejoins: generation 2 for both
        assert joined.error_code == 0 and joined.leader == leader.member_id
        generation = joined.generation_id
        assert follower.receive().generation_id == generation
        follower.sync("g", generation, {})    # parked until the leader's assignment is stored
        # the assignment makes the group-metadata record larger than message.max.bytes
        leader.sync("g", generation, {leader.member_id: b"a" * 10,
                                      follower.member_id: b"b" * (MAX_MESSAGE + 500)})
        for member in (leader, follower):
            resp = member.receive()
            assert (resp.error_code, resp.assignment) == (E.UNKNOWN_SERVER_ERROR, b"")
        assert describe(admin, "g").group_state == "PreparingRebalance"
        # still connected: the members rejoin and a storable assignment makes the group Stable
        follower.join("g")
        again = leader.join_now("g")
        assert again.error_code == 0 and follower.receive().error_code == 0
        follower.sync("g", again.generation_id, {})
        leader.sync("g", again.generation_id, {follower.member_id: b"F", leader.member_id: b"L"})
        assert leader.receive().assignment == b"L" and follower.receive().assignment == b"F"
        assert describe(admin, "g").group_state == "Stable"
    leader.c.close()
    follower.c.close()


def test_storage_error_on_the_offsets_log_answers_not_coordinator_and_changes_nothing(
        broker: BrokerThread) -> None:
    with client(broker) as c:
        assert c.create_topic("t", 1) == 0
        assert commit(c, "g", {0: (5, "before")}) == {0: E.NONE}
        partitions = broker.call(lambda: broker.core.metadata.image.topic(OFFSETS_TOPIC).partition_count)
        plog = broker.call(broker.core.logs.get_log, OFFSETS_TOPIC, coordinator_partition("g", partitions))
        end = broker.call(lambda: plog.log_end_offset)

        def broken(batch: Any, **kwargs: Any) -> Any:
            raise KafkaStorageError("injected: disk gone")

        broker.call(setattr, plog, "append", broken)
        try:
            assert commit(c, "g", {0: (6, "after")}) == {0: E.NOT_COORDINATOR}
            assert committed(c, "g", 0) == {0: (5, "before")}
            resp = c.request(ApiKey.DELETE_GROUPS, 2, {"groups_names": ["g"]})
            assert [(r.group_id, r.error_code) for r in resp.results] == [("g", E.NOT_COORDINATOR)]
            assert describe(c, "g").group_state == "Empty"
            assert committed(c, "g", 0) == {0: (5, "before")}
        finally:
            broker.call(delattr, plog, "append")
        assert broker.call(lambda: plog.log_end_offset) == end
        assert commit(c, "g", {0: (6, "after")}) == {0: E.NONE}
        assert committed(c, "g", 0) == {0: (6, "after")}
