"""The broker's own cost per request, without sockets: µs of Python from received bytes to response.

    .venv/bin/python benchmarks/request_path.py [--requests 200000] [--share-requests 20000]
        [--cases heartbeat,consumer-group-heartbeat,share-group-heartbeat,produce,produce-64k,offset-commit,
                 fetch,share-fetch,replica-fetch,replica-fetch-throttled] [--cprofile] [--compare-pure ROUNDS]

An in-process broker (:class:`broker.testing.embedded.Broker`) and one :class:`broker.network.server.KafkaConnection`
on a transport that discards what it is given.  Pre-encoded requests are copied into the connection's
receive buffer and handed to ``buffer_updated``, exactly as the event loop would after a ``recv_into``;
everything from framing to the encoded response runs, the kernel does not (no receive, no send — the
log's ``pwrite`` still does, and record data of fetches is read with ``pread``, as no socket is there for
``sendfile``).  So the figure is the per-request ceiling of the request path itself, the number the
small-request aims of ``raw_wire.py --cases small`` divide into one core; ``--cprofile`` prints where it
goes.  Each case prints µs a request by the wall clock and by the process's CPU time (the machine may be
shared: CPU time is what the request costs), and before it is timed the responses of its warm-up are
decoded and any error code in them stops the run.

Pipelined cases (64 frames fed at a time, the same frames again and again):

* ``heartbeat``                 Heartbeat v4 of the one member of a Stable classic group;
* ``consumer-group-heartbeat``  ConsumerGroupHeartbeat of a KIP-848 member that owns its partition, in the
  steady state (its epoch, every optional field null);
* ``share-group-heartbeat``     ShareGroupHeartbeat of a share group member that has its assignment, in the
  steady state (its epoch, no subscription change);
* ``produce``                   acks=1 Produce of one 10-record batch (100-byte records);
* ``produce-64k``               acks=1 Produce of one 64 KiB batch (1,000-byte records);
* ``offset-commit``             OffsetCommit v8 of one partition by a group with no members (a simple
  commit): a request that waits — its answer comes once the commit's record is written to
  ``__consumer_offsets`` — so each round of 64 waits for its 64 answers before the next is fed;
* ``replica-fetch``             a follower's Fetch (``replica_state`` with replica id 2, not in sync) of one
  10-record batch, partition not throttled;
* ``replica-fetch-throttled``   the same on a topic with ``leader.replication.throttled.replicas=*`` and the
  broker's ``leader.replication.throttled.rate`` at 10 GB/s (every fetch is counted against the leader's
  quota and capped by its allowance, never held back).  The follower is not a member of the partition's
  replica set (the embedded broker is one node), which the leader does not check: the fetch takes the
  follower path (reads to the log end, the quota, the follower's progress looked up) all the same.

One request at a time (each fed when the previous response has been written; the log holds
``--share-requests`` + warm-up batches of 10 records of 100 bytes):

* ``fetch``        a consumer's Fetch of the next 10-record batch (``partition_max_bytes`` one batch);
* ``share-fetch``  a share group member's ShareFetch in its share session (``max_records`` 10) acquiring
  the next batch and acknowledging (ACCEPT) the one the previous fetch acquired — the consumer's steady
  state in Kafka's share consumer; each acknowledgement is written to the share coordinator before the
  response.  One at a time because a pipelined fetch could acquire before the previous acknowledgement.

Ratios of the new request paths to their classic counterparts measured in the same run are printed
at the end: ShareGroupHeartbeat / ConsumerGroupHeartbeat, ConsumerGroupHeartbeat / Heartbeat,
ShareFetch / Fetch and throttled / unthrottled replica Fetch (the aim: within 1.5x).
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import cProfile
import os
import pstats
import re
import socket
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
# cProfile sees Python functions only: --cprofile profiles the modules as Python (protocol/compiled.py),
# which must be decided before anything imports protocol
os.environ["KBROKER_PURE_PYTHON"] = "1" if "--cprofile" in sys.argv else os.environ.get("KBROKER_PURE_PYTHON", "")

import raw_wire as rw

from broker.network.server import KafkaConnection
from broker.testing.embedded import Broker
from broker.testing.transport import FrameTransport, feed
from protocol.api import APIS, ApiKey, decode_response, encode_request
from protocol.compiled import PURE_PYTHON_ENV

PIPELINE = 64
WARMUP = 200  # requests of a one-at-a-time case before the clock starts
SGH_V = APIS[ApiKey.SHARE_GROUP_HEARTBEAT].max_version
SHARE_FETCH_V = APIS[ApiKey.SHARE_FETCH].max_version
THROTTLED_RATE = 10_000_000_000  # bytes/s: far above what one core sends, so no fetch is held back
FOLLOWER = 2  # the replica id of the follower's fetches (not a broker of the embedded one-node cluster)


@dataclass
class Case:
    """What a case sends: ``frames`` (pipelined: the same 64 again and again; one at a time: each once, in
    order), the API and version of their responses, and an extra check of the decoded responses (given the
    index of the request the first of them answers)."""

    frames: list[bytes]
    api: int
    version: int
    sequential: bool = False
    wait: bool = False  # pipelined, but each round of frames waits for its answers (requests that park)
    check: Callable[[list[Any], int], None] | None = None  # (decoded responses, index of the first)


# ------------------------------------------------------------------------------------------- setup


def request(sock: socket.socket, key: int, version: int, body: dict[str, Any]) -> Any:
    return rw.call(sock, key, version, body)


def topic_id(sock: socket.socket, topic: str) -> uuid.UUID:
    resp = request(sock, ApiKey.METADATA, 12, {"topics": [{"name": topic, "topic_id": None}],
                                              "allow_auto_topic_creation": False,
                                              "include_topic_authorized_operations": False})
    return resp.topics[0].topic_id


def produce_batches(port: int, topic: str, records: bytes, n: int) -> None:
    """``n`` acks=1 Produce requests of ``records`` to partition 0, 64 in flight."""
    with socket.create_connection(("127.0.0.1", port)) as sock:
        frame = rw.produce_frame(topic, 0, records)
        left = n
        while left:
            k = min(PIPELINE, left)
            sock.sendall(frame * k)
            for _ in range(k):
                _, body = decode_response(ApiKey.PRODUCE, rw.PRODUCE_V, rw.read_frame(sock))
                if rw.error_codes(body):
                    raise SystemExit(f"Produce failed: {body}")
            left -= k


def share_member(port: int, group: str, topic: str) -> tuple[str, int, uuid.UUID]:
    """A share group member subscribed to ``topic`` (reading from the earliest offset), heartbeating until
    it is assigned partition 0: (member id, epoch, topic id)."""
    member = uuid.uuid4().hex[:22]
    with socket.create_connection(("127.0.0.1", port)) as sock:
        rw.wait_for_coordinator(sock, group)
        resp = request(sock, ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, {"validate_only": False, "resources": [
            {"resource_type": 32, "resource_name": group, "configs": [
                {"name": "share.auto.offset.reset", "config_operation": 0, "value": "earliest"}]}]})
        if rw.error_codes(resp):
            raise SystemExit(f"IncrementalAlterConfigs failed: {resp}")
        body: dict[str, Any] = {"group_id": group, "member_id": member, "member_epoch": 0, "rack_id": None,
                                "subscribed_topic_names": [topic]}
        deadline = time.monotonic() + 30
        while True:
            resp = request(sock, ApiKey.SHARE_GROUP_HEARTBEAT, SGH_V, body)
            if resp.error_code:
                raise SystemExit(f"ShareGroupHeartbeat failed: {resp.error_code} {resp.error_message}")
            body = {**body, "member_epoch": resp.member_epoch, "subscribed_topic_names": None}
            if resp.assignment is not None and any(tp.partitions for tp in resp.assignment.topic_partitions):
                return member, resp.member_epoch, topic_id(sock, topic)
            if time.monotonic() > deadline:
                raise SystemExit(f"no share assignment: {resp}")
            time.sleep(0.1)


def share_heartbeat_case(port: int) -> Case:
    rw.create_topic(port, "share-hb", 1)
    member, epoch, _ = share_member(port, "request-path-share-hb", "share-hb")
    body = {"group_id": "request-path-share-hb", "member_id": member, "member_epoch": epoch, "rack_id": None,
            "subscribed_topic_names": None}
    return Case([encode_request(ApiKey.SHARE_GROUP_HEARTBEAT, SGH_V, i + 1, "request-path", body)
                 for i in range(PIPELINE)], ApiKey.SHARE_GROUP_HEARTBEAT, SGH_V)


def small_batch() -> bytes:
    return rw.batch(100, 10 * 108)


def fetch_body(tid: uuid.UUID, offset: int, max_bytes: int, replica: int = -1) -> dict[str, Any]:
    return {"cluster_id": None, "replica_id": -1, "max_wait_ms": 500, "min_bytes": 1, "max_bytes": 1 << 20,
            "isolation_level": 0, "session_id": 0, "session_epoch": -1, "rack_id": "",
            "replica_state": {"replica_id": replica, "replica_epoch": -1},
            "topics": [{"topic": "", "topic_id": tid, "partitions": [
                {"partition": 0, "current_leader_epoch": -1, "fetch_offset": offset, "last_fetched_epoch": -1,
                 "log_start_offset": -1, "partition_max_bytes": max_bytes, "replica_directory_id": None}]}],
            "forgotten_topics_data": []}


def one_batch_each(expect_records: int) -> Callable[[list[Any], int], None]:
    """A check that every Fetch response carries ``expect_records`` bytes of records for its partition."""
    def check(bodies: list[Any], first: int) -> None:
        for b in bodies:
            size = len(b.responses[0].partitions[0].records or b"")
            if size != expect_records:
                raise SystemExit(f"a Fetch returned {size} bytes of records, expected one batch of {expect_records}")
    return check


def fetch_case(port: int, n: int) -> Case:
    """A consumer's Fetch of each 10-record batch in turn, one at a time."""
    records = small_batch()
    rw.create_topic(port, "fetch", 1)
    produce_batches(port, "fetch", records, n)
    with socket.create_connection(("127.0.0.1", port)) as sock:
        tid = topic_id(sock, "fetch")
    frames = [encode_request(ApiKey.FETCH, rw.FETCH_V, i + 1, "request-path", fetch_body(tid, 10 * i, len(records)))
              for i in range(n)]
    return Case(frames, ApiKey.FETCH, rw.FETCH_V, sequential=True, check=one_batch_each(len(records)))


def share_fetch_case(port: int, n: int) -> Case:
    """A share member's ShareFetch of each 10-record batch in turn, acknowledging the previous one."""
    group = "request-path-share"
    rw.create_topic(port, "share", 1)
    produce_batches(port, "share", small_batch(), n)
    member, _, tid = share_member(port, group, "share")
    frames = []
    for i in range(n):
        acks = [] if i == 0 else [{"first_offset": 10 * (i - 1), "last_offset": 10 * i - 1, "acknowledge_types": [1]}]
        body = {"group_id": group, "member_id": member, "share_session_epoch": i, "max_wait_ms": 5000 if i == 0 else 500,
                "min_bytes": 1, "max_bytes": 1 << 20, "max_records": 10, "batch_size": 10, "share_acquire_mode": 0,
                "is_renew_ack": False, "forgotten_topics_data": [],
                "topics": [{"topic_id": tid, "partitions": [{"partition_index": 0, "acknowledgement_batches": acks}]}]}
        frames.append(encode_request(ApiKey.SHARE_FETCH, SHARE_FETCH_V, i + 1, "request-path", body))

    def check(bodies: list[Any], first: int) -> None:
        for i, b in enumerate(bodies, first):
            p = b.responses[0].partitions[0]
            got = [(a.first_offset, a.last_offset) for a in p.acquired_records]
            if p.error_code or p.acknowledge_error_code or got != [(10 * i, 10 * i + 9)]:
                raise SystemExit(f"ShareFetch {i}: error {p.error_code}, acknowledgement error "
                                 f"{p.acknowledge_error_code}, acquired {got}, expected [({10 * i}, {10 * i + 9})]")
    return Case(frames, ApiKey.SHARE_FETCH, SHARE_FETCH_V, sequential=True, check=check)


def replica_fetch_case(port: int, throttled: bool) -> Case:
    """A follower's Fetch of the first 10-record batch of a partition, throttled or not."""
    topic = "replica-throttled" if throttled else "replica"
    records = small_batch()
    rw.create_topic(port, topic, 1, configs={"leader.replication.throttled.replicas": "*"} if throttled else None)
    produce_batches(port, topic, records, 4)
    with socket.create_connection(("127.0.0.1", port)) as sock:
        tid = topic_id(sock, topic)
    frames = [encode_request(ApiKey.FETCH, rw.FETCH_V, i + 1, "request-path", fetch_body(tid, 0, len(records), FOLLOWER))
              for i in range(PIPELINE)]
    return Case(frames, ApiKey.FETCH, rw.FETCH_V, check=one_batch_each(len(records)))


def offset_commit_case(port: int) -> Case:
    """A simple commit (no member, generation -1) of partition 0 of a one-partition topic, 64 offsets."""
    topic = "offset-commit"
    rw.create_topic(port, topic, 1)
    version = 8
    frames = [encode_request(ApiKey.OFFSET_COMMIT, version, i + 1, "request-path", {
        "group_id": "request-path-commits", "generation_id_or_member_epoch": -1, "member_id": "",
        "group_instance_id": None,
        "topics": [{"name": topic, "partitions": [{"partition_index": 0, "committed_offset": i,
                                                   "committed_leader_epoch": -1, "committed_metadata": None}]}]})
        for i in range(PIPELINE)]
    return Case(frames, ApiKey.OFFSET_COMMIT, version, wait=True)


def case_for(name: str, port: int, n: int) -> Case:
    if name == "heartbeat":
        return Case(rw.heartbeat_frames(port), ApiKey.HEARTBEAT, 4)
    if name == "consumer-group-heartbeat":
        return Case(rw.consumer_group_heartbeat_frames(port), ApiKey.CONSUMER_GROUP_HEARTBEAT, rw.CGH_V)
    if name == "share-group-heartbeat":
        return share_heartbeat_case(port)
    if name == "offset-commit":
        return offset_commit_case(port)
    if name == "fetch":
        return fetch_case(port, n)
    if name == "share-fetch":
        return share_fetch_case(port, n)
    if name in ("replica-fetch", "replica-fetch-throttled"):
        return replica_fetch_case(port, name.endswith("throttled"))
    rw.create_topic(port, name, 1)
    records = rw.batch(1000, 65_536) if name == "produce-64k" else small_batch()
    return Case([rw.produce_frame(name, 0, records, cid=i + 1) for i in range(PIPELINE)], ApiKey.PRODUCE, rw.PRODUCE_V)


# ----------------------------------------------------------------------------------------- measuring


def checked(case: Case, frames: list[bytes], first: int = 0) -> None:
    """Decode the responses (to requests ``first`` on); stop on any error code (and on what the case's own
    check finds)."""
    bodies = [decode_response(case.api, case.version, f)[1] for f in frames]
    for b in bodies:
        codes = rw.error_codes(b)
        if codes:
            raise SystemExit(f"API {case.api} answered errors {codes}: {b}")
    if case.check is not None:
        case.check(bodies, first)


@dataclass
class Result:
    wall_us: float
    cpu_us: float
    size: int
    requests: int


async def measure(name: str, requests: int, profile: bool, sort: str = "tottime") -> Result:
    """µs per request (wall clock and CPU) of ``requests`` requests of case ``name``."""
    overrides: dict[str, Any] = {"leader_replication_throttled_rate": THROTTLED_RATE} \
        if name == "replica-fetch-throttled" else {}
    # the timed loop feeds requests without yielding to the event loop: no stall warnings for that
    broker = Broker(port=0, event_loop_stall_warn_ms=0, **overrides)
    await broker.start()
    try:
        port = int(broker.bootstrap_servers.rsplit(":", 1)[1])
        loop = asyncio.get_running_loop()
        n = requests + WARMUP
        case = await loop.run_in_executor(None, case_for, name, port, n)
        transport = FrameTransport(capture=False)
        conn = KafkaConnection(broker.core.server)
        conn.connection_made(transport)  # type: ignore[arg-type]

        prof = cProfile.Profile() if profile else None
        if case.sequential:
            transport.capture = True
            blobs = [memoryview(f) for f in case.frames]
            for i in range(WARMUP):  # the share session opened, the codecs compiled, caches filled
                feed(conn, blobs[i])
                await transport.until(i + 1)
            checked(case, transport.frames)
            timed = blobs[WARMUP:]
            start, cpu0 = time.perf_counter(), time.process_time()
            if prof is not None:
                prof.enable()
            for i, blob in enumerate(timed, WARMUP + 1):
                feed(conn, blob)
                await transport.until(i)
            if prof is not None:
                prof.disable()
            elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu0
            checked(case, transport.frames[WARMUP:], WARMUP)  # every timed response, too
            done = len(timed)
        else:
            blob = memoryview(b"".join(case.frames[:PIPELINE]))
            per = min(PIPELINE, len(case.frames))
            transport.capture = True
            for i in range(20):  # warm up: codecs compiled, caches filled
                feed(conn, blob)
                await transport.until((i + 1) * per)
            transport.capture = False
            checked(case, transport.frames)
            await asyncio.sleep(0.05)
            rounds = max(1, requests // per)
            start, cpu0 = time.perf_counter(), time.process_time()
            if prof is not None:
                prof.enable()
            if case.wait:
                transport.capture = True
                for _ in range(rounds):
                    transport.frames.clear()
                    feed(conn, blob)
                    await transport.until(per)
            else:
                for _ in range(rounds):
                    feed(conn, blob)
                    await asyncio.sleep(0)  # let the loop run what the requests scheduled
            if prof is not None:
                prof.disable()
            elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu0
            if case.wait:
                checked(case, transport.frames)  # the last round's answers
            done = rounds * per
        conn.connection_lost(None)
        if prof is not None:
            pstats.Stats(prof).sort_stats(sort).print_stats(30)
        return Result(elapsed / done * 1e6, cpu / done * 1e6, len(case.frames[0]), done)
    finally:
        await broker.stop()


RATIOS = [("ShareGroupHeartbeat / ConsumerGroupHeartbeat", "share-group-heartbeat", "consumer-group-heartbeat"),
          ("ConsumerGroupHeartbeat / Heartbeat", "consumer-group-heartbeat", "heartbeat"),
          ("ShareFetch (+ ack) / Fetch, 10 records", "share-fetch", "fetch"),
          ("replica Fetch throttled / not throttled", "replica-fetch-throttled", "replica-fetch")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=200_000)
    parser.add_argument("--share-requests", type=int, default=20_000,
                        help="requests of the one-at-a-time cases (fetch, share-fetch)")
    parser.add_argument("--cases", default="heartbeat,consumer-group-heartbeat,share-group-heartbeat,produce,"
                                           "produce-64k,offset-commit,fetch,share-fetch,replica-fetch,"
                                           "replica-fetch-throttled")
    parser.add_argument("--cprofile", action="store_true", help="print the top functions by own time")
    parser.add_argument("--sort", default="tottime", help="the order of --cprofile's list (pstats: tottime, cumtime)")
    parser.add_argument("--compare-pure", type=int, default=0, metavar="ROUNDS",
                        help="run the cases in ROUNDS alternating rounds, each in its own process, with every module "
                             "as Python (KBROKER_PURE_PYTHON=1) and as the install compiled them; print the medians")
    args = parser.parse_args()
    if args.compare_pure:
        compare_pure(args)
        return
    try:
        import uvloop

        uvloop.install()
    except ImportError:
        pass
    results: dict[str, Result] = {}
    for case in args.cases.split(","):
        n = (args.requests // 10 if case == "produce-64k" else
             args.share_requests if case in ("fetch", "share-fetch") else args.requests)
        r = results[case] = asyncio.run(measure(case, n, args.cprofile, args.sort))
        print(f"{case:24s} {r.wall_us:8.2f} µs/request ({r.cpu_us:8.2f} µs CPU)  {1e6 / r.wall_us:10,.0f} requests/s "
              f"on one core  ({r.size:,} B frames; {r.requests:,} requests)", flush=True)
    lines = [(label, results[a], results[b]) for label, a, b in RATIOS if a in results and b in results]
    if lines:
        print("\nnew request path / classic counterpart, same run (aim: within 1.5x)")
        for label, new, old in lines:
            print(f"  {label:46s} {new.wall_us / old.wall_us:5.2f}x wall  {new.cpu_us / old.cpu_us:5.2f}x CPU")


def compare_pure(args: argparse.Namespace) -> None:
    """Every case with the modules as Python and compiled (protocol/compiled.py), in alternating rounds
    of one process each; CPU µs a request, the median of each, and compiled / Python."""
    cpu: dict[tuple[str, str], list[float]] = collections.defaultdict(list)
    command = [sys.executable, __file__, "--requests", str(args.requests), "--share-requests",
               str(args.share_requests), "--cases", args.cases]
    for _ in range(args.compare_pure):
        for mode in ("Python", "compiled"):
            env = dict(os.environ)
            env.pop(PURE_PYTHON_ENV, None)
            if mode == "Python":
                env[PURE_PYTHON_ENV] = "1"
            out = subprocess.run(command, env=env, capture_output=True, text=True, check=True).stdout
            for line in out.splitlines():
                m = re.match(r"(\S+)\s+[\d.]+ µs/request \(\s*([\d.]+) µs CPU\)", line)
                if m:
                    cpu[(m.group(1), mode)].append(float(m.group(2)))
    print(f"µs of CPU a request, median of {args.compare_pure} rounds each (one process a round, alternating)")
    print(f"{'case':24s} {'Python':>10s} {'compiled':>10s}  compiled / Python")
    for case in args.cases.split(","):
        py, built = statistics.median(cpu[(case, "Python")]), statistics.median(cpu[(case, "compiled")])
        print(f"{case:24s} {py:10.2f} {built:10.2f}  {built / py:5.2f}x   "
              f"(Python {min(cpu[(case, 'Python')]):.1f}-{max(cpu[(case, 'Python')]):.1f}, "
              f"compiled {min(cpu[(case, 'compiled')]):.1f}-{max(cpu[(case, 'compiled')]):.1f})")


if __name__ == "__main__":
    main()
