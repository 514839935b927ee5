"""Configuration of producers, consumers and admin clients: names, defaults, validation.

Names follow the Kafka / aiokafka conventions (``session_timeout_ms``, ``linger_ms``...); the Java /
librdkafka spelling with dots is accepted too (``**{"security.protocol": "SASL_SSL"}``).
Unknown names and invalid values raise :class:`~client.errors.ConfigError` at construction
time, never later inside the event loop (TLS files are loaded then too).

Security (see :mod:`client.security`): ``security_protocol``, ``sasl_mechanism``, ``sasl_username``,
``sasl_password``, ``ssl_cafile``, ``ssl_certfile``, ``ssl_keyfile``, ``ssl_keyfile_password``,
``ssl_endpoint_identification_algorithm``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from client.errors import ConfigError
from client.security import ClientSecurity
from protocol import records

COMPRESSION_CODECS: dict[str | None, int] = {
    None: records.NONE, "none": records.NONE, "gzip": records.GZIP, "snappy": records.SNAPPY,
    "lz4": records.LZ4, "zstd": records.ZSTD,
}
ISOLATION_LEVELS = {"read_uncommitted": 0, "read_committed": 1}
OFFSET_RESETS = ("earliest", "latest", "none")
GROUP_PROTOCOLS = ("classic", "consumer")


def parse_bootstrap(servers: str | Sequence[str]) -> list[tuple[str, int]]:
    items = servers.split(",") if isinstance(servers, str) else list(servers)
    out: list[tuple[str, int]] = []
    for item in items:
        item = item.strip()
        if not item:
            continue
        host, sep, port = item.rpartition(":")
        if not sep:
            host, port = item, "9092"
        host = host.strip("[]")
        try:
            out.append((host, int(port)))
        except ValueError:
            raise ConfigError(f"bad bootstrap server {item!r}") from None
    if not out:
        raise ConfigError("bootstrap_servers is empty")
    return out


@dataclass
class CommonConfig:
    bootstrap_servers: str | Sequence[str] = "127.0.0.1:9092"
    client_id: str = "kbroker-client"
    request_timeout_ms: int = 30000
    retry_backoff_ms: int = 100
    reconnect_backoff_ms: int = 50
    reconnect_backoff_max_ms: int = 1000
    metadata_max_age_ms: int = 300000
    connections_max_idle_ms: int = 540000
    security_protocol: str = "PLAINTEXT"
    sasl_mechanism: str = "PLAIN"
    sasl_username: str | None = None
    sasl_password: str | None = field(default=None, repr=False)
    ssl_cafile: str | None = None
    ssl_certfile: str | None = None
    ssl_keyfile: str | None = None
    ssl_keyfile_password: str | None = field(default=None, repr=False)
    ssl_endpoint_identification_algorithm: str = "https"
    api_version: str = "auto"

    def validate(self) -> None:
        self.bootstrap = parse_bootstrap(self.bootstrap_servers)
        for name in ("request_timeout_ms", "retry_backoff_ms", "reconnect_backoff_ms",
                     "reconnect_backoff_max_ms", "metadata_max_age_ms"):
            if not isinstance(getattr(self, name), int) or getattr(self, name) < 0:
                raise ConfigError(f"{name} must be a non-negative int")
        if self.reconnect_backoff_max_ms < self.reconnect_backoff_ms:
            raise ConfigError("reconnect_backoff_max_ms < reconnect_backoff_ms")
        try:
            self.security = ClientSecurity.from_settings(
                security_protocol=self.security_protocol, sasl_mechanism=self.sasl_mechanism,
                sasl_username=self.sasl_username, sasl_password=self.sasl_password, ssl_cafile=self.ssl_cafile,
                ssl_certfile=self.ssl_certfile, ssl_keyfile=self.ssl_keyfile,
                ssl_keyfile_password=self.ssl_keyfile_password,
                ssl_endpoint_identification_algorithm=self.ssl_endpoint_identification_algorithm)
        except ValueError as exc:
            raise ConfigError(str(exc)) from None


@dataclass
class ProducerConfig(CommonConfig):
    acks: int | str = -1
    linger_ms: int = 5
    batch_size: int = 16384
    max_request_size: int = 1048576
    compression_type: str | None = None
    enable_idempotence: bool = False
    retries: int = 2147483647
    delivery_timeout_ms: int = 120000
    max_block_ms: int = 60000
    max_in_flight_requests_per_connection: int = 5
    buffer_memory: int = 32 * 1024 * 1024
    partitioner: Callable[..., int] | None = None
    key_serializer: Callable[[Any], bytes] | None = None
    value_serializer: Callable[[Any], bytes] | None = None
    transactional_id: str | None = None
    transaction_timeout_ms: int = 60000

    def validate(self) -> None:
        super().validate()
        if self.acks == "all":
            self.acks = -1
        if self.acks not in (0, 1, -1):
            raise ConfigError(f"acks must be 0, 1, -1 or 'all', not {self.acks!r}")
        if self.compression_type not in COMPRESSION_CODECS:
            raise ConfigError(f"unknown compression_type {self.compression_type!r}")
        if self.max_block_ms < 0:
            raise ConfigError("max_block_ms must be >= 0")
        if self.linger_ms < 0 or self.batch_size <= 0 or self.max_request_size <= 0:
            raise ConfigError("linger_ms >= 0, batch_size > 0 and max_request_size > 0 required")
        if self.enable_idempotence:
            if self.acks != -1:
                raise ConfigError("enable_idempotence requires acks='all'")
            if not 1 <= self.max_in_flight_requests_per_connection <= 5:
                raise ConfigError("enable_idempotence requires max_in_flight_requests_per_connection <= 5")
        if self.transaction_timeout_ms <= 0:
            raise ConfigError("transaction_timeout_ms must be > 0")
        if self.transactional_id is not None:
            if not isinstance(self.transactional_id, str) or not self.transactional_id:
                raise ConfigError("transactional_id must be a non-empty string")
            if self.acks != -1:
                raise ConfigError("transactional_id requires acks='all'")
            if not 1 <= self.max_in_flight_requests_per_connection <= 5:
                raise ConfigError("transactional_id requires max_in_flight_requests_per_connection <= 5")
            self.enable_idempotence = True  # a transactional producer is idempotent

    @property
    def compression(self) -> int:
        return COMPRESSION_CODECS[self.compression_type]


@dataclass
class ConsumerConfig(CommonConfig):
    group_id: str | None = None
    group_instance_id: str | None = None
    auto_offset_reset: str = "latest"
    enable_auto_commit: bool = True
    auto_commit_interval_ms: int = 5000
    session_timeout_ms: int = 45000
    heartbeat_interval_ms: int = 3000
    max_poll_interval_ms: int = 300000
    rebalance_timeout_ms: int | None = None
    fetch_max_wait_ms: int = 500
    fetch_min_bytes: int = 1
    fetch_max_bytes: int = 52428800
    max_partition_fetch_bytes: int = 1048576
    max_poll_records: int | None = None
    isolation_level: str = "read_uncommitted"
    #: the consumer's rack (Kafka's ``client.rack``): with ``replica.selector.class`` set on the brokers,
    #: partitions are read from an in-sync replica in this rack (KIP-392)
    client_rack: str | None = None
    partition_assignment_strategy: Sequence[Any] = field(default_factory=lambda: ["range", "cooperative-sticky"])
    exclude_internal_topics: bool = True
    check_crcs: bool = True
    key_deserializer: Callable[[bytes | None], Any] | None = None
    value_deserializer: Callable[[bytes | None], Any] | None = None
    metadata_refresh_on_subscribe: bool = True
    #: "classic" (JoinGroup/SyncGroup/Heartbeat) or "consumer" (KIP-848: ConsumerGroupHeartbeat)
    group_protocol: str = "classic"
    #: KIP-848 only: the server-side assignor to ask for ("uniform", "range"; None: the broker's default)
    group_remote_assignor: str | None = None

    def validate(self) -> None:
        super().validate()
        if self.auto_offset_reset not in OFFSET_RESETS:
            raise ConfigError(f"auto_offset_reset must be one of {OFFSET_RESETS}")
        if self.isolation_level not in ISOLATION_LEVELS:
            raise ConfigError(f"isolation_level must be one of {tuple(ISOLATION_LEVELS)}")
        if self.heartbeat_interval_ms <= 0 or self.heartbeat_interval_ms >= self.session_timeout_ms:
            raise ConfigError("heartbeat_interval_ms must be > 0 and < session_timeout_ms")
        if self.max_poll_interval_ms <= 0 or self.auto_commit_interval_ms <= 0:
            raise ConfigError("max_poll_interval_ms and auto_commit_interval_ms must be > 0")
        if self.max_poll_records is not None and self.max_poll_records <= 0:
            raise ConfigError("max_poll_records must be > 0")
        if self.fetch_min_bytes < 0 or self.fetch_max_bytes <= 0 or self.max_partition_fetch_bytes <= 0:
            raise ConfigError("fetch sizes must be positive")
        if self.group_instance_id is not None and self.group_id is None:
            raise ConfigError("group_instance_id requires group_id")
        if isinstance(self.partition_assignment_strategy, str):
            self.partition_assignment_strategy = [self.partition_assignment_strategy]
        if not self.partition_assignment_strategy:
            raise ConfigError("partition_assignment_strategy is empty")
        if self.rebalance_timeout_ms is None:
            self.rebalance_timeout_ms = self.max_poll_interval_ms
        if self.group_protocol not in GROUP_PROTOCOLS:
            raise ConfigError(f"group_protocol must be one of {GROUP_PROTOCOLS}, not {self.group_protocol!r}")
        if self.group_remote_assignor is not None:
            if self.group_protocol != "consumer":
                raise ConfigError('group_remote_assignor needs group_protocol="consumer"')
            if not isinstance(self.group_remote_assignor, str) or not self.group_remote_assignor:
                raise ConfigError("group_remote_assignor must be a server-side assignor name")

    @property
    def isolation(self) -> int:
        return ISOLATION_LEVELS[self.isolation_level]


@dataclass
class AdminConfig(CommonConfig):
    pass


C = TypeVar("C", bound=CommonConfig)


def build_config(cls: type[C], kwargs: dict[str, Any]) -> C:
    """``cls(**kwargs)`` validated; names may use dots (``security.protocol``); unknown names are a
    :class:`ConfigError` listing them."""
    names = {f.name for f in dataclasses.fields(cls)}
    normalised: dict[str, Any] = {}
    for key, value in kwargs.items():
        name = key.replace(".", "_")
        if name in normalised:
            raise ConfigError(f"config {key} is given twice (as {name} too)")
        normalised[name] = value
    unknown = sorted(set(normalised) - names)
    if unknown:
        raise ConfigError(f"unknown config {', '.join(unknown)} for {cls.__name__}")
    cfg = cls(**normalised)
    cfg.validate()
    return cfg
