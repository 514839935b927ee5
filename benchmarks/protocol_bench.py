"""Micro-benchmarks for the protocol codec: compiled codecs vs the interpreted construct path.

Run: ``.venv/bin/python benchmarks/protocol_bench.py`` (``--quick`` for a shorter run).
Prints µs per call; best of several timeit repeats.  No assertions.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import timeit
import uuid
from collections.abc import Callable
from typing import Any

from protocol import api as kapi
from protocol.primitives import ExternalBytes
from protocol.schema import Message, build_uncompiled, parse_uncompiled
from protocol.schemas.fetch import FetchRequest, FetchResponse
from protocol.schemas.heartbeat import HeartbeatRequest
from protocol.schemas.join_group import JoinGroupRequest, JoinGroupResponse
from protocol.schemas.metadata import MetadataResponse
from protocol.schemas.misc import ConsumerProtocolAssignment, ConsumerProtocolSubscription
from protocol.schemas.offset_commit import OffsetCommitRequest
from protocol.schemas.sync_group import SyncGroupRequest

try:
    from protocol import records as _records
except ImportError:
    _records = None  # type: ignore[assignment]

REPEATS = 5
MIN_SECONDS = 0.2


def per_call(fn: Callable[[], object]) -> float:
    """Best seconds per call over ``REPEATS`` timeit runs, each sized by ``autorange``."""
    timer = timeit.Timer(fn)
    number, elapsed = timer.autorange()
    scale = max(1, int(number * MIN_SECONDS / max(elapsed, 1e-9)))
    return min(timer.repeat(repeat=REPEATS, number=scale)) / scale


def us(seconds: float) -> str:
    return f"{seconds * 1e6:10.2f}"


TOPIC_IDS = [uuid.UUID(int=i + 1) for i in range(100)]
SUBSCRIPTION = ConsumerProtocolSubscription.encode(
    3, {"topics": [f"topic-{i}" for i in range(5)], "generation_id": 7, "rack_id": "rack-a"})
ASSIGNMENT = ConsumerProtocolAssignment.encode(
    3, {"assigned_partitions": [{"topic": f"topic-{i}", "partitions": list(range(4))} for i in range(5)]})
MEMBERS = [f"consumer-1-{uuid.UUID(int=i)}" for i in range(10)]
BATCH = bytes(range(256)) * 4


def heartbeat_v4() -> dict[str, Any]:
    return {"group_id": "my-group", "generation_id": 12, "member_id": MEMBERS[0], "group_instance_id": None}


def join_group_v9_request() -> dict[str, Any]:
    return {"group_id": "my-group", "session_timeout_ms": 45000, "rebalance_timeout_ms": 300000,
            "member_id": MEMBERS[0], "group_instance_id": None, "protocol_type": "consumer",
            "protocols": [{"name": f"assignor-{i}", "metadata": SUBSCRIPTION} for i in range(10)],
            "reason": None}


def join_group_v9_response() -> dict[str, Any]:
    return {"throttle_time_ms": 0, "error_code": 0, "generation_id": 12, "protocol_type": "consumer",
            "protocol_name": "range", "leader": MEMBERS[0], "skip_assignment": False, "member_id": MEMBERS[0],
            "members": [{"member_id": m, "group_instance_id": None, "metadata": SUBSCRIPTION} for m in MEMBERS]}


def sync_group_v5() -> dict[str, Any]:
    return {"group_id": "my-group", "generation_id": 12, "member_id": MEMBERS[0], "group_instance_id": None,
            "protocol_type": "consumer", "protocol_name": "range",
            "assignments": [{"member_id": m, "assignment": ASSIGNMENT} for m in MEMBERS]}


def offset_commit_v9() -> dict[str, Any]:
    return {"group_id": "my-group", "generation_id_or_member_epoch": 12, "member_id": MEMBERS[0],
            "group_instance_id": None,
            "topics": [{"name": f"topic-{t}", "partitions": [
                {"partition_index": p, "committed_offset": 1_000_000 + p, "committed_leader_epoch": 3,
                 "committed_metadata": ""} for p in range(10)]} for t in range(10)]}


def metadata_v12() -> dict[str, Any]:
    return {"throttle_time_ms": 0,
            "brokers": [{"node_id": b, "host": f"broker-{b}.example", "port": 9092, "rack": None} for b in range(3)],
            "cluster_id": "kbroker-cluster", "controller_id": 0,
            "topics": [{"error_code": 0, "name": f"topic-{t}", "topic_id": TOPIC_IDS[t], "is_internal": False,
                        "partitions": [{"error_code": 0, "partition_index": p, "leader_id": p % 3, "leader_epoch": 5,
                                        "replica_nodes": [0, 1, 2], "isr_nodes": [0, 1, 2], "offline_replicas": []}
                                       for p in range(10)],
                        "topic_authorized_operations": -2147483648} for t in range(100)]}


def fetch_v16_request() -> dict[str, Any]:
    return {"max_wait_ms": 500, "min_bytes": 1, "max_bytes": 52428800, "isolation_level": 0,
            "session_id": 0, "session_epoch": -1,
            "topics": [{"topic_id": TOPIC_IDS[t], "partitions": [
                {"partition": p, "current_leader_epoch": 5, "fetch_offset": 123456, "last_fetched_epoch": -1,
                 "log_start_offset": -1, "partition_max_bytes": 1048576} for p in range(10)]} for t in range(10)],
            "forgotten_topics_data": [], "rack_id": ""}


def fetch_v16_response(records: Callable[[], Any]) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "error_code": 0, "session_id": 0,
            "responses": [{"topic_id": TOPIC_IDS[t], "partitions": [
                {"partition_index": p, "error_code": 0, "high_watermark": 200000, "last_stable_offset": 200000,
                 "log_start_offset": 0, "aborted_transactions": None, "preferred_read_replica": -1,
                 "records": records()} for p in range(10)]} for t in range(10)],
            "node_endpoints": []}


CASES: list[tuple[str, Message, int, dict[str, Any]]] = [
    ("Heartbeat v4 request", HeartbeatRequest, 4, heartbeat_v4()),
    ("JoinGroup v9 request (10 protocols)", JoinGroupRequest, 9, join_group_v9_request()),
    ("JoinGroup v9 response (10 members)", JoinGroupResponse, 9, join_group_v9_response()),
    ("SyncGroup v5 request (10 members)", SyncGroupRequest, 5, sync_group_v5()),
    ("OffsetCommit v9 request (100 partitions)", OffsetCommitRequest, 9, offset_commit_v9()),
    ("Metadata v12 response (100x10)", MetadataResponse, 12, metadata_v12()),
    ("Fetch v16 request (100 partitions)", FetchRequest, 16, fetch_v16_request()),
    ("Fetch v16 response (100 x 1 KiB)", FetchResponse, 16, fetch_v16_response(lambda: BATCH)),
]


def codec_rows() -> list[tuple[str, int, float, float, float, float]]:
    rows = []
    for name, message, version, body in CASES:
        data = message.encode(version, body)
        assert message.decode(version, data) == parse_uncompiled(message, version, data)
        rows.append((
            name, len(data),
            per_call(lambda m=message, v=version, d=data: m.decode(v, d)),
            per_call(lambda m=message, v=version, b=body: m.encode(v, b)),
            per_call(lambda m=message, v=version, d=data: parse_uncompiled(m, v, d)),
            per_call(lambda m=message, v=version, b=body: build_uncompiled(m, v, b)),
        ))
    return rows


def framing_rows() -> list[tuple[str, float]]:
    frame = kapi.encode_request(12, 4, 42, "consumer-1", heartbeat_v4())[4:]

    def header_and_body() -> object:
        header = kapi.decode_request_header(frame)
        return kapi.decode_request_body(header, frame)

    inline = fetch_v16_response(lambda: BATCH)
    external = fetch_v16_response(lambda: ExternalBytes(len(BATCH)))
    response_frame = kapi.encode_response(1, 16, 42, inline)[4:]
    request_frame = kapi.encode_request(1, 16, 42, "consumer-1", fetch_v16_request())[4:]
    return [
        ("Heartbeat v4: request header + body decode", per_call(header_and_body)),
        ("Heartbeat v4: encode_request (frame)", per_call(lambda: kapi.encode_request(12, 4, 42, "c", heartbeat_v4()))),
        ("Fetch v16: request header + body decode", per_call(
            lambda: kapi.decode_request_body(kapi.decode_request_header(request_frame), request_frame))),
        ("Fetch v16: encode_response, inline records", per_call(lambda: kapi.encode_response(1, 16, 42, inline))),
        ("Fetch v16: encode_response_parts, ExternalBytes", per_call(
            lambda: kapi.encode_response_parts(1, 16, 42, external))),
        ("Fetch v16: decode_response", per_call(lambda: kapi.decode_response(1, 16, response_frame))),
    ]


def crc_row() -> tuple[str, float] | None:
    if _records is None or not hasattr(_records, "crc_ok"):
        return None
    value = os.urandom(1000)
    batch = _records.encode_batch([(None, value, None, 1_700_000_000_000) for _ in range(1024)])
    header = _records.parse_batch_header(batch)
    assert _records.crc_ok(batch, 0, header)
    seconds = per_call(lambda: _records.crc_ok(batch, 0, header))
    return f"CRC-32C batch validation ({len(batch) / 2**20:.2f} MiB batch)", len(batch) / seconds / 1e9


def main() -> None:
    global REPEATS, MIN_SECONDS
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer, shorter repeats")
    if parser.parse_args().quick:
        REPEATS, MIN_SECONDS = 3, 0.05
    print(f"# protocol codec benchmark: Python {platform.python_version()} on {platform.machine()}, "
          f"{os.cpu_count()} CPUs; best of {REPEATS}, µs per call")
    print()
    print(f"| {'message':<42} | {'bytes':>7} | {'decode':>10} | {'encode':>10} | {'construct decode':>16} "
          f"| {'construct encode':>16} | {'decode speedup':>14} |")
    print(f"|{'-' * 44}|{'-' * 9}|{'-' * 12}|{'-' * 12}|{'-' * 18}|{'-' * 18}|{'-' * 16}|")
    for name, size, dec, enc, udec, uenc in codec_rows():
        print(f"| {name:<42} | {size:>7} | {us(dec)} | {us(enc)} | {us(udec):>16} | {us(uenc):>16} "
              f"| {udec / dec:>13.1f}x |")
        sys.stdout.flush()
    print()
    print(f"| {'frame operation':<50} | {'µs':>10} |")
    print(f"|{'-' * 52}|{'-' * 12}|")
    for name, seconds in framing_rows():
        print(f"| {name:<50} | {us(seconds)} |")
    crc = crc_row()
    if crc is not None:
        print()
        print(f"{crc[0]}: {crc[1]:.2f} GB/s")


if __name__ == "__main__":
    main()
