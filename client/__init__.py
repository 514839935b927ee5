"""kbroker's asyncio Kafka client: :class:`Producer`, :class:`Consumer`, :class:`ShareConsumer` (share groups,
KIP-932), :class:`Admin`.

Synchronous wrappers for scripts and Spark executors live in :mod:`client.sync`.
"""

from client.admin import Admin
from client.consumer import Consumer
from client.errors import (
    AbortableTransactionError,
    AuthenticationError,
    CommitFailedError,
    ConcurrentAccessError,
    ConfigError,
    FatalTransactionError,
    IllegalStateError,
    KafkaConnectionError,
    KafkaError,
    KafkaTimeoutError,
    ProducerFencedError,
    RetriableTransactionError,
    TransactionAbortedError,
    TransactionError,
)
from client.producer import Producer
from client.share_consumer import ShareConsumer
from client.share_fetcher import AcknowledgeType
from client.types import (
    Acl,
    AclFilter,
    ConfigEntry,
    ConsumerGroupMetadata,
    ConsumerRebalanceListener,
    NewTopic,
    OffsetAndMetadata,
    OffsetAndTimestamp,
    PreparedTransaction,
    Record,
    RecordMetadata,
    ScramCredentialInfo,
    TopicPartition,
    TransactionDescription,
    TransactionListing,
)

__all__ = [
    "AbortableTransactionError", "AcknowledgeType", "Acl", "AclFilter", "Admin", "AuthenticationError", "CommitFailedError",
    "ConcurrentAccessError", "ConfigEntry", "ConfigError", "Consumer", "ConsumerGroupMetadata",
    "ConsumerRebalanceListener", "FatalTransactionError", "IllegalStateError", "KafkaConnectionError", "KafkaError",
    "KafkaTimeoutError", "NewTopic", "OffsetAndMetadata", "OffsetAndTimestamp", "PreparedTransaction", "Producer",
    "ProducerFencedError", "Record", "RecordMetadata", "RetriableTransactionError", "ScramCredentialInfo", "ShareConsumer",
    "TopicPartition", "TransactionAbortedError", "TransactionDescription", "TransactionError", "TransactionListing",
]
