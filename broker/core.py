"""BrokerCore: builds the broker's components, starts and stops them in order.

Owns what is broker-wide rather than per-request: the cluster id, producer-id
allocation, the shared timing-wheel driver, the log manager, the internal
``__consumer_offsets`` topic, periodic maintenance, and the metrics endpoint.

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
from typing import Any

from broker.config import BrokerConfig
from broker.faults import FaultInjector
from broker.internal_topics import OFFSETS_TOPIC
from broker.log.dir_failure import LogDirFailure
from broker.log.errors import KafkaStorageError, LogError
from broker.log.manager import LogManager
from broker.log.partition_log import FlushTicket, PartitionLog
from broker.metrics import BrokerMetrics
from protocol.timer_service import WheelTimer

log = logging.getLogger("kbroker")

_PRODUCER_ID_BLOCK = 1000
EXIT_LOG_DIR_FAILURE = os.EX_IOERR  # 74: the broker stopped because its data directory failed


def broker_log_defaults(config: BrokerConfig) -> dict[str, str]:
    """Broker-level ``log.*`` settings, as the topic-config defaults they are."""
    defaults = {
        "retention.ms": str(config.log_retention_ms),
        "retention.bytes": str(config.log_retention_bytes),
        "segment.bytes": str(config.log_segment_bytes),
        "segment.ms": str(config.log_roll_ms),
        "max.message.bytes": str(config.message_max_bytes),
        "message.timestamp.type": config.log_message_timestamp_type,
        "flush.messages": str(config.log_flush_interval_messages),
    }
    if config.log_flush_interval_ms is not None:
        defaults["flush.ms"] = str(config.log_flush_interval_ms)
    return defaults


class BrokerCore:
    def __init__(self, config: BrokerConfig) -> None:
        self.config = config
        self.metrics = BrokerMetrics(self)
        self.faults = FaultInjector()
        self.cluster_id = ""
        self.advertised: tuple[str, int] = config.advertised_host_port
        self.bound: tuple[str, int] = (config.host, config.port)
        self._tasks: list[asyncio.Task[Any]] = []
        self._producer_id_next = 0
        self._producer_id_limit = 0
        self.started = False
        #: Why the data directory went offline (the broker then stops itself); None while healthy.
        self.failure: LogDirFailure | None = None
        self._stopping: asyncio.Future[None] | None = None
        self._stopped = asyncio.Event()

    async def start(self) -> None:
        from broker.apis import KafkaApis
        from broker.group_service import GroupService
        from broker.replica_manager import ReplicaManager
        from broker.server import KafkaServer

        config = self.config
        data = config.data_path
        data.mkdir(parents=True, exist_ok=True)
        self.cluster_id = self._load_cluster_id()
        self.timer = WheelTimer(asyncio.get_running_loop())
        self.logs = LogManager(data, default_configs=broker_log_defaults(config))
        self.logs.dir_failure.add_listener(self._on_log_dir_failure)
        for (topic, partition), report in self.logs.recovery_reports.items():
            if report.repaired:
                log.warning("recovered %s-%d: %s", topic, partition, report.describe())
        if self.logs.topic(OFFSETS_TOPIC) is None:
            self.logs.create_topic(OFFSETS_TOPIC, config.offsets_topic_num_partitions,
                                   {"cleanup.policy": "compact", "segment.bytes": str(100 * 1024 * 1024),
                                    "retention.ms": "-1"})
        self.replica_manager = ReplicaManager(self)
        self.group_service = GroupService(self)
        self.group_service.load()
        self.apis = KafkaApis(self)
        self.server = KafkaServer(config, self.apis)
        self.bound = await self.server.start()
        host, port = config.advertised_host_port
        if not config.advertised_listener and config.port == 0:
            port = self.bound[1]
        self.advertised = (host, port)
        if config.metrics_port is not None:
            self.metrics.serve(config.metrics_host or config.host, config.metrics_port)
        self._tasks.append(asyncio.ensure_future(self._maintenance_loop()))
        self.started = True
        log.info("kbroker node %d listening on %s:%d (advertised %s:%d), data in %s, cluster %s",
                 config.node_id, self.bound[0], self.bound[1], host, port, data, self.cluster_id)

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

    def _on_log_dir_failure(self, failure: LogDirFailure) -> None:
        self.failure = failure
        log.critical("log directory %s is offline: %s; stopping the broker (a restart recovers from the "
                     "last recovery point)", failure.directory, failure.describe())
        if self.started:
            asyncio.get_running_loop().call_soon(lambda: asyncio.ensure_future(self.stop()))

    async def _stop(self) -> None:
        self.started = False
        try:
            await self.server.stop()
            for task in self._tasks:
                task.cancel()
            self.group_service.close()
            self.timer.close()
            try:
                self.logs.flush_all()  # does nothing once the directory is offline
            finally:
                self.logs.close()
            self.metrics.close()
            log.info("kbroker node %d stopped", self.config.node_id)
        finally:
            self._stopped.set()

    async def _maintenance_loop(self) -> None:
        """Flush rounds, compaction swaps and (every retention check interval) log maintenance,
        until the data directory goes offline."""
        interval = max(0.05, min(1.0, (self.config.log_flush_interval_ms or 1000) / 1000))
        loop = asyncio.get_running_loop()
        retention_every = self.config.log_retention_check_interval_ms / 1000
        next_retention = time.monotonic() + retention_every
        while not self.logs.offline:
            await asyncio.sleep(interval)
            try:
                await self._flush_due_logs(loop)
                self.logs.apply_cleaned()
                if time.monotonic() >= next_retention:
                    next_retention = time.monotonic() + retention_every
                    self.logs.maintenance(flush=False)  # flushing is _flush_due_logs' job, off the loop
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

    # -- broker-wide state -------------------------------------------------------------

    def _load_cluster_id(self) -> str:
        path = self.config.data_path / "meta.json"
        if path.exists():
            try:
                meta = json.loads(path.read_text())
                if meta.get("cluster_id"):
                    return str(meta["cluster_id"])
            except (OSError, ValueError):
                log.warning("unreadable %s; keeping a new cluster id", path)
        cluster_id = uuid.uuid4().hex[:22]
        self._write_meta({"cluster_id": cluster_id, "node_id": self.config.node_id, "producer_id_limit": 0})
        return cluster_id

    def _write_meta(self, meta: dict[str, Any]) -> None:
        path = self.config.data_path / "meta.json"
        tmp = path.with_suffix(".tmp")
        with open(tmp, "w") as fh:
            json.dump(meta, fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)

    def allocate_producer_id(self) -> int:
        """A producer id never handed out before, even across restarts (allocated in persisted blocks)."""
        if self._producer_id_next >= self._producer_id_limit:
            path = self.config.data_path / "meta.json"
            meta = json.loads(path.read_text()) if path.exists() else {"cluster_id": self.cluster_id}
            start = int(meta.get("producer_id_limit", 0))
            meta["producer_id_limit"] = start + _PRODUCER_ID_BLOCK
            self._write_meta(meta)
            self._producer_id_next, self._producer_id_limit = start, start + _PRODUCER_ID_BLOCK
        pid = self._producer_id_next
        self._producer_id_next += 1
        return pid

    def create_topic(self, name: str, partitions: int, configs: dict[str, str | None]) -> uuid.UUID:
        topic_id = self.logs.create_topic(name, partitions, configs)
        self.metrics.topics_changed()
        return topic_id

    def delete_topic(self, name: str) -> None:
        info = self.logs.topic(name)
        self.logs.delete_topic(name)
        if info is not None:
            self.replica_manager.partitions_removed((name, p) for p in range(info.partitions))
        self.metrics.topics_changed()

    def add_partitions(self, name: str, count: int) -> None:
        self.logs.add_partitions(name, count)



__all__ = ["OFFSETS_TOPIC", "BrokerCore", "LogError"]
