"""Loading ``__consumer_offsets`` at startup, with ``python -m broker`` as a real process.

* A record that does not decode (planted straight into the log, since clients cannot produce to
  the topic) is logged, counted in ``kbroker_offsets_load_errors_total`` and skipped: the broker
  still starts and every other group's offsets load.
* Once ``__consumer_offsets`` exists its real partition count governs placement and loading;
  restarting with another ``offsets.topic.num.partitions`` loses nothing.
"""

from __future__ import annotations

import urllib.request
from pathlib import Path

import pytest
from e2e_helpers import BrokerProcess, RawClient, free_port

from broker.cluster.internal_topics import OFFSETS_TOPIC
from broker.coordinator.group.partitioning import coordinator_partition
from broker.coordinator.group.records import encode_offset_commit_key, encode_offset_commit_value
from broker.log.manager import LogManager
from protocol.api import ApiKey
from protocol.records import encode_batch

pytestmark = pytest.mark.slow


def commit(client: RawClient, group: str, offsets: dict[tuple[str, int], int]) -> None:
    """A standalone (generation -1) OffsetCommit v8."""
    topics: dict[str, list[dict[str, object]]] = {}
    for (topic, partition), offset in offsets.items():
        topics.setdefault(topic, []).append({"partition_index": partition, "committed_offset": offset,
                                             "committed_leader_epoch": -1, "committed_metadata": f"m{offset}"})
    resp = client.request(ApiKey.OFFSET_COMMIT, 8, {
        "group_id": group, "generation_id_or_member_epoch": -1, "member_id": "", "group_instance_id": None,
        "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()]})
    assert [p.error_code for t in resp.topics for p in t.partitions] == [0] * len(offsets), resp


def committed(client: RawClient, *groups: str) -> dict[str, dict[tuple[str, int], int]]:
    """Every committed offset of ``groups`` (OffsetFetch v8, all topics)."""
    resp = client.request(ApiKey.OFFSET_FETCH, 8, {
        "groups": [{"group_id": g, "topics": None} for g in groups], "require_stable": False})
    out: dict[str, dict[tuple[str, int], int]] = {}
    for g in resp.groups:
        assert g.error_code == 0, g
        out[g.group_id] = {(t.name, p.partition_index): p.committed_offset for t in g.topics for p in t.partitions}
    return out


def offsets_topic_ends(client: RawClient, partitions: int) -> list[int]:
    return [client.list_offset(OFFSETS_TOPIC, p, -1).offset for p in range(partitions)]


def load_errors_metric(port: int) -> float:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as resp:
        text = resp.read().decode()
    for line in text.splitlines():
        if line.startswith("kbroker_offsets_load_errors_total "):
            return float(line.split()[1])
    raise AssertionError("kbroker_offsets_load_errors_total is not exported")


def test_unreadable_offsets_records_are_skipped_and_counted(tmp_path: Path) -> None:
    metrics_port = free_port()
    bp = BrokerProcess(tmp_path / "data", extra_args=["--metrics-port", str(metrics_port),
                                                      "--set", "offsets.topic.num.partitions=5"])
    groups = {f"group-{i}": {("t", 0): 10 + i, ("t", 1): 20 + i} for i in range(6)}
    with bp:
        with bp.raw() as client:
            assert client.create_topic("t", 2) == 0
            for group, offsets in groups.items():
                commit(client, group, offsets)
        assert load_errors_metric(metrics_port) == 0
    # plant bad records after the good ones, in the partition of group-0, and one good record behind them
    victim = coordinator_partition("group-0", 5)
    late = next(f"late-{i}" for i in range(100) if coordinator_partition(f"late-{i}", 5) == victim)
    with LogManager(bp.data_dir) as logs:
        plog = logs.get_log(OFFSETS_TOPIC, victim)
        first_bad = plog.log_end_offset
        plog.append(bytearray(encode_batch([
            (b"\x00", b"\x00\x03", [], 1),                                     # key shorter than its type
            (encode_offset_commit_key("group-0", "t", 0), b"\x00\x03garbage", [], 1),   # value that does not decode
            (None, b"no key", [], 1),                                          # a record without a key
            (encode_offset_commit_key(late, "t", 1), encode_offset_commit_value(77, -1, "", 1), [], 1),
        ])))
        plog.append(bytearray(encode_batch([(b"\x7f\x7f" + b"\xff" * 8, b"\x00\x00", [], 1)])))  # unknown key type
    with bp:  # starts: the bad records no longer stop the broker
        with bp.raw() as client:
            assert committed(client, *groups, late) == {**groups, late: {("t", 1): 77}}
        assert load_errors_metric(metrics_port) == 3
    log_text = bp.log_path.read_text()
    for offset in range(first_bad, first_bad + 3):
        assert f"{OFFSETS_TOPIC}-{victim} offset {offset}" in log_text, log_text[-3000:]


def test_offsets_survive_a_change_of_offsets_topic_num_partitions(tmp_path: Path) -> None:
    bp = BrokerProcess(tmp_path / "data", extra_args=["--set", "offsets.topic.num.partitions=10"])
    groups = {f"g{i}": {("t", i % 3): 100 + i} for i in range(25)}
    assert len({coordinator_partition(g, 10) for g in groups}) > 5   # spread over the 10 partitions
    with bp, bp.raw() as client:
        assert client.create_topic("t", 3) == 0
        for group, offsets in groups.items():
            commit(client, group, offsets)
    for count in (50, 3):
        bp.extra_args = ["--set", f"offsets.topic.num.partitions={count}"]
        with bp, bp.raw() as client:
            assert committed(client, *groups) == groups, count
            # new commits are placed over the topic's real 10 partitions, not over `count`
            group = next(g for g in (f"new-{count}-{i}" for i in range(100))
                         if coordinator_partition(g, 10) != coordinator_partition(g, count))
            before = offsets_topic_ends(client, 10)
            commit(client, group, {("t", 0): count})
            after = offsets_topic_ends(client, 10)
            assert [p for p in range(10) if after[p] != before[p]] == [coordinator_partition(group, 10)]
            groups[group] = {("t", 0): count}
    with bp, bp.raw() as client:
        assert committed(client, *groups) == groups
        md = client.request(ApiKey.METADATA, 12, {"topics": [{"name": OFFSETS_TOPIC, "topic_id": None}],
                                                  "allow_auto_topic_creation": False,
                                                  "include_topic_authorized_operations": False})
        assert len(md.topics[0].partitions) == 10
