"""DescribeConfigs: topic, broker and broker-logger configuration entries as Kafka's admin tools expect them.

Each entry carries its value, where that value comes from (``config_source``) and, when asked,
every *synonym* that could supply it, highest precedence first (Kafka's ``ConfigHelper``):

* a topic config: the topic's own override (DYNAMIC_TOPIC_CONFIG), then each broker setting that
  gives its default (``retention.ms`` ← ``log.retention.ms``, ``log.retention.minutes``, ...) in
  every layer that sets it: dynamic for this broker, dynamic cluster default, static, built-in;
* a broker config (resource name = this broker's id): its own layers the same way; ``read_only``
  unless it is one of the dynamically updatable settings; its type, sensitivity and (when asked)
  documentation are its declaration's (:mod:`broker.config.settings`);
* the cluster-wide default (resource name ``""``): the dynamic defaults that are set;
* a broker logger (resource type 8): this broker's loggers and their levels (see
  :mod:`broker.observability.loggers`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from broker.config.declare import INT, STRING
from broker.config.dynamic import (
    DEFAULT_CONFIG,
    DYNAMIC_BROKER_CONFIG,
    DYNAMIC_DEFAULT_BROKER_CONFIG,
    DYNAMIC_TOPIC_CONFIG,
    STATIC_BROKER_CONFIG,
    DynamicBrokerConfig,
    unit_synonyms,
)
from broker.config.settings import TOPIC_SYNONYMS, BrokerConfig, declared, is_dynamic, kafka_settings
from broker.coordinator.group.group_configs import GROUP_CONFIGS, effective_group_configs
from broker.log.config import TOPIC_CONFIGS
from broker.observability.loggers import describe_loggers
from broker.security.setup import inter_broker_listener_name
from protocol.error_codes import ErrorCode

if TYPE_CHECKING:
    from collections.abc import Sequence

    from broker.cluster.image import MetadataImage
    from broker.log.manager import LogManager
    from broker.security.listeners import Endpoint

TOPIC, BROKER, BROKER_LOGGER, GROUP = 2, 4, 8, 32
#: ConfigSource of a group config set on the group (Kafka's GROUP_CONFIG)
GROUP_CONFIG_SOURCE = 8

Entry = tuple[str | None, int, list[tuple[str, str | None, int]]]  # value, source, synonyms


@dataclass(frozen=True)
class ConfigView:
    """What DescribeConfigs reads: the broker's layered settings, the logs' topic defaults, the image."""

    config: BrokerConfig
    dynamic: DynamicBrokerConfig
    logs: LogManager
    image: MetadataImage
    listener: str = "PLAINTEXT"

    @property
    def advertised(self) -> tuple[str, int]:
        reg = self.image.brokers.get(self.config.node_id)
        ep = reg.endpoint(self.listener) if reg is not None else None
        return (ep.host, ep.port) if ep is not None else (self.config.host, self.config.port)

    @property
    def endpoints(self) -> tuple[Endpoint, ...]:
        """This broker's advertised listeners, as registered."""
        reg = self.image.brokers.get(self.config.node_id)
        return reg.endpoints if reg is not None else ()


def read_only_aliases(config: BrokerConfig, endpoints: Sequence[Endpoint], port: int) -> dict[str, str | None]:
    """Kafka's names for settings this broker spells otherwise (reported read-only, see
    :data:`~broker.config.dynamic.READ_ONLY_NAMES`): ``endpoints`` are its advertised listeners as
    registered, ``port`` the one the asking client reached."""
    plaintext = f"PLAINTEXT://{config.host}:{port}"
    return {
        "broker.id": str(config.node_id),
        "listeners": config.listeners or plaintext,
        "advertised.listeners": ",".join(f"{e.listener}://{e.host}:{e.port}" for e in endpoints) or plaintext,
        "inter.broker.listener.name": inter_broker_listener_name(config),
        "log.dirs": str(config.data_path), "log.dir": str(config.data_path),
        "socket.request.max.bytes": str(config.max_frame_bytes),
    }


def _broker_synonyms(view: ConfigView, names: list[str], *, per_broker: bool = True) -> list[tuple[str, str | None, int]]:
    """Kafka's ``configSynonyms``: each layer (highest first), within it each synonym that it sets."""
    layers: dict[int, list[tuple[str, str | None, int]]] = {}
    for name in names:
        for value, source in view.dynamic.layers(name):
            layers.setdefault(source, []).append((name, value, source))
    order = (DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG, STATIC_BROKER_CONFIG, DEFAULT_CONFIG)
    return [s for source in order if per_broker or source != DYNAMIC_BROKER_CONFIG for s in layers.get(source, [])]


def _topic_entries(view: ConfigView, overrides: dict[str, str]) -> dict[str, Entry]:
    entries: dict[str, Entry] = {}
    for name, (value, _) in view.logs.effective_configs(overrides).items():
        synonyms = _broker_synonyms(view, [s for s, _ in TOPIC_SYNONYMS.get(name, ())])
        if name in overrides:
            synonyms.insert(0, (name, overrides[name], DYNAMIC_TOPIC_CONFIG))
        source = synonyms[0][2] if synonyms else DEFAULT_CONFIG
        entries[name] = (value, source, synonyms)
    return entries


def _broker_entries(view: ConfigView) -> dict[str, Entry]:
    live = kafka_settings(view.config)
    entries: dict[str, Entry] = {}
    for name in sorted(set(live) | view.dynamic.dynamic_names()):
        synonyms = _broker_synonyms(view, [name, *unit_synonyms(name)])
        value = live.get(name, synonyms[0][1] if synonyms else None)
        entries[name] = (value, synonyms[0][2] if synonyms else DEFAULT_CONFIG, synonyms)
    for name, value in read_only_aliases(view.config, view.endpoints, view.advertised[1]).items():
        entries[name] = (value, STATIC_BROKER_CONFIG, [(name, value, STATIC_BROKER_CONFIG)])
    return entries


def _default_entries(view: ConfigView) -> dict[str, Entry]:
    entries: dict[str, Entry] = {}
    for name, value in sorted(view.dynamic.cluster_default.items()):
        synonyms = _broker_synonyms(view, [name, *unit_synonyms(name)], per_broker=False)
        entries[name] = (value, DYNAMIC_DEFAULT_BROKER_CONFIG, synonyms)
    return entries


def _group_entries(view: ConfigView, group: str) -> dict[str, Entry]:
    """A group's configs (any group id, as Kafka answers): its own value, else the broker's default."""
    entries: dict[str, Entry] = {}
    for name, (value, own) in effective_group_configs(view.config, view.image.group_config(group)).items():
        default_setting = GROUP_CONFIGS[name].default_setting
        synonyms = [] if default_setting is None else [
            (default_setting.replace("_", "."), str(getattr(view.config, default_setting)), DEFAULT_CONFIG)]
        if own:
            synonyms.insert(0, (name, str(value), GROUP_CONFIG_SOURCE))
        entries[name] = (str(value), GROUP_CONFIG_SOURCE if own else DEFAULT_CONFIG, synonyms)
    return entries


def config_type(name: str) -> int:
    """The ConfigType DescribeConfigs (v3+) reports for a topic, group or broker config."""
    if name in TOPIC_CONFIGS:
        return TOPIC_CONFIGS[name].type
    if name in GROUP_CONFIGS:
        return STRING if GROUP_CONFIGS[name].text else INT
    s = declared(name)
    return s.type if s is not None else STRING


def documentation(name: str) -> str | None:
    """What DescribeConfigs (v3+, when asked) says a broker config does: its declaration's documentation."""
    s = declared(name)
    return s.plain_doc if s is not None else None


def describe_resource(view: ConfigView, resource: Any, include_synonyms: bool, include_docs: bool) -> dict[str, Any]:
    rtype, name, keys = resource.resource_type, resource.resource_name, resource.configuration_keys
    result: dict[str, Any] = {"error_code": 0, "error_message": None, "resource_type": rtype,
                              "resource_name": name, "configs": []}
    read_only = False
    if rtype == TOPIC:
        topic = view.image.topic(name)
        if topic is None:
            result.update(error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                          error_message=f"Topic {name} does not exist")
            return result
        entries = _topic_entries(view, topic.configs)
    elif rtype == BROKER:
        if name == "":
            entries = _default_entries(view)
        elif name == str(view.config.node_id):
            entries = _broker_entries(view)
            read_only = True
        else:
            result.update(error_code=ErrorCode.INVALID_REQUEST,
                          error_message=f"Unexpected broker id, expected {view.config.node_id} or empty string, "
                                        f"but received {name}")
            return result
    elif rtype == BROKER_LOGGER:
        if name != str(view.config.node_id):
            result.update(error_code=ErrorCode.INVALID_REQUEST,
                          error_message=f"Unexpected broker id, expected {view.config.node_id}, but received {name}")
            return result
        entries = {logger: (level, DYNAMIC_BROKER_CONFIG if explicit else DEFAULT_CONFIG, [])
                   for logger, (level, explicit) in describe_loggers().items()}
    elif rtype == GROUP:
        entries = _group_entries(view, name)
    else:
        result.update(error_code=ErrorCode.INVALID_REQUEST, error_message=f"Unsupported resource type {rtype}")
        return result
    for key, (value, source, synonyms) in entries.items():
        if keys is not None and key not in keys:
            continue
        # a setting declared secret (Kafka: PASSWORD-typed) is reported without its value
        s = declared(key) if rtype == BROKER else None
        sensitive = s is not None and s.sensitive
        result["configs"].append({
            "name": key, "value": None if sensitive else value, "read_only": read_only and not is_dynamic(key),
            "config_source": source, "is_sensitive": sensitive,
            "synonyms": [{"name": n, "value": None if sensitive else v, "source": s} for n, v, s in synonyms]
            if include_synonyms else [],
            "config_type": STRING if rtype == BROKER_LOGGER else config_type(key),
            "documentation": documentation(key) if include_docs and rtype == BROKER else None,
        })
    return result
