"""KIP-848 consumer groups on the pure coordinator, with a fake clock and fake topic metadata."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import Any

import pytest

from broker.coordinator.group import GroupConfig, GroupCoordinator
from broker.coordinator.group.assignors import assign_range, assign_uniform
from broker.coordinator.group.consumer_group import ConsumerGroupConfig
from broker.coordinator.group.partitioning import coordinator_partition
from protocol.error_codes import ErrorCode as E

HB = 68


class Topics:
    """A fake metadata image: topic name -> (id, partitions)."""

    def __init__(self, **counts: int) -> None:
        self.topics: dict[str, tuple[uuid.UUID, int]] = {}
        for name, n in counts.items():
            self.create(name, n)

    def create(self, name: str, n: int) -> uuid.UUID:
        tid = uuid.uuid4()
        self.topics[name] = (tid, n)
        return tid

    def topic_id(self, name: str) -> uuid.UUID | None:
        t = self.topics.get(name)
        return None if t is None else t[0]

    def partition_count(self, name: str) -> int | None:
        t = self.topics.get(name)
        return None if t is None else t[1]

    def topic_names(self) -> Iterable[str]:
        return list(self.topics)


class Shard:
    """A coordinator whose writes all commit at once, remembering every record written (a target
    assignment per change unless ``assignment_interval_ms`` says otherwise)."""

    def __init__(self, topics: Topics, **consumer: Any) -> None:
        self.topics = topics
        self.now = 1_000
        cfg = GroupConfig(consumer=ConsumerGroupConfig(**{"heartbeat_interval_ms": 100, "session_timeout_ms": 1000,
                                                          "assignment_interval_ms": 0, **consumer}))
        self.config = cfg
        self.c = GroupCoordinator(cfg, now_ms=self.now, topics=topics, partition_count=topics.partition_count)
        self.records: list[tuple[bytes, bytes | None]] = []
        self.tokens = 0

    def run(self, fx: Any) -> dict[Any, Any]:
        replies = dict(fx.replies)
        for w in fx.writes:
            self.records.extend(w.records)
            replies.update(self.run(self.c.write_committed(self.now, w.write_id)))
        return replies

    def call(self, key: int, version: int, req: dict[str, Any], view: Any = None) -> dict[str, Any]:
        self.tokens += 1
        replies = self.run(self.c.handle(key, self.now, version, req, self.tokens, client_id="cid",
                                         client_host="/127.0.0.1", topic_view=view))
        for _ in range(10):  # a parked request (a classic join): let its timers run
            if self.tokens in replies:
                break
            self.now += 1000
            replies.update(self.run(self.c.poll(self.now)))
        return replies[self.tokens]

    def hb(self, member_id: str, epoch: int, *, topics: list[str] | None = None, regex: str | None = None,
           owned: dict[uuid.UUID, list[int]] | None = None, instance: str | None = None,
           assignor: str | None = None, group: str = "g", view: Any = None) -> dict[str, Any]:
        req = {"group_id": group, "member_id": member_id, "member_epoch": epoch, "instance_id": instance,
               "rack_id": None, "rebalance_timeout_ms": 5000 if epoch == 0 else -1,
               "subscribed_topic_names": topics, "subscribed_topic_regex": regex, "server_assignor": assignor,
               "topic_partitions": [] if epoch == 0 else None if owned is None else [
                   {"topic_id": t, "partitions": ps} for t, ps in owned.items()]}
        return self.call(HB, 1, req, view)

    def advance(self, ms: int) -> None:
        self.now += ms
        self.run(self.c.poll(self.now))

    def group(self, gid: str = "g") -> Any:
        return self.c.consumer.groups[gid]


def owned(resp: dict[str, Any]) -> dict[uuid.UUID, list[int]]:
    return {tp["topic_id"]: list(tp["partitions"]) for tp in resp["assignment"]["topic_partitions"]}


class Client:
    """A consumer following the protocol: it keeps the last assignment it got and reports it."""

    def __init__(self, shard: Shard, member_id: str, topics: list[str] | None = None, regex: str | None = None,
                 instance: str | None = None) -> None:
        self.shard, self.member_id, self.instance = shard, member_id, instance
        self.epoch = 0
        self.assignment: dict[uuid.UUID, list[int]] = {}
        self.topics, self.regex = topics, regex

    def beat(self) -> dict[str, Any]:
        if self.epoch == 0:
            resp = self.shard.hb(self.member_id, 0, topics=self.topics, regex=self.regex, instance=self.instance)
        else:
            resp = self.shard.hb(self.member_id, self.epoch, owned=self.assignment, instance=self.instance)
        assert resp["error_code"] == E.NONE, resp
        self.epoch = resp["member_epoch"]
        if resp["assignment"] is not None:
            self.assignment = owned(resp)
        return resp

    def partitions(self) -> set[tuple[uuid.UUID, int]]:
        return {(t, p) for t, ps in self.assignment.items() for p in ps}


def settle(clients: list[Client], rounds: int = 10) -> None:
    """Heartbeat every client in turn; no partition may ever be owned by two clients at once."""
    for _ in range(rounds):
        for c in clients:
            c.beat()
            seen: set[tuple[uuid.UUID, int]] = set()
            for other in clients:
                mine = other.partitions()
                assert not (mine & seen), "a partition is owned by two members"
                seen |= mine


def test_single_member_gets_every_partition() -> None:
    s = Shard(Topics(t=4))
    c = Client(s, "m1", ["t"])
    resp = c.beat()
    assert resp["member_epoch"] == 1 and resp["heartbeat_interval_ms"] == 100
    assert c.partitions() == {(s.topics.topic_id("t"), p) for p in range(4)}
    assert s.group().state == "Stable"


def test_second_member_waits_for_the_first_to_revoke() -> None:
    s = Shard(Topics(t=6))
    a, b = Client(s, "a", ["t"]), Client(s, "b", ["t"])
    a.beat()
    b.beat()
    assert b.partitions() == set()  # a still owns them all
    assert s.group().state == "Reconciling"
    a.beat()  # told to revoke half
    assert len(a.partitions()) == 3
    b.beat()
    assert len(b.partitions()) == 0  # a has not confirmed the revocation yet
    a.beat()  # confirms: reports only its 3
    b.beat()
    assert len(b.partitions()) == 3 and not (a.partitions() & b.partitions())
    settle([a, b])
    assert s.group().state == "Stable"
    assert a.epoch == b.epoch == s.group().group_epoch == 2


def test_scale_out_and_in_keeps_ownership_exclusive() -> None:
    s = Shard(Topics(t=10, u=5))
    clients = [Client(s, f"m{i}", ["t", "u"]) for i in range(5)]
    for n in range(1, 6):
        settle(clients[:n])
        sizes = sorted(len(c.partitions()) for c in clients[:n])
        assert sum(sizes) == 15 and sizes[-1] - sizes[0] <= 1
    for c in clients[1:]:
        assert s.hb(c.member_id, -1)["member_epoch"] == -1
    settle(clients[:1])
    assert len(clients[0].partitions()) == 15
    assert s.group().state == "Stable" and len(s.group().members) == 1


def test_session_timeout_fences_and_reassigns() -> None:
    s = Shard(Topics(t=4))
    a, b = Client(s, "a", ["t"]), Client(s, "b", ["t"])
    settle([a, b])
    for _ in range(3):
        s.advance(400)
        a.beat()  # only a keeps heartbeating
    assert "b" not in s.group().members
    settle([a])
    assert len(a.partitions()) == 4
    assert s.hb("b", b.epoch, owned=b.assignment)["error_code"] == E.UNKNOWN_MEMBER_ID


def test_member_that_does_not_revoke_in_time_is_fenced() -> None:
    s = Shard(Topics(t=4))
    a = Client(s, "a", ["t"])
    a.beat()
    b = Client(s, "b", ["t"])
    b.beat()
    a.beat()  # told to revoke; never confirms
    for _ in range(6):
        s.advance(900)
        b.beat()
        s.hb("a", a.epoch)  # alive, but still holding the partitions (no owned list)
    assert "a" not in s.group().members
    settle([b])
    assert len(b.partitions()) == 4


def test_epochs_are_checked() -> None:
    s = Shard(Topics(t=2))
    a = Client(s, "a", ["t"])
    a.beat()
    assert s.hb("a", a.epoch + 1)["error_code"] == E.FENCED_MEMBER_EPOCH
    b = Client(s, "b", ["t"])
    b.beat()
    settle([a, b])
    assert s.hb("a", a.epoch - 1)["error_code"] == E.FENCED_MEMBER_EPOCH
    assert s.hb("zz", 3)["error_code"] == E.UNKNOWN_MEMBER_ID
    assert s.hb("a", 1, group="nope")["error_code"] == E.UNKNOWN_MEMBER_ID


def test_static_member_comes_back_with_its_partitions() -> None:
    s = Shard(Topics(t=4))
    a, b = Client(s, "a", ["t"], instance="i-a"), Client(s, "b", ["t"], instance="i-b")
    settle([a, b])
    epoch = s.group().group_epoch
    before = a.partitions()
    # the instance id is still held by a live member
    assert s.hb("a2", 0, topics=["t"], instance="i-a")["error_code"] == E.UNRELEASED_INSTANCE_ID
    assert s.hb("a", -2, instance="i-a")["member_epoch"] == -2
    a2 = Client(s, "a2", ["t"], instance="i-a")
    a2.beat()
    settle([a2, b])
    assert a2.partitions() == before
    assert s.group().group_epoch == epoch  # no rebalance
    assert set(s.group().members) == {"a2", "b"}


def test_static_member_gone_for_good_after_its_session() -> None:
    s = Shard(Topics(t=4))
    a, b = Client(s, "a", ["t"], instance="i-a"), Client(s, "b", ["t"])
    settle([a, b])
    s.hb("a", -2, instance="i-a")
    for _ in range(4):
        s.advance(400)
        b.beat()
    assert "a" not in s.group().members
    settle([b])
    assert len(b.partitions()) == 4


def test_subscription_change_moves_partitions() -> None:
    s = Shard(Topics(t=2, u=2))
    a = Client(s, "a", ["t"])
    settle([a])
    tid, uid = s.topics.topic_id("t"), s.topics.topic_id("u")
    resp = s.hb("a", a.epoch, topics=["u"], owned=a.assignment)
    a.epoch = resp["member_epoch"]
    a.assignment = owned(resp)
    settle([a])
    assert a.partitions() == {(uid, 0), (uid, 1)}
    assert tid not in a.assignment


def test_regex_subscription_follows_topic_creation() -> None:
    s = Shard(Topics(**{"logs-a": 2, "other": 3}))
    a = Client(s, "a", ["other"], regex="logs-.*")
    a.beat()
    # the regex is resolved after the heartbeat that brought it (Kafka's order: literal topics first)
    assert {t for t, _ in a.partitions()} == {s.topics.topic_id("other")}
    s.advance(1)
    settle([a])
    assert {t for t, _ in a.partitions()} == {s.topics.topic_id("logs-a"), s.topics.topic_id("other")}
    s.topics.create("logs-b", 2)
    s.run(s.c.metadata_changed(s.now))
    settle([a])
    assert {t for t, _ in a.partitions()} == {s.topics.topic_id(n) for n in ("logs-a", "logs-b", "other")}
    assert s.hb("b", 0, regex="(")["error_code"] == E.INVALID_REGULAR_EXPRESSION


def test_a_regex_resolves_over_the_topics_the_member_may_describe() -> None:
    s = Shard(Topics(**{"pub-a": 2, "priv-a": 3}))
    view = lambda name: name.startswith("pub-")  # noqa: E731 - what the member's principal may describe
    resp = s.hb("a", 0, regex="p.*", view=view)
    s.advance(1)  # the regex resolves, with the member's view
    assert s.group().regexes == {"p.*": frozenset({"pub-a"})}
    resp = s.hb("a", resp["member_epoch"], owned={}, view=view)
    assert set(owned(resp)) == {s.topics.topic_id("pub-a")}
    # new topics: resolved again with the view the group has
    s.topics.create("pub-b", 1)
    s.topics.create("priv-b", 1)
    s.run(s.c.metadata_changed(s.now))
    assert s.group().regexes == {"p.*": frozenset({"pub-a", "pub-b"})}
    # a coordinator that loaded the group has no view yet: new topics wait for a member to bring one
    again = GroupCoordinator(s.config, now_ms=s.now, topics=s.topics)
    for key, value in s.records:
        again.load(0, key, value)
    again.complete_load(s.now)
    s.c, s.records = again, []
    s.topics.create("pub-c", 1)
    s.topics.create("priv-c", 1)
    s.run(s.c.metadata_changed(s.now))
    assert s.group().regexes == {"p.*": frozenset({"pub-a", "pub-b"})}
    epoch = s.group().members["a"].member_epoch
    s.hb("a", epoch, owned=None, view=view)
    s.advance(1)
    assert s.group().regexes == {"p.*": frozenset({"pub-a", "pub-b", "pub-c"})}
    # without authorization (no view) every topic counts
    s.hb("b", 0, regex="p.*", group="open")
    s.advance(1)
    assert s.group("open").regexes["p.*"] == frozenset(s.topics.topics)


def test_new_partitions_and_deleted_topics_trigger_a_new_target() -> None:
    s = Shard(Topics(t=2, u=2))
    a = Client(s, "a", ["t", "u"])
    settle([a])
    tid, _ = s.topics.topics["t"]
    s.topics.topics["t"] = (tid, 4)
    del s.topics.topics["u"]
    epoch = s.group().group_epoch
    s.run(s.c.metadata_changed(s.now))
    assert s.group().group_epoch == epoch + 1
    settle([a])
    assert a.partitions() == {(tid, p) for p in range(4)}


def test_a_heartbeat_that_changes_nothing_writes_nothing_and_any_change_still_counts() -> None:
    s = Shard(Topics(t=2))
    a = Client(s, "a", ["t"])
    settle([a])
    written = len(s.records)
    for _ in range(3):
        assert s.hb("a", a.epoch)["assignment"] is None
    assert len(s.records) == written
    # the member's metadata changing (here its rack) is written even in the steady state
    req = {"group_id": "g", "member_id": "a", "member_epoch": a.epoch, "instance_id": None, "rack_id": "r1",
           "rebalance_timeout_ms": -1, "subscribed_topic_names": None, "subscribed_topic_regex": None,
           "server_assignor": None, "topic_partitions": None}
    assert s.call(HB, 1, req)["error_code"] == E.NONE
    assert len(s.records) == written + 1 and s.group().members["a"].rack_id == "r1"
    # a subscription change in the steady state moves the group on
    epoch = s.group().group_epoch
    s.topics.create("u", 1)
    s.run(s.c.metadata_changed(s.now))
    assert s.group().group_epoch == epoch  # nobody subscribes to u yet
    assert s.hb("a", a.epoch, topics=["t", "u"])["error_code"] == E.NONE
    assert s.group().group_epoch == epoch + 1


def test_a_group_loaded_while_its_topics_changed_sees_the_change_at_its_first_heartbeat() -> None:
    s = Shard(Topics(t=2))
    a = Client(s, "a", ["t"])
    settle([a])
    tid, _ = s.topics.topics["t"]
    s.topics.topics["t"] = (tid, 3)  # grows while no coordinator has the group (no metadata_changed)
    again = GroupCoordinator(s.config, now_ms=s.now, topics=s.topics)
    for key, value in s.records:
        again.load(0, key, value)
    again.complete_load(s.now)
    s.c = again
    epoch = s.group().group_epoch
    settle([a])
    assert s.group().group_epoch == epoch + 1
    assert a.partitions() == {(tid, p) for p in range(3)}


def test_requests_are_validated() -> None:
    s = Shard(Topics(t=2))
    assert s.hb("", 0, topics=["t"])["error_code"] == E.INVALID_REQUEST
    assert s.hb("a", 0)["error_code"] == E.INVALID_REQUEST  # no subscription
    assert s.hb("a", 0, topics=["t"], assignor="sticky")["error_code"] == E.UNSUPPORTED_ASSIGNOR
    assert s.hb("a", -3)["error_code"] == E.INVALID_REQUEST


def test_group_max_size() -> None:
    s = Shard(Topics(t=2), max_size=1)
    Client(s, "a", ["t"]).beat()
    assert s.hb("b", 0, topics=["t"])["error_code"] == E.GROUP_MAX_SIZE_REACHED


def test_replay_rebuilds_the_groups() -> None:
    s = Shard(Topics(t=5, u=3))
    clients = [Client(s, f"m{i}", ["t", "u"], instance="s0" if i == 0 else None) for i in range(3)]
    settle(clients)
    b = Client(s, "x", regex="u")
    b.beat()
    s.advance(1)  # the regex resolves
    b.beat()  # leave it mid-reconciliation
    again = GroupCoordinator(s.config, now_ms=s.now, topics=s.topics)
    for key, value in s.records:
        again.load(0, key, value)
    again.complete_load(s.now)
    old, new = s.group(), again.consumer.groups["g"]
    assert (new.group_epoch, new.assignment_epoch, new.target, new.subscription, new.owners, new.regexes) == (
        old.group_epoch, old.assignment_epoch, old.target, old.subscription, old.owners, old.regexes)
    assert new.members == old.members and new.static_members == {"s0": "m0"}
    assert new.state == old.state == "Reconciling"


def test_offset_commit_and_fetch_check_the_member_epoch() -> None:
    s = Shard(Topics(t=2))
    a = Client(s, "a", ["t"])
    a.beat()

    def commit(member: str, epoch: int) -> int:
        resp = s.call(8, 9, {"group_id": "g", "generation_id_or_member_epoch": epoch, "member_id": member,
                             "group_instance_id": None, "topics": [
                                 {"name": "t", "partitions": [{"partition_index": 0, "committed_offset": 5,
                                                               "committed_leader_epoch": -1,
                                                               "committed_metadata": ""}]}]})
        return resp["topics"][0]["partitions"][0]["error_code"]

    assert commit("a", a.epoch + 1) == E.STALE_MEMBER_EPOCH
    assert commit("nobody", 1) == E.UNKNOWN_MEMBER_ID
    assert commit("", -1) == E.UNKNOWN_MEMBER_ID  # the group is not empty
    assert commit("a", a.epoch) == E.NONE

    def txn_commit(member: str, epoch: int) -> int:
        resp = s.call(28, 3, {"transactional_id": "tx", "group_id": "g", "producer_id": 7, "producer_epoch": 0,
                              "generation_id": epoch, "member_id": member, "group_instance_id": None, "topics": [
                                  {"name": "t", "partitions": [{"partition_index": 1, "committed_offset": 3,
                                                                "committed_leader_epoch": -1,
                                                                "committed_metadata": ""}]}]})
        return resp["topics"][0]["partitions"][0]["error_code"]

    assert txn_commit("a", a.epoch + 1) == E.ILLEGAL_GENERATION
    assert txn_commit("a", a.epoch) == E.NONE
    assert txn_commit("", -1) == E.NONE  # exactly-once without membership information

    def fetch(member: str | None, epoch: int) -> dict[str, Any]:
        resp = s.call(9, 9, {"groups": [{"group_id": "g", "member_id": member, "member_epoch": epoch,
                                          "topics": None}], "require_stable": False})
        return resp["groups"][0]

    assert fetch("a", a.epoch + 5)["error_code"] == E.STALE_MEMBER_EPOCH
    got = fetch("a", a.epoch)
    assert got["error_code"] == E.NONE and got["topics"][0]["partitions"][0]["committed_offset"] == 5
    assert fetch(None, -1)["error_code"] == E.NONE  # an admin fetch
    assert "g" not in s.c.groups  # no "simple" classic group next to the consumer group


def test_committed_transactional_offsets_of_a_consumer_group_make_no_classic_group() -> None:
    """The COMMIT marker applies a consumer group's transactional offsets as a load replays them: no
    "simple" classic group appears next to the consumer group (ListGroups names the group once)."""
    s = Shard(Topics(t=2))
    Client(s, "a", ["t"]).beat()
    resp = s.call(28, 3, {"transactional_id": "tx", "group_id": "g", "producer_id": 7, "producer_epoch": 0,
                          "generation_id": -1, "member_id": "", "group_instance_id": None, "topics": [
                              {"name": "t", "partitions": [{"partition_index": 1, "committed_offset": 3,
                                                            "committed_leader_epoch": -1,
                                                            "committed_metadata": ""}]}]})
    assert resp["topics"][0]["partitions"][0]["error_code"] == E.NONE
    s.tokens += 1
    partition = coordinator_partition("g", s.config.offsets_topic_num_partitions)
    replies = s.run(s.c.complete_transaction(s.now, partition, 7, 0, True, 0, s.tokens))
    assert replies[s.tokens] == {"error_code": E.NONE}
    assert s.c.offsets["g"][("t", 1)].offset == 3
    assert "g" not in s.c.groups
    listed = s.call(16, 5, {"states_filter": [], "types_filter": []})["groups"]
    assert [(g["group_id"], g["group_type"]) for g in listed] == [("g", "consumer")]


def test_classic_and_consumer_groups_cannot_share_an_id() -> None:
    s = Shard(Topics(t=2), session_timeout_ms=60_000)
    Client(s, "a", ["t"]).beat()
    join = {"group_id": "g", "session_timeout_ms": 10_000, "rebalance_timeout_ms": 10_000, "member_id": "",
            "group_instance_id": None, "protocol_type": "consumer", "protocols": [{"name": "range", "metadata": b""}]}
    assert s.call(11, 7, join)["error_code"] == E.INCONSISTENT_GROUP_PROTOCOL
    assert s.call(12, 4, {"group_id": "g", "generation_id": 1, "member_id": "a",
                          "group_instance_id": None})["error_code"] == E.UNKNOWN_MEMBER_ID
    # a classic group with members keeps its id
    join["group_id"] = "classic"
    assert s.call(11, 3, join)["error_code"] == E.NONE
    assert s.hb("c", 0, topics=["t"], group="classic")["error_code"] == E.GROUP_ID_NOT_FOUND
    listed = s.call(16, 5, {"states_filter": [], "types_filter": []})["groups"]
    assert {(g["group_id"], g["group_type"]) for g in listed} == {("g", "consumer"), ("classic", "classic")}
    assert s.call(16, 5, {"states_filter": [], "types_filter": ["consumer"]})["groups"][0]["group_state"] == "Stable"
    described = s.call(15, 5, {"groups": ["g"], "include_authorized_operations": False})["groups"][0]
    assert described["group_state"] == "Dead"
    cgd = s.call(69, 1, {"group_ids": ["g", "classic"], "include_authorized_operations": False})["groups"]
    assert cgd[0]["error_code"] == E.NONE and cgd[0]["group_state"] == "Stable" and cgd[0]["assignor_name"] == "uniform"
    assert cgd[0]["members"][0]["assignment"]["topic_partitions"][0]["topic_name"] == "t"
    assert cgd[1]["error_code"] == E.GROUP_ID_NOT_FOUND


def test_empty_consumer_group_is_deleted_and_non_empty_refused() -> None:
    s = Shard(Topics(t=2))
    a = Client(s, "a", ["t"])
    a.beat()
    assert s.call(42, 2, {"groups_names": ["g"]})["results"][0]["error_code"] == E.NON_EMPTY_GROUP
    s.hb("a", -1)
    assert s.group().state == "Empty"
    assert s.call(42, 2, {"groups_names": ["g"]})["results"][0]["error_code"] == E.NONE
    assert "g" not in s.c.consumer.groups
    again = GroupCoordinator(s.config, topics=s.topics)
    for key, value in s.records:
        again.load(0, key, value)
    assert "g" not in again.consumer.groups


@pytest.mark.parametrize("assignor", [assign_uniform, assign_range])
def test_assignors_cover_every_partition_once(assignor: Any) -> None:
    t, u = uuid.uuid4(), uuid.uuid4()
    members = {"a": frozenset({t, u}), "b": frozenset({t}), "c": frozenset({t, u})}
    result = assignor(members, {t: 7, u: 4}, {})
    seen = [(tid, p) for m in result.values() for tid, ps in m.items() for p in ps]
    assert sorted(seen) == sorted([(t, p) for p in range(7)] + [(u, p) for p in range(4)])
    assert all(tid in members[m] for m, a in result.items() for tid in a)


def test_uniform_is_balanced_and_sticky() -> None:
    t = uuid.uuid4()
    members = {f"m{i}": frozenset({t}) for i in range(3)}
    first = assign_uniform(members, {t: 900}, {})
    assert sorted(len(a[t]) for a in first.values()) == [300, 300, 300]
    members["m3"] = frozenset({t})
    second = assign_uniform(members, {t: 900}, first)
    sizes = sorted(len(a.get(t, ())) for a in second.values())
    assert sizes == [225, 225, 225, 225]
    moved = sum(len(first[m][t] - second[m][t]) for m in first)
    assert moved == 225  # only what the new member needs


def test_range_gives_contiguous_ranges() -> None:
    t = uuid.uuid4()
    result = assign_range({"b": frozenset({t}), "a": frozenset({t})}, {t: 5}, {})
    assert result["a"][t] == frozenset({0, 1, 2}) and result["b"][t] == frozenset({3, 4})


# ------------------------------------------------------------------------------ failed writes


class HeldShard(Shard):
    """A shard whose writes wait for the test to commit or fail them (in order, as a log completes them)."""

    def __init__(self, topics: Topics, **consumer: Any) -> None:
        super().__init__(topics, **consumer)
        self.held: list[Any] = []
        self.replies: dict[Any, Any] = {}

    def run(self, fx: Any) -> dict[Any, Any]:
        self.held.extend(fx.writes)
        self.replies.update(fx.replies)
        return dict(fx.replies)

    def send(self, member_id: str, epoch: int, **kw: Any) -> int:
        """A heartbeat whose reply may wait for its write; returns its token."""
        self.tokens += 1
        req = {"group_id": "g", "member_id": member_id, "member_epoch": epoch, "instance_id": None, "rack_id": None,
               "rebalance_timeout_ms": 5000 if epoch == 0 else -1, "subscribed_topic_names": kw.get("topics"),
               "subscribed_topic_regex": None, "server_assignor": None,
               "topic_partitions": [] if epoch == 0 else None}
        self.run(self.c.handle(HB, self.now, 1, req, self.tokens, client_id="cid", client_host="/127.0.0.1"))
        return self.tokens

    def commit_next(self) -> None:
        w = self.held.pop(0)
        self.records.extend(w.records)
        self.run(self.c.write_committed(self.now, w.write_id))

    def fail_next(self, error: E = E.NOT_ENOUGH_REPLICAS) -> None:
        w = self.held.pop(0)
        self.run(self.c.write_failed(self.now, w.write_id, error))

    def commit_all(self) -> None:
        while self.held:
            self.commit_next()


def _snapshot(group: Any) -> tuple[Any, ...]:
    return (group.group_epoch, group.assignment_epoch, dict(group.members), dict(group.target),
            dict(group.subscription), dict(group.owners), dict(group.regexes), dict(group.static_members))


def _reloaded(s: Shard) -> Any:
    again = GroupCoordinator(s.config, now_ms=s.now, topics=s.topics)
    for key, value in s.records:
        again.load(0, key, value)
    again.complete_load(s.now)
    return again.consumer.groups.get("g")


def test_a_failed_write_reverts_the_group_to_what_is_stored() -> None:
    s = HeldShard(Topics(t=4))
    a = s.send("a", 0, topics=["t"])
    s.commit_all()
    assert s.replies[a]["error_code"] == E.NONE and s.replies[a]["member_epoch"] == 1
    stored = _snapshot(s.group())
    b = s.send("b", 0, topics=["t"])  # joins: new member, group epoch 2, a new target
    assert b not in s.replies and s.group().group_epoch == 2 and "b" in s.group().members
    s.fail_next()
    assert s.replies[b]["error_code"] == E.COORDINATOR_NOT_AVAILABLE
    assert _snapshot(s.group()) == stored  # b, epoch 2 and the new target are gone
    # a goes on in epoch 1 with all four partitions, nothing to write
    again = s.hb("a", 1, owned={s.topics.topic_id("t"): [0, 1, 2, 3]})
    assert (again["error_code"], again["member_epoch"]) == (E.NONE, 1) and not s.held
    # the retried join works, and what is in memory is what a reload of the log gives
    b = s.send("b", 0, topics=["t"])
    s.commit_all()
    assert s.replies[b]["error_code"] == E.NONE and s.replies[b]["member_epoch"] == 2
    assert _snapshot(_reloaded(s)) == _snapshot(s.group())


def test_a_failed_write_keeps_what_later_writes_still_carry() -> None:
    s = HeldShard(Topics(t=6))
    s.send("a", 0, topics=["t"])
    s.commit_all()
    s.send("b", 0, topics=["t"])  # write 1
    s.send("c", 0, topics=["t"])  # write 2, on top of write 1
    assert len(s.held) == 2
    s.fail_next()  # write 1 fails: write 2 (c's records) may still be stored
    assert set(s.group().members) == {"a", "c"}
    s.commit_next()
    assert _snapshot(_reloaded(s)) == _snapshot(s.group())


def test_offsets_committed_while_the_group_was_made_keep_a_group_when_that_write_fails() -> None:
    """An admin commit lands while the first heartbeat's records (the consumer group) are in flight; that
    write fails and the consumer group goes: the committed offsets keep a "simple" group, as a reload has."""
    s = HeldShard(Topics(t=2))
    s.tokens += 1
    s.run(s.c.handle(8, s.now, 8, {"group_id": "g", "generation_id_or_member_epoch": -1, "member_id": "",
                                   "group_instance_id": None, "topics": [{"name": "t", "partitions": [
                                       {"partition_index": 0, "committed_offset": 5, "committed_leader_epoch": -1,
                                        "committed_metadata": ""}]}]}, s.tokens))
    s.send("a", 0, topics=["t"])
    s.commit_next()  # the offsets: the consumer group holds the id, no simple group is made
    s.fail_next()    # the consumer group's records
    assert "g" not in s.c.consumer.groups and s.c.offsets["g"][("t", 0)].offset == 5
    again = GroupCoordinator(s.config, now_ms=s.now, topics=s.topics)
    for key, value in s.records:
        again.load(0, key, value)
    again.complete_load(s.now)
    assert set(again.groups) == set(s.c.groups) == {"g"}


def test_a_failed_deletion_brings_the_empty_group_back() -> None:
    s = HeldShard(Topics(t=2))
    s.send("a", 0, topics=["t"])
    s.commit_all()
    s.send("a", -1)  # leaves: the group is Empty
    s.commit_all()
    stored = _snapshot(s.group())
    s.tokens += 1
    s.run(s.c.handle(42, s.now, 2, {"groups_names": ["g"]}, s.tokens))
    assert "g" not in s.c.consumer.groups
    s.fail_next()
    assert s.replies[s.tokens]["results"][0]["error_code"] == E.COORDINATOR_NOT_AVAILABLE
    assert _snapshot(s.group()) == stored
