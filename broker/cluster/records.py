"""What the cluster keeps in its metadata store: the key layout and the records' JSON.

Keys (relative to the store's namespace; etcd puts them under ``/kbroker/<cluster.id>/``)::

    cluster_id                    {"id": "..."}                       written once, by the first broker
    brokers/<id>                  BrokerRegistration                  leased; create_revision = broker epoch
    controller                    {"broker_id", "epoch"}              leased; the elected controller
    controller_epoch              {"epoch"}                           bumped by each new controller
    topics/<name>                 TopicRecord (id, the assignment it was created with, configs)
    partitions/<name>/<p>         PartitionRecord (replicas, leader, epochs, ISR, a reassignment's
                                  adding/removing replicas)
    producer_id_block             {"next": N}                         ids below N are handed out
    broker_configs/default        BrokerConfigRecord                  dynamic broker configs, cluster-wide default
    broker_configs/<id>           BrokerConfigRecord                  dynamic broker configs of one broker
    group_configs/<group>         BrokerConfigRecord                  group configs (KIP-848) of one group
    users/<name>                  UserRecord (SCRAM credentials)      broker.security.scram
    acls/<type>/<pattern>/<name>/<hash>   AclBinding                  broker.security.acl

A topic name cannot contain ``/``, so ``partitions/<name>/`` is an exact prefix.
In an assignment the first replica of each partition is its preferred leader.  A partition's
replicas live in its record (they change by reassignment); the topic's assignment is what the
controller starts a new partition with.
Users and ACLs are the security modules' records; their keys are defined there (one binding per
key, so creating an ACL twice writes one key).
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from typing import Any

from broker.security.acl import ACLS_PREFIX
from broker.security.listeners import Endpoint
from broker.security.scram import USERS_PREFIX

__all__ = [
    "CLUSTER_ID_KEY",
    "CONTROLLER_EPOCH_KEY",
    "CONTROLLER_KEY",
    "PRODUCER_ID_BLOCK_KEY",
    "BrokerConfigRecord",
    "BrokerRegistration",
    "ControllerRecord",
    "Endpoint",
    "PartitionChange",
    "PartitionRecord",
    "TopicRecord",
    "broker_config_key",
    "group_config_key",
    "broker_key",
    "parse_key",
    "partition_key",
    "partitions_prefix",
    "topic_key",
]

CLUSTER_ID_KEY = "cluster_id"
CONTROLLER_KEY = "controller"
CONTROLLER_EPOCH_KEY = "controller_epoch"
PRODUCER_ID_BLOCK_KEY = "producer_id_block"
BROKERS = "brokers/"
TOPICS = "topics/"
PARTITIONS = "partitions/"
BROKER_CONFIGS = "broker_configs/"
GROUP_CONFIGS = "group_configs/"
#: the name of the cluster-wide default among the dynamic broker config records (Kafka's empty broker name)
DEFAULT_BROKER_CONFIGS = "default"

NO_LEADER = -1


def broker_key(node_id: int) -> str:
    return f"{BROKERS}{node_id}"


def topic_key(name: str) -> str:
    return f"{TOPICS}{name}"


def partitions_prefix(name: str) -> str:
    return f"{PARTITIONS}{name}/"


def partition_key(name: str, partition: int) -> str:
    return f"{PARTITIONS}{name}/{partition}"


def broker_config_key(broker: int | None) -> str:
    """The dynamic config record of ``broker``, or of the cluster-wide default for None."""
    return f"{BROKER_CONFIGS}{DEFAULT_BROKER_CONFIGS if broker is None else broker}"


def group_config_key(group: str) -> str:
    """The group config record of ``group``."""
    return f"{GROUP_CONFIGS}{group}"


def parse_key(key: str) -> tuple[str, Any]:
    """``("broker", id)``, ``("topic", name)``, ``("partition", (name, p))``,
    ``("broker_configs", id or None)``, ``("group_configs", group)``, ``("user", name)``, ``("acl", key)``
    or ``(key, None)``."""
    if key.startswith(GROUP_CONFIGS):
        return "group_configs", key[len(GROUP_CONFIGS):]
    if key.startswith(BROKER_CONFIGS):
        rest = key[len(BROKER_CONFIGS):]
        if rest == DEFAULT_BROKER_CONFIGS:
            return "broker_configs", None
        return ("broker_configs", int(rest)) if rest.isdigit() else (key, None)
    if key.startswith(USERS_PREFIX):
        return "user", key[len(USERS_PREFIX):]
    if key.startswith(ACLS_PREFIX):
        return "acl", key
    if key.startswith(BROKERS):
        rest = key[len(BROKERS):]
        return ("broker", int(rest)) if rest.lstrip("-").isdigit() else (key, None)
    if key.startswith(TOPICS):
        return "topic", key[len(TOPICS):]
    if key.startswith(PARTITIONS):
        name, _, p = key[len(PARTITIONS):].rpartition("/")
        return ("partition", (name, int(p))) if name and p.isdigit() else (key, None)
    return key, None


def _dumps(doc: dict[str, Any]) -> bytes:
    return json.dumps(doc, separators=(",", ":"), sort_keys=True).encode()


@dataclass(frozen=True, slots=True)
class BrokerRegistration:
    """A live broker.  ``epoch`` is not stored: it is the key's create revision (KIP-380), so a
    broker that registers again (a restart, or a lease lost and taken anew) is a new incarnation
    with a higher epoch.  ``shutting_down``: the broker is in a controlled shutdown — it hands its
    leaderships over and must not be given new ones."""

    node_id: int
    endpoints: tuple[Endpoint, ...]
    rack: str | None = None
    dir_id: str = ""
    epoch: int = -1
    shutting_down: bool = False

    def endpoint(self, listener: str | None = None) -> Endpoint | None:
        for ep in self.endpoints:
            if listener is None or ep.listener == listener:
                return ep
        return None

    def encode(self) -> bytes:
        doc: dict[str, Any] = {"version": 1, "node_id": self.node_id, "rack": self.rack, "dir_id": self.dir_id,
                               "endpoints": [e.to_json() for e in self.endpoints]}
        if self.shutting_down:
            doc["shutting_down"] = True
        return _dumps(doc)

    @classmethod
    def decode(cls, data: bytes, epoch: int = -1) -> BrokerRegistration:
        d = json.loads(data)
        return cls(int(d["node_id"]), tuple(Endpoint.from_json(e) for e in d["endpoints"]),
                   d.get("rack"), str(d.get("dir_id", "")), epoch, bool(d.get("shutting_down", False)))


@dataclass(frozen=True, slots=True)
class ControllerRecord:
    broker_id: int
    epoch: int

    def encode(self) -> bytes:
        return _dumps({"broker_id": self.broker_id, "epoch": self.epoch})

    @classmethod
    def decode(cls, data: bytes) -> ControllerRecord:
        d = json.loads(data)
        return cls(int(d["broker_id"]), int(d["epoch"]))


@dataclass(frozen=True, slots=True)
class TopicRecord:
    """A topic: its id, the replicas of each partition (index = partition), and config overrides."""

    name: str
    topic_id: uuid.UUID
    assignment: tuple[tuple[int, ...], ...]
    configs: dict[str, str] = field(default_factory=dict)

    @property
    def partitions(self) -> int:
        return len(self.assignment)

    def encode(self) -> bytes:
        return _dumps({"version": 1, "name": self.name, "topic_id": str(self.topic_id),
                       "assignment": [list(r) for r in self.assignment], "configs": self.configs})

    @classmethod
    def decode(cls, data: bytes) -> TopicRecord:
        d = json.loads(data)
        return cls(str(d["name"]), uuid.UUID(d["topic_id"]), tuple(tuple(int(b) for b in r) for r in d["assignment"]),
                   {str(k): str(v) for k, v in d.get("configs", {}).items()})


@dataclass(frozen=True, slots=True)
class PartitionRecord:
    """Leadership of one partition.

    ``leader_epoch`` rises with every leader change (including to no leader);
    ``partition_epoch`` with every change of this record.  ``isr`` is never empty:
    when its last live member dies it stays listed and the leader becomes -1.

    ``isr_epochs`` (KIP-380/903): the broker epoch of each ISR member, in ``isr``'s order, as of
    when it joined (-1, or none at all in records of older versions: unknown).  A member whose
    broker has registered again since then is a new incarnation that may have lost what it had:
    it leaves the ISR and is never leader at its old epoch.

    ``replicas``: the partition's replicas, the first the preferred leader (empty in records of
    older versions: the topic's assignment).  During a reassignment (KIP-455) they are the target
    followed by the replicas being removed; ``adding`` are the target's new replicas, ``removing``
    the ones leaving once every target replica is in sync.
    """

    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    partition_epoch: int = 0
    isr_epochs: tuple[int, ...] = ()
    replicas: tuple[int, ...] = ()
    adding: tuple[int, ...] = ()
    removing: tuple[int, ...] = ()

    @property
    def reassigning(self) -> bool:
        return bool(self.adding or self.removing)

    @property
    def target(self) -> tuple[int, ...]:
        """The replicas a reassignment moves to (all of them when none runs)."""
        return tuple(r for r in self.replicas if r not in self.removing)

    def epoch_of(self, broker: int) -> int:
        """The broker epoch ``broker`` joined the ISR with (-1: unknown or not a member)."""
        try:
            index = self.isr.index(broker)
        except ValueError:
            return -1
        return self.isr_epochs[index] if index < len(self.isr_epochs) else -1

    def encode(self) -> bytes:
        doc: dict[str, Any] = {"leader": self.leader, "leader_epoch": self.leader_epoch, "isr": list(self.isr),
                               "partition_epoch": self.partition_epoch}
        if self.isr_epochs:
            doc["isr_epochs"] = list(self.isr_epochs)
        for name in ("replicas", "adding", "removing"):
            if getattr(self, name):
                doc[name] = list(getattr(self, name))
        return _dumps(doc)

    @classmethod
    def decode(cls, data: bytes) -> PartitionRecord:
        d = json.loads(data)
        isr = tuple(int(b) for b in d["isr"])
        epochs = tuple(int(e) for e in d.get("isr_epochs", ()))
        if epochs and len(epochs) != len(isr):
            raise ValueError("isr_epochs does not match the isr")
        replicas, adding, removing = (tuple(int(b) for b in d.get(k, ())) for k in ("replicas", "adding", "removing"))
        if not set(adding) | set(removing) <= set(replicas):
            raise ValueError("adding and removing replicas must be replicas")
        return cls(int(d["leader"]), int(d["leader_epoch"]), isr, int(d.get("partition_epoch", 0)), epochs,
                   replicas, adding, removing)


@dataclass(frozen=True, slots=True)
class BrokerConfigRecord:
    """Dynamic configs (Kafka names -> values) of one broker, of the cluster-wide default or of a group."""

    configs: dict[str, str] = field(default_factory=dict)

    def encode(self) -> bytes:
        return _dumps({"version": 1, "configs": self.configs})

    @classmethod
    def decode(cls, data: bytes) -> BrokerConfigRecord:
        d = json.loads(data)
        return cls({str(k): str(v) for k, v in d.get("configs", {}).items()})


@dataclass(frozen=True, slots=True)
class PartitionChange:
    """Write ``record`` to the partition if its key is still at ``expected_revision`` (0: absent)."""

    topic: str
    partition: int
    expected_revision: int
    record: PartitionRecord
    reason: str
