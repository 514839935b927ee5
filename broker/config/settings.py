"""Broker configuration: one dataclass, filled from defaults, a TOML file, ``KBROKER_*`` env and flags.

Precedence, lowest to highest: built-in defaults, the TOML file
(``--config``), environment variables (``KBROKER_PORT=9093``), command-line
flags.  Every limit the broker enforces is a field here.

The known settings are exactly the fields of :class:`BrokerConfig` (a field added later is a
setting at once).  A key that names none of them — in ``--set``, the TOML file or a ``KBROKER_*``
variable — is refused with :class:`ConfigError` naming the key and the closest known one, as is a
value that does not parse; ``python -m broker`` prints that one line and exits with code 2.
A setting whose value is a secret is declared so (``_secret()``, field metadata :data:`SENSITIVE`):
it stays out of ``repr`` and DescribeConfigs reports it sensitive, without its value.
"""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ENV_PREFIX = "KBROKER_"

#: field metadata key: the setting's value is a secret (Kafka's PASSWORD type) — never in ``repr``,
#: and DescribeConfigs reports it sensitive, without its value
SENSITIVE = "sensitive"


def _secret() -> Any:
    """The declaration of a secret setting (unset by default)."""
    return field(default=None, repr=False, metadata={SENSITIVE: True})


@dataclass
class BrokerConfig:
    # listener
    host: str = "127.0.0.1"
    port: int = 9092
    advertised_listener: str | None = None
    data_dir: str = "./data"
    metrics_port: int | None = None
    metrics_host: str | None = None
    node_id: int = 1
    broker_rack: str | None = None

    # cluster: without `cluster` the broker keeps its metadata in the data directory (one node)
    cluster: str | None = None
    cluster_id: str = "kbroker"
    broker_session_timeout_ms: int = 3000
    #: one attempt of one etcd call on one endpoint (None: a third of broker.session.timeout.ms, also the most
    #: allowed), so a registration lease outlives a stalled etcd member; then the next endpoint is tried
    etcd_request_timeout_ms: int | None = None
    default_replication_factor: int = 1
    min_insync_replicas: int = 1
    #: None: 3 in a cluster (as Kafka), 1 for a single broker
    offsets_topic_replication_factor: int | None = None
    replica_lag_time_max_ms: int = 30_000
    unclean_leader_election_enable: bool = False
    #: replication throttles (bytes/s; unlimited by default), applied to the partitions the topic configs
    #: leader/follower.replication.throttled.replicas list (dynamic, per broker or cluster-wide)
    leader_replication_throttled_rate: int = (1 << 63) - 1
    follower_replication_throttled_rate: int = (1 << 63) - 1
    #: the windows the throttled rates are measured over
    replication_quota_window_num: int = 11
    replication_quota_window_size_seconds: int = 1
    #: on SIGTERM, hand every leadership over to an in-sync follower that has the whole log first
    controlled_shutdown_enable: bool = True
    #: how long a controlled shutdown may wait for followers to catch up before it stops anyway
    controlled_shutdown_timeout_ms: int = 5000
    replica_fetch_wait_max_ms: int = 500
    replica_fetch_min_bytes: int = 1
    replica_fetch_max_bytes: int = 1024 * 1024
    replica_fetch_response_max_bytes: int = 10 * 1024 * 1024
    replica_fetch_backoff_ms: int = 1000
    replica_socket_timeout_ms: int = 30_000
    auto_leader_rebalance_enable: bool = True
    leader_imbalance_check_interval_seconds: int = 300
    leader_imbalance_per_broker_percentage: int = 10

    # listeners and security (Kafka's names; see README "Security").  Without `listeners` the broker
    # listens on host:port in PLAINTEXT and advertises advertised_listener (or host:port).
    listeners: str | None = None
    advertised_listeners: str | None = None
    listener_security_protocol_map: str | None = None
    #: the listener brokers reach each other on (default: the first of `listeners`)
    inter_broker_listener_name: str | None = None
    ssl_certfile: str | None = None
    ssl_keyfile: str | None = None
    ssl_keyfile_password: str | None = _secret()
    ssl_cafile: str | None = None
    ssl_client_auth: str = "none"
    #: https: a broker connecting to another over TLS checks the host name in its certificate; "" does not
    ssl_endpoint_identification_algorithm: str = "https"
    #: a TLS handshake not finished in this time closes the connection
    ssl_handshake_timeout_ms: int = 10_000
    sasl_enabled_mechanisms: str = "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512"
    #: name:password lines read at start; each named user gets SCRAM credentials for those passwords
    sasl_users_file: str | None = None
    #: SASL tokens (and any frame before authentication) larger than this close the connection
    sasl_server_max_receive_size: int = 64 * 1024
    connections_max_reauth_ms: int = 0
    #: a failed authentication is answered (and its connection closed) only after this delay
    connection_failed_authentication_delay_ms: int = 100
    #: how this broker authenticates to others on a SASL inter-broker listener
    sasl_mechanism_inter_broker_protocol: str = "SCRAM-SHA-512"
    inter_broker_sasl_username: str | None = None
    inter_broker_sasl_password: str | None = _secret()
    authorizer_enabled: bool = False
    super_users: str | None = None
    allow_everyone_if_no_acl_found: bool = False
    #: per connection, authorization decisions kept until the ACLs change
    authorizer_cache_entries: int = 1024

    # connection limits
    max_frame_bytes: int = 100 * 1024 * 1024
    max_connections: int = 10_000
    connections_max_idle_ms: int = 600_000
    max_in_flight_requests_per_connection: int = 1_000
    # response back-pressure: bytes of answered responses (record data included) not yet
    # handed to the socket; past the per-connection limit, or past the broker-wide one for a
    # connection that already has a response waiting, no further request of that connection
    # is handled (and it is not read) until its client reads
    queued_max_response_bytes_per_connection: int = 64 * 1024 * 1024
    queued_max_response_bytes: int = 1024 * 1024 * 1024
    # user-space write buffer per connection; record data goes out with sendfile and never
    # enters it, except where sendfile cannot be used (TLS): then it is copied in pieces of this size
    connection_write_buffer_bytes: int = 4 * 1024 * 1024
    # completed or expired long-poll fetches are purged from the watch lists every N of them
    fetch_purgatory_purge_interval_requests: int = 1000

    # topics and logs
    auto_create_topics_enable: bool = True
    num_partitions: int = 1
    delete_topic_enable: bool = True
    message_max_bytes: int = 1_048_588
    # a produced batch recompressed to its topic's compression.type may inflate to at most this
    # many bytes when decoded (beyond: CORRUPT_MESSAGE), so a compression bomb costs bounded memory
    message_max_decompressed_bytes: int = 64 * 1024 * 1024
    fetch_max_bytes: int = 55 * 1024 * 1024
    log_segment_bytes: int = 1024 * 1024 * 1024
    log_roll_ms: int = 7 * 24 * 3600 * 1000
    log_retention_ms: int = 7 * 24 * 3600 * 1000
    log_retention_bytes: int = -1
    log_retention_check_interval_ms: int = 300_000
    log_message_timestamp_type: str = "CreateTime"
    # flush policy: every append is written to the OS before it is acknowledged, so
    # a process crash never loses an acknowledged record; these add fsyncs on top.
    log_flush_interval_messages: int = 2**63 - 1
    log_flush_interval_ms: int | None = 1000
    # the other broker-level defaults of topic configs (Kafka's names; see broker.log.config)
    log_cleanup_policy: str = "delete"
    log_roll_jitter_ms: int = 0
    log_index_interval_bytes: int = 4096
    log_index_size_max_bytes: int = 10 * 1024 * 1024
    log_segment_delete_delay_ms: int = 60_000
    log_message_timestamp_before_max_ms: int = 2**63 - 1
    log_message_timestamp_after_max_ms: int = 2**63 - 1
    log_preallocate: bool = False
    compression_type: str = "producer"
    compression_gzip_level: int = -1
    compression_lz4_level: int = 9
    compression_zstd_level: int = 3

    # log compaction (cleanup.policy=compact): the defaults of the topic configs, and the cleaner
    log_cleaner_delete_retention_ms: int = 86_400_000
    log_cleaner_min_compaction_lag_ms: int = 0
    log_cleaner_max_compaction_lag_ms: int = 2**63 - 1
    log_cleaner_min_cleanable_ratio: float = 0.5
    # memory for the key -> offset map of one cleaning pass; a pass cleans up to where it is full
    log_cleaner_dedupe_buffer_size: int = 128 * 1024 * 1024
    # how often logs are checked for something to clean
    log_cleaner_backoff_ms: int = 15_000

    # group coordinator
    group_initial_rebalance_delay_ms: int = 3000
    group_min_session_timeout_ms: int = 6000
    group_max_session_timeout_ms: int = 1_800_000
    group_max_size: int = 2**31 - 1
    # KIP-848 consumer groups (Kafka's group.consumer.* with its bounds)
    group_consumer_heartbeat_interval_ms: int = 5000
    group_consumer_min_heartbeat_interval_ms: int = 5000
    group_consumer_max_heartbeat_interval_ms: int = 15_000
    group_consumer_session_timeout_ms: int = 45_000
    group_consumer_min_session_timeout_ms: int = 45_000
    group_consumer_max_session_timeout_ms: int = 60_000
    group_consumer_assignors: str = "uniform,range"
    group_consumer_max_size: int = 2**31 - 1
    # share groups (KIP-932: Kafka's group.share.* with its bounds; share.version 1, on by default as in 4.2)
    group_share_heartbeat_interval_ms: int = 5000
    group_share_min_heartbeat_interval_ms: int = 5000
    group_share_max_heartbeat_interval_ms: int = 15_000
    group_share_session_timeout_ms: int = 45_000
    group_share_min_session_timeout_ms: int = 45_000
    group_share_max_session_timeout_ms: int = 60_000
    group_share_max_size: int = 200
    group_share_assignors: str = "simple"
    group_share_delivery_count_limit: int = 5
    group_share_record_lock_duration_ms: int = 30_000
    group_share_min_record_lock_duration_ms: int = 15_000
    group_share_max_record_lock_duration_ms: int = 60_000
    group_share_partition_max_record_locks: int = 2000
    group_share_max_share_sessions: int = 2000
    #: how long the group coordinator waits before retrying a failed initialization of share state
    group_share_initialize_retry_interval_ms: int = 30_000
    # the share coordinator (``__share_group_state``)
    share_coordinator_state_topic_num_partitions: int = 50
    #: None: 3 in a cluster (as Kafka), 1 for a single broker
    share_coordinator_state_topic_replication_factor: int | None = None
    #: min.insync.replicas of __share_group_state (at most its replication factor)
    share_coordinator_state_topic_min_isr: int = 2
    share_coordinator_state_topic_segment_bytes: int = 100 * 1024 * 1024
    share_coordinator_snapshot_update_records_per_snapshot: int = 500
    share_coordinator_write_timeout_ms: int = 5000
    offsets_topic_num_partitions: int = 50
    offsets_retention_minutes: int = 10080
    offsets_retention_check_interval_ms: int = 600_000
    offset_metadata_max_bytes: int = 4096

    # transaction coordinator
    transaction_state_log_num_partitions: int = 50
    #: None: 3 in a cluster (as Kafka), 1 for a single broker
    transaction_state_log_replication_factor: int | None = None
    #: min.insync.replicas of __transaction_state (at most its replication factor)
    transaction_state_log_min_isr: int = 2
    transaction_state_log_segment_bytes: int = 100 * 1024 * 1024
    transaction_max_timeout_ms: int = 900_000
    transactional_id_expiration_ms: int = 7 * 24 * 3600 * 1000
    #: a transaction past its timeout that was busy (a state change being written) is looked at again after this
    transaction_abort_timed_out_transaction_cleanup_interval_ms: int = 10_000
    #: markers and coordinator checks between brokers: request timeout and retry backoff
    transaction_marker_request_timeout_ms: int = 30_000
    transaction_marker_retry_backoff_ms: int = 100

    # operation
    log_level: str = "INFO"

    @property
    def advertised_host_port(self) -> tuple[str, int]:
        if self.advertised_listener:
            host, _, port = self.advertised_listener.rpartition(":")
            return host or self.host, int(port)
        host = self.host if self.host not in ("0.0.0.0", "::", "") else "localhost"
        return host, self.port

    def with_overrides(self, **overrides: Any) -> BrokerConfig:
        return dataclasses.replace(self, **overrides)

    @property
    def data_path(self) -> Path:
        return Path(self.data_dir)

    @property
    def offsets_replication_factor(self) -> int:
        if self.offsets_topic_replication_factor is not None:
            return self.offsets_topic_replication_factor
        return 3 if self.cluster else 1

    @property
    def etcd_request_timeout(self) -> float:
        """``etcd.request.timeout.ms`` in seconds (derived from the session timeout when not set)."""
        if self.etcd_request_timeout_ms is not None:
            return self.etcd_request_timeout_ms / 1000
        return self.broker_session_timeout_ms / 3000

    @property
    def share_state_replication_factor(self) -> int:
        if self.share_coordinator_state_topic_replication_factor is not None:
            return self.share_coordinator_state_topic_replication_factor
        return 3 if self.cluster else 1

    @property
    def transaction_state_replication_factor(self) -> int:
        if self.transaction_state_log_replication_factor is not None:
            return self.transaction_state_log_replication_factor
        return 3 if self.cluster else 1


class ConfigError(ValueError):
    """A setting that does not exist or a value that does not parse (``python -m broker`` exits 2)."""


#: The known settings, derived from the dataclass: a field added later is a setting at once.
_FIELDS = {f.name: f for f in dataclasses.fields(BrokerConfig)}

#: ``KBROKER_*`` environment variables that are read elsewhere and are not settings:
#: the TOML file (here), the log format (``broker.observability.logging_setup``), the admin CLI's bootstrap.
NON_SETTING_ENV = frozenset({"KBROKER_CONFIG", "KBROKER_LOG_FORMAT", "KBROKER_BOOTSTRAP"})

_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


def _coerce(name: str, raw: Any, key: str, source: str) -> Any:
    ftype = str(_FIELDS[name].type)
    if raw is None or (isinstance(raw, str) and raw.strip().lower() in ("none", "null") and "None" in ftype):
        if "None" not in ftype:
            raise ConfigError(f"setting {key!r} ({source}) cannot be empty")
        return None
    if ftype.startswith("bool"):
        if isinstance(raw, bool):
            return raw
        text = str(raw).strip().lower()
        if text in _TRUE or text in _FALSE:
            return text in _TRUE
        raise ConfigError(f"setting {key!r} ({source}): {raw!r} is not a boolean (true/false)")
    if ftype.startswith("float"):
        if isinstance(raw, bool):
            raise ConfigError(f"setting {key!r} ({source}): {raw!r} is not a number")
        try:
            value = float(raw.strip()) if isinstance(raw, str) else float(raw)
        except (TypeError, ValueError):
            raise ConfigError(f"setting {key!r} ({source}): {raw!r} is not a number") from None
        if value != value:
            raise ConfigError(f"setting {key!r} ({source}): {raw!r} is not a number")
        return value
    if ftype.startswith("int"):
        if isinstance(raw, bool) or (isinstance(raw, float) and not raw.is_integer()):
            raise ConfigError(f"setting {key!r} ({source}): {raw!r} is not an integer")
        try:
            return int(raw.strip()) if isinstance(raw, str) else int(raw)
        except (TypeError, ValueError):
            raise ConfigError(f"setting {key!r} ({source}): {raw!r} is not an integer") from None
    return str(raw)


def _normalise(key: str) -> str:
    return key.strip().lower().replace(".", "_").replace("-", "_")


def _spelled_like(name: str, key: str, source: str) -> str:
    """Field ``name`` written the way the user wrote ``key`` (dots, dashes, underscores, env)."""
    if source == "environment":
        return ENV_PREFIX + name.upper()
    if "." in key:
        return name.replace("_", ".")
    if "-" in key:
        return name.replace("_", "-")
    return name


def _unknown(key: str, name: str, source: str) -> ConfigError:
    close = difflib.get_close_matches(name, list(_FIELDS), n=1, cutoff=0.6)
    hint = f"; did you mean {_spelled_like(close[0], key, source)!r}?" if close else ""
    return ConfigError(f"unknown setting {key!r} ({source}){hint}")


def known_settings() -> list[str]:
    """Every setting name, in Kafka's dotted spelling (``log.retention.ms``)."""
    return sorted(name.replace("_", ".") for name in _FIELDS)


def setting_name(key: str) -> str | None:
    """The field behind a setting written any way (``log.retention.ms``, ``log_retention_ms``); None if none."""
    name = _normalise(key)
    return name if name in _FIELDS else None


def is_sensitive(key: str) -> bool:
    """Whether the setting behind ``key`` (any spelling) is declared secret (see :data:`SENSITIVE`)."""
    name = setting_name(key)
    return name is not None and bool(_FIELDS[name].metadata.get(SENSITIVE))


def parse_setting(key: str, raw: Any, source: str = "setting") -> Any:
    """The typed value of one setting (ConfigError for an unknown key or a value that does not parse)."""
    name = _normalise(key)
    if name not in _FIELDS:
        raise _unknown(key, name, source)
    return _coerce(name, raw, key, source)


# ---------------------------------------------------------------------------------------------------
# Dynamic settings (Kafka's DynamicBrokerConfig): what IncrementalAlterConfigs / AlterConfigs may change
# on a running broker, per broker or as the cluster-wide default.  See broker.config.dynamic.

def _topic_default_synonyms() -> frozenset[str]:
    from broker.log.config import TOPIC_CONFIGS

    names = {name for d in TOPIC_CONFIGS.values() for name, _ in d.synonyms}
    return frozenset(names - {"log.flush.scheduler.interval.ms", "log.local.retention.ms", "log.local.retention.bytes"})


#: Dynamic settings this broker applies as they change: every broker-level default of a topic config
#: (``log.retention.ms``, ``message.max.bytes``, ``log.cleanup.policy``, ``compression.type``, ...,
#: including Kafka's hour/minute spellings), the log cleaner's memory and check interval, and the
#: connection limit, and the replication throttles.
DYNAMIC_SETTINGS: frozenset[str] = _topic_default_synonyms() | {
    "log.cleaner.dedupe.buffer.size", "log.cleaner.backoff.ms", "max.connections",
    "leader.replication.throttled.rate", "follower.replication.throttled.rate",
}

#: Kafka's other dynamic broker configs, accepted, stored and reported like the rest, with nothing
#: to tune here: thread pools (this broker has one event loop and one cleaner thread), Kafka's flush
#: scheduler (flushes are checked every log.flush.interval.ms), tiered storage's local retention, and
#: the Kerberos / token-login refresh settings (no such login here).  Name -> value type.
DYNAMIC_WITHOUT_EFFECT: dict[str, str] = {
    "num.io.threads": "int", "num.network.threads": "int", "num.replica.fetchers": "int",
    "num.recovery.threads.per.data.dir": "int", "background.threads": "int", "log.cleaner.threads": "int",
    "log.cleaner.io.buffer.size": "int", "log.cleaner.io.buffer.load.factor": "double",
    "log.cleaner.io.max.bytes.per.second": "double",
    "log.flush.scheduler.interval.ms": "long", "log.local.retention.ms": "long",
    "log.local.retention.bytes": "long",
    "sasl.kerberos.kinit.cmd": "string", "sasl.kerberos.service.name": "string",
    "sasl.kerberos.min.time.before.relogin": "long", "sasl.kerberos.ticket.renew.jitter": "double",
    "sasl.kerberos.ticket.renew.window.factor": "double", "sasl.login.refresh.buffer.seconds": "short",
    "sasl.login.refresh.min.period.seconds": "short", "sasl.login.refresh.window.factor": "double",
    "sasl.login.refresh.window.jitter": "double",
}

#: Dynamic configs Kafka takes per broker only, never as the cluster-wide default (its listener and
#: security configs).
PER_BROKER_ONLY: frozenset[str] = frozenset(n for n in DYNAMIC_WITHOUT_EFFECT if n.startswith("sasl."))


def is_dynamic(name: str) -> bool:
    return name in DYNAMIC_SETTINGS or name in DYNAMIC_WITHOUT_EFFECT


def _apply(pairs: list[tuple[str, str, Any]], base: BrokerConfig | None, source: str) -> BrokerConfig:
    """Apply ``(key as written, name, raw value)`` triples; unknown names raise ConfigError."""
    updates: dict[str, Any] = {}
    for key, name, raw in pairs:
        if name not in _FIELDS:
            raise _unknown(key, name, source)
        updates[name] = _coerce(name, raw, key, source)
    return dataclasses.replace(base or BrokerConfig(), **updates)


def from_mapping(values: Mapping[str, Any], base: BrokerConfig | None = None, *,
                 source: str = "setting") -> BrokerConfig:
    """Apply ``values`` (keys like ``port``, ``log.retention.ms`` or ``log-retention-ms``).

    Raises :class:`ConfigError` naming the key (and the closest known one) for an unknown
    setting, and for a value that does not parse as the setting's type.
    """
    return _apply([(key, _normalise(key), raw) for key, raw in values.items()], base, source)


def from_toml(path: str | Path, base: BrokerConfig | None = None) -> BrokerConfig:
    """Apply a TOML file: top-level keys, a ``[broker]`` table, or tables as prefixes (``[log]``)."""
    try:
        with open(path, "rb") as fh:
            data = tomllib.load(fh)
    except OSError as exc:
        raise ConfigError(f"cannot read configuration file {path}: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"configuration file {path} is not valid TOML: {exc}") from None
    pairs: list[tuple[str, str, Any]] = []

    def walk(path_parts: tuple[str, ...], node: dict[str, Any]) -> None:
        for key, value in node.items():
            parts = (*path_parts, key) if path_parts != ("broker",) else (key,)
            if isinstance(value, dict):
                walk(parts, value)
            else:
                written = ".".join(parts)
                pairs.append((written, _normalise("_".join(parts)), value))

    walk((), data)
    return _apply(pairs, base, f"in {path}")


def from_env(environ: Mapping[str, str] | None = None, base: BrokerConfig | None = None) -> BrokerConfig:
    """Apply ``KBROKER_*`` variables (``KBROKER_LOG_RETENTION_MS``); see :data:`NON_SETTING_ENV`."""
    env = os.environ if environ is None else environ
    pairs = [(k, _normalise(k[len(ENV_PREFIX):]), v) for k, v in sorted(env.items())
             if k.startswith(ENV_PREFIX) and k not in NON_SETTING_ENV]
    return _apply(pairs, base, "environment")


def build_arg_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m broker", description="kbroker: a Kafka-protocol broker")
    parser.add_argument("--config", help="TOML configuration file (KBROKER_CONFIG)")
    parser.add_argument("--host", help="listen address (default 127.0.0.1)")
    parser.add_argument("--port", type=int, help="listen port (default 9092)")
    parser.add_argument("--data-dir", help="log directory (default ./data)")
    parser.add_argument("--metrics-port", type=int, help="Prometheus /metrics port (default 9464; 0 disables)")
    parser.add_argument("--advertised-listener", help="host:port clients should connect to")
    parser.add_argument("--node-id", type=int, help="this broker's id, unique in the cluster (default 1)")
    parser.add_argument("--cluster", metavar="etcd://HOST:PORT[,HOST:PORT...]",
                        help="join the cluster whose metadata is in this etcd (KBROKER_CLUSTER); "
                             "without it the broker runs alone with its metadata in the data directory")
    parser.add_argument("--log-level", help="DEBUG, INFO, WARNING, ERROR")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="any other setting, e.g. --set group.initial.rebalance.delay.ms=0")
    return parser


def load(argv: list[str] | None = None, environ: Mapping[str, str] | None = None) -> BrokerConfig:
    """Build the configuration for the command line ``python -m broker``.

    A usage error (an unknown setting, a value that does not parse, an unreadable file) prints
    one line naming it and exits with code 2, as argparse does for a bad flag.
    """
    parser = build_arg_parser()
    args = parser.parse_args(argv)
    try:
        return _load(args, os.environ if environ is None else environ)
    except ConfigError as exc:
        parser.exit(2, f"{parser.prog}: error: {exc}\n")


def _load(args: argparse.Namespace, env: Mapping[str, str]) -> BrokerConfig:
    config = BrokerConfig(metrics_port=9464)
    config_file = args.config or env.get("KBROKER_CONFIG")
    if config_file:
        config = from_toml(config_file, config)
    config = from_env(env, config)
    flags = {
        "host": args.host,
        "port": args.port,
        "data_dir": args.data_dir,
        "metrics_port": args.metrics_port,
        "advertised_listener": args.advertised_listener,
        "node_id": args.node_id,
        "cluster": args.cluster,
        "log_level": args.log_level,
    }
    config = from_mapping({k: v for k, v in flags.items() if v is not None}, config)
    settings: dict[str, str] = {}
    for item in args.set:
        key, sep, value = item.partition("=")
        if not sep:
            raise ConfigError(f"--set expects KEY=VALUE, got {item!r}")
        settings[key] = value
    config = from_mapping(settings, config, source="--set")
    if config.metrics_port == 0:
        config.metrics_port = None
    validate(config)
    return config


def validate(config: BrokerConfig) -> None:
    """Cross-checks of values (the broker-level ``log.*`` defaults are topic configs too)."""
    from broker.config.dynamic import broker_log_defaults
    from broker.log.config import LogConfig
    from broker.log.errors import InvalidConfigError

    try:
        LogConfig.from_dict(None, broker_log_defaults(config))
    except InvalidConfigError as exc:
        raise ConfigError(f"invalid log setting: {exc.detail}") from None
    if config.offsets_topic_num_partitions < 1:
        raise ConfigError("offsets.topic.num.partitions must be at least 1")
    if config.transaction_state_log_num_partitions < 1:
        raise ConfigError("transaction.state.log.num.partitions must be at least 1")
    if config.transaction_max_timeout_ms < 1:
        raise ConfigError("transaction.max.timeout.ms must be at least 1")
    if config.broker_session_timeout_ms < 3:
        raise ConfigError("broker.session.timeout.ms must be at least 3")
    if config.etcd_request_timeout_ms is not None and not \
            1 <= config.etcd_request_timeout_ms <= config.broker_session_timeout_ms // 3:
        raise ConfigError(f"etcd.request.timeout.ms ({config.etcd_request_timeout_ms}) must be between 1 and a third "
                          f"of broker.session.timeout.ms ({config.broker_session_timeout_ms // 3})")
    from broker.security.setup import check_security_settings

    try:
        check_security_settings(config)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    _validate_consumer_groups(config)
    _validate_share_groups(config)


def consumer_group_assignors(config: BrokerConfig) -> tuple[str, ...]:
    """``group.consumer.assignors`` as names (the first is the default)."""
    return tuple(n.strip() for n in config.group_consumer_assignors.split(",") if n.strip())


def _validate_consumer_groups(config: BrokerConfig) -> None:
    """Kafka's GroupCoordinatorConfig checks of the ``group.consumer.*`` settings."""
    from broker.coordinator.group.assignors import ASSIGNORS

    c = config
    for name in ("heartbeat_interval_ms", "session_timeout_ms"):
        value = getattr(c, f"group_consumer_{name}")
        low, high = getattr(c, f"group_consumer_min_{name}"), getattr(c, f"group_consumer_max_{name}")
        dotted = "group.consumer." + name.replace("_", ".")
        if low < 1:
            raise ConfigError(f"group.consumer.min.{name.replace('_', '.')} must be at least 1")
        if not low <= value <= high:
            raise ConfigError(f"{dotted} ({value}) must be between group.consumer.min.{name.replace('_', '.')} "
                              f"({low}) and group.consumer.max.{name.replace('_', '.')} ({high})")
    if c.group_consumer_heartbeat_interval_ms >= c.group_consumer_session_timeout_ms:
        raise ConfigError("group.consumer.heartbeat.interval.ms must be less than group.consumer.session.timeout.ms")
    names = consumer_group_assignors(c)
    if not names:
        raise ConfigError("group.consumer.assignors must name at least one assignor")
    unknown = [n for n in names if n not in ASSIGNORS]
    if unknown:
        raise ConfigError(f"group.consumer.assignors: unknown assignor(s) {', '.join(unknown)} "
                          f"(known: {', '.join(ASSIGNORS)})")
    if c.group_consumer_max_size < 1:
        raise ConfigError("group.consumer.max.size must be at least 1")


def _validate_share_groups(config: BrokerConfig) -> None:
    """Kafka's GroupCoordinatorConfig / ShareGroupConfig / ShareCoordinatorConfig checks of the share settings."""
    c = config
    for name in ("heartbeat_interval_ms", "session_timeout_ms", "record_lock_duration_ms"):
        value = getattr(c, f"group_share_{name}")
        low, high = getattr(c, f"group_share_min_{name}"), getattr(c, f"group_share_max_{name}")
        dotted = name.replace("_", ".")
        if low < 1:
            raise ConfigError(f"group.share.min.{dotted} must be at least 1")
        if not low <= value <= high:
            raise ConfigError(f"group.share.{dotted} ({value}) must be between group.share.min.{dotted} ({low}) and "
                              f"group.share.max.{dotted} ({high})")
    if c.group_share_heartbeat_interval_ms >= c.group_share_session_timeout_ms:
        raise ConfigError("group.share.heartbeat.interval.ms must be less than group.share.session.timeout.ms")
    if not 1 <= c.group_share_max_size <= 1000:
        raise ConfigError("group.share.max.size must be between 1 and 1000")
    if [n.strip() for n in c.group_share_assignors.split(",") if n.strip()] != ["simple"]:
        raise ConfigError("group.share.assignors must name exactly one assignor: simple")
    if not 2 <= c.group_share_delivery_count_limit <= 10:
        raise ConfigError("group.share.delivery.count.limit must be between 2 and 10")
    if not 100 <= c.group_share_partition_max_record_locks <= 10000:
        raise ConfigError("group.share.partition.max.record.locks must be between 100 and 10000")
    if c.group_share_max_share_sessions < max(1, c.group_share_max_size):
        raise ConfigError("group.share.max.share.sessions must be at least group.share.max.size")
    if c.group_share_initialize_retry_interval_ms < 1:
        raise ConfigError("group.share.initialize.retry.interval.ms must be at least 1")
    for name in ("num_partitions", "min_isr", "segment_bytes"):
        if getattr(c, f"share_coordinator_state_topic_{name}") < 1:
            raise ConfigError(f"share.coordinator.state.topic.{name.replace('_', '.')} must be at least 1")
    if c.share_coordinator_snapshot_update_records_per_snapshot < 0:
        raise ConfigError("share.coordinator.snapshot.update.records.per.snapshot must be at least 0")
    if c.share_coordinator_write_timeout_ms < 1:
        raise ConfigError("share.coordinator.write.timeout.ms must be at least 1")
