"""Replica fetchers: how a follower keeps its copy of a partition in step with the leader.

One :class:`ReplicaFetcher` per leader broker sends ordinary Fetch requests
(with this broker's id in ``replica_state`` / ``replica_id``) for every partition
this broker follows there: from its log end offset, with the leader epoch it
believes current and the epoch of its last batch.  For each partition in the
answer it

* truncates first when the leader reports a ``diverging_epoch`` (its tail was
  written by a leader that lost it: KIP-595's check, done by the leader), before
  anything else (KAFKA-14704), then fetches again;
* appends the batches exactly as the leader stored them (offsets and leader
  epochs kept; the leader-epoch cache and producer state follow);
* sets its high watermark to min(own log end, leader's) and moves its log start
  up to the leader's;
* on OFFSET_OUT_OF_RANGE below the leader's log start, starts over at it;
* leaves out of its requests a throttled partition (``follower.replication.throttled.replicas``)
  it is not in sync for while the follower quota is exceeded (:mod:`broker.replication.quota`);
* on FENCED_LEADER_EPOCH waits for the metadata image to say who leads now; on
  NOT_LEADER_OR_FOLLOWER / UNKNOWN_LEADER_EPOCH / an unknown partition (the leader has
  not applied the record that made it leader yet) asks again after 50 ms.

:class:`ReplicaFetcherManager` adds and removes partitions as leadership moves
and owns the fetchers; both live on the event loop.  Fetchers connect to the
leader's inter-broker listener with this broker's own credentials (TLS and SASL
as that listener requires).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from broker.cluster.channel import connect
from broker.cluster.records import BrokerRegistration
from client.errors import AuthenticationError
from client.security import ClientSecurity
from protocol.api import ApiKey
from protocol.error_codes import ErrorCode, error_name
from protocol.timer_service import WheelTimer

if TYPE_CHECKING:
    from broker.replication.partition import Partition
    from broker.replication.quota import RateQuota

log = logging.getLogger("kbroker.replica.fetcher")

__all__ = ["FetcherSettings", "ReplicaFetcher", "ReplicaFetcherManager"]

E = ErrorCode
TopicPartition = tuple[str, int]
FETCH_VERSION = 17
#: how soon a partition the leader does not know as its own yet is fetched again
METADATA_RACE_BACKOFF_MS = 50
#: how soon a throttled partition held back by the follower quota is looked at again
THROTTLE_RECHECK_S = 0.1


@dataclass(frozen=True, slots=True)
class FetcherSettings:
    wait_max_ms: int = 500
    min_bytes: int = 1
    max_bytes: int = 1024 * 1024
    response_max_bytes: int = 10 * 1024 * 1024
    backoff_ms: int = 1000
    socket_timeout_ms: int = 30_000
    #: the inter-broker listener (``inter.broker.listener.name``) and how to secure connections to it
    listener: str | None = None
    security: ClientSecurity | None = None


class ReplicaFetcher:
    """Fetches every partition this broker follows from one leader broker."""

    def __init__(self, manager: ReplicaFetcherManager, leader_id: int) -> None:
        self.manager = manager
        self.leader_id = leader_id
        self.partitions: dict[TopicPartition, Partition] = {}
        self.delayed_until: dict[TopicPartition, float] = {}
        self._wake = asyncio.Event()
        self._conn: Any = None
        self._task: asyncio.Task[None] | None = None
        self.lag: dict[TopicPartition, int] = {}

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.ensure_future(self._run())

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            try:
                await task
            except (asyncio.CancelledError, Exception):
                pass
        self._close_conn()

    def add(self, partition: Partition) -> None:
        tp = (partition.topic, partition.partition)
        self.partitions[tp] = partition
        self.delayed_until.pop(tp, None)
        self._wake.set()

    def remove(self, tp: TopicPartition) -> None:
        self.partitions.pop(tp, None)
        self.delayed_until.pop(tp, None)
        self.lag.pop(tp, None)

    def _close_conn(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    async def _connection(self) -> Any:
        if self._conn is not None and not self._conn.closed:
            return self._conn
        manager = self.manager
        self._conn = await connect(self.leader_id, manager.broker(self.leader_id), listener=manager.settings.listener,
                                   client_id=f"broker-{manager.local_id}-fetcher", timers=manager.timers,
                                   timeout_ms=manager.settings.socket_timeout_ms,
                                   security=manager.settings.security)
        return self._conn

    def _throttled(self, p: Partition) -> bool:
        """A fetch that counts against the follower quota: a throttled partition this broker is out of sync on."""
        return p.follower_throttled and self.manager.local_id not in p.isr

    def _ready(self) -> list[Partition]:
        now = time.monotonic()
        ready = []
        quota = self.manager.quota
        for tp, p in self.partitions.items():
            if self.delayed_until.get(tp, 0) > now:
                continue
            if quota is not None and self._throttled(p) and quota.exceeded():
                self.delayed_until[tp] = now + THROTTLE_RECHECK_S  # throttled: wait for the quota
                continue
            ready.append(p)
        return ready

    async def _run(self) -> None:
        settings = self.manager.settings
        while True:
            ready = self._ready()
            if not ready:
                self._wake.clear()
                delays = [t for t in self.delayed_until.values()]
                timeout = max(0.01, min(delays) - time.monotonic()) if delays else None
                try:
                    await asyncio.wait_for(self._wake.wait(), timeout)
                except TimeoutError:
                    pass
                continue
            try:
                conn = await self._connection()
                version = min(conn.version(ApiKey.FETCH), FETCH_VERSION)
                request = self._build(ready, version)
                response = await conn.request(ApiKey.FETCH, request, version=version,
                                              timeout_ms=settings.socket_timeout_ms + settings.wait_max_ms)
            except AuthenticationError as exc:  # this broker's credentials are refused: say so, retry later
                log.warning("cannot fetch from broker %d: %s", self.leader_id, exc)
                self._close_conn()
                await asyncio.sleep(settings.backoff_ms / 1000)
                continue
            except Exception as exc:  # connection, timeout or protocol trouble: back off and reconnect
                log.debug("fetch from broker %d failed: %s", self.leader_id, exc)
                self._close_conn()
                await asyncio.sleep(settings.backoff_ms / 1000)
                continue
            if response.error_code:
                log.info("fetch from broker %d: error %s", self.leader_id, error_name(response.error_code))
                await asyncio.sleep(settings.backoff_ms / 1000)
                continue
            self._handle(ready, response, version)

    def _build(self, ready: list[Partition], version: int) -> dict[str, Any]:
        settings = self.manager.settings
        topics: dict[str, dict[str, Any]] = {}
        quota = self.manager.quota
        for p in ready:
            plog = p.log
            max_bytes = settings.max_bytes
            if quota is not None and self._throttled(p):
                max_bytes = min(max_bytes, quota.allowance())  # a throttled copy moves a window at a time
            entry = topics.setdefault(p.topic, {"topic": p.topic, "topic_id": p.topic_id, "partitions": []})
            entry["partitions"].append({
                "partition": p.partition, "current_leader_epoch": p.leader_epoch,
                "fetch_offset": plog.log_end_offset, "last_fetched_epoch": plog.epoch_cache.latest_epoch,
                "log_start_offset": plog.log_start_offset, "partition_max_bytes": max_bytes,
            })
        body: dict[str, Any] = {
            "replica_id": self.manager.local_id,
            "max_wait_ms": settings.wait_max_ms, "min_bytes": settings.min_bytes,
            "max_bytes": settings.response_max_bytes, "isolation_level": 0, "session_id": 0,
            "session_epoch": -1, "topics": list(topics.values()), "forgotten_topics_data": [], "rack_id": "",
        }
        if version >= 15:
            body["replica_state"] = {"replica_id": self.manager.local_id,
                                     "replica_epoch": self.manager.broker_epoch()}
        return body

    def _handle(self, sent: list[Partition], response: Any, version: int) -> None:
        by_tp = {(p.topic, p.partition): p for p in sent}
        for t in response.responses:
            name = t.topic if version < 13 else self.manager.topic_name(t.topic_id)
            for pr in t.partitions:
                tp = (name, pr.partition_index)
                p = by_tp.get(tp)
                if p is None or self.partitions.get(tp) is not p:
                    continue  # no longer fetched from here
                try:
                    self._handle_partition(p, pr)
                except Exception:
                    log.exception("follower %s-%d: applying fetched data failed", p.topic, p.partition)
                    self.delayed_until[tp] = time.monotonic() + self.manager.settings.backoff_ms / 1000

    def _handle_partition(self, p: Partition, pr: Any) -> None:
        tp = (p.topic, p.partition)
        plog = p.log
        code = pr.error_code
        if code == E.NONE:
            div = pr.get("diverging_epoch")
            if div is not None and div.end_offset >= 0:
                self._truncate_diverged(p, div.epoch, div.end_offset)
                return
            records = pr.records
            if records:
                if p.follower_throttled and self.manager.quota is not None:
                    self.manager.quota.record(len(records))
                plog.append_as_follower(records)
            leader_hw = pr.high_watermark
            if leader_hw >= 0:
                hw = min(plog.log_end_offset, leader_hw)
                if hw > plog.high_watermark:
                    plog.high_watermark = hw
                self.lag[tp] = max(0, leader_hw - plog.log_end_offset)
            if pr.log_start_offset > plog.log_start_offset:
                plog.follow_log_start_offset(pr.log_start_offset)
            self.manager.on_follower_progress(p)
        elif code == E.OFFSET_OUT_OF_RANGE:
            leader_start = pr.log_start_offset
            leader_end = pr.high_watermark
            if leader_start >= 0 and plog.log_end_offset < leader_start:
                log.info("follower %s-%d: log end %d is below the leader's start %d: starting over there",
                         p.topic, p.partition, plog.log_end_offset, leader_start)
                plog.truncate_fully_and_start_at(leader_start)
            elif leader_end >= 0 and plog.log_end_offset > leader_end:
                plog.truncate_to(leader_end)
            else:
                self.delayed_until[tp] = time.monotonic() + self.manager.settings.backoff_ms / 1000
        else:
            backoff_ms = self.manager.settings.backoff_ms
            if code in (E.NOT_LEADER_OR_FOLLOWER, E.UNKNOWN_LEADER_EPOCH, E.UNKNOWN_TOPIC_OR_PARTITION,
                        E.UNKNOWN_TOPIC_ID):
                # the leader has not taken in the record that made it leader yet (it arrives in a few
                # milliseconds): ask again soon rather than leave the partition unreplicated for a backoff
                backoff_ms = min(backoff_ms, METADATA_RACE_BACKOFF_MS)
            elif code != E.FENCED_LEADER_EPOCH:
                log.info("follower %s-%d: fetch error %s", p.topic, p.partition, error_name(code))
            self.delayed_until[tp] = time.monotonic() + backoff_ms / 1000

    def _truncate_diverged(self, p: Partition, epoch: int, end_offset: int) -> None:
        """KIP-595/KIP-279: cut back to where our history and the leader's agree."""
        plog = p.log
        own_epoch, own_end = plog.epoch_cache.end_offset_for(epoch, plog.log_end_offset)
        if own_epoch == epoch:
            target = min(end_offset, own_end)
        else:
            # We never had that epoch: go back to the end of our largest epoch below it and ask again.
            target = min(end_offset, own_end) if own_end >= 0 else end_offset
        target = max(min(target, plog.log_end_offset), plog.log_start_offset)
        log.info("follower %s-%d: truncating from %d to %d (leader epoch %d ends at %d there)",
                 p.topic, p.partition, plog.log_end_offset, target, epoch, end_offset)
        plog.truncate_to(target)


class ReplicaFetcherManager:
    """Routes followed partitions to one fetcher per leader."""

    def __init__(self, local_id: int, settings: FetcherSettings, timers: WheelTimer, *,
                 broker: Callable[[int], BrokerRegistration | None], broker_epoch: Callable[[], int],
                 topic_name: Callable[[Any], str | None],
                 on_follower_progress: Callable[[Partition], None] = lambda p: None,
                 quota: RateQuota | None = None) -> None:
        self.local_id = local_id
        self.settings = settings
        self.timers = timers
        self.broker = broker
        self.broker_epoch = broker_epoch
        self.topic_name = topic_name
        self.on_follower_progress = on_follower_progress
        #: ``follower.replication.throttled.rate``: bytes fetched for throttled partitions
        self.quota = quota
        self.fetchers: dict[int, ReplicaFetcher] = {}
        self._where: dict[TopicPartition, int] = {}

    def follow(self, partition: Partition) -> None:
        """Fetch ``partition`` from its current leader (moving it from another fetcher if needed)."""
        tp = (partition.topic, partition.partition)
        leader = partition.leader
        self.unfollow(tp)
        if leader < 0 or leader == self.local_id:
            return
        partition.log.prepare_to_follow()
        fetcher = self.fetchers.get(leader)
        if fetcher is None:
            fetcher = self.fetchers[leader] = ReplicaFetcher(self, leader)
            fetcher.start()
        fetcher.add(partition)
        self._where[tp] = leader

    def unfollow(self, tp: TopicPartition) -> None:
        leader = self._where.pop(tp, None)
        if leader is None:
            return
        fetcher = self.fetchers.get(leader)
        if fetcher is not None:
            fetcher.remove(tp)

    def leader_gone(self, leader: int) -> None:
        """The leader's broker left: drop the connection (the image will reassign its partitions)."""
        fetcher = self.fetchers.get(leader)
        if fetcher is not None:
            fetcher._close_conn()

    def lag(self) -> dict[TopicPartition, int]:
        out: dict[TopicPartition, int] = {}
        for f in self.fetchers.values():
            out.update(f.lag)
        return out

    async def close(self) -> None:
        fetchers, self.fetchers = self.fetchers, {}
        self._where.clear()
        for f in fetchers.values():
            await f.stop()
