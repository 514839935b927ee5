"""The admin client's reassignment calls on the wire: AlterPartitionReassignments (v1 carries
AllowReplicationFactorChange, ``None`` cancels), ListPartitionReassignments, ElectLeaders and the
throttle configs, against a scripted one-node broker that records the requests it decodes and answers
as Kafka does (per-partition errors included)."""

from __future__ import annotations

import asyncio
import struct
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from client import Admin, TopicPartition
from client.errors import KafkaError, UnsupportedVersionError
from client.types import PartitionReassignment
from protocol.api import APIS, ApiKey, decode_request_body, decode_request_header, encode_response
from protocol.error_codes import ErrorCode
from protocol.primitives import Obj

pytestmark = pytest.mark.timeout(30)
NODE = 1

Answer = Callable[[Obj, int], dict[str, Any]]


class ScriptedBroker:
    """Node 1 on 127.0.0.1: ApiVersions (every API we know, capped by ``versions``), Metadata naming
    itself as controller, and ``answers`` for the rest; ``requests`` holds (api key, version, request)."""

    def __init__(self, answers: dict[int, Answer], versions: dict[int, int] | None = None, *,
                 dead_controller_port: int | None = None) -> None:
        self.answers = answers
        self.versions = versions or {}
        #: with a port, Metadata names a node 2 there as the controller (a broker just killed, still listed)
        self.dead_controller_port = dead_controller_port
        self.requests: list[tuple[int, int, Obj]] = []
        self.port = 0
        self._server: asyncio.Server | None = None

    async def __aenter__(self) -> ScriptedBroker:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()

    def sent(self, api_key: int) -> list[tuple[int, Obj]]:
        return [(version, req) for key, version, req in self.requests if key == api_key]

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                size = struct.unpack(">i", await reader.readexactly(4))[0]
                frame = await reader.readexactly(size)
                header = decode_request_header(frame)
                request = decode_request_body(header, frame)
                self.requests.append((header.api_key, header.api_version, request))
                body = self._answer(header.api_key, header.api_version, request)
                writer.write(encode_response(header.api_key, header.api_version, header.correlation_id, body))
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()

    def _answer(self, api_key: int, version: int, request: Obj) -> dict[str, Any]:
        if api_key == ApiKey.API_VERSIONS:
            return {"error_code": 0, "throttle_time_ms": 0, "api_keys": [
                {"api_key": int(k), "min_version": api.min_version, "max_version": self.versions.get(k, api.max_version)}
                for k, api in APIS.items() if self.versions.get(k, 0) >= 0]}
        if api_key == ApiKey.METADATA:
            brokers = [{"node_id": NODE, "host": "127.0.0.1", "port": self.port, "rack": None}]
            controller = NODE
            if self.dead_controller_port is not None:
                controller = 2
                brokers.append({"node_id": 2, "host": "127.0.0.1", "port": self.dead_controller_port, "rack": None})
            return {"throttle_time_ms": 0, "brokers": brokers, "cluster_id": "scripted", "controller_id": controller,
                    "topics": []}
        return self.answers[api_key](request, version)


@pytest.fixture
async def connect() -> AsyncIterator[Callable[[ScriptedBroker], Any]]:
    admins: list[Admin] = []

    async def make(broker: ScriptedBroker) -> Admin:
        client = Admin(bootstrap_servers=f"127.0.0.1:{broker.port}", request_timeout_ms=5000)
        await client.start()
        admins.append(client)
        return client

    yield make
    for client in admins:
        await client.close()


def alter_answer(request: Obj, version: int) -> dict[str, Any]:
    """Kafka's controller, briefly: unknown topic 'gone', broker 9 unregistered, cancel with nothing running,
    a size change refused when not allowed."""
    allow = request.allow_replication_factor_change if version >= 1 else True
    responses = []
    for t in request.topics:
        parts = []
        for p in t.partitions:
            code, message = 0, None
            if t.name == "gone":
                code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            elif p.replicas is None:
                code, message = ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, "no reassignment of this partition"
            elif 9 in p.replicas:
                code, message = ErrorCode.INVALID_REPLICA_ASSIGNMENT, "broker 9 is not registered"
            elif not allow and len(p.replicas) != 3:
                code = ErrorCode.INVALID_REPLICATION_FACTOR
            parts.append({"partition_index": p.partition_index, "error_code": code, "error_message": message})
        responses.append({"name": t.name, "partitions": parts})
    return {"throttle_time_ms": 0, "allow_replication_factor_change": allow, "error_code": 0, "error_message": None,
            "responses": responses}


async def test_alter_partition_reassignments_sends_targets_and_cancels_and_surfaces_partition_errors(connect):
    async with ScriptedBroker({ApiKey.ALTER_PARTITION_REASSIGNMENTS: alter_answer}) as broker:
        client = await connect(broker)
        errors = await client.alter_partition_reassignments({
            TopicPartition("t", 0): [1, 2, 4], TopicPartition("t", 1): None, TopicPartition("t", 2): [1, 9],
            TopicPartition("gone", 0): [1]})
        assert {tp: e.code for tp, e in errors.items()} == {
            TopicPartition("t", 1): ErrorCode.NO_REASSIGNMENT_IN_PROGRESS,
            TopicPartition("t", 2): ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            TopicPartition("gone", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
        assert errors[TopicPartition("t", 2)].detail == "broker 9 is not registered"
        version, request = broker.sent(ApiKey.ALTER_PARTITION_REASSIGNMENTS)[0]
        assert version == 1 and request.allow_replication_factor_change is True
        sent = {(t.name, p.partition_index): p.replicas for t in request.topics for p in t.partitions}
        assert sent == {("t", 0): [1, 2, 4], ("t", 1): None, ("t", 2): [1, 9], ("gone", 0): [1]}

        errors = await client.alter_partition_reassignments({TopicPartition("t", 0): [1, 2]},
                                                            allow_replication_factor_change=False)
        assert {tp: e.code for tp, e in errors.items()} == {TopicPartition("t", 0): ErrorCode.INVALID_REPLICATION_FACTOR}
        assert broker.sent(ApiKey.ALTER_PARTITION_REASSIGNMENTS)[1][1].allow_replication_factor_change is False


async def test_a_v0_broker_cannot_be_asked_to_keep_replication_factors(connect):
    async with ScriptedBroker({ApiKey.ALTER_PARTITION_REASSIGNMENTS: alter_answer},
                              versions={ApiKey.ALTER_PARTITION_REASSIGNMENTS: 0}) as broker:
        client = await connect(broker)
        assert await client.alter_partition_reassignments({TopicPartition("t", 0): [1, 2, 3]}) == {}
        assert broker.sent(ApiKey.ALTER_PARTITION_REASSIGNMENTS)[0][0] == 0
        with pytest.raises(UnsupportedVersionError, match="AlterPartitionReassignments v1"):
            await client.alter_partition_reassignments({TopicPartition("t", 0): [1, 2]},
                                                       allow_replication_factor_change=False)


async def test_a_refused_request_raises(connect):
    def refusal(entries: str) -> Any:
        def refuse(request: Obj, version: int) -> dict[str, Any]:
            return {"throttle_time_ms": 0, "error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                    "error_message": "not allowed", entries: []}

        return refuse

    async with ScriptedBroker({ApiKey.ALTER_PARTITION_REASSIGNMENTS: refusal("responses"),
                               ApiKey.LIST_PARTITION_REASSIGNMENTS: refusal("topics")}) as broker:
        client = await connect(broker)
        with pytest.raises(KafkaError) as raised:
            await client.alter_partition_reassignments({TopicPartition("t", 0): [1]})
        assert raised.value.code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        with pytest.raises(KafkaError):
            await client.list_partition_reassignments()


async def test_list_partition_reassignments(connect):
    def answer(request: Obj, version: int) -> dict[str, Any]:
        return {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "topics": [
            {"name": "t", "partitions": [{"partition_index": 0, "replicas": [2, 3, 4, 1], "adding_replicas": [4],
                                          "removing_replicas": [1]}]}]}

    async with ScriptedBroker({ApiKey.LIST_PARTITION_REASSIGNMENTS: answer}) as broker:
        client = await connect(broker)
        assert await client.list_partition_reassignments() == {
            TopicPartition("t", 0): PartitionReassignment([2, 3, 4, 1], [4], [1])}
        await client.list_partition_reassignments([TopicPartition("t", 3), TopicPartition("t", 0),
                                                   TopicPartition("u", 1)])
        (_, everything), (_, some) = broker.sent(ApiKey.LIST_PARTITION_REASSIGNMENTS)
        assert everything.topics is None
        assert {t.name: list(t.partition_indexes) for t in some.topics} == {"t": [0, 3], "u": [1]}


async def test_a_controller_that_cannot_be_reached_is_passed_over(connect):
    """A controller killed a moment ago is still listed until its session ends: the request goes to another
    broker instead of failing (the CLI's reassign after kill -9 of the controller)."""
    import socket

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        dead = s.getsockname()[1]

    def answer(request: Obj, version: int) -> dict[str, Any]:
        return {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "topics": []}

    async with ScriptedBroker({ApiKey.LIST_PARTITION_REASSIGNMENTS: answer}, dead_controller_port=dead) as broker:
        client = await connect(broker)
        assert await client.list_partition_reassignments() == {}
        assert len(broker.sent(ApiKey.LIST_PARTITION_REASSIGNMENTS)) == 1


async def test_a_broker_without_reassignments(connect):
    async with ScriptedBroker({}, versions={ApiKey.LIST_PARTITION_REASSIGNMENTS: -1,
                                            ApiKey.ALTER_PARTITION_REASSIGNMENTS: -1}) as broker:
        client = await connect(broker)
        with pytest.raises(UnsupportedVersionError):
            await client.list_partition_reassignments()
        with pytest.raises(UnsupportedVersionError):
            await client.alter_partition_reassignments({TopicPartition("t", 0): [1]})


async def test_elect_leaders(connect):
    def answer(request: Obj, version: int) -> dict[str, Any]:
        return {"throttle_time_ms": 0, "error_code": 0, "replica_election_results": [
            {"topic": t.topic, "partition_result": [
                {"partition_id": p, "error_code": ErrorCode.ELECTION_NOT_NEEDED if p == 0 else 0,
                 "error_message": None} for p in t.partitions]} for t in request.topic_partitions]}

    async with ScriptedBroker({ApiKey.ELECT_LEADERS: answer}) as broker:
        client = await connect(broker)
        errors = await client.elect_leaders([TopicPartition("t", 1), TopicPartition("t", 0)])
        assert {tp: e.code for tp, e in errors.items()} == {TopicPartition("t", 0): ErrorCode.ELECTION_NOT_NEEDED}
        _, request = broker.sent(ApiKey.ELECT_LEADERS)[0]
        assert request.election_type == 0 and [(t.topic, list(t.partitions)) for t in request.topic_partitions] == [
            ("t", [0, 1])]


async def test_replication_throttles_go_to_each_broker_and_the_topics(connect):
    def answer(request: Obj, version: int) -> dict[str, Any]:
        return {"throttle_time_ms": 0, "responses": [
            {"error_code": 0, "error_message": None, "resource_type": r.resource_type,
             "resource_name": r.resource_name} for r in request.resources]}

    async with ScriptedBroker({ApiKey.INCREMENTAL_ALTER_CONFIGS: answer}) as broker:
        client = await connect(broker)
        await client.set_replication_throttles(5000, [1], {"t": ("0:1,0:2", "0:4"), "u": ("1:1", "")})
        await client.clear_replication_throttles([1], ["t"])
        sent = [(r.resource_type, r.resource_name, [(c.name, c.config_operation, c.value) for c in r.configs])
                for _, req in broker.sent(ApiKey.INCREMENTAL_ALTER_CONFIGS) for r in req.resources]
        assert sorted(sent) == sorted([
            (4, "1", [("leader.replication.throttled.rate", 0, "5000"), ("follower.replication.throttled.rate", 0, "5000")]),
            (2, "t", [("leader.replication.throttled.replicas", 0, "0:1,0:2"),
                      ("follower.replication.throttled.replicas", 0, "0:4")]),
            (2, "u", [("leader.replication.throttled.replicas", 0, "1:1"),
                      ("follower.replication.throttled.replicas", 0, "")]),
            (4, "1", [("leader.replication.throttled.rate", 1, None), ("follower.replication.throttled.rate", 1, None)]),
            (2, "t", [("leader.replication.throttled.replicas", 1, None),
                      ("follower.replication.throttled.replicas", 1, None)])])
        # the topics of one change travel together, each broker's configs to that broker
        assert [len(req.resources) for _, req in broker.sent(ApiKey.INCREMENTAL_ALTER_CONFIGS)] in ([1, 2, 1, 1],
                                                                                                   [2, 1, 1, 1])
