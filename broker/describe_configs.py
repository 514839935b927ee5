"""DescribeConfigs: broker and topic configuration entries as Kafka's admin tools expect them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from protocol.error_codes import ErrorCode

if TYPE_CHECKING:
    from broker.cluster.image import MetadataImage
    from broker.config import BrokerConfig
    from broker.log.manager import LogManager

TOPIC, BROKER, BROKER_LOGGER = 2, 4, 8
# ConfigSource
DYNAMIC_TOPIC_CONFIG, STATIC_BROKER_CONFIG, DEFAULT_CONFIG = 1, 4, 5
# ConfigType
BOOLEAN, STRING, INT, LONG, LIST = 1, 2, 3, 5, 7

_TOPIC_TYPES = {
    "cleanup.policy": LIST, "compression.type": STRING, "message.timestamp.type": STRING,
    "min.insync.replicas": INT, "max.message.bytes": INT, "index.interval.bytes": INT,
}

_TOPIC_TO_BROKER = {
    "retention.ms": "log.retention.ms", "retention.bytes": "log.retention.bytes",
    "segment.bytes": "log.segment.bytes", "segment.ms": "log.roll.ms", "max.message.bytes": "message.max.bytes",
    "cleanup.policy": "log.cleanup.policy", "message.timestamp.type": "log.message.timestamp.type",
    "flush.messages": "log.flush.interval.messages", "flush.ms": "log.flush.interval.ms",
    "compression.type": "compression.type", "min.insync.replicas": "min.insync.replicas",
}


@dataclass(frozen=True)
class ConfigView:
    """What DescribeConfigs reads: the broker's settings, the log defaults, and topics from the image."""

    config: BrokerConfig
    logs: LogManager
    image: MetadataImage
    listener: str = "PLAINTEXT"


def _broker_entries(view: ConfigView) -> dict[str, tuple[str | None, int]]:
    c = view.config
    reg = view.image.brokers.get(c.node_id)
    endpoints = reg.endpoints if reg is not None else ()
    advertised = ",".join(f"{e.listener}://{e.host}:{e.port}" for e in endpoints)
    ep = reg.endpoint(view.listener) if reg is not None else None
    port = ep.port if ep is not None else c.port
    values: dict[str, Any] = {
        "broker.id": c.node_id, "node.id": c.node_id,
        "listeners": c.listeners or f"PLAINTEXT://{c.host}:{port}",
        "advertised.listeners": advertised or f"PLAINTEXT://{c.host}:{port}",
        "inter.broker.listener.name": (c.inter_broker_listener_name or "").upper() or
        (endpoints[0].listener if endpoints else "PLAINTEXT"),
        "sasl.enabled.mechanisms": c.sasl_enabled_mechanisms,
        "authorizer.enabled": str(c.authorizer_enabled).lower(), "super.users": c.super_users,
        "allow.everyone.if.no.acl.found": str(c.allow_everyone_if_no_acl_found).lower(),
        "log.dirs": str(c.data_path), "log.dir": str(c.data_path),
        "num.partitions": c.num_partitions, "default.replication.factor": c.default_replication_factor,
        "auto.create.topics.enable": str(c.auto_create_topics_enable).lower(),
        "delete.topic.enable": str(c.delete_topic_enable).lower(),
        "message.max.bytes": c.message_max_bytes, "fetch.max.bytes": c.fetch_max_bytes,
        "socket.request.max.bytes": c.max_frame_bytes, "max.connections": c.max_connections,
        "connections.max.idle.ms": c.connections_max_idle_ms,
        "log.segment.bytes": c.log_segment_bytes, "log.roll.ms": c.log_roll_ms,
        "log.retention.ms": c.log_retention_ms, "log.retention.bytes": c.log_retention_bytes,
        "log.retention.check.interval.ms": c.log_retention_check_interval_ms,
        "log.message.timestamp.type": c.log_message_timestamp_type,
        "log.flush.interval.messages": c.log_flush_interval_messages,
        "log.flush.interval.ms": c.log_flush_interval_ms,
        "log.cleanup.policy": "delete", "compression.type": "producer",
        "min.insync.replicas": c.min_insync_replicas, "broker.rack": c.broker_rack,
        "unclean.leader.election.enable": str(c.unclean_leader_election_enable).lower(),
        "replica.lag.time.max.ms": c.replica_lag_time_max_ms,
        "group.initial.rebalance.delay.ms": c.group_initial_rebalance_delay_ms,
        "group.min.session.timeout.ms": c.group_min_session_timeout_ms,
        "group.max.session.timeout.ms": c.group_max_session_timeout_ms,
        "group.max.size": c.group_max_size,
        "offsets.topic.num.partitions": c.offsets_topic_num_partitions,
        "offsets.topic.replication.factor": c.offsets_replication_factor,
        "offsets.retention.minutes": c.offsets_retention_minutes,
        "offset.metadata.max.bytes": c.offset_metadata_max_bytes,
    }
    return {k: (None if v is None else str(v), STATIC_BROKER_CONFIG) for k, v in values.items()}


def describe_resource(view: ConfigView, resource: Any, include_synonyms: bool, include_docs: bool) -> dict[str, Any]:
    rtype, name, keys = resource.resource_type, resource.resource_name, resource.configuration_keys
    result: dict[str, Any] = {"error_code": 0, "error_message": None, "resource_type": rtype,
                              "resource_name": name, "configs": []}
    if rtype == TOPIC:
        topic = view.image.topic(name)
        if topic is None:
            result.update(error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                          error_message=f"Topic {name} does not exist")
            return result
        entries = {}
        for key, (value, is_default) in view.logs.effective_configs(topic.configs).items():
            if not is_default:
                entries[key] = (value, DYNAMIC_TOPIC_CONFIG)
            else:
                broker_key = _TOPIC_TO_BROKER.get(key)
                source = STATIC_BROKER_CONFIG if key in view.logs.default_configs and broker_key else DEFAULT_CONFIG
                entries[key] = (value, source)
    elif rtype == BROKER:
        if name not in ("", str(view.config.node_id)):
            result.update(error_code=ErrorCode.INVALID_REQUEST, error_message=f"unknown broker {name}")
            return result
        entries = _broker_entries(view)
    elif rtype == BROKER_LOGGER:
        entries = {}
    else:
        result.update(error_code=ErrorCode.INVALID_REQUEST, error_message=f"unsupported resource type {rtype}")
        return result
    for key, (value, source) in entries.items():
        if keys is not None and key not in keys:
            continue
        synonyms = []
        if include_synonyms:
            synonyms.append({"name": key, "value": value, "source": source})
            broker_key = _TOPIC_TO_BROKER.get(key) if rtype == TOPIC else None
            if broker_key and source != STATIC_BROKER_CONFIG:
                synonyms.append({"name": broker_key, "value": value, "source": DEFAULT_CONFIG})
        result["configs"].append({
            "name": key, "value": value, "read_only": rtype == BROKER, "config_source": source,
            "is_sensitive": False, "synonyms": synonyms,
            "config_type": _TOPIC_TYPES.get(key, LONG if (value or "").lstrip("-").isdigit() else STRING),
            "documentation": None,
        })
    return result
