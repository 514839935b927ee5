"""kbroker's asyncio Kafka client: :class:`Producer`, :class:`Consumer`, :class:`Admin`.

Synchronous wrappers for scripts and Spark executors live in :mod:`client.sync`.
"""

from client.admin import Admin
from client.consumer import Consumer
from client.errors import (
    AuthenticationError,
    CommitFailedError,
    ConcurrentAccessError,
    ConfigError,
    IllegalStateError,
    KafkaConnectionError,
    KafkaError,
    KafkaTimeoutError,
)
from client.producer import Producer
from client.types import (
    Acl,
    AclFilter,
    ConfigEntry,
    ConsumerRebalanceListener,
    NewTopic,
    OffsetAndMetadata,
    OffsetAndTimestamp,
    Record,
    RecordMetadata,
    ScramCredentialInfo,
    TopicPartition,
    TransactionDescription,
    TransactionListing,
)

__all__ = [
    "Acl", "AclFilter", "Admin", "AuthenticationError", "CommitFailedError", "ConcurrentAccessError", "ConfigEntry",
    "ConfigError", "Consumer", "ConsumerRebalanceListener", "IllegalStateError", "KafkaConnectionError", "KafkaError",
    "KafkaTimeoutError", "NewTopic", "OffsetAndMetadata", "OffsetAndTimestamp", "Producer", "Record", "RecordMetadata",
    "ScramCredentialInfo", "TopicPartition", "TransactionDescription", "TransactionListing",
]
