"""The group service's per-group rebalance tracking (for the rebalance metrics) does not outlive
the group: deleting groups leaves nothing behind, however many come and go."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from e2e_helpers import RawClient

from broker.testing.embedded import BrokerThread
from protocol.api import ApiKey
from protocol.error_codes import ErrorCode as E


@pytest.fixture
def broker() -> Iterator[BrokerThread]:
    with BrokerThread() as bt:
        yield bt


def _join_sync_leave(client: RawClient, group: str) -> None:
    body = {"group_id": group, "session_timeout_ms": 10_000, "rebalance_timeout_ms": 10_000, "member_id": "",
            "group_instance_id": None, "protocol_type": "consumer",
            "protocols": [{"name": "range", "metadata": b"\x00\x01"}]}
    first = client.request(ApiKey.JOIN_GROUP, 5, body)
    assert first.error_code == E.MEMBER_ID_REQUIRED
    joined = client.request(ApiKey.JOIN_GROUP, 5, {**body, "member_id": first.member_id})
    assert joined.error_code == E.NONE and joined.leader == joined.member_id
    synced = client.request(ApiKey.SYNC_GROUP, 3, {
        "group_id": group, "generation_id": joined.generation_id, "member_id": joined.member_id,
        "group_instance_id": None, "assignments": [{"member_id": joined.member_id, "assignment": b"a"}]})
    assert synced.error_code == E.NONE and synced.assignment == b"a"
    left = client.request(ApiKey.LEAVE_GROUP, 3, {
        "group_id": group, "members": [{"member_id": joined.member_id, "group_instance_id": None}]})
    assert left.error_code == E.NONE


def test_deleted_groups_leave_no_rebalance_tracking(broker: BrokerThread) -> None:
    service = broker.core.group_service
    groups = [f"churn-{i}" for i in range(40)]
    with RawClient(broker.host, broker.port) as client:
        for group in groups:
            _join_sync_leave(client, group)
        tracked = broker.call(lambda: set(service._generations))
        assert set(groups) <= tracked
        resp = client.request(ApiKey.DELETE_GROUPS, 2, {"groups_names": groups})
        assert [r.error_code for r in resp.results] == [E.NONE] * len(groups)
        assert broker.call(lambda: set(service._generations) & set(groups)) == set()
        assert broker.call(lambda: {g for c in service.coordinators() for g in c.groups} & set(groups)) == set()
        # a group deleted and then recreated is tracked again
        _join_sync_leave(client, groups[0])
        assert broker.call(lambda: set(service._generations)) == {groups[0]}
