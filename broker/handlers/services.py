"""Services: the parts of the broker request handlers call — each handler uses the few it needs.

The composition root (:mod:`broker.core`) builds it once; handlers never build or own state."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from broker.admin.configs import ConfigAdmin
    from broker.admin.security import SecurityAdmin
    from broker.admin.topics import TopicAdmin
    from broker.cluster.image import MetadataImage
    from broker.cluster.metadata import MetadataService
    from broker.cluster.producer_ids import ProducerIdManager
    from broker.config.dynamic import DynamicBrokerConfig
    from broker.config.settings import BrokerConfig
    from broker.coordinator.group.service import GroupService
    from broker.coordinator.group.share_service import ShareGroupService
    from broker.coordinator.share.service import ShareCoordinatorService
    from broker.coordinator.txn.service import TransactionService
    from broker.handlers.authorization import RequestAuthorizer
    from broker.log.manager import LogManager
    from broker.observability.metrics import BrokerMetrics
    from broker.replication.replica_manager import ReplicaManager
    from broker.replication.share.manager import SharePartitionManager

__all__ = ["Services"]


@dataclass(slots=True)
class Services:
    config: BrokerConfig
    metrics: BrokerMetrics
    #: partitions this broker hosts: produce, fetch, offsets, markers
    replica: ReplicaManager
    groups: GroupService
    txns: TransactionService
    topics: TopicAdmin
    #: the cluster: its image (brokers, topics, leaders) and the writes to its store
    metadata: MetadataService
    producer_ids: ProducerIdManager
    logs: LogManager
    dynamic: DynamicBrokerConfig
    configs: ConfigAdmin
    security: SecurityAdmin
    authz: RequestAuthorizer
    #: share-partitions this broker leads: ShareFetch, ShareAcknowledge (KIP-932)
    shares: SharePartitionManager
    #: the share coordinator of the ``__share_group_state`` partitions this broker leads
    share_state: ShareCoordinatorService
    #: the group coordinator's share-group flows with the share coordinator (offsets admin, deletion)
    share_groups: ShareGroupService

    @property
    def image(self) -> MetadataImage:
        return self.metadata.image
