"""MetadataService: this broker's link to the cluster's metadata store (the asyncio edge).

It registers the broker under a lease (keeping it alive every third of its
TTL), keeps the :class:`~broker.cluster.image.MetadataImage` current from the
store's watch and tells subscribers what changed, campaigns for the controller
role and runs the :class:`~broker.cluster.controller.Controller` while it holds
it, and offers the few writes other components need (topics, ISR changes,
producer-id blocks, elections, dynamic broker configs, users and ACLs) as compare-and-set
transactions; :meth:`MetadataService.wait_for_revision` lets a writer wait until its write is
in this broker's image (read-your-writes for the admin APIs).

The store may be unreachable for a while: the broker keeps the image it has,
reports it (:attr:`store_connected`, logs), resumes the watch from the last
revision it saw when the store returns, and re-registers if its lease expired
meanwhile.  No election happens without the store.  Leadership needs proof,
though: :meth:`may_lead` is true only while the broker's lease is certainly
alive (its last keep-alive was sent less than a lease ago) and its image holds its
current registration — a broker that was paused or cut off past its lease (whose
partitions others may lead by now) takes no writes until it has caught up.

A failure the broker cannot live with — its node id registered by another live
broker while its own lease had lapsed, or a background task dying — is reported
to ``on_fatal`` (the broker then stops with an error) instead of leaving it
running unregistered.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from broker.cluster.controller import Controller, ControllerSettings, write_changes
from broker.cluster.image import MetadataDelta, MetadataImage
from broker.cluster.kv import (
    Compare,
    Delete,
    Get,
    KVCompactedError,
    KVError,
    KVUnavailableError,
    LeaseNotFoundError,
    MetadataKV,
    Put,
    absent,
    mod_is,
)
from broker.cluster.records import (
    CLUSTER_ID_KEY,
    CONTROLLER_EPOCH_KEY,
    CONTROLLER_KEY,
    PRODUCER_ID_BLOCK_KEY,
    BrokerConfigRecord,
    BrokerRegistration,
    ControllerRecord,
    PartitionChange,
    PartitionRecord,
    TopicRecord,
    broker_config_key,
    broker_key,
    group_config_key,
    partition_key,
    partitions_prefix,
    topic_key,
)

log = logging.getLogger("kbroker.cluster")

__all__ = ["DuplicateBrokerError", "MetadataService", "MetadataSettings"]

Subscriber = Callable[[MetadataDelta, MetadataImage], None]


class DuplicateBrokerError(RuntimeError):
    """Another live broker is registered with this node id."""


@dataclass(frozen=True, slots=True)
class MetadataSettings:
    session_timeout_ms: int = 3000
    controller: ControllerSettings = field(default_factory=ControllerSettings)
    imbalance_check_interval_s: float = 300.0
    producer_id_block_size: int = 1000


class MetadataService:
    def __init__(self, kv: MetadataKV, registration: BrokerRegistration, settings: MetadataSettings, *,
                 cluster_id_hint: str | None = None,
                 on_fatal: Callable[[BaseException], None] | None = None) -> None:
        self.kv = kv
        self.registration = registration
        self.node_id = registration.node_id
        self.settings = settings
        self.cluster_id_hint = cluster_id_hint
        self.image = MetadataImage()
        self.controller = Controller(kv, self.image, settings.controller,
                                     imbalance_check_interval_s=settings.imbalance_check_interval_s)
        self.lease_id = 0
        self.broker_epoch = -1
        self.store_connected = False
        self.last_store_contact = time.monotonic()
        #: until when (monotonic seconds) the lease is certainly alive: the last keep-alive's send time + TTL
        self.lease_deadline = 0.0
        self.lease_ttl_s = settings.session_timeout_ms / 1000
        self.on_fatal = on_fatal
        self._keepalive_now = asyncio.Event()
        self._subscribers: list[Subscriber] = []
        self._tasks: list[asyncio.Task[None]] = []
        self._campaign = asyncio.Event()
        self._stopping = False
        self._loaded = asyncio.Event()
        self._revision_waiters: list[tuple[int, asyncio.Future[None]]] = []

    # -- lifecycle -------------------------------------------------------------------
    def subscribe(self, fn: Subscriber) -> None:
        self._subscribers.append(fn)

    async def start(self, connect_timeout_s: float = 60.0) -> None:
        """Connect, agree on the cluster id, register, load the image; then run in the background."""
        deadline = time.monotonic() + connect_timeout_s
        while True:
            try:
                await self.kv.connect()
                break
            except KVUnavailableError as exc:
                if time.monotonic() > deadline:
                    raise
                log.warning("metadata store %s unavailable (%s); retrying", self.kv.description, exc)
                await asyncio.sleep(1.0)
        self.store_connected = True
        await self._ensure_cluster_id()
        await self._register()
        items, revision = await self.kv.get_prefix("")
        self._publish(self.image.load(items, revision))
        self._loaded.set()
        self._tasks = [asyncio.ensure_future(self._watch_loop()), asyncio.ensure_future(self._keepalive_loop()),
                       asyncio.ensure_future(self._campaign_loop())]
        for task in self._tasks:
            task.add_done_callback(self._task_done)
        self._campaign.set()

    def _task_done(self, task: asyncio.Task[None]) -> None:
        if task.cancelled() or self._stopping:
            return
        exc = task.exception() or RuntimeError(f"{task.get_coro()!r} ended")
        log.critical("broker %d lost its link to the cluster: %s", self.node_id, exc)
        if self.on_fatal is not None:
            self.on_fatal(exc)

    async def stop(self) -> None:
        """Leave the cluster: give up the controller role and the registration (controlled shutdown)."""
        self._stopping = True
        self.controller.deactivate()
        for task in self._tasks:
            task.cancel()
        self._tasks = []
        if self.lease_id:
            try:
                await asyncio.wait_for(self.kv.revoke_lease(self.lease_id), 3)
            except (KVError, TimeoutError) as exc:
                log.warning("could not deregister from %s: %s", self.kv.description, exc)
        await self.kv.close()

    @property
    def cluster_id(self) -> str:
        return self.image.cluster_id or ""

    @property
    def is_controller(self) -> bool:
        return self.controller.active

    # -- startup steps ---------------------------------------------------------------
    async def _ensure_cluster_id(self) -> None:
        proposed = self.cluster_id_hint or uuid.uuid4().hex[:22]
        result = await self.kv.txn([absent(CLUSTER_ID_KEY)],
                                   [Put(CLUSTER_ID_KEY, json.dumps({"id": proposed}).encode()), Get(CLUSTER_ID_KEY)],
                                   [Get(CLUSTER_ID_KEY)])
        self.image.cluster_id = json.loads(result.gets[0][0].value)["id"]

    async def _register(self) -> None:
        """Register under a new lease; a stale registration of this very data directory is taken over."""
        key = broker_key(self.node_id)
        granted_at = time.monotonic()
        lease_id, ttl = await self.kv.grant_lease(self.settings.session_timeout_ms)
        value = self.registration.encode()
        for _ in range(3):
            result = await self.kv.txn([absent(key)], [Put(key, value, lease=lease_id), Get(key)], [Get(key)])
            current = result.gets[0][0] if result.gets and result.gets[0] else None
            if result.succeeded and current is not None:
                self.lease_id = lease_id
                self.lease_ttl_s = ttl / 1000
                self.lease_deadline = granted_at + self.lease_ttl_s
                self.broker_epoch = current.create_revision
                self.last_store_contact = time.monotonic()
                log.info("registered broker %d in %s (epoch %d, session %d ms)", self.node_id,
                         self.kv.description, self.broker_epoch, ttl)
                return
            if current is None:
                continue
            other = BrokerRegistration.decode(current.value)
            if other.dir_id and other.dir_id == self.registration.dir_id:
                # Our own previous incarnation (this process holds the data directory's lock, so it is dead).
                log.info("taking over the registration of a previous run of broker %d", self.node_id)
                await self.kv.revoke_lease(current.lease)
                continue
            await self.kv.revoke_lease(lease_id)
            eps = ", ".join(f"{e.host}:{e.port}" for e in other.endpoints)
            raise DuplicateBrokerError(f"node id {self.node_id} is already registered by a live broker ({eps}) "
                                       f"in {self.kv.description}")
        raise KVError("could not register the broker")

    # -- background loops ------------------------------------------------------------
    def _publish(self, delta: MetadataDelta) -> None:
        self._wake_revision_waiters()
        if not delta:
            return
        controller = self.image.controller
        if delta.controller_changed or delta.full:
            mine = controller is not None and controller.broker_id == self.node_id and self.controller.active
            if self.controller.active and not mine:
                log.info("broker %d is no longer the controller", self.node_id)
                self.controller.deactivate()
            if controller is None:
                self._campaign.set()
        if delta.brokers_removed and controller is not None and controller.broker_id in delta.brokers_removed:
            self._campaign.set()
        for fn in self._subscribers:
            try:
                fn(delta, self.image)
            except Exception:
                log.exception("metadata subscriber failed")
        self.controller.poke()

    async def _watch_loop(self) -> None:
        backoff = 0.1
        while not self._stopping:
            try:
                async for events in self.kv.watch("", self.image.revision + 1):
                    if not self.store_connected:
                        log.info("metadata store %s reachable again", self.kv.description)
                    self.store_connected = True
                    self.last_store_contact = time.monotonic()
                    backoff = 0.1
                    self._publish(self.image.apply(events))
            except KVCompactedError:
                log.info("metadata watch fell behind a compaction; reloading the image")
                try:
                    items, revision = await self.kv.get_prefix("")
                    self._publish(self.image.load(items, revision))
                except KVError as exc:
                    self._lost(exc)
            except KVError as exc:
                self._lost(exc)
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, 2.0)

    def _lost(self, exc: BaseException) -> None:
        if self.store_connected:
            log.warning("metadata store %s unreachable (%s): serving the leadership this broker has; "
                        "no elections until it returns", self.kv.description, exc)
        self.store_connected = False

    async def _keepalive_loop(self) -> None:
        interval = max(0.1, self.settings.session_timeout_ms / 3000)
        while not self._stopping:
            try:
                await asyncio.wait_for(self._keepalive_now.wait(), interval)
            except TimeoutError:
                pass
            self._keepalive_now.clear()
            sent = time.monotonic()
            try:
                ttl_ms = await self.kv.keep_alive(self.lease_id)
                self.lease_deadline = max(self.lease_deadline, sent + ttl_ms / 1000)
                self.last_store_contact = time.monotonic()
                self.store_connected = True
            except LeaseNotFoundError:
                log.warning("broker %d's registration lease expired; registering again as a new incarnation",
                            self.node_id)
                await self._reregister()
            except KVError as exc:
                self._lost(exc)
            except Exception:  # anything else: say so and keep the registration alive
                log.exception("broker %d: keeping the registration alive failed; retrying", self.node_id)

    async def _reregister(self) -> None:
        try:
            await self._register()
            self._campaign.set()
        except DuplicateBrokerError as exc:
            log.critical("node id %d was taken by another broker while this one was away", self.node_id)
            self._stopping = True
            if self.on_fatal is not None:
                self.on_fatal(exc)
        except KVError as exc:
            self._lost(exc)

    # -- leadership proof ------------------------------------------------------------
    def may_lead(self) -> bool:
        """True while this broker certainly still holds its registration, and its image includes it:
        no other broker can have been given its leaderships because it was gone.  A store whose
        leases never expire (one broker on its local store) always allows it."""
        if not self.kv.leases_expire:
            return True
        if time.monotonic() >= self.lease_deadline:
            self._keepalive_now.set()  # prove it again as soon as possible
            return False
        return self.image.broker_epoch(self.node_id) == self.broker_epoch

    # -- controlled shutdown ---------------------------------------------------------
    async def begin_shutdown(self) -> bool:
        """Say in the registration that this broker is shutting down (the controller gives it no new
        leadership; its peers hand it nothing).  False if the store refused or is unreachable."""
        key = broker_key(self.node_id)
        value = dataclasses.replace(self.registration, shutting_down=True).encode()
        try:
            result = await self.kv.txn([Compare(key, "create", "==", self.broker_epoch)],
                                       [Put(key, value, lease=self.lease_id)])
        except KVError as exc:
            log.warning("could not announce the controlled shutdown: %s", exc)
            return False
        return result.succeeded

    async def _campaign_loop(self) -> None:
        while not self._stopping:
            await self._campaign.wait()
            self._campaign.clear()
            controller = self.image.controller
            if controller is not None and self.image.is_alive(controller.broker_id):
                continue
            if controller is not None and controller.broker_id == self.node_id and self.controller.active:
                continue
            try:
                await self._try_become_controller()
            except KVError as exc:
                self._lost(exc)
                await asyncio.sleep(0.5)
                self._campaign.set()

    async def _try_become_controller(self) -> None:
        epoch = self.image.controller_epoch + 1
        compares = [absent(CONTROLLER_KEY), mod_is(CONTROLLER_EPOCH_KEY, self.image.controller_epoch_revision)]
        result = await self.kv.txn(compares, [
            Put(CONTROLLER_KEY, ControllerRecord(self.node_id, epoch).encode(), lease=self.lease_id),
            Put(CONTROLLER_EPOCH_KEY, json.dumps({"epoch": epoch}).encode()),
        ])
        if result.succeeded:
            log.info("broker %d is the controller (epoch %d)", self.node_id, epoch)
            self.controller.activate(result.revision)

    async def wait_loaded(self) -> None:
        await self._loaded.wait()

    def _wake_revision_waiters(self) -> None:
        if not self._revision_waiters:
            return
        revision = self.image.revision
        waiting = []
        for wanted, future in self._revision_waiters:
            if wanted <= revision:
                if not future.done():
                    future.set_result(None)
            elif not future.done():
                waiting.append((wanted, future))
        self._revision_waiters = waiting

    async def wait_for_revision(self, revision: int, timeout_s: float) -> bool:
        """Wait until the image includes store revision ``revision``; False if it did not in time."""
        if self.image.revision >= revision:
            return True
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._revision_waiters.append((revision, future))
        try:
            await asyncio.wait_for(future, timeout_s)
        except TimeoutError:
            return False
        return True

    # -- writes for other components -------------------------------------------------
    async def create_topic(self, record: TopicRecord) -> bool:
        """Create the topic if absent (the controller then gives its partitions leaders)."""
        result = await self.kv.txn([absent(topic_key(record.name))], [Put(topic_key(record.name), record.encode())])
        return result.succeeded

    async def delete_topic(self, name: str, topic_id: uuid.UUID) -> bool:
        current = await self.kv.get(topic_key(name))
        if current is None or TopicRecord.decode(current.value).topic_id != topic_id:
            return False
        result = await self.kv.txn([Compare(topic_key(name), "mod", "==", current.mod_revision)],
                                   [Delete(topic_key(name)), Delete(partitions_prefix(name), prefix=True)])
        return result.succeeded

    async def update_topic(self, record: TopicRecord, expected_revision: int) -> bool:
        """Replace a topic record (new partitions, configs) if unchanged since ``expected_revision``."""
        result = await self.kv.txn([mod_is(topic_key(record.name), expected_revision)],
                                   [Put(topic_key(record.name), record.encode())])
        return result.succeeded

    async def set_broker_configs(self, broker: int | None, configs: dict[str, str],
                                 expected_revision: int) -> bool:
        """Replace the dynamic configs of ``broker`` (None: the cluster-wide default) if their record is
        unchanged since ``expected_revision`` (0: absent); an empty ``configs`` deletes the record."""
        return await self._set_configs(broker_config_key(broker), configs, expected_revision)

    async def set_group_configs(self, group: str, configs: dict[str, str], expected_revision: int) -> bool:
        """Replace the configs of ``group`` as :meth:`set_broker_configs` does a broker's."""
        return await self._set_configs(group_config_key(group), configs, expected_revision)

    async def _set_configs(self, key: str, configs: dict[str, str], expected_revision: int) -> bool:
        op = Put(key, BrokerConfigRecord(dict(configs)).encode()) if configs else Delete(key)
        result = await self.kv.txn([mod_is(key, expected_revision)], [op])
        return result.succeeded

    def incarnation_checks(self, brokers: Mapping[int, int]) -> list[Compare]:
        """Compares that hold while this broker and each of ``brokers`` (id -> broker epoch) are still
        registered as those incarnations, and each of ``brokers`` has not begun a shutdown."""
        checks = [Compare(broker_key(self.node_id), "create", "==", self.broker_epoch)]
        for broker, epoch in brokers.items():
            if broker == self.node_id:
                continue
            checks.append(Compare(broker_key(broker), "create", "==", epoch))
            revision = self.image.broker_revisions.get(broker)
            if revision is not None:
                checks.append(mod_is(broker_key(broker), revision))
        return checks

    async def alter_partition(self, topic: str, partition: int, expected_revision: int,
                              record: PartitionRecord, joining: Mapping[int, int] | None = None) -> bool:
        """A leader's ISR change (Kafka's AlterPartition), applied only if nobody changed the partition
        meanwhile, this broker is still the registered incarnation that leads it, and every broker
        ``joining`` the ISR is alive as the incarnation given (id -> broker epoch)."""
        key = partition_key(topic, partition)
        result = await self.kv.txn([mod_is(key, expected_revision), *self.incarnation_checks(joining or {})],
                                   [Put(key, record.encode())])
        return result.succeeded

    async def hand_over(self, changes: list[tuple[PartitionChange, int, int]]) -> set[tuple[str, int]]:
        """Controlled shutdown: write leadership moves ``(change, successor, successor's broker epoch)``,
        each only if the partition is unchanged, this broker still the registered incarnation and the
        successor still alive as that incarnation and not shutting down.  Returns the partitions moved."""
        moved: set[tuple[str, int]] = set()
        for change, successor, epoch in changes:
            key = partition_key(change.topic, change.partition)
            result = await self.kv.txn([mod_is(key, change.expected_revision),
                                        *self.incarnation_checks({successor: epoch})],
                                       [Put(key, change.record.encode())])
            if result.succeeded:
                moved.add((change.topic, change.partition))
        return moved

    async def reassign(self, changes: list[PartitionChange]) -> set[tuple[str, int]]:
        """Write reassignments started or cancelled (AlterPartitionReassignments), each only if its
        partition is unchanged since it was planned; returns the partitions written."""
        written: set[tuple[str, int]] = set()
        for change in changes:
            key = partition_key(change.topic, change.partition)
            result = await self.kv.txn([mod_is(key, change.expected_revision)], [Put(key, change.record.encode())])
            if result.succeeded:
                written.add((change.topic, change.partition))
        return written

    async def elect(self, changes: list[PartitionChange]) -> set[tuple[str, int]]:
        """Write elections (ElectLeaders); returns the partitions written."""
        written, _ = await write_changes(self.kv, changes, [])
        return {(c.topic, c.partition) for c in written}

    async def write_records(self, values: Mapping[str, bytes | None], expected: Mapping[str, int]) -> int | None:
        """Put (bytes) or delete (None) each key, all at once, if every key's mod revision is still
        ``expected[key]`` (0 or missing: the key does not exist).  Returns the store revision of the
        write, or None when some key changed meanwhile (re-read and plan again)."""
        compares = [mod_is(key, expected.get(key, 0)) for key in values]
        ops: list[Put | Delete] = [Put(key, value) if value is not None else Delete(key) for key, value in values.items()]
        result = await self.kv.txn(compares, ops)
        return result.revision if result.succeeded else None

    async def allocate_producer_ids(self) -> tuple[int, int]:
        """A block ``[start, end)`` of producer ids no other broker will ever hand out."""
        size = self.settings.producer_id_block_size
        for _ in range(100):
            current = await self.kv.get(PRODUCER_ID_BLOCK_KEY)
            start = int(json.loads(current.value)["next"]) if current is not None else 0
            rev = current.mod_revision if current is not None else 0
            result = await self.kv.txn([mod_is(PRODUCER_ID_BLOCK_KEY, rev)],
                                       [Put(PRODUCER_ID_BLOCK_KEY, json.dumps({"next": start + size}).encode())])
            if result.succeeded:
                return start, start + size
        raise KVError("could not allocate a producer id block (too much contention)")
