"""The pure group coordinator on its own (no I/O, a fake clock): CPU time and work per member, by group size.

A driver calls :class:`broker.coordinator.group.GroupCoordinator` the way the runtime does — each call's
writes are committed (``write_committed``) before the next call, and ``poll`` runs the timers at the fake
time — so what it measures is the coordinator's own cost, which the load of a shared machine does not
change (figures are CPU seconds of this process, ``time.process_time``):

* **classic**: N members join one group at once (JoinGroup v5 two-step: all get MEMBER_ID_REQUIRED first,
  then all rejoin), every member sends SyncGroup, the leader's assignment is stored, the group is Stable;
  then one heartbeat round and one offset commit per member;
* **consumer** (KIP-848): N members send their first ConsumerGroupHeartbeat (one topic of ``--partitions``
  partitions), then heartbeat every interval (at once after their assignment changed, as a consumer
  acknowledges) until the group is Stable;
* for each: records and bytes written, assignor runs, and the growth of the CPU time per member with N
  (flat = linear; doubling with N = quadratic).

``--profile`` prints the top functions (cProfile, by own time, with call counts) of the largest size.

Run: ``.venv/bin/python benchmarks/groups_core_bench.py`` (``--sizes 1000,5000,10000 --partitions 1000``).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import itertools
import pstats
import sys
import time
import uuid
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from broker.coordinator.group import GroupConfig, GroupCoordinator, assignors
from broker.coordinator.group.consumer_group import ConsumerGroupConfig

META = b"\x00\x00\x00\x00\x00\x01\x00\x05topic\xff\xff\xff\xff"  # consumer subscription v0 to "topic"
CGH = 68


class OneTopic:
    """The metadata image of a consumer group's benchmark: one topic."""

    def __init__(self, partitions: int) -> None:
        self.id, self.partitions = uuid.uuid4(), partitions

    def topic_id(self, name: str) -> uuid.UUID | None:
        return self.id if name == "topic" else None

    def partition_count(self, name: str) -> int | None:
        return self.partitions if name == "topic" else None

    def topic_names(self) -> Iterable[str]:
        return ["topic"]


class Driver:
    """Runs calls on a coordinator as the runtime does: writes commit at once, in order; replies collected."""

    def __init__(self, coordinator: GroupCoordinator) -> None:
        self.c = coordinator
        self.now = 0
        self.replies: dict[Any, Any] = {}
        self.writes = self.records = self.bytes = 0

    def apply(self, fx: Any) -> None:
        pending = [fx]
        while pending:
            fx = pending.pop(0)
            self.replies.update(fx.replies)
            for w in fx.writes:
                self.writes += 1
                self.records += len(w.records)
                self.bytes += sum(len(k) + len(v or b"") for k, v in w.records)
                pending.append(self.c.write_committed(self.now, w.write_id))

    def call(self, method: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
        self.apply(method(self.now, *args, **kwargs))

    def advance(self, ms: int) -> None:
        self.now += ms
        self.apply(self.c.poll(self.now))


class AssignorRuns:
    """Counts the server-side assignor's runs while in use."""

    def __init__(self) -> None:
        self.runs = 0
        self._saved = dict(assignors.ASSIGNORS)

    def __enter__(self) -> AssignorRuns:
        for name, fn in self._saved.items():
            def counted(*args: Any, _fn: Callable[..., Any] = fn) -> Any:
                self.runs += 1
                return _fn(*args)
            assignors.ASSIGNORS[name] = counted
        return self

    def __exit__(self, *exc: object) -> None:
        assignors.ASSIGNORS.update(self._saved)


def classic(n: int) -> dict[str, float]:
    ids = itertools.count()
    d = Driver(GroupCoordinator(GroupConfig(initial_rebalance_delay_ms=0), now_ms=0,
                                member_id_factory=lambda prefix: f"{prefix}-{next(ids):08d}"))
    join = {"group_id": "g", "session_timeout_ms": 10_000, "rebalance_timeout_ms": 60_000,
            "member_id": "", "group_instance_id": None, "protocol_type": "consumer",
            "protocols": [{"name": "range", "metadata": META}]}
    out: dict[str, float] = {}
    start = time.process_time()
    for i in range(n):
        d.call(d.c.join_group, 5, join, ("first", i), client_id="bench", client_host="/127.0.0.1")
    members = [d.replies[("first", i)]["member_id"] for i in range(n)]
    out["first joins"] = time.process_time() - start
    mark = time.process_time()
    for i, m in enumerate(members):
        d.call(d.c.join_group, 5, {**join, "member_id": m}, ("join", i), client_id="bench", client_host="/127.0.0.1")
    out["joins"] = time.process_time() - mark
    mark = time.process_time()
    first = d.replies[("join", 0)]
    leader, gen = first["leader"], first["generation_id"]
    sync = {"group_id": "g", "generation_id": gen, "group_instance_id": None, "assignments": []}
    for i, m in enumerate(members):
        if m != leader:
            d.call(d.c.sync_group, 3, {**sync, "member_id": m}, ("sync", i))
    d.call(d.c.sync_group, 3, {**sync, "member_id": leader, "assignments": [
        {"member_id": m, "assignment": b"\x00" * 24} for m in members]}, ("sync", "leader"))
    out["syncs"] = time.process_time() - mark
    assert d.c.groups["g"].state.value == "Stable" and all(("sync", i) in d.replies or m == leader
                                                            for i, m in enumerate(members))
    out["to Stable"] = time.process_time() - start
    out.update(writes=d.writes, records=d.records, bytes=d.bytes)
    mark = time.process_time()
    for i, m in enumerate(members):
        d.call(d.c.heartbeat, 3, {"group_id": "g", "generation_id": gen, "member_id": m, "group_instance_id": None},
               ("hb", i))
    out["heartbeats"] = time.process_time() - mark
    mark = time.process_time()
    for i, m in enumerate(members):
        d.call(d.c.offset_commit, 8, {"group_id": "g", "generation_id_or_member_epoch": gen, "member_id": m,
                                      "group_instance_id": None, "topics": [{"name": "topic", "partitions": [
                                          {"partition_index": i, "committed_offset": i, "committed_leader_epoch": -1,
                                           "committed_metadata": ""}]}]}, ("commit", i))
    out["commits"] = time.process_time() - mark
    return out


def consumer(n: int, partitions: int, interval_ms: int, assignment_interval_ms: int | None) -> dict[str, float]:
    topics = OneTopic(partitions)
    settings: dict[str, Any] = {"heartbeat_interval_ms": interval_ms, "session_timeout_ms": 45_000}
    if assignment_interval_ms is not None:
        settings["assignment_interval_ms"] = assignment_interval_ms
    d = Driver(GroupCoordinator(GroupConfig(consumer=ConsumerGroupConfig(**settings)), now_ms=0, topics=topics,
                                partition_count=topics.partition_count))
    member_ids = [f"member-{i:06d}" for i in range(n)]
    epoch = dict.fromkeys(member_ids, 0)
    owned: dict[str, list[int]] = {mid: [] for mid in member_ids}
    tokens = itertools.count()

    def heartbeat(mid: str, joining: bool = False, ack: bool = False) -> bool:
        """One heartbeat; True when the member's assignment changed."""
        token = next(tokens)
        d.call(d.c.consumer_group_heartbeat, 1, {
            "group_id": "g", "member_id": mid, "member_epoch": epoch[mid], "instance_id": None, "rack_id": None,
            "rebalance_timeout_ms": 60_000 if joining else -1,
            "subscribed_topic_names": ["topic"] if joining else None, "subscribed_topic_regex": None,
            "server_assignor": None,
            "topic_partitions": [] if joining else [{"topic_id": topics.id, "partitions": owned[mid]}] if ack
            else None}, token, client_id="bench", client_host="/127.0.0.1")
        r = d.replies.pop(token)
        assert r["error_code"] == 0, r
        epoch[mid] = r["member_epoch"]
        if r["assignment"] is None:
            return False
        parts = sorted(p for tp in r["assignment"]["topic_partitions"] for p in tp["partitions"])
        changed = parts != owned[mid]
        owned[mid] = parts
        return changed

    def beat(mid: str, joining: bool = False) -> None:
        """A heartbeat, and the acknowledgements its changes call for."""
        changed = heartbeat(mid, joining=joining)
        while changed:
            changed = heartbeat(mid, ack=True)

    out: dict[str, float] = {}
    with AssignorRuns() as runs:
        start = time.process_time()
        for mid in member_ids:
            beat(mid, joining=True)
        out["joins"] = time.process_time() - start
        rounds = 0
        group = d.c.consumer.groups["g"]
        while group.state != "Stable":
            rounds += 1
            if rounds > 50:
                raise RuntimeError(f"not Stable after 50 heartbeat rounds: {group.state}")
            d.advance(interval_ms)
            for mid in member_ids:
                beat(mid)
        out["to Stable"] = time.process_time() - start
        out["rounds"] = rounds
        out["assignor runs"] = runs.runs
    out.update(writes=d.writes, records=d.records, bytes=d.bytes)
    return out


def profiled(fn: Callable[[], dict[str, float]], top: int) -> dict[str, float]:
    prof = cProfile.Profile()
    result = prof.runcall(fn)
    buf = io.StringIO()
    pstats.Stats(prof, stream=buf).sort_stats("tottime").print_stats(top)
    lines = [ln for ln in buf.getvalue().splitlines() if ln.strip()]
    start = next(i for i, ln in enumerate(lines) if ln.lstrip().startswith("ncalls"))
    print("\n".join("    " + ln for ln in lines[start - 1:]))
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="1000,5000,10000")
    ap.add_argument("--kinds", default="classic,consumer")
    ap.add_argument("--partitions", type=int, default=1000)
    ap.add_argument("--heartbeat-ms", type=int, default=1000, help="the consumer group's heartbeat interval")
    ap.add_argument("--assignment-interval-ms", type=int, default=None,
                    help="the consumer group's assignment interval (default: the coordinator's)")
    ap.add_argument("--profile", action="store_true", help="cProfile the largest size of each kind")
    ap.add_argument("--top", type=int, default=15)
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    classic(10)  # warm up: the codecs compile on first use
    print(f"Python {sys.version.split()[0]}; CPU seconds of this process (time.process_time)")
    for kind in args.kinds.split(","):
        base: tuple[int, float] | None = None
        for n in sizes:
            def case(n: int = n, kind: str = kind) -> dict[str, float]:
                if kind == "classic":
                    return classic(n)
                return consumer(n, args.partitions, args.heartbeat_ms, args.assignment_interval_ms)
            r = profiled(case, args.top) if args.profile and n == max(sizes) else case()
            per = r["to Stable"] / n * 1e6
            growth = "" if base is None else f"; per member {per / base[1]:.2f}x that of {base[0]}"
            base = base or (n, per)
            figures = "  ".join(f"{k} {v:.3f} s" if isinstance(v, float) else f"{k} {v:,}" for k, v in r.items())
            print(f"{kind:8s} {n:6d} members: {per:8.1f} us CPU per member to Stable{growth}\n    {figures}",
                  flush=True)


if __name__ == "__main__":
    main()
