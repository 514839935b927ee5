"""Share groups (KIP-932) over raw requests against ``python -m broker``, for what clients hide: Kafka's
error codes for bad input (unknown members, stale epochs, share-session epochs and the session limit,
acknowledgements of records never delivered or delivered to another member, malformed batches), RENEW
(KIP-1222), the record_limit acquire mode (KIP-1206), and the share admin APIs (Describe/Alter/Delete
share-group offsets, ListGroups' type filter, DeleteGroups).  The broker serves on after each."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from e2e_helpers import BrokerProcess, RawClient, free_port
from share_helpers import (
    RawMember,
    acquired,
    create_topic,
    fetched_values,
    partition_entry,
    produce,
    set_group_configs,
    share_args,
    topic_id,
    unique,
    wait_until,
)

from protocol.api import ApiKey
from protocol.error_codes import ErrorCode as E

pytestmark = pytest.mark.slow

ACCEPT, RELEASE, REJECT, RENEW = 1, 2, 3, 4


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    bp = BrokerProcess(tmp_path_factory.mktemp("share-raw") / "data",
                       extra_args=[*share_args(), "--metrics-port", str(free_port())])
    bp.start()
    yield bp
    assert bp.alive(), f"broker died during the module:\n{bp.log_tail()}"
    assert bp.stop() == 0, bp.log_tail()


@pytest.fixture
def client(broker: BrokerProcess) -> Iterator[RawClient]:
    with broker.raw() as c:
        yield c
    with broker.raw() as c:  # the broker serves on
        assert c.request(ApiKey.API_VERSIONS, 3, {"client_software_name": "t", "client_software_version": "1"}
                         ).error_code == E.NONE


def setup(broker: BrokerProcess, client: RawClient, records: int = 10, **configs: str) -> tuple[str, str, object]:
    group, topic = unique("g"), unique("t")
    create_topic(broker.bootstrap_servers, topic)
    set_group_configs(broker.bootstrap_servers, group, share_auto_offset_reset="earliest", **configs)
    if records:
        produce(broker.bootstrap_servers, topic, [f"v{i}" for i in range(records)], batch=records)
    return group, topic, topic_id(client, topic)


def test_api_versions_and_the_share_version_feature(client: RawClient) -> None:
    resp = client.request(ApiKey.API_VERSIONS, 3, {"client_software_name": "t", "client_software_version": "1"})
    served = {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}
    assert served[ApiKey.SHARE_GROUP_HEARTBEAT] == (1, 1) and served[ApiKey.SHARE_FETCH] == (1, 2)
    assert served[ApiKey.SHARE_ACKNOWLEDGE] == (1, 2) and served[ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS] == (0, 1)
    assert {(f.name, f.max_version_level) for f in resp.finalized_features} == {("share.version", 1)}


def test_heartbeat_errors(broker: BrokerProcess, client: RawClient) -> None:
    group, topic, tid = setup(broker, client, records=0)
    m = RawMember(client, group, tid)
    assert m.heartbeat(None, epoch=3).error_code == E.GROUP_ID_NOT_FOUND  # no such group
    assert m.heartbeat(None, epoch=0).error_code == E.INVALID_REQUEST  # joining without a subscription
    assert RawMember(client, group, tid, member_id="x" * 37).heartbeat([topic]).error_code == E.INVALID_REQUEST
    m.join(topic)
    assert RawMember(client, group, tid).heartbeat(None, epoch=5).error_code == E.UNKNOWN_MEMBER_ID
    assert m.heartbeat(None, epoch=m.epoch + 1).error_code == E.FENCED_MEMBER_EPOCH
    resp = m.heartbeat(None)
    assert resp.error_code == E.NONE and resp.member_epoch == m.epoch
    # a consumer group's id is not a share group's
    consumer_group = unique("cg")
    client.request(ApiKey.CONSUMER_GROUP_HEARTBEAT, 0, {
        "group_id": consumer_group, "member_id": "c", "member_epoch": 0, "instance_id": None, "rack_id": None,
        "rebalance_timeout_ms": 30000, "subscribed_topic_names": [topic], "server_assignor": None,
        "topic_partitions": []})
    assert RawMember(client, consumer_group, tid).heartbeat([topic]).error_code == E.GROUP_ID_NOT_FOUND


def test_share_session_epochs(broker: BrokerProcess, client: RawClient) -> None:
    group, topic, tid = setup(broker, client)
    m = RawMember(client, group, tid)
    m.join(topic)
    assert m.fetch(epoch=3).error_code == E.SHARE_SESSION_NOT_FOUND
    assert m.acknowledge([(0, 0, [ACCEPT])], epoch=0).error_code == E.INVALID_SHARE_SESSION_EPOCH
    assert m.fetch(epoch=0, acks=[(0, 0, [ACCEPT])]).error_code == E.INVALID_REQUEST
    resp = m.fetch(epoch=0)
    assert resp.error_code == E.NONE and acquired(resp) == [(0, 9, 1)]
    assert m.fetch(epoch=5).error_code == E.INVALID_SHARE_SESSION_EPOCH
    assert fetched_values(resp) == {i: f"v{i}" for i in range(10)}
    resp = m.fetch(acks=[(0, 9, [ACCEPT])], max_wait_ms=0)
    assert resp.error_code == E.NONE and partition_entry(resp).acknowledge_error_code == E.NONE
    assert m.fetch(epoch=-1, max_wait_ms=0).error_code == E.NONE  # closes the session
    assert m.fetch(epoch=1).error_code == E.SHARE_SESSION_NOT_FOUND


def test_acknowledgements_of_records_not_held(broker: BrokerProcess, client: RawClient) -> None:
    group, topic, tid = setup(broker, client, records=8)
    a, b = RawMember(client, group, tid), RawMember(client, group, tid)
    a.join(topic)
    b.join(topic)
    assert acquired(a.fetch(epoch=0, mode=1, max_records=4)) == [(0, 3, 1)]
    assert acquired(b.fetch(epoch=0, mode=1, max_records=4)) == [(4, 7, 1)]
    # a's records acknowledged by b; offsets past what was ever delivered; malformed batches; RENEW in v1
    out_of_order = b.fetch(acks=[(4, 5, [ACCEPT]), (2, 2, [ACCEPT])], max_wait_ms=0)
    assert partition_entry(out_of_order).acknowledge_error_code == E.INVALID_REQUEST  # nothing of it applied
    assert partition_entry(b.acknowledge([(0, 1, [ACCEPT])])).error_code == E.INVALID_RECORD_STATE
    assert partition_entry(b.acknowledge([(8, 9, [ACCEPT])])).error_code == E.INVALID_REQUEST
    assert partition_entry(b.acknowledge([(5, 4, [ACCEPT])])).error_code == E.INVALID_REQUEST
    assert partition_entry(b.acknowledge([(4, 5, [ACCEPT, ACCEPT, ACCEPT])])).error_code == E.INVALID_REQUEST
    assert partition_entry(b.acknowledge([(4, 5, [RENEW])], version=1)).error_code == E.INVALID_REQUEST
    # a releases one record: it is available again, not b's to acknowledge
    assert partition_entry(a.acknowledge([(3, 3, [RELEASE])])).error_code == E.NONE
    assert partition_entry(b.acknowledge([(3, 3, [ACCEPT])])).error_code == E.INVALID_RECORD_STATE
    # nothing was lost: the owners acknowledge their records
    assert partition_entry(a.acknowledge([(0, 2, [ACCEPT])])).error_code == E.NONE
    assert partition_entry(b.acknowledge([(4, 7, [ACCEPT])])).error_code == E.NONE
    assert acquired(b.fetch(max_records=10)) == [(3, 3, 2)]


def test_record_limit_and_batch_optimized_modes(broker: BrokerProcess, client: RawClient) -> None:
    group, topic, tid = setup(broker, client)
    a, b = RawMember(client, group, tid), RawMember(client, group, tid)
    a.join(topic)
    b.join(topic)
    resp = a.fetch(epoch=0, mode=1, max_records=3)  # record_limit: exactly 3, the rest of the batch stays
    assert acquired(resp) == [(0, 2, 1)] and sorted(fetched_values(resp)) == [0, 1, 2]
    assert acquired(b.fetch(epoch=0, mode=0, max_records=3)) == [(3, 9, 1)]  # batch_optimized: the whole rest
    assert acquired(a.fetch(epoch=1, version=1, max_records=3, max_wait_ms=0)) == []


def test_renew_keeps_a_slow_record(broker: BrokerProcess, client: RawClient) -> None:
    # the lock is several times one renewal round (an acknowledgement and a 250 ms fetch): a busy machine
    # pausing the test for a moment does not let it run out between two renewals
    group, topic, tid = setup(broker, client, records=3, share_record_lock_duration_ms="4000")
    slow, other = RawMember(client, group, tid), RawMember(client, group, tid)
    slow.join(topic)
    other.join(topic)
    assert acquired(slow.fetch(epoch=0)) == [(0, 2, 1)]
    assert other.fetch(epoch=0, max_wait_ms=0).error_code == E.NONE
    renewal = slow.fetch(renew=True, acks=[(0, 2, [RENEW])], max_records=0, max_wait_ms=0)
    assert renewal.error_code == E.NONE and partition_entry(renewal).acknowledge_error_code == E.NONE
    assert renewal.acquisition_lock_timeout_ms == 4000
    assert slow.fetch(renew=True, acks=[(0, 2, [RENEW])], max_records=5).error_code == E.INVALID_REQUEST
    deadline = time.monotonic() + 9  # two and a quarter lock durations, renewed every quarter second
    while time.monotonic() < deadline:
        for member in (slow, other):  # both stay members: longer than a session (6 s) without a heartbeat
            assert member.heartbeat(None).error_code == E.NONE
        resp = slow.acknowledge([(0, 2, [RENEW])], renew=True)
        assert partition_entry(resp).error_code == E.NONE and resp.acquisition_lock_timeout_ms == 4000
        assert acquired(other.fetch(max_wait_ms=250)) == []
    assert partition_entry(slow.acknowledge([(0, 2, [ACCEPT])])).error_code == E.NONE
    produce(broker.bootstrap_servers, topic, ["later"])
    resp = wait_until(lambda: (r := other.fetch(max_wait_ms=1000)) and acquired(r) and r, what="the new record")
    assert acquired(resp) == [(3, 3, 1)]


def metric(broker: BrokerProcess, name: str, **labels: str) -> float:
    """A sample of the broker's /metrics (0 when absent)."""
    import urllib.request

    port = int(broker.extra_args[broker.extra_args.index("--metrics-port") + 1])
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as resp:
        text = resp.read().decode()
    for line in text.splitlines():
        sample, _, value = line.rpartition(" ")
        found, _, rest = sample.partition("{")
        if found == name and dict(re.findall(r'(\w+)="([^"]*)"', rest)) == labels:
            return float(value)
    return 0.0


def test_metrics(broker: BrokerProcess, client: RawClient) -> None:
    group, topic, tid = setup(broker, client, records=6)
    m = RawMember(client, group, tid)
    m.join(topic)
    accepted = metric(broker, "kbroker_share_records_total", action="accept")
    assert acquired(m.fetch(epoch=0)) == [(0, 5, 1)]
    m.acknowledge([(0, 3, [ACCEPT]), (4, 5, [RELEASE])])
    assert metric(broker, "kbroker_share_records_total", action="accept") == accepted + 4
    assert metric(broker, "kbroker_share_groups", state="Stable") >= 1
    assert metric(broker, "kbroker_share_group_members", group=group) == 1
    assert metric(broker, "kbroker_share_partition_in_flight_records", group=group, topic=topic, partition="0") == 2
    assert metric(broker, "kbroker_share_partition_lag", group=group, topic=topic, partition="0") == 2
    assert metric(broker, "kbroker_share_sessions") >= 1


def describe_offsets(client: RawClient, group: str, version: int = 1) -> dict[int, tuple[int, int]]:
    resp = client.request(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, version, {"groups": [{"group_id": group,
                                                                                     "topics": None}]})
    [g] = resp.groups
    assert g.error_code == E.NONE, g
    return {p.partition_index: (p.start_offset, p.lag) for t in g.topics for p in t.partitions}


def test_offsets_admin_and_group_lifecycle(broker: BrokerProcess, client: RawClient) -> None:
    group, topic, tid = setup(broker, client)
    m = RawMember(client, group, tid)
    m.join(topic)
    m.fetch(epoch=0, mode=1, max_records=4)
    assert partition_entry(m.acknowledge([(0, 3, [ACCEPT])])).error_code == E.NONE
    assert describe_offsets(client, group) == {0: (4, 6)}
    listed = client.request(ApiKey.LIST_GROUPS, 5, {"states_filter": [], "types_filter": ["share"]}).groups
    assert (group, "Stable", "share") in {(g.group_id, g.group_state, g.group_type) for g in listed}
    alter = {"group_id": group, "topics": [{"topic_name": topic, "partitions": [
        {"partition_index": 0, "start_offset": 1}]}]}
    assert client.request(ApiKey.ALTER_SHARE_GROUP_OFFSETS, 0, alter).error_code == E.NON_EMPTY_GROUP
    assert client.request(ApiKey.DELETE_GROUPS, 2, {"groups_names": [group]}).results[0].error_code == \
        E.NON_EMPTY_GROUP
    assert m.fetch(epoch=-1, max_wait_ms=0).error_code == E.NONE
    assert m.heartbeat(None, epoch=-1).error_code == E.NONE
    resp = client.request(ApiKey.ALTER_SHARE_GROUP_OFFSETS, 0, alter)
    assert resp.error_code == E.NONE and resp.responses[0].partitions[0].error_code == E.NONE
    assert describe_offsets(client, group)[0][0] == 1
    bad = client.request(ApiKey.ALTER_SHARE_GROUP_OFFSETS, 0, {"group_id": group, "topics": [
        {"topic_name": topic, "partitions": [{"partition_index": 7, "start_offset": 0}]}]})
    assert bad.responses[0].partitions[0].error_code == E.UNKNOWN_TOPIC_OR_PARTITION
    # the reset is what a new member gets: from offset 1 again, delivered once more
    again = RawMember(client, group, tid)
    again.join(topic)
    assert acquired(again.fetch(epoch=0, max_records=20))[0][:2] == (1, 9)
    again.fetch(epoch=-1, max_wait_ms=0)
    again.heartbeat(None, epoch=-1)
    deleted = client.request(ApiKey.DELETE_SHARE_GROUP_OFFSETS, 0, {"group_id": group, "topics": [
        {"topic_name": topic}, {"topic_name": "no-such-topic"}]})
    assert [(r.topic_name, r.error_code) for r in deleted.responses] == [
        (topic, E.NONE), ("no-such-topic", E.UNKNOWN_TOPIC_OR_PARTITION)]
    assert describe_offsets(client, group) == {}
    assert client.request(ApiKey.DELETE_GROUPS, 2, {"groups_names": [group]}).results[0].error_code == E.NONE
    described = client.request(ApiKey.SHARE_GROUP_DESCRIBE, 1, {"group_ids": [group],
                                                                "include_authorized_operations": False})
    assert described.groups[0].error_code == E.GROUP_ID_NOT_FOUND


def test_the_share_session_limit(tmp_path: Path) -> None:
    bp = BrokerProcess(tmp_path / "data", extra_args=share_args(**{"group.share.max.size": "1",
                                                                   "group.share.max.share.sessions": "1"}))
    bp.start()
    try:
        with bp.raw() as client:
            group, topic, tid = setup(bp, client)
            first, second = RawMember(client, group, tid), RawMember(client, group, tid)
            first.join(topic)
            assert first.fetch(epoch=0).error_code == E.NONE
            assert second.heartbeat([topic]).error_code == E.GROUP_MAX_SIZE_REACHED
            assert second.fetch(epoch=0, max_wait_ms=100).error_code == E.SHARE_SESSION_LIMIT_REACHED
            assert first.fetch(epoch=-1, max_wait_ms=0).error_code == E.NONE
            assert second.fetch(epoch=0, max_wait_ms=0).error_code == E.NONE
        assert bp.alive()
    finally:
        bp.stop()
