"""The asyncio edges of group membership: they run the actions of the pure machines.

:class:`GroupCoordinator` owns the requests of the classic group protocol (FindCoordinator, JoinGroup,
SyncGroup, Heartbeat, LeaveGroup — JoinGroup/SyncGroup on the separate ``group`` connection so a long
join never delays a heartbeat) for :class:`~client.membership.Membership`;
:class:`ConsumerGroupCoordinator` owns ConsumerGroupHeartbeat (KIP-848) and the reconciliations of
:class:`~client.consumer_membership.ConsumerMembership`, and :class:`ShareGroupCoordinator` the same
machine's ShareGroupHeartbeat (KIP-932, for :class:`~client.share_consumer.ShareConsumer`).  Both share (``_GroupEdge``) the wheel timer
that drives the machine's ``tick``, the rebalance callbacks into the consumer, and the pump: actions run
one at a time in order on a pump task; requests are awaited on their own tasks and their responses go
back into the machine.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from client.config import ConsumerConfig
from client.consumer_membership import (
    ConsumerMembership,
    MemberState,
    Reconcile,
    RefreshMetadata,
    SendConsumerHeartbeat,
)
from client.errors import KafkaConnectionError, KafkaError, KafkaTimeoutError
from client.group_protocol import ConsumerGroupProtocol
from client.membership import (
    Action,
    Assign,
    Fatal,
    FindCoordinator,
    Membership,
    Revoke,
    RunAssignment,
    SendHeartbeat,
    SendJoinGroup,
    SendLeaveGroup,
    SendSyncGroup,
    State,
)
from client.net import NetworkClient
from client.types import TopicPartition
from protocol.api import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages.consumer_group_heartbeat import ConsumerGroupHeartbeatRequestData
from protocol.messages.find_coordinator import FindCoordinatorRequestData
from protocol.messages.heartbeat import HeartbeatRequestData
from protocol.messages.join_group import JoinGroupRequestData
from protocol.messages.leave_group import LeaveGroupRequestData
from protocol.messages.share_group_heartbeat import ShareGroupHeartbeatRequestData
from protocol.messages.sync_group import SyncGroupRequestData

log = logging.getLogger(__name__)

RevokeCallback = Callable[[set[TopicPartition], bool], Awaitable[None]]
AssignCallback = Callable[[set[TopicPartition], set[TopicPartition]], Awaitable[None]]


GROUP_KEY, TRANSACTION_KEY = 0, 1


async def find_coordinator(net: NetworkClient, group_id: str, key_type: int = GROUP_KEY) -> int:
    """Node id of ``group_id``'s coordinator (a transactional id's with ``key_type=TRANSACTION_KEY``),
    registered with the network client."""

    def build(version: int) -> FindCoordinatorRequestData:
        if version >= 4:
            return {"key_type": key_type, "coordinator_keys": [group_id]}
        return {"key": group_id, "key_type": key_type}

    _, resp = await net.send_any(ApiKey.FIND_COORDINATOR, build=build)
    if resp.coordinators:
        c = resp.coordinators[0]
        code, node_id, host, port = c.error_code, c.node_id, c.host, c.port
    else:
        code, node_id, host, port = resp.error_code, resp.node_id, resp.host, resp.port
    if code:
        raise KafkaError(code, f"FindCoordinator({group_id})")
    net.register_node(node_id, host, port)
    return node_id


class _GroupEdge:
    """What the edges of both group protocols share: the action pump, the wheel timer driving the
    machine's ``tick``, the coordinator lookup, the rebalance callbacks and closing."""

    machine: Any

    def __init__(self, net: NetworkClient, config: ConsumerConfig, *, on_revoke: RevokeCallback,
                 on_assign: AssignCallback) -> None:
        assert config.group_id is not None
        self.net = net
        self.config = config
        self.group_id = config.group_id
        self._on_revoke = on_revoke
        self._on_assign = on_assign
        self._queue: deque[Action] = deque()
        self._wake = asyncio.Event()
        self._pump_task: asyncio.Task[None] | None = None
        self._timer: Any = None
        self._timer_at: float | None = None
        self.group_topics: set[str] = set()
        self.fatal: KafkaError | None = None
        self.changed = asyncio.Event()

    @property
    def now(self) -> float:
        return self.net.timers.now_ms()

    def start(self) -> None:
        self._pump_task = asyncio.get_running_loop().create_task(self._pump())

    def feed(self, actions: list[Action]) -> None:
        if actions:
            self._queue.extend(actions)
            self._wake.set()
        self._rearm()

    def _finished(self) -> bool:
        raise NotImplementedError

    def _rearm(self) -> None:
        deadline = self.machine.next_deadline()
        if deadline == self._timer_at:
            return
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._timer_at = deadline
        if deadline is not None and not self._finished():
            self._timer = self.net.timers.call_at_ms(max(deadline, self.now), self._on_timer)

    def _on_timer(self) -> None:
        self._timer = None
        self._timer_at = None
        self.feed(self.machine.tick(self.now))

    # -- application ---------------------------------------------------------------------------

    def poll(self) -> None:
        if self.fatal is not None:
            raise self.fatal
        self.feed(self.machine.poll(self.now))

    def request_rejoin(self, reason: str) -> None:
        self.feed(self.machine.request_rejoin(reason, self.now))

    async def close(self, timeout_s: float = 5.0) -> None:
        actions = self.machine.leave(self.now)
        if self._timer is not None:
            self._timer.cancel()
        if self._pump_task is not None:
            self._pump_task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._pump_task
        for action in actions:
            with contextlib.suppress(KafkaError, asyncio.TimeoutError):
                await asyncio.wait_for(self._run(action), timeout_s)

    # -- pump ----------------------------------------------------------------------------------

    async def _pump(self) -> None:
        while True:
            while not self._queue:
                self._wake.clear()
                await self._wake.wait()
            action = self._queue.popleft()
            try:
                await self._run(action)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("group action %r failed", action)
            self._rearm()

    async def _run(self, action: Action) -> None:
        if isinstance(action, Revoke):
            await self._on_revoke(action.partitions, action.lost)
        elif isinstance(action, Assign):
            await self._on_assign(action.added, action.assignment)
            self.changed.set()
        elif isinstance(action, Fatal):
            self.fatal = KafkaError(action.code, action.message)
            self.changed.set()
        else:
            await self._run_protocol(action)

    async def _run_protocol(self, action: Action) -> None:
        raise NotImplementedError

    async def _request(self, action: Action) -> None:
        try:
            actions = await self._send(action)
        except (KafkaConnectionError, KafkaTimeoutError) as exc:
            log.debug("group request %s failed: %s", type(action).__name__, exc)
            actions = self.machine.on_request_failed(action, self.now)
        except KafkaError as exc:
            actions = self.machine.on_request_failed(action, self.now)
            log.debug("group request %s failed: %s", type(action).__name__, exc)
        self.feed(actions)

    async def _send(self, action: Action) -> list[Action]:
        raise NotImplementedError

    async def _find_coordinator(self) -> list[Action]:
        try:
            node = await find_coordinator(self.net, self.group_id)
        except KafkaError as exc:
            if isinstance(exc, KafkaConnectionError | KafkaTimeoutError):
                raise
            return self.machine.on_coordinator_error(int(exc.code), self.now)
        return self.machine.on_coordinator(node, self.now)

    # -- offsets -------------------------------------------------------------------------------

    async def coordinator_node(self) -> int:
        node = self.machine.coordinator
        if node is None:
            node = await find_coordinator(self.net, self.group_id)
            self.feed(self.machine.on_coordinator(node, self.now))
        return node

    def on_commit_error(self, code: int) -> None:
        self.feed(self.machine.on_commit_error(code, self.now))


class GroupCoordinator(_GroupEdge):
    """The classic protocol's edge (:class:`~client.membership.Membership`)."""

    def __init__(self, net: NetworkClient, config: ConsumerConfig, *, on_revoke: RevokeCallback,
                 on_assign: AssignCallback) -> None:
        super().__init__(net, config, on_revoke=on_revoke, on_assign=on_assign)
        assert config.group_id is not None
        self.protocol = ConsumerGroupProtocol(config.partition_assignment_strategy)
        self.machine = Membership(
            group_id=config.group_id, protocol=self.protocol, session_timeout_ms=config.session_timeout_ms,
            heartbeat_interval_ms=config.heartbeat_interval_ms, max_poll_interval_ms=config.max_poll_interval_ms,
            retry_backoff_ms=config.retry_backoff_ms, group_instance_id=config.group_instance_id)

    def _finished(self) -> bool:
        return self.machine.state in (State.CLOSED, State.FAILED)

    def subscribe(self, topics: set[str], pattern: str | None = None) -> None:
        self.feed(self.machine.subscribe(topics, self.now))

    async def _run_protocol(self, action: Action) -> None:
        if isinstance(action, RunAssignment):
            await self._assign(action)
        elif isinstance(action, SendLeaveGroup):
            await self._leave(action)
        else:
            self.net.spawn(self._request(action))

    async def _send(self, action: Action) -> list[Action]:
        m = self.machine
        now = self.now
        if isinstance(action, FindCoordinator):
            return await self._find_coordinator()
        node = m.coordinator
        if node is None:
            return m.on_request_failed(action, now)
        if isinstance(action, SendJoinGroup):
            rebalance_timeout_ms = self.config.rebalance_timeout_ms
            assert rebalance_timeout_ms is not None  # ConsumerConfig defaults it to max_poll_interval_ms
            join: JoinGroupRequestData = {
                "group_id": self.group_id, "session_timeout_ms": self.config.session_timeout_ms,
                "rebalance_timeout_ms": rebalance_timeout_ms, "member_id": action.member_id,
                "group_instance_id": self.config.group_instance_id, "protocol_type": "consumer",
                "protocols": [{"name": n, "metadata": md} for n, md in action.protocols], "reason": action.reason,
            }
            timeout = rebalance_timeout_ms + self.config.request_timeout_ms
            resp = await self.net.send(node, ApiKey.JOIN_GROUP, join, kind="group", timeout_ms=timeout)
            members = [(mm.member_id, mm.group_instance_id, mm.metadata) for mm in resp.members]
            return m.on_join_response(resp.error_code, self.now, member_id=resp.member_id,
                                      generation=resp.generation_id, protocol_name=resp.protocol_name,
                                      leader=resp.leader, members=members, skip_assignment=resp.skip_assignment)
        if isinstance(action, SendSyncGroup):
            sync: SyncGroupRequestData = {
                "group_id": self.group_id, "generation_id": action.generation, "member_id": action.member_id,
                "group_instance_id": self.config.group_instance_id, "protocol_type": "consumer",
                "protocol_name": action.protocol,
                "assignments": [{"member_id": k, "assignment": v} for k, v in action.assignments.items()],
            }
            timeout = self.config.rebalance_timeout_ms + self.config.request_timeout_ms  # type: ignore[operator]
            resp = await self.net.send(node, ApiKey.SYNC_GROUP, sync, kind="group", timeout_ms=timeout)
            return m.on_sync_response(resp.error_code, self.now, resp.assignment)
        if isinstance(action, SendHeartbeat):
            beat: HeartbeatRequestData = {"group_id": self.group_id, "generation_id": action.generation,
                                          "member_id": action.member_id,
                                          "group_instance_id": self.config.group_instance_id}
            resp = await self.net.send(node, ApiKey.HEARTBEAT, beat)
            return m.on_heartbeat_response(resp.error_code, self.now)
        raise AssertionError(f"unexpected action {action!r}")

    async def _assign(self, action: RunAssignment) -> None:
        topics = self.protocol.member_topics(action.members)
        self.group_topics = topics
        if self.net.add_topics(topics) or any(t not in self.net.metadata.topics for t in topics):
            with contextlib.suppress(KafkaError):
                await self.net.refresh_metadata()
        counts = self.net.metadata.partition_counts()
        assignments = self.protocol.assign(action.protocol, counts, action.members)
        self.feed(self.machine.on_assignment(assignments, self.now))

    async def _leave(self, action: SendLeaveGroup) -> None:
        node = self.machine.coordinator
        if node is None:
            return

        def build(version: int) -> LeaveGroupRequestData:
            if version >= 3:
                return {"group_id": self.group_id,
                        "members": [{"member_id": action.member_id, "group_instance_id": None,
                                     "reason": action.reason}]}
            return {"group_id": self.group_id, "member_id": action.member_id}

        with contextlib.suppress(KafkaError):
            await self.net.send(node, ApiKey.LEAVE_GROUP, {}, build=build, timeout_ms=5000)

    def commit_identity(self) -> tuple[int, str]:
        if self.machine.generation >= 0 and self.machine.member_id:
            return self.machine.generation, self.machine.member_id
        return -1, ""


class ConsumerGroupCoordinator(_GroupEdge):
    """The KIP-848 protocol's edge (:class:`~client.consumer_membership.ConsumerMembership`):
    ConsumerGroupHeartbeat requests, reconciliations run through the consumer's callbacks, topic ids
    resolved with the metadata (refreshed when the target names ids it does not know)."""

    def __init__(self, net: NetworkClient, config: ConsumerConfig, *, on_revoke: RevokeCallback,
                 on_assign: AssignCallback) -> None:
        super().__init__(net, config, on_revoke=on_revoke, on_assign=on_assign)
        assert config.group_id is not None and config.rebalance_timeout_ms is not None
        self.machine = ConsumerMembership(
            group_id=config.group_id, rebalance_timeout_ms=config.rebalance_timeout_ms,
            max_poll_interval_ms=config.max_poll_interval_ms, retry_backoff_ms=config.retry_backoff_ms,
            retry_backoff_max_ms=max(config.retry_backoff_ms, config.reconnect_backoff_max_ms),
            group_instance_id=config.group_instance_id, server_assignor=config.group_remote_assignor)

    def _finished(self) -> bool:
        return self.machine.state is MemberState.FATAL

    def _resolve(self, topic_id: uuid.UUID) -> str | None:
        return self.net.metadata.topic_name(topic_id)

    def subscribe(self, topics: set[str], pattern: str | None = None) -> None:
        self.feed(self.machine.subscribe(topics, pattern, self.now))

    def on_metadata(self) -> None:
        self.feed(self.machine.on_metadata(self._resolve, self.now))

    async def _run_protocol(self, action: Action) -> None:
        if isinstance(action, Reconcile):
            await self._reconcile(action)
        elif isinstance(action, RefreshMetadata):
            self.net.request_metadata_update()
        elif isinstance(action, SendConsumerHeartbeat) and action.member_epoch < 0:
            await self._request(action)  # leaving: sent before anything else happens
        else:
            self.net.spawn(self._request(action))

    async def _reconcile(self, action: Reconcile) -> None:
        """Kafka's order: revoke (the consumer commits them first), then assign, then acknowledge."""
        assigned = False
        try:
            if action.revoked:
                await self._on_revoke(action.revoked, False)
            if self.machine.reconciling == action.token:
                await self._on_assign(action.added, action.assignment)
                assigned = True
        finally:
            self.feed(self.machine.on_reconciled(action.token, assigned, self._resolve, self.now))
            self.changed.set()

    def _heartbeat(self, action: SendConsumerHeartbeat) -> tuple[ApiKey, Mapping[str, Any]]:
        """The heartbeat request carrying ``action``: its API and body."""
        m = self.machine
        leaving = action.member_epoch < 0
        body: ConsumerGroupHeartbeatRequestData = {
            "group_id": self.group_id, "member_id": m.member_id, "member_epoch": action.member_epoch,
            "instance_id": self.config.group_instance_id, "rack_id": None,
            "rebalance_timeout_ms": -1 if leaving else self.config.rebalance_timeout_ms,
            "subscribed_topic_names": action.subscribed_topic_names,
            "subscribed_topic_regex": action.subscribed_topic_regex,
            "server_assignor": None if leaving else m.server_assignor,
            "topic_partitions": None if action.topic_partitions is None else [
                {"topic_id": tid, "partitions": parts} for tid, parts in action.topic_partitions]}
        return ApiKey.CONSUMER_GROUP_HEARTBEAT, body

    async def _send(self, action: Action) -> list[Action]:
        m = self.machine
        if isinstance(action, FindCoordinator):
            return await self._find_coordinator()
        assert isinstance(action, SendConsumerHeartbeat)
        node = m.coordinator
        if node is None:
            return m.on_request_failed(action, self.now)
        leaving = action.member_epoch < 0
        api_key, body = self._heartbeat(action)
        resp = await self.net.send(node, api_key, body, timeout_ms=5000 if leaving else None)
        assignment = None
        if resp.assignment is not None:
            assignment = {tp.topic_id: tp.partitions for tp in resp.assignment.topic_partitions}
        return m.on_heartbeat_response(resp.error_code, self.now, self._resolve, member_epoch=resp.member_epoch,
                                       heartbeat_interval_ms=resp.heartbeat_interval_ms, assignment=assignment,
                                       message=resp.error_message, leaving=leaving)

    def commit_identity(self) -> tuple[int, str]:
        if self.machine.member_epoch > 0:
            return self.machine.member_epoch, self.machine.member_id
        return -1, ""


class ShareGroupCoordinator(ConsumerGroupCoordinator):
    """The share-group protocol's edge (KIP-932): the KIP-848 member machine (a share group's
    heartbeat answers the same way, with the partitions to read — shared with other members — as the
    target), heartbeating with ShareGroupHeartbeat: topic names only, no static membership, and
    nothing to revoke before another member may read a partition."""

    def _heartbeat(self, action: SendConsumerHeartbeat) -> tuple[ApiKey, Mapping[str, Any]]:
        leaving = action.member_epoch < 0
        body: ShareGroupHeartbeatRequestData = {
            "group_id": self.group_id, "member_id": self.machine.member_id, "member_epoch": action.member_epoch,
            "rack_id": self.config.client_rack,
            "subscribed_topic_names": None if leaving else action.subscribed_topic_names}
        return ApiKey.SHARE_GROUP_HEARTBEAT, body


def is_group_error(code: int) -> bool:
    return code in (ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.REBALANCE_IN_PROGRESS,
                    ErrorCode.ILLEGAL_GENERATION, ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.FENCED_INSTANCE_ID)
