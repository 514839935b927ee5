"""One replay path: what a coordinator holds once its writes committed is what a load of its log rebuilds.

Random sequences of requests run against a pure coordinator whose writes the test commits or fails
(in order, as a log completes them); at the end every write still in flight commits, and a fresh
coordinator loads the committed writes' records.  Both must hold the same stored state:

* group coordinator: committed offsets, pending transactional offsets, KIP-848 consumer groups, and
  every settled classic group (Stable or Empty; a group still rebalancing, or that never had a member,
  is in memory only, as in Kafka).  A classic group whose metadata write failed is left out: its
  membership lives in memory and is not rolled back (the known gap the group package documents);
* transaction coordinator: every transactional id's stored state (the epoch before the last bump is
  in memory only, as in Kafka).
"""

from __future__ import annotations

import itertools
from typing import Any, TypeVar

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_consumer_group import Topics
from test_txn_coordinator import Harness as TxnHarness

from broker.coordinator.group import GroupConfig, GroupCoordinator
from broker.coordinator.group.consumer_group import ConsumerGroupConfig
from broker.coordinator.group.model import Group, GroupState
from broker.coordinator.group.partitioning import coordinator_partition
from broker.coordinator.group.records import GroupMetadataRecord, decode_record
from broker.coordinator.txn.coordinator import TransactionCoordinator, TxnConfig, TxnState
from broker.coordinator.write import Write
from protocol.api import ApiKey
from protocol.error_codes import ErrorCode as E

T0 = 1_000_000
PROPERTY = settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))


D = TypeVar("D")


def run(driver: D, ops: list[tuple[Any, ...]]) -> D:
    """Apply each ``(method, *args)`` of ``ops`` to ``driver``."""
    for kind, *args in ops:
        getattr(driver, kind)(*args)
    return driver


# ================================================================================ group coordinator

CLASSIC = ("c1", "c2", "x")      # "x" is also used as a consumer group (conversions both ways)
CONSUMER = ("k1", "x")
TOPICS = Topics(t=3, u=2)  # one image for the live shard and its reloaded twin
GROUP_CONFIG = GroupConfig(
    min_session_timeout_ms=10, initial_rebalance_delay_ms=0, offsets_topic_num_partitions=2,
    offsets_retention_ms=20_000, offsets_retention_check_interval_ms=5_000,
    consumer=ConsumerGroupConfig(heartbeat_interval_ms=100, session_timeout_ms=3_000))


class GroupDriver:
    """A group coordinator, a clock, the writes in flight and the log of the committed ones."""

    def __init__(self) -> None:
        self.now = T0
        ids = itertools.count()
        self.c = GroupCoordinator(GROUP_CONFIG, now_ms=T0, partition_count=TOPICS.partition_count, topics=TOPICS,
                                  member_id_factory=lambda prefix: f"{prefix}-{next(ids)}")
        self.held: list[Write] = []
        self.log: list[Write] = []
        #: classic groups a failed write carried the metadata of (their membership is not rolled back)
        self.tainted: set[str] = set()
        self.tokens = itertools.count(1)
        self.pending: dict[int, tuple[str, str, int]] = {}
        #: (group, slot) -> member id / generation / whether it leads / the members it saw
        self.members: dict[tuple[str, int], str] = {}
        self.generations: dict[str, int] = {}
        self.leaders: dict[str, str] = {}
        self.member_lists: dict[str, list[str]] = {}
        #: (consumer group, slot) -> (member id, epoch, owned)
        self.consumers: dict[tuple[str, int], tuple[str, int, list[Any]]] = {}

    # -- plumbing ------------------------------------------------------------------------------
    def run(self, fx: Any) -> None:
        self.held.extend(fx.writes)
        for token, resp in fx.replies:
            what = self.pending.pop(token, None)
            if what is not None:
                self.learn(what, resp)

    def learn(self, what: tuple[str, str, int], resp: dict[str, Any]) -> None:
        kind, gid, slot = what
        if kind == "join":
            if resp["member_id"]:
                self.members[(gid, slot)] = resp["member_id"]
            if resp["error_code"] == E.NONE:
                self.generations[gid] = resp["generation_id"]
                self.leaders[gid] = resp["leader"]
                if resp["members"]:
                    self.member_lists[gid] = [m["member_id"] for m in resp["members"]]
        elif kind == "hb":
            if resp["error_code"] == E.NONE:
                owned = self.consumers.get((gid, slot), ("", 0, []))[2]
                if resp["assignment"] is not None:
                    owned = [{"topic_id": t["topic_id"], "partitions": list(t["partitions"])}
                             for t in resp["assignment"]["topic_partitions"]]
                self.consumers[(gid, slot)] = (resp["member_id"], resp["member_epoch"], owned)
            else:
                self.consumers.pop((gid, slot), None)

    def call(self, key: int, version: int, req: dict[str, Any], what: tuple[str, str, int] | None = None,
             **ctx: Any) -> None:
        token = next(self.tokens)
        if what is not None:
            self.pending[token] = what
        self.run(self.c.handle(key, self.now, version, req, token, **ctx))

    def complete(self, error: int | None) -> None:
        if not self.held:
            return
        write = self.held.pop(0)
        if error is None:
            self.log.append(write)
            self.run(self.c.write_committed(self.now, write.write_id))
        else:
            for key, value in write.records:
                record = decode_record(key, value)
                if isinstance(record, GroupMetadataRecord):
                    self.tainted.add(record.group_id)
            self.run(self.c.write_failed(self.now, write.write_id, error))

    # -- requests ------------------------------------------------------------------------------
    def join(self, gid: str, slot: int, static: bool, protocol: str) -> None:
        member = "" if static else self.members.get((gid, slot), "")
        self.call(ApiKey.JOIN_GROUP, 5, {
            "group_id": gid, "session_timeout_ms": 2_000, "rebalance_timeout_ms": 2_000, "member_id": member,
            "group_instance_id": f"i{slot}" if static else None, "protocol_type": "consumer",
            "protocols": [{"name": protocol, "metadata": f"{protocol}-{slot}".encode()}]},
            ("join", gid, slot), client_id=f"client-{slot}", client_host="/10.0.0.1")

    def sync(self, gid: str, slot: int) -> None:
        member = self.members.get((gid, slot), "")
        leads = member != "" and self.leaders.get(gid) == member
        assignments = [{"member_id": m, "assignment": f"{m}@{self.now}".encode()}
                       for m in self.member_lists.get(gid, ())] if leads else []
        self.call(ApiKey.SYNC_GROUP, 3, {"group_id": gid, "generation_id": self.generations.get(gid, -1),
                                         "member_id": member, "group_instance_id": None,
                                         "assignments": assignments})

    def heartbeat(self, gid: str, slot: int) -> None:
        self.call(ApiKey.HEARTBEAT, 3, {"group_id": gid, "generation_id": self.generations.get(gid, -1),
                                        "member_id": self.members.get((gid, slot), ""), "group_instance_id": None})

    def leave(self, gid: str, slot: int) -> None:
        self.call(ApiKey.LEAVE_GROUP, 3, {"group_id": gid, "members": [
            {"member_id": self.members.get((gid, slot), ""), "group_instance_id": None}]})

    def commit(self, gid: str, slot: int | None, topic: str, partition: int, offset: int) -> None:
        member = self.members.get((gid, slot), "") if slot is not None else ""
        consumer = self.consumers.get((gid, slot)) if slot is not None else None
        if consumer is not None:
            member, generation = consumer[0], consumer[1]
        else:
            generation = self.generations.get(gid, -1) if member else -1
        self.call(ApiKey.OFFSET_COMMIT, 8, {
            "group_id": gid, "generation_id_or_member_epoch": generation, "member_id": member,
            "group_instance_id": None, "topics": [{"name": topic, "partitions": [
                {"partition_index": partition, "committed_offset": offset, "committed_leader_epoch": -1,
                 "committed_metadata": f"m{offset}"}]}]})

    def txn_commit(self, gid: str, producer_id: int, topic: str, partition: int, offset: int) -> None:
        self.call(ApiKey.TXN_OFFSET_COMMIT, 3, {
            "transactional_id": f"tx{producer_id}", "group_id": gid, "producer_id": producer_id, "producer_epoch": 0,
            "generation_id": -1, "member_id": "", "group_instance_id": None, "topics": [{"name": topic, "partitions": [
                {"partition_index": partition, "committed_offset": offset, "committed_leader_epoch": -1,
                 "committed_metadata": ""}]}]})

    def marker(self, producer_id: int, partition: int, commit: bool) -> None:
        token = next(self.tokens)
        self.run(self.c.complete_transaction(self.now, partition, producer_id, 0, commit, 0, token))

    def delete(self, gid: str) -> None:
        self.call(ApiKey.DELETE_GROUPS, 2, {"groups_names": [gid]})

    def offset_delete(self, gid: str, topic: str) -> None:
        self.call(ApiKey.OFFSET_DELETE, 0, {"group_id": gid, "topics": [
            {"name": topic, "partitions": [{"partition_index": p} for p in range(3)]}]})

    def consumer_heartbeat(self, gid: str, slot: int, leave: bool, topics: list[str]) -> None:
        known = self.consumers.get((gid, slot))
        if leave:
            if known is None:
                return
            req = {"group_id": gid, "member_id": known[0], "member_epoch": -1, "instance_id": None, "rack_id": None,
                   "rebalance_timeout_ms": -1, "subscribed_topic_names": None, "subscribed_topic_regex": None,
                   "server_assignor": None, "topic_partitions": None}
            self.consumers.pop((gid, slot))
        elif known is None:
            req = {"group_id": gid, "member_id": f"{gid}-m{slot}", "member_epoch": 0, "instance_id": None,
                   "rack_id": None, "rebalance_timeout_ms": 2_000, "subscribed_topic_names": topics,
                   "subscribed_topic_regex": None, "server_assignor": None, "topic_partitions": []}
        else:
            req = {"group_id": gid, "member_id": known[0], "member_epoch": known[1], "instance_id": None,
                   "rack_id": None, "rebalance_timeout_ms": -1, "subscribed_topic_names": None,
                   "subscribed_topic_regex": None, "server_assignor": None, "topic_partitions": known[2]}
        self.call(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, req, ("hb", gid, slot), client_id="cid",
                  client_host="/127.0.0.1")

    def tick(self, ms: int) -> None:
        self.now += ms
        self.run(self.c.poll(self.now))

    def commit_everything(self) -> None:
        while self.held:
            self.complete(None)

    # -- the loaded twin ---------------------------------------------------------------------
    def reload(self) -> GroupCoordinator:
        again = GroupCoordinator(GROUP_CONFIG, now_ms=self.now, partition_count=TOPICS.partition_count, topics=TOPICS)
        for partition in range(GROUP_CONFIG.offsets_topic_num_partitions):
            for write in self.log:
                if write.partition != partition:
                    continue
                if write.marker is not None:
                    again.load_marker(partition, write.producer_id, write.marker.commit)
                    continue
                for key, value in write.records:
                    again.load(partition, key, value, write.producer_id)
        again.complete_load(self.now)
        return again


SLOT = st.integers(0, 2)
GROUP_OPS = st.one_of(
    st.tuples(st.just("join"), st.sampled_from(CLASSIC), SLOT, st.booleans(), st.sampled_from(["range", "rr"])),
    st.tuples(st.just("sync"), st.sampled_from(CLASSIC), SLOT),
    st.tuples(st.just("heartbeat"), st.sampled_from(CLASSIC), SLOT),
    st.tuples(st.just("leave"), st.sampled_from(CLASSIC), SLOT),
    st.tuples(st.just("commit"), st.sampled_from(CLASSIC + CONSUMER), st.none() | SLOT, st.sampled_from("tu"),
              st.integers(0, 2), st.integers(0, 100)),
    st.tuples(st.just("txn_commit"), st.sampled_from(CLASSIC + CONSUMER), st.integers(1, 2), st.sampled_from("tu"),
              st.integers(0, 2), st.integers(0, 100)),
    st.tuples(st.just("marker"), st.integers(1, 2), st.integers(0, 1), st.booleans()),
    st.tuples(st.just("delete"), st.sampled_from(CLASSIC + CONSUMER)),
    st.tuples(st.just("offset_delete"), st.sampled_from(CLASSIC + CONSUMER), st.sampled_from("tu")),
    st.tuples(st.just("consumer_heartbeat"), st.sampled_from(CONSUMER), SLOT, st.booleans(),
              st.sampled_from([["t"], ["t", "u"]])),
    st.tuples(st.just("tick"), st.sampled_from([10, 500, 1_500, 4_000, 25_000])),
    st.tuples(st.just("complete"), st.none() | st.sampled_from([E.NOT_ENOUGH_REPLICAS, E.MESSAGE_TOO_LARGE])),
    st.tuples(st.just("complete"), st.none()),
)


def settled_classic(group: Group) -> tuple[Any, ...]:
    """What a classic group's metadata record stores, for a group not in a rebalance."""
    protocol = group.protocol_name
    members = {m.member_id: (m.group_instance_id, m.client_id, m.client_host, m.rebalance_timeout_ms,
                             m.session_timeout_ms, m.assignment, m.metadata(protocol))
               for m in group.members.values()}
    empty_since = group.current_state_timestamp if group.state is GroupState.EMPTY else None
    return (group.state, group.generation_id, group.protocol_type, protocol, group.leader_id, members, empty_since)


def consumer_group(group: Any) -> tuple[Any, ...]:
    members = {mid: (m.member_epoch, m.previous_member_epoch, m.state, m.assigned, m.pending_revocation,
                     m.metadata_value()) for mid, m in group.members.items()}
    return (group.group_epoch, group.assignment_epoch, members, dict(group.target), dict(group.subscription),
            dict(group.owners), dict(group.regexes), dict(group.static_members))


def assert_group_state_replays(d: GroupDriver) -> None:
    live, loaded = d.c, d.reload()
    assert loaded.offsets == live.offsets
    assert loaded.txn_offsets == {pid: by_group for pid, by_group in live.txn_offsets.items() if by_group}
    assert {gid: consumer_group(g) for gid, g in loaded.consumer.groups.items()} == \
        {gid: consumer_group(g) for gid, g in live.consumer.groups.items()}
    for gid, group in live.groups.items():
        if gid in d.tainted or group.pending_members or group.state not in (GroupState.STABLE, GroupState.EMPTY):
            continue
        if group.protocol_type is not None:  # it had members: its metadata was stored when it settled
            assert gid in loaded.groups, gid
            assert settled_classic(loaded.groups[gid]) == settled_classic(group), gid
        elif gid in loaded.groups:  # never had a member: a "simple" group (its state timestamp is not stored)
            assert settled_classic(loaded.groups[gid])[:-1] == settled_classic(group)[:-1], gid
    for gid in loaded.groups:
        assert gid in live.groups or gid in d.tainted, gid


@PROPERTY
@given(st.lists(GROUP_OPS, max_size=80))
def test_group_coordinator_state_is_what_its_log_replays_to(ops: list[tuple[Any, ...]]) -> None:
    d = run(GroupDriver(), ops)
    d.commit_everything()
    assert d.c.writes_in_flight() == 0
    assert_group_state_replays(d)


def test_group_driver_reaches_every_state_it_compares() -> None:
    """The property is not vacuous: a plain run stores Stable and Empty classic groups, a consumer group,
    offsets and committed transactional offsets, and they replay."""
    d = GroupDriver()
    for slot in (0, 1):
        d.join("c1", slot, False, "range")   # MEMBER_ID_REQUIRED
    for slot in (0, 1):
        d.join("c1", slot, False, "range")   # parked until both joined
    for slot in (0, 1):
        d.sync("c1", slot)
    d.commit_everything()  # the assignment is stored: Stable
    d.join("c2", 0, False, "range")
    d.join("c2", 0, False, "range")
    d.sync("c2", 0)
    d.leave("c2", 0)
    d.consumer_heartbeat("k1", 0, False, ["t"])
    d.commit("c1", 0, "t", 0, 5)
    d.txn_commit("k1", 1, "u", 1, 7)
    d.commit_everything()
    d.marker(1, coordinator_partition("k1", GROUP_CONFIG.offsets_topic_num_partitions), True)
    d.commit_everything()
    assert d.c.groups["c1"].state is GroupState.STABLE and d.c.groups["c2"].state is GroupState.EMPTY
    assert d.c.consumer.groups["k1"].members and d.c.offsets["k1"][("u", 1)].offset == 7
    assert d.c.offsets["c1"][("t", 0)].offset == 5
    assert_group_state_replays(d)


# ================================================================================ transaction coordinator

TXN_IDS = ("t1", "t2")


class TxnDriver(TxnHarness):
    """The transaction coordinator harness with writes held, and what each producer last learned."""

    def __init__(self) -> None:
        super().__init__(config=TxnConfig(max_timeout_ms=120_000, id_expiration_ms=60_000, abort_retry_ms=1_000),
                         auto_commit=False)
        self.pending: dict[Any, tuple[str, str]] = {}
        #: transactional id -> (producer id, epoch) as its producer knows them
        self.known: dict[str, tuple[int, int]] = {}
        self.committed: list[Write] = []

    def learn(self) -> None:
        for token in [t for t in self.pending if t in self.replies]:
            _, tid = self.pending.pop(token)
            resp = self.replies[token]
            if resp.get("error_code") == E.NONE and resp.get("producer_id", -1) >= 0:
                self.known[tid] = (resp["producer_id"], resp["producer_epoch"])

    def request(self, method: str, version: int, tid: str, **req: Any) -> None:
        token = next(self.tokens)
        self.pending[token] = (method, tid)
        self.absorb(getattr(self.c, method)(self.now, version, req, token))
        self.learn()

    def producer(self, tid: str) -> tuple[int, int]:
        return self.known.get(tid, (-1, -1))

    def init(self, tid: str, with_ids: bool) -> None:  # type: ignore[override]
        pid, epoch = self.producer(tid) if with_ids else (-1, -1)
        self.request("init_producer_id", 4, tid, transactional_id=tid, transaction_timeout_ms=5_000,
                     producer_id=pid, producer_epoch=epoch)

    def add(self, tid: str, partitions: list[int]) -> None:  # type: ignore[override]
        pid, epoch = self.producer(tid)
        self.request("add_partitions", 3, tid, v3_and_below_transactional_id=tid, v3_and_below_producer_id=pid,
                     v3_and_below_producer_epoch=epoch, v3_and_below_topics=[{"name": "a", "partitions": partitions}])

    def offsets(self, tid: str) -> None:
        pid, epoch = self.producer(tid)
        self.request("add_offsets", 3, tid, transactional_id=tid, producer_id=pid, producer_epoch=epoch,
                     group_id="g")

    def end(self, tid: str, commit: bool, version: int) -> None:  # type: ignore[override]
        pid, epoch = self.producer(tid)
        self.request("end_txn", version, tid, transactional_id=tid, producer_id=pid, producer_epoch=epoch,
                     committed=commit)

    def markers_written(self, index: int) -> None:
        if self.markers:
            m = self.markers[index % len(self.markers)]
            self.absorb(self.c.markers_written(self.now, m.transactional_id, m.producer_id, m.producer_epoch))

    def tick(self, ms: int) -> None:
        self.now += ms
        self.absorb(self.c.poll(self.now))

    def complete(self, error: int | None) -> None:
        if not self.writes:
            return
        if error is None:
            self.committed.append(self.writes[0])
            self.commit_next()
        else:
            self.fail_next(error)
        self.learn()


TXN_OPS = st.one_of(
    st.tuples(st.just("init"), st.sampled_from(TXN_IDS), st.booleans()),
    st.tuples(st.just("add"), st.sampled_from(TXN_IDS), st.lists(st.integers(0, 2), min_size=1, max_size=3,
                                                                 unique=True)),
    st.tuples(st.just("offsets"), st.sampled_from(TXN_IDS)),
    st.tuples(st.just("end"), st.sampled_from(TXN_IDS), st.booleans(), st.sampled_from([3, 5])),
    st.tuples(st.just("markers_written"), st.integers(0, 5)),
    st.tuples(st.just("tick"), st.sampled_from([100, 2_000, 6_000, 70_000])),
    st.tuples(st.just("complete"), st.none() | st.just(E.NOT_LEADER_OR_FOLLOWER)),
    st.tuples(st.just("complete"), st.none()),
)


def assert_txn_state_replays(d: TxnDriver) -> None:
    loaded = TransactionCoordinator(TxnConfig(), partition=7, coordinator_epoch=3, now_ms=d.now,
                                    allocate_producer_id=lambda: None)
    for write in d.committed:
        for key, value in write.records:
            loaded.load(7, key, value)
    stored = {tid: txn.log_value() for tid, txn in loaded.txns.items()}
    live = {tid: txn.log_value() for tid, txn in d.c.txns.items()}
    for tid, txn in d.c.txns.items():
        if tid not in stored:  # an id whose first state was never stored (its write failed)
            assert txn.producer_epoch == -1 and txn.state is TxnState.EMPTY, txn
            del live[tid]
    assert live == stored


@PROPERTY
@given(st.lists(TXN_OPS, max_size=80))
def test_transaction_coordinator_state_is_what_its_log_replays_to(ops: list[tuple[Any, ...]]) -> None:
    d = run(TxnDriver(), ops)
    while d.writes:
        d.complete(None)
    assert d.c.writes_in_flight() == 0
    assert_txn_state_replays(d)


def test_txn_driver_reaches_every_state_it_compares() -> None:
    """The property is not vacuous: a plain run stores Ongoing, Prepare and Complete states that replay."""
    d = TxnDriver()
    d.init("t1", False)
    d.complete(None)
    d.add("t1", [0, 1])
    d.complete(None)
    d.init("t2", False)
    d.complete(None)
    d.offsets("t2")
    d.complete(None)
    d.end("t2", True, 5)
    d.complete(None)
    assert d.c.txns["t1"].state is TxnState.ONGOING and d.c.txns["t2"].state is TxnState.PREPARE_COMMIT
    assert_txn_state_replays(d)
    d.markers_written(0)
    d.complete(None)
    assert d.c.txns["t2"].state is TxnState.COMPLETE_COMMIT
    assert d.c.txns["t2"].last_producer_epoch == 0  # in memory only, as in Kafka: a load does without it
    assert_txn_state_replays(d)
