"""Requests naming several groups (DeleteGroups, DescribeGroups, ConsumerGroupDescribe, ShareGroupDescribe,
OffsetFetch v8+) that name none — as they do once the authorizer has taken out every group the principal may
not touch — are answered with an empty list (the group service's answer had a field these responses do not
have, so it could not be encoded)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from e2e_helpers import RawClient

from broker.testing.embedded import BrokerThread
from protocol.api import ApiKey


@pytest.fixture(scope="module")
def broker() -> Iterator[BrokerThread]:
    with BrokerThread() as bt:
        yield bt


@pytest.mark.parametrize(("api", "version", "body", "answers"), [
    (ApiKey.DELETE_GROUPS, 2, {"groups_names": []}, "results"),
    (ApiKey.DESCRIBE_GROUPS, 5, {"groups": [], "include_authorized_operations": False}, "groups"),
    (ApiKey.CONSUMER_GROUP_DESCRIBE, 0, {"group_ids": [], "include_authorized_operations": False}, "groups"),
    (ApiKey.SHARE_GROUP_DESCRIBE, 1, {"group_ids": [], "include_authorized_operations": False}, "groups"),
    (ApiKey.OFFSET_FETCH, 8, {"groups": [], "require_stable": False}, "groups"),
])
def test_a_request_naming_no_group_gets_an_empty_answer(broker: BrokerThread, api: int, version: int,
                                                        body: dict[str, object], answers: str) -> None:
    with RawClient(broker.host, broker.port) as client:
        resp = client.request(api, version, body)
        assert list(resp[answers]) == []
