"""ShareCoordinatorService: the share coordinator's service — the share-state APIs (83-87) over one
:class:`~broker.coordinator.share.coordinator.ShareCoordinator` shard per ``__share_group_state`` partition
this broker leads (loading, NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS, ordered writes: the shared
:class:`~broker.coordinator.runtime.CoordinatorRuntime`).

A request names share-partitions; each belongs to the shard of its key's partition
(:func:`~broker.coordinator.share.state.state_partition`), so a request is split by shard and the
answers merged, a share-partition of a shard this broker does not have loaded answering
NOT_COORDINATOR or COORDINATOR_LOAD_IN_PROGRESS.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Hashable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from broker.cluster.internal_topics import SHARE_GROUP_STATE_TOPIC
from broker.coordinator.runtime import CoordinatorRuntime, now_ms
from protocol.error_codes import ErrorCode
from protocol.primitives import Obj

from .coordinator import Effects, ShareCoordinator, ShareCoordinatorConfig
from .state import Key, share_lag, state_partition

if TYPE_CHECKING:
    import uuid

    from broker.config.settings import BrokerConfig
    from broker.replication.replica_manager import ReplicaManager
    from protocol.timer_service import WheelTimer

__all__ = ["ShareCoordinatorService"]

E = ErrorCode


class ShareCoordinatorService:
    def __init__(self, *, config: BrokerConfig, replica: ReplicaManager, timer: WheelTimer,
                 partition_count: Callable[[str], int | None]) -> None:
        self.broker_config = config
        self._partition_count = partition_count
        self.runtime: CoordinatorRuntime[ShareCoordinator] = CoordinatorRuntime(
            topic=SHARE_GROUP_STATE_TOPIC, replica=replica, timer=timer, new_coordinator=self._new_coordinator,
            write_timeout_ms=config.share_coordinator_write_timeout_ms)

    def _new_coordinator(self, partition: int, epoch: int) -> ShareCoordinator:
        config = ShareCoordinatorConfig(
            snapshot_update_records_per_snapshot=self.broker_config.share_coordinator_snapshot_update_records_per_snapshot)
        return ShareCoordinator(partition, config, now_ms=now_ms())

    @property
    def num_partitions(self) -> int:
        """The existing topic's partition count (the setting only sizes the topic when it is created)."""
        return self._partition_count(SHARE_GROUP_STATE_TOPIC) or \
            self.broker_config.share_coordinator_state_topic_num_partitions

    def request(self, api_key: int, version: int, req: Obj) -> Obj | Awaitable[Obj]:
        """One of the share-state APIs: split by shard, answered once every shard has answered."""
        group_id = req["group_id"]
        count = self.num_partitions
        by_shard: dict[int, list[tuple[Any, Any]]] = {}
        for topic in req["topics"] or ():
            for p in topic["partitions"] or ():
                shard = state_partition(Key(group_id, topic["topic_id"], p["partition"]), count)
                by_shard.setdefault(shard, []).append((topic["topic_id"], p))
        results: list[Any] = []
        for shard, entries in by_shard.items():
            topics: dict[Any, list[Any]] = {}
            for topic_id, p in entries:
                topics.setdefault(topic_id, []).append(p)
            sub = {"group_id": group_id, "topics": [{"topic_id": t, "partitions": ps} for t, ps in topics.items()]}

            def call(coordinator: ShareCoordinator, token: Hashable, sub: dict[str, Any] = sub) -> Effects:
                return coordinator.handle(api_key, now_ms(), version, sub, token)

            def failed(code: int, sub: dict[str, Any] = sub) -> dict[str, Any]:
                return {"results": [{"topic_id": t["topic_id"], "partitions": [
                    {"partition": p["partition"], "error_code": code, "error_message": None}
                    for p in t["partitions"]]} for t in sub["topics"]]}

            results.append(self.runtime.run_on_partition(shard, call, failed))

        def merge(answers: list[Any]) -> Obj:
            topics: dict[Any, list[Any]] = {}
            for answer in answers:
                for t in answer["results"]:
                    topics.setdefault(t["topic_id"], []).extend(_complete(api_key, p) for p in t["partitions"])
            return Obj(results=[{"topic_id": t, "partitions": ps} for t, ps in topics.items()])

        if all(isinstance(r, dict) for r in results):
            return merge(results)

        async def gather() -> Obj:
            return merge([r if isinstance(r, dict) else await r for r in results])

        return gather()

    def close(self) -> None:
        self.runtime.close()

    def coordinators(self) -> Iterator[ShareCoordinator]:
        return self.runtime.coordinators()

    def total_lags(self, end_offsets: Mapping[tuple[uuid.UUID, int], int], max_groups: int) -> dict[str, int]:
        """Each share group's lag summed over the share-partitions this broker coordinates whose partition end
        (by topic id) is in ``end_offsets`` (at most ``max_groups`` groups): what the console charts over time."""
        lags: dict[str, int] = {}
        for coordinator in self.coordinators():
            for key, state in list(coordinator.states.items()):
                end = end_offsets.get((key.topic_id, key.partition))
                if end is None or state.start_offset < 0 or (key.group_id not in lags and len(lags) >= max_groups):
                    continue
                lags[key.group_id] = lags.get(key.group_id, 0) + share_lag(end, state.start_offset,
                                                                           state.delivery_complete_count)
        return lags


def _complete(api_key: int, entry: dict[str, Any]) -> dict[str, Any]:
    """An error entry made by the service given the fields its API's answer has."""
    from protocol.api import ApiKey

    if api_key == ApiKey.READ_SHARE_GROUP_STATE:
        entry.setdefault("state_epoch", -1)
        entry.setdefault("start_offset", -1)
        entry.setdefault("state_batches", [])
    elif api_key == ApiKey.READ_SHARE_GROUP_STATE_SUMMARY:
        for name in ("state_epoch", "leader_epoch", "start_offset", "delivery_complete_count"):
            entry.setdefault(name, -1)
    return entry
