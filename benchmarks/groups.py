"""Group-coordinator load generator over the wire (raw protocol, asyncio sockets, many members per process).

Against a ``python -m broker`` subprocess (``group.initial.rebalance.delay.ms=0``), measures

* time to Stable for N members joining at once: JoinGroup v9 with the KIP-394 MEMBER_ID_REQUIRED
  two-step, the leader's SyncGroup with a range assignment, followers' SyncGroup; members that
  are Stable learn about a new rebalance from their next Heartbeat (``--heartbeat-ms``), so this
  figure includes those discovery rounds;
* join and leave latency of one member in a Stable group of 100 (JoinGroup sent → its SyncGroup
  answered; LeaveGroup sent → the 100 others re-synced in the next generation);
* sustained Heartbeats/s the broker answers on its one core (pipelined, pre-encoded valid
  heartbeats of a Stable group's members over several connections);
* one-member groups formed per second as the broker accumulates ``--many-groups`` groups;
* memory: broker RSS delta per member for the 1,000-member group, and tracemalloc bytes per
  group / per member on an in-process :class:`broker.coordinator.group.GroupCoordinator`.

Run: ``.venv/bin/python benchmarks/groups.py`` (``--sizes 10,100,1000``, ``--heartbeat-ms 500``).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import itertools
import os
import signal
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

from protocol.api import ApiKey, decode_response, encode_request
from protocol.error_codes import ErrorCode

E = ErrorCode
ROOT = Path(__file__).resolve().parents[1]
JOIN_V, SYNC_V, HB_V, LEAVE_V, DESCRIBE_V = 9, 5, 4, 5, 5
TOPIC, PARTITIONS = "bench-topic", 1200


# ------------------------------------------------------------------------------- consumer protocol


def _subscription(topic: str) -> bytes:
    raw = topic.encode()
    return struct.pack(">hih", 0, 1, len(raw)) + raw + struct.pack(">i", -1)


def _assignment(topic: str, parts: list[int]) -> bytes:
    raw = topic.encode()
    return (struct.pack(">hih", 0, 1, len(raw)) + raw + struct.pack(">i", len(parts))
            + b"".join(struct.pack(">i", p) for p in parts) + struct.pack(">i", -1))


def _range(member_ids: list[str]) -> dict[str, bytes]:
    members = sorted(member_ids)
    per, extra = divmod(PARTITIONS, len(members))
    out, start = {}, 0
    for i, m in enumerate(members):
        n = per + (1 if i < extra else 0)
        out[m] = _assignment(TOPIC, list(range(start, start + n)))
        start += n
    return out


SUBSCRIPTION = _subscription(TOPIC)


# ------------------------------------------------------------------------------- connection / member


class Conn:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, client_id: str) -> None:
        self.reader, self.writer, self.client_id = reader, writer, client_id
        self.corr = itertools.count(1)
        self.waiting: dict[int, tuple[int, int, asyncio.Future[Any]]] = {}
        self.task = asyncio.ensure_future(self._read())

    @classmethod
    async def open(cls, port: int, client_id: str) -> Conn:
        reader, writer = await asyncio.open_connection("127.0.0.1", port, limit=1 << 20)
        return cls(reader, writer, client_id)

    async def _read(self) -> None:
        try:
            while True:
                (size,) = struct.unpack(">i", await self.reader.readexactly(4))
                frame = await self.reader.readexactly(size)
                key, version, fut = self.waiting.pop(struct.unpack_from(">i", frame)[0])
                if not fut.done():
                    fut.set_result(decode_response(key, version, frame)[1])
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
            for _, _, fut in self.waiting.values():
                if not fut.done():
                    fut.set_exception(ConnectionError("closed"))

    def request(self, key: int, version: int, body: dict[str, Any]) -> asyncio.Future[Any]:
        corr = next(self.corr)
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.waiting[corr] = (key, version, fut)
        self.writer.write(encode_request(key, version, corr, self.client_id, body))
        return fut

    def close(self) -> None:
        self.task.cancel()
        self.writer.close()


class Member:
    """One raw group member: join (two-step) → sync → heartbeat; rejoins on REBALANCE_IN_PROGRESS."""

    def __init__(self, port: int, group: str, name: str, heartbeat_ms: int) -> None:
        self.port, self.group, self.name, self.heartbeat_ms = port, group, name, heartbeat_ms
        self.member_id = ""
        self.generation = -1
        self.synced_generation = -1
        self.assignment = b""
        self.conn: Conn | None = None
        self.stop = asyncio.Event()
        self.task: asyncio.Task[None] | None = None
        self.join_sent = 0.0
        self.synced_at = 0.0

    async def connect(self) -> None:
        self.conn = await Conn.open(self.port, self.name)

    def start(self) -> None:
        self.task = asyncio.ensure_future(self._run())

    async def _run(self) -> None:
        while not self.stop.is_set():
            await self._join()
            while not self.stop.is_set():
                try:
                    await asyncio.wait_for(self.stop.wait(), self.heartbeat_ms / 1000)
                    return
                except TimeoutError:
                    pass
                assert self.conn is not None
                hb = await self.conn.request(ApiKey.HEARTBEAT, HB_V, {
                    "group_id": self.group, "generation_id": self.generation, "member_id": self.member_id,
                    "group_instance_id": None})
                if hb.error_code != E.NONE:
                    if hb.error_code == E.UNKNOWN_MEMBER_ID:
                        self.member_id = ""
                    self.synced_generation = -1
                    break

    async def _join(self) -> None:
        assert self.conn is not None
        self.join_sent = time.perf_counter()
        while not self.stop.is_set():
            resp = await self.conn.request(ApiKey.JOIN_GROUP, JOIN_V, {
                "group_id": self.group, "session_timeout_ms": 60_000, "rebalance_timeout_ms": 120_000,
                "member_id": self.member_id, "group_instance_id": None, "protocol_type": "consumer",
                "protocols": [{"name": "range", "metadata": SUBSCRIPTION}], "reason": None})
            if resp.error_code == E.MEMBER_ID_REQUIRED:
                self.member_id = resp.member_id
                continue
            if resp.error_code == E.UNKNOWN_MEMBER_ID:
                self.member_id = ""
                continue
            if resp.error_code == E.REBALANCE_IN_PROGRESS:
                continue
            if resp.error_code != E.NONE:
                raise RuntimeError(f"JoinGroup: {E(resp.error_code).name}")
            self.generation = resp.generation_id
            assignments = []
            if resp.leader == self.member_id and not resp.skip_assignment:
                assignments = [{"member_id": m, "assignment": a}
                               for m, a in _range([x.member_id for x in resp.members]).items()]
            sync = await self.conn.request(ApiKey.SYNC_GROUP, SYNC_V, {
                "group_id": self.group, "generation_id": self.generation, "member_id": self.member_id,
                "group_instance_id": None, "protocol_type": "consumer", "protocol_name": "range",
                "assignments": assignments})
            if sync.error_code == E.NONE:
                self.assignment = bytes(sync.assignment)
                self.synced_generation = self.generation
                self.synced_at = time.perf_counter()
                return
            if sync.error_code == E.UNKNOWN_MEMBER_ID:
                self.member_id = ""

    async def leave(self) -> float:
        """Stop the loop, send LeaveGroup; returns its round trip in seconds."""
        self.stop.set()
        if self.task is not None:
            await self.task
        assert self.conn is not None
        start = time.perf_counter()
        await self.conn.request(ApiKey.LEAVE_GROUP, LEAVE_V, {
            "group_id": self.group, "members": [{"member_id": self.member_id, "group_instance_id": None,
                                                 "reason": None}]})
        rtt = time.perf_counter() - start
        self.conn.close()
        return rtt


def all_synced(members: list[Member]) -> int | None:
    gens = {m.synced_generation for m in members}
    if len(gens) == 1:
        gen = gens.pop()
        return gen if gen >= 0 else None
    return None


async def wait_synced(members: list[Member], timeout: float = 600.0, newer_than: int = -1) -> int:
    deadline = time.perf_counter() + timeout
    while True:
        for m in members:
            if m.task is not None and m.task.done() and m.task.exception() is not None:
                raise m.task.exception()  # type: ignore[misc]
        gen = all_synced(members)
        if gen is not None and gen > newer_than:
            return gen
        if time.perf_counter() > deadline:
            raise TimeoutError("group did not settle")
        await asyncio.sleep(0.002)


async def describe_state(port: int, group: str) -> tuple[str, int]:
    conn = await Conn.open(port, "bench-describe")
    try:
        resp = await conn.request(ApiKey.DESCRIBE_GROUPS, DESCRIBE_V, {"groups": [group],
                                                                        "include_authorized_operations": False})
        g = resp.groups[0]
        return g.group_state, len(g.members)
    finally:
        conn.close()


# ------------------------------------------------------------------------------- broker process


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


class BrokerProc:
    def __init__(self) -> None:
        self.tmp = tempfile.mkdtemp(prefix="kbroker-bench-groups-")
        self.port = free_port()
        cmd = [sys.executable, "-m", "broker", "--host", "127.0.0.1", "--port", str(self.port),
               "--data-dir", os.path.join(self.tmp, "data"), "--metrics-port", "0", "--log-level", "WARNING",
               "--set", "group.initial.rebalance.delay.ms=0"]
        self.proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), 0.5).close()
                break
            except OSError:
                if time.time() > deadline or self.proc.poll() is not None:
                    raise RuntimeError("broker did not start") from None
                time.sleep(0.05)

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(30)
        import shutil

        shutil.rmtree(self.tmp, ignore_errors=True)


# ------------------------------------------------------------------------------- scenarios


async def time_to_stable(broker: BrokerProc, n: int, heartbeat_ms: int) -> tuple[float, int, float, list[Member]]:
    group = f"bench-stable-{n}"
    members = [Member(broker.port, group, f"m{i}", heartbeat_ms) for i in range(n)]
    await asyncio.gather(*(m.connect() for m in members))
    rss_before = rss_kb(broker.proc.pid)
    start = time.perf_counter()
    for m in members:
        m.start()
    gen = await wait_synced(members)
    elapsed = time.perf_counter() - start
    state, count = await describe_state(broker.port, group)
    assert state == "Stable" and count == n, (state, count)
    await asyncio.sleep(0.2)
    rss_delta = (rss_kb(broker.proc.pid) - rss_before) * 1024 / n
    return elapsed, gen, rss_delta, members


async def join_leave_latency(broker: BrokerProc, members: list[Member], heartbeat_ms: int,
                             rounds: int) -> tuple[list[float], list[float], list[float], list[float]]:
    group = members[0].group
    joins, join_stable, leaves, leave_stable = [], [], [], []
    for r in range(rounds):
        gen = all_synced(members) or 0
        newcomer = Member(broker.port, group, f"newcomer-{r}", heartbeat_ms)
        await newcomer.connect()
        newcomer.start()
        everyone = [*members, newcomer]
        gen = await wait_synced(everyone, newer_than=gen)
        joins.append(newcomer.synced_at - newcomer.join_sent)
        join_stable.append(max(m.synced_at for m in everyone) - newcomer.join_sent)
        start = time.perf_counter()
        leaves.append(await newcomer.leave())
        await wait_synced(members, newer_than=gen)
        leave_stable.append(max(m.synced_at for m in members) - start)
    return joins, join_stable, leaves, leave_stable


async def heartbeat_rate(broker: BrokerProc, members: list[Member], seconds: float, connections: int,
                         window: int) -> tuple[float, int]:
    """Pipelined valid heartbeats of the Stable group's members; returns (answered/s, non-NONE answers)."""
    group = members[0].group
    frames = [encode_request(ApiKey.HEARTBEAT, HB_V, i, "hb", {
        "group_id": group, "generation_id": m.generation, "member_id": m.member_id, "group_instance_id": None})
        for i, m in enumerate(members)]
    payload = b"".join(frames[i % len(frames)] for i in range(window))
    answered = 0
    errors = 0
    stop_at = time.perf_counter() + seconds

    async def blast() -> None:
        nonlocal answered, errors
        reader, writer = await asyncio.open_connection("127.0.0.1", broker.port, limit=1 << 22)
        try:
            while time.perf_counter() < stop_at:
                writer.write(payload)
                for _ in range(window):
                    (size,) = struct.unpack(">i", await reader.readexactly(4))
                    frame = await reader.readexactly(size)
                    # flexible v4 response: corr id, tagged fields (1 byte), throttle, error code
                    if frame[9:11] != b"\x00\x00":
                        errors += 1
                answered += window
        finally:
            writer.close()

    start = time.perf_counter()
    await asyncio.gather(*(blast() for _ in range(connections)))
    return answered / (time.perf_counter() - start), errors


async def many_groups(broker: BrokerProc, total: int, batch: int = 500) -> list[float]:
    """One-member groups formed per second (join two-step + sync), batch by batch, as the group count grows."""
    rates = []
    for start in range(0, total, batch):
        members = [Member(broker.port, f"bench-many-{i}", f"g{i}", 60_000) for i in range(start, start + batch)]
        await asyncio.gather(*(m.connect() for m in members))
        t = time.perf_counter()
        for m in members:
            m.start()
        await asyncio.gather(*(wait_synced([m]) for m in members))
        rates.append(batch / (time.perf_counter() - t))
    return rates


def coordinator_memory(groups: int, members_in_one: int) -> tuple[float, float]:
    """tracemalloc bytes per (one-member, Stable) group and per member of one big Stable group."""
    from broker.coordinator.group import GroupConfig, GroupCoordinator

    ids = itertools.count()

    def coordinator() -> GroupCoordinator:
        return GroupCoordinator(GroupConfig(initial_rebalance_delay_ms=0), now_ms=0,
                                member_id_factory=lambda prefix: f"{prefix}-{next(ids):012d}-0000-0000-000000000000")

    def join(c: GroupCoordinator, group: str, token: int) -> None:
        req = {"group_id": group, "session_timeout_ms": 10_000, "rebalance_timeout_ms": 60_000, "member_id": "",
               "group_instance_id": None, "protocol_type": "consumer",
               "protocols": [{"name": "range", "metadata": SUBSCRIPTION}]}
        (_, r), = c.join_group(0, 9, req, -token, client_id="bench", client_host="/127.0.0.1").replies
        c.join_group(0, 9, {**req, "member_id": r["member_id"]}, token, client_id="bench", client_host="/127.0.0.1")

    def settle(c: GroupCoordinator, group: str) -> None:
        g = c.groups[group]
        leader = g.leader_id
        sync = {"group_id": group, "generation_id": g.generation_id, "group_instance_id": None}
        for m in list(g.members):
            if m != leader:
                c.sync_group(0, 5, {**sync, "member_id": m, "assignments": []}, ("s", m))
        c.sync_group(0, 5, {**sync, "member_id": leader, "assignments": [
            {"member_id": m, "assignment": _assignment(TOPIC, [i])} for i, m in enumerate(g.members)]}, ("s", leader))
        assert g.state.value == "Stable"

    coordinator()  # warm up imports
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    c = coordinator()
    for i in range(groups):
        join(c, f"group-{i:06d}", i + 1)
        settle(c, f"group-{i:06d}")
    gc.collect()
    per_group = (tracemalloc.get_traced_memory()[0] - base) / groups
    tracemalloc.stop()
    del c

    gc.collect()
    c = coordinator()
    join(c, "big", 1)  # first member forms generation 1 alone
    settle(c, "big")
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    for i in range(1, members_in_one):
        join(c, "big", i + 1)
    leader = c.groups["big"].leader_id
    c.join_group(0, 9, {"group_id": "big", "session_timeout_ms": 10_000, "rebalance_timeout_ms": 60_000,
                        "member_id": leader, "group_instance_id": None, "protocol_type": "consumer",
                        "protocols": [{"name": "range", "metadata": SUBSCRIPTION}]}, 0,
                 client_id="bench", client_host="/127.0.0.1")
    settle(c, "big")
    gc.collect()
    per_member = (tracemalloc.get_traced_memory()[0] - base) / (members_in_one - 1)
    tracemalloc.stop()
    return per_group, per_member


async def run(args: argparse.Namespace) -> None:
    sizes = [int(s) for s in args.sizes.split(",")]
    broker = BrokerProc()
    try:
        print(f"broker pid {broker.proc.pid} on 127.0.0.1:{broker.port}; heartbeat interval {args.heartbeat_ms} ms;"
              f" Python {sys.version.split()[0]}, {os.cpu_count()} cores")
        warm = [Member(broker.port, "bench-warmup", f"w{i}", args.heartbeat_ms) for i in range(3)]
        await asyncio.gather(*(m.connect() for m in warm))
        for m in warm:
            m.start()
        await wait_synced(warm)
        await asyncio.gather(*(m.leave() for m in warm))

        print("\ntime to Stable, N members joining at once (JoinGroup v9 two-step, leader + follower SyncGroup)")
        print(f"{'members':>8} {'time':>10} {'generation':>11} {'broker RSS/member':>18}")
        hundred: list[Member] | None = None
        hb_report = ""
        for n in sizes:
            elapsed, gen, rss_per_member, members = await time_to_stable(broker, n, args.heartbeat_ms)
            print(f"{n:8d} {elapsed * 1000:8.0f} ms {gen:11d} {rss_per_member:15,.0f} B")
            if n == max(sizes):
                rate, errors = await heartbeat_rate(broker, members, args.hb_seconds, args.hb_connections,
                                                    args.hb_window)
                state, count = await describe_state(broker.port, members[0].group)
                hb_report = (f"\nsustained heartbeats ({n}-member Stable group, {args.hb_connections} connections,"
                             f" {args.hb_window} in flight each, {args.hb_seconds:.0f} s): {rate:,.0f}/s,"
                             f" non-NONE answers: {errors}; group afterwards: {state}, {count} members")
            if n == 100:
                hundred = members
            else:
                await asyncio.gather(*(m.leave() for m in members), return_exceptions=True)
        print(hb_report)

        if hundred is not None:
            joins, join_stable, leaves, leave_stable = await join_leave_latency(
                broker, hundred, args.heartbeat_ms, args.rounds)
            med = statistics.median
            print(f"\none member joining / leaving a Stable group of 100 (median of {args.rounds})")
            print(f"  join: JoinGroup sent -> its SyncGroup answered   {med(joins) * 1000:7.0f} ms")
            print(f"        ... -> all 101 members synced             {med(join_stable) * 1000:7.0f} ms")
            print(f"  leave: LeaveGroup round trip                     {med(leaves) * 1000:7.1f} ms")
            print(f"         ... -> the 100 others re-synced          {med(leave_stable) * 1000:7.0f} ms")
            await asyncio.gather(*(m.leave() for m in hundred), return_exceptions=True)

        if args.many_groups:
            rates = await many_groups(broker, args.many_groups)
            print(f"\none-member groups formed/s while the broker holds more and more groups (batches of 500):"
                  f" first batch {rates[0]:,.0f}/s, last batch (up to {args.many_groups:,} groups)"
                  f" {rates[-1]:,.0f}/s; all: {', '.join(f'{r:,.0f}' for r in rates)}")
    finally:
        broker.stop()

    per_group, per_member = coordinator_memory(args.mem_groups, args.mem_members)
    print(f"\nin-process coordinator heap (tracemalloc): {per_group:,.0f} B per Stable one-member group "
          f"({args.mem_groups:,} groups), {per_member:,.0f} B per member ({args.mem_members:,}-member group)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="10,100,1000")
    ap.add_argument("--heartbeat-ms", type=int, default=500)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--hb-seconds", type=float, default=5.0)
    ap.add_argument("--hb-connections", type=int, default=8)
    ap.add_argument("--hb-window", type=int, default=200)
    ap.add_argument("--mem-groups", type=int, default=10_000)
    ap.add_argument("--mem-members", type=int, default=10_000)
    ap.add_argument("--many-groups", type=int, default=5000, help="0 skips the many-groups scenario")
    args = ap.parse_args()
    asyncio.run(run(args))


if __name__ == "__main__":
    main()
