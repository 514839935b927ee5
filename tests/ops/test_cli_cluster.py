"""``kbroker cluster reassign / decommission / rebalance`` run through ``kbroker_cli.main`` against a fake
admin client that keeps a cluster the way Kafka's controller does (KIP-455: a reassignment adds its new
replicas, which catch up, then drops the removed ones; a pure reordering completes at once; ``None``
cancels).  What a real cluster does with these commands is in tests/cluster/test_cluster_reassignment_cli.py."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from broker.cluster.balance import apply_plan
from client.cluster import BrokerInfo, ClusterMetadata, PartitionInfo, TopicInfo
from client.errors import KafkaError, UnsupportedVersionError
from client.types import PartitionReassignment, TopicPartition
from kbroker_cli import main as cli_main
from kbroker_cli.commands import cluster as cluster_commands
from kbroker_cli.reassignment import PlanFileError, parse_plan, partition_moves, throttle_lists
from protocol.error_codes import ErrorCode

TP = TopicPartition


class FakeCluster:
    """Brokers, partitions (replicas, ISR, leader), reassignments in progress and throttle configs."""

    def __init__(self, brokers: Mapping[int, str | None], replicas: Mapping[TopicPartition, Sequence[int]], *,
                 reassignment_api: bool = True, copy_polls: int = 0) -> None:
        self.brokers = dict(brokers)
        self.replicas = {tp: list(r) for tp, r in replicas.items()}
        self.isr = {tp: [b for b in r if b in self.brokers] for tp, r in self.replicas.items()}
        self.leader = {tp: next((b for b in r if b in self.brokers), -1) for tp, r in self.replicas.items()}
        self.ongoing: dict[TopicPartition, PartitionReassignment] = {}
        self.configs: dict[tuple[str, str], dict[str, str]] = {}
        self.calls: list[tuple[str, Any]] = []
        self.reassignment_api = reassignment_api
        #: metadata reads a new replica needs to catch up (then the reassignment completes)
        self.copy_polls = copy_polls
        self._polls: dict[TopicPartition, int] = {}

    # -- what the controller does --

    def metadata(self) -> ClusterMetadata:
        for tp in list(self.ongoing):
            self._polls[tp] = self._polls.get(tp, 0) + 1
            if self._polls[tp] > self.copy_polls:
                self._complete(tp)
        topics: dict[str, dict[int, PartitionInfo]] = {}
        for tp, r in self.replicas.items():
            topics.setdefault(tp.topic, {})[tp.partition] = PartitionInfo(
                tp.partition, self.leader[tp], 0, tuple(r), tuple(self.isr[tp]))
        return ClusterMetadata(brokers={b: BrokerInfo(b, "127.0.0.1", 9000 + b, rack) for b, rack in self.brokers.items()},
                               topics={t: TopicInfo(t, parts) for t, parts in topics.items()}, controller_id=1)

    def _complete(self, tp: TopicPartition) -> None:
        r = self.ongoing.pop(tp)
        target = [b for b in r.replicas if b not in r.removing_replicas]
        self.replicas[tp] = target
        self.isr[tp] = list(target)
        if self.leader[tp] not in target:
            self.leader[tp] = target[0]
        self._polls.pop(tp, None)

    def alter(self, reassignments: Mapping[TopicPartition, Sequence[int] | None],
              allow_rf_change: bool) -> dict[TopicPartition, KafkaError]:
        errors: dict[TopicPartition, KafkaError] = {}
        for tp, target in reassignments.items():
            if tp not in self.replicas:
                errors[tp] = KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
            elif target is None:
                r = self.ongoing.pop(tp, None)
                if r is None:
                    errors[tp] = KafkaError(ErrorCode.NO_REASSIGNMENT_IN_PROGRESS)
                    continue
                self.replicas[tp] = [b for b in r.replicas if b not in r.adding_replicas]
                self.isr[tp] = [b for b in self.isr[tp] if b not in r.adding_replicas]
            elif any(b not in self.brokers for b in target) or len(set(target)) != len(target):
                errors[tp] = KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT, "bad replicas")
            elif not allow_rf_change and len(target) != len(self.original(tp)):
                errors[tp] = KafkaError(ErrorCode.INVALID_REPLICATION_FACTOR, "the replication factor would change")
            else:
                full = self.replicas[tp]
                removing = [b for b in full if b not in target]
                adding = [b for b in target if b not in full]
                self.replicas[tp] = list(target) + removing
                if adding:
                    self.ongoing[tp] = PartitionReassignment(list(self.replicas[tp]), adding, removing)
                    self._polls[tp] = 0
                else:
                    self.ongoing.pop(tp, None)
                    self.replicas[tp] = list(target)
                    self.isr[tp] = [b for b in target if b in self.isr[tp]]
                    if self.leader[tp] not in target:
                        self.leader[tp] = self.isr[tp][0]
        return errors

    def original(self, tp: TopicPartition) -> list[int]:
        r = self.ongoing.get(tp)
        return self.replicas[tp] if r is None else [b for b in r.replicas if b not in r.adding_replicas]

    def elect(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, KafkaError]:
        errors = {}
        for tp in partitions:
            first = self.replicas[tp][0]
            if self.leader[tp] == first:
                errors[tp] = KafkaError(ErrorCode.ELECTION_NOT_NEEDED)
            elif first in self.isr[tp] and first in self.brokers:
                self.leader[tp] = first
            else:
                errors[tp] = KafkaError(ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE)
        return errors

    def held_by(self, broker: int) -> list[TopicPartition]:
        return sorted(tp for tp, r in self.replicas.items() if broker in r)


class FakeNet:
    def __init__(self, cluster: FakeCluster) -> None:
        self.cluster = cluster

    def set_topics(self, topics: object) -> None:
        pass

    async def refresh_metadata(self) -> ClusterMetadata:
        return self.cluster.metadata()


class FakeAdmin:
    """The admin calls the cluster commands make, recorded in ``cluster.calls``."""

    def __init__(self, cluster: FakeCluster) -> None:
        self.cluster = cluster
        self.net = FakeNet(cluster)

    def _require_api(self) -> None:
        if not self.cluster.reassignment_api:
            raise UnsupportedVersionError("broker 1 does not support ListPartitionReassignments")

    async def list_partition_reassignments(self, partitions: Iterable[TopicPartition] | None = None
                                           ) -> dict[TopicPartition, PartitionReassignment]:
        self._require_api()
        wanted = None if partitions is None else set(partitions)
        return {tp: r for tp, r in sorted(self.cluster.ongoing.items()) if wanted is None or tp in wanted}

    async def alter_partition_reassignments(self, reassignments: Mapping[TopicPartition, Sequence[int] | None], *,
                                            allow_replication_factor_change: bool = True
                                            ) -> dict[TopicPartition, KafkaError]:
        self._require_api()
        self.cluster.calls.append(("alter", dict(reassignments)))
        return self.cluster.alter(reassignments, allow_replication_factor_change)

    async def elect_leaders(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, KafkaError]:
        partitions = sorted(partitions)
        self.cluster.calls.append(("elect", partitions))
        return self.cluster.elect(partitions)

    async def set_replication_throttles(self, rate: int, brokers: Iterable[int],
                                        replicas: Mapping[str, tuple[str, str]]) -> None:
        self.cluster.calls.append(("throttle", (rate, sorted(brokers), dict(replicas))))
        for b in brokers:
            self.cluster.configs.setdefault(("broker", str(b)), {}).update(
                {"leader.replication.throttled.rate": str(rate), "follower.replication.throttled.rate": str(rate)})
        for topic, (leader, follower) in replicas.items():
            self.cluster.configs.setdefault(("topic", topic), {}).update(
                {"leader.replication.throttled.replicas": leader, "follower.replication.throttled.replicas": follower})

    async def clear_replication_throttles(self, brokers: Iterable[int], topics: Iterable[str]) -> None:
        brokers, topics = sorted(brokers), sorted(topics)
        self.cluster.calls.append(("clear", (brokers, topics)))
        for key in [("broker", str(b)) for b in brokers] + [("topic", t) for t in topics]:
            self.cluster.configs.pop(key, None)


@pytest.fixture
def run(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]):  # type: ignore[no-untyped-def]
    """``run(cluster, *argv)`` -> (exit code, stdout, stderr) of ``kbroker argv`` against the fake cluster."""
    monkeypatch.setattr(cluster_commands, "POLL_SECONDS", 0.001)

    def run(cluster: FakeCluster, *argv: str) -> tuple[int, str, str]:
        @contextlib.asynccontextmanager
        async def fake_admin(ctx: object) -> AsyncIterator[FakeAdmin]:
            yield FakeAdmin(cluster)

        monkeypatch.setattr(cluster_commands, "admin", fake_admin)
        code = cli_main.main(["--bootstrap-servers", "127.0.0.1:1", *argv])
        out, err = capsys.readouterr()
        return code, out, err

    return run


def write_plan(tmp_path: Path, doc: object, name: str = "plan.json") -> str:
    path = tmp_path / name
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    return str(path)


def three_brokers(partitions: int = 3, rf: int = 3, brokers: Sequence[int] = (1, 2, 3)) -> dict[TopicPartition, list[int]]:
    n = len(brokers)
    return {TP("t", p): [brokers[(p + i) % n] for i in range(rf)] for p in range(partitions)}


# -- the plan file ------------------------------------------------------------------------------------


def test_plan_without_version_is_version_one():
    assert parse_plan('{"partitions":[{"topic":"t","partition":0,"replicas":[1,2,4]}]}') == {TP("t", 0): [1, 2, 4]}
    assert parse_plan('{"version":1,"partitions":[{"topic":"t","partition":1,"replicas":[2],'
                      '"log_dirs":["any"]}]}') == {TP("t", 1): [2]}


@pytest.mark.parametrize(("text", "message"), [
    ('{"version":2,"partitions":[{"topic":"t","partition":0,"replicas":[1]}]}', "Not supported version field value 2"),
    ('{"version":"1","partitions":[]}', "Not supported version field value 1"),
    ("not json", "The input string is not a valid JSON"),
    ('{"version":1,"partitions":[]}', "Partition reassignment list cannot be empty"),
    ('{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[]}]}', "Partition replica list cannot be empty"),
    ('{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1]},{"topic":"t","partition":0,"replicas":[2]}]}',
     "Partition reassignment contains duplicate topic partitions: t-0"),
    ('{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2,1]}]}',
     "Partition replica lists may not contain duplicate entries: t-0 contains multiple entries for 1"),
    ('{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2],"log_dirs":["any"]}]}',
     "Size of replicas list [1, 2] is different from size of log dirs list [any] for partition t-0"),
    ('{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1],"log_dirs":["/data"]}]}',
     "can only be \"any\""),
    ('{"version":1,"partitions":[{"topic":"t","partition":"0","replicas":[1]}]}', "invalid \"partition\""),
    ('{"version":1,"partitions":[{"partition":0,"replicas":[1]}]}', "invalid \"topic\""),
    ('{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":["1"]}]}', "invalid \"replicas\""),
])
def test_bad_plans_are_refused(text: str, message: str) -> None:
    with pytest.raises(PlanFileError, match=None) as raised:
        parse_plan(text)
    assert message in str(raised.value)


def test_reassign_refuses_a_bad_plan_before_connecting(run, tmp_path):
    cluster = FakeCluster({1: None}, {})
    path = write_plan(tmp_path, {"version": 2, "partitions": [{"topic": "t", "partition": 0, "replicas": [1]}]})
    assert run(cluster, "cluster", "reassign", "--execute", path) == (
        1, "", f"kbroker: {path}: Not supported version field value 2\n")
    code, _, err = run(cluster, "cluster", "reassign", "--verify", str(tmp_path / "missing.json"))
    assert (code, err) == (1, f"kbroker: {tmp_path / 'missing.json'}: No such file or directory\n")
    assert cluster.calls == []


def test_reassign_usage_errors(run, tmp_path):
    cluster = FakeCluster({1: None}, {})
    path = write_plan(tmp_path, {"partitions": [{"topic": "t", "partition": 0, "replicas": [1]}]})
    code, _, err = run(cluster, "cluster", "reassign", "--verify", path, "--throttle", "1000")
    assert (code, err) == (2, "kbroker: option \"--throttle\" can't be used with action \"--verify\"\n")
    code, _, err = run(cluster, "cluster", "reassign", "--execute", path, "--throttle", "0")
    assert code == 2 and "positive number of bytes per second" in err
    code, _, err = run(cluster, "cluster", "reassign", "--execute", path, "--preserve-throttles")
    assert code == 2 and "--preserve-throttles" in err
    code, _, err = run(cluster, "cluster", "reassign", "--execute", path, "--verify", path)
    assert code == 2 and "not allowed with argument" in err
    code, _, err = run(cluster, "cluster", "reassign")
    assert code == 2 and "one of the arguments --execute --verify --cancel --list is required" in err


# -- reassign --execute / --verify / --cancel / --list ------------------------------------------------


def test_execute_prints_the_rollback_plan_throttles_and_starts(run, tmp_path):
    cluster = FakeCluster({1: None, 2: None, 3: None, 4: None}, three_brokers(), copy_polls=1000)
    path = write_plan(tmp_path, {"version": 1, "partitions": [
        {"topic": "t", "partition": 0, "replicas": [1, 2, 4]}, {"topic": "t", "partition": 1, "replicas": [3, 2, 1]}]})
    code, out, err = run(cluster, "cluster", "reassign", "--execute", path, "--throttle", "50000")
    assert (code, err) == (0, "")
    rollback = ('{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2,3],"log_dirs":["any","any","any"]},'
                '{"topic":"t","partition":1,"replicas":[2,3,1],"log_dirs":["any","any","any"]}]}')
    assert out == (f"Current partition replica assignment\n\n{rollback}\n\n"
                   "Save this to use as the --reassignment-json-file option during rollback\n"
                   "Warning: You must run --verify periodically, until the reassignment completes, to ensure the "
                   "throttle is removed.\n"
                   "The inter-broker throttle limit was set to 50000 B/s\n"
                   "Successfully started partition reassignments for t-0,t-1\n")
    # Kafka's tool: leader list = every source replica, follower list = every new destination,
    # rates on every broker involved
    assert ("throttle", (50000, [1, 2, 3, 4], {"t": ("0:1,0:2,0:3,1:1,1:2,1:3", "0:4")})) in cluster.calls
    assert cluster.calls[-1] == ("alter", {TP("t", 0): [1, 2, 4], TP("t", 1): [3, 2, 1]})
    assert cluster.ongoing == {TP("t", 0): PartitionReassignment([1, 2, 4, 3], [4], [3])}
    assert cluster.replicas[TP("t", 1)] == [3, 2, 1]  # a pure reordering completes at once

    again = run(cluster, "cluster", "reassign", "--execute", path)
    assert again[0] == 1 and again[2].startswith("kbroker: Cannot execute because there is an existing partition "
                                                 "assignment.  Use --additional to override this")
    code, _, _ = run(cluster, "cluster", "reassign", "--execute", path, "--additional", "--throttle", "70000")
    assert code == 0
    assert cluster.calls[-2][0] == "throttle" and cluster.calls[-2][1][0] == 70000


def test_execute_refuses_unknown_brokers_and_partitions_and_surfaces_partition_errors(run, tmp_path):
    cluster = FakeCluster({1: None, 2: None, 3: None}, three_brokers())
    code, _, err = run(cluster, "cluster", "reassign", "--execute",
                       write_plan(tmp_path, {"partitions": [{"topic": "t", "partition": 0, "replicas": [1, 9]}]}))
    assert (code, err) == (1, "kbroker: Unknown broker id 9\n")
    code, _, err = run(cluster, "cluster", "reassign", "--execute",
                       write_plan(tmp_path, {"partitions": [{"topic": "t", "partition": 7, "replicas": [1]},
                                                            {"topic": "u", "partition": 0, "replicas": [1]}]}))
    assert (code, err) == (1, "kbroker: Unable to find partition: t-7, u-0\n")
    code, _, err = run(cluster, "cluster", "reassign", "--disallow-replication-factor-change", "--execute",
                       write_plan(tmp_path, {"partitions": [{"topic": "t", "partition": 0, "replicas": [1, 2]},
                                                            {"topic": "t", "partition": 1, "replicas": [3, 1, 2]}]}))
    assert code == 1
    assert err == ("kbroker: Error reassigning partition(s):\n"
                   "t-0: INVALID_REPLICATION_FACTOR (38): the replication factor would change\n")
    assert cluster.replicas[TP("t", 1)] == [3, 1, 2]  # the partitions accepted were reassigned
    assert cluster.calls == [("alter", {TP("t", 0): [1, 2], TP("t", 1): [3, 1, 2]})]


def test_verify_reports_each_partition_and_clears_throttles_when_all_are_done(run, tmp_path):
    cluster = FakeCluster({1: None, 2: None, 3: None, 4: None}, three_brokers(), copy_polls=1000)
    path = write_plan(tmp_path, {"partitions": [{"topic": "t", "partition": 0, "replicas": [4, 2, 3]},
                                                {"topic": "t", "partition": 1, "replicas": [2, 3, 1]},
                                                {"topic": "t", "partition": 2, "replicas": [3, 1, 4]}]})
    cluster.alter({TP("t", 0): [4, 2, 3]}, True)
    cluster.configs[("broker", "1")] = {"leader.replication.throttled.rate": "10"}
    code, out, _ = run(cluster, "cluster", "reassign", "--verify", path)
    assert code == 0
    assert out == ("Status of partition reassignment:\n"
                   "Reassignment of partition t-0 is still in progress.\n"
                   "Reassignment of partition t-1 is completed.\n"
                   "There is no active reassignment of partition t-2, but replica set is 3,1,2 rather than 3,1,4.\n")
    assert cluster.configs and not any(c[0] == "clear" for c in cluster.calls)

    cluster.copy_polls = 0
    cluster.metadata()  # the new replica caught up
    code, out, _ = run(cluster, "cluster", "reassign", "--verify", path, "--preserve-throttles")
    assert "Reassignment of partition t-0 is completed." in out and not any(c[0] == "clear" for c in cluster.calls)
    code, out, _ = run(cluster, "cluster", "reassign", "--verify", path)
    assert out.endswith("Clearing broker-level throttles on brokers 1,2,3,4\nClearing topic-level throttles on topic t\n")
    assert ("clear", ([1, 2, 3, 4], ["t"])) in cluster.calls
    assert cluster.configs == {}


def test_cancel_and_list(run, tmp_path):
    cluster = FakeCluster({1: None, 2: None, 3: None, 4: None}, three_brokers(), copy_polls=1000)
    path = write_plan(tmp_path, {"partitions": [{"topic": "t", "partition": 0, "replicas": [4, 2, 3]},
                                                {"topic": "t", "partition": 1, "replicas": [2, 3, 1]}]})
    assert run(cluster, "cluster", "reassign", "--list") == (0, "No partition reassignments found.\n", "")
    cluster.alter({TP("t", 0): [4, 2, 3], TP("t", 2): [3, 4]}, True)
    assert run(cluster, "cluster", "reassign", "--list")[1] == (
        "Current partition reassignments:\n"
        "t-0: replicas: 4,2,3,1. adding: 4. removing: 1.\n"
        "t-2: replicas: 3,4,1,2. adding: 4. removing: 1,2.\n")
    code, out, _ = run(cluster, "cluster", "reassign", "--cancel", path)
    assert code == 0
    assert out.startswith("Successfully cancelled partition reassignment for: t-0\n")
    assert "Clearing topic-level throttles on topic t" in out
    # Kafka's revert: the replicas less the ones being added, in the order of the reassignment
    assert cluster.replicas[TP("t", 0)] == [2, 3, 1] and TP("t", 0) not in cluster.ongoing
    assert TP("t", 2) in cluster.ongoing  # not in the plan: left alone
    code, out, _ = run(cluster, "cluster", "reassign", "--cancel", path, "--preserve-throttles")
    assert (code, out) == (0, "None of the specified partition reassignments are active.\n")


def test_reassign_on_a_broker_without_the_api(run, tmp_path):
    cluster = FakeCluster({1: None}, {TP("t", 0): [1]}, reassignment_api=False)
    path = write_plan(tmp_path, {"partitions": [{"topic": "t", "partition": 0, "replicas": [1]}]})
    code, _, err = run(cluster, "cluster", "reassign", "--execute", path)
    assert (code, err) == (1, "kbroker: the cluster does not support partition reassignment "
                              "(ListPartitionReassignments)\n")


def test_throttle_lists_include_reassignments_in_progress():
    ongoing = {TP("t", 5): PartitionReassignment([4, 5, 1], [4, 5], [1])}
    plan = {TP("t", 0): [1, 2, 4], TP("t", 5): [4, 6]}
    moves = partition_moves(ongoing, plan, {TP("t", 0): [1, 2, 3]})
    assert throttle_lists(moves) == {"t": ("0:1,0:2,0:3,5:1", "0:4,5:4,5:6")}


# -- rebalance ----------------------------------------------------------------------------------------


def test_rebalance_dry_run_prints_the_plan_and_moves_nothing(run):
    cluster = FakeCluster({1: None, 2: None, 3: None, 4: None}, three_brokers(12))
    code, out, err = run(cluster, "cluster", "rebalance", "--dry-run")
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0] == "Rebalancing over brokers 1,2,3,4: 9 replica moves and 3 preferred leader changes in 9 partitions"
    assert lines[1].split() == ["BROKER", "RACK", "REPLICAS", "PREFERRED", "LEADER", "OF"]
    assert lines[5].split() == ["4", "-", "0", "->", "9", "0", "->", "3"]
    assert lines[6] == "Proposed partition reassignment configuration"
    plan = parse_plan(lines[7])
    assert len(plan) == 9 and all(4 in r for r in plan.values())
    assert cluster.calls == [] and cluster.replicas == three_brokers(12)


def test_rebalance_json_is_only_the_plan(run):
    cluster = FakeCluster({1: None, 2: None, 3: None, 4: None}, three_brokers(12))
    code, out, err = run(cluster, "cluster", "rebalance", "--dry-run", "--json")
    assert (code, err) == (0, "")
    doc = json.loads(out)
    assert doc["version"] == 1 and len(doc["partitions"]) == 9
    assert all(p["log_dirs"] == ["any"] * 3 for p in doc["partitions"])


def test_rebalance_of_a_balanced_cluster_moves_nothing(run):
    cluster = FakeCluster({1: None, 2: None, 3: None}, three_brokers(6))
    assert run(cluster, "cluster", "rebalance") == (
        0, "Replicas and preferred leaders are balanced over brokers 1,2,3: nothing to move\n", "")
    assert run(cluster, "cluster", "rebalance", "--json") == (0, '{"version":1,"partitions":[]}\n', "")
    assert cluster.calls == []


def test_rebalance_dry_run_works_on_brokers_without_reassignment(run):
    cluster = FakeCluster({1: None, 2: None, 3: None, 4: None}, three_brokers(12), reassignment_api=False)
    assert run(cluster, "cluster", "rebalance", "--dry-run")[0] == 0
    code, _, err = run(cluster, "cluster", "rebalance")
    assert (code, err) == (1, "kbroker: the cluster does not support partition reassignment "
                              "(ListPartitionReassignments)\n")


def test_rebalance_executes_the_plan_with_racks(run):
    racks = {1: "a", 2: "b", 3: "c", 4: "a", 5: "b", 6: "c"}
    before = {TP("t", p): [1 + (p + i) % 3 for i in range(3)] for p in range(12)}
    cluster = FakeCluster(racks, before, copy_polls=0)
    code, out, err = run(cluster, "cluster", "rebalance", "--json", "--throttle", "1000000")
    assert code == 0
    plan = parse_plan(out)
    assert "Successfully started partition reassignments" in err and "--verify" in err
    assert cluster.calls[-1] == ("alter", plan)
    cluster.metadata()  # the fake completes the reassignments
    after = cluster.replicas
    assert after == apply_plan(before, plan)
    for b in racks:
        assert sum(b in r for r in after.values()) == 6
        assert sum(r[0] == b for r in after.values()) == 2
    assert all(len({racks[b] for b in r}) == 3 for r in after.values())


# -- decommission -------------------------------------------------------------------------------------


def test_decommission_of_an_unknown_broker(run):
    cluster = FakeCluster({1: None, 2: None, 3: None}, three_brokers())
    assert run(cluster, "cluster", "decommission", "9") == (
        1, "", "kbroker: cannot decommission broker 9: it is not in the cluster (brokers 1,2,3) and holds no replica\n")
    code, _, err = run(cluster, "cluster", "decommission", "3")
    assert (code, err) == (1, "kbroker: cannot decommission broker 3: partition t-0 has 3 replicas but only 2 "
                              "brokers would remain\n")
    assert cluster.calls == []


def test_decommission_moves_leadership_first_then_replicas_and_waits(run):
    cluster = FakeCluster({1: None, 2: None, 3: None, 4: None}, three_brokers(8, brokers=(1, 2, 3, 4)), copy_polls=2)
    led_by_4 = [tp for tp, leader in cluster.leader.items() if leader == 4]
    assert led_by_4
    code, out, err = run(cluster, "cluster", "decommission", "4", "--wait", "--throttle", "1000000")
    assert (code, err) == (0, "")
    assert cluster.held_by(4) == [] and 4 not in cluster.leader.values()
    kinds = [kind for kind, _ in cluster.calls]
    assert kinds == ["alter", "elect", "throttle", "alter", "clear"]
    reorders, elected = cluster.calls[0][1], cluster.calls[1][1]
    assert sorted(reorders) == sorted(elected) == sorted(led_by_4)
    assert all(r[0] != 4 and sorted(r) == sorted(three_brokers(8, brokers=(1, 2, 3, 4))[tp])
               for tp, r in reorders.items())
    moved = cluster.calls[3][1]
    assert sorted(moved) == sorted(tp for tp, r in three_brokers(8, brokers=(1, 2, 3, 4)).items() if 4 in r)
    assert f"Moved the leadership of {len(led_by_4)} partitions off broker 4" in out
    assert "Broker 4: in the replicas of 6 partitions, leads 0; 6 reassignments in progress" in out
    assert out.endswith("Broker 4 holds no replicas and leads no partitions: it can be stopped.\n")
    assert cluster.configs == {}

    # again: nothing left to move, and nothing to wait for
    assert run(cluster, "cluster", "decommission", "4", "--wait") == (
        0, "Broker 4 is in no partition's target replicas: nothing to move\n"
           "Broker 4 holds no replicas and leads no partitions: it can be stopped.\n", "")


def test_decommission_wait_gives_up_at_its_deadline(run):
    cluster = FakeCluster({1: None, 2: None, 3: None, 4: None}, three_brokers(4, 2, brokers=(1, 2, 3, 4)),
                          copy_polls=10**9)
    code, _, err = run(cluster, "cluster", "decommission", "4", "--wait", "--wait-timeout", "0.05")
    assert code == 1
    assert err.startswith("kbroker: broker 4 still holds 2 replicas and leads 0 partitions after 0.05s")
