"""Broker configuration: one dataclass, filled from defaults, a TOML file, ``KBROKER_*`` env and flags.

Precedence, lowest to highest: built-in defaults, the TOML file
(``--config``), environment variables (``KBROKER_PORT=9093``), command-line
flags.  Every limit the broker enforces is a field here.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ENV_PREFIX = "KBROKER_"


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
    default_replication_factor: int = 1
    min_insync_replicas: int = 1
    #: None: 3 in a cluster (as Kafka), 1 for a single broker
    offsets_topic_replication_factor: int | None = None
    replica_lag_time_max_ms: int = 30_000
    unclean_leader_election_enable: bool = False
    replica_fetch_wait_max_ms: int = 500
    replica_fetch_min_bytes: int = 1
    replica_fetch_max_bytes: int = 1024 * 1024
    replica_fetch_response_max_bytes: int = 10 * 1024 * 1024
    replica_fetch_backoff_ms: int = 1000
    replica_socket_timeout_ms: int = 30_000
    auto_leader_rebalance_enable: bool = True
    leader_imbalance_check_interval_seconds: int = 300
    leader_imbalance_per_broker_percentage: int = 10

    # connection limits
    max_frame_bytes: int = 100 * 1024 * 1024
    max_connections: int = 10_000
    connections_max_idle_ms: int = 600_000
    max_in_flight_requests_per_connection: int = 1_000

    # topics and logs
    auto_create_topics_enable: bool = True
    num_partitions: int = 1
    delete_topic_enable: bool = True
    message_max_bytes: int = 1_048_588
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

    # group coordinator
    group_initial_rebalance_delay_ms: int = 3000
    group_min_session_timeout_ms: int = 6000
    group_max_session_timeout_ms: int = 1_800_000
    group_max_size: int = 2**31 - 1
    offsets_topic_num_partitions: int = 50
    offsets_retention_minutes: int = 10080
    offsets_retention_check_interval_ms: int = 600_000
    offset_metadata_max_bytes: int = 4096

    # operation
    log_level: str = "INFO"
    extra: dict[str, Any] = field(default_factory=dict)

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


_FIELDS = {f.name: f for f in dataclasses.fields(BrokerConfig) if f.name != "extra"}


def _coerce(name: str, raw: Any) -> Any:
    ftype = str(_FIELDS[name].type)
    if raw is None or (isinstance(raw, str) and raw.lower() in ("none", "null") and "None" in ftype):
        return None
    if ftype.startswith("bool"):
        if isinstance(raw, bool):
            return raw
        return str(raw).strip().lower() in ("1", "true", "yes", "on")
    if ftype.startswith("int"):
        return int(raw)
    return str(raw)


def _normalise(key: str) -> str:
    return key.strip().lower().replace(".", "_").replace("-", "_")


def from_mapping(values: dict[str, Any], base: BrokerConfig | None = None) -> BrokerConfig:
    """Apply ``values`` (keys like ``port``, ``log.retention.ms`` or ``log-retention-ms``)."""
    config = base or BrokerConfig()
    updates: dict[str, Any] = {}
    extra = dict(config.extra)
    for key, raw in values.items():
        name = _normalise(key)
        if name in _FIELDS:
            updates[name] = _coerce(name, raw)
        else:
            extra[name] = raw
    return dataclasses.replace(config, extra=extra, **updates)


def from_toml(path: str | Path, base: BrokerConfig | None = None) -> BrokerConfig:
    with open(path, "rb") as fh:
        data = tomllib.load(fh)
    flat: dict[str, Any] = {}

    def walk(prefix: str, node: dict[str, Any]) -> None:
        for key, value in node.items():
            full = f"{prefix}_{key}" if prefix and prefix != "broker" else key
            if isinstance(value, dict):
                walk(full, value)
            else:
                flat[full] = value

    walk("", data)
    return from_mapping(flat, base)


def from_env(environ: dict[str, str] | None = None, base: BrokerConfig | None = None) -> BrokerConfig:
    env = os.environ if environ is None else environ
    values = {k[len(ENV_PREFIX):]: v for k, v in env.items() if k.startswith(ENV_PREFIX) and k != "KBROKER_CONFIG"}
    return from_mapping({k: v for k, v in values.items() if _normalise(k) in _FIELDS}, base)


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


def load(argv: list[str] | None = None, environ: dict[str, str] | None = None) -> BrokerConfig:
    """Build the configuration for the command line ``python -m broker``."""
    args = build_arg_parser().parse_args(argv)
    env = os.environ if environ is None else environ
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
    extra: dict[str, str] = {}
    for item in args.set:
        key, sep, value = item.partition("=")
        if not sep:
            raise SystemExit(f"--set expects KEY=VALUE, got {item!r}")
        extra[key] = value
    config = from_mapping(extra, config)
    if config.metrics_port == 0:
        config.metrics_port = None
    return config
