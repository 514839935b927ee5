"""The asyncio edge of group membership: runs :class:`~client.membership.Membership` actions.

Owns the requests of the classic group protocol (FindCoordinator, JoinGroup, SyncGroup,
Heartbeat, LeaveGroup — JoinGroup/SyncGroup on the separate ``group`` connection so a long
join never delays a heartbeat), the wheel timer that drives ``Membership.tick``, and the
rebalance callbacks into the consumer.  Actions run one at a time in order on a pump task;
requests are awaited on their own tasks and their responses go back into the machine.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any

from client.config import ConsumerConfig
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
from protocol.messages.find_coordinator import FindCoordinatorRequestData
from protocol.messages.heartbeat import HeartbeatRequestData
from protocol.messages.join_group import JoinGroupRequestData
from protocol.messages.leave_group import LeaveGroupRequestData
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


class GroupCoordinator:
    def __init__(self, net: NetworkClient, config: ConsumerConfig, *, on_revoke: RevokeCallback,
                 on_assign: AssignCallback) -> None:
        assert config.group_id is not None
        self.net = net
        self.config = config
        self.group_id = config.group_id
        self.protocol = ConsumerGroupProtocol(config.partition_assignment_strategy)
        self.machine = Membership(
            group_id=config.group_id, protocol=self.protocol, session_timeout_ms=config.session_timeout_ms,
            heartbeat_interval_ms=config.heartbeat_interval_ms, max_poll_interval_ms=config.max_poll_interval_ms,
            retry_backoff_ms=config.retry_backoff_ms, group_instance_id=config.group_instance_id)
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

    def _rearm(self) -> None:
        deadline = self.machine.next_deadline()
        if deadline == self._timer_at:
            return
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._timer_at = deadline
        if deadline is not None and self.machine.state not in (State.CLOSED, State.FAILED):
            self._timer = self.net.timers.call_at_ms(max(deadline, self.now), self._on_timer)

    def _on_timer(self) -> None:
        self._timer = None
        self._timer_at = None
        self.feed(self.machine.tick(self.now))

    # -- application ---------------------------------------------------------------------------

    def subscribe(self, topics: set[str]) -> None:
        self.feed(self.machine.subscribe(topics, self.now))

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
        elif isinstance(action, RunAssignment):
            await self._assign(action)
        elif isinstance(action, Fatal):
            self.fatal = KafkaError(action.code, action.message)
            self.changed.set()
        elif isinstance(action, SendLeaveGroup):
            await self._leave(action)
        else:
            self.net.spawn(self._request(action))

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
        m = self.machine
        now = self.now
        if isinstance(action, FindCoordinator):
            try:
                node = await find_coordinator(self.net, self.group_id)
            except KafkaError as exc:
                if isinstance(exc, KafkaConnectionError | KafkaTimeoutError):
                    raise
                return m.on_coordinator_error(int(exc.code), self.now)
            return m.on_coordinator(node, self.now)
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

    # -- offsets -------------------------------------------------------------------------------

    async def coordinator_node(self) -> int:
        node = self.machine.coordinator
        if node is None:
            node = await find_coordinator(self.net, self.group_id)
            if self.machine.state is State.FINDING_COORDINATOR:
                self.feed(self.machine.on_coordinator(node, self.now))
        return node

    def commit_identity(self) -> tuple[int, str]:
        if self.machine.generation >= 0 and self.machine.member_id:
            return self.machine.generation, self.machine.member_id
        return -1, ""

    def on_commit_error(self, code: int) -> None:
        self.feed(self.machine.on_commit_error(code, self.now))


def is_group_error(code: int) -> bool:
    return code in (ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.REBALANCE_IN_PROGRESS,
                    ErrorCode.ILLEGAL_GENERATION, ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.FENCED_INSTANCE_ID)
