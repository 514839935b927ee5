"""Bad input against a real ``python -m broker`` process, over raw sockets.

* A malformed frame (garbage, negative or huge size, shorter than a header, a
  body that does not parse) closes *that* connection; the process stays up and
  keeps serving the other connections, including ones already open.
* ApiVersions with a version the broker does not know gets the KIP-511 answer:
  a v0 body with UNSUPPORTED_VERSION and the ApiVersions range.
* Other known APIs at versions outside the served range (Produce v2, below the
  4.x floor of v3; Fetch v3; ListOffsets v0; v99s) get UNSUPPORTED_VERSION in
  the nearest version the broker can encode, and change nothing.  An API key
  nobody defined closes the connection.
* A record batch that fails its CRC gets CORRUPT_MESSAGE and nothing of it is
  written: the latest offset does not move and a Fetch returns nothing new.
* Unknown topics and partitions get UNKNOWN_TOPIC_OR_PARTITION in Produce,
  Fetch and ListOffsets; illegal topic names get INVALID_TOPIC_EXCEPTION.
* A few thousand mutated requests cannot crash the process.
"""

from __future__ import annotations

import random
import socket
import struct
import time
import uuid

import pytest
from e2e_helpers import RawClient, fetch, peer_closed, read_frame

from protocol.api import APIS, ApiKey, decode_response, encode_request
from protocol.error_codes import ErrorCode as E
from protocol.records import encode_batch
from protocol.schema import in_range

LATEST, EARLIEST = -1, -2


def _records(n: int = 3, tag: str = "r") -> bytes:
    return encode_batch([(f"k{i}".encode(), f"{tag}{i}".encode(), [("h", b"v")], None) for i in range(n)])


def _string(s: str) -> bytes:
    b = s.encode()
    return struct.pack(">h", len(b)) + b


def _frame(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


def _assert_serving(broker) -> None:
    """The process is alive and a new connection gets a normal ApiVersions answer."""
    assert broker.alive(), broker.log_tail()
    with broker.raw() as c:
        assert c.request(ApiKey.API_VERSIONS, 3, {"client_software_name": "e2e",
                                                   "client_software_version": "1"}).error_code == 0


@pytest.fixture(scope="module")
def broker(shared_broker):
    return shared_broker


@pytest.fixture(scope="module")
def topic(broker) -> str:
    with broker.raw() as c:
        assert c.create_topic("hostile", 2) == 0
        assert c.produce("hostile", 0, _records(5)).error_code == 0
    return "hostile"


# -- frames that cannot be framed or parsed -----------------------------------------------


BAD_FRAMES = {
    "negative-size": struct.pack(">i", -1) + b"\0" * 16,
    "min-int-size": struct.pack(">i", -(2**31)),
    "huge-size": struct.pack(">i", 2**31 - 1),
    "above-max-frame": struct.pack(">i", 100 * 1024 * 1024 + 1),
    "shorter-than-header": _frame(b"\0\x03\0"),
    "empty-frame": _frame(b""),
    "ascii-garbage": b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
    "random-garbage": _frame(random.Random(7).randbytes(64)),
    "unknown-api-key": _frame(struct.pack(">hhi", 1000, 0, 1) + _string("x")),
    "negative-api-key": _frame(struct.pack(">hhi", -1, 0, 1) + _string("x")),
    # header claims a client id longer than the frame
    "client-id-past-end": _frame(struct.pack(">hhih", ApiKey.METADATA, 1, 1, 500) + b"abc"),
    # Metadata v1 whose topic array says 1000 entries but holds none
    "array-past-end": _frame(struct.pack(">hhi", ApiKey.METADATA, 1, 1) + _string("x") + struct.pack(">i", 1000)),
    # Metadata v1 with a huge positive array count (must not pre-allocate)
    "array-count-huge": _frame(struct.pack(">hhi", ApiKey.METADATA, 1, 1) + _string("x")
                               + struct.pack(">i", 2**31 - 1)),
    # flexible Metadata v12 with a compact string length varint that never ends
    "varint-never-ends": _frame(struct.pack(">hhi", ApiKey.METADATA, 12, 1) + _string("x") + b"\0" + b"\xff" * 12),
    # Produce v9 whose records length runs past the frame
    "records-past-end": _frame(
        encode_request(ApiKey.PRODUCE, 9, 1, "x", {
            "transactional_id": None, "acks": -1, "timeout_ms": 1000,
            "topic_data": [{"name": "hostile", "partition_data": [{"index": 0, "records": _records(2)}]}]})[4:-25]),
}


@pytest.mark.parametrize("name", sorted(BAD_FRAMES))
def test_malformed_frame_closes_only_that_connection(broker, topic, name) -> None:
    with broker.raw() as bystander, broker.raw() as bad:
        # the bystander is open (and has talked) before the bad frame arrives
        assert bystander.list_offset(topic, 0, LATEST).error_code == 0
        bad.send_raw(BAD_FRAMES[name])
        assert peer_closed(bad.sock), f"{name}: the broker kept the connection open"
        # the connection that was already open still works, and so does a new one
        assert bystander.list_offset(topic, 0, LATEST).offset == 5
    _assert_serving(broker)


def test_truncated_frame_then_client_disconnects(broker, topic) -> None:
    """A frame whose body never arrives in full: the broker waits, the client leaves, nothing breaks."""
    full = encode_request(ApiKey.METADATA, 1, 1, "x", {"topics": [{"name": topic}]})
    for cut in (1, 3, 4, 7, len(full) // 2, len(full) - 1):
        s = socket.create_connection((broker.host, broker.port))
        s.sendall(full[:cut])
        s.close()
    # half-closed (FIN after a partial frame) instead of closed
    s = socket.create_connection((broker.host, broker.port))
    s.sendall(full[: len(full) // 2])
    s.shutdown(socket.SHUT_WR)
    assert peer_closed(s), "broker kept a half-closed connection with a partial frame open"
    s.close()
    _assert_serving(broker)


def test_pipelined_requests_before_a_bad_frame_are_answered(broker, topic) -> None:
    """Requests framed before the malformed one get their responses, in order; then the close."""
    reqs = b"".join(encode_request(ApiKey.LIST_OFFSETS, 7, cid, "x", {
        "replica_id": -1, "isolation_level": 0,
        "topics": [{"name": topic, "partitions": [{"partition_index": 0, "timestamp": LATEST}]}]})
        for cid in (1, 2, 3))
    with broker.raw() as c:
        c.send_raw(reqs + struct.pack(">i", -5))
        for cid in (1, 2, 3):
            got, resp = decode_response(ApiKey.LIST_OFFSETS, 7, read_frame(c.sock))
            assert got == cid and resp.topics[0].partitions[0].offset == 5
        assert peer_closed(c.sock)
    _assert_serving(broker)


# -- versions ----------------------------------------------------------------------------


HEADER_TAILS = {
    "v2": _string("future-client") + b"\0",  # client id, tagged fields: how a flexible version is framed
    "v1": _string("future-client"),  # client id, no tagged fields
    "v1-null-client": struct.pack(">h", -1),
    "v0": b"",  # nothing after the correlation id
}


@pytest.mark.parametrize("header", list(HEADER_TAILS))
@pytest.mark.parametrize("body", [b"", b"\x07whatever-a-v99-body-is\x00\xff\xfe", b"\xff" * 40])
def test_api_versions_unknown_version_gets_kip511_answer(broker, body, header) -> None:
    """ApiVersions v99: body not parsed, answered as v0 with UNSUPPORTED_VERSION and the ApiVersions range,
    however the client framed the header after the correlation id (KIP-511: the broker cannot know
    how a version newer than its own frames it)."""
    header = struct.pack(">hhi", ApiKey.API_VERSIONS, 99, 4242) + HEADER_TAILS[header]
    with broker.raw() as c:
        c.send_raw(_frame(header + body))
        cid, resp = decode_response(ApiKey.API_VERSIONS, 0, read_frame(c.sock))
        assert cid == 4242
        assert resp.error_code == E.UNSUPPORTED_VERSION
        api = APIS[ApiKey.API_VERSIONS]
        assert [(k.api_key, k.min_version, k.max_version) for k in resp.api_keys] == [
            (ApiKey.API_VERSIONS, api.min_version, api.max_version)]
        # the connection stays usable: the client retries at a version it shares with us
        again = c.request(ApiKey.API_VERSIONS, api.max_version,
                          {"client_software_name": "future-client", "client_software_version": "9"})
        assert again.error_code == 0
        produce = next(k for k in again.api_keys if k.api_key == ApiKey.PRODUCE)
        assert produce.min_version == 0  # KAFKA-18659: advertised for librdkafka's sake


def _produce_v2_frame(topic: str, records: bytes) -> bytes:
    body = struct.pack(">hi", -1, 5000) + struct.pack(">i", 1) + _string(topic)
    body += struct.pack(">i", 1) + struct.pack(">i", 0) + struct.pack(">i", len(records)) + records
    return _frame(struct.pack(">hhi", ApiKey.PRODUCE, 2, 77) + _string("old-client") + body)


def _fetch_v3_frame(topic: str) -> bytes:
    body = struct.pack(">iiii", -1, 100, 1, 1 << 20) + struct.pack(">i", 1) + _string(topic)
    body += struct.pack(">i", 1) + struct.pack(">iqi", 0, 0, 1 << 20)
    return _frame(struct.pack(">hhi", ApiKey.FETCH, 3, 78) + _string("old-client") + body)


def _error_codes(node) -> list[int]:
    if isinstance(node, dict):
        return [v for k, v in node.items() if k == "error_code"] + [
            c for k, v in node.items() if k != "error_code" for c in _error_codes(v)]
    if isinstance(node, list):
        return [c for item in node for c in _error_codes(item)]
    return []


UNSUPPORTED = {
    # name: (api key, version sent, version the broker answers in, frame)
    "produce-v2": (ApiKey.PRODUCE, 2, 3, lambda t: _produce_v2_frame(t, _records(2, "old"))),
    "fetch-v3": (ApiKey.FETCH, 3, 4, _fetch_v3_frame),
    "list-offsets-v0": (ApiKey.LIST_OFFSETS, 0, 1, lambda t: _frame(
        struct.pack(">hhi", ApiKey.LIST_OFFSETS, 0, 79) + _string("x") + struct.pack(">ii", -1, 1) + _string(t)
        + struct.pack(">iiqi", 1, 0, -1, 1))),
    "produce-v99": (ApiKey.PRODUCE, 99, 12, lambda t: _frame(
        struct.pack(">hhi", ApiKey.PRODUCE, 99, 80) + _string("x") + b"\0" * 20)),
    "metadata-v99": (ApiKey.METADATA, 99, 13, lambda t: _frame(
        struct.pack(">hhi", ApiKey.METADATA, 99, 81) + _string("x") + b"\0" + _records(1))),
}


@pytest.mark.parametrize("what", sorted(UNSUPPORTED))
def test_unsupported_version_gets_unsupported_version(broker, topic, what) -> None:
    """Known API, version outside the served range: an UNSUPPORTED_VERSION answer, no side effects.

    The body cannot be parsed, so the broker answers in the nearest version it
    can encode (for Produce v2 / Fetch v3 / ListOffsets v0 that encoding is
    byte-identical to the version asked for, because the topic list is empty)
    and every error code the body holds is UNSUPPORTED_VERSION.
    """
    key, _sent, answered, make = UNSUPPORTED[what]
    with broker.raw() as c:
        before = c.list_offset(topic, 0, LATEST).offset
        c.send_raw(make(topic))
        frame = read_frame(c.sock)
        cid, body = decode_response(key, answered, frame)
        assert cid == struct.unpack(">i", make(topic)[8:12])[0]
        if key == ApiKey.FETCH:
            body.pop("error_code")  # not in Fetch v4; Fetch errors are per partition
        assert all(code == E.UNSUPPORTED_VERSION for code in _error_codes(body)), body
        if key == ApiKey.METADATA:
            assert body.error_code == E.UNSUPPORTED_VERSION
        # nothing was appended, and the connection is still usable
        assert c.list_offset(topic, 0, LATEST).offset == before, "a refused produce appended records"
    _assert_serving(broker)


# -- record batches ------------------------------------------------------------------------


def _corrupt(batch: bytes, where: str) -> bytes:
    b = bytearray(batch)
    if where == "crc":
        b[17] ^= 0x01  # a byte of the CRC field (offset 17..20)
    elif where == "payload":
        b[-3] ^= 0x40  # a byte of the last record, covered by the CRC
    elif where == "attributes":
        b[22] ^= 0x02  # attributes: claims a codec the data is not in (covered by the CRC)
    elif where == "record-count":
        b[57:61] = struct.pack(">i", 1000)  # records count (covered by the CRC)
    return bytes(b)


@pytest.mark.parametrize("where", ["crc", "payload", "attributes", "record-count"])
@pytest.mark.parametrize("version", [3, 9])
def test_corrupt_batch_gets_corrupt_message_and_nothing_is_written(broker, topic, where, version) -> None:
    with broker.raw() as c:
        latest = c.list_offset(topic, 1, LATEST).offset
        part = c.produce(topic, 1, _corrupt(_records(4, "bad"), where), version=version)
        assert part.error_code == E.CORRUPT_MESSAGE, part
        assert part.base_offset == -1
        assert c.list_offset(topic, 1, LATEST).offset == latest
        got = fetch(c, topic, 1, latest)
        assert got.error_code == 0 and got.high_watermark == latest and not got.records
        # the same connection keeps working, and a good batch lands right at `latest`
        ok = c.produce(topic, 1, _records(1, "good"), version=version)
        assert ok.error_code == 0 and ok.base_offset == latest


def test_truncated_batch_is_rejected(broker, topic) -> None:
    with broker.raw() as c:
        latest = c.list_offset(topic, 1, LATEST).offset
        batch = _records(4, "trunc")
        for cut in (len(batch) - 1, 61, 30, 5):
            part = c.produce(topic, 1, batch[:cut])
            assert part.error_code in (E.CORRUPT_MESSAGE, E.INVALID_RECORD), (cut, part)
        two = c.produce(topic, 1, batch + batch)  # two batches in one partition
        assert two.error_code == E.INVALID_RECORD
        assert c.list_offset(topic, 1, LATEST).offset == latest


def test_corrupt_batch_with_acks_0_closes_connection(broker, topic) -> None:
    """acks=0 gets no response; on an error the broker closes the connection (KafkaApis)."""
    with broker.raw() as c:
        latest = c.list_offset(topic, 1, LATEST).offset
    with broker.raw() as c:
        c.send_raw(encode_request(ApiKey.PRODUCE, 9, 5, "x", {
            "transactional_id": None, "acks": 0, "timeout_ms": 1000,
            "topic_data": [{"name": topic, "partition_data": [
                {"index": 1, "records": _corrupt(_records(2), "crc")}]}]}))
        assert peer_closed(c.sock)
    with broker.raw() as c:
        assert c.list_offset(topic, 1, LATEST).offset == latest


# -- Metadata by topic id before v12 ---------------------------------------------------------


@pytest.mark.parametrize("version", [10, 11])
@pytest.mark.parametrize("by", ["id", "null name"])
def test_metadata_by_topic_id_before_v12_gets_invalid_request(broker, topic, version, by) -> None:
    """v10-11 have a topic id and a nullable name that no broker serves: INVALID_REQUEST for each topic (a
    null name answered as ""), as Kafka answers, and the connection stays open."""
    import uuid

    entry = {"name": topic, "topic_id": uuid.uuid4()} if by == "id" else {"name": None, "topic_id": None}
    with broker.raw() as c:
        resp = c.request(ApiKey.METADATA, version, {"topics": [entry, {"name": topic, "topic_id": None}],
                                                    "allow_auto_topic_creation": False,
                                                    "include_topic_authorized_operations": False})
        assert [(t.name, t.error_code) for t in resp.topics] == [
            (topic if by == "id" else "", E.INVALID_REQUEST), (topic, E.INVALID_REQUEST)]
        # the same connection still answers
        assert c.list_offset(topic, 0, LATEST).error_code == 0


# -- unknown topics and partitions ----------------------------------------------------------


def test_unknown_topic_and_partition_error_codes(broker, topic) -> None:
    with broker.raw() as c:
        assert c.produce(topic, 7, _records(1)).error_code == E.UNKNOWN_TOPIC_OR_PARTITION
        assert c.produce(topic, -1, _records(1)).error_code == E.UNKNOWN_TOPIC_OR_PARTITION
        assert c.produce("no-such-topic-x", 0, _records(1)).error_code == E.UNKNOWN_TOPIC_OR_PARTITION
        assert fetch(c, topic, 9, 0).error_code == E.UNKNOWN_TOPIC_OR_PARTITION
        assert fetch(c, "no-such-topic-y", 0, 0).error_code == E.UNKNOWN_TOPIC_OR_PARTITION
        assert c.list_offset(topic, 9, LATEST).error_code == E.UNKNOWN_TOPIC_OR_PARTITION
        assert c.list_offset("no-such-topic-z", 0, EARLIEST).error_code == E.UNKNOWN_TOPIC_OR_PARTITION
        # a fetch beyond the end of an existing partition
        assert fetch(c, topic, 0, 10_000).error_code == E.OFFSET_OUT_OF_RANGE
        # a produce for an unknown partition did not create anything
        md = c.request(ApiKey.METADATA, 12, {"topics": [{"name": topic, "topic_id": None},
                                                        {"name": "no-such-topic-x", "topic_id": None}],
                                            "allow_auto_topic_creation": False,
                                            "include_topic_authorized_operations": False})
        by_name = {t.name: t for t in md.topics}
        assert len(by_name[topic].partitions) == 2
        assert by_name["no-such-topic-x"].error_code == E.UNKNOWN_TOPIC_OR_PARTITION
        # illegal names
        bad = c.request(ApiKey.METADATA, 1, {"topics": [{"name": "bad/name"}, {"name": "x" * 300}]})
        assert [t.error_code for t in bad.topics] == [E.INVALID_TOPIC_EXCEPTION] * 2
        assert c.create_topic("bad name!") == E.INVALID_TOPIC_EXCEPTION
        assert c.create_topic(topic) == E.TOPIC_ALREADY_EXISTS
        assert c.create_topic("zero-partitions", 0) == E.INVALID_PARTITIONS
        assert c.produce("bad/name", 0, _records(1)).error_code in (
            E.INVALID_TOPIC_EXCEPTION, E.UNKNOWN_TOPIC_OR_PARTITION)
    _assert_serving(broker)


# -- fuzz ----------------------------------------------------------------------------------


def _valid_requests(topic: str) -> list[tuple[int, int, dict]]:
    return [
        (ApiKey.API_VERSIONS, 3, {"client_software_name": "fz", "client_software_version": "1"}),
        (ApiKey.METADATA, 1, {"topics": [{"name": topic}]}),
        (ApiKey.METADATA, 12, {"topics": None, "allow_auto_topic_creation": False,
                               "include_topic_authorized_operations": True}),
        (ApiKey.PRODUCE, 3, {"transactional_id": None, "acks": 1, "timeout_ms": 1000,
                             "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": _records(3)}]}]}),
        (ApiKey.PRODUCE, 9, {"transactional_id": None, "acks": -1, "timeout_ms": 1000,
                             "topic_data": [{"name": topic, "partition_data": [{"index": 1, "records": _records(2)}]}]}),
        (ApiKey.FETCH, 12, {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": 1 << 20,
                            "isolation_level": 0, "session_id": 0, "session_epoch": -1, "rack_id": "",
                            "forgotten_topics_data": [],
                            "topics": [{"topic": topic, "partitions": [
                                {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20}]}]}),
        (ApiKey.LIST_OFFSETS, 7, {"replica_id": -1, "isolation_level": 0, "topics": [
            {"name": topic, "partitions": [{"partition_index": 0, "timestamp": -1}]}]}),
        (ApiKey.FIND_COORDINATOR, 3, {"key": "g", "key_type": 0}),
        (ApiKey.JOIN_GROUP, 5, {"group_id": "fz", "session_timeout_ms": 6000, "rebalance_timeout_ms": 6000,
                                "member_id": "", "group_instance_id": None, "protocol_type": "consumer",
                                "protocols": [{"name": "range", "metadata": b"\0\0\0\0\0\0"}]}),
        (ApiKey.OFFSET_COMMIT, 2, {"group_id": "fz", "generation_id_or_member_epoch": -1, "member_id": "",
                                   "retention_time_ms": -1, "topics": [{"name": topic, "partitions": [
                                       {"partition_index": 0, "committed_offset": 1,
                                        "committed_metadata": ""}]}]}),
        (ApiKey.OFFSET_FETCH, 5, {"group_id": "fz", "topics": None, "require_stable": False}),
        (ApiKey.CREATE_TOPICS, 5, {"topics": [{"name": "fz-topic", "num_partitions": 1, "replication_factor": 1,
                                               "assignments": [], "configs": []}], "timeout_ms": 1000,
                                   "validate_only": True}),
        (ApiKey.DESCRIBE_CONFIGS, 4, {"resources": [{"resource_type": 2, "resource_name": topic,
                                                     "configuration_keys": None}],
                                      "include_synonyms": True, "include_documentation": True}),
        (ApiKey.DELETE_RECORDS, 2, {"topics": [{"name": "fz-none", "partitions": [
            {"partition_index": 0, "offset": 0}]}], "timeout_ms": 1000}),
        (ApiKey.LIST_GROUPS, 4, {"states_filter": []}),
        (ApiKey.DESCRIBE_GROUPS, 5, {"groups": ["fz"], "include_authorized_operations": True}),
        (ApiKey.INIT_PRODUCER_ID, 4, {"transactional_id": None, "transaction_timeout_ms": 1000,
                                      "producer_id": -1, "producer_epoch": -1}),
        (ApiKey.DESCRIBE_CLUSTER, 0, {"include_cluster_authorized_operations": False}),
    ]


def _encodable(topic: str) -> list[bytes]:
    out = []
    for key, version, body in _valid_requests(topic):
        try:
            out.append(encode_request(key, version, 1, "fuzz", body))
        except Exception as exc:  # a field name mismatch here is a test bug
            raise AssertionError(f"cannot encode {key} v{version}: {exc}") from exc
    return out


@pytest.mark.slow
def test_mutated_requests_cannot_crash_the_broker(broker, topic) -> None:
    """Byte flips, truncations and insertions in valid requests of every kind: the process survives.

    Each mutated request goes on its own connection; the broker may answer it
    (with an error or not) or close the connection, but must never stop serving.
    """
    fuzz_topic = "hostile-fuzz"
    with broker.raw() as c:
        assert c.create_topic(fuzz_topic, 2) == 0
    seeds = _encodable(fuzz_topic)
    rng = random.Random(20240611)
    sent = 0
    socks: list[socket.socket] = []
    for _ in range(1500):
        frame = bytearray(rng.choice(seeds))
        body = frame[4:]
        for _ in range(rng.randint(1, 4)):
            op = rng.random()
            pos = rng.randrange(len(body))
            if op < 0.6:
                body[pos] = rng.randrange(256)
            elif op < 0.75:
                del body[pos:pos + rng.randint(1, 8)]
            elif op < 0.9:
                body[pos:pos] = rng.randbytes(rng.randint(1, 8))
            else:
                body[pos:pos + 4] = rng.choice([b"\xff\xff\xff\xff", b"\x7f\xff\xff\xff", b"\x80\0\0\0"])
        if len(body) < 8:
            continue
        body[0:2] = frame[4:6]  # keep the api key so every handler gets its share
        data = struct.pack(">i", len(body)) + bytes(body)
        s = socket.create_connection((broker.host, broker.port))
        s.sendall(data)
        socks.append(s)
        sent += 1
        if len(socks) >= 50:
            for s in socks:
                s.close()
            socks.clear()
            assert broker.alive(), f"broker died after {sent} mutated requests:\n{broker.log_tail()}"
    for s in socks:
        s.close()
    time.sleep(0.2)
    _assert_serving(broker)
    with broker.raw() as c:
        # the topic created for fuzzing still reads back cleanly
        assert c.list_offset(fuzz_topic, 0, LATEST).error_code == 0
    crashes = [line for line in broker.log_tail(100_000).splitlines() if "request handler failed" in line]
    assert not crashes, "handlers raised on mutated input (connection was closed, but this is a bug):\n" + \
        "\n".join(crashes[:10])


def test_many_connections_opened_and_dropped(broker, topic) -> None:
    socks = [socket.create_connection((broker.host, broker.port)) for _ in range(200)]
    for i, s in enumerate(socks):
        if i % 2:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # RST on close
        s.close()
    _assert_serving(broker)


def test_raw_client_helper_matches_real_response(broker, topic) -> None:
    """Guard for the helpers above: a normal request on a raw socket works end to end."""
    with RawClient(broker.host, broker.port) as c:
        assert c.list_offset(topic, 0, EARLIEST).offset == 0


# -- well-formed requests with odd values, every API ---------------------------------------------

_ODD_TOPICS = ["hostile-odd-a", "hostile-odd-a", "hostile-odd-b", "__consumer_offsets", "__share_group_state", "",
               "hostile-odd-nope", "o" * 300]
_ODD_GROUPS = ["hostile-odd-g", "hostile-odd-g", "hostile-odd-sg", "", "x" * 300]


class _OddValues:
    """Request bodies that parse — every field of the API's schema at that version, with the values a broken or
    hostile client could send: extremes of each integer, empty and over-long names, internal topics, unknown
    and known topic ids, random bytes, small record batches."""

    def __init__(self, rng: random.Random, topic_ids: list[object]) -> None:
        self.rng = rng
        self.topic_ids = topic_ids

    def body(self, key: int, version: int) -> dict[str, object]:
        return {f.name: self._field(f, version, 0) for f in APIS[key].request.fields if in_range(f.versions, version)}

    def _field(self, f: object, version: int, depth: int) -> object:
        rng = self.rng
        if f.is_array:  # type: ignore[attr-defined]
            if in_range(f.nullable, version) and rng.random() < 0.1:  # type: ignore[attr-defined]
                return None
            return [self._one(f, version, depth + 1, element=True)
                    for _ in range(rng.choice([0, 1, 1, 2, 3]) if depth < 3 else 0)]
        return self._one(f, version, depth)

    def _one(self, f: object, version: int, depth: int, *, element: bool = False) -> object:
        rng = self.rng
        if f.fields:  # type: ignore[attr-defined]
            return {sub.name: self._field(sub, version, depth) for sub in f.fields  # type: ignore[attr-defined]
                    if in_range(sub.versions, version)}
        if not element and in_range(f.nullable, version) and rng.random() < 0.1:  # type: ignore[attr-defined]
            return None
        kind, name = f.element, f.name.lower()  # type: ignore[attr-defined]
        if kind == "string":
            if "topic" in name or name == "name":
                return rng.choice(_ODD_TOPICS)
            if "group" in name:
                return rng.choice(_ODD_GROUPS)
            return rng.choice(["", "x", "m1", str(uuid.uuid4()), "cleanup.policy", "retention.ms", "User:alice", "*"])
        bits = {"int8": 8, "int16": 16, "int32": 32, "int64": 64, "uint16": 16, "uint32": 32}.get(kind)
        if bits is not None:
            signed = not kind.startswith("u")
            lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
            roll = rng.random()
            if roll < 0.3:
                return rng.choice([0, 1, 2] + ([-1] if signed else []))
            if roll < 0.5:
                return rng.choice([lo, hi])
            return rng.randint(max(lo, -1000), min(hi, 100_000)) if roll < 0.8 else rng.randint(lo, hi)
        if kind == "float64":
            return rng.choice([0.0, 1.5, -1.0, 1e308])
        if kind == "bool":
            return rng.random() < 0.5
        if kind == "uuid":
            return rng.choice([*self.topic_ids, uuid.UUID(int=0), uuid.uuid4()])
        if kind == "bytes":
            return rng.randbytes(rng.randint(0, 20))
        if kind == "records":
            return None if rng.random() < 0.2 else _records(rng.randint(1, 3), "odd")
        raise AssertionError(f"no value for {kind}")


@pytest.mark.slow
def test_well_formed_requests_with_odd_values_for_every_api(broker) -> None:
    """Every API the broker serves, at every version, with bodies that parse but carry odd values: each is
    answered (its connection closed only for an acks=0 Produce that cannot be written, as Kafka does) — no
    handler raises, the process keeps serving, and what it stored still reads back."""
    import importlib

    from broker.handlers.registry import HANDLERS

    importlib.import_module("broker.handlers.all")  # registers every handler

    with broker.raw() as c:
        for name in ("hostile-odd-a", "hostile-odd-b"):
            assert c.create_topic(name, 2) in (0, E.TOPIC_ALREADY_EXISTS)
        md = c.request(ApiKey.METADATA, 12, {"topics": None, "allow_auto_topic_creation": False,
                                             "include_topic_authorized_operations": False})
    rng = random.Random(20261126)
    odd = _OddValues(rng, [t.topic_id for t in md.topics])
    routes = [(key, v) for key, h in sorted(HANDLERS.items()) for v in range(h.min_version, h.max_version + 1)
              if key not in (ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE)]
    conns: list[socket.socket | None] = [None] * 4
    answered = 0
    closed_after: set[str] = set()
    try:
        for i in range(1500):
            key, version = routes[i % len(routes)] if i < len(routes) else rng.choice(routes)
            frame = encode_request(key, version, i + 1, "odd", odd.body(key, version))
            j = rng.randrange(len(conns))
            sock = conns[j] or socket.create_connection((broker.host, broker.port), timeout=2)
            conns[j] = sock
            try:
                sock.sendall(frame)
                read_frame(sock)
                answered += 1
            except TimeoutError:  # a long poll, or an acks=0 Produce (no answer)
                sock.close()
                conns[j] = None
            except (OSError, ConnectionError, AssertionError):  # the broker closed the connection
                sock.close()
                conns[j] = None
                closed_after.add(ApiKey(key).name)
            if i % 100 == 99:
                assert broker.alive(), f"broker died after {i + 1} requests:\n{broker.log_tail()}"
    finally:
        for sock in conns:
            if sock is not None:
                sock.close()
    assert answered > 1000
    # a connection is closed only where Kafka closes it: a Produce with acks=0 that cannot be written
    assert closed_after <= {"PRODUCE"}, closed_after
    _assert_serving(broker)
    with broker.raw() as c:
        assert c.list_offset("hostile-odd-a", 0, LATEST).error_code in (0, E.UNKNOWN_TOPIC_OR_PARTITION)
    failures = [line for line in broker.log_tail(1_000_000).splitlines() if "request handler failed" in line]
    assert not failures, "handlers raised on well-formed requests:\n" + "\n".join(failures[:10])
