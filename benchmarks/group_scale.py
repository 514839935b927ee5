"""One big group against a real broker: the time from the last member's join to every member holding its assignment.

Against a ``python -m broker`` subprocess, with one TCP connection per member (all members in this
process, raw protocol frames over asyncio, responses parsed by hand where that keeps the load generator
cheap), for each size in ``--sizes``:

* **classic**: every member sends JoinGroup v5 without a member id and gets MEMBER_ID_REQUIRED (KIP-394:
  the group now waits for all of them), then every member sends JoinGroup v5 again with its id — the
  clock starts when the last of those is handed to its socket ("the last member's join").  Each member
  answers its JoinGroup response with SyncGroup v3 at once (the leader with a range assignment of
  ``--partitions`` partitions over every member, computed here); the clock stops when the last
  SyncGroup is answered, i.e. the group is Stable and every member has its assignment;
* **consumer** (KIP-848): a topic of ``--partitions`` partitions; every member sends its first
  ConsumerGroupHeartbeat v1 (epoch 0) — the clock starts when the last of those is handed to its
  socket; members heartbeat every ``heartbeat_interval_ms`` the broker gives them, and at once after
  their assignment changes (the acknowledgement a Java consumer sends after reconciling); the clock
  stops when the group is Stable as the members see it: every member at the same epoch, every
  partition owned by exactly one member, and the members' counts within one.

The broker runs with ``group.initial.rebalance.delay.ms=0``, ``offsets.topic.compression.codec`` of
``--offsets-compression``, the consumer groups' heartbeat interval of ``--heartbeat-ms`` and assignment
interval of ``--assignment-interval-ms``, and any ``--broker-set KEY=VALUE``.  A 3-member group of each
kind runs first, untimed (codecs compile on first use).  Printed: the time after the last join, its growth
against the member count (time growing like the member count is linear), and the broker's CPU seconds over
that window (``/proc/<pid>/stat``), which the shared machine's load inflates less than wall time.

Run: ``.venv/bin/python benchmarks/group_scale.py --sizes 1000,5000,10000``
(``--kinds classic,consumer``, ``--partitions 1000``).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import struct
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

sys.path.insert(0, str(ROOT / "benchmarks"))

from raw_wire import Profiler, cpu_seconds  # noqa: E402

from broker.testing.harness import BrokerProcess  # noqa: E402
from protocol.api import ApiKey, decode_response, encode_request  # noqa: E402
from protocol.error_codes import ErrorCode, error_name  # noqa: E402

E = ErrorCode
TOPIC = "group-scale"
JOIN_V, SYNC_V, CGH_V = 5, 3, 1
_I16, _I32 = struct.Struct(">h"), struct.Struct(">i")
_SYNC_HEAD = struct.Struct(">iih")  # correlation id, throttle, error code (then the assignment bytes)


# ------------------------------------------------------------------------------- wire


class Conn(asyncio.Protocol):
    """One connection: frames out, responses in, each handed to the callback its request registered."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.buf = bytearray()
        self.corr = 0
        self.waiting: dict[int, Callable[[bytes], None]] = {}
        self.lost: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        buf = self.buf
        buf += data
        pos = 0
        while len(buf) - pos >= 4:
            (size,) = _I32.unpack_from(buf, pos)
            if len(buf) - pos - 4 < size:
                break
            frame = bytes(buf[pos + 4:pos + 4 + size])
            pos += 4 + size
            self.waiting.pop(_I32.unpack_from(frame)[0])(frame)
        del buf[:pos]

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.lost.done():
            self.lost.set_result(None)

    def next_corr(self) -> int:
        self.corr += 1
        return self.corr

    def send(self, frame: bytes, corr: int, on_reply: Callable[[bytes], None]) -> None:
        self.waiting[corr] = on_reply
        assert self.transport is not None
        self.transport.write(frame)

    def request(self, key: int, version: int, body: dict[str, Any], client_id: str = "scale") -> asyncio.Future[Any]:
        """A decoded response (for the steps outside the timed window)."""
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        corr = self.next_corr()
        self.send(encode_request(key, version, corr, client_id, body), corr,
                  lambda frame: fut.set_result(decode_response(key, version, frame)[1]))
        return fut

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()


async def open_conns(port: int, n: int, batch: int = 500) -> list[Conn]:
    loop = asyncio.get_running_loop()
    conns: list[Conn] = []
    for start in range(0, n, batch):
        made = await asyncio.gather(*(loop.create_connection(Conn, "127.0.0.1", port)
                                      for _ in range(start, min(n, start + batch))))
        conns.extend(proto for _, proto in made)
    return conns


def _string(s: str) -> bytes:
    raw = s.encode()
    return _I16.pack(len(raw)) + raw


def _read_string(frame: bytes, pos: int) -> tuple[str, int]:
    (n,) = _I16.unpack_from(frame, pos)
    pos += 2
    return (frame[pos:pos + n].decode(), pos + n) if n >= 0 else ("", pos)


# ------------------------------------------------------------------------------- consumer protocol bytes


def subscription(topic: str) -> bytes:
    """ConsumerProtocolSubscription v0 of one topic."""
    return struct.pack(">hi", 0, 1) + _string(topic) + _I32.pack(-1)


def range_assignment(member_ids: list[str], topic: str, partitions: int) -> list[dict[str, Any]]:
    """SyncGroup assignments: contiguous ranges over the members sorted by id (the consumer's ``range``)."""
    members = sorted(member_ids)
    per, extra = divmod(partitions, len(members))
    head = struct.pack(">hi", 0, 1) + _string(topic)
    out, start = [], 0
    for i, m in enumerate(members):
        n = per + (1 if i < extra else 0)
        parts = struct.pack(f">{n}i", *range(start, start + n))
        out.append({"member_id": m, "assignment": head + _I32.pack(n) + parts + _I32.pack(-1)})
        start += n
    return out


# ------------------------------------------------------------------------------- classic


async def classic(port: int, pid: int, n: int, partitions: int, group: str, profiler: Profiler) -> dict[str, float]:
    """JoinGroup v5 two-step for ``n`` members, then SyncGroup; times from the last join (see the module doc)."""
    conns = await open_conns(port, n)
    loop = asyncio.get_running_loop()
    meta = subscription(TOPIC)

    def join(member_id: str) -> dict[str, Any]:
        return {"group_id": group, "session_timeout_ms": 60_000, "rebalance_timeout_ms": 120_000,
                "member_id": member_id, "group_instance_id": None, "protocol_type": "consumer",
                "protocols": [{"name": "range", "metadata": meta}]}

    firsts = await asyncio.gather(*(c.request(ApiKey.JOIN_GROUP, JOIN_V, join("")) for c in conns))
    if any(r.error_code != E.MEMBER_ID_REQUIRED for r in firsts):
        raise RuntimeError(f"first JoinGroup: {sorted({E(r.error_code).name for r in firsts})}")
    member_ids = [r.member_id for r in firsts]
    corrs = [c.next_corr() for c in conns]
    frames = [encode_request(ApiKey.JOIN_GROUP, JOIN_V, corr, "scale", join(mid))
              for corr, mid in zip(corrs, member_ids, strict=True)]
    sync_prefix = _I16.pack(ApiKey.SYNC_GROUP) + _I16.pack(SYNC_V)
    sync_tail_cid = _string("scale") + _string(group)
    done = loop.create_future()
    joined_at: list[float] = []
    left = [n]
    errors: list[str] = []

    def on_sync(frame: bytes) -> None:
        _, _, error = _SYNC_HEAD.unpack_from(frame)
        if error != E.NONE:
            errors.append(f"SyncGroup {error_name(error)}")
        left[0] -= 1
        if not left[0] and not done.done():
            done.set_result(time.perf_counter())

    def on_join(conn: Conn, member_id: str, frame: bytes) -> None:
        # JoinGroup v5 response: correlation id, throttle, error code, generation, protocol, leader, member id
        (error,) = _I16.unpack_from(frame, 8)
        if error != E.NONE:
            errors.append(f"JoinGroup {error_name(error)}")
            left[0] -= 1
            if not left[0] and not done.done():
                done.set_result(time.perf_counter())
            return
        (generation,) = _I32.unpack_from(frame, 10)
        _, pos = _read_string(frame, 14)
        leader, pos = _read_string(frame, pos)
        joined_at.append(time.perf_counter())
        corr = conn.next_corr()
        if leader == member_id:
            resp = decode_response(ApiKey.JOIN_GROUP, JOIN_V, frame)[1]
            assignments = range_assignment([m.member_id for m in resp.members], TOPIC, partitions)
            out = encode_request(ApiKey.SYNC_GROUP, SYNC_V, corr, "scale", {
                "group_id": group, "generation_id": generation, "member_id": member_id,
                "group_instance_id": None, "assignments": assignments})
        else:
            body = (sync_prefix + _I32.pack(corr) + sync_tail_cid + _I32.pack(generation) + _string(member_id)
                    + _I16.pack(-1) + _I32.pack(0))
            out = _I32.pack(len(body)) + body
        conn.send(out, corr, on_sync)

    profiler.start(f"classic-{n}")
    cpu0 = cpu_seconds(pid)
    for conn, corr, mid, frame in zip(conns, corrs, member_ids, frames, strict=True):
        conn.send(frame, corr, lambda f, conn=conn, mid=mid: on_join(conn, mid, f))
    t0 = time.perf_counter()
    try:
        end = await asyncio.wait_for(done, 300)
    except TimeoutError:
        raise RuntimeError(f"{len(joined_at)} JoinGroups and {n - left[0] - len(errors)} SyncGroups answered of {n}"
                           f" after 300 s; errors: {errors[:3]}") from None
    cpu = cpu_seconds(pid) - cpu0
    profiler.stop()
    for c in conns:
        c.close()
    if errors:
        raise RuntimeError(f"{len(errors)} errors, e.g. {errors[:3]}")
    return {"after last join": end - t0, "joins answered": max(joined_at) - t0, "broker cpu": cpu}


# ------------------------------------------------------------------------------- KIP-848


async def create_topic(port: int, name: str, partitions: int) -> None:
    (conn,) = await open_conns(port, 1)
    resp = await conn.request(ApiKey.CREATE_TOPICS, 5, {
        "topics": [{"name": name, "num_partitions": partitions, "replication_factor": 1, "assignments": [],
                    "configs": []}], "timeout_ms": 60_000, "validate_only": False})
    conn.close()
    if resp.topics[0].error_code not in (E.NONE, E.TOPIC_ALREADY_EXISTS):
        raise RuntimeError(f"CreateTopics: {E(resp.topics[0].error_code).name}")


class CgMember:
    """A KIP-848 member: heartbeats at the interval it is given, and at once after its assignment changed."""

    __slots__ = ("conn", "epoch", "interval_ms", "member_id", "owned", "timer")

    def __init__(self, conn: Conn) -> None:
        self.conn = conn
        self.member_id = str(uuid.uuid4())
        self.epoch = 0
        self.owned: frozenset[int] = frozenset()
        self.interval_ms = 5000
        self.timer: asyncio.TimerHandle | None = None


async def consumer(port: int, pid: int, n: int, partitions: int, group: str, profiler: Profiler) -> dict[str, float]:
    """``n`` KIP-848 members join at once; time from the last join to a Stable group (see the module doc)."""
    conns = await open_conns(port, n)
    loop = asyncio.get_running_loop()
    members = [CgMember(c) for c in conns]
    topic_id: list[Any] = [None]
    errors: list[str] = []
    stopping = [False]

    def heartbeat(m: CgMember, joining: bool = False, ack: bool = False) -> None:
        m.timer = None
        if stopping[0]:
            return
        body: dict[str, Any] = {
            "group_id": group, "member_id": m.member_id, "member_epoch": m.epoch, "instance_id": None,
            "rack_id": None, "rebalance_timeout_ms": 60_000 if joining else -1,
            "subscribed_topic_names": [TOPIC] if joining else None, "subscribed_topic_regex": None,
            "server_assignor": None, "topic_partitions": [] if joining else None}
        if ack and topic_id[0] is not None:
            body["topic_partitions"] = [{"topic_id": topic_id[0], "partitions": sorted(m.owned)}]
        corr = m.conn.next_corr()
        m.conn.send(encode_request(ApiKey.CONSUMER_GROUP_HEARTBEAT, CGH_V, corr, "scale", body), corr,
                    lambda frame: on_response(m, frame))

    def on_response(m: CgMember, frame: bytes) -> None:
        resp = decode_response(ApiKey.CONSUMER_GROUP_HEARTBEAT, CGH_V, frame)[1]
        if resp.error_code != E.NONE:
            errors.append(f"{E(resp.error_code).name}: {resp.error_message}")
            return
        m.epoch = resp.member_epoch
        m.interval_ms = resp.heartbeat_interval_ms
        changed = False
        if resp.assignment is not None:
            owned: frozenset[int] = frozenset()
            for tp in resp.assignment.topic_partitions:
                topic_id[0] = tp.topic_id
                owned = frozenset(tp.partitions)
            changed = owned != m.owned
            m.owned = owned
        if changed:
            heartbeat(m, ack=True)  # reconciled: acknowledge at once
        elif m.timer is None and not stopping[0]:
            m.timer = loop.call_later(m.interval_ms / 1000, heartbeat, m)

    def stable() -> bool:
        epoch = members[0].epoch
        if epoch <= 0 or any(m.epoch != epoch for m in members):
            return False
        owned = [len(m.owned) for m in members]
        seen: set[int] = set()
        for m in members:
            seen |= m.owned
        return sum(owned) == partitions == len(seen) and max(owned) - min(owned) <= 1

    profiler.start(f"consumer-{n}")
    cpu0 = cpu_seconds(pid)
    for m in members:
        heartbeat(m, joining=True)
    t0 = time.perf_counter()
    deadline = t0 + 600
    while not stable():
        if errors:
            raise RuntimeError(f"{len(errors)} errors, e.g. {errors[:3]}")
        if time.perf_counter() > deadline:
            raise TimeoutError("the group did not become Stable")
        await asyncio.sleep(0.01)
    end = time.perf_counter()
    cpu = cpu_seconds(pid) - cpu0
    profiler.stop()
    stopping[0] = True
    for m in members:
        if m.timer is not None:
            m.timer.cancel()
        m.conn.close()
    return {"after last join": end - t0, "epoch": float(members[0].epoch), "broker cpu": cpu}


# ------------------------------------------------------------------------------- main


async def run(args: argparse.Namespace) -> None:
    sizes = [int(s) for s in args.sizes.split(",")]
    kinds = args.kinds.split(",")
    settings = ["group.initial.rebalance.delay.ms=0",
                f"group.consumer.heartbeat.interval.ms={args.heartbeat_ms}",
                f"group.consumer.min.heartbeat.interval.ms={min(args.heartbeat_ms, 5000)}"]
    if args.assignment_interval_ms is not None:
        settings.append(f"group.consumer.assignment.interval.ms={args.assignment_interval_ms}")
    if args.offsets_compression >= 0:
        settings.append(f"offsets.topic.compression.codec={args.offsets_compression}")
    settings += args.broker_set
    extra = ["--log-level", "WARNING"]
    for s in settings:
        extra += ["--set", s]
    with tempfile.TemporaryDirectory(prefix="kbroker-group-scale-") as tmp:
        broker = BrokerProcess(Path(tmp) / "data", extra_args=extra, cwd=ROOT)
        broker.start(60)
        try:
            assert broker.proc is not None
            pid = broker.proc.pid
            print(f"broker pid {pid}; {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}; "
                  f"Python {sys.version.split()[0]}; settings {' '.join(settings)}")
            if "consumer" in kinds:
                await create_topic(broker.port, TOPIC, args.partitions)
            results: dict[str, list[tuple[int, dict[str, float]]]] = {}
            for kind in kinds:
                scenario = classic if kind == "classic" else consumer
                # a small group first: the codecs of its requests and records compile on first use
                await scenario(broker.port, pid, 3, args.partitions, f"warm-{kind}", Profiler(None, pid))
                for n in sizes:
                    r = await scenario(broker.port, pid, n, args.partitions, f"scale-{kind}-{n}-{uuid.uuid4().hex[:8]}",
                                       Profiler(args.profile, pid))
                    results.setdefault(kind, []).append((n, r))
                    extra_cols = "  ".join(f"{k} {v:.3f}" for k, v in r.items() if k != "after last join")
                    print(f"{kind:8s} {n:6d} members: {r['after last join']:7.3f} s after the last join  "
                          f"({extra_cols}; load {os.getloadavg()[0]:.1f})", flush=True)
                    await asyncio.sleep(1.0)  # let the closed connections go
            print()
            for kind, rows in results.items():
                base_n, base = rows[0]
                growth = ", ".join(f"{n // base_n}x members -> {r['after last join'] / base['after last join']:.1f}x "
                                   f"time, {r['broker cpu'] / max(base['broker cpu'], 1e-9):.1f}x broker CPU"
                                   for n, r in rows[1:])
                print(f"{kind}: growth over {base_n} members: {growth or '-'}")
        except BaseException:
            print(f"broker log tail:\n{broker.log_tail(20)}", file=sys.stderr)
            raise
        finally:
            broker.stop(60)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="1000,5000,10000")
    ap.add_argument("--kinds", default="classic,consumer")
    ap.add_argument("--partitions", type=int, default=1000)
    ap.add_argument("--heartbeat-ms", type=int, default=1000,
                    help="group.consumer.heartbeat.interval.ms (and its minimum) for the consumer runs")
    ap.add_argument("--assignment-interval-ms", type=int, default=None,
                    help="group.consumer.assignment.interval.ms (default: the broker's)")
    ap.add_argument("--offsets-compression", type=int, default=4,
                    help="offsets.topic.compression.codec (default 4, zstd: a 10,000-member classic group's metadata "
                         "is 1.3 MB, above message.max.bytes uncompressed); -1: leave it unset")
    ap.add_argument("--broker-set", action="append", default=[], metavar="KEY=VALUE",
                    help="more broker settings")
    ap.add_argument("--profile", default=None, help="directory for py-spy profiles of the broker in each timed window")
    args = ap.parse_args()
    if args.profile:
        os.makedirs(args.profile, exist_ok=True)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    need = max(int(s) for s in args.sizes.split(",")) + 256
    if soft < need:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(need, soft)), hard))
    asyncio.run(run(args))


if __name__ == "__main__":
    main()
