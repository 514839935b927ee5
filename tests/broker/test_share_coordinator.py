"""The share coordinator (KIP-932) alone: share-partition state in ``__share_group_state`` records —
initialise, read, write, delete, summaries, fencing, snapshots, replay."""

from __future__ import annotations

import itertools
import uuid
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from broker.coordinator.share.coordinator import ShareCoordinator, ShareCoordinatorConfig
from broker.coordinator.share.state import (
    ACKNOWLEDGED,
    ARCHIVED,
    AVAILABLE,
    Key,
    StateBatch,
    merge_batches,
    share_key,
    state_partition,
    uuid_text,
)
from protocol.api import ApiKey
from protocol.error_codes import ErrorCode as E

TID = uuid.UUID(int=1)
INIT, READ, WRITE, DELETE, SUMMARY = (ApiKey.INITIALIZE_SHARE_GROUP_STATE, ApiKey.READ_SHARE_GROUP_STATE,
                                      ApiKey.WRITE_SHARE_GROUP_STATE, ApiKey.DELETE_SHARE_GROUP_STATE,
                                      ApiKey.READ_SHARE_GROUP_STATE_SUMMARY)


class Shard:
    def __init__(self, per_snapshot: int = 500) -> None:
        self.config = ShareCoordinatorConfig(snapshot_update_records_per_snapshot=per_snapshot)
        self.c = ShareCoordinator(7, self.config, now_ms=5)
        self.records: list[tuple[bytes, bytes | None]] = []
        self.fail = False

    def call(self, api: int, partition: dict[str, Any], version: int = 1, group: str = "g") -> dict[str, Any]:
        fx = self.c.handle(api, 10, version, {"group_id": group, "topics": [
            {"topic_id": TID, "partitions": [{"partition": 0, **partition}]}]}, "tok")
        replies = dict(fx.replies)
        for w in fx.writes:
            if self.fail:
                replies.update(self.c.write_failed(11, w.write_id, E.NOT_ENOUGH_REPLICAS).replies)
            else:
                self.records.extend(w.records)
                replies.update(self.c.write_committed(11, w.write_id).replies)
        [result] = replies["tok"]["results"]
        [entry] = result["partitions"]
        return entry

    def write(self, start: int, batches: list[tuple[int, int, int, int]], state_epoch: int = 1,
              leader_epoch: int = 0) -> dict[str, Any]:
        return self.call(WRITE, {"state_epoch": state_epoch, "leader_epoch": leader_epoch, "start_offset": start,
                                 "delivery_complete_count": -1, "state_batches": [
                                     {"first_offset": f, "last_offset": lst, "delivery_state": s,
                                      "delivery_count": c} for f, lst, s, c in batches]})

    def read(self, leader_epoch: int = 0) -> dict[str, Any]:
        return self.call(READ, {"leader_epoch": leader_epoch}, version=0)

    def replayed(self) -> ShareCoordinator:
        c = ShareCoordinator(7, self.config)
        for key, value in self.records:
            c.load(7, key, value)
        return c


def batches(entry: dict[str, Any]) -> list[tuple[int, int, int, int]]:
    return [(b["first_offset"], b["last_offset"], b["delivery_state"], b["delivery_count"])
            for b in entry["state_batches"]]


def test_initialise_write_read() -> None:
    shard = Shard()
    assert shard.read()["error_code"] == E.INVALID_REQUEST  # nothing initialised
    assert shard.write(0, [])["error_code"] == E.INVALID_REQUEST
    assert shard.call(INIT, {"state_epoch": 1, "start_offset": -1}, version=0)["error_code"] == E.NONE
    entry = shard.read()
    assert (entry["error_code"], entry["state_epoch"], entry["start_offset"], batches(entry)) == (E.NONE, 1, -1, [])
    assert shard.write(10, [(10, 12, ACKNOWLEDGED, 1), (13, 13, AVAILABLE, 2)])["error_code"] == E.NONE
    assert shard.write(-1, [(12, 13, ARCHIVED, 3)])["error_code"] == E.NONE  # -1: the start offset stays
    entry = shard.read()
    assert entry["start_offset"] == 10
    assert batches(entry) == [(10, 11, ACKNOWLEDGED, 1), (12, 13, ARCHIVED, 3)]
    summary = shard.call(SUMMARY, {"leader_epoch": 0})
    assert (summary["start_offset"], summary["state_epoch"], summary["delivery_complete_count"]) == (10, 1, 4)
    assert shard.write(12, [])["error_code"] == E.NONE
    assert batches(shard.read()) == [(12, 13, ARCHIVED, 3)]
    assert shard.replayed().states == shard.c.states


def test_fencing() -> None:
    shard = Shard()
    shard.call(INIT, {"state_epoch": 3, "start_offset": 0}, version=0)
    assert shard.call(INIT, {"state_epoch": 2, "start_offset": 0}, version=0)["error_code"] == E.FENCED_STATE_EPOCH
    assert shard.write(0, [], state_epoch=2)["error_code"] == E.FENCED_STATE_EPOCH
    # a new leader reads: its epoch is recorded; the old leader's writes are fenced from then on
    assert shard.read(leader_epoch=5)["error_code"] == E.NONE
    assert shard.write(0, [], state_epoch=3, leader_epoch=4)["error_code"] == E.FENCED_LEADER_EPOCH
    assert shard.read(leader_epoch=4)["error_code"] == E.FENCED_LEADER_EPOCH
    assert shard.write(1, [], state_epoch=3, leader_epoch=5)["error_code"] == E.NONE
    assert shard.replayed().states == shard.c.states


def test_snapshots_replace_updates() -> None:
    shard = Shard(per_snapshot=3)
    shard.call(INIT, {"state_epoch": 1, "start_offset": 0}, version=0)
    for i in range(7):
        shard.write(-1, [(i, i, ACKNOWLEDGED, 1)])
    state = shard.c.states[Key("g", TID, 0)]
    assert state.batches == (StateBatch(0, 6, ACKNOWLEDGED, 1),)
    assert state.snapshot_epoch == 2 and state.updates == 1
    assert shard.replayed().states == shard.c.states


def test_delete_and_a_failed_write() -> None:
    shard = Shard()
    shard.call(INIT, {"state_epoch": 1, "start_offset": 0}, version=0)
    shard.fail = True
    assert shard.write(5, [])["error_code"] == E.COORDINATOR_NOT_AVAILABLE
    shard.fail = False
    assert shard.read()["start_offset"] == 0  # nothing changed
    assert shard.call(DELETE, {}, version=0)["error_code"] == E.NONE
    assert shard.read()["error_code"] == E.INVALID_REQUEST
    assert shard.call(DELETE, {}, version=0)["error_code"] == E.NONE
    assert shard.replayed().states == {}


def test_merging_state_batches() -> None:
    old = (StateBatch(0, 9, AVAILABLE, 1),)
    assert merge_batches(old, [StateBatch(3, 4, ACKNOWLEDGED, 1)], 2) == (
        StateBatch(2, 2, AVAILABLE, 1), StateBatch(3, 4, ACKNOWLEDGED, 1), StateBatch(5, 9, AVAILABLE, 1))
    assert merge_batches(old, [StateBatch(0, 9, AVAILABLE, 1)], 0) == old


def test_keys_and_partitioning_are_kafkas() -> None:
    assert uuid_text(uuid.UUID(int=1)) == "AAAAAAAAAAAAAAAAAAAAAQ"
    key = Key("my-group", uuid.UUID(int=1), 3)
    assert share_key(key) == "my-group:AAAAAAAAAAAAAAAAAAAAAQ:3"
    assert 0 <= state_partition(key, 50) < 50


BATCHES = st.lists(st.tuples(st.integers(0, 30), st.integers(0, 5), st.sampled_from([AVAILABLE, ACKNOWLEDGED, ARCHIVED]),
                             st.integers(0, 3)), max_size=6)


@settings(max_examples=200, deadline=None)
@given(old=BATCHES, new=BATCHES, start=st.integers(0, 20))
def test_merging_is_overwriting_offsets(old: list[tuple[int, int, int, int]], new: list[tuple[int, int, int, int]],
                                       start: int) -> None:
    """Merged state batches hold, per offset from the start offset on, the newest write's state and count."""
    def batches(spec: list[tuple[int, int, int, int]]) -> list[StateBatch]:
        return [StateBatch(first, first + length, state, count) for first, length, state, count in spec]

    fresh = batches(new)
    covered = [o for b in fresh for o in range(b.first, b.last + 1)]
    if len(covered) != len(set(covered)):
        return  # new batches overlapping each other: no writer sends them
    stored: tuple[StateBatch, ...] = ()
    for b in batches(old):  # earlier writes, one after the other
        stored = merge_batches(stored, [b], 0)
    expected = {o: (b.state, b.count) for b in stored for o in range(b.first, b.last + 1)}
    expected.update({o: (b.state, b.count) for b in fresh for o in range(b.first, b.last + 1)})
    merged = merge_batches(stored, fresh, start)
    got = {o: (b.state, b.count) for b in merged for o in range(b.first, b.last + 1)}
    assert got == {o: v for o, v in expected.items() if o >= start}
    assert all(a.last < b.first for a, b in itertools.pairwise(merged))
