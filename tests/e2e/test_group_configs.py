"""Group configs (KIP-848): IncrementalAlterConfigs / DescribeConfigs on GROUP resources with
confluent-kafka's AdminClient against ``python -m broker``; the overrides reach the group's members
(the heartbeat interval a ConsumerGroupHeartbeat answers) and survive kill -9."""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from e2e_helpers import BrokerProcess
from test_dynamic_configs import describe, incremental

from protocol.api import ApiKey
from protocol.error_codes import ErrorCode as E

pytestmark = pytest.mark.slow


@pytest.fixture
def broker(tmp_path: Path) -> Any:
    bp = BrokerProcess(tmp_path / "data")
    bp.start()
    yield bp
    if bp.alive():
        assert bp.stop() == 0, bp.log_tail()


def values(bootstrap: str, group: str, prefix: str = "consumer.") -> dict[str, tuple[str, int]]:
    """The group's configs whose names start with ``prefix`` (consumer groups' by default)."""
    return {k: (e.value, e.source) for k, e in describe(bootstrap, "GROUP", group).items() if k.startswith(prefix)}


def heartbeat_interval(broker: BrokerProcess, group: str) -> int:
    """The interval the coordinator tells a new member of ``group`` (ConsumerGroupHeartbeat, epoch 0)."""
    with broker.raw() as c:
        deadline = time.monotonic() + 30
        while True:
            resp = c.request(ApiKey.CONSUMER_GROUP_HEARTBEAT, 0, {
                "group_id": group, "member_id": str(uuid.uuid4()), "member_epoch": 0, "instance_id": None,
                "rack_id": None, "rebalance_timeout_ms": 30000, "subscribed_topic_names": ["t"],
                "server_assignor": None, "topic_partitions": []})
            if resp.error_code not in (E.COORDINATOR_LOAD_IN_PROGRESS, E.COORDINATOR_NOT_AVAILABLE) \
                    or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        assert resp.error_code == E.NONE, resp
        return resp.heartbeat_interval_ms


def test_group_configs_apply_to_members_and_survive_sigkill(broker: BrokerProcess) -> None:
    bs = broker.bootstrap_servers
    with broker.raw() as c:
        c.create_topic("t")
    # any group id has its configs: the broker's defaults until set (source DEFAULT_CONFIG = 5)
    assert values(bs, "g1") == {"consumer.session.timeout.ms": ("45000", 5),
                                "consumer.heartbeat.interval.ms": ("5000", 5)}
    assert values(bs, "g1", "share.") == {  # share groups' (KIP-932), described for any group too
        "share.session.timeout.ms": ("45000", 5), "share.heartbeat.interval.ms": ("5000", 5),
        "share.record.lock.duration.ms": ("30000", 5), "share.delivery.count.limit": ("5", 5),
        "share.partition.max.record.locks": ("2000", 5), "share.auto.offset.reset": ("latest", 5),
        "share.isolation.level": ("read_uncommitted", 5)}
    assert heartbeat_interval(broker, "g1") == 5000
    incremental(bs, "GROUP", "g1", ("SET", "consumer.session.timeout.ms", "50000"),
                ("SET", "consumer.heartbeat.interval.ms", "6000"))
    assert values(bs, "g1") == {"consumer.session.timeout.ms": ("50000", 8),  # GROUP_CONFIG
                                "consumer.heartbeat.interval.ms": ("6000", 8)}
    assert values(bs, "g2")["consumer.heartbeat.interval.ms"] == ("5000", 5)
    assert heartbeat_interval(broker, "g1") == 6000
    assert heartbeat_interval(broker, "g2") == 5000

    broker.kill9()
    broker.start()
    assert values(broker.bootstrap_servers, "g1")["consumer.heartbeat.interval.ms"] == ("6000", 8)
    assert heartbeat_interval(broker, "g1") == 6000
    incremental(broker.bootstrap_servers, "GROUP", "g1", ("DELETE", "consumer.heartbeat.interval.ms", ""))
    assert values(broker.bootstrap_servers, "g1") == {"consumer.session.timeout.ms": ("50000", 8),
                                                      "consumer.heartbeat.interval.ms": ("5000", 5)}


@pytest.mark.parametrize("ops", [
    [("SET", "consumer.session.timeout.ms", "1000")],         # below group.consumer.min.session.timeout.ms
    [("SET", "consumer.session.timeout.ms", "600000")],       # above group.consumer.max.session.timeout.ms
    [("SET", "consumer.heartbeat.interval.ms", "soon")],
    [("SET", "no.such.group.config", "1")],
    [("APPEND", "consumer.heartbeat.interval.ms", "6000")],
])
def test_refused_group_configs_get_invalid_config(broker: BrokerProcess, ops: list) -> None:
    from confluent_kafka import KafkaException

    with pytest.raises(KafkaException) as ei:
        incremental(broker.bootstrap_servers, "GROUP", "g", *ops)
    assert ei.value.args[0].code() == E.INVALID_CONFIG
    assert values(broker.bootstrap_servers, "g")["consumer.session.timeout.ms"] == ("45000", 5)
