"""Public value types of the client: partitions, records, delivery reports, admin inputs/outputs."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

Headers = list[tuple[str, bytes | None]]


class TopicPartition(NamedTuple):
    topic: str
    partition: int


class Record(NamedTuple):
    """A consumed record; ``delivery_count``: how many times a share group delivered it (the
    :class:`~client.share_consumer.ShareConsumer`'s records; None for a :class:`~client.consumer.Consumer`'s)."""

    topic: str
    partition: int
    offset: int
    timestamp: int
    timestamp_type: int
    key: bytes | None
    value: bytes | None
    headers: Headers
    delivery_count: int | None = None


class RecordMetadata(NamedTuple):
    """Where a produced record landed (offset -1 with acks=0)."""

    topic: str
    partition: int
    offset: int
    timestamp: int


class OffsetAndMetadata(NamedTuple):
    offset: int
    metadata: str = ""


class ConsumerGroupMetadata(NamedTuple):
    """A group member's identity as a transactional producer sends it with the consumer's offsets
    (KIP-447: the group fences offsets of a member that is no longer in the generation / epoch).
    ``generation_id`` is the classic generation or the KIP-848 member epoch; -1 and "" when the
    consumer is not (yet) a member."""

    group_id: str
    generation_id: int = -1
    member_id: str = ""
    group_instance_id: str | None = None


class PreparedTransaction(NamedTuple):
    """A transaction whose records are all written and acknowledged but which is not ended yet
    (``Producer.prepare_transaction()``): whoever holds this can commit or abort it with an EndTxn
    (``client.txn_requests.complete_prepared``) until the transaction's timeout aborts it."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    #: the transaction protocol it was written with (1, or 2 for KIP-890 part 2)
    transaction_version: int = 1


class OffsetAndTimestamp(NamedTuple):
    offset: int
    timestamp: int


@dataclass
class NewTopic:
    name: str
    num_partitions: int = 1
    replication_factor: int = -1  # -1: the broker's default.replication.factor
    configs: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class BrokerNode:
    node_id: int
    host: str
    port: int
    rack: str | None = None


@dataclass
class ClusterDescription:
    cluster_id: str | None
    controller_id: int
    brokers: list[BrokerNode]


@dataclass
class MemberDescription:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    assignment: set[TopicPartition]
    #: consumer groups (KIP-848) only: the member's epoch and the assignment it is moving to
    member_epoch: int = -1
    target_assignment: set[TopicPartition] = field(default_factory=set)


@dataclass
class GroupDescription:
    group_id: str
    state: str
    protocol_type: str
    protocol: str
    members: list[MemberDescription]
    #: "classic", "consumer" (KIP-848; then ``protocol`` is the server-side assignor) or "share" (KIP-932: the
    #: same, and members may share partitions)
    group_type: str = "classic"
    group_epoch: int = -1
    assignment_epoch: int = -1


@dataclass
class GroupListing:
    group_id: str
    protocol_type: str
    state: str = ""
    group_type: str = ""


@dataclass
class ConfigEntry:
    """One entry of a DescribeConfigs answer: the value in force, where it comes from
    (``source``: Kafka's ConfigSource name, e.g. ``DYNAMIC_TOPIC_CONFIG``), and its synonyms
    (``(name, value, source)``, highest precedence first)."""

    name: str
    value: str | None
    source: str
    read_only: bool = False
    synonyms: list[tuple[str, str | None, str]] = field(default_factory=list)


@dataclass(frozen=True)
class PartitionReassignment:
    """A partition being reassigned (ListPartitionReassignments): its full replica list (the target
    followed by the replicas being removed), the replicas being added and those being removed."""

    replicas: list[int]
    adding_replicas: list[int]
    removing_replicas: list[int]


@dataclass
class PartitionOffsetInfo:
    """A group's committed offset for one partition and how far behind the end it is."""

    offset: int
    metadata: str
    end_offset: int
    lag: int


@dataclass(frozen=True)
class Acl:
    """One ACL, with Kafka's names: ``Acl("TOPIC", "orders-", "User:alice", "WRITE", pattern_type="PREFIXED")``.

    ``resource_type`` TOPIC, GROUP, CLUSTER (name ``kafka-cluster``) or TRANSACTIONAL_ID;
    ``pattern_type`` LITERAL (``*`` = every name) or PREFIXED; ``operation`` ALL, READ, WRITE, CREATE,
    DELETE, ALTER, DESCRIBE, CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS or IDEMPOTENT_WRITE;
    ``permission`` ALLOW or DENY; ``host`` an address or ``*``.
    """

    resource_type: str
    resource_name: str
    principal: str
    operation: str
    permission: str = "ALLOW"
    pattern_type: str = "LITERAL"
    host: str = "*"


@dataclass(frozen=True)
class AclFilter:
    """Which ACLs DescribeAcls / DeleteAcls select: None and ANY match anything; pattern type MATCH
    selects the ACLs that apply to ``resource_name`` (LITERAL, ``*`` and matching PREFIXED ones)."""

    resource_type: str = "ANY"
    resource_name: str | None = None
    pattern_type: str = "ANY"
    principal: str | None = None
    host: str | None = None
    operation: str = "ANY"
    permission: str = "ANY"


@dataclass(frozen=True)
class ScramCredentialInfo:
    """A user's SCRAM credential as DescribeUserScramCredentials shows it (no key material)."""

    mechanism: str
    iterations: int


class ConsumerRebalanceListener:
    """Callbacks around rebalances; each may be a plain function or a coroutine function.

    ``on_partitions_revoked`` runs before partitions are given up (offsets are committed
    first when auto-commit is on); ``on_partitions_lost`` runs instead when they were taken
    away without a clean revoke (session expired, fenced).  The default ``lost`` delegates to
    ``revoked``.
    """

    def on_partitions_revoked(self, revoked: set[TopicPartition]) -> Any:
        return None

    def on_partitions_assigned(self, assigned: set[TopicPartition]) -> Any:
        return None

    def on_partitions_lost(self, lost: set[TopicPartition]) -> Any:
        return self.on_partitions_revoked(lost)


def as_partitions(items: Iterable[TopicPartition | tuple[str, int]]) -> list[TopicPartition]:
    return [TopicPartition(t, p) for t, p in items]


class TransactionListing(NamedTuple):
    transactional_id: str
    producer_id: int
    state: str


class TransactionDescription(NamedTuple):
    transactional_id: str
    state: str
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    start_time_ms: int  # -1 when no transaction is open
    partitions: list[TopicPartition]
