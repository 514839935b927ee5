"""SharePersister: how a broker reaches the share coordinator of a share-partition — Kafka's
``DefaultStatePersister`` / ``PersisterStateManager``.

The coordinator of (group, topic, partition) is the leader of ``__share_group_state`` partition
``abs(hashCode("group:topicId:partition")) % partitions`` (:func:`~broker.coordinator.share.state.state_partition`),
found in this broker's metadata image; the topic is created on first use.  Requests go through a
:class:`~broker.coordinator.txn.channel.TxnChannel`: to this broker itself in process, to the others
over the inter-broker listener.  A coordinator that is moving, loading or unreachable is retried with
a growing backoff until the request's time is up (then COORDINATOR_NOT_AVAILABLE).

It serves the share-partition leaders (:class:`~broker.replication.share.manager.StatePersister`:
read and write) and the group coordinator (initialise, delete, summaries).
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from broker.cluster.internal_topics import SHARE_GROUP_STATE_TOPIC
from protocol.api import ApiKey
from protocol.error_codes import ErrorCode

from .state import Key, state_partition

if TYPE_CHECKING:
    from broker.cluster.image import MetadataImage
    from broker.coordinator.txn.channel import TxnChannel
    from broker.replication.share.manager import PersistedState

log = logging.getLogger("kbroker.share")

__all__ = ["SharePersister"]

E = ErrorCode
_RETRIABLE = frozenset({E.NOT_COORDINATOR, E.COORDINATOR_LOAD_IN_PROGRESS, E.COORDINATOR_NOT_AVAILABLE,
                        E.REQUEST_TIMED_OUT, E.NOT_LEADER_OR_FOLLOWER, E.UNKNOWN_TOPIC_OR_PARTITION})


class SharePersister:
    """Share-state requests to the right share coordinator (see the module doc).  ``ensure_topic()`` creates
    ``__share_group_state`` (returning an error code); ``timeout_ms`` bounds each call, retries included."""

    def __init__(self, channel: TxnChannel, *, image: MetadataImage, ensure_topic: Callable[[], Awaitable[int]],
                 num_partitions: Callable[[], int], timeout_ms: int = 15_000, backoff_ms: int = 50) -> None:
        self.channel = channel
        self.image = image
        self.ensure_topic = ensure_topic
        self.num_partitions = num_partitions
        self.timeout_ms = timeout_ms
        self.backoff_ms = backoff_ms

    def coordinator_partition(self, key: Key) -> int:
        topic = self.image.topic(SHARE_GROUP_STATE_TOPIC)
        return state_partition(key, topic.partition_count if topic is not None else self.num_partitions())

    async def _call(self, key: Key, api_key: int, version: int, partition: dict[str, Any]) -> dict[str, Any]:
        """One share-partition's entry of the coordinator's answer, retried while the coordinator moves."""
        deadline = time.monotonic() + self.timeout_ms / 1000
        body = {"group_id": key.group_id, "topics": [{"topic_id": key.topic_id, "partitions": [
            {"partition": key.partition, **partition}]}]}
        backoff = self.backoff_ms / 1000
        code: int = E.COORDINATOR_NOT_AVAILABLE
        while True:
            node = await self._coordinator(key)
            if node is not None:
                try:
                    left = max(1, int((deadline - time.monotonic()) * 1000))
                    resp = await self.channel.request(node, api_key, body, version=version, timeout_ms=left)
                    entry = dict(resp["results"][0]["partitions"][0])
                    code = entry["error_code"]
                    if code not in _RETRIABLE:
                        return entry
                except (ConnectionError, OSError, TimeoutError, IndexError, KeyError) as exc:
                    log.debug("share state request %s to broker %s: %s", api_key, node, exc)
            if time.monotonic() + backoff > deadline:
                return {"error_code": code if code in _RETRIABLE else E.COORDINATOR_NOT_AVAILABLE,
                        "error_message": None}
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, 1.0)

    async def _coordinator(self, key: Key) -> int | None:
        image = self.image
        if image.topic(SHARE_GROUP_STATE_TOPIC) is None and await self.ensure_topic() != E.NONE:
            return None
        part = image.partition(SHARE_GROUP_STATE_TOPIC, self.coordinator_partition(key))
        if part is None or part.leader < 0 or not image.is_alive(part.leader):
            return None
        return part.leader

    # ------------------------------------------------------------------ share-partition leaders
    async def read_state(self, group_id: str, topic_id: uuid.UUID, partition: int, leader_epoch: int) -> PersistedState:
        from broker.replication.share.manager import PersistedState

        entry = await self._call(Key(group_id, topic_id, partition), ApiKey.READ_SHARE_GROUP_STATE, 0,
                                 {"leader_epoch": leader_epoch})
        if entry["error_code"] != E.NONE:
            return PersistedState(entry["error_code"])
        return PersistedState(E.NONE, entry["state_epoch"], entry["start_offset"], tuple(
            (b["first_offset"], b["last_offset"], b["delivery_state"], b["delivery_count"])
            for b in entry["state_batches"]))

    async def write_state(self, group_id: str, topic_id: uuid.UUID, partition: int, state_epoch: int,
                          leader_epoch: int, start_offset: int, batches: list[tuple[int, int, int, int]]) -> int:
        entry = await self._call(Key(group_id, topic_id, partition), ApiKey.WRITE_SHARE_GROUP_STATE, 1, {
            "state_epoch": state_epoch, "leader_epoch": leader_epoch, "start_offset": start_offset,
            "delivery_complete_count": -1, "state_batches": [
                {"first_offset": f, "last_offset": lst, "delivery_state": s, "delivery_count": c}
                for f, lst, s, c in batches]})
        return int(entry["error_code"])

    # ------------------------------------------------------------------ the group coordinator
    async def _each(self, group_id: str, topic_id: uuid.UUID, partitions: Mapping[int, Any], api_key: int,
                    version: int, body: Callable[[int, Any], dict[str, Any]]) -> dict[int, dict[str, Any]]:
        keys = sorted(partitions)
        entries = await asyncio.gather(*(self._call(Key(group_id, topic_id, p), api_key, version,
                                                    body(p, partitions[p])) for p in keys))
        return dict(zip(keys, entries, strict=True))

    async def initialize(self, group_id: str, topic_id: uuid.UUID, partitions: Mapping[int, int],
                         state_epoch: int) -> dict[int, int]:
        """InitializeShareGroupState of ``partitions`` (index -> start offset): index -> error code."""
        entries = await self._each(group_id, topic_id, partitions, ApiKey.INITIALIZE_SHARE_GROUP_STATE, 0,
                                   lambda _p, start: {"state_epoch": state_epoch, "start_offset": start})
        return {p: int(e["error_code"]) for p, e in entries.items()}

    async def delete(self, group_id: str, topic_id: uuid.UUID, partitions: list[int]) -> dict[int, int]:
        entries = await self._each(group_id, topic_id, dict.fromkeys(partitions), ApiKey.DELETE_SHARE_GROUP_STATE, 0,
                                   lambda _p, _v: {})
        return {p: int(e["error_code"]) for p, e in entries.items()}

    async def summary(self, group_id: str, topic_id: uuid.UUID, partitions: list[int]) -> dict[int, dict[str, Any]]:
        """ReadShareGroupStateSummary: index -> its entry (error_code, start_offset, leader_epoch, state_epoch,
        delivery_complete_count)."""
        return await self._each(group_id, topic_id, dict.fromkeys(partitions), ApiKey.READ_SHARE_GROUP_STATE_SUMMARY,
                                1, lambda _p, _v: {"leader_epoch": -1})
