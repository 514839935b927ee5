"""The metadata image: every broker's in-memory view of the cluster, built from the store's keys.

:class:`MetadataImage` is rebuilt from a full listing (:meth:`MetadataImage.load`)
and kept current by the store's watch events (:meth:`MetadataImage.apply`), each
call returning a :class:`MetadataDelta` that says what changed, so the replica
manager, the coordinators and the metrics react to exactly that.  No I/O here.

The image tolerates events of one store transaction arriving split (a
partition's record before its topic's): partition records wait for their topic.

It also holds the cluster's security metadata: users (SCRAM credentials, by
name) and ACL bindings (by key); the delta names the users and the ACL keys
that changed, so every broker's credential store and
authorizer follow them.  An unreadable record is logged and left out.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field

from broker.cluster.kv import KeyValue, WatchEvent
from broker.cluster.records import (
    CLUSTER_ID_KEY,
    CONTROLLER_EPOCH_KEY,
    CONTROLLER_KEY,
    NO_LEADER,
    BrokerConfigRecord,
    BrokerRegistration,
    ControllerRecord,
    PartitionRecord,
    TopicRecord,
    parse_key,
)
from broker.security.acl import AclBinding
from broker.security.scram import UserRecord

log = logging.getLogger("kbroker.cluster")

__all__ = ["MetadataDelta", "MetadataImage", "PartitionImage", "TopicImage"]

TopicPartition = tuple[str, int]


@dataclass(slots=True)
class PartitionImage:
    topic: str
    partition: int
    #: the topic's assignment of this partition (what it was created with)
    assigned: tuple[int, ...]
    record: PartitionRecord
    mod_revision: int

    @property
    def replicas(self) -> tuple[int, ...]:
        """Its replicas now (during a reassignment: the target, then those being removed)."""
        return self.record.replicas or self.assigned

    @property
    def leader(self) -> int:
        return self.record.leader

    @property
    def leader_epoch(self) -> int:
        return self.record.leader_epoch

    @property
    def isr(self) -> tuple[int, ...]:
        return self.record.isr


@dataclass(slots=True)
class TopicImage:
    record: TopicRecord
    mod_revision: int
    partitions: dict[int, PartitionImage] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.record.name

    @property
    def topic_id(self) -> uuid.UUID:
        return self.record.topic_id

    @property
    def configs(self) -> dict[str, str]:
        return self.record.configs

    @property
    def partition_count(self) -> int:
        return self.record.partitions


@dataclass(slots=True)
class MetadataDelta:
    """What one batch of events changed.  ``full``: the image was reloaded from scratch.

    A topic deleted and created again (a new topic id) in one batch is in both
    ``topics_deleted`` (with the old id) and ``topics_created``: handle deletions first.
    """

    full: bool = False
    brokers_added: set[int] = field(default_factory=set)
    brokers_removed: set[int] = field(default_factory=set)
    #: registrations rewritten by the same incarnation (e.g. a broker entering controlled shutdown)
    brokers_changed: set[int] = field(default_factory=set)
    topics_created: set[str] = field(default_factory=set)
    topics_deleted: dict[str, uuid.UUID] = field(default_factory=dict)
    topics_changed: set[str] = field(default_factory=set)
    partitions_changed: set[TopicPartition] = field(default_factory=set)
    controller_changed: bool = False
    cluster_id_changed: bool = False
    #: dynamic broker config records that changed: broker ids, None for the cluster-wide default
    broker_configs_changed: set[int | None] = field(default_factory=set)
    #: groups whose group configs changed
    group_configs_changed: set[str] = field(default_factory=set)
    #: users whose credentials were written or deleted
    users_changed: set[str] = field(default_factory=set)
    #: keys of ACL bindings written or deleted (the image has the ones that exist now)
    acls_changed: set[str] = field(default_factory=set)

    def __bool__(self) -> bool:
        return bool(self.full or self.brokers_added or self.brokers_removed or self.brokers_changed
                    or self.topics_created
                    or self.topics_deleted or self.topics_changed or self.partitions_changed
                    or self.controller_changed or self.cluster_id_changed or self.broker_configs_changed
                    or self.group_configs_changed
                    or self.users_changed or self.acls_changed)


class MetadataImage:
    """The cluster as of store revision :attr:`revision`."""

    def __init__(self) -> None:
        self.revision = 0
        self.cluster_id: str | None = None
        self.brokers: dict[int, BrokerRegistration] = {}
        #: the mod revision of each registration (what a write guards to know the broker unchanged)
        self.broker_revisions: dict[int, int] = {}
        self.controller: ControllerRecord | None = None
        self.controller_epoch = 0
        self.controller_epoch_revision = 0
        self.topics: dict[str, TopicImage] = {}
        self.topic_ids: dict[uuid.UUID, str] = {}
        #: dynamic broker configs: broker id (None: the cluster-wide default) -> (record, mod revision)
        self.broker_configs: dict[int | None, tuple[BrokerConfigRecord, int]] = {}
        self.group_configs: dict[str, tuple[BrokerConfigRecord, int]] = {}
        self._waiting: dict[str, dict[int, tuple[PartitionRecord, int]]] = {}
        #: users by name, with the mod revision of their key (what a compare-and-set write guards)
        self.users: dict[str, UserRecord] = {}
        self.user_revisions: dict[str, int] = {}
        #: ACL bindings by key, with their keys' mod revisions
        self.acls: dict[str, AclBinding] = {}
        self.acl_revisions: dict[str, int] = {}

    # -- queries ---------------------------------------------------------------------
    def is_alive(self, node_id: int) -> bool:
        return node_id in self.brokers

    def broker_epoch(self, node_id: int) -> int:
        """The registered incarnation of ``node_id`` (its registration's create revision); -1 if dead."""
        reg = self.brokers.get(node_id)
        return reg.epoch if reg is not None else -1

    def is_shutting_down(self, node_id: int) -> bool:
        reg = self.brokers.get(node_id)
        return reg is not None and reg.shutting_down

    def is_current(self, record: PartitionRecord, node_id: int) -> bool:
        """``node_id`` is alive as the incarnation that joined ``record``'s ISR (or its epoch there is
        unknown): the replica still holds what it had when it joined."""
        reg = self.brokers.get(node_id)
        if reg is None:
            return False
        joined = record.epoch_of(node_id)
        return joined < 0 or joined == reg.epoch

    def topic(self, name: str) -> TopicImage | None:
        return self.topics.get(name)

    def topic_name(self, topic_id: uuid.UUID) -> str | None:
        return self.topic_ids.get(topic_id)

    def partition(self, topic: str, partition: int) -> PartitionImage | None:
        t = self.topics.get(topic)
        return None if t is None else t.partitions.get(partition)

    def partitions(self) -> Iterable[PartitionImage]:
        for t in self.topics.values():
            yield from t.partitions.values()

    def broker_config(self, broker: int | None) -> dict[str, str]:
        """The dynamic configs of ``broker`` (None: the cluster-wide default); empty when none are set."""
        entry = self.broker_configs.get(broker)
        return dict(entry[0].configs) if entry is not None else {}

    def broker_config_revision(self, broker: int | None) -> int:
        """The mod revision of that record (0 when absent), for compare-and-set writes."""
        entry = self.broker_configs.get(broker)
        return entry[1] if entry is not None else 0

    def group_config(self, group: str) -> dict[str, str]:
        """The group configs set on ``group``; empty when none are."""
        entry = self.group_configs.get(group)
        return dict(entry[0].configs) if entry is not None else {}

    def group_config_revision(self, group: str) -> int:
        entry = self.group_configs.get(group)
        return entry[1] if entry is not None else 0

    @property
    def controller_id(self) -> int:
        c = self.controller
        return c.broker_id if c is not None and c.broker_id in self.brokers else NO_LEADER

    # -- building --------------------------------------------------------------------
    def load(self, kvs: Iterable[KeyValue], revision: int) -> MetadataDelta:
        """Replace everything with a full listing taken at ``revision``."""
        old_topics = {name: t.topic_id for name, t in self.topics.items()}
        # the containers are cleared in place: components hold references to them
        self.cluster_id = None
        self.brokers.clear()
        self.broker_revisions.clear()
        self.controller = None
        self.controller_epoch = 0
        self.controller_epoch_revision = 0
        self.topics.clear()
        self.topic_ids.clear()
        self._waiting.clear()
        old_configs = set(self.broker_configs)
        self.broker_configs.clear()
        old_group_configs = set(self.group_configs)
        self.group_configs.clear()
        self.users.clear()
        self.user_revisions.clear()
        self.acls.clear()
        self.acl_revisions.clear()
        delta = MetadataDelta(full=True)
        for kv in kvs:
            try:
                self._put(kv, delta)
            except (ValueError, KeyError, TypeError) as exc:
                log.error("ignoring unreadable metadata record %s: %s", kv.key, exc)
        self.revision = revision
        for name, topic_id in old_topics.items():
            t = self.topics.get(name)
            if t is None or t.topic_id != topic_id:
                delta.topics_deleted[name] = topic_id
        delta.broker_configs_changed |= old_configs | set(self.broker_configs)
        delta.group_configs_changed |= old_group_configs | set(self.group_configs)
        return delta

    def apply(self, events: Iterable[WatchEvent]) -> MetadataDelta:
        delta = MetadataDelta()
        for event in events:
            try:
                if event.kind == "put":
                    self._put(event.kv, delta)
                else:
                    self._delete(event.kv, delta)
            except (ValueError, KeyError, TypeError) as exc:
                log.error("ignoring unreadable metadata record %s: %s", event.kv.key, exc)
            self.revision = max(self.revision, event.kv.mod_revision)
        return delta

    def _put(self, kv: KeyValue, delta: MetadataDelta) -> None:
        kind, ident = parse_key(kv.key)
        if kind == "broker":
            reg = BrokerRegistration.decode(kv.value, epoch=kv.create_revision)
            old = self.brokers.get(ident)
            self.brokers[ident] = reg
            self.broker_revisions[ident] = kv.mod_revision
            if old is None or old.epoch != reg.epoch:
                delta.brokers_added.add(ident)
                delta.brokers_removed.discard(ident)
            elif old != reg:
                delta.brokers_changed.add(ident)
        elif kind == "topic":
            record = TopicRecord.decode(kv.value)
            old_t = self.topics.get(ident)
            if old_t is not None and old_t.topic_id != record.topic_id:
                self._drop_topic(ident, delta)
                old_t = None
            if old_t is None:
                t = TopicImage(record, kv.mod_revision)
                self.topics[ident] = t
                self.topic_ids[record.topic_id] = ident
                delta.topics_created.add(ident)
                for p, (prec, rev) in self._waiting.pop(ident, {}).items():
                    self._set_partition(t, p, prec, rev, delta)
            else:
                old_t.record = record
                old_t.mod_revision = kv.mod_revision
                for p, part in old_t.partitions.items():
                    if p < record.partitions and part.assigned != record.assignment[p]:
                        part.assigned = record.assignment[p]
                        delta.partitions_changed.add((ident, p))
                delta.topics_changed.add(ident)
        elif kind == "partition":
            name, p = ident
            record_p = PartitionRecord.decode(kv.value)
            topic = self.topics.get(name)
            if topic is None or p >= topic.record.partitions:
                self._waiting.setdefault(name, {})[p] = (record_p, kv.mod_revision)
                return
            self._set_partition(topic, p, record_p, kv.mod_revision, delta)
        elif kind == CONTROLLER_KEY:
            self.controller = ControllerRecord.decode(kv.value)
            delta.controller_changed = True
        elif kind == CONTROLLER_EPOCH_KEY:
            self.controller_epoch = int(json.loads(kv.value)["epoch"])
            self.controller_epoch_revision = kv.mod_revision
        elif kind == CLUSTER_ID_KEY:
            self.cluster_id = str(json.loads(kv.value)["id"])
            delta.cluster_id_changed = True
        elif kind == "broker_configs":
            self.broker_configs[ident] = (BrokerConfigRecord.decode(kv.value), kv.mod_revision)
            delta.broker_configs_changed.add(ident)
        elif kind == "group_configs":
            self.group_configs[ident] = (BrokerConfigRecord.decode(kv.value), kv.mod_revision)
            delta.group_configs_changed.add(ident)
        elif kind == "user":
            user = UserRecord.decode(kv.value)
            if user.name != ident:
                raise ValueError(f"the record names user {user.name!r}")
            self.users[ident] = user
            self.user_revisions[ident] = kv.mod_revision
            delta.users_changed.add(ident)
        elif kind == "acl":
            binding = AclBinding.decode(kv.value)
            if binding.key() != ident:
                raise ValueError("the binding does not belong under this key")
            self.acls[ident] = binding
            self.acl_revisions[ident] = kv.mod_revision
            delta.acls_changed.add(ident)

    def _set_partition(self, topic: TopicImage, p: int, record: PartitionRecord, rev: int,
                       delta: MetadataDelta) -> None:
        if p >= topic.record.partitions:
            self._waiting.setdefault(topic.name, {})[p] = (record, rev)
            return
        existing = topic.partitions.get(p)
        if existing is None:
            topic.partitions[p] = PartitionImage(topic.name, p, topic.record.assignment[p], record, rev)
        else:
            existing.record = record
            existing.mod_revision = rev
        delta.partitions_changed.add((topic.name, p))

    def _delete(self, kv: KeyValue, delta: MetadataDelta) -> None:
        kind, ident = parse_key(kv.key)
        if kind == "broker":
            self.broker_revisions.pop(ident, None)
            if self.brokers.pop(ident, None) is not None:
                delta.brokers_removed.add(ident)
                delta.brokers_added.discard(ident)
                delta.brokers_changed.discard(ident)
        elif kind == "topic":
            self._drop_topic(ident, delta)
        elif kind == "partition":
            name, p = ident
            self._waiting.get(name, {}).pop(p, None)
            topic = self.topics.get(name)
            if topic is not None and topic.partitions.pop(p, None) is not None:
                delta.partitions_changed.add((name, p))
        elif kind == CONTROLLER_KEY:
            self.controller = None
            delta.controller_changed = True
        elif kind == "broker_configs" and self.broker_configs.pop(ident, None) is not None:
            delta.broker_configs_changed.add(ident)
        elif kind == "group_configs" and self.group_configs.pop(ident, None) is not None:
            delta.group_configs_changed.add(ident)
        elif kind == "user":
            if self.users.pop(ident, None) is not None:
                self.user_revisions.pop(ident, None)
                delta.users_changed.add(ident)
        elif kind == "acl" and self.acls.pop(ident, None) is not None:
            self.acl_revisions.pop(ident, None)
            delta.acls_changed.add(ident)

    def _drop_topic(self, name: str, delta: MetadataDelta) -> None:
        topic = self.topics.pop(name, None)
        self._waiting.pop(name, None)
        if topic is None:
            return
        self.topic_ids.pop(topic.topic_id, None)
        delta.topics_deleted[name] = topic.topic_id
        delta.topics_created.discard(name)
        delta.topics_changed.discard(name)
        for p in topic.partitions:
            delta.partitions_changed.discard((name, p))
