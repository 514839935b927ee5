"""A coordinator that takes over a partition serves only what is committed (Kafka 4's coordinator runtime).

The new leader of a ``__consumer_offsets`` / ``__transaction_state`` partition may hold records above
its high watermark: written by the previous leader, copied by this replica, not yet on every in-sync
replica.  They may still be truncated away, so the shard replays them only once the high watermark
passes them (and never if they are cut), and serves requests only once its log is committed.
"""

from __future__ import annotations

import asyncio
import os
import time
import uuid
from typing import Any

from broker.coordinator.group.config import GroupConfig
from broker.coordinator.group.coordinator import GroupCoordinator
from broker.coordinator.group.records import encode_offset_commit_key, encode_offset_commit_value
from broker.coordinator.runtime import CommittedReplay, CoordinatorRuntime
from broker.coordinator.txn.coordinator import TransactionCoordinator, TxnConfig, TxnState
from broker.coordinator.txn.records import TxnLogValue, encode_txn_key, encode_txn_value
from broker.log import LogConfig, PartitionLog
from broker.log.testing import FakeClock
from broker.replication.partition import Partition
from broker.replication.purgatory import DelayedOperationPurgatory
from protocol.error_codes import ErrorCode
from protocol.records import encode_batch
from protocol.timing_wheel import TimingWheel

E = ErrorCode
T0 = 1_700_000_000_000
OFFSETS = "__consumer_offsets"


def coordinator_log(tmp_path: os.PathLike[str], topic: str) -> PartitionLog:
    log = PartitionLog(os.path.join(tmp_path, f"{topic}-0"), topic, 0, LogConfig.from_dict({}), FakeClock(T0))
    log.assign_leader_epoch(1)
    return log


def commit(log: PartitionLog, offset: int, group: str = "g") -> None:
    """One OffsetCommit as the group coordinator writes it (one batch)."""
    value = encode_offset_commit_value(offset, -1, "", T0)
    log.append(encode_batch([(encode_offset_commit_key(group, "t", 0), value, [], T0)]), coordinator=True)


def committed_offset(coordinator: GroupCoordinator, group: str = "g") -> int | None:
    entry = coordinator.offsets.get(group, {}).get(("t", 0))
    return None if entry is None else entry.offset


def no_errors(offset: int, exc: Exception, what: str) -> None:
    raise AssertionError(f"unreadable {what} at {offset}: {exc}")


def test_a_load_replays_up_to_the_high_watermark_and_the_rest_as_it_commits(tmp_path) -> None:
    log = coordinator_log(tmp_path, OFFSETS)
    for offset in (5, 7, 9):
        commit(log, offset)
    log.high_watermark = 1  # the new leader's ISR has the first commit only
    coordinator = GroupCoordinator(GroupConfig(), now_ms=T0)
    replay = CommittedReplay(coordinator, 0, log, no_errors)
    assert replay.step(100) == 1
    assert committed_offset(coordinator) == 5 and not replay.caught_up and replay.blocked_at == 1
    assert replay.uncommitted == 2
    log.high_watermark = 2
    assert replay.step(100) == 1 and committed_offset(coordinator) == 7
    log.high_watermark = 3
    assert replay.step(100) == 1 and committed_offset(coordinator) == 9
    assert replay.caught_up and replay.records == 3


def test_records_truncated_above_the_high_watermark_are_never_applied(tmp_path) -> None:
    log = coordinator_log(tmp_path, OFFSETS)
    for offset in (5, 7, 9):
        commit(log, offset)
    log.high_watermark = 1
    coordinator = GroupCoordinator(GroupConfig(), now_ms=T0)
    replay = CommittedReplay(coordinator, 0, log, no_errors)
    replay.step(100)
    log.truncate_to(1)  # the tail was not the ISR's: cut
    assert replay.caught_up  # everything the log held at the start is committed or gone
    commit(log, 6)  # written after the load (by the shard itself, which applies its own writes)
    log.high_watermark = 2
    assert replay.step(100) == 0 and committed_offset(coordinator) == 5  # 7 and 9 never were applied


def test_a_transaction_state_above_the_high_watermark_is_not_acted_on(tmp_path) -> None:
    """A PrepareCommit that never committed: the loaded coordinator must not send its markers."""
    log = coordinator_log(tmp_path, "__transaction_state")

    def state(status: TxnState) -> None:
        value = TxnLogValue(1000, -1, -1, 0, -1, 60_000, int(status), (("t", 0),), T0, T0, 0)
        log.append(encode_batch([(encode_txn_key("tx"), encode_txn_value(value), [], T0)]), coordinator=True)

    state(TxnState.ONGOING)
    state(TxnState.PREPARE_COMMIT)
    log.high_watermark = 1
    coordinator = TransactionCoordinator(TxnConfig(), partition=0, coordinator_epoch=1, now_ms=T0,
                                         allocate_producer_id=lambda: None)
    replay = CommittedReplay(coordinator, 0, log, no_errors)
    replay.step(100)
    assert coordinator.txns["tx"].state is TxnState.ONGOING
    log.truncate_to(1)
    assert replay.caught_up
    effects = coordinator.complete_load(T0)
    assert coordinator.txns["tx"].state is TxnState.ONGOING and not effects.markers


# --------------------------------------------------------------------- the runtime over a partition
class _Replica:
    """What the runtime uses of the replica manager: the hosted partitions and the produce purgatory
    (checked, as the replica manager does, whenever a partition's high watermark moves)."""

    def __init__(self, partition: Partition) -> None:
        self.partitions = {(partition.topic, partition.partition): partition}
        self.wheel = TimingWheel(start_ms=0)
        self.produce_purgatory = DelayedOperationPurgatory("produce", timer=self.wheel)
        self.listeners: list[Any] = []

    def add_leadership_listener(self, fn: Any) -> None:
        self.listeners.append(fn)

    def high_watermark(self, partition: Partition, offset: int) -> None:
        partition.log.high_watermark = offset
        self.produce_purgatory.check_and_complete((partition.topic, partition.partition))


class _Timer:
    def now_ms(self) -> float:
        return 0.0

    def call_at_ms(self, deadline_ms: float, callback: Any) -> Any:
        return None


async def until(predicate: Any, what: str, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.001)


def takeover(log: PartitionLog, epoch: int
             ) -> tuple[CoordinatorRuntime[GroupCoordinator], _Replica, Partition]:
    """A group coordinator runtime on a broker that has just become the leader of ``log`` in ``epoch``."""
    partition = Partition(log.topic, log.partition, uuid.uuid4(), 1, log)
    partition.leader, partition.leader_epoch = 1, epoch
    replica = _Replica(partition)
    runtime: CoordinatorRuntime[GroupCoordinator] = CoordinatorRuntime(
        topic=log.topic, replica=replica, timer=_Timer(),  # type: ignore[arg-type]
        new_coordinator=lambda _p, _e: GroupCoordinator(GroupConfig(), now_ms=T0))
    runtime._on_leadership(log.topic, log.partition, True, epoch)
    return runtime, replica, partition


async def test_a_shard_that_takes_over_serves_only_committed_offsets(tmp_path) -> None:
    log = coordinator_log(tmp_path, OFFSETS)
    for offset in (5, 9):
        commit(log, offset)
    log.high_watermark = 1  # offset 9 was written by the old leader; the ISR does not have it yet
    runtime, replica, partition = takeover(log, 2)
    shard = runtime.shards[0]
    await until(lambda: replica.produce_purgatory.num_delayed or shard.coordinator is not None,
                "the load to finish or wait")
    # the uncommitted commit is neither served nor applied
    assert shard.coordinator is None or committed_offset(shard.coordinator) != 9
    assert runtime.shard(0) == (None, E.COORDINATOR_LOAD_IN_PROGRESS)
    replica.high_watermark(partition, 2)  # the ISR caught up: offset 9 is committed
    await until(lambda: runtime.shard(0)[0] is not None, "the shard to serve")
    assert shard.coordinator is not None and committed_offset(shard.coordinator) == 9
    assert replica.produce_purgatory.num_delayed == 0
    runtime.close()


async def test_a_shard_losing_its_partition_while_waiting_leaves_nothing_behind(tmp_path) -> None:
    log = coordinator_log(tmp_path, OFFSETS)
    commit(log, 5)
    runtime, replica, partition = takeover(log, 2)
    await until(lambda: replica.produce_purgatory.num_delayed == 1, "the load to wait for the high watermark")
    partition.leader = 3  # another broker leads now, as the replica manager's image says
    runtime._on_leadership(OFFSETS, 0, False, 2)
    await until(lambda: replica.produce_purgatory.num_delayed == 0, "the wait to leave the purgatory")
    assert runtime.shards == {} and runtime.shard(0) == (None, E.NOT_COORDINATOR)
    runtime.close()
