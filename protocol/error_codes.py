"""Kafka protocol error codes: every code by number and name, which are retriable, and a short message.

Names and numbers follow Kafka's ``Errors.java``; ``retriable`` is true exactly for the codes whose
Java exception is a ``RetriableException``.  :class:`KafkaError` is the exception the broker and
the client raise to carry a code.
"""

from __future__ import annotations

from enum import IntEnum

__all__ = ["ErrorCode", "KafkaError", "error_name"]


class ErrorCode(IntEnum):
    """A Kafka error code (int16 on the wire)."""

    UNKNOWN_SERVER_ERROR = -1
    NONE = 0
    OFFSET_OUT_OF_RANGE = 1
    CORRUPT_MESSAGE = 2
    UNKNOWN_TOPIC_OR_PARTITION = 3
    INVALID_FETCH_SIZE = 4
    LEADER_NOT_AVAILABLE = 5
    NOT_LEADER_OR_FOLLOWER = 6
    REQUEST_TIMED_OUT = 7
    BROKER_NOT_AVAILABLE = 8
    REPLICA_NOT_AVAILABLE = 9
    MESSAGE_TOO_LARGE = 10
    STALE_CONTROLLER_EPOCH = 11
    OFFSET_METADATA_TOO_LARGE = 12
    NETWORK_EXCEPTION = 13
    COORDINATOR_LOAD_IN_PROGRESS = 14
    COORDINATOR_NOT_AVAILABLE = 15
    NOT_COORDINATOR = 16
    INVALID_TOPIC_EXCEPTION = 17
    RECORD_LIST_TOO_LARGE = 18
    NOT_ENOUGH_REPLICAS = 19
    NOT_ENOUGH_REPLICAS_AFTER_APPEND = 20
    INVALID_REQUIRED_ACKS = 21
    ILLEGAL_GENERATION = 22
    INCONSISTENT_GROUP_PROTOCOL = 23
    INVALID_GROUP_ID = 24
    UNKNOWN_MEMBER_ID = 25
    INVALID_SESSION_TIMEOUT = 26
    REBALANCE_IN_PROGRESS = 27
    INVALID_COMMIT_OFFSET_SIZE = 28
    TOPIC_AUTHORIZATION_FAILED = 29
    GROUP_AUTHORIZATION_FAILED = 30
    CLUSTER_AUTHORIZATION_FAILED = 31
    INVALID_TIMESTAMP = 32
    UNSUPPORTED_SASL_MECHANISM = 33
    ILLEGAL_SASL_STATE = 34
    UNSUPPORTED_VERSION = 35
    TOPIC_ALREADY_EXISTS = 36
    INVALID_PARTITIONS = 37
    INVALID_REPLICATION_FACTOR = 38
    INVALID_REPLICA_ASSIGNMENT = 39
    INVALID_CONFIG = 40
    NOT_CONTROLLER = 41
    INVALID_REQUEST = 42
    UNSUPPORTED_FOR_MESSAGE_FORMAT = 43
    POLICY_VIOLATION = 44
    OUT_OF_ORDER_SEQUENCE_NUMBER = 45
    DUPLICATE_SEQUENCE_NUMBER = 46
    INVALID_PRODUCER_EPOCH = 47
    INVALID_TXN_STATE = 48
    INVALID_PRODUCER_ID_MAPPING = 49
    INVALID_TRANSACTION_TIMEOUT = 50
    CONCURRENT_TRANSACTIONS = 51
    TRANSACTION_COORDINATOR_FENCED = 52
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED = 53
    SECURITY_DISABLED = 54
    OPERATION_NOT_ATTEMPTED = 55
    KAFKA_STORAGE_ERROR = 56
    LOG_DIR_NOT_FOUND = 57
    SASL_AUTHENTICATION_FAILED = 58
    UNKNOWN_PRODUCER_ID = 59
    REASSIGNMENT_IN_PROGRESS = 60
    DELEGATION_TOKEN_AUTH_DISABLED = 61
    DELEGATION_TOKEN_NOT_FOUND = 62
    DELEGATION_TOKEN_OWNER_MISMATCH = 63
    DELEGATION_TOKEN_REQUEST_NOT_ALLOWED = 64
    DELEGATION_TOKEN_AUTHORIZATION_FAILED = 65
    DELEGATION_TOKEN_EXPIRED = 66
    INVALID_PRINCIPAL_TYPE = 67
    NON_EMPTY_GROUP = 68
    GROUP_ID_NOT_FOUND = 69
    FETCH_SESSION_ID_NOT_FOUND = 70
    INVALID_FETCH_SESSION_EPOCH = 71
    LISTENER_NOT_FOUND = 72
    TOPIC_DELETION_DISABLED = 73
    FENCED_LEADER_EPOCH = 74
    UNKNOWN_LEADER_EPOCH = 75
    UNSUPPORTED_COMPRESSION_TYPE = 76
    STALE_BROKER_EPOCH = 77
    OFFSET_NOT_AVAILABLE = 78
    MEMBER_ID_REQUIRED = 79
    PREFERRED_LEADER_NOT_AVAILABLE = 80
    GROUP_MAX_SIZE_REACHED = 81
    FENCED_INSTANCE_ID = 82
    ELIGIBLE_LEADERS_NOT_AVAILABLE = 83
    ELECTION_NOT_NEEDED = 84
    NO_REASSIGNMENT_IN_PROGRESS = 85
    GROUP_SUBSCRIBED_TO_TOPIC = 86
    INVALID_RECORD = 87
    UNSTABLE_OFFSET_COMMIT = 88
    THROTTLING_QUOTA_EXCEEDED = 89
    PRODUCER_FENCED = 90
    RESOURCE_NOT_FOUND = 91
    DUPLICATE_RESOURCE = 92
    UNACCEPTABLE_CREDENTIAL = 93
    INCONSISTENT_VOTER_SET = 94
    INVALID_UPDATE_VERSION = 95
    FEATURE_UPDATE_FAILED = 96
    PRINCIPAL_DESERIALIZATION_FAILURE = 97
    SNAPSHOT_NOT_FOUND = 98
    POSITION_OUT_OF_RANGE = 99
    UNKNOWN_TOPIC_ID = 100
    DUPLICATE_BROKER_REGISTRATION = 101
    BROKER_ID_NOT_REGISTERED = 102
    INCONSISTENT_TOPIC_ID = 103
    INCONSISTENT_CLUSTER_ID = 104
    TRANSACTIONAL_ID_NOT_FOUND = 105
    FETCH_SESSION_TOPIC_ID_ERROR = 106
    INELIGIBLE_REPLICA = 107
    NEW_LEADER_ELECTED = 108
    OFFSET_MOVED_TO_TIERED_STORAGE = 109
    FENCED_MEMBER_EPOCH = 110
    UNRELEASED_INSTANCE_ID = 111
    UNSUPPORTED_ASSIGNOR = 112
    STALE_MEMBER_EPOCH = 113
    MISMATCHED_ENDPOINT_TYPE = 114
    UNSUPPORTED_ENDPOINT_TYPE = 115
    UNKNOWN_CONTROLLER_ID = 116
    UNKNOWN_SUBSCRIPTION_ID = 117
    TELEMETRY_TOO_LARGE = 118
    INVALID_REGISTRATION = 119
    TRANSACTION_ABORTABLE = 120
    INVALID_RECORD_STATE = 121
    SHARE_SESSION_NOT_FOUND = 122
    INVALID_SHARE_SESSION_EPOCH = 123
    FENCED_STATE_EPOCH = 124
    INVALID_VOTER_KEY = 125
    DUPLICATE_VOTER = 126
    VOTER_NOT_FOUND = 127
    INVALID_REGULAR_EXPRESSION = 128
    REBOOTSTRAP_REQUIRED = 129
    STREAMS_INVALID_TOPOLOGY = 130
    STREAMS_INVALID_TOPOLOGY_EPOCH = 131
    STREAMS_TOPOLOGY_FENCED = 132
    SHARE_SESSION_LIMIT_REACHED = 133

    @property
    def retriable(self) -> bool:
        """Whether a client may retry the same request unchanged (Kafka's RetriableException)."""
        return self in _RETRIABLE

    @property
    def message(self) -> str:
        return _MESSAGES[self]

    @classmethod
    def from_code(cls, code: int) -> ErrorCode:
        """The member for ``code``; codes this table does not know map to UNKNOWN_SERVER_ERROR, as in Kafka."""
        try:
            return cls(code)
        except ValueError:
            return cls.UNKNOWN_SERVER_ERROR


def error_name(code: int) -> str:
    """Kafka's name of ``code`` for logs (``NOT_LEADER_OR_FOLLOWER``), or the number when unknown."""
    try:
        return ErrorCode(code).name
    except ValueError:
        return str(code)


_RETRIABLE: frozenset[ErrorCode] = frozenset(
    (
        ErrorCode.CORRUPT_MESSAGE,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.LEADER_NOT_AVAILABLE,
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        ErrorCode.REQUEST_TIMED_OUT,
        ErrorCode.REPLICA_NOT_AVAILABLE,
        ErrorCode.NETWORK_EXCEPTION,
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
        ErrorCode.COORDINATOR_NOT_AVAILABLE,
        ErrorCode.NOT_COORDINATOR,
        ErrorCode.NOT_ENOUGH_REPLICAS,
        ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
        ErrorCode.NOT_CONTROLLER,
        ErrorCode.CONCURRENT_TRANSACTIONS,
        ErrorCode.KAFKA_STORAGE_ERROR,
        ErrorCode.FETCH_SESSION_ID_NOT_FOUND,
        ErrorCode.INVALID_FETCH_SESSION_EPOCH,
        ErrorCode.LISTENER_NOT_FOUND,
        ErrorCode.FENCED_LEADER_EPOCH,
        ErrorCode.UNKNOWN_LEADER_EPOCH,
        ErrorCode.OFFSET_NOT_AVAILABLE,
        ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE,
        ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE,
        ErrorCode.ELECTION_NOT_NEEDED,
        ErrorCode.UNSTABLE_OFFSET_COMMIT,
        ErrorCode.THROTTLING_QUOTA_EXCEEDED,
        ErrorCode.UNKNOWN_TOPIC_ID,
        ErrorCode.INCONSISTENT_TOPIC_ID,
        ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR,
        ErrorCode.SHARE_SESSION_NOT_FOUND,
        ErrorCode.INVALID_SHARE_SESSION_EPOCH,
    )
)

_MESSAGES: dict[ErrorCode, str] = {
    ErrorCode.UNKNOWN_SERVER_ERROR: "The server hit an unexpected error.",
    ErrorCode.NONE: "No error.",
    ErrorCode.OFFSET_OUT_OF_RANGE: "The requested offset is outside the range the server holds.",
    ErrorCode.CORRUPT_MESSAGE: "A message failed its CRC check or is otherwise corrupt.",
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: "This server does not host the topic-partition.",
    ErrorCode.INVALID_FETCH_SIZE: "The requested fetch size is invalid.",
    ErrorCode.LEADER_NOT_AVAILABLE: "The partition has no leader right now (election in progress).",
    ErrorCode.NOT_LEADER_OR_FOLLOWER: "This broker is not the leader (or not a replica) of the partition.",
    ErrorCode.REQUEST_TIMED_OUT: "The request timed out.",
    ErrorCode.BROKER_NOT_AVAILABLE: "The broker is not available.",
    ErrorCode.REPLICA_NOT_AVAILABLE: "The replica is not available for the partition.",
    ErrorCode.MESSAGE_TOO_LARGE: "A message is larger than the server accepts.",
    ErrorCode.STALE_CONTROLLER_EPOCH: "The controller moved to another broker.",
    ErrorCode.OFFSET_METADATA_TOO_LARGE: "The offset commit metadata is too large.",
    ErrorCode.NETWORK_EXCEPTION: "The server disconnected before answering.",
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS: "The coordinator is still loading its state.",
    ErrorCode.COORDINATOR_NOT_AVAILABLE: "The coordinator is not available.",
    ErrorCode.NOT_COORDINATOR: "This broker is not the coordinator for the key.",
    ErrorCode.INVALID_TOPIC_EXCEPTION: "The topic name or operation on it is invalid.",
    ErrorCode.RECORD_LIST_TOO_LARGE: "A record batch is larger than the segment size.",
    ErrorCode.NOT_ENOUGH_REPLICAS: "Fewer in-sync replicas than required; messages rejected.",
    ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND: "Messages were written to fewer in-sync replicas than required.",
    ErrorCode.INVALID_REQUIRED_ACKS: "The produce request's acks value is invalid.",
    ErrorCode.ILLEGAL_GENERATION: "The group generation id is not valid.",
    ErrorCode.INCONSISTENT_GROUP_PROTOCOL: "The member's protocols are incompatible with the group's.",
    ErrorCode.INVALID_GROUP_ID: "The group id is invalid.",
    ErrorCode.UNKNOWN_MEMBER_ID: "The coordinator does not know this member.",
    ErrorCode.INVALID_SESSION_TIMEOUT: "The session timeout is outside the broker's allowed range.",
    ErrorCode.REBALANCE_IN_PROGRESS: "The group is rebalancing; rejoin.",
    ErrorCode.INVALID_COMMIT_OFFSET_SIZE: "The committed offset data size is invalid.",
    ErrorCode.TOPIC_AUTHORIZATION_FAILED: "Not authorized to access the topic.",
    ErrorCode.GROUP_AUTHORIZATION_FAILED: "Not authorized to access the group.",
    ErrorCode.CLUSTER_AUTHORIZATION_FAILED: "Not authorized for the cluster operation.",
    ErrorCode.INVALID_TIMESTAMP: "A message timestamp is outside the accepted range.",
    ErrorCode.UNSUPPORTED_SASL_MECHANISM: "The SASL mechanism is not supported.",
    ErrorCode.ILLEGAL_SASL_STATE: "The request is not valid in the current SASL state.",
    ErrorCode.UNSUPPORTED_VERSION: "The API version is not supported.",
    ErrorCode.TOPIC_ALREADY_EXISTS: "The topic already exists.",
    ErrorCode.INVALID_PARTITIONS: "The number of partitions is invalid.",
    ErrorCode.INVALID_REPLICATION_FACTOR: "The replication factor is invalid.",
    ErrorCode.INVALID_REPLICA_ASSIGNMENT: "The replica assignment is invalid.",
    ErrorCode.INVALID_CONFIG: "The configuration is invalid.",
    ErrorCode.NOT_CONTROLLER: "This broker is not the controller.",
    ErrorCode.INVALID_REQUEST: "The request is malformed or not valid for this broker.",
    ErrorCode.UNSUPPORTED_FOR_MESSAGE_FORMAT: "The message format version does not support the request.",
    ErrorCode.POLICY_VIOLATION: "The request violates a configured policy.",
    ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER: "The producer sequence number is out of order.",
    ErrorCode.DUPLICATE_SEQUENCE_NUMBER: "The producer sequence number is a duplicate.",
    ErrorCode.INVALID_PRODUCER_EPOCH: "The producer epoch is stale.",
    ErrorCode.INVALID_TXN_STATE: "The transactional operation is invalid in the current state.",
    ErrorCode.INVALID_PRODUCER_ID_MAPPING: "The producer id is not assigned to this transactional id.",
    ErrorCode.INVALID_TRANSACTION_TIMEOUT: "The transaction timeout exceeds the broker maximum.",
    ErrorCode.CONCURRENT_TRANSACTIONS: "Another operation on the same transaction is in progress.",
    ErrorCode.TRANSACTION_COORDINATOR_FENCED: "The transaction coordinator sending markers is no longer current.",
    ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED: "Not authorized for the transactional id.",
    ErrorCode.SECURITY_DISABLED: "Security features are disabled.",
    ErrorCode.OPERATION_NOT_ATTEMPTED: "The broker did not attempt this operation.",
    ErrorCode.KAFKA_STORAGE_ERROR: "A disk error occurred on the broker.",
    ErrorCode.LOG_DIR_NOT_FOUND: "The log directory is not in the broker config.",
    ErrorCode.SASL_AUTHENTICATION_FAILED: "SASL authentication failed.",
    ErrorCode.UNKNOWN_PRODUCER_ID: "The broker has no state for this producer id.",
    ErrorCode.REASSIGNMENT_IN_PROGRESS: "A partition reassignment is in progress.",
    ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED: "Delegation tokens are not enabled.",
    ErrorCode.DELEGATION_TOKEN_NOT_FOUND: "The delegation token was not found.",
    ErrorCode.DELEGATION_TOKEN_OWNER_MISMATCH: "The principal is not the token's owner or renewer.",
    ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED: "Delegation token requests are not allowed on this channel.",
    ErrorCode.DELEGATION_TOKEN_AUTHORIZATION_FAILED: "Delegation token authorization failed.",
    ErrorCode.DELEGATION_TOKEN_EXPIRED: "The delegation token has expired.",
    ErrorCode.INVALID_PRINCIPAL_TYPE: "The principal type is not supported.",
    ErrorCode.NON_EMPTY_GROUP: "The group is not empty.",
    ErrorCode.GROUP_ID_NOT_FOUND: "The group does not exist.",
    ErrorCode.FETCH_SESSION_ID_NOT_FOUND: "The fetch session id was not found.",
    ErrorCode.INVALID_FETCH_SESSION_EPOCH: "The fetch session epoch is invalid.",
    ErrorCode.LISTENER_NOT_FOUND: "The leader has no listener matching the request's listener.",
    ErrorCode.TOPIC_DELETION_DISABLED: "Topic deletion is disabled.",
    ErrorCode.FENCED_LEADER_EPOCH: "The request's leader epoch is older than the broker's.",
    ErrorCode.UNKNOWN_LEADER_EPOCH: "The request's leader epoch is newer than the broker's.",
    ErrorCode.UNSUPPORTED_COMPRESSION_TYPE: "The compression type is not supported for this request.",
    ErrorCode.STALE_BROKER_EPOCH: "The broker epoch has changed.",
    ErrorCode.OFFSET_NOT_AVAILABLE: "The offset is not available yet (high watermark catching up).",
    ErrorCode.MEMBER_ID_REQUIRED: "The member must rejoin with the member id it was given.",
    ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE: "The preferred leader is not available.",
    ErrorCode.GROUP_MAX_SIZE_REACHED: "The group has reached its maximum size.",
    ErrorCode.FENCED_INSTANCE_ID: "Another member registered with this group.instance.id.",
    ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE: "No eligible leaders are available.",
    ErrorCode.ELECTION_NOT_NEEDED: "Leader election is not needed.",
    ErrorCode.NO_REASSIGNMENT_IN_PROGRESS: "No partition reassignment is in progress.",
    ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC: "The group is still subscribed to the topic.",
    ErrorCode.INVALID_RECORD: "A record failed broker-side validation.",
    ErrorCode.UNSTABLE_OFFSET_COMMIT: "Pending transactional offsets must be resolved first.",
    ErrorCode.THROTTLING_QUOTA_EXCEEDED: "The throttling quota was exceeded.",
    ErrorCode.PRODUCER_FENCED: "A newer producer with the same transactional id exists.",
    ErrorCode.RESOURCE_NOT_FOUND: "The referenced resource does not exist.",
    ErrorCode.DUPLICATE_RESOURCE: "The same resource was referenced twice.",
    ErrorCode.UNACCEPTABLE_CREDENTIAL: "The credential does not meet acceptability criteria.",
    ErrorCode.INCONSISTENT_VOTER_SET: "The sender or receiver is not an expected voter.",
    ErrorCode.INVALID_UPDATE_VERSION: "The update version is invalid.",
    ErrorCode.FEATURE_UPDATE_FAILED: "Finalized features could not be updated.",
    ErrorCode.PRINCIPAL_DESERIALIZATION_FAILURE: "The forwarded request principal could not be deserialized.",
    ErrorCode.SNAPSHOT_NOT_FOUND: "The snapshot was not found.",
    ErrorCode.POSITION_OUT_OF_RANGE: "The snapshot position is out of range.",
    ErrorCode.UNKNOWN_TOPIC_ID: "This server does not host the topic id.",
    ErrorCode.DUPLICATE_BROKER_REGISTRATION: "The broker id is already registered.",
    ErrorCode.BROKER_ID_NOT_REGISTERED: "The broker id is not registered.",
    ErrorCode.INCONSISTENT_TOPIC_ID: "The topic id does not match the log's topic id.",
    ErrorCode.INCONSISTENT_CLUSTER_ID: "The cluster id does not match the server's.",
    ErrorCode.TRANSACTIONAL_ID_NOT_FOUND: "The transactional id was not found.",
    ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR: "The fetch session mixed topic-id and topic-name usage.",
    ErrorCode.INELIGIBLE_REPLICA: "The new ISR contains an ineligible replica.",
    ErrorCode.NEW_LEADER_ELECTED: "The partition state was updated but the leader changed.",
    ErrorCode.OFFSET_MOVED_TO_TIERED_STORAGE: "The offset has moved to tiered storage.",
    ErrorCode.FENCED_MEMBER_EPOCH: "The member epoch is fenced; the member must rejoin.",
    ErrorCode.UNRELEASED_INSTANCE_ID: "The instance id is still held by another member.",
    ErrorCode.UNSUPPORTED_ASSIGNOR: "The assignor is not supported by the group.",
    ErrorCode.STALE_MEMBER_EPOCH: "The member epoch is stale.",
    ErrorCode.MISMATCHED_ENDPOINT_TYPE: "The request reached an endpoint of the wrong type.",
    ErrorCode.UNSUPPORTED_ENDPOINT_TYPE: "The endpoint type is not supported.",
    ErrorCode.UNKNOWN_CONTROLLER_ID: "The controller id is unknown.",
    ErrorCode.UNKNOWN_SUBSCRIPTION_ID: "The telemetry subscription id is unknown or outdated.",
    ErrorCode.TELEMETRY_TOO_LARGE: "The telemetry payload is too large.",
    ErrorCode.INVALID_REGISTRATION: "The broker registration is invalid.",
    ErrorCode.TRANSACTION_ABORTABLE: "The transaction failed and can be aborted.",
    ErrorCode.INVALID_RECORD_STATE: "The record state is invalid for acknowledgement.",
    ErrorCode.SHARE_SESSION_NOT_FOUND: "The share session was not found.",
    ErrorCode.INVALID_SHARE_SESSION_EPOCH: "The share session epoch is invalid.",
    ErrorCode.FENCED_STATE_EPOCH: "The share-group state epoch did not match.",
    ErrorCode.INVALID_VOTER_KEY: "The voter key does not match the replica's key.",
    ErrorCode.DUPLICATE_VOTER: "The voter is already in the voter set.",
    ErrorCode.VOTER_NOT_FOUND: "The voter is not in the voter set.",
    ErrorCode.INVALID_REGULAR_EXPRESSION: "The regular expression is invalid.",
    ErrorCode.REBOOTSTRAP_REQUIRED: "Client metadata is stale; the client must rebootstrap.",
    ErrorCode.STREAMS_INVALID_TOPOLOGY: "The Streams topology is invalid.",
    ErrorCode.STREAMS_INVALID_TOPOLOGY_EPOCH: "The Streams topology epoch is invalid.",
    ErrorCode.STREAMS_TOPOLOGY_FENCED: "The Streams topology epoch is outdated.",
    ErrorCode.SHARE_SESSION_LIMIT_REACHED: "The share session limit has been reached.",
}


class KafkaError(Exception):
    """An error carrying a Kafka :class:`ErrorCode` and an optional detail message."""

    def __init__(self, code: ErrorCode | int, message: str | None = None) -> None:
        self.code = ErrorCode.from_code(code)
        self.detail = message
        super().__init__(f"{self.code.name} ({int(self.code)}): {message or self.code.message}")

    @property
    def retriable(self) -> bool:
        return self.code.retriable
