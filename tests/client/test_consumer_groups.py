"""Our consumer in groups with kafka-python and librdkafka members; keyed partitioning parity."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence

import pytest

from broker import BrokerConfig, BrokerThread
from client import Admin, Consumer, Producer, TopicPartition

pytestmark = [pytest.mark.slow, pytest.mark.timeout(90)]

PARTS = 6
STEP_S = 25.0   # upper bound for one wait of a test (a rebalance, a session timeout), even on a slow machine


@pytest.fixture(scope="module")
def bs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    cfg = BrokerConfig(host="127.0.0.1", port=0, data_dir=tmp_path_factory.mktemp("broker"),
                       group_initial_rebalance_delay_ms=0, group_min_session_timeout_ms=1000)
    with BrokerThread(cfg) as b:
        yield b.bootstrap_servers


class Member:
    """A foreign client polling in a thread and publishing its current assignment."""

    def __init__(self, poll_once: Callable[[], set[TopicPartition]], close: Callable[[], None]) -> None:
        self.assignment: set[TopicPartition] = set()
        self._poll_once = poll_once
        self._close = close
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            self.assignment = self._poll_once()
        self._close()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)


def kafka_python_member(bs: str, topic: str, group: str) -> Member:
    from kafka import KafkaConsumer
    from kafka.coordinator.assignors.range import RangePartitionAssignor

    c = KafkaConsumer(topic, bootstrap_servers=bs, group_id=group, auto_offset_reset="earliest",
                      enable_auto_commit=False, session_timeout_ms=6000, heartbeat_interval_ms=500,
                      partition_assignment_strategy=[RangePartitionAssignor])

    def poll() -> set[TopicPartition]:
        c.poll(timeout_ms=200)
        return {TopicPartition(tp.topic, tp.partition) for tp in c.assignment()}

    return Member(poll, c.close)


def confluent_member(bs: str, topic: str, group: str, strategy: str) -> Member:
    from confluent_kafka import Consumer as CKConsumer

    c = CKConsumer({"bootstrap.servers": bs, "group.id": group, "auto.offset.reset": "earliest",
                    "enable.auto.commit": False, "session.timeout.ms": 6000, "heartbeat.interval.ms": 500,
                    "partition.assignment.strategy": strategy})
    c.subscribe([topic])

    def poll() -> set[TopicPartition]:
        c.poll(0.2)
        return {TopicPartition(tp.topic, tp.partition) for tp in c.assignment()}

    return Member(poll, c.close)


async def make_topic(bs: str, topic: str) -> None:
    async with Admin(bootstrap_servers=bs) as admin:
        await admin.create_topics({topic: PARTS})
    async with Producer(bootstrap_servers=bs) as p:
        for i in range(PARTS * 5):
            await p.enqueue(topic, value=b"%d" % i, partition=i % PARTS)
        await p.flush(STEP_S)


def covered_exactly_once(assignments: list[set[TopicPartition]], topic: str) -> bool:
    everything = {TopicPartition(topic, p) for p in range(PARTS)}
    union = set().union(*assignments)
    return all(assignments) and union == everything and sum(map(len, assignments)) == PARTS


async def poll_until(ours: Consumer, cond: Callable[[], bool], what: str, timeout_s: float = STEP_S,
                     members: Sequence[Member] = ()) -> None:
    """Keep polling ``ours`` (which drives its group membership) until ``cond()``, at most ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while not cond():
        if time.monotonic() >= deadline:
            coord = ours._coordinator
            state = (f"state={coord.machine.state.name} generation={coord.machine.generation}"
                     if coord is not None else "no group")
            raise AssertionError(f"not {what} within {timeout_s} s; ours ({state}): {sorted(ours.assignment())}; "
                                 f"others: {[sorted(m.assignment) for m in members]}")
        await ours.getmany(timeout_ms=200)


async def wait_for_cover(ours: Consumer, members: list[Member], topic: str, stable_rounds: int = 5,
                         timeout_s: float = STEP_S) -> None:
    streak = 0

    def stable() -> bool:
        nonlocal streak
        if covered_exactly_once([ours.assignment(), *(m.assignment for m in members)], topic):
            streak += 1
        else:
            streak = 0
        return streak >= stable_rounds

    await poll_until(ours, stable, f"covered exactly once for {stable_rounds} polls in a row", timeout_s, members)


async def test_mixed_group_range_with_kafka_python_and_confluent(bs: str) -> None:
    topic, group = "mixed-range", "g-mixed-range"
    await make_topic(bs, topic)
    async with Consumer(topic, bootstrap_servers=bs, group_id=group, auto_offset_reset="earliest",
                        enable_auto_commit=False, session_timeout_ms=6000, heartbeat_interval_ms=500,
                        partition_assignment_strategy=["range"]) as ours:
        # We join first so that we stay the group leader.  A kafka-python 3.0.x member that leads
        # while its metadata for the topic is still empty rejoins on the metadata change, and if
        # its poll(timeout_ms) expires during that JoinGroup/SyncGroup it never completes the join:
        # heartbeats stay disabled, the broker expires it after session_timeout_ms and it never
        # rejoins (need_rejoin() is False).  That lost the cover on loaded machines.
        await poll_until(ours, lambda: len(ours.assignment()) == PARTS, "assigned every partition")
        members = [kafka_python_member(bs, topic, group), confluent_member(bs, topic, group, "range")]
        try:
            await wait_for_cover(ours, members, topic)
            assert len(ours.assignment()) == 2
        finally:
            for m in members:
                m.stop()


async def test_cooperative_sticky_with_librdkafka(bs: str) -> None:
    topic, group = "coop", "g-coop"
    await make_topic(bs, topic)
    async with Consumer(topic, bootstrap_servers=bs, group_id=group, auto_offset_reset="earliest",
                        enable_auto_commit=False, session_timeout_ms=6000, heartbeat_interval_ms=500,
                        partition_assignment_strategy=["cooperative-sticky"]) as ours:
        await poll_until(ours, lambda: len(ours.assignment()) == PARTS, "assigned every partition")
        member = confluent_member(bs, topic, group, "cooperative-sticky")
        try:
            await wait_for_cover(ours, [member], topic)
            assert len(ours.assignment()) == PARTS // 2
        finally:
            member.stop()
        await poll_until(ours, lambda: len(ours.assignment()) == PARTS, "given the partitions back")


VICTIM = """
import sys, time
from client.sync import SyncConsumer
c = SyncConsumer(sys.argv[2], bootstrap_servers=sys.argv[1], group_id=sys.argv[3], session_timeout_ms=3000,
                 heartbeat_interval_ms=300, auto_offset_reset="earliest", partition_assignment_strategy=["range"])
while True:
    c.getmany(timeout_ms=200)
    print(len(c.assignment()), flush=True)
"""


async def test_killed_member_partitions_move_after_session_timeout(bs: str) -> None:
    topic, group = "victim", "g-victim"
    await make_topic(bs, topic)
    async with Consumer(topic, bootstrap_servers=bs, group_id=group, auto_offset_reset="earliest",
                        session_timeout_ms=3000, heartbeat_interval_ms=300,
                        partition_assignment_strategy=["range"]) as ours:
        await poll_until(ours, lambda: len(ours.assignment()) == PARTS, "assigned every partition")
        proc = subprocess.Popen([sys.executable, "-c", VICTIM, bs, topic, group], stdout=subprocess.PIPE, text=True)
        try:
            assert proc.stdout is not None
            loop = asyncio.get_running_loop()
            deadline = time.monotonic() + STEP_S
            while True:
                remaining = deadline - time.monotonic()
                assert remaining > 0, f"the victim never shared the partitions within {STEP_S} s"
                # readline blocks its executor thread; killing the victim (finally) unblocks it.
                line = await asyncio.wait_for(loop.run_in_executor(None, proc.stdout.readline), remaining)
                assert line or proc.poll() is None, f"victim exited early with {proc.returncode}"
                await ours.getmany(timeout_ms=50)
                if line.strip() and int(line) > 0 and len(ours.assignment()) < PARTS:
                    break
            proc.kill()
            proc.wait(STEP_S)
            # session_timeout_ms=3000: the broker evicts the victim and we rebalance to everything.
            await poll_until(ours, lambda: len(ours.assignment()) == PARTS, "given the victim's partitions")
            assert ours.assignment() == {TopicPartition(topic, p) for p in range(PARTS)}
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(STEP_S)


async def test_keyed_records_land_where_confluent_murmur2_puts_them(bs: str) -> None:
    from confluent_kafka import Producer as CKProducer

    async with Admin(bootstrap_servers=bs) as admin:
        await admin.create_topics({"keys-ours": PARTS, "keys-ck": PARTS})
    keys = [b"key-%d" % i for i in range(200)] + [b"", b"\x00\xff", "ünïcødé".encode()]
    ours: dict[bytes, int] = {}
    async with Producer(bootstrap_servers=bs) as p:
        for k in keys:
            ours[k] = (await asyncio.wait_for(p.send("keys-ours", value=b"v", key=k), STEP_S)).partition
    ck = CKProducer({"bootstrap.servers": bs, "partitioner": "murmur2_random"})
    theirs: dict[bytes, int] = {}

    def report(err: object, msg: object) -> None:
        assert err is None
        theirs[msg.key()] = msg.partition()  # type: ignore[attr-defined]

    for k in keys:
        ck.produce("keys-ck", value=b"v", key=k, on_delivery=report)
    assert ck.flush(STEP_S) == 0, "confluent producer did not deliver everything"
    assert theirs == ours
