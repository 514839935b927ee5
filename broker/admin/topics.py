"""TopicAdmin: creating, deleting and growing topics from any broker, through the metadata store.

Any broker accepts CreateTopics / DeleteTopics / CreatePartitions (and creates
topics on first use: auto-creation, the offsets topic).  It validates the
request (names, partition counts, replication against the live brokers,
configs), places replicas (:mod:`broker.cluster.placement`) and writes the
topic record with a compare-and-set; the controller then gives the new
partitions leaders.  Like Kafka's delayed create-topics, the answer waits
(within the request's timeout) until this broker's metadata image shows
leaders for every new partition, so a client's next Metadata finds them.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass

from broker.cluster.image import MetadataImage
from broker.cluster.internal_topics import InternalTopicSpec, is_internal_topic
from broker.cluster.kv import KVError, KVUnavailableError
from broker.cluster.metadata import MetadataService
from broker.cluster.placement import PlacementError, assign_replicas
from broker.cluster.records import TopicRecord, topic_key
from broker.log.errors import LogError
from broker.log.manager import LogManager, validate_topic_name
from protocol.error_codes import ErrorCode

log = logging.getLogger("kbroker.topics")

__all__ = ["TopicAdmin", "TopicError"]

E = ErrorCode


@dataclass
class TopicError(Exception):
    code: int
    message: str


class TopicAdmin:
    def __init__(self, metadata: MetadataService, logs: LogManager, *, node_id: int) -> None:
        self.metadata = metadata
        self.image: MetadataImage = metadata.image
        self.logs = logs
        self.node_id = node_id
        self._changed = asyncio.Event()
        metadata.subscribe(lambda delta, image: self._changed.set())

    # -- waiting on the image ---------------------------------------------------------
    async def wait_until(self, ready: Callable[[], bool], timeout_s: float) -> bool:
        """Wait until ``ready()`` holds in the image (or the timeout passes); returns whether it held."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + max(0.0, timeout_s)
        while not ready():
            remaining = deadline - loop.time()
            if remaining <= 0:
                return False
            self._changed.clear()
            try:
                await asyncio.wait_for(self._changed.wait(), remaining)
            except TimeoutError:
                return ready()
        return True

    def has_leaders(self, name: str, partitions: Sequence[int] | None = None) -> bool:
        t = self.image.topic(name)
        if t is None:
            return False
        wanted = range(t.partition_count) if partitions is None else partitions
        for p in wanted:
            part = t.partitions.get(p)
            if part is None or part.leader < 0 or not self.image.is_alive(part.leader):
                return False
        return True

    # -- create ----------------------------------------------------------------------
    def plan(self, name: str, partitions: int, replication_factor: int,
             assignment: Sequence[Sequence[int]] | None, configs: Mapping[str, str | None]) -> TopicRecord:
        """Validate a new topic and place its replicas; raises TopicError with Kafka's code."""
        try:
            validate_topic_name(name)
        except LogError as exc:
            raise TopicError(E.INVALID_TOPIC_EXCEPTION, f"Topic name {name!r} is illegal: {exc.detail}") from None
        if self.image.topic(name) is not None:
            raise TopicError(E.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.")
        live = sorted(self.image.brokers)
        if assignment:
            replicas = [tuple(r) for r in assignment]
            for r in replicas:
                if not r or len(set(r)) != len(r):
                    raise TopicError(E.INVALID_REPLICA_ASSIGNMENT, "each partition needs distinct replicas")
                if any(b not in self.image.brokers for b in r):
                    raise TopicError(E.INVALID_REPLICA_ASSIGNMENT,
                                     f"Replica assignment {list(r)} names brokers that are not alive")
            if len({len(r) for r in replicas}) != 1:
                raise TopicError(E.INVALID_REPLICA_ASSIGNMENT, "all partitions need the same replication factor")
        else:
            if partitions <= 0:
                raise TopicError(E.INVALID_PARTITIONS, "Number of partitions must be larger than 0.")
            if replication_factor <= 0:
                raise TopicError(E.INVALID_REPLICATION_FACTOR, "Replication factor must be larger than 0.")
            if replication_factor > len(live):
                raise TopicError(E.INVALID_REPLICATION_FACTOR,
                                 f"Unable to replicate the partition {replication_factor} time(s): The target "
                                 f"replication factor of {replication_factor} cannot be reached because only "
                                 f"{len(live)} broker(s) are registered.")
            racks = {b: self.image.brokers[b].rack for b in live}
            try:
                replicas = assign_replicas(live, partitions, replication_factor, racks=racks)
            except PlacementError as exc:
                raise TopicError(E.INVALID_REPLICATION_FACTOR, str(exc)) from None
        try:
            overrides = self.logs.validate_configs(configs)
        except LogError as exc:
            raise TopicError(exc.error_code, exc.detail or str(exc)) from None
        return TopicRecord(name, uuid.uuid4(), tuple(replicas), overrides)

    async def create(self, record: TopicRecord, timeout_s: float) -> None:
        """Write a planned topic; wait (up to ``timeout_s``) for its partitions to have leaders."""
        created = await self._write(lambda: self.metadata.create_topic(record), timeout_s)
        if not created and not await self._is_ours(record):
            raise TopicError(E.TOPIC_ALREADY_EXISTS, f"Topic '{record.name}' already exists.")
        shown = [list(r) for r in record.assignment[:8]]
        log.info("created topic %s (%s): %d partitions, replicas %s%s", record.name, record.topic_id,
                 record.partitions, shown, " ..." if record.partitions > len(shown) else "")
        await self.wait_until(lambda: self.has_leaders(record.name), timeout_s)

    async def ensure_internal_topic(self, spec: InternalTopicSpec, timeout_s: float) -> int:
        """Create an internal topic (``__consumer_offsets``, ``__transaction_state``) once enough brokers are
        alive for its replication factor; E.NONE when it exists (with leaders), as Kafka's FindCoordinator."""
        if self.image.topic(spec.name) is None:
            if len(self.image.brokers) < spec.replication_factor:
                return E.COORDINATOR_NOT_AVAILABLE
            try:
                record = self.plan(spec.name, spec.partitions, spec.replication_factor, None, spec.configs)
                await self.create(record, timeout_s)
            except TopicError as exc:
                if exc.code != E.TOPIC_ALREADY_EXISTS:
                    log.warning("cannot create %s: %s", spec.name, exc.message)
                    return E.COORDINATOR_NOT_AVAILABLE
        return E.NONE

    # -- delete / grow ---------------------------------------------------------------
    async def delete(self, name: str) -> None:
        t = self.image.topic(name)
        if t is None:
            raise TopicError(E.UNKNOWN_TOPIC_OR_PARTITION, "This server does not host this topic-partition.")
        if is_internal_topic(name):
            raise TopicError(E.INVALID_TOPIC_EXCEPTION, "Internal topics cannot be deleted")
        deleted = await self._write(lambda: self.metadata.delete_topic(name, t.topic_id), 5.0)
        if not deleted:
            raise TopicError(E.UNKNOWN_TOPIC_OR_PARTITION, "This server does not host this topic-partition.")
        log.info("deleted topic %s (%s)", name, t.topic_id)
        await self.wait_until(lambda: self.image.topic(name) is None, 5.0)

    def plan_partitions(self, name: str, count: int, assignment: Sequence[Sequence[int]] | None) -> TopicRecord:
        t = self.image.topic(name)
        if t is None:
            raise TopicError(E.UNKNOWN_TOPIC_OR_PARTITION, "unknown topic")
        if is_internal_topic(name):
            raise TopicError(E.INVALID_TOPIC_EXCEPTION, "internal topic")
        current = t.partition_count
        if count <= current:
            raise TopicError(E.INVALID_PARTITIONS, f"Topic currently has {current} partitions, which is higher "
                                                   f"than or equal to the requested {count}.")
        first = t.partitions.get(0)
        rf = len(first.record.target or first.replicas) if first is not None else \
            len(t.record.assignment[0]) if t.record.assignment else 1
        if assignment is not None:
            if len(assignment) != count - current:
                raise TopicError(E.INVALID_REPLICA_ASSIGNMENT, "assignment count mismatch")
            extra = [tuple(r) for r in assignment]
            if any(len(r) != rf or len(set(r)) != rf or any(b not in self.image.brokers for b in r)
                   for r in extra):
                raise TopicError(E.INVALID_REPLICA_ASSIGNMENT, "bad replica assignment")
        else:
            live = sorted(self.image.brokers)
            if rf > len(live):
                raise TopicError(E.INVALID_REPLICATION_FACTOR,
                                 f"only {len(live)} broker(s) are alive for replication factor {rf}")
            extra = assign_replicas(live, count - current, rf, start_partition=current,
                                    racks={b: self.image.brokers[b].rack for b in live})
        return TopicRecord(name, t.topic_id, (*t.record.assignment, *extra), t.configs)

    async def alter_configs(self, name: str, changes: Mapping[str, str | None] | None = None, *,
                            incremental: bool = True,
                            update: Callable[[dict[str, str]], Mapping[str, str | None]] | None = None,
                            validate_only: bool = False, timeout_s: float = 5.0) -> dict[str, str]:
        """Set (``None``: remove) config overrides of a topic; ``incremental=False`` replaces them all;
        ``update(current overrides)`` computes the new overrides instead (re-run if the topic changes
        meanwhile).  Validated like CreateTopics configs (``validate_only``: nothing is written);
        applied by every replica once its image has the new record.  Returns the new overrides.
        """
        for _ in range(10):
            t = self.image.topic(name)
            if t is None:
                raise TopicError(E.UNKNOWN_TOPIC_OR_PARTITION, f"Topic {name} does not exist")
            merged: dict[str, str | None] = dict(t.configs) if incremental else {}
            if update is not None:
                merged = dict(update(dict(t.configs)))
            for key, value in (changes or {}).items():
                if value is None:
                    merged.pop(key, None)
                else:
                    merged[key] = value
            try:
                overrides = self.logs.validate_configs(merged)
            except LogError as exc:
                raise TopicError(exc.error_code, exc.detail or str(exc)) from None
            if validate_only:
                return overrides
            record = TopicRecord(name, t.topic_id, t.record.assignment, overrides)
            ok = await self._write(lambda r=record, rev=t.mod_revision: self.metadata.update_topic(r, rev), timeout_s)
            await self._wait_for_change(name, t.mod_revision, timeout_s)
            if ok:
                return overrides
        raise TopicError(E.REASSIGNMENT_IN_PROGRESS, "the topic kept changing; retry")

    async def _wait_for_change(self, name: str, revision: int, timeout_s: float) -> None:
        """Wait until the image's record of topic ``name`` is no longer the one at ``revision``."""
        def changed() -> bool:
            t = self.image.topic(name)
            return t is None or t.mod_revision != revision

        await self.wait_until(changed, timeout_s)

    async def _is_ours(self, record: TopicRecord) -> bool:
        """After a create that reported failure: was it ours after all (a retried write that had landed)?"""
        try:
            current = await self.metadata.kv.get(topic_key(record.name))
        except KVError:
            return False
        return current is not None and TopicRecord.decode(current.value).topic_id == record.topic_id

    async def write_with_retry(self, write: Callable[[], Awaitable[bool]], timeout_s: float) -> bool:
        """Another admin write to the metadata store (dynamic broker configs), retried as topic writes are."""
        return await self._write(write, timeout_s)

    async def _write(self, write: Callable[[], Awaitable[bool]], timeout_s: float) -> bool:
        """A metadata-store write, retried while the store is unreachable (within ``timeout_s``).

        A write that failed to reach the store may still have been applied; callers' writes are
        compare-and-set, so a retry of an applied one reports the condition failing instead.
        """
        loop = asyncio.get_running_loop()
        deadline = loop.time() + max(timeout_s, 1.0)
        delay = 0.05
        while True:
            try:
                return await write()
            except KVUnavailableError as exc:
                if loop.time() + delay > deadline:
                    raise TopicError(E.REQUEST_TIMED_OUT, f"metadata store unavailable: {exc}") from None
                await asyncio.sleep(delay)
                delay = min(delay * 2, 1.0)
            except KVError as exc:
                raise TopicError(E.REQUEST_TIMED_OUT, f"metadata store error: {exc}") from None

    async def add_partitions(self, record: TopicRecord, timeout_s: float) -> None:
        t = self.image.topic(record.name)
        if t is None:
            raise TopicError(E.UNKNOWN_TOPIC_OR_PARTITION, "unknown topic")
        ok = await self._write(lambda: self.metadata.update_topic(record, t.mod_revision), timeout_s)
        if not ok:
            raise TopicError(E.REASSIGNMENT_IN_PROGRESS, "the topic changed meanwhile; retry")
        # the new partitions by number: the image may still show the topic with its old count
        await self.wait_until(lambda: self.has_leaders(record.name, range(record.partitions)), timeout_s)
