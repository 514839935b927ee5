"""Our consumer with ``group_protocol="consumer"`` (KIP-848) against ``python -m broker``: in one group with
confluent-kafka ``group.protocol=consumer`` members scaling up and down (no partition owned by two members
at once, no committed offset going backwards, every record read), a broker-side regular expression that
picks up a new topic, a static member's restart, a fenced member's recovery, and a three-broker cluster
whose group coordinator is killed.

Ownership is checked from the members' own rebalance callbacks, timestamped in this process: a partition's
next owner is only told of it after its previous owner's revocation callback ran (the broker hands it over
on the previous owner's acknowledgement), so the intervals [assigned, revoked] of one partition never
overlap.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from groups_e2e import (
    BrokerProcess,
    committed_offsets,
    create_topic,
    describe_group,
    produce,
    unique,
    wait_until,
)

from client import Consumer, ConsumerRebalanceListener, KafkaError, TopicPartition

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]

SETTINGS = {
    "group.consumer.heartbeat.interval.ms": "300", "group.consumer.min.heartbeat.interval.ms": "100",
    "group.consumer.session.timeout.ms": "6000", "group.consumer.min.session.timeout.ms": "1000",
}

Event = tuple[float, str, frozenset[tuple[str, int]]]


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    b = BrokerProcess(tmp_path_factory.mktemp("ours848") / "data", settings=SETTINGS).start()
    try:
        yield b
    finally:
        b.stop()


class Member(threading.Thread):
    """A group member in a thread, polling, committing after each batch, logging its rebalance callbacks
    as ``(time, "assign" | "revoke" | "lost", partitions)``."""

    def __init__(self, name: str) -> None:
        super().__init__(name=name, daemon=True)
        self.assigned: frozenset[tuple[str, int]] = frozenset()
        self.events: list[Event] = []
        self.values: set[bytes] = set()
        self.errors: list[str] = []
        self.halt = threading.Event()
        self.closed = threading.Event()

    def log(self, kind: str, parts: Any) -> None:
        self.events.append((time.monotonic(), kind, frozenset((tp.topic, tp.partition) for tp in parts)))

    def run(self) -> None:
        try:
            self.main()
        except BaseException as exc:  # surfaced by the tests
            self.errors.append(repr(exc))
        finally:
            self.assigned = frozenset()
            self.closed.set()

    def main(self) -> None:
        raise NotImplementedError

    def stop(self) -> None:
        self.halt.set()
        assert self.closed.wait(30), f"{self.name} did not close"


class Ours(Member):
    def __init__(self, bs: str, group: str, topics: list[str], *, pattern: str | None = None,
                 instance_id: str | None = None, name: str = "ours") -> None:
        super().__init__(name)
        self.args = (bs, group, topics, pattern, instance_id)
        self.stall_s = 0.0  # set it: the event loop blocks that long once (no heartbeats)
        self.consumer: Consumer | None = None

    def main(self) -> None:
        asyncio.run(self._main())

    async def _main(self) -> None:
        bs, group, topics, pattern, instance_id = self.args
        owner = self

        class Listener(ConsumerRebalanceListener):
            def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
                owner.log("assign", assigned)

            def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
                owner.log("revoke", revoked)

            def on_partitions_lost(self, lost: set[TopicPartition]) -> None:
                owner.log("lost", lost)

        async with Consumer(*topics, pattern=pattern, listener=Listener(), bootstrap_servers=bs, group_id=group,
                            group_protocol="consumer", group_instance_id=instance_id, auto_offset_reset="earliest",
                            enable_auto_commit=False, client_id=self.name) as c:
            self.consumer = c
            while not self.halt.is_set():
                if self.stall_s:
                    time.sleep(self.stall_s)  # a stalled process: the broker fences it
                    self.stall_s = 0.0
                data = await c.getmany(timeout_ms=200)
                for records in data.values():
                    self.values.update(r.value for r in records if r.value is not None)
                if data:
                    try:
                        await c.commit()
                    except KafkaError:
                        pass  # the partitions moved meanwhile: the next owner reads on from what is committed
                self.assigned = frozenset((tp.topic, tp.partition) for tp in c.assignment())


class Confluent(Member):
    def __init__(self, bs: str, group: str, topic: str, name: str = "confluent") -> None:
        super().__init__(name)
        self.args = (bs, group, topic)

    def main(self) -> None:
        from confluent_kafka import Consumer as CKConsumer
        from confluent_kafka import KafkaException

        bs, group, topic = self.args
        c = CKConsumer({"bootstrap.servers": bs, "group.id": group, "group.protocol": "consumer",
                        "auto.offset.reset": "earliest", "enable.auto.commit": False, "client.id": self.name})
        c.subscribe([topic], on_assign=lambda _c, ps: self.log("assign", ps),
                    on_revoke=lambda _c, ps: self.log("revoke", ps), on_lost=lambda _c, ps: self.log("lost", ps))
        try:
            while not self.halt.is_set():
                msgs = [m for m in c.consume(500, 0.2) if m.error() is None]
                self.values.update(m.value() for m in msgs)
                if msgs:
                    try:
                        c.commit(asynchronous=False)
                    except KafkaException:
                        pass
                self.assigned = frozenset((tp.topic, tp.partition) for tp in c.assignment())
        finally:
            c.close()


def overlaps(members: list[Member]) -> list[str]:
    """Times two members owned one partition at once, per their callbacks."""
    spans: dict[tuple[str, int], list[tuple[float, float, str]]] = {}
    for m in members:
        since: dict[tuple[str, int], float] = {}
        for t, kind, parts in list(m.events):
            for p in parts:
                if kind == "assign":
                    since[p] = t
                elif p in since:
                    spans.setdefault(p, []).append((since.pop(p), t, m.name))
        for p, t in since.items():
            spans.setdefault(p, []).append((t, float("inf"), m.name))
    found = []
    for p, owned in spans.items():
        owned.sort()
        for (_, e1, n1), (s2, _, n2) in pairwise(owned):
            if s2 < e1:
                found.append(f"{p} owned by {n1} and {n2} at once ({s2:.3f} < {e1:.3f})")
    return found


def exclusive(members: list[Member], topic: str, partitions: int) -> bool:
    owned = [tp for m in members for tp in m.assigned]
    return sorted(owned) == [(topic, p) for p in range(partitions)]


def balanced(members: list[Member], topic: str, partitions: int) -> bool:
    sizes = [len(m.assigned) for m in members]
    return exclusive(members, topic, partitions) and max(sizes) - min(sizes) <= 1


class OffsetWatch(threading.Thread):
    """Samples the group's committed offsets; remembers any that went backwards."""

    def __init__(self, bs: str, group: str) -> None:
        super().__init__(daemon=True)
        self.bs, self.group = bs, group
        self.last: dict[tuple[str, int], int] = {}
        self.backwards: list[str] = []
        self.halt = threading.Event()

    def run(self) -> None:
        while not self.halt.wait(0.25):
            try:
                now = committed_offsets(self.bs, self.group)
            except Exception:  # a describe while the group moves
                continue
            for tp, off in now.items():
                if off < self.last.get(tp, -1):
                    self.backwards.append(f"{tp}: {self.last[tp]} -> {off}")
                self.last[tp] = max(off, self.last.get(tp, -1))


@pytest.fixture
def members() -> Iterator[list[Member]]:
    started: list[Member] = []
    yield started
    for m in started:
        m.halt.set()
    for m in started:
        m.closed.wait(30)


def start(members: list[Member], m: Member) -> Member:
    m.start()
    members.append(m)
    return m


def test_with_confluent_members_scaling_up_and_down(broker: BrokerProcess, members: list[Member]) -> None:
    bs, parts = broker.bootstrap, 12
    topic, group = create_topic(bs, unique("mix848"), parts), unique("g-mix848")
    values = set(produce(bs, topic, parts, 600))
    feeding = threading.Event()

    def feed() -> None:  # records keep coming while the group moves
        i = 600
        while not feeding.wait(0.3):
            values.update(produce(bs, topic, parts, 24, start=i))
            i += 24

    feeder = threading.Thread(target=feed, daemon=True)
    watch = OffsetWatch(bs, group)
    a = start(members, Ours(bs, group, [topic], name="ours-a"))
    wait_until(lambda: exclusive([a], topic, parts), message=lambda: f"ours-a owning all, has {sorted(a.assigned)}")
    feeder.start()
    watch.start()
    live: list[Member] = [a]
    for m in (Confluent(bs, group, topic, "ck-1"), Ours(bs, group, [topic], name="ours-b"),
              Confluent(bs, group, topic, "ck-2")):
        live.append(start(members, m))
        wait_until(lambda: balanced(live, topic, parts),
                   message=lambda: f"a balanced cover over {len(live)}: {[sorted(x.assigned) for x in live]}")
    for leaving in ("ours-a", "ck-1", "ours-b"):
        m = next(x for x in live if x.name == leaving)
        m.stop()
        live.remove(m)
        wait_until(lambda: balanced(live, topic, parts),
                   message=lambda: f"a balanced cover over {len(live)}: {[sorted(x.assigned) for x in live]}")
    feeding.set()
    feeder.join(30)
    wait_until(lambda: set().union(*(m.values for m in members)) >= {v.encode() for v in values},
               message="every record read")
    watch.halt.set()
    watch.join(10)
    assert overlaps(members) == []
    assert watch.backwards == []
    assert [e for m in members for e in m.errors] == []
    assert all(kind != "lost" for m in members for _, kind, _ in m.events)


def test_regex_subscription_picks_up_a_new_topic(broker: BrokerProcess, members: list[Member]) -> None:
    bs = broker.bootstrap
    prefix = unique("rx848")
    one = create_topic(bs, f"{prefix}-one", 2)
    create_topic(bs, unique("other848"), 2)
    m = start(members, Ours(bs, unique("g-rx848"), [], pattern=f"{prefix}-.*"))
    wait_until(lambda: m.assigned == {(one, 0), (one, 1)}, message=lambda: f"{one}'s partitions, have {m.assigned}")
    two = create_topic(bs, f"{prefix}-two", 3)
    wait_until(lambda: m.assigned == {(one, 0), (one, 1), (two, 0), (two, 1), (two, 2)},
               message=lambda: f"the new topic too, have {sorted(m.assigned)}")
    values = {v.encode() for v in produce(bs, two, 3, 30)}
    wait_until(lambda: m.values >= values, message="the new topic's records")
    assert m.consumer is not None and m.consumer.subscription() == {one, two}
    assert m.errors == []


def test_static_member_restart_keeps_its_partitions(broker: BrokerProcess, members: list[Member]) -> None:
    bs, parts = broker.bootstrap, 4
    topic, group = create_topic(bs, unique("static848"), parts), unique("g-static848")
    a = start(members, Ours(bs, group, [topic], instance_id="inst-a", name="a"))
    b = start(members, Ours(bs, group, [topic], instance_id="inst-b", name="b"))
    wait_until(lambda: balanced([a, b], topic, parts), message=lambda: f"2/2, have {a.assigned} {b.assigned}")
    before, b_events = a.assigned, len(b.events)
    a.stop()  # a static member leaves with epoch -2: the broker keeps its partitions for it
    a2 = start(members, Ours(bs, group, [topic], instance_id="inst-a", name="a2"))
    wait_until(lambda: a2.assigned == before, message=lambda: f"the same partitions back, have {a2.assigned}")
    assert b.events[b_events:] == []  # b's partitions never moved
    desc = describe_group(bs, group)
    assert sorted(m.group_instance_id for m in desc.members) == ["inst-a", "inst-b"]
    assert a2.errors == b.errors == []


def test_a_fenced_member_loses_its_partitions_and_rejoins(broker: BrokerProcess, members: list[Member]) -> None:
    bs, parts = broker.bootstrap, 4
    topic, group = create_topic(bs, unique("fence848"), parts), unique("g-fence848")
    a = start(members, Ours(bs, group, [topic], name="a"))
    b = start(members, Ours(bs, group, [topic], name="b"))
    wait_until(lambda: balanced([a, b], topic, parts), message=lambda: f"2/2, have {a.assigned} {b.assigned}")
    a.stall_s = 9.0  # past the 6 s session: the broker fences a and gives b everything
    wait_until(lambda: len(b.assigned) == parts, message=lambda: f"b owning all 4, has {b.assigned}")
    wait_until(lambda: any(kind == "lost" for _, kind, _ in a.events), message="a told it lost its partitions")
    wait_until(lambda: balanced([a, b], topic, parts), message=lambda: f"2/2 again, have {a.assigned} {b.assigned}")
    assert a.consumer is not None and a.consumer.group_metadata().generation_id > 0
    assert a.errors == b.errors == []


def test_group_survives_its_coordinator_killed_in_a_cluster(tmp_path: Path, members: list[Member]) -> None:
    from peers import require_etcd

    from broker.testing.harness import KBrokerCluster

    require_etcd()
    with KBrokerCluster(3, tmp_path / "cluster", settings=SETTINGS) as cluster:
        bs, parts = cluster.bootstrap_servers, 6
        topic, group = unique("cl848"), unique("g-cl848")
        from confluent_kafka.admin import AdminClient, NewTopic

        admin = AdminClient({"bootstrap.servers": bs})  # alive until the future resolves
        admin.create_topics([NewTopic(topic, parts, 3)])[topic].result(60)
        values = {v.encode() for v in produce(bs, topic, parts, 300)}
        a = start(members, Ours(bs, group, [topic], name="a"))
        b = start(members, Ours(bs, group, [topic], name="b"))
        wait_until(lambda: balanced([a, b], topic, parts), timeout=90,
                   message=lambda: f"3/3, have {a.assigned} {b.assigned}")
        wait_until(lambda: a.values | b.values >= values, timeout=90, message="the first records")
        wait_until(lambda: sum(committed_offsets(bs, group).values()) >= 300, message="the first commits")
        before = committed_offsets(bs, group)
        victim = int(describe_group(bs, group).coordinator.id)
        cluster.kill(victim)
        survivors = ",".join(x.bootstrap_servers for n, x in cluster.brokers.items() if n != victim)
        values |= {v.encode() for v in produce(survivors, topic, parts, 300, start=300)}
        wait_until(lambda: a.values | b.values >= values, timeout=120, message="the records after the kill")
        wait_until(lambda: sum(committed_offsets(survivors, group).values()) >= 600, timeout=120,
                   message="everything committed under the new coordinator")
        after = committed_offsets(survivors, group)
        assert all(after[tp] >= off for tp, off in before.items())
        wait_until(lambda: balanced([a, b], topic, parts), message="the group stable again")
        assert overlaps([a, b]) == []
        assert a.errors == b.errors == []
