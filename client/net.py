"""The network client shared by Producer, Consumer and Admin.

Owns: bootstrap, the connection pool (per broker one ``normal`` connection, one ``group``
connection for JoinGroup/SyncGroup long polls and one ``fetch`` connection so fetch long
polls never delay commits or heartbeats), reconnect backoff, the metadata cache with periodic
(``metadata_max_age_ms``) and error-driven refresh, and picking the least-loaded node for
Metadata / FindCoordinator / admin requests.

Metadata snapshots are immutable :class:`client.cluster.ClusterMetadata` objects; listeners get
``(old, new)`` after every refresh, which is how the consumer notices new partitions or
topics matching its pattern.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import uuid
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from client.cluster import BrokerInfo, ClusterMetadata, NodeState, PartitionInfo, TopicInfo, least_loaded_node
from client.config import CommonConfig
from client.conn import Backoff, Connection
from client.errors import KafkaConnectionError, KafkaError, KafkaTimeoutError
from protocol.api import ApiKey
from protocol.error_codes import ErrorCode
from protocol.primitives import Obj
from protocol.timer_service import WheelTimer

ZERO_UUID = uuid.UUID(int=0)


def parse_metadata(resp: Obj) -> ClusterMetadata:
    """A :class:`~client.cluster.ClusterMetadata` snapshot from a Metadata response."""
    brokers = {b.node_id: BrokerInfo(b.node_id, b.host, b.port, b.rack) for b in resp.brokers}
    topics: dict[str, TopicInfo] = {}
    for t in resp.topics:
        if t.name is None:
            continue
        parts = {p.partition_index: PartitionInfo(p.partition_index, p.leader_id, p.leader_epoch,
                                                  tuple(p.replica_nodes), tuple(p.isr_nodes),
                                                  tuple(p.offline_replicas), p.error_code)
                 for p in t.partitions}
        topic_id = t.topic_id if t.topic_id != ZERO_UUID else None
        topics[t.name] = TopicInfo(t.name, parts, topic_id, t.is_internal, t.error_code)
    return ClusterMetadata(brokers, topics, resp.controller_id, resp.cluster_id)


def partitions_for(md: ClusterMetadata, topic: str) -> list[int] | None:
    info = md.topics.get(topic)
    if info is None or (info.error_code and not info.partitions):
        return None
    return sorted(info.partitions)


class NetworkClient:
    """Connections, metadata and request routing for one client instance (one event loop)."""

    def __init__(self, config: CommonConfig, timers: WheelTimer, *, allow_auto_topic_creation: bool = False) -> None:
        self.config = config
        self.timers = timers
        self.allow_auto_topic_creation = allow_auto_topic_creation
        self.metadata = ClusterMetadata()
        self.topics: set[str] | None = set()
        self._bootstrap = {-(i + 1): BrokerInfo(-(i + 1), h, p) for i, (h, p) in enumerate(config.bootstrap)}
        self._conns: dict[tuple[int, str], Connection] = {}
        self._extra: dict[int, BrokerInfo] = {}
        self._connecting: dict[tuple[int, str], asyncio.Future[Connection]] = {}
        self._backoff: dict[int, Backoff] = {}
        self._rng = random.Random()
        self._refreshing: asyncio.Future[ClusterMetadata] | None = None
        self._refresh_timer: Any = None
        self._update_timer: Any = None
        self._listeners: list[Callable[[ClusterMetadata, ClusterMetadata], None]] = []
        self._tasks: set[asyncio.Task[Any]] = set()
        self._closed = False
        self.last_refresh_ms = 0.0

    # -- lifecycle -------------------------------------------------------------------------------

    async def start(self) -> None:
        await self.refresh_metadata()

    async def close(self) -> None:
        self._closed = True
        for t in (self._refresh_timer, self._update_timer):
            if t is not None:
                t.cancel()
        for task in list(self._tasks):
            task.cancel()
        for fut in self._connecting.values():
            fut.cancel()
        for conn in list(self._conns.values()):
            conn.close()
        self._conns.clear()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    def spawn(self, coro: Any) -> asyncio.Task[Any]:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def add_listener(self, fn: Callable[[ClusterMetadata, ClusterMetadata], None]) -> None:
        self._listeners.append(fn)

    # -- connections -----------------------------------------------------------------------------

    def node(self, node_id: int) -> BrokerInfo | None:
        return self.metadata.brokers.get(node_id) or self._extra.get(node_id) or self._bootstrap.get(node_id)

    def register_node(self, node_id: int, host: str, port: int) -> None:
        """A broker learnt outside Metadata (a FindCoordinator answer)."""
        if node_id not in self.metadata.brokers:
            self._extra[node_id] = BrokerInfo(node_id, host, port)

    def _backoff_for(self, node_id: int) -> Backoff:
        b = self._backoff.get(node_id)
        if b is None:
            b = self._backoff[node_id] = Backoff(self.config.reconnect_backoff_ms,
                                                 self.config.reconnect_backoff_max_ms, self._rng)
        return b

    def connected(self, node_id: int, kind: str = "normal") -> Connection | None:
        conn = self._conns.get((node_id, kind))
        return conn if conn is not None and not conn.closed else None

    def ready_connection(self, node_id: int, kind: str = "normal") -> Connection | None:
        """The open connection to ``node_id`` if a request can be written to it now, else None."""
        conn = self._conns.get((node_id, kind))
        return conn if conn is not None and conn.ready else None

    async def connection(self, node_id: int, kind: str = "normal") -> Connection:
        key = (node_id, kind)
        conn = self._conns.get(key)
        if conn is not None and not conn.closed:
            return conn
        fut = self._connecting.get(key)
        if fut is None:
            fut = asyncio.get_running_loop().create_future()
            self._connecting[key] = fut
            self.spawn(self._connect(key, fut))
        return await asyncio.shield(fut)

    async def _connect(self, key: tuple[int, str], fut: asyncio.Future[Connection]) -> None:
        node_id = key[0]
        try:
            node = self.node(node_id)
            if node is None:
                raise KafkaConnectionError(f"unknown broker {node_id}")
            backoff = self._backoff_for(node_id)
            wait_ms = backoff.next_attempt_ms - self.timers.now_ms()
            if wait_ms > 0:
                await asyncio.sleep(wait_ms / 1000)
            backoff.on_attempt(self.timers.now_ms())
            conn = Connection(node_id, node.host, node.port, client_id=self.config.client_id, timers=self.timers,
                              request_timeout_ms=self.config.request_timeout_ms, on_close=self._on_conn_close,
                              security=self.config.security)
            try:
                await conn.open()
            except KafkaError:
                backoff.on_failure(self.timers.now_ms())
                raise
            backoff.on_success()
            self._conns[key] = conn
            if not fut.done():
                fut.set_result(conn)
        except BaseException as exc:
            if not fut.done():
                fut.set_exception(exc if isinstance(exc, Exception) else KafkaConnectionError("cancelled"))
                fut.exception()
            if not isinstance(exc, Exception):
                raise
        finally:
            self._connecting.pop(key, None)

    def _on_conn_close(self, conn: Connection) -> None:
        for key, c in list(self._conns.items()):
            if c is conn:
                del self._conns[key]
        if not self._closed and conn.node_id >= 0:
            self.request_metadata_update()

    def in_flight(self, node_id: int) -> int:
        return sum(c.in_flight for (n, _), c in self._conns.items() if n == node_id)

    def least_loaded_node(self) -> int | None:
        candidates = list(self.metadata.brokers) or list(self._bootstrap)
        now = int(self.timers.now_ms())

        def state(node_id: int) -> NodeState | None:
            conn = self.connected(node_id)
            b = self._backoff.get(node_id)
            if conn is None and b is None and (node_id, "normal") not in self._connecting:
                return None
            return NodeState(ready=conn is not None, connecting=(node_id, "normal") in self._connecting,
                             in_flight=conn.in_flight if conn is not None else 0, max_in_flight=1 << 30,
                             last_connect_attempt_ms=int(b.last_attempt_ms) if b else 0,
                             backoff_until_ms=int(b.next_attempt_ms) if b else 0)

        return least_loaded_node(candidates, state, now, self._rng).node

    # -- requests --------------------------------------------------------------------------------

    async def send(self, node_id: int, api_key: int, body: Mapping[str, Any], *, kind: str = "normal",
                   timeout_ms: int | None = None, expect_response: bool = True,
                   build: Callable[[int], Mapping[str, Any]] | None = None, max_version: int | None = None) -> Obj:
        """Send to ``node_id``; ``build(version)`` (if given) makes a version-specific body; ``max_version``
        caps the version both sides speak."""
        conn = await self.connection(node_id, kind)
        version = conn.version(api_key)
        if max_version is not None and version > max_version:
            version = max_version
        if build is not None:
            body = build(version)
        return await conn.request(api_key, body, version=version, timeout_ms=timeout_ms,
                                  expect_response=expect_response)

    async def send_any(self, api_key: int, body: Mapping[str, Any] | None = None, *,
                       build: Callable[[int], Mapping[str, Any]] | None = None,
                       timeout_ms: int | None = None, attempts: int = 3) -> tuple[int, Obj]:
        """Send to the least-loaded node, retrying on other nodes if the connection fails."""
        last: Exception | None = None
        for _ in range(max(attempts, 1)):
            node_id = self.least_loaded_node()
            if node_id is None:
                await asyncio.sleep(self.config.reconnect_backoff_ms / 1000)
                node_id = self.least_loaded_node()
                if node_id is None:
                    last = KafkaConnectionError("no broker is reachable")
                    continue
            try:
                return node_id, await self.send(node_id, api_key, body or {}, build=build, timeout_ms=timeout_ms)
            except (KafkaConnectionError, KafkaTimeoutError) as exc:
                last = exc
        assert last is not None
        raise last

    async def version(self, node_id: int, api_key: int) -> int:
        return (await self.connection(node_id)).version(api_key)

    # -- metadata --------------------------------------------------------------------------------

    def add_topics(self, topics: Iterable[str]) -> bool:
        """Track more topics; True when something new was added."""
        if self.topics is None:
            return False
        new = set(topics) - self.topics
        self.topics |= new
        return bool(new)

    def set_topics(self, topics: set[str] | None) -> None:
        self.topics = None if topics is None else set(topics)

    async def refresh_metadata(self) -> ClusterMetadata:
        """Fetch metadata now (concurrent callers share one request)."""
        if self._refreshing is not None:
            return await asyncio.shield(self._refreshing)
        fut: asyncio.Future[ClusterMetadata] = asyncio.get_running_loop().create_future()
        self._refreshing = fut
        try:
            snap = await self._fetch_metadata()
            fut.set_result(snap)
            return snap
        except BaseException as exc:
            fut.set_exception(exc if isinstance(exc, Exception) else KafkaConnectionError("cancelled"))
            fut.exception()
            raise
        finally:
            self._refreshing = None

    async def _fetch_metadata(self) -> ClusterMetadata:
        topics = None if self.topics is None else sorted(self.topics)

        def build(version: int) -> dict[str, Any]:
            if topics is None:
                t: list[dict[str, Any]] | None = [] if version == 0 else None
            else:
                t = [{"name": n} for n in topics]
            return {"topics": t, "allow_auto_topic_creation": self.allow_auto_topic_creation}

        deadline = self.timers.now_ms() + self.config.request_timeout_ms
        while True:
            try:
                _, resp = await self.send_any(ApiKey.METADATA, build=build)
                break
            except (KafkaConnectionError, KafkaTimeoutError):
                if self.timers.now_ms() >= deadline or self._closed:
                    raise
                await asyncio.sleep(self.config.retry_backoff_ms / 1000)
        old, new = self.metadata, parse_metadata(resp)
        self.metadata = new
        self.last_refresh_ms = self.timers.now_ms()
        if new.brokers:
            for key, conn in list(self._conns.items()):
                if key[0] < 0 and conn.in_flight == 0:
                    conn.close()
        self._schedule_periodic()
        for fn in list(self._listeners):
            fn(old, new)
        return new

    def _schedule_periodic(self) -> None:
        if self._closed:
            return
        if self._refresh_timer is not None:
            self._refresh_timer.cancel()
        self._refresh_timer = self.timers.call_later_ms(self.config.metadata_max_age_ms, self._periodic)

    def _periodic(self) -> None:
        self._refresh_timer = None
        self.spawn(self._refresh_quietly())

    async def _refresh_quietly(self) -> None:
        with contextlib.suppress(KafkaError):
            await self.refresh_metadata()

    def request_metadata_update(self) -> None:
        """Error-driven refresh, debounced by ``retry_backoff_ms``."""
        if self._closed or self._update_timer is not None:
            return

        def fire() -> None:
            self._update_timer = None
            self.spawn(self._refresh_quietly())

        self._update_timer = self.timers.call_later_ms(self.config.retry_backoff_ms, fire)

    async def wait_for_partitions(self, topic: str, timeout_ms: int) -> list[int]:
        """Partitions of ``topic``, refreshing metadata (and auto-creating if allowed) until known."""
        deadline = self.timers.now_ms() + timeout_ms
        self.add_topics([topic])
        while True:
            parts = partitions_for(self.metadata, topic)
            if parts:
                return parts
            t = self.metadata.topics.get(topic)
            if t is not None and t.error_code and not ErrorCode.from_code(t.error_code).retriable:
                raise KafkaError(t.error_code, f"topic {topic!r}")
            if self.timers.now_ms() >= deadline:
                raise KafkaTimeoutError(f"no metadata for topic {topic!r} after {timeout_ms} ms")
            await self.refresh_metadata()
            if not partitions_for(self.metadata, topic):
                await asyncio.sleep(self.config.retry_backoff_ms / 1000)
