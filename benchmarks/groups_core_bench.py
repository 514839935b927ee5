"""Micro-benchmark of the pure classic group coordinator (no I/O): prints figures only.

* time for N members (two-step KIP-394 join, leader SyncGroup, follower SyncGroups) to reach Stable;
* heartbeats per second on a Stable group;
* offset commits per second (one partition each);
* bytes of Python heap per member (tracemalloc), timers included.

Run: ``.venv/bin/python benchmarks/groups_core_bench.py``
"""

from __future__ import annotations

import gc
import itertools
import time
import tracemalloc

from broker.coordinator.group import GroupConfig, GroupCoordinator

META = b"\x00\x00\x00\x00\x00\x01\x00\x05topic\xff\xff\xff\xff"  # consumer subscription v0 to "topic"


def _coordinator() -> GroupCoordinator:
    ids = itertools.count()
    return GroupCoordinator(GroupConfig(initial_rebalance_delay_ms=3000), now_ms=0,
                            member_id_factory=lambda prefix: f"{prefix}-{next(ids):08d}")


def to_stable(n: int) -> tuple[float, GroupCoordinator, list[str], int]:
    c = _coordinator()
    join = {"group_id": "g", "session_timeout_ms": 10_000, "rebalance_timeout_ms": 60_000,
            "member_id": "", "group_instance_id": None, "protocol_type": "consumer",
            "protocols": [{"name": "range", "metadata": META}]}
    replies: dict[int, dict] = {}
    start = time.perf_counter()
    tokens = []
    for i in range(n):
        (_, r), = c.join_group(0, 5, join, -i - 1, client_id="bench", client_host="/127.0.0.1").replies
        token = i + 1
        tokens.append(token)
        for tok, resp in c.join_group(0, 5, {**join, "member_id": r["member_id"]}, token,
                                      client_id="bench", client_host="/127.0.0.1").replies:
            replies[tok] = resp
    now = 0
    while len(replies) < n:
        now += 3000
        for tok, resp in c.poll(now).replies:
            replies[tok] = resp
    members = [replies[t]["member_id"] for t in tokens]
    leader = replies[tokens[0]]["leader"]
    gen = replies[tokens[0]]["generation_id"]
    sync = {"group_id": "g", "generation_id": gen, "group_instance_id": None, "assignments": []}
    for m in members:
        if m != leader:
            c.sync_group(now, 3, {**sync, "member_id": m}, ("s", m))
    fx = c.sync_group(now, 3, {**sync, "member_id": leader,
                               "assignments": [{"member_id": m, "assignment": b"\x00" * 24} for m in members]},
                      ("s", leader))
    elapsed = time.perf_counter() - start
    assert len(fx.replies) == n and c.groups["g"].state.value == "Stable"
    return elapsed, c, members, now


def heartbeats_per_second(c: GroupCoordinator, members: list[str], now: int, rounds: int = 20) -> float:
    gen = c.groups["g"].generation_id
    reqs = [{"group_id": "g", "generation_id": gen, "member_id": m, "group_instance_id": None} for m in members]
    start = time.perf_counter()
    for r in range(rounds):
        t = now + r * 1000
        for req in reqs:
            c.heartbeat(t, 3, req, None)
        c.poll(t)
    return rounds * len(reqs) / (time.perf_counter() - start)


def commits_per_second(c: GroupCoordinator, members: list[str], now: int) -> float:
    gen = c.groups["g"].generation_id
    count = max(len(members), 5000)
    start = time.perf_counter()
    for i in range(count):
        m = members[i % len(members)]
        c.offset_commit(now, 8, {"group_id": "g", "generation_id_or_member_epoch": gen, "member_id": m,
                                 "group_instance_id": None,
                                 "topics": [{"name": "topic", "partitions": [
                                     {"partition_index": i, "committed_offset": i * 10,
                                      "committed_leader_epoch": -1, "committed_metadata": ""}]}]}, None)
    return count / (time.perf_counter() - start)


def bytes_per_member(n: int) -> float:
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    _, c, members, _ = to_stable(n)
    gc.collect()
    used = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    del c, members
    return used / n


def main() -> None:
    to_stable(2)  # warm up: the codecs compile on first use
    print("members  time-to-Stable   heartbeats/s   commits/s")
    for n in (10, 100, 1000):
        elapsed, c, members, now = to_stable(n)
        hb = heartbeats_per_second(c, members, now)
        cm = commits_per_second(c, members, now + 30_000)
        print(f"{n:7d}  {elapsed * 1000:10.2f} ms   {hb:12,.0f}   {cm:9,.0f}")
    print(f"heap per member (1000-member Stable group, incl. timers): {bytes_per_member(1000):,.0f} bytes")


if __name__ == "__main__":
    main()
