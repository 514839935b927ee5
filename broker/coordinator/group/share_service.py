"""ShareGroupService: what the group coordinator does for share groups with the share coordinator — the
asyncio edge between a shard's share groups (:mod:`broker.coordinator.group.share_group`) and the share
state they own (:class:`~broker.coordinator.share.persister.SharePersister`).

* **Initialisation**: the share-state initialisations a shard asks for (partitions newly subscribed,
  retries) go out as InitializeShareGroupState; their outcome goes back to the shard, which then
  assigns the partitions (or retries later).
* **DescribeShareGroupOffsets (90)**: each partition's start offset from the share coordinator
  (ReadShareGroupStateSummary) and, v1, its lag: the partition's end (high watermark, asked of its
  leader) minus the start offset minus the records done beyond it.
* **AlterShareGroupOffsets (91)**: an Empty group's (created if missing) partitions are initialised
  again with the given start offsets (state epoch: the group epoch).
* **DeleteShareGroupOffsets (92)** and **DeleteGroups** of a share group: its share state is deleted
  first; the group (or its topics' state metadata) goes only once that succeeded.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Awaitable, Callable, Hashable, Iterator
from typing import TYPE_CHECKING, Any

from broker.coordinator.runtime import now_ms
from broker.coordinator.share.state import share_lag
from protocol.api import ApiKey
from protocol.error_codes import ErrorCode
from protocol.primitives import Obj

if TYPE_CHECKING:
    from broker.cluster.image import MetadataImage
    from broker.coordinator.group.coordinator import GroupCoordinator
    from broker.coordinator.group.service import GroupService, GroupShard
    from broker.coordinator.group.share_group import ShareInit
    from broker.coordinator.share.persister import SharePersister
    from broker.coordinator.txn.channel import TxnChannel
    from broker.replication.replica_manager import ReplicaManager

log = logging.getLogger("kbroker.share")

__all__ = ["ShareGroupService"]

E = ErrorCode
Topics = dict[uuid.UUID, tuple[str, frozenset[int]]]


class ShareGroupService:
    def __init__(self, groups: GroupService, persister: SharePersister, *, image: MetadataImage,
                 replica: ReplicaManager, channel: TxnChannel) -> None:
        self.groups = groups
        self.persister = persister
        self.image = image
        self.replica = replica
        self.channel = channel
        self._tasks: set[asyncio.Future[Any]] = set()

    # ------------------------------------------------------------------ initialisation
    def after_effects(self, shard: GroupShard) -> None:
        """Send the initialisations the shard asked for."""
        coordinator = shard.coordinator
        if coordinator is None:
            return
        for init in coordinator.share.take_initializations():
            task = asyncio.ensure_future(self._initialize(shard.partition, init))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _initialize(self, partition: int, init: ShareInit) -> None:
        try:
            codes = await self.persister.initialize(init.group_id, init.topic_id, init.partitions, init.state_epoch)
        except Exception:
            log.exception("initialising the share state of %s %s failed", init.group_id, init.topic_name)
            codes = dict.fromkeys(init.partitions, int(E.UNKNOWN_SERVER_ERROR))
        done = [p for p, code in codes.items() if code == E.NONE]
        failed = [p for p, code in codes.items() if code != E.NONE]
        for parts, ok in ((done, True), (failed, False)):
            if parts:
                result = self._on_shard(partition, lambda c, token, parts=parts, ok=ok: c.share_initialized(
                    now_ms(), init.group_id, init.topic_id, parts, ok, token))
                if not isinstance(result, dict):
                    await result

    def _on_shard(self, partition: int, call: Callable[[GroupCoordinator, Hashable], Any]) -> Any:
        return self.groups.runtime.run_on_partition(partition, call, lambda code: {"error_code": code})

    async def _state_change(self, group_id: str, topics: Topics, **kw: bool) -> dict[str, Any]:
        shard, code = self.groups.runtime.shard(self.groups.partition_for(group_id))
        if shard is None:
            return {"error_code": code, "state_epoch": -1}
        result = self._on_shard(shard.partition, lambda c, token: c.share_state_change(now_ms(), group_id, topics,
                                                                                       token, **kw))
        return result if isinstance(result, dict) else await result

    # ------------------------------------------------------------------ DescribeShareGroupOffsets
    async def describe_offsets(self, version: int, req: Obj) -> Obj:
        groups = await asyncio.gather(*(self._describe_group(version, g) for g in req.groups))
        return Obj(throttle_time_ms=0, groups=list(groups))

    async def _describe_group(self, version: int, g: Any) -> dict[str, Any]:
        gid = g.group_id
        shard, code = self.groups.runtime.shard(self.groups.partition_for(gid))
        group = shard.coordinator.share.groups.get(gid) if shard is not None and shard.coordinator else None
        if shard is None or group is None:
            return {"group_id": gid, "topics": [], "error_code": code if shard is None else E.GROUP_ID_NOT_FOUND,
                    "error_message": None if shard is None else f"Group {gid} is not a share group."}
        known = group.state_partitions()
        by_name = {name: (tid, parts) for tid, (name, parts) in known.items()}
        if g.topics is None:
            wanted = [(name, tid, sorted(parts)) for name, (tid, parts) in sorted(by_name.items())]
        else:
            wanted = []
            for t in g.topics:
                tid = by_name.get(t.topic_name, (None, None))[0]
                if tid is None:
                    tid = self._topic_id(t.topic_name)
                wanted.append((t.topic_name, tid, list(t.partitions)))
        topics = []
        for name, tid, parts in wanted:
            entries = []
            summaries = await self.persister.summary(gid, tid, parts) if tid is not None and \
                tid in known else {}
            for p in parts:
                s = summaries.get(p)
                start = s["start_offset"] if s is not None and s["error_code"] == E.NONE else -1
                entry = {"partition_index": p, "start_offset": start,
                         "leader_epoch": s["leader_epoch"] if s is not None and start >= 0 else -1,
                         "lag": -1, "error_code": E.NONE, "error_message": None}
                if s is not None and s["error_code"] not in (E.NONE,):
                    entry["error_code"] = s["error_code"]
                if version >= 1 and start >= 0:
                    end = await self._end_offset(name, p)
                    done = s["delivery_complete_count"] if s is not None else 0
                    if end >= 0:
                        entry["lag"] = share_lag(end, start, done)
                entries.append(entry)
            topics.append({"topic_name": name, "topic_id": tid or uuid.UUID(int=0), "partitions": entries})
        return {"group_id": gid, "topics": topics, "error_code": E.NONE, "error_message": None}

    def _topic_id(self, name: str) -> uuid.UUID | None:
        t = self.image.topic(name)
        return None if t is None else t.topic_id

    async def _end_offset(self, topic: str, partition: int) -> int:
        """The partition's high watermark, from its leader (this broker, or asked with ListOffsets)."""
        local = self.replica.partitions.get((topic, partition))
        if local is not None and local.is_leader:
            return local.log.high_watermark
        part = self.image.partition(topic, partition)
        if part is None or part.leader < 0:
            return -1
        try:
            resp = await self.channel.request(part.leader, ApiKey.LIST_OFFSETS, {
                "replica_id": -1, "isolation_level": 0, "timeout_ms": 5000, "topics": [
                    {"name": topic, "partitions": [{"partition_index": partition, "current_leader_epoch": -1,
                                                    "timestamp": -1}]}]}, version=7, timeout_ms=5000)
            entry = resp["topics"][0]["partitions"][0]
            return int(entry["offset"]) if entry["error_code"] == E.NONE else -1
        except Exception:
            return -1

    # ------------------------------------------------------------------ AlterShareGroupOffsets
    async def alter_offsets(self, version: int, req: Obj) -> Obj:
        gid = req.group_id
        responses = []
        topics: Topics = {}
        offsets: dict[uuid.UUID, dict[int, int]] = {}
        for t in req.topics:
            image_topic = self.image.topic(t.topic_name)
            entries = []
            for p in t.partitions:
                code = E.NONE
                if image_topic is None or not 0 <= p.partition_index < image_topic.partition_count:
                    code = E.UNKNOWN_TOPIC_OR_PARTITION
                else:
                    topics.setdefault(image_topic.topic_id, (t.topic_name, frozenset()))
                    name, parts = topics[image_topic.topic_id]
                    topics[image_topic.topic_id] = (name, parts | {p.partition_index})
                    offsets.setdefault(image_topic.topic_id, {})[p.partition_index] = p.start_offset
                entries.append({"partition_index": p.partition_index, "error_code": code, "error_message": None})
            responses.append({"topic_name": t.topic_name,
                              "topic_id": image_topic.topic_id if image_topic else uuid.UUID(int=0),
                              "partitions": entries})
        if not gid:
            return Obj(throttle_time_ms=0, error_code=E.INVALID_GROUP_ID, error_message=None, responses=[])
        marked = await self._state_change(gid, topics)
        if marked["error_code"] != E.NONE:
            return Obj(throttle_time_ms=0, error_code=marked["error_code"], error_message=None, responses=responses)
        results = await asyncio.gather(*(self.persister.initialize(gid, tid, offsets[tid], marked["state_epoch"])
                                         for tid in topics))
        codes = {(tid, p): code for tid, result in zip(topics, results, strict=True) for p, code in result.items()}
        # the partitions are assignable again whatever the outcome (a failed one keeps its previous state)
        await self._state_change(gid, topics, done=True)
        for r in responses:
            for entry in r["partitions"]:
                code = codes.get((r["topic_id"], entry["partition_index"]))
                if code is not None and code != E.NONE:
                    entry["error_code"] = code
        return Obj(throttle_time_ms=0, error_code=E.NONE, error_message=None, responses=responses)

    # ------------------------------------------------------------------ DeleteShareGroupOffsets, DeleteGroups
    async def delete_offsets(self, version: int, req: Obj) -> Obj:
        gid = req.group_id
        shard, code = self.groups.runtime.shard(self.groups.partition_for(gid))
        group = shard.coordinator.share.groups.get(gid) if shard is not None and shard.coordinator else None
        if shard is None or group is None:
            return Obj(throttle_time_ms=0, error_code=code if shard is None else E.GROUP_ID_NOT_FOUND,
                       error_message=None, responses=[])
        if group.members:
            return Obj(throttle_time_ms=0, error_code=E.NON_EMPTY_GROUP, error_message=None, responses=[])
        by_name = {name: (tid, parts) for tid, (name, parts) in group.initialized.items()}
        responses = []
        doomed: Topics = {}
        for t in req.topics:
            found = by_name.get(t.topic_name)
            if found is None:
                tid = self._topic_id(t.topic_name)
                responses.append({"topic_name": t.topic_name, "topic_id": tid or uuid.UUID(int=0),
                                  "error_code": E.UNKNOWN_TOPIC_OR_PARTITION,
                                  "error_message": "There is no offset information to delete."})
                continue
            doomed[found[0]] = (t.topic_name, found[1])
            responses.append({"topic_name": t.topic_name, "topic_id": found[0], "error_code": E.NONE,
                              "error_message": None})
        if doomed:
            marked = await self._state_change(gid, doomed, deleting=True)
            if marked["error_code"] != E.NONE:
                return Obj(throttle_time_ms=0, error_code=marked["error_code"], error_message=None, responses=[])
            results = await asyncio.gather(*(self.persister.delete(gid, tid, sorted(parts))
                                             for tid, (_, parts) in doomed.items()))
            failed = {tid for tid, result in zip(doomed, results, strict=True) if any(result.values())}
            for r in responses:
                if r["topic_id"] in failed:
                    r["error_code"] = E.UNKNOWN_SERVER_ERROR
            await self._state_change(gid, {t: e for t, e in doomed.items() if t not in failed}, deleting=True,
                                     done=True)
        return Obj(throttle_time_ms=0, error_code=E.NONE, error_message=None, responses=responses)

    def delete_groups(self, version: int, req: Obj, delete: Callable[[Obj], Any]) -> Awaitable[Obj] | Obj:
        """DeleteGroups: the Empty share groups among ``req``'s have their share state deleted first; a group
        whose state could not be deleted is answered with the error and kept (``delete`` runs the rest)."""
        targets = []
        for gid in req.groups_names or ():
            shard, _ = self.groups.runtime.shard(self.groups.partition_for(gid))
            group = shard.coordinator.share.groups.get(gid) if shard is not None and shard.coordinator else None
            if group is not None and not group.members and group.state_partitions():
                targets.append((gid, group.state_partitions()))
        if not targets:
            return delete(req)

        async def run() -> Obj:
            refused: dict[str, int] = {}
            for gid, parts in targets:
                results = await asyncio.gather(*(self.persister.delete(gid, tid, sorted(ps))
                                                 for tid, (_, ps) in parts.items()))
                codes = [c for result in results for c in result.values() if c != E.NONE]
                if codes:
                    refused[gid] = codes[0]
            rest = Obj(req)
            rest["groups_names"] = [g for g in req.groups_names if g not in refused]
            result = delete(rest)
            body = result if isinstance(result, dict) else await result
            answers = {r["group_id"]: r for r in body.get("results") or []}
            body["results"] = [answers.get(g) or {"group_id": g, "error_code": refused.get(g, E.UNKNOWN_SERVER_ERROR)}
                               for g in req.groups_names]
            return body

        return run()

    def collect_metrics(self, max_labelled: int) -> Iterator[Any]:
        """Share groups by state and their members (per group for the first ``max_labelled``)."""
        from prometheus_client.core import GaugeMetricFamily

        by_state = GaugeMetricFamily("kbroker_share_groups", "Share groups by state", labels=["state"])
        members = GaugeMetricFamily("kbroker_share_group_members", "Members per share group", labels=["group"])
        epochs = GaugeMetricFamily("kbroker_share_group_epoch", "Group epoch per share group", labels=["group"])
        counts = {"Empty": 0, "Stable": 0}
        n = 0
        for coordinator in self.groups.coordinators():
            for gid, group in coordinator.share.groups.items():
                counts[group.state] = counts.get(group.state, 0) + 1
                n += 1
                if n <= max_labelled:
                    members.add_metric([gid], len(group.members))
                    epochs.add_metric([gid], group.group_epoch)
        for state, count in counts.items():
            by_state.add_metric([state], count)
        yield from (by_state, members, epochs)

    def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
