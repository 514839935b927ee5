"""Pure option parsing and offset planning of the kbroker source (no Spark, no broker)."""

from __future__ import annotations

import itertools

import pytest

from client.types import TopicPartition as TP
from spark_jobs._reader import client_config, consumer_kwargs
from spark_jobs._share import NOT_FOR_SHARE_GROUPS, is_share, share_options
from spark_jobs.options import (
    OffsetRange,
    Subscription,
    offset_spec,
    offsets_from_json,
    offsets_to_json,
    plan_ranges,
    rate_limit,
    validate_batch_specs,
)


def test_subscription_forms():
    assert Subscription.from_options({"subscribe": "a, b"}).topics == ("a", "b")
    assert Subscription.from_options({"subscribepattern": "a.*"}).pattern == "a.*"
    assert Subscription.from_options({"assign": '{"a":[1,0],"b":[2]}'}).assign == (TP("a", 0), TP("a", 1), TP("b", 2))
    with pytest.raises(ValueError, match="exactly one"):
        Subscription.from_options({"subscribe": "a", "assign": '{"a":[0]}'})
    with pytest.raises(ValueError, match="exactly one"):
        Subscription.from_options({})
    with pytest.raises(ValueError, match="assign"):
        Subscription.from_options({"assign": "[1,2"})


def test_offset_specs_and_precedence():
    assert offset_spec({}, "starting", "earliest").kind == "earliest"
    spec = offset_spec({"startingoffsets": '{"t":{"0":5,"1":-2}}'}, "starting", "earliest")
    assert spec.kind == "offsets" and spec.mapping == {TP("t", 0): 5, TP("t", 1): -2}
    spec = offset_spec({"startingoffsets": "earliest", "startingoffsetsbytimestamp": '{"t":{"0":100}}'},
                       "starting", "earliest")
    assert spec.kind == "timestamps"
    spec = offset_spec({"startingtimestamp": "7", "startingoffsetsbytimestamp": '{"t":{"0":100}}'},
                       "starting", "earliest")
    assert (spec.kind, spec.timestamp) == ("timestamp", 7)
    with pytest.raises(ValueError, match="startingOffsets"):
        offset_spec({"startingoffsets": "{nope"}, "starting", "earliest")
    with pytest.raises(ValueError, match="latest"):
        validate_batch_specs(offset_spec({"startingoffsets": "latest"}, "starting", "earliest"),
                             offset_spec({}, "ending", "latest"))
    with pytest.raises(ValueError, match="earliest"):
        validate_batch_specs(offset_spec({}, "starting", "earliest"),
                             offset_spec({"endingoffsets": '{"t":{"0":-2}}'}, "ending", "latest"))


def test_offsets_json_round_trip():
    offs = {TP("b", 1): 7, TP("a", 0): 3, TP("a", 10): 1}
    data = offsets_to_json(offs)
    assert data == {"a": {"0": 3, "10": 1}, "b": {"1": 7}}
    assert offsets_from_json(data) == offs


def test_plan_ranges_one_per_partition_and_min_partitions():
    start = {TP("t", 0): 0, TP("t", 1): 10, TP("t", 2): 5}
    end = {TP("t", 0): 100, TP("t", 1): 10, TP("t", 2): 25}
    assert plan_ranges(start, end) == [OffsetRange("t", 0, 0, 100), OffsetRange("t", 2, 5, 25)]
    split = plan_ranges(start, end, min_partitions=6)
    assert len(split) == 6
    assert sum(r.size for r in split) == 120
    assert [r for r in split if r.partition == 2] == [OffsetRange("t", 2, 5, 25)]
    covered = sorted((r.start, r.end) for r in split if r.partition == 0)
    assert covered[0][0] == 0 and covered[-1][1] == 100
    assert all(a[1] == b[0] for a, b in itertools.pairwise(covered))
    capped = plan_ranges(start, end, max_records_per_partition=30)
    assert [r.size for r in capped] == [25, 25, 25, 25, 20]


def test_rate_limit_is_proportional_and_never_overshoots():
    start = {TP("t", 0): 0, TP("t", 1): 0}
    latest = {TP("t", 0): 900, TP("t", 1): 100, TP("t", 2): 0}
    assert rate_limit(start, latest, 100) == {TP("t", 0): 90, TP("t", 1): 10, TP("t", 2): 0}
    assert rate_limit(start, latest, 5000) == latest
    tiny = rate_limit(start, {TP("t", 0): 1000, TP("t", 1): 1}, 10)
    assert tiny[TP("t", 1)] == 1  # a fraction of a row rounds up


def test_kafka_options_map_to_client_config():
    cfg = client_config({"kafka.bootstrap.servers": "h:1", "kafka.request.timeout.ms": "5000",
                         "kafka.check.crcs": "false", "kafka.group.id": "ignored", "kafka.bogus.x": "1",
                         "subscribe": "t"})
    assert cfg == {"bootstrap_servers": "h:1", "request_timeout_ms": 5000, "check_crcs": False}
    with pytest.raises(ValueError, match="startingOffsets"):
        client_config({"kafka.bootstrap.servers": "h:1", "kafka.auto.offset.reset": "latest"})
    with pytest.raises(ValueError, match="bootstrap"):
        client_config({})
    ck = consumer_kwargs({"kafka.bootstrap.servers": "h:1"}, executor=True)
    assert ck["auto_offset_reset"] == "none" and ck["group_id"] is None
    prod = client_config({"kafka.bootstrap.servers": "h:1", "kafka.acks": "all", "kafka.linger.ms": "20"}, "producer")
    assert prod == {"bootstrap_servers": "h:1", "acks": "all", "linger_ms": 20}


def test_share_group_options():
    opts = share_options({"sharegroup": "g", "subscribe": "a, b", "kafka.bootstrap.servers": "x:1",
                          "includeheaders": "true", "maxoffsetspertrigger": "10"})
    assert (opts.group, opts.topics, opts.poll_timeout_ms) == ("g", ("a", "b"), 1000)
    assert share_options({"sharegroup": "g", "subscribe": "a", "sharegroup.polltimeoutms": "0"}).poll_timeout_ms == 0
    assert is_share({"sharegroup": "g"}) and not is_share({"subscribe": "a"})
    with pytest.raises(ValueError, match="needs 'subscribe'"):
        share_options({"sharegroup": "g"})
    with pytest.raises(ValueError, match="must name a share group"):
        share_options({"sharegroup": " ", "subscribe": "a"})
    with pytest.raises(ValueError, match="pollTimeoutMs"):
        share_options({"sharegroup": "g", "subscribe": "a", "sharegroup.polltimeoutms": "-5"})


@pytest.mark.parametrize("name", sorted(NOT_FOR_SHARE_GROUPS))
def test_options_a_share_group_decides_itself_are_refused(name):
    with pytest.raises(ValueError, match=f"option '{name}' can't be used with 'shareGroup': .+"):
        share_options({"sharegroup": "g", "subscribe": "a", name: "1"})
