"""/metrics under real traffic: a BrokerThread with ``metrics_port``, real clients, the page parsed
with ``prometheus_client.parser``."""

from __future__ import annotations

import asyncio
import resource
import time

import pytest
from ops_helpers import free_port, scrape, wait_for

from broker import BrokerThread
from broker.observability.metrics import MAX_LABELLED_TOPICS, OTHER
from client import Admin, KafkaError, TopicPartition
from client.sync import SyncAdmin, SyncConsumer, SyncProducer
from protocol.api import ApiKey
from protocol.records import COMPILED, encode_batch


def _join(bs: str, topic: str, group: str, **extra: object) -> SyncConsumer:
    consumer = SyncConsumer(topic, bootstrap_servers=bs, group_id=group, auto_offset_reset="earliest",
                            enable_auto_commit=False, **extra)
    wait_for(lambda: consumer.getmany(timeout_ms=200) is not None and consumer.assignment(), 60,
             what=f"{group} assignment")
    return consumer


def test_every_documented_family_is_exported(metrics_broker):
    broker, port = metrics_broker
    with SyncAdmin(bootstrap_servers=broker.bootstrap_servers) as admin:
        admin.create_topics({"fam": 1})
    page = scrape(port)
    names = {s.name for s in page.samples}
    for name in ("kbroker_requests_total", "kbroker_request_latency_seconds_bucket", "kbroker_active_connections",
                 "kbroker_waiting_fetches", "kbroker_queued_response_bytes", "kbroker_group_rebalances_total",
                 "kbroker_group_rebalance_duration_seconds_count", "kbroker_log_end_offset", "kbroker_log_size_bytes",
                 "kbroker_log_start_offset", "kbroker_groups", "kbroker_partitions", "kbroker_log_dir_size_bytes"):
        assert name in names, f"{name} missing from /metrics"
    versions = {labels["version"] for labels, _ in page.series("kbroker_requests_total")
                if labels["api"] == "CreateTopics"}
    assert versions and all(v.isdigit() for v in versions)
    (version,) = versions
    assert page.value("kbroker_request_latency_seconds_count", api="CreateTopics", version=version) >= 1
    # which record codec this broker runs: one series, the one protocol.records uses
    assert page.series("kbroker_record_codec_info") == [({"codec": "compiled" if COMPILED else "python"}, 1.0)]
    # every name follows the exporter conventions
    for s in page.samples:
        assert s.name.startswith("kbroker_"), s.name


def test_produce_moves_bytes_in_messages_and_log_gauges(metrics_broker):
    broker, port = metrics_broker
    bs = broker.bootstrap_servers
    with SyncAdmin(bootstrap_servers=bs) as admin:
        admin.create_topics({"orders": 2})
    with SyncProducer(bootstrap_servers=bs, linger_ms=0) as producer:
        for i in range(25):
            producer.send("orders", value=b"v" * 100, key=b"k%d" % i, partition=i % 2)
    page = scrape(port)
    bytes_in = page.value("kbroker_bytes_in_total", topic="orders")
    assert page.value("kbroker_messages_in_total", topic="orders") == 25
    leo = {int(labels["partition"]): v for labels, v in page.series("kbroker_log_end_offset")
           if labels["topic"] == "orders"}
    assert leo == {0: 13, 1: 12}
    size = sum(v for labels, v in page.series("kbroker_log_size_bytes") if labels["topic"] == "orders")
    assert bytes_in == size > 25 * 100
    assert page.value("kbroker_requests_total", api="Produce", version=_only_version(page, "Produce")) >= 25

    # fetching moves bytes-out by exactly the record bytes sent: the consumer reads every batch
    # once, through fetches that wait for more than there is (min_bytes), so each is parked with
    # partial data first and answered by a second read when its max_wait_ms expires
    with SyncConsumer(bootstrap_servers=bs, auto_offset_reset="earliest", fetch_min_bytes=1 << 20,
                      fetch_max_wait_ms=100) as consumer:
        consumer.assign([TopicPartition("orders", 0), TopicPartition("orders", 1)])
        got = 0
        deadline = time.monotonic() + 60  # a liveness bound, not a timing assertion
        while got < 25 and time.monotonic() < deadline:
            got += sum(len(r) for r in consumer.getmany(timeout_ms=500).values())
        assert got == 25
    assert scrape(port).value("kbroker_bytes_out_total", topic="orders") == bytes_in


def _only_version(page, api: str) -> str:
    versions = {labels["version"] for labels, _ in page.series("kbroker_requests_total") if labels["api"] == api}
    assert len(versions) == 1, versions
    return versions.pop()


def test_errors_are_counted_by_api_and_code(metrics_broker):
    broker, port = metrics_broker
    with SyncAdmin(bootstrap_servers=broker.bootstrap_servers) as admin:
        admin.create_topics({"dup": 1})
        for _ in range(2):
            with pytest.raises(KafkaError):
                admin.create_topics({"dup": 1})
    page = scrape(port)
    assert page.value("kbroker_errors_total", api="CreateTopics", error="TOPIC_ALREADY_EXISTS") == 2

    broker.faults.inject("Metadata", error_code=6, times=1)  # an injected error is counted too

    async def metadata() -> None:
        async with Admin(bootstrap_servers=broker.bootstrap_servers) as admin:
            await admin.net.send_any(ApiKey.METADATA, {"topics": [{"name": "dup"}],
                                                        "allow_auto_topic_creation": False})

    asyncio.run(metadata())
    assert scrape(port).value("kbroker_errors_total", api="Metadata", error="NOT_LEADER_OR_FOLLOWER") >= 1


def test_group_join_moves_group_and_rebalance_metrics(metrics_broker):
    broker, port = metrics_broker
    bs = broker.bootstrap_servers
    with SyncAdmin(bootstrap_servers=bs) as admin:
        admin.create_topics({"events": 4})
    before = scrape(port)
    rebalances0 = before.value("kbroker_group_rebalances_total")
    durations0 = before.value("kbroker_group_rebalance_duration_seconds_count")
    assert before.value("kbroker_groups", state="Stable") == 0

    first = _join(bs, "events", "billing")
    try:
        page = wait_for(lambda: (p := scrape(port)).value("kbroker_groups", state="Stable") == 1 and p, 60,
                        what="a Stable group")
        assert page.value("kbroker_group_members", group="billing") == 1
        rebalances1 = wait_for(lambda: (v := scrape(port).value("kbroker_group_rebalances_total")) > rebalances0
                               and v, 60, what="rebalance counted")
        assert scrape(port).value("kbroker_group_rebalance_duration_seconds_count") >= durations0

        second = _join(bs, "events", "billing")
        try:
            def split() -> bool:
                first.getmany(timeout_ms=100)
                second.getmany(timeout_ms=100)
                return len(first.assignment()) == 2 and len(second.assignment()) == 2

            wait_for(split, 60, what="the 2/2 split")
            page = wait_for(lambda: (p := scrape(port)).value("kbroker_group_members", group="billing") == 2
                            and p, 60, what="two members")
            assert page.value("kbroker_group_rebalances_total") > rebalances1
            assert page.value("kbroker_group_rebalance_duration_seconds_count") > durations0
            assert page.value("kbroker_active_connections") >= 2
        finally:
            second.close()
    finally:
        first.close()
    page = wait_for(lambda: (p := scrape(port)).value("kbroker_groups", state="Empty") == 1 and p, 60,
                    what="the group to become Empty")
    assert page.value("kbroker_group_members", group="billing") == 0


def test_lag_is_log_end_minus_committed(metrics_broker):
    broker, port = metrics_broker
    bs = broker.bootstrap_servers
    with SyncAdmin(bootstrap_servers=bs) as admin:
        admin.create_topics({"lagged": 2})
    with SyncProducer(bootstrap_servers=bs, linger_ms=0) as producer:
        for _ in range(10):
            producer.send("lagged", value=b"x", partition=0)
        for _ in range(4):
            producer.send("lagged", value=b"y", partition=1)
    consumer = _join(bs, "lagged", "laggers")
    try:
        consumer.commit({TopicPartition("lagged", 0): 3, TopicPartition("lagged", 1): 4})
    finally:
        consumer.close()
    page = scrape(port)
    for partition, committed in ((0, 3), (1, 4)):
        labels = {"group": "laggers", "topic": "lagged", "partition": str(partition)}
        end = page.value("kbroker_log_end_offset", topic="lagged", partition=str(partition))
        assert page.value("kbroker_group_committed_offset", **labels) == committed
        assert page.value("kbroker_group_lag", **labels) == end - committed
    assert page.value("kbroker_group_lag", group="laggers", topic="lagged", partition="0") == 7
    assert page.value("kbroker_group_lag", group="laggers", topic="lagged", partition="1") == 0

    with SyncProducer(bootstrap_servers=bs, linger_ms=0) as producer:
        producer.send("lagged", value=b"z", partition=1)
    assert scrape(port).value("kbroker_group_lag", group="laggers", topic="lagged", partition="1") == 1


def test_waiting_long_poll_fetches_and_connections(metrics_broker):
    broker, port = metrics_broker
    bs = broker.bootstrap_servers
    with SyncAdmin(bootstrap_servers=bs) as admin:
        admin.create_topics({"quiet": 1})
    idle = scrape(port)
    assert idle.value("kbroker_waiting_fetches") == 0
    with SyncConsumer(bootstrap_servers=bs, auto_offset_reset="latest", fetch_max_wait_ms=5000) as consumer:
        consumer.assign([TopicPartition("quiet", 0)])
        # a getmany keeps the consumer's position resolved; the fetcher parks a long poll
        wait_for(lambda: consumer.getmany(timeout_ms=100) is not None
                 and scrape(port).value("kbroker_waiting_fetches") >= 1, 60, what="a parked fetch")
        assert scrape(port).value("kbroker_active_connections") > idle.value("kbroker_active_connections")
    wait_for(lambda: scrape(port).value("kbroker_waiting_fetches") == 0, 60, what="fetches released")


def test_deleted_topic_series_disappear(metrics_broker):
    broker, port = metrics_broker
    bs = broker.bootstrap_servers
    with SyncAdmin(bootstrap_servers=bs) as admin:
        admin.create_topics({"doomed": 1})
        with SyncProducer(bootstrap_servers=bs, linger_ms=0) as producer:
            producer.send("doomed", value=b"bye")
        assert "doomed" in scrape(port).label_values("kbroker_bytes_in_total", "topic")
        admin.delete_topics(["doomed"])
    page = scrape(port)
    assert "doomed" not in page.label_values("kbroker_bytes_in_total", "topic")
    assert "doomed" not in page.label_values("kbroker_log_end_offset", "topic")


@pytest.mark.slow
def test_hostile_topic_names_do_not_explode_label_values(fast_data_dir):
    """One client throws 5000 topic names at every topic-labelled path: at most 1000 topic label values.

    1200 of the names become real topics (created, produced to, committed for: more than the cap);
    the other 3800 only appear in requests for unknown topics (produce, metadata without
    auto-creation, offset commits, list offsets), which must not mint label values at all.
    """
    created, ghosts = 1200, 3800
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = 4 * created + 2048  # every partition keeps its segment, index and time index open
    if soft < want:
        if hard != resource.RLIM_INFINITY and hard < want:
            pytest.skip(f"needs {want} open files, the hard limit is {hard}")
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    port = free_port()
    real = [f"hostile-{i:05d}" for i in range(created)]
    fake = [f"ghost-{i:05d}" for i in range(ghosts)]
    with BrokerThread(data_dir=fast_data_dir, metrics_port=port, metrics_host="127.0.0.1") as broker:

        async def attack() -> None:
            async with Admin(bootstrap_servers=broker.bootstrap_servers, request_timeout_ms=120_000) as admin:
                net = admin.net
                for i in range(0, created, 600):
                    await admin.create_topics(dict.fromkeys(real[i:i + 600], 1), timeout_ms=120_000)
                node = net.least_loaded_node()
                assert node is not None
                batch = encode_batch([(None, b"x", [], int(time.time() * 1000))])
                body = {"transactional_id": None, "acks": 1, "timeout_ms": 30000,
                        "topic_data": [{"name": t, "partition_data": [{"index": 0, "records": batch}]}
                                       for t in real + fake]}
                resp = await net.send(node, ApiKey.PRODUCE, body, timeout_ms=120_000)
                codes = {t.name: p.error_code for t in resp.responses for p in t.partition_responses}
                assert not any(codes[t] for t in real)
                assert all(codes[t] for t in fake)
                await net.send(node, ApiKey.METADATA, {"topics": [{"name": t} for t in fake],
                                                       "allow_auto_topic_creation": False})
                await net.send(node, ApiKey.LIST_OFFSETS, {
                    "replica_id": -1, "isolation_level": 0, "timeout_ms": 10000,
                    "topics": [{"name": t, "partitions": [{"partition_index": 0, "timestamp": -1}]}
                               for t in real + fake]})
                # simple-group commits (no membership) for every name
                await net.send(node, ApiKey.OFFSET_COMMIT, {
                    "group_id": "hostile", "generation_id_or_member_epoch": -1, "member_id": "",
                    "group_instance_id": None, "retention_time_ms": -1,
                    "topics": [{"name": t, "partitions": [{"partition_index": 0, "committed_offset": 0,
                                                           "committed_metadata": ""}]} for t in real + fake]})

        asyncio.run(attack())
        page = scrape(port)
        topic_metrics = {s.name for s in page.samples if "topic" in s.labels}
        assert {"kbroker_bytes_in_total", "kbroker_messages_in_total", "kbroker_log_end_offset",
                "kbroker_log_size_bytes", "kbroker_group_lag"} <= topic_metrics
        all_values: set[str] = set()
        for name in topic_metrics:
            values = page.label_values(name, "topic")
            assert len(values - {OTHER}) <= MAX_LABELLED_TOPICS, (name, len(values))
            assert not {v for v in values if v.startswith("ghost-")}, name
            all_values |= values
        assert len(all_values - {OTHER}) <= MAX_LABELLED_TOPICS
        # the overflow is still accounted for, under one label value
        assert sum(v for _, v in page.series("kbroker_messages_in_total")) == created
        assert page.value("kbroker_messages_in_total", topic=OTHER) == created - MAX_LABELLED_TOPICS
        assert page.value("kbroker_partitions") >= created


def test_hot_counters_expose_what_prometheus_client_would() -> None:
    """The lock-free request counters render the same counter and histogram samples as
    ``prometheus_client``'s own metrics given the same observations (bucket edges included)."""
    from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest

    from broker.observability.metrics import _LATENCY_BUCKETS, BrokerMetrics

    observations = [("Produce", 9, 0.0001), ("Produce", 9, 0.00010001), ("Produce", 9, 0.2),
                    ("Produce", 9, 31.0), ("Heartbeat", 4, 0.0), ("Heartbeat", 4, 10.0)]
    ours = BrokerMetrics()
    reference = CollectorRegistry()
    requests = Counter("kbroker_requests", "x", ["api", "version"], registry=reference)
    latency = Histogram("kbroker_request_latency_seconds", "x", ["api", "version"], buckets=_LATENCY_BUCKETS,
                        registry=reference)
    for api, version, seconds in observations:
        ours.observe_request(api, version, seconds)
        requests.labels(api, str(version)).inc()
        latency.labels(api, str(version)).observe(seconds)
    ours.bytes_in("orders", 1000, 10)
    ours.bytes_out("orders", 600)

    def samples(registry: CollectorRegistry, prefix: str) -> set[str]:
        return {line for line in generate_latest(registry).decode().splitlines()
                if line.startswith(prefix) and "_created" not in line}

    for prefix in ("kbroker_requests_total", "kbroker_request_latency_seconds_"):
        got = samples(ours.registry, prefix)
        assert got and got == samples(reference, prefix)
    page = generate_latest(ours.registry).decode()
    for line in ('kbroker_bytes_in_total{topic="orders"} 1000.0', 'kbroker_messages_in_total{topic="orders"} 10.0',
                 'kbroker_bytes_out_total{topic="orders"} 600.0'):
        assert line in page
