"""AlterConfigs and IncrementalAlterConfigs: Kafka's rules for changing topic, broker and logger configs.

Per resource, as Kafka's ``ConfigAdminManager`` and controller check them:

* a resource named twice in one request: INVALID_REQUEST for both; a config named twice in a
  resource: INVALID_REQUEST; a null value (other than for DELETE): INVALID_REQUEST;
* IncrementalAlterConfigs operations: SET, DELETE, APPEND and SUBTRACT (the last two only for list
  configs such as ``cleanup.policy``, else INVALID_CONFIG; they start from the current value);
  AlterConfigs replaces the resource's whole set of overrides;
* a topic (2): unknown — UNKNOWN_TOPIC_OR_PARTITION; bad names or values — INVALID_CONFIG
  (:mod:`broker.log.config`); written through :class:`~broker.admin.topics.TopicAdmin`;
* a broker (4): the name is this broker's id (its own dynamic configs; clients send these to that
  broker) or empty (the cluster-wide default, any broker); anything Kafka would refuse —
  a setting that is not dynamic, one that is per broker only, a bad value — is INVALID_REQUEST
  (:class:`~broker.config.dynamic.DynamicBrokerConfig`); written to the metadata store by
  compare-and-set, answered once this broker's image has it;
* a broker logger (8, IncrementalAlterConfigs only): SET or DELETE a level
  (:mod:`broker.observability.loggers`); unknown loggers or levels are INVALID_CONFIG;
* a group (32): the KIP-848 group configs (:mod:`broker.coordinator.group.group_configs`), for any group id,
  existing or not; unknown names and values outside the broker's ``group.consumer.min/max.*``
  bounds are INVALID_CONFIG; written to the metadata store like broker configs;
* anything else (client-metrics configs): INVALID_REQUEST.

``validate_only`` runs every check and writes nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from broker.admin.describe_configs import BROKER, BROKER_LOGGER, GROUP, TOPIC, config_type
from broker.admin.topics import TopicAdmin, TopicError
from broker.cluster.kv import KVError
from broker.config.declare import LIST
from broker.config.dynamic import DynamicBrokerConfig, DynamicConfigError
from broker.config.settings import kafka_settings
from broker.coordinator.group.group_configs import (
    GroupConfigError,
    effective_group_configs,
    validate_group_configs,
)
from broker.observability.loggers import LoggerConfigError, set_logger_level
from protocol.error_codes import ErrorCode

if TYPE_CHECKING:
    from broker.cluster.metadata import MetadataService
    from broker.log.manager import LogManager

log = logging.getLogger("kbroker.configs")

E = ErrorCode
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
_OP_NAMES = {SET: "SET", DELETE: "DELETE", APPEND: "APPEND", SUBTRACT: "SUBTRACT"}

Op = tuple[str, int, str | None]  # (config name, operation, value)


@dataclass
class ConfigChangeError(Exception):
    code: int
    message: str


def apply_ops(current: Mapping[str, str], ops: list[Op], effective: Callable[[str], str | None]) -> dict[str, str]:
    """The overrides after IncrementalAlterConfigs ``ops`` (Kafka's ``prepareIncrementalConfigs``).

    ``effective(name)``: the value in force when there is no override (APPEND/SUBTRACT start from it).
    """
    out = dict(current)
    for name, op, value in ops:
        if op == SET:
            out[name] = value or ""
        elif op == DELETE:
            out.pop(name, None)
        elif op in (APPEND, SUBTRACT):
            if config_type(name) != LIST:
                verb = "append" if op == APPEND else "subtract"
                raise ConfigChangeError(E.INVALID_CONFIG, f"Config value {verb} is not allowed for config key: {name}")
            base = out.get(name, effective(name)) or ""
            items = [v for v in base.split(",") if v]
            changes = [v.strip() for v in (value or "").split(",") if v.strip()]
            if op == APPEND:
                items += [v for v in changes if v not in items]
            else:
                items = [v for v in items if v not in changes]
            out[name] = ",".join(items)
        else:
            raise ConfigChangeError(E.INVALID_REQUEST, f"Unknown operations type {op}")
    return out


class ConfigAdmin:
    """Runs AlterConfigs / IncrementalAlterConfigs resources (see the module doc)."""

    def __init__(self, *, topics: TopicAdmin, metadata: MetadataService, dynamic: DynamicBrokerConfig,
                 logs: LogManager, node_id: int) -> None:
        self.topics = topics
        self.metadata = metadata
        self.image = metadata.image
        self.dynamic = dynamic
        self.logs = logs
        self.node_id = node_id

    async def alter(self, resources: list[Any], validate_only: bool, *, incremental: bool) -> list[dict[str, Any]]:
        seen: dict[tuple[int, str], int] = {}
        for r in resources:
            seen[(r.resource_type, r.resource_name)] = seen.get((r.resource_type, r.resource_name), 0) + 1
        results = []
        for r in resources:
            entry = {"error_code": 0, "error_message": None, "resource_type": r.resource_type,
                     "resource_name": r.resource_name}
            try:
                if seen[(r.resource_type, r.resource_name)] > 1:
                    raise ConfigChangeError(E.INVALID_REQUEST, "Each resource must appear at most once.")
                ops = self._ops(r, incremental)
                await self._alter_one(r.resource_type, r.resource_name, ops, validate_only, incremental)
            except ConfigChangeError as exc:
                entry.update(error_code=exc.code, error_message=exc.message)
            results.append(entry)
        return results

    @staticmethod
    def _ops(resource: Any, incremental: bool) -> list[Op]:
        ops: list[Op] = [(c.name, c.config_operation if incremental else SET, c.value) for c in resource.configs]
        names = [name for name, _, _ in ops]
        if len(set(names)) != len(names):
            raise ConfigChangeError(E.INVALID_REQUEST, "Error due to duplicate config keys")
        nulls = [name for name, op, value in ops if value is None and op != DELETE]
        if nulls:
            raise ConfigChangeError(E.INVALID_REQUEST, f"Null value not supported for : {', '.join(nulls)}")
        return ops

    async def _alter_one(self, rtype: int, name: str, ops: list[Op], validate_only: bool, incremental: bool) -> None:
        if rtype == TOPIC:
            await self._alter_topic(name, ops, validate_only, incremental)
        elif rtype == BROKER:
            await self._alter_broker(name, ops, validate_only, incremental)
        elif rtype == BROKER_LOGGER and incremental:
            self._alter_loggers(name, ops, validate_only)
        elif rtype == GROUP:
            await self._alter_group(name, ops, validate_only, incremental)
        else:
            raise ConfigChangeError(E.INVALID_REQUEST, f"Unknown resource type {rtype}")

    # -- topics ------------------------------------------------------------------------------
    async def _alter_topic(self, name: str, ops: list[Op], validate_only: bool, incremental: bool) -> None:
        if name == "":
            raise ConfigChangeError(E.INVALID_REQUEST, "Default topic resources are not allowed.")

        def update(current: dict[str, str]) -> dict[str, str]:
            if not incremental:
                return {n: v or "" for n, _, v in ops}
            effective = self.logs.effective_configs(current)
            return apply_ops(current, ops, lambda key: effective.get(key, (None, True))[0])

        try:
            overrides = await self.topics.alter_configs(name, incremental=False, update=update,
                                                        validate_only=validate_only)
        except TopicError as exc:
            raise ConfigChangeError(exc.code, exc.message) from None
        if not validate_only:
            log.info("topic %s configs: %s", name, overrides)

    # -- brokers -----------------------------------------------------------------------------
    def _broker_target(self, name: str) -> int | None:
        if name == "":
            return None
        try:
            node = int(name)
        except ValueError:
            raise ConfigChangeError(E.INVALID_REQUEST, f"Node id must be an integer, but it is: {name}") from None
        if node != self.node_id:
            raise ConfigChangeError(E.INVALID_REQUEST,
                                    f"Unexpected broker id, expected {self.node_id}, but received {name}")
        return node

    async def _alter_broker(self, name: str, ops: list[Op], validate_only: bool, incremental: bool) -> None:
        target = self._broker_target(name)

        def validate(layer: dict[str, str]) -> dict[str, str]:
            try:
                return self.dynamic.validate(layer, per_broker=target is not None)
            except DynamicConfigError as exc:
                raise ConfigChangeError(exc.code, exc.message) from None

        await self._alter_layer(
            "the cluster" if target is None else f"broker {target}", ops, validate_only, incremental,
            current=lambda: self.image.broker_config(target),
            revision=lambda: self.image.broker_config_revision(target),
            effective=kafka_settings(self.dynamic.live).get, validate=validate,
            write=lambda layer, revision: self.metadata.set_broker_configs(target, layer, revision))

    # -- groups ------------------------------------------------------------------------------
    async def _alter_group(self, name: str, ops: list[Op], validate_only: bool, incremental: bool) -> None:
        if name == "":
            raise ConfigChangeError(E.INVALID_REQUEST, "Group name must not be empty")
        config = self.dynamic.live

        def validate(layer: dict[str, str]) -> dict[str, str]:
            try:
                return validate_group_configs(config, layer)
            except GroupConfigError as exc:
                raise ConfigChangeError(E.INVALID_CONFIG, exc.message) from None

        for _, op, _ in ops:
            if op in (APPEND, SUBTRACT):
                raise ConfigChangeError(E.INVALID_CONFIG, f"{_OP_NAMES[op]} is not allowed for group configs "
                                                          f"(they are not lists)")
        effective = {n: str(v) for n, (v, _) in effective_group_configs(config, self.image.group_config(name)).items()}
        await self._alter_layer(
            f"group {name}", ops, validate_only, incremental,
            current=lambda: self.image.group_config(name), revision=lambda: self.image.group_config_revision(name),
            effective=effective.get, validate=validate,
            write=lambda layer, revision: self.metadata.set_group_configs(name, layer, revision))

    async def _alter_layer(self, what: str, ops: list[Op], validate_only: bool, incremental: bool, *,
                           current: Callable[[], dict[str, str]], revision: Callable[[], int],
                           effective: Callable[[str], str | None],
                           validate: Callable[[dict[str, str]], dict[str, str]],
                           write: Callable[[dict[str, str], int], Awaitable[bool]]) -> None:
        """Change one config record of the metadata store (a broker's, the cluster default, a group's) by
        compare-and-set, retried while others change it; answered once this broker's image has it."""
        for _ in range(10):
            now, rev = current(), revision()
            layer = apply_ops(now, ops, effective) if incremental else {n: v or "" for n, _, v in ops}
            layer = validate(layer)
            if validate_only or layer == now:
                return
            try:
                written = await self.topics.write_with_retry(lambda layer=layer, rev=rev: write(layer, rev), 5.0)
            except TopicError as exc:
                raise ConfigChangeError(exc.code, exc.message) from None
            except KVError as exc:
                raise ConfigChangeError(E.REQUEST_TIMED_OUT, f"metadata store unavailable: {exc}") from None
            await self.topics.wait_until(lambda rev=rev: revision() != rev, 5.0)
            if written:
                log.info("configs of %s: %s", what, layer)
                return
        raise ConfigChangeError(E.REQUEST_TIMED_OUT, f"the configs of {what} kept changing; retry")

    # -- loggers -----------------------------------------------------------------------------
    def _alter_loggers(self, name: str, ops: list[Op], validate_only: bool) -> None:
        if name != str(self.node_id):
            raise ConfigChangeError(E.INVALID_REQUEST,
                                    f"Unexpected broker id, expected {self.node_id}, but received {name}")
        for _, op, _ in ops:
            if op not in (SET, DELETE):
                raise ConfigChangeError(E.INVALID_REQUEST, f"{_OP_NAMES.get(op, op)} operation is not allowed for "
                                                           f"the BROKER_LOGGER resource")
        for logger, op, value in ops:
            try:
                set_logger_level(logger, value if op == SET else None, validate_only=True)
            except LoggerConfigError as exc:
                raise ConfigChangeError(E.INVALID_CONFIG, str(exc)) from None
        if not validate_only:
            for logger, op, value in ops:
                set_logger_level(logger, value if op == SET else None)

