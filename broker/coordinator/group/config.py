"""Configuration of the group coordinator (classic, consumer and share groups) (Kafka's ``group.*`` / ``offsets.*`` settings).

Defaults are Kafka's (``GroupCoordinatorConfig``), see docs/classic-groups.md "Defaults".
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .consumer_group import ConsumerGroupConfig
from .share_group import ShareGroupConfig

__all__ = ["GroupConfig"]


@dataclass(frozen=True, slots=True)
class GroupConfig:
    """Tunables of :class:`broker.coordinator.group.GroupCoordinator`; all durations in milliseconds."""

    min_session_timeout_ms: int = 6000
    max_session_timeout_ms: int = 1_800_000
    initial_rebalance_delay_ms: int = 3000
    max_size: int = 2**31 - 1
    offsets_retention_ms: int = 7 * 24 * 3600 * 1000
    offset_metadata_max_bytes: int = 4096
    new_member_join_timeout_ms: int = 300_000
    offsets_topic_num_partitions: int = 50
    offsets_retention_check_interval_ms: int = 600_000
    #: the compression codec of the coordinator's batches (``offsets.topic.compression.codec``: 0 none, 1 gzip,
    #: 2 snappy, 3 lz4, 4 zstd)
    offsets_compression: int = 0
    #: KIP-848 consumer groups (``group.consumer.*``)
    consumer: ConsumerGroupConfig = field(default_factory=ConsumerGroupConfig)
    #: share groups (``group.share.*``)
    share: ShareGroupConfig = field(default_factory=ShareGroupConfig)
