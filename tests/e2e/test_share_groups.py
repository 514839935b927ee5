"""Share groups (KIP-932) end to end with confluent-kafka's ``ShareConsumer`` against ``python -m broker``:
several consumers on one partition (disjoint records, all of them), redelivery after a lock expires
(delivery count 2), RELEASE, REJECT, the delivery-count limit, read_committed over transactions, implicit
and explicit acknowledgement, and a kill -9 of the broker (nothing acknowledged comes back, nothing
unacknowledged is lost).  Short heartbeats and locks (``share_e2e.SHARE_SETTINGS``); waits are
liveness bounds only."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from e2e_helpers import BrokerProcess
from share_helpers import (
    ShareReader,
    create_topic,
    produce,
    set_group_configs,
    share_args,
    unique,
    wait_until,
)

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    bp = BrokerProcess(tmp_path_factory.mktemp("share") / "data", extra_args=share_args())
    bp.start()
    yield bp
    assert bp.alive(), f"broker died during the module:\n{bp.log_tail()}"
    assert bp.stop() == 0, bp.log_tail()


@pytest.fixture
def readers() -> Iterator[list[ShareReader]]:
    started: list[ShareReader] = []
    yield started
    for r in started:
        r.hold.clear()
        r.stop()


def start(readers: list[ShareReader], reader: ShareReader) -> ShareReader:
    readers.append(reader)
    reader.start()
    return reader


def group_and_topic(broker: BrokerProcess, **configs: str) -> tuple[str, str]:
    bs = broker.bootstrap_servers
    group, topic = unique("g"), unique("t")
    create_topic(bs, topic)
    set_group_configs(bs, group, share_auto_offset_reset="earliest", **configs)
    return group, topic


def values(n: int, prefix: str = "v") -> list[str]:
    return [f"{prefix}{i}" for i in range(n)]


def test_consumers_on_one_partition_get_disjoint_records_and_all_of_them(broker: BrokerProcess,
                                                                           readers: list[ShareReader]) -> None:
    bs = broker.bootstrap_servers
    group, topic = group_and_topic(broker)
    consumers = [start(readers, ShareReader(bs, group, [topic], **{"max.poll.records": 10})) for _ in range(3)]
    expected = values(300)
    produce(bs, topic, expected, batch=10)
    wait_until(lambda: sum(len(c.values()) for c in consumers) >= 300, what="300 records")
    seen = [v for c in consumers for v in c.values()]
    assert sorted(seen) == sorted(expected)  # every record, once: the consumers' records are disjoint
    assert all(count == 1 for _, _, count in [r for c in consumers for r in c.records])
    assert not any(c.errors for c in consumers)


def test_a_held_record_is_redelivered_after_its_lock_with_delivery_count_2(broker: BrokerProcess,
                                                                          readers: list[ShareReader]) -> None:
    from confluent_kafka import AcknowledgeType

    bs = broker.bootstrap_servers
    group, topic = group_and_topic(broker, share_record_lock_duration_ms="2000")
    holder = start(readers, ShareReader(bs, group, [topic], explicit=True, decide=lambda v, c: None))
    produce(bs, topic, values(5), batch=5)
    # it stays connected, and never acknowledges: the locks expire
    wait_until(lambda: len(holder.records) >= 5 and holder.hold.is_set(), what="the first delivery")
    taker = start(readers, ShareReader(bs, group, [topic], explicit=True,
                                       decide=lambda v, c: AcknowledgeType.ACCEPT))
    wait_until(lambda: len(taker.records) >= 5, what="redelivery after the lock expired")
    assert sorted(taker.records) == [(i, f"v{i}", 2) for i in range(5)]
    assert [c for _, _, c in holder.records] == [1] * 5
    assert not holder.closed.is_set() and not holder.errors and not taker.errors


def test_release_redelivers_at_once_and_reject_never(broker: BrokerProcess, readers: list[ShareReader]) -> None:
    from confluent_kafka import AcknowledgeType

    bs = broker.bootstrap_servers
    group, topic = group_and_topic(broker)  # the default lock (30 s) is far longer than this test waits

    def decide(value: str, count: int) -> object:
        index = int(value[1:]) if value[1:].isdigit() else 2
        if index % 3 == 0 and count == 1:
            return AcknowledgeType.RELEASE
        if index % 3 == 1:
            return AcknowledgeType.REJECT
        return AcknowledgeType.ACCEPT

    reader = start(readers, ShareReader(bs, group, [topic], explicit=True, decide=decide))
    produce(bs, topic, values(12), batch=12)
    released = {f"v{i}" for i in range(0, 12, 3)}
    wait_until(lambda: len(reader.records) >= 12 + len(released), what="released records again")
    counts = Counter(reader.values())
    assert {v for v, n in counts.items() if n == 2} == released
    assert all(n == 1 for v, n in counts.items() if v not in released)
    second = [(v, c) for _, v, c in reader.records if v in released and c == 2]
    assert len(second) == len(released)
    # nothing else comes: the rejected records are never redelivered
    other = start(readers, ShareReader(bs, group, [topic]))
    produce(bs, topic, ["marker"])
    wait_until(lambda: "marker" in reader.values() + other.values(), what="the marker")
    assert set(other.values()) <= {"marker"}


def test_the_delivery_count_limit_archives_a_poison_record(broker: BrokerProcess, readers: list[ShareReader]) -> None:
    from confluent_kafka import AcknowledgeType

    bs = broker.bootstrap_servers
    group, topic = group_and_topic(broker, share_delivery_count_limit="3")

    def decide(value: str, count: int) -> object:
        return AcknowledgeType.RELEASE if value == "v3" else AcknowledgeType.ACCEPT

    reader = start(readers, ShareReader(bs, group, [topic], explicit=True, decide=decide))
    produce(bs, topic, values(6), batch=6)
    wait_until(lambda: reader.values().count("v3") >= 3, what="three deliveries of the poison record")
    produce(bs, topic, ["after"])
    wait_until(lambda: "after" in reader.values(), what="the record after it")
    assert [c for _, v, c in reader.records if v == "v3"] == [1, 2, 3]  # then archived: never again
    assert all(reader.values().count(f"v{i}") == 1 for i in (0, 1, 2, 4, 5))


def test_read_committed_hides_aborted_transactions(broker: BrokerProcess, readers: list[ShareReader]) -> None:
    from confluent_kafka import Producer

    bs = broker.bootstrap_servers
    group, topic = group_and_topic(broker, share_isolation_level="read_committed")
    uncommitted_group = unique("g")
    set_group_configs(bs, uncommitted_group, share_auto_offset_reset="earliest")
    p = Producer({"bootstrap.servers": bs, "transactional.id": unique("tx")})
    p.init_transactions(30)
    for name, commit in (("a", False), ("c", True), ("a2", False)):
        p.begin_transaction()
        for i in range(3):
            p.produce(topic, value=f"{name}{i}".encode(), partition=0)
        p.flush(30)
        if commit:
            p.commit_transaction(30)
        else:
            p.abort_transaction(30)
    produce(bs, topic, ["plain"])
    committed = start(readers, ShareReader(bs, group, [topic]))
    everything = start(readers, ShareReader(bs, uncommitted_group, [topic]))
    wait_until(lambda: "plain" in committed.values() and "plain" in everything.values(), what="both groups")
    assert sorted(committed.values()) == ["c0", "c1", "c2", "plain"]
    assert len(everything.values()) == 10  # read_uncommitted sees the aborted records too


def test_implicit_mode_accepts_on_the_next_poll(broker: BrokerProcess, readers: list[ShareReader]) -> None:
    bs = broker.bootstrap_servers
    group, topic = group_and_topic(broker, share_record_lock_duration_ms="2000")
    first = start(readers, ShareReader(bs, group, [topic]))
    produce(bs, topic, values(20), batch=5)
    wait_until(lambda: len(first.values()) >= 20, what="20 records")
    first.stop()
    readers.remove(first)
    # accepted records are done: a new consumer, well after any lock, gets only new ones
    second = start(readers, ShareReader(bs, group, [topic]))
    produce(bs, topic, ["new"])
    wait_until(lambda: "new" in second.values(), what="the new record")
    assert second.values() == ["new"]


def test_kill9_loses_nothing_unacknowledged_and_redelivers_nothing_acknowledged(tmp_path: Path) -> None:
    from confluent_kafka import AcknowledgeType

    bp = BrokerProcess(tmp_path / "data", extra_args=share_args())
    bp.start()
    try:
        bs = bp.bootstrap_servers
        group, topic = unique("g"), unique("t")
        create_topic(bs, topic)
        set_group_configs(bs, group, share_auto_offset_reset="earliest")
        produce(bs, topic, values(40), batch=10)
        acked: set[str] = set()

        def decide(value: str, count: int) -> object:
            if int(value[1:]) % 2 == 0:
                acked.add(value)
                return AcknowledgeType.ACCEPT
            return None  # held: unacknowledged when the broker dies

        reader = ShareReader(bs, group, [topic], explicit=True, decide=decide)
        reader.start()
        wait_until(lambda: reader.hold.is_set(), what="a first delivery")
        assert not reader.errors and all(v is None for r in reader.commit_results for v in r.values())
        assert acked
        bp.kill9()
        bp.start()
        reader.stop()
        again = ShareReader(bs, group, [topic], explicit=True, decide=lambda v, c: AcknowledgeType.ACCEPT)
        again.start()
        try:
            produce(bs, topic, ["last"])
            wait_until(lambda: "last" in again.values(), what="a new record")
            wait_until(lambda: len(again.values()) >= 41 - len(acked), what="every unacknowledged record")
            assert sorted(again.values()) == sorted(set(values(40)) - acked | {"last"})  # each once
        finally:
            again.stop()
    finally:
        if bp.alive():
            bp.stop()
