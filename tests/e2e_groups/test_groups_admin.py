"""confluent-kafka's AdminClient against the group coordinator: list, describe, offsets, delete."""

from __future__ import annotations

from confluent_kafka import ConsumerGroupState, ConsumerGroupTopicPartitions, KafkaException, TopicPartition
from groups_e2e import (
    BrokerProcess,
    ConsumerThread,
    admin,
    all_values,
    committed_offsets,
    create_topic,
    exact_split,
    no_errors,
    produce,
    start_consumer,
    unique,
    wait_until,
)


def test_admin_lists_describes_and_reads_offsets(broker: BrokerProcess, consumers: list[ConsumerThread]) -> None:
    topic = create_topic(broker.bootstrap, unique("admin"), 4)
    live, idle = unique("g-admin-live"), unique("g-admin-idle")
    values = produce(broker.bootstrap, topic, 4, 40)

    # an idle group: consumed, committed and closed (Empty, offsets kept)
    gone = start_consumer("confluent", broker.bootstrap, idle, topic, name="admin-idle")
    consumers.append(gone)
    wait_until(lambda: gone.values() >= set(values), message="the idle group's consumer reading everything")
    wait_until(lambda: committed_offsets(broker.bootstrap, idle) == {(topic, p): 10 for p in range(4)},
               message="the idle group's commits")
    gone.stop()

    # a live group of two
    live_consumers = [start_consumer("confluent", broker.bootstrap, live, topic, name=f"admin-live-{i}",
                                     assignor="roundrobin") for i in range(2)]
    consumers.extend(live_consumers)
    wait_until(lambda: exact_split([c.assigned for c in live_consumers], topic, 4, [2, 2]), message="2/2 split")
    wait_until(lambda: all_values(live_consumers) >= set(values), message="the live group reading everything")
    wait_until(lambda: committed_offsets(broker.bootstrap, live) == {(topic, p): 10 for p in range(4)},
               message="the live group's commits")

    client = admin(broker.bootstrap)

    # list_consumer_groups, with and without a state filter
    listing = client.list_consumer_groups(request_timeout=10).result(30)
    assert not listing.errors, listing.errors
    by_id = {g.group_id: g for g in listing.valid}
    assert by_id[live].state == ConsumerGroupState.STABLE
    assert by_id[idle].state == ConsumerGroupState.EMPTY
    assert not by_id[live].is_simple_consumer_group
    stable = client.list_consumer_groups(request_timeout=10, states={ConsumerGroupState.STABLE}).result(30)
    stable_ids = {g.group_id for g in stable.valid}
    assert live in stable_ids and idle not in stable_ids

    # describe_consumer_groups: state, assignor, members with client ids, hosts and assignments
    descs = {g: f.result(30) for g, f in client.describe_consumer_groups([live, idle], request_timeout=10).items()}
    d = descs[live]
    assert d.state == ConsumerGroupState.STABLE
    assert d.partition_assignor == "roundrobin"
    assert d.coordinator.port == broker.port
    assert sorted(m.client_id for m in d.members) == ["admin-live-0", "admin-live-1"]
    assert all(m.host for m in d.members)
    described = {m.client_id: {(tp.topic, tp.partition) for tp in m.assignment.topic_partitions}
                 for m in d.members}
    assert described == {c.name: set(c.assigned) for c in live_consumers}
    assert exact_split(list(described.values()), topic, 4, [2, 2])
    assert descs[idle].state == ConsumerGroupState.EMPTY and not descs[idle].members

    # list_consumer_group_offsets: all partitions, and a chosen subset
    res = client.list_consumer_group_offsets([ConsumerGroupTopicPartitions(live)], request_timeout=10)[live].result(30)
    assert {(tp.topic, tp.partition): tp.offset for tp in res.topic_partitions} == {(topic, p): 10 for p in range(4)}
    subset = [TopicPartition(topic, 1), TopicPartition(topic, 3)]
    res = client.list_consumer_group_offsets([ConsumerGroupTopicPartitions(idle, subset)],
                                             request_timeout=10)[idle].result(30)
    assert {(tp.topic, tp.partition): tp.offset for tp in res.topic_partitions} == {(topic, 1): 10, (topic, 3): 10}

    # delete_consumer_groups: a live group is refused, an Empty one goes away with its offsets
    futures = client.delete_consumer_groups([live, idle], request_timeout=10)
    try:
        futures[live].result(30)
        raise AssertionError("deleting a live group succeeded")
    except KafkaException as exc:
        assert exc.args[0].name() == "NON_EMPTY_GROUP", exc
    futures[idle].result(30)
    listing = client.list_consumer_groups(request_timeout=10).result(30)
    assert idle not in {g.group_id for g in listing.valid}
    assert committed_offsets(broker.bootstrap, idle) == {}
    no_errors(consumers)
