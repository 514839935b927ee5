"""BrokerCore: the composition root — builds the broker's parts, wires them together, starts and stops them.

The same parts run alone and in a cluster; only the metadata store differs:
without ``cluster`` it is :class:`~broker.cluster.local_kv.LocalKV` in the data
directory, with ``cluster=etcd://...`` it is etcd.  Parts get the collaborators
they use, not this object.  What it owns itself: the data directory's identity
(``meta.json``: node id, directory id, cluster id), the shared timing-wheel
driver, periodic log maintenance, the metrics endpoint, and the order of
startup (logs → metadata → replicas → serving) and shutdown (leave the
cluster → drain connections → stop replicas → flush and close logs).

The settings pass through here too: :func:`load_config` loads them with :data:`CONFIG_CHECKS`, the
cross-checks of the packages above :mod:`broker.config`; each component gets a narrow frozen settings
object built here (:func:`server_settings`, :func:`replica_settings`, :func:`group_settings`, ...), and
those of the components that use a dynamic setting are rebuilt and handed over when one changes.

A failed fsync (or any I/O failure the storage layer reports) takes the data
directory offline (``broker.log.dir_failure``); the core then logs one CRITICAL
line and stops the broker, as Kafka does when its last log directory fails.
``failure`` says why, and ``python -m broker`` exits with ``EXIT_LOG_DIR_FAILURE``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import time
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from broker.cluster.controller import ControllerSettings
from broker.cluster.kv import MetadataKV, Put, absent
from broker.cluster.local_kv import LocalKV
from broker.cluster.metadata import MetadataService, MetadataSettings
from broker.cluster.records import (
    PRODUCER_ID_BLOCK_KEY,
    BrokerRegistration,
    PartitionRecord,
    TopicRecord,
    partition_key,
    topic_key,
)
from broker.config.dynamic import DynamicBrokerConfig
from broker.config.loader import Check, load, validate
from broker.config.settings import BrokerConfig, broker_log_defaults, split_list
from broker.coordinator.group.assignors import ASSIGNORS
from broker.coordinator.group.config import GroupConfig
from broker.coordinator.group.consumer_group import ConsumerGroupConfig
from broker.coordinator.group.share_group import ShareGroupConfig
from broker.coordinator.txn.coordinator import TxnConfig
from broker.log.cleaner import CleanerSettings
from broker.log.config import LogConfig
from broker.log.dir_failure import LogDirFailure
from broker.log.errors import InvalidConfigError, KafkaStorageError, LogError
from broker.log.manager import LogManager
from broker.log.partition_log import FlushTicket, PartitionLog
from broker.network.server import ServerSettings
from broker.observability.history import MetricsHistory
from broker.observability.loop_watch import LoopWatch, warn_stall
from broker.observability.metrics import MAX_LABELLED_GROUPS, RECORD_CODEC, BrokerMetrics, BrokerState
from broker.replication.fetcher import FetcherSettings, ReplicaFetcherManager
from broker.replication.quota import RateQuota
from broker.replication.replica_manager import ReplicaSettings
from broker.security.connection import ConnectionSecurity
from broker.security.scram import CredentialStore, load_users_file
from broker.security.setup import (
    advertised_endpoints,
    check_security_settings,
    inter_broker_listener_name,
    inter_broker_security,
    new_authorizer,
    sasl_config,
    server_listeners,
)
from client.security import ClientSecurity
from protocol import compiled
from protocol.timer_service import WheelTimer

if TYPE_CHECKING:
    from broker.cluster.image import MetadataImage
    from broker.console import Console, ConsoleSettings, LocalPartition
    from broker.coordinator.txn.service import TransactionService
    from broker.testing.faults import FaultInjector

log = logging.getLogger("kbroker")

__all__ = ["CONFIG_CHECKS", "EXIT_CLUSTER_FAILURE", "EXIT_LOG_DIR_FAILURE", "BrokerCore", "LogError", "check_config",
           "cleaner_settings", "group_settings", "load_config", "replica_settings", "server_settings", "txn_settings"]

EXIT_LOG_DIR_FAILURE = os.EX_IOERR  # 74: the broker stopped because its data directory failed
#: 69: the broker stopped because it lost its place in the cluster (e.g. its node id was registered by
#: another live broker while its own registration had lapsed)
EXIT_CLUSTER_FAILURE = os.EX_UNAVAILABLE


# -- the settings: checks of the packages above broker.config, and each component's own settings ----------

def _check_topic_defaults(config: BrokerConfig) -> None:
    """The broker-level defaults of topic configs (``log.retention.ms``, ...) are valid topic configs."""
    try:
        LogConfig.from_dict(None, broker_log_defaults(config))
    except InvalidConfigError as exc:
        raise ValueError(f"invalid log setting: {exc.detail}") from None


def _check_assignors(config: BrokerConfig) -> None:
    unknown = [n for n in split_list(config.group_consumer_assignors) if n not in ASSIGNORS]
    if unknown:
        raise ValueError(f"group.consumer.assignors: unknown assignor(s) {', '.join(unknown)} "
                         f"(known: {', '.join(ASSIGNORS)})")


#: The cross-checks of the settings owned by the packages above :mod:`broker.config` (the configuration
#: package sits below them and cannot run them itself): at start and on every dynamic change.
CONFIG_CHECKS: tuple[Check, ...] = (_check_topic_defaults, check_security_settings, _check_assignors)


def load_config(argv: list[str] | None = None, environ: dict[str, str] | None = None) -> BrokerConfig:
    """The configuration of ``python -m broker`` (:func:`broker.config.loader.load` with every check)."""
    return load(argv, environ, checks=CONFIG_CHECKS)


def check_config(config: BrokerConfig) -> None:
    """Every check ``python -m broker`` makes of ``config`` (ConfigError naming the setting)."""
    validate(config, CONFIG_CHECKS)


def cleaner_settings(config: BrokerConfig) -> CleanerSettings:
    return CleanerSettings(dedupe_buffer_size=config.log_cleaner_dedupe_buffer_size)


def server_settings(config: BrokerConfig) -> ServerSettings:
    return ServerSettings(
        max_frame_bytes=config.max_frame_bytes, max_connections=config.max_connections,
        connections_max_idle_ms=config.connections_max_idle_ms,
        max_in_flight_requests_per_connection=config.max_in_flight_requests_per_connection,
        queued_max_response_bytes_per_connection=config.queued_max_response_bytes_per_connection,
        queued_max_response_bytes=config.queued_max_response_bytes,
        connection_write_buffer_bytes=config.connection_write_buffer_bytes,
        ssl_handshake_timeout_ms=config.ssl_handshake_timeout_ms, message_max_bytes=config.message_max_bytes)


def replica_settings(config: BrokerConfig) -> ReplicaSettings:
    return ReplicaSettings(lag_time_max_ms=config.replica_lag_time_max_ms,
                           purge_interval_requests=config.fetch_purgatory_purge_interval_requests,
                           fetch_max_bytes=config.fetch_max_bytes,
                           max_decompressed_bytes=config.message_max_decompressed_bytes,
                           replica_selector=config.replica_selector_class,
                           handover_timeout_ms=config.controlled_shutdown_timeout_ms)


def replication_quota(config: BrokerConfig, rate: Callable[[], int]) -> RateQuota:
    """A replication throttle's quota; ``rate`` reads the (dynamic) limit each time."""
    return RateQuota(rate, window_num=config.replication_quota_window_num,
                     window_s=config.replication_quota_window_size_seconds)


def group_settings(config: BrokerConfig) -> GroupConfig:
    return GroupConfig(
        min_session_timeout_ms=config.group_min_session_timeout_ms,
        max_session_timeout_ms=config.group_max_session_timeout_ms,
        initial_rebalance_delay_ms=config.group_initial_rebalance_delay_ms,
        max_size=config.group_max_size,
        offsets_retention_ms=config.offsets_retention_minutes * 60_000,
        offset_metadata_max_bytes=config.offset_metadata_max_bytes,
        offsets_topic_num_partitions=config.offsets_topic_num_partitions,
        offsets_retention_check_interval_ms=config.offsets_retention_check_interval_ms,
        offsets_compression=config.offsets_topic_compression_codec,
        consumer=ConsumerGroupConfig(
            heartbeat_interval_ms=config.group_consumer_heartbeat_interval_ms,
            session_timeout_ms=config.group_consumer_session_timeout_ms,
            assignors=split_list(config.group_consumer_assignors), max_size=config.group_consumer_max_size,
            assignment_interval_ms=config.group_consumer_assignment_interval_ms),
        share=ShareGroupConfig(
            heartbeat_interval_ms=config.group_share_heartbeat_interval_ms,
            session_timeout_ms=config.group_share_session_timeout_ms, max_size=config.group_share_max_size,
            initialize_retry_interval_ms=config.group_share_initialize_retry_interval_ms))


def console_settings(config: BrokerConfig, address: tuple[str, int], login_required: bool) -> ConsoleSettings:
    from broker.console.sources import ConsoleSettings

    return ConsoleSettings(
        host=address[0], port=address[1], refresh_ms=config.console_refresh_ms,
        session_timeout_ms=config.console_session_timeout_ms, max_sessions=config.console_max_sessions,
        page_size=config.console_page_size, records_max=config.console_records_max,
        record_view_bytes=config.console_record_view_bytes, login_required=login_required,
        failed_login_delay_ms=config.connection_failed_authentication_delay_ms)


def txn_settings(config: BrokerConfig) -> TxnConfig:
    return TxnConfig(max_timeout_ms=config.transaction_max_timeout_ms,
                     id_expiration_ms=config.transactional_id_expiration_ms,
                     abort_retry_ms=config.transaction_abort_timed_out_transaction_cleanup_interval_ms,
                     two_phase_commit_enable=False)


class BrokerCore:
    """``kv``: a metadata store to use instead of the configured one (several in-process brokers sharing
    one :class:`LocalKV` form a cluster without etcd — how the cluster logic is tested in process);
    ``faults``: where tests inject faults into the request path (:mod:`broker.testing.faults`)."""

    def __init__(self, config: BrokerConfig, *, kv: MetadataKV | None = None,
                 faults: FaultInjector | None = None) -> None:
        self.config = config
        #: the dynamic broker configs over the static ones; applies them to ``config`` in place
        self.dynamic = DynamicBrokerConfig(config, config, checks=CONFIG_CHECKS)
        self._kv_override = kv
        self.metrics = BrokerMetrics()
        #: faults injected into the request path (an embedded broker's, for tests); None: none
        self.faults = faults
        self.advertised: tuple[str, int] = config.advertised_host_port
        self.bound: tuple[str, int] = (config.host, config.port)
        self._tasks: list[asyncio.Task[Any]] = []
        self._loop_watch: LoopWatch | None = None
        self.started = False
        #: Why the data directory went offline (the broker then stops itself); None while healthy.
        self.failure: LogDirFailure | None = None
        #: Why the broker left the cluster on its own (it then stops itself); None while healthy.
        self.cluster_failure: BaseException | None = None
        self._stopping: asyncio.Future[None] | None = None
        self._stopped = asyncio.Event()
        #: the last hour of throughput, request rates and group lag (the console's charts)
        self.history = MetricsHistory(config.console_history_interval_ms / 1000)
        #: the web console (None: ``console.listener`` is none, or it could not listen)
        self.console: Console | None = None

    # -- startup ---------------------------------------------------------------------
    async def start(self) -> None:
        from broker.admin.configs import ConfigAdmin
        from broker.admin.security import SecurityAdmin
        from broker.admin.topics import TopicAdmin
        from broker.cluster.producer_ids import ProducerIdManager
        from broker.coordinator.group.service import GroupService, ImageTopics
        from broker.handlers.authorization import RequestAuthorizer
        from broker.handlers.dispatch import RequestDispatcher
        from broker.handlers.services import Services
        from broker.network.server import KafkaServer
        from broker.replication.replica_manager import ReplicaManager

        config = self.config
        data = config.data_path
        data.mkdir(parents=True, exist_ok=True)
        self.timer = WheelTimer(asyncio.get_running_loop())
        self.logs = LogManager(data, default_configs=broker_log_defaults(config),
                               cleaner_settings=cleaner_settings(config))
        self.logs.dir_failure.add_listener(self._on_log_dir_failure)
        try:
            meta = self._check_meta()
            for (topic, partition), report in self.logs.recovery_reports.items():
                if report.repaired:
                    log.warning("recovered %s-%d: %s", topic, partition, report.describe())
            self.kv = self._store()
            await self._migrate_legacy(self.kv, meta)

            credentials = CredentialStore()
            authorizer = new_authorizer(config)
            self.connection_security = ConnectionSecurity(
                credentials, sasl_config(config), authorizer if config.authorizer_enabled else None,
                failed_authentication_delay_ms=config.connection_failed_authentication_delay_ms,
                session_cache_entries=config.authorizer_cache_entries, events=self.metrics.auth_events())
            self.server = KafkaServer(server_settings(config), listeners=server_listeners(config),
                                      security=self.connection_security)
            self.bound = await self.server.bind()
            endpoints = advertised_endpoints(config, {name: addr[1] for name, addr in self.server.bound.items()})
            self.advertised = (endpoints[0].host, endpoints[0].port)
            host, port = self.advertised
            registration = BrokerRegistration(config.node_id, endpoints, config.broker_rack, meta["dir_id"])
            self.metadata = MetadataService(self.kv, registration, MetadataSettings(
                session_timeout_ms=config.broker_session_timeout_ms,
                controller=ControllerSettings(
                    unclean_leader_election=config.unclean_leader_election_enable,
                    auto_leader_rebalance=config.auto_leader_rebalance_enable,
                    imbalance_percentage=config.leader_imbalance_per_broker_percentage,
                    autobalancer_mode=config.partition_autobalancer_mode),
                imbalance_check_interval_s=config.leader_imbalance_check_interval_seconds,
            ), cluster_id_hint=meta.get("cluster_id"), on_fatal=self._on_cluster_failure)
            self.fetchers = ReplicaFetcherManager(
                config.node_id, FetcherSettings(
                    wait_max_ms=config.replica_fetch_wait_max_ms, min_bytes=config.replica_fetch_min_bytes,
                    max_bytes=config.replica_fetch_max_bytes,
                    response_max_bytes=config.replica_fetch_response_max_bytes,
                    backoff_ms=config.replica_fetch_backoff_ms, socket_timeout_ms=config.replica_socket_timeout_ms,
                    listener=inter_broker_listener_name(config), security=self._inter_broker_security()),
                self.timer, broker=lambda node: self.metadata.image.brokers.get(node),
                broker_epoch=lambda: self.metadata.broker_epoch,
                topic_name=lambda topic_id: self.metadata.image.topic_name(topic_id),
                quota=replication_quota(config, lambda: config.follower_replication_throttled_rate))
            self.replica_manager = ReplicaManager(
                local_id=config.node_id, settings=replica_settings(config), logs=self.logs, metrics=self.metrics,
                timer=self.timer, metadata=self.metadata, fetchers=self.fetchers,
                leader_quota=replication_quota(config, lambda: config.leader_replication_throttled_rate))
            image = self.metadata.image

            def partition_count(topic: str) -> int | None:
                t = image.topic(topic)
                return None if t is None else t.partition_count

            self.group_service = GroupService(settings=group_settings(config), replica=self.replica_manager, metrics=self.metrics,
                                              timer=self.timer, partition_count=partition_count,
                                              topics=ImageTopics(image), group_configs=image.group_config)
            self.metadata.subscribe(self._on_dynamic_configs)  # first: the others see the new settings
            self.producer_ids = ProducerIdManager(self.metadata)
            self.txn_service = self._transaction_service(image)
            self._share_services(image)
            self.security_admin = SecurityAdmin(self.metadata, credentials, authorizer)
            self.metadata.subscribe(self.security_admin.on_metadata)
            self.metadata.subscribe(self.replica_manager.on_metadata)
            self.metadata.subscribe(self._on_metadata)
            self.metadata.subscribe(self.group_service.on_metadata)
            await self.metadata.start()
            self._remember_cluster_id(meta)
            if config.sasl_users_file:
                await self.security_admin.seed_users(load_users_file(config.sasl_users_file))
            self.topics = TopicAdmin(self.metadata, self.logs, node_id=config.node_id)
            self.services = Services(
                config=config, metrics=self.metrics, replica=self.replica_manager, groups=self.group_service,
                txns=self.txn_service, topics=self.topics, metadata=self.metadata, producer_ids=self.producer_ids,
                logs=self.logs, dynamic=self.dynamic,
                configs=ConfigAdmin(topics=self.topics, metadata=self.metadata, dynamic=self.dynamic, logs=self.logs,
                                    node_id=config.node_id),
                security=self.security_admin,
                authz=RequestAuthorizer(topic_name=image.topic_name, events=self.metrics.auth_events()),
                shares=self.share_partitions, share_state=self.share_coordinator, share_groups=self.share_groups)
            self.dispatcher = RequestDispatcher(self.services, metrics=self.metrics, faults=self.faults)
            self.server.dispatcher = self.dispatcher
            self.replica_manager.start()
            await self._prepare_coordinators()
            await self.server.serve()
        except BaseException:
            await self._abort_start()
            raise
        self.metrics.state = self._metrics_state
        self.metrics.topic_names = lambda: set(image.topics)
        self.metrics.queued_bytes = lambda: self.server.queued_bytes
        if config.metrics_port is not None:
            self.metrics.serve(config.metrics_host or config.host, config.metrics_port)
        self._tasks.append(asyncio.ensure_future(self._maintenance_loop()))
        self._tasks.append(asyncio.ensure_future(self._history_loop()))
        self._loop_watch = LoopWatch(asyncio.get_running_loop(), config.event_loop_stall_warn_ms / 1000,
                                     on_lag=self.metrics.loop_lag.observe, on_stall=self._on_loop_stall,
                                     activity=self.server.activity)
        self._loop_watch.start()
        if config.console_address is not None:
            await self._start_console(config.console_address)
        self.started = True
        listening = ", ".join(f"{lst.name}://{self.server.bound[lst.name][0]}:{self.server.bound[lst.name][1]}"
                              for lst in self.server.listeners)
        log.info("kbroker node %d listening on %s (advertised %s:%d), data in %s, cluster %s (%s), record codec %s, "
                 "%d of %d request-path modules compiled", config.node_id, listening, host, port, data,
                 self.cluster_id, self.kv.description, RECORD_CODEC, len(compiled.in_use()), len(compiled.MODULES))

    def _on_loop_stall(self, blocked_s: float, stack: str, activity: str | None) -> None:
        """The watchdog thread saw the event loop blocked (runs on that thread)."""
        self.metrics.loop_stalls.inc()
        warn_stall(blocked_s, stack, activity)

    # -- the web console ------------------------------------------------------------------
    async def _start_console(self, address: tuple[str, int]) -> None:
        """Serve the web console (:mod:`broker.console`) with what it reads; a console that cannot listen
        is reported and left off (the broker serves Kafka clients all the same)."""
        from broker.cluster.channel import BrokerChannel
        from broker.console import Console, ConsoleSources

        config = self.config
        image = self.metadata.image
        listener = inter_broker_listener_name(config)
        bound = self.server.bound.get(listener, self.bound)
        channel = BrokerChannel(config.node_id, self.timer, broker=image.brokers.get, local_address=lambda: bound,
                                client_id=f"broker-{config.node_id}-console", timeout_ms=30_000, listener=listener,
                                security=self._inter_broker_security())
        self._channels.append(channel)
        dispatcher = self.dispatcher

        async def request(session: Any, node: int | None, api_key: int, version: int, body: dict[str, Any]) -> Any:
            forward = None if node is None else (
                lambda req: channel.request(node, api_key, req, version=version))
            return await dispatcher.on_behalf_of(session, api_key, version, body, forward=forward)

        security = self.connection_security

        async def check_password(user: str, password: str) -> bool:
            loop = asyncio.get_running_loop()
            return await loop.run_in_executor(None, security.credentials.verify_plain, user, password)

        sources = ConsoleSources(
            node_id=config.node_id, image=lambda: self.metadata.image, cluster_id=lambda: self.cluster_id,
            request=request, local_partition=self._local_partition, history=self.history,
            check_password=check_password, new_session=security.session,
            user_exists=lambda principal: principal.partition(":")[2] in security.credentials,
            authorizer_enabled=config.authorizer_enabled,
            listeners=tuple(f"{lst.name}://{self.server.bound[lst.name][0]}:{self.server.bound[lst.name][1]}"
                            for lst in self.server.listeners))
        login = any(lst.uses_sasl for lst in self.server.listeners)
        console = Console(sources, console_settings(config, address, login))
        try:
            await console.start()
        except OSError as exc:
            log.error("the console cannot listen on http://%s:%d (%s); it is off", address[0], address[1], exc)
            return
        self.console = console
        log.info("kbroker console on %s%s", console.url, " (log in with a SASL user)" if login else "")

    def _local_partition(self, topic: str, partition: int) -> LocalPartition | None:
        from broker.console import LocalPartition

        try:
            plog = self.logs.get_log(topic, partition)
        except LogError:
            return None
        p = self.replica_manager.partitions.get((topic, partition))
        return LocalPartition(plog.log_start_offset, plog.high_watermark, plog.log_end_offset, plog.size_bytes,
                              p is not None and p.is_leader)

    async def _history_loop(self) -> None:
        """Sample the figures the console charts, every ``console.history.interval.ms``."""
        while True:
            await asyncio.sleep(self.history.interval_s)
            try:
                self._sample_history()
            except Exception:
                log.exception("sampling the metrics history failed")

    def _sample_history(self) -> None:
        from protocol.api import APIS, ApiKey

        hot = self.metrics.hot
        produce, fetch = APIS[ApiKey.PRODUCE].name, APIS[ApiKey.FETCH].name
        values: dict[str, float] = dict.fromkeys(
            ("bytes_in", "records_in", "bytes_out", "requests", "produce_requests", "fetch_requests"), 0)
        topic_records: dict[str, float] = {}
        for topic, (nin, nrec, nout) in list(hot.topics.items()):
            values["bytes_in"] += nin
            values["records_in"] += nrec
            values["bytes_out"] += nout
            topic_records[topic] = nrec
        for (api, _), row in list(hot.requests.items()):
            n = sum(row[1:])
            values["requests"] += n
            if api == produce:
                values["produce_requests"] += n
            elif api == fetch:
                values["fetch_requests"] += n
        ends = {(plog.topic, plog.partition): plog.high_watermark for plog in self.logs.logs()}
        for group, lag in self.group_service.total_lags(ends, MAX_LABELLED_GROUPS).items():
            values["lag:" + group] = lag
        image = self.metadata.image
        by_id = {}
        for (topic, partition), end in ends.items():
            t = image.topic(topic)
            if t is not None:
                by_id[(t.topic_id, partition)] = end
        for group, lag in self.share_coordinator.total_lags(by_id, MAX_LABELLED_GROUPS).items():
            values["lag:" + group] = lag  # group ids are unique across group types
        self.history.record(time.time(), values, topic_records)

    def _transaction_service(self, image: MetadataImage) -> TransactionService:
        """The transaction coordinator's service and what it talks to other brokers with: markers to
        partition leaders, and the leaders' checks with coordinators (the replica manager's verifier).
        Those meant for this broker itself are handled in process (no connection, no login)."""
        from broker.cluster.channel import BrokerChannel
        from broker.coordinator.txn.channel import TxnChannel
        from broker.coordinator.txn.markers import TxnMarkerSender
        from broker.coordinator.txn.service import TransactionService
        from broker.coordinator.txn.verifier import TxnVerifier

        config = self.config
        listener = inter_broker_listener_name(config)
        bound = self.server.bound.get(listener, self.bound)  # this broker itself, on the inter-broker listener
        security = self._inter_broker_security()
        timeout = config.transaction_marker_request_timeout_ms

        def channel(purpose: str) -> TxnChannel:
            remote = BrokerChannel(config.node_id, self.timer, broker=image.brokers.get, local_address=lambda: bound,
                                   client_id=f"broker-{config.node_id}-{purpose}", timeout_ms=timeout,
                                   listener=listener, security=security)
            return TxnChannel(config.node_id, remote, lambda api_key, version, body:
                              self.dispatcher.in_process(api_key, version, body))

        def leader_of(topic: str, partition: int) -> int | None:
            part = image.partition(topic, partition)
            return None if part is None or not image.is_alive(part.leader) else part.leader

        self._channels = [channel("txn-markers"), channel("txn-verify")]
        markers = TxnMarkerSender(self._channels[0], leader_of=leader_of,
                                  topic_exists=lambda topic: image.topic(topic) is not None,
                                  retry_backoff_ms=config.transaction_marker_retry_backoff_ms, request_timeout_ms=timeout)
        service = TransactionService(settings=txn_settings(config),
                                     num_partitions=config.transaction_state_log_num_partitions,
                                     replica=self.replica_manager, metrics=self.metrics,
                                     timer=self.timer, image=image, producer_ids=self.producer_ids, markers=markers,
                                     offsets_partition=self.group_service.partition_for)
        verifier = TxnVerifier(self._channels[1], coordinator_of=service.coordinator_node, timeout_ms=timeout)
        self.replica_manager.txn_verifier = verifier
        self.group_service.txn_verifier = verifier
        return service

    def _share_services(self, image: MetadataImage) -> None:
        """Share groups (KIP-932): the share coordinator of this broker's ``__share_group_state`` partitions,
        the client reaching share coordinators (in process for this broker, over the inter-broker listener
        for the others), the share-partitions of the partitions this broker leads, and the group
        coordinator's flows with the share coordinator."""
        from broker.cluster.channel import BrokerChannel
        from broker.cluster.internal_topics import SHARE_GROUP_STATE_TOPIC, internal_topic_spec
        from broker.coordinator.group.group_configs import share_group_settings
        from broker.coordinator.group.share_service import ShareGroupService
        from broker.coordinator.share.persister import SharePersister
        from broker.coordinator.share.service import ShareCoordinatorService
        from broker.coordinator.txn.channel import TxnChannel
        from broker.replication.share.manager import SharePartitionManager

        config = self.config
        listener = inter_broker_listener_name(config)
        bound = self.server.bound.get(listener, self.bound)
        remote = BrokerChannel(config.node_id, self.timer, broker=image.brokers.get, local_address=lambda: bound,
                               client_id=f"broker-{config.node_id}-share-state",
                               timeout_ms=config.share_coordinator_write_timeout_ms * 3, listener=listener,
                               security=self._inter_broker_security())
        channel = TxnChannel(config.node_id, remote, lambda api_key, version, body:
                             self.dispatcher.in_process(api_key, version, body))
        self._channels.append(channel)

        def partition_count(topic: str) -> int | None:
            t = image.topic(topic)
            return None if t is None else t.partition_count

        self.share_coordinator = ShareCoordinatorService(config=config, replica=self.replica_manager,
                                                         timer=self.timer, partition_count=partition_count)
        spec = internal_topic_spec(SHARE_GROUP_STATE_TOPIC, config)
        persister = SharePersister(channel, image=image,
                                   ensure_topic=lambda: self.topics.ensure_internal_topic(spec, 5.0),
                                   num_partitions=lambda: self.share_coordinator.num_partitions,
                                   timeout_ms=config.share_coordinator_write_timeout_ms * 3)
        self.share_partitions = SharePartitionManager(
            replica=self.replica_manager, persister=persister, timer=self.timer,
            settings_of=lambda group_id: share_group_settings(config, image.group_config(group_id)),
            max_sessions=config.group_share_max_share_sessions, fetch_max_bytes=lambda: config.fetch_max_bytes)
        self.share_groups = ShareGroupService(self.group_service, persister, image=image,
                                              replica=self.replica_manager, channel=channel)
        self.group_service.share = self.share_groups

    async def _prepare_coordinators(self, timeout_s: float = 30.0) -> None:
        """Before serving: create the offsets topic if enough brokers are alive, and let this broker's
        coordinator shards finish loading (as a restarted single broker had its groups and transactions
        loaded at once)."""
        from broker.cluster.internal_topics import OFFSETS_TOPIC, internal_topic_spec

        if self.metadata.image.topic(OFFSETS_TOPIC) is None:
            await self.topics.ensure_internal_topic(internal_topic_spec(OFFSETS_TOPIC, self.config), timeout_s)
        deadline = time.monotonic() + timeout_s
        while ((self.group_service.runtime.loading or self.txn_service.runtime.loading
                or self.share_coordinator.runtime.loading or self._stale_leaderships())
               and time.monotonic() < deadline):
            await asyncio.sleep(0.01)

    def _stale_leaderships(self) -> bool:
        """Partitions the image says this broker leads as an earlier incarnation (a restart): the
        controller elects their leaders again (this broker, if it is the last in-sync replica)."""
        node, epoch = self.config.node_id, self.metadata.broker_epoch
        return any(p.leader == node and p.record.epoch_of(node) not in (-1, epoch)
                   for p in self.metadata.image.partitions())

    def _inter_broker_security(self) -> ClientSecurity | None:
        """How the replica fetchers reach other brokers; a single broker without inter-broker
        credentials on a SASL listener has no other broker to reach (None)."""
        try:
            return inter_broker_security(self.config)
        except ValueError:
            if self.config.cluster:
                raise
            return None

    def _store(self) -> MetadataKV:
        config = self.config
        if self._kv_override is not None:
            return self._kv_override
        if not config.cluster:
            return LocalKV(config.data_path)
        from broker.cluster.etcd_kv import EtcdKV, parse_etcd_url

        return EtcdKV(parse_etcd_url(config.cluster), f"/kbroker/{config.cluster_id}/",
                      timeout_s=config.etcd_request_timeout, start_index=config.node_id)

    async def _abort_start(self) -> None:
        for service in ("group_service", "txn_service", "share_coordinator", "share_partitions", "share_groups"):
            if getattr(self, service, None) is not None:
                getattr(self, service).close()
        for channel in getattr(self, "_channels", []):
            channel.close()
        for part in ("server", "metadata"):
            obj = getattr(self, part, None)
            if obj is None:
                continue
            try:
                await obj.stop()
            except Exception:
                log.debug("stopping %s after a failed start", part, exc_info=True)
        if getattr(self, "replica_manager", None) is not None:
            await self.replica_manager.stop()
        self.timer.close()
        self.logs.close()

    # -- the data directory's identity -------------------------------------------------
    def _meta_path(self) -> str:
        return os.path.join(self.config.data_dir, "meta.json")

    def _check_meta(self) -> dict[str, Any]:
        """Read (or create) ``meta.json``; refuse a data directory that belongs to another node."""
        path = self._meta_path()
        meta: dict[str, Any] = {}
        if os.path.exists(path):
            try:
                with open(path) as fh:
                    meta = json.load(fh)
            except (OSError, ValueError) as exc:
                raise KafkaStorageError(f"unreadable {path}: {exc}") from None
        node = meta.get("node_id")
        if node is not None and int(node) != self.config.node_id and meta.get("dir_id"):
            raise KafkaStorageError(f"{self.config.data_dir} belongs to node {node}, not node {self.config.node_id}")
        changed = False
        if not meta.get("dir_id"):
            meta["dir_id"] = uuid.uuid4().hex
            changed = True
        if meta.get("node_id") != self.config.node_id:
            meta["node_id"] = self.config.node_id
            changed = True
        if changed:
            self._write_meta(meta)
        return meta

    def _remember_cluster_id(self, meta: dict[str, Any]) -> None:
        cluster_id = self.metadata.cluster_id
        known = meta.get("cluster_id")
        if known and known != cluster_id and self.config.cluster:
            raise KafkaStorageError(f"{self.config.data_dir} belongs to cluster {known}, but the metadata store "
                                    f"holds cluster {cluster_id}")
        if known != cluster_id:
            meta["cluster_id"] = cluster_id
            self._write_meta(meta)

    def _write_meta(self, meta: dict[str, Any]) -> None:
        path = self._meta_path()
        tmp = path + ".tmp"
        with open(tmp, "w") as fh:
            json.dump(meta, fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)

    async def _migrate_legacy(self, kv: MetadataKV, meta: dict[str, Any]) -> None:
        """A data directory from before the metadata store: import its topics into the local store."""
        legacy = self.logs.legacy_topics()
        if not legacy or not isinstance(kv, LocalKV):
            return
        node = self.config.node_id
        for info in legacy:
            record = TopicRecord(info.name, info.topic_id, tuple((node,) for _ in range(info.partitions)),
                                 info.configs)
            ops: list[Any] = [Put(topic_key(info.name), record.encode())]
            ops += [Put(partition_key(info.name, p), PartitionRecord(node, 0, (node,), 0).encode())
                    for p in range(info.partitions)]
            await kv.txn([absent(topic_key(info.name))], ops)
        limit = int(meta.get("producer_id_limit", 0) or 0)
        if limit:
            await kv.txn([absent(PRODUCER_ID_BLOCK_KEY)], [Put(PRODUCER_ID_BLOCK_KEY, json.dumps({"next": limit}).encode())])
        self.logs.retire_legacy_topics()
        log.info("imported %d topics into the metadata store", len(legacy))

    # -- conveniences for embedding and tests -------------------------------------------
    async def create_topic(self, name: str, partitions: int = 1, configs: dict[str, str | None] | None = None,
                           replication_factor: int | None = None) -> Any:
        """Create a topic as CreateTopics would; returns its topic id once its partitions have leaders."""
        rf = self.config.default_replication_factor if replication_factor is None else replication_factor
        record = self.topics.plan(name, partitions, rf, None, configs or {})
        await self.topics.create(record, 10.0)
        return record.topic_id

    async def alter_topic_configs(self, name: str, changes: dict[str, str | None]) -> dict[str, str]:
        """Change a topic's config overrides (``None`` removes one); returns the overrides in force."""
        return await self.topics.alter_configs(name, changes)

    # -- running ---------------------------------------------------------------------
    @property
    def cluster_id(self) -> str:
        metadata = getattr(self, "metadata", None)
        return metadata.cluster_id if metadata is not None else ""

    def _on_dynamic_configs(self, delta: Any, image: Any) -> None:
        """Dynamic broker configs changed in the image: update the live settings and what derives
        from them (the logs' topic defaults, the settings objects of the components that use a
        dynamic setting: the cleaner's, the server's)."""
        node = self.config.node_id
        if not (delta.full or None in delta.broker_configs_changed or node in delta.broker_configs_changed):
            return
        if self.dynamic.update(image.broker_config(None), image.broker_config(node)):
            self.logs.set_default_configs(broker_log_defaults(self.config))
            self.logs.cleaner.settings = cleaner_settings(self.config)
            self.server.settings = server_settings(self.config)

    def _on_metadata(self, delta: Any, image: Any) -> None:
        if delta.topics_deleted or delta.full:
            self.metrics.topics_changed()

    def _metrics_state(self) -> BrokerState | None:
        if not self.started:
            return None
        rm = self.replica_manager
        parts = []
        for plog in self.logs.logs():
            p = rm.partitions.get((plog.topic, plog.partition))
            lso = plog.last_stable_offset if p is not None and p.is_leader else -1
            parts.append((plog.topic, plog.partition, plog.log_end_offset, plog.size_bytes, plog.log_start_offset,
                          plog.high_watermark, lso))
        end_offsets = {(t, p): hw for t, p, _, _, _, hw, _ in parts}
        from broker.observability.metrics import MAX_LABELLED_GROUPS

        groups = list(self.group_service.collect_metrics(end_offsets, MAX_LABELLED_GROUPS))
        groups += list(self.share_groups.collect_metrics(MAX_LABELLED_GROUPS))
        groups += list(self.share_partitions.collect_metrics(MAX_LABELLED_GROUPS))
        transactions = list(self.txn_service.collect_metrics())
        image = self.metadata.image
        offline = sum(1 for p in image.partitions() if p.leader < 0 or not image.is_alive(p.leader))
        cluster = {
            "kbroker_under_replicated_partitions": ("Partitions this broker leads whose ISR is smaller than "
                                                    "their replica set", len(rm.under_replicated())),
            "kbroker_offline_partitions": ("Partitions of the cluster without a live leader", offline),
            "kbroker_leader_partitions": ("Partitions this broker leads", rm.leader_count()),
            "kbroker_is_controller": ("1 while this broker is the cluster's controller",
                                      int(self.metadata.is_controller)),
            "kbroker_cluster_brokers": ("Live brokers in the cluster", len(image.brokers)),
            "kbroker_metadata_store_connected": ("1 while the metadata store answers",
                                                 int(self.metadata.store_connected)),
            "kbroker_partitions_reassigning": ("Partitions of the cluster being reassigned",
                                               sum(1 for p in image.partitions() if p.record.reassigning)),
            "kbroker_leader_replication_throttled_bytes": (
                "Bytes of throttled partitions sent to followers since start (leader.replication.throttled.rate)",
                rm.leader_quota.total),
            "kbroker_follower_replication_throttled_bytes": (
                "Bytes of throttled partitions fetched since start (follower.replication.throttled.rate)",
                self.fetchers.quota.total if self.fetchers.quota is not None else 0),
        }
        return BrokerState(parts, groups, transactions, cluster, self.fetchers.lag())

    async def stop(self) -> None:
        """Stop (once; a second call waits for the first).  An offline data directory is closed
        without flushing or checkpointing: its recovery points stay where they were."""
        if self._stopping is None:
            if not self.started:
                return
            self._stopping = asyncio.ensure_future(self._stop())
        await asyncio.shield(self._stopping)

    async def wait_stopped(self) -> None:
        """Return once the broker has stopped (by ``stop()`` or by a log directory failure)."""
        await self._stopped.wait()

    @property
    def exit_code(self) -> int:
        """What ``python -m broker`` exits with once stopped: 0, or why the broker stopped itself."""
        if self.failure is not None:
            return EXIT_LOG_DIR_FAILURE
        if self.cluster_failure is not None:
            return EXIT_CLUSTER_FAILURE
        return 0

    def _on_cluster_failure(self, exc: BaseException) -> None:
        if self.cluster_failure is not None:
            return
        self.cluster_failure = exc
        log.critical("broker %d is stopping: it lost its place in the cluster (%s)", self.config.node_id, exc)
        if self.started:
            asyncio.get_running_loop().call_soon(lambda: asyncio.ensure_future(self.stop()))

    def _on_log_dir_failure(self, failure: LogDirFailure) -> None:
        self.failure = failure
        log.critical("log directory %s is offline: %s; stopping the broker (a restart recovers from the "
                     "last recovery point)", failure.directory, failure.describe())
        if self.started:
            asyncio.get_running_loop().call_soon(lambda: asyncio.ensure_future(self.stop()))

    async def _stop(self) -> None:
        self.started = False
        try:
            if self.failure is None and self.cluster_failure is None and self.config.controlled_shutdown_enable:
                await self._controlled_shutdown(self.config.controlled_shutdown_timeout_ms / 1000)
            if self.console is not None:
                await self.console.stop()
            self.server.stop_accepting()
            self.replica_manager.answer_waiting_fetches()
            await self.server.stop()
            for task in self._tasks:
                task.cancel()
            if self._loop_watch is not None:
                self._loop_watch.close()
            self.group_service.close()
            self.txn_service.close()
            self.share_partitions.close()
            self.share_groups.close()
            self.share_coordinator.close()
            for channel in self._channels:
                channel.close()
            await self.metadata.stop()  # deregister: the controller moves whatever is still led here
            await self.replica_manager.stop()
            self.timer.close()
            try:
                self.logs.flush_all()  # does nothing once the directory is offline
            finally:
                self.logs.close()
            self.metrics.close()
            log.info("kbroker node %d stopped", self.config.node_id)
        finally:
            self._stopped.set()

    async def _controlled_shutdown(self, timeout_s: float) -> None:
        """Hand every leadership over while still serving and watching the cluster (the broker answers
        NOT_LEADER_OR_FOLLOWER, and its coordinators unload, as each one moves); the broker leaves
        the cluster only after that."""
        if not any(b != self.config.node_id for b in self.metadata.image.brokers):
            return
        started = time.monotonic()
        await self.metadata.begin_shutdown()
        left = await self.replica_manager.hand_over_leadership(timeout_s)
        log.info("controlled shutdown: leadership handed over in %.0f ms%s", (time.monotonic() - started) * 1000,
                 f"; {left} partitions had no in-sync follower to take them" if left else "")

    async def _maintenance_loop(self) -> None:
        """Flush rounds, compaction swaps and (every retention check interval) log maintenance,
        until the data directory goes offline."""
        loop = asyncio.get_running_loop()
        retention_every = self.config.log_retention_check_interval_ms / 1000
        next_retention = time.monotonic() + retention_every
        next_cleaning = time.monotonic()
        while not self.logs.offline:
            # the flush interval may change (a dynamic config): read it each round
            await asyncio.sleep(max(0.05, min(1.0, (self.config.log_flush_interval_ms or 1000) / 1000)))
            try:
                await self._flush_due_logs(loop)
                self.logs.apply_cleaned()
                now = time.monotonic()
                if now >= next_retention:
                    next_retention = now + retention_every
                    self.logs.maintenance(flush=False)  # flushing is _flush_due_logs' job, off the loop
                if now >= next_cleaning:
                    next_cleaning = now + self.config.log_cleaner_backoff_ms / 1000
                    self.logs.request_cleaning()
            except KafkaStorageError:
                if self.logs.offline:
                    return  # _on_log_dir_failure has said so and is stopping the broker
                log.exception("maintenance failed")
            except Exception:
                log.exception("maintenance failed")

    async def _flush_due_logs(self, loop: asyncio.AbstractEventLoop) -> None:
        """fsync the logs whose ``flush.ms`` has passed, off the event loop.

        Costs the logs with unflushed data only.  Every ticket runs (and closes its descriptors)
        even when another fails; a failed one advances nothing and takes the directory offline.
        """
        logs = self.logs
        tickets: list[tuple[PartitionLog, FlushTicket]] = []
        try:
            for plog in logs.logs_due_for_flush(logs.clock()):
                tickets.append((plog, plog.prepare_flush()))
        except BaseException:
            for _, ticket in tickets:
                ticket.close()
            raise
        if not tickets:
            return
        await loop.run_in_executor(None, FlushTicket.run_all, [ticket for _, ticket in tickets])
        failed: KafkaStorageError | None = None
        for plog, ticket in tickets:
            if not logs.is_open(plog):
                continue  # closed or its topic deleted meanwhile
            try:
                plog.complete_flush(ticket)
            except KafkaStorageError as exc:
                failed = failed or exc
        if failed is not None:
            raise failed
        logs.request_cleaning(plog for plog, _ in tickets)  # newly durable data may be cleanable
