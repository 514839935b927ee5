"""Raw-protocol consumer-group members over asyncio sockets (our ``protocol`` package, no client library).

Each :class:`RawMember` owns one connection and runs the classic protocol: JoinGroup v9 with the
KIP-394 two-step (MEMBER_ID_REQUIRED), the leader computes a range assignment over the consumer
protocol and sends it in SyncGroup, followers SyncGroup, then Heartbeat every ``heartbeat_ms``;
REBALANCE_IN_PROGRESS → rejoin, UNKNOWN_MEMBER_ID → rejoin with an empty id (counted).
"""

from __future__ import annotations

import asyncio
import itertools
import struct
from typing import Any

from protocol.api import ApiKey, decode_response, encode_request
from protocol.error_codes import ErrorCode

E = ErrorCode
JOIN_V, SYNC_V, HB_V, LEAVE_V, DESCRIBE_V = 9, 5, 4, 5, 5


def subscription(topics: list[str]) -> bytes:
    """ConsumerProtocolSubscription v0."""
    out = struct.pack(">hi", 0, len(topics))
    for t in topics:
        raw = t.encode()
        out += struct.pack(">h", len(raw)) + raw
    return out + struct.pack(">i", -1)


def assignment_bytes(parts: dict[str, list[int]]) -> bytes:
    """ConsumerProtocolAssignment v0."""
    out = struct.pack(">hi", 0, len(parts))
    for t, ps in parts.items():
        raw = t.encode()
        out += struct.pack(">h", len(raw)) + raw + struct.pack(">i", len(ps))
        out += b"".join(struct.pack(">i", p) for p in ps)
    return out + struct.pack(">i", -1)


def parse_assignment(data: bytes) -> set[tuple[str, int]]:
    if not data:
        return set()
    pos = 2
    (n,) = struct.unpack_from(">i", data, pos)
    pos += 4
    out = set()
    for _ in range(n):
        (tl,) = struct.unpack_from(">h", data, pos)
        pos += 2
        topic = data[pos:pos + tl].decode()
        pos += tl
        (k,) = struct.unpack_from(">i", data, pos)
        pos += 4
        for _ in range(k):
            (p,) = struct.unpack_from(">i", data, pos)
            pos += 4
            out.add((topic, p))
    return out


def range_assign(member_ids: list[str], topic: str, partitions: int) -> dict[str, bytes]:
    members = sorted(member_ids)
    per, extra = divmod(partitions, len(members))
    out, start = {}, 0
    for i, m in enumerate(members):
        n = per + (1 if i < extra else 0)
        out[m] = assignment_bytes({topic: list(range(start, start + n))})
        start += n
    return out


class Connection:
    """One broker connection with pipelined requests matched by correlation id."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, client_id: str) -> None:
        self.reader, self.writer, self.client_id = reader, writer, client_id
        self._corr = itertools.count(1)
        self._waiting: dict[int, tuple[int, int, asyncio.Future[Any]]] = {}
        self._task = asyncio.ensure_future(self._read_loop())

    @classmethod
    async def open(cls, host: str, port: int, client_id: str) -> Connection:
        reader, writer = await asyncio.open_connection(host, port)
        return cls(reader, writer, client_id)

    async def _read_loop(self) -> None:
        try:
            while True:
                size = struct.unpack(">i", await self.reader.readexactly(4))[0]
                frame = await self.reader.readexactly(size)
                (corr,) = struct.unpack_from(">i", frame, 0)
                key, version, fut = self._waiting.pop(corr)
                if not fut.done():
                    fut.set_result(decode_response(key, version, frame)[1])
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError) as exc:
            for _, _, fut in self._waiting.values():
                if not fut.done():
                    fut.set_exception(ConnectionError(f"connection closed: {exc!r}"))
            self._waiting.clear()

    def send(self, key: int, version: int, body: dict[str, Any]) -> asyncio.Future[Any]:
        corr = next(self._corr)
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._waiting[corr] = (key, version, fut)
        self.writer.write(encode_request(key, version, corr, self.client_id, body))
        return fut

    async def request(self, key: int, version: int, body: dict[str, Any]) -> Any:
        return await self.send(key, version, body)

    async def close(self) -> None:
        self._task.cancel()
        self.writer.close()
        try:
            await self.writer.wait_closed()
        except (ConnectionError, OSError):
            pass


class RawMember:
    def __init__(self, host: str, port: int, group: str, topic: str, partitions: int, *, name: str,
                 session_ms: int = 10_000, rebalance_ms: int = 30_000, heartbeat_ms: int = 1000,
                 stall_sync_as_leader: bool = False) -> None:
        self.host, self.port, self.group, self.topic, self.partitions = host, port, group, topic, partitions
        self.name = name
        self.session_ms, self.rebalance_ms, self.heartbeat_ms = session_ms, rebalance_ms, heartbeat_ms
        # a leader that never sends its SyncGroup once its generation has other members
        self.stall_sync_as_leader = stall_sync_as_leader
        self.stalled_generation = -1
        self.member_id = ""
        self.generation = -1
        self.leader = ""
        self.assigned: set[tuple[str, int]] = set()
        self.stable_generation = -1          # generation of the last successful SyncGroup
        self.unknown_member = 0
        self.empty_syncs = 0                 # SyncGroup successes with no partitions
        self.joins = 0
        self.conn: Connection | None = None
        self._stop = asyncio.Event()
        self._rejoin = asyncio.Event()
        self.task: asyncio.Task[None] | None = None

    def start(self) -> RawMember:
        self.task = asyncio.ensure_future(self._run())
        return self

    async def _run(self) -> None:
        self.conn = await Connection.open(self.host, self.port, self.name)
        while not self._stop.is_set():
            await self._join_and_sync()
            if self._stop.is_set():
                break
            await self._heartbeat_until_rejoin()

    async def _join_and_sync(self) -> None:
        assert self.conn is not None
        while not self._stop.is_set():
            self.joins += 1
            resp = await self.conn.request(ApiKey.JOIN_GROUP, JOIN_V, {
                "group_id": self.group, "session_timeout_ms": self.session_ms,
                "rebalance_timeout_ms": self.rebalance_ms, "member_id": self.member_id,
                "group_instance_id": None, "protocol_type": "consumer",
                "protocols": [{"name": "range", "metadata": subscription([self.topic])}], "reason": None})
            err = resp.error_code
            if err == E.MEMBER_ID_REQUIRED:
                self.member_id = resp.member_id
                continue
            if err == E.UNKNOWN_MEMBER_ID:
                self.unknown_member += 1
                self.member_id = ""
                continue
            if err == E.REBALANCE_IN_PROGRESS:
                continue
            if err != E.NONE:
                raise RuntimeError(f"{self.name}: JoinGroup error {E(err).name}")
            self.generation, self.leader = resp.generation_id, resp.leader
            assignments = []
            if resp.leader == self.member_id and self.stall_sync_as_leader and len(resp.members) > 1:
                self.stalled_generation = self.generation
                await self._stop.wait()
                return
            if resp.leader == self.member_id and not resp.skip_assignment:
                plan = range_assign([m.member_id for m in resp.members], self.topic, self.partitions)
                assignments = [{"member_id": m, "assignment": a} for m, a in plan.items()]
            sync = await self.conn.request(ApiKey.SYNC_GROUP, SYNC_V, {
                "group_id": self.group, "generation_id": self.generation, "member_id": self.member_id,
                "group_instance_id": None, "protocol_type": "consumer", "protocol_name": "range",
                "assignments": assignments})
            if sync.error_code == E.NONE:
                self.assigned = parse_assignment(bytes(sync.assignment))
                if not self.assigned:
                    self.empty_syncs += 1
                self.stable_generation = self.generation
                return
            if sync.error_code == E.UNKNOWN_MEMBER_ID:
                self.unknown_member += 1
                self.member_id = ""
            elif sync.error_code not in (E.REBALANCE_IN_PROGRESS, E.ILLEGAL_GENERATION):
                raise RuntimeError(f"{self.name}: SyncGroup error {E(sync.error_code).name}")

    async def _heartbeat_until_rejoin(self) -> None:
        assert self.conn is not None
        while not self._stop.is_set():
            try:
                await asyncio.wait_for(self._stop.wait(), self.heartbeat_ms / 1000)
                return
            except TimeoutError:
                pass
            resp = await self.conn.request(ApiKey.HEARTBEAT, HB_V, {
                "group_id": self.group, "generation_id": self.generation, "member_id": self.member_id,
                "group_instance_id": None})
            if resp.error_code == E.NONE:
                continue
            if resp.error_code == E.UNKNOWN_MEMBER_ID:
                self.unknown_member += 1
                self.member_id = ""
            elif resp.error_code not in (E.REBALANCE_IN_PROGRESS, E.ILLEGAL_GENERATION):
                raise RuntimeError(f"{self.name}: Heartbeat error {E(resp.error_code).name}")
            self.stable_generation = -1
            return

    async def leave(self) -> None:
        """LeaveGroup and close (the member task ends)."""
        self._stop.set()
        if self.task is not None:
            try:
                await asyncio.wait_for(self.task, 30)
            except TimeoutError:
                self.task.cancel()
        assert self.conn is not None
        if self.member_id:
            await self.conn.request(ApiKey.LEAVE_GROUP, LEAVE_V, {
                "group_id": self.group,
                "members": [{"member_id": self.member_id, "group_instance_id": None, "reason": None}]})
        await self.conn.close()


async def describe(host: str, port: int, group: str) -> Any:
    conn = await Connection.open(host, port, "describe")
    try:
        resp = await conn.request(ApiKey.DESCRIBE_GROUPS, DESCRIBE_V, {"groups": [group],
                                                                       "include_authorized_operations": False})
        return resp.groups[0]
    finally:
        await conn.close()
