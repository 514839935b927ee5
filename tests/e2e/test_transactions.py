"""Transactions against a real ``python -m broker``: confluent-kafka, aiokafka and kafka-python transactional
producers, read_committed and read_uncommitted consumers (theirs and ours), timeouts, fencing, the
transactions CLI and metrics, and hostile transactional requests on the wire.

The consume-transform-produce loop with a kill -9 of the broker is in ``test_transactions_crash``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest
from e2e_helpers import RawClient

from protocol.api import ApiKey
from protocol.error_codes import ErrorCode as E
from protocol.records import encode_batch

PARTITIONS = 3


def create_topic(bootstrap: str, topic: str, partitions: int = PARTITIONS) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(topic, partitions, 1)]).values():
        future.result(30)


def read_topic(bootstrap: str, topic: str, isolation: str, partitions: int = PARTITIONS,
               timeout: float = 60.0) -> dict[int, list[bytes]]:
    """Every value of ``topic`` per partition, from the start to the end a confluent consumer sees at
    ``isolation`` (it stops at partition EOF: the LSO for read_committed)."""
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"reader-{topic}-{isolation}",
                  "isolation.level": isolation, "enable.partition.eof": True, "enable.auto.commit": False})
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    out: dict[int, list[bytes]] = {p: [] for p in range(partitions)}
    at_eof: set[int] = set()
    deadline = time.monotonic() + timeout
    try:
        while len(at_eof) < partitions and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error():
                if m.error().code() == -191:  # _PARTITION_EOF
                    at_eof.add(m.partition())
                    continue
                raise AssertionError(m.error())
            at_eof.discard(m.partition())
            out[m.partition()].append(m.value())
    finally:
        c.close()
    assert len(at_eof) == partitions, f"no EOF on {set(range(partitions)) - at_eof}"
    return out


def end_offsets(bootstrap: str, topic: str, isolation: int, partitions: int = PARTITIONS) -> list[int]:
    host, port = bootstrap.split(":")
    with RawClient(host, int(port)) as c:
        resp = c.request(ApiKey.LIST_OFFSETS, 7, {
            "replica_id": -1, "isolation_level": isolation, "timeout_ms": 10_000,
            "topics": [{"name": topic, "partitions": [
                {"partition_index": p, "current_leader_epoch": -1, "timestamp": -1} for p in range(partitions)]}]})
    return [p.offset for p in resp.topics[0].partitions]


def values(prefix: str, n: int) -> list[bytes]:
    return [f"{prefix}-{i}".encode() for i in range(n)]


def by_partition(vals: list[bytes]) -> dict[int, list[bytes]]:
    out: dict[int, list[bytes]] = {p: [] for p in range(PARTITIONS)}
    for i, v in enumerate(vals):
        out[i % PARTITIONS].append(v)
    return out


def merge(*parts: dict[int, list[bytes]]) -> dict[int, list[bytes]]:
    out: dict[int, list[bytes]] = {p: [] for p in range(PARTITIONS)}
    for part in parts:
        for p, vs in part.items():
            out[p] += vs
    return out


def confluent_transactions(bootstrap: str, topic: str, batches: list[tuple[str, bool, int]],
                           partitions: int = PARTITIONS) -> Any:
    """A confluent-kafka transactional producer (id = topic) running ``(prefix, commit, n)`` transactions,
    values spread round-robin over the partitions; returns the producer."""
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": topic})
    p.init_transactions(30)
    for prefix, commit, n in batches:
        p.begin_transaction()
        for i, v in enumerate(values(prefix, n)):
            p.produce(topic, value=v, partition=i % partitions)
        p.flush(30)  # on the broker before an abort (librdkafka drops what it has not sent)
        (p.commit_transaction if commit else p.abort_transaction)(30)
    return p


def wait_markers(bootstrap: str, topic: str, partitions: int = PARTITIONS) -> None:
    """Until every transaction on ``topic`` has its marker (written after EndTxn is answered: until then the
    last stable offset would end a read_committed read early)."""
    deadline = time.monotonic() + 60  # a liveness bound
    while end_offsets(bootstrap, topic, 1, partitions) != end_offsets(bootstrap, topic, 0, partitions):
        assert time.monotonic() < deadline, "a transaction's markers were never written"
        time.sleep(0.05)


def check_isolation(bootstrap: str, topic: str, committed: dict[int, list[bytes]],
                    every: dict[int, list[bytes]]) -> None:
    """read_committed sees exactly the committed records, in order; read_uncommitted sees everything
    produced (and so, since each value is accounted for, never a control record)."""
    wait_markers(bootstrap, topic)
    assert read_topic(bootstrap, topic, "read_committed") == committed
    assert read_topic(bootstrap, topic, "read_uncommitted") == every


# -- the three transactional producers ------------------------------------------------------


def test_confluent_commit_and_abort_across_partitions(shared_broker: Any) -> None:
    bs = shared_broker.bootstrap_servers
    create_topic(bs, "txn-confluent")
    batches = [("c1", True, 30), ("a1", False, 15), ("c2", True, 9), ("a2", False, 6), ("c3", True, 12)]
    confluent_transactions(bs, "txn-confluent", batches)
    committed = merge(*[by_partition(values(prefix, n)) for prefix, commit, n in batches if commit])
    every = merge(*[by_partition(values(prefix, n)) for prefix, _, n in batches])
    check_isolation(bs, "txn-confluent", committed, every)
    # every transaction ended: the last stable offset is the end of the log
    assert end_offsets(bs, "txn-confluent", 1) == end_offsets(bs, "txn-confluent", 0)


def test_aiokafka_commit_and_abort_across_partitions(shared_broker: Any) -> None:
    from aiokafka import AIOKafkaProducer

    bs = shared_broker.bootstrap_servers
    create_topic(bs, "txn-aiokafka")

    async def run() -> None:
        p = AIOKafkaProducer(bootstrap_servers=bs, transactional_id="txn-aiokafka", enable_idempotence=True)
        await p.start()
        try:
            async with p.transaction():
                for i, v in enumerate(values("c1", 12)):
                    await p.send("txn-aiokafka", v, partition=i % PARTITIONS)
            await p.begin_transaction()
            futures = [await p.send("txn-aiokafka", v, partition=i % PARTITIONS)
                       for i, v in enumerate(values("a1", 9))]
            await asyncio.gather(*futures)
            await p.abort_transaction()
            async with p.transaction():
                for i, v in enumerate(values("c2", 6)):
                    await p.send("txn-aiokafka", v, partition=i % PARTITIONS)
        finally:
            await p.stop()

    asyncio.run(run())
    committed = merge(by_partition(values("c1", 12)), by_partition(values("c2", 6)))
    every = merge(by_partition(values("c1", 12)), by_partition(values("a1", 9)), by_partition(values("c2", 6)))
    check_isolation(bs, "txn-aiokafka", committed, every)


def test_kafka_python_commit_and_abort_across_partitions(shared_broker: Any) -> None:
    from kafka import KafkaProducer

    bs = shared_broker.bootstrap_servers
    create_topic(bs, "txn-kafka-python")
    p = KafkaProducer(bootstrap_servers=bs, transactional_id="txn-kafka-python")
    try:
        p.init_transactions()
        for prefix, commit, n in (("c1", True, 9), ("a1", False, 12), ("c2", True, 3)):
            p.begin_transaction()
            for i, v in enumerate(values(prefix, n)):
                p.send("txn-kafka-python", v, partition=i % PARTITIONS)
            p.flush()
            if commit:
                p.commit_transaction()
            else:
                p.abort_transaction()
    finally:
        p.close()
    committed = merge(by_partition(values("c1", 9)), by_partition(values("c2", 3)))
    every = merge(by_partition(values("c1", 9)), by_partition(values("a1", 12)), by_partition(values("c2", 3)))
    check_isolation(bs, "txn-kafka-python", committed, every)


def test_our_consumer_honours_read_committed(shared_broker: Any) -> None:
    from client import TopicPartition
    from client.sync import SyncConsumer

    bs = shared_broker.bootstrap_servers
    create_topic(bs, "txn-ours", 1)
    confluent_transactions(bs, "txn-ours", [("c1", True, 4), ("a1", False, 4), ("c2", True, 4), ("a2", False, 4)], 1)
    end = end_offsets(bs, "txn-ours", 1, 1)[0]
    assert end == 20  # 16 records and 4 markers
    for isolation, expected in (("read_committed", values("c1", 4) + values("c2", 4)),
                                ("read_uncommitted", values("c1", 4) + values("a1", 4) + values("c2", 4)
                                 + values("a2", 4))):
        tp = TopicPartition("txn-ours", 0)
        with SyncConsumer(bootstrap_servers=bs, isolation_level=isolation) as c:
            c.assign([tp])
            c.seek(tp, 0)
            got: list[bytes] = []
            deadline = time.monotonic() + 60
            while c.position(tp) < end and time.monotonic() < deadline:
                for recs in c.getmany(tp, timeout_ms=200).values():
                    got += [r.value for r in recs]
            assert got == expected
            assert c.position(tp) == end  # past the trailing marker and aborted records


# -- timeouts and fencing ---------------------------------------------------------------------


def test_abandoned_transaction_is_aborted_after_its_timeout(shared_broker: Any) -> None:
    """A producer stops mid-transaction: after transaction.timeout.ms its coordinator aborts it, the last
    stable offset moves on, and read_committed consumers see what others committed after it."""
    from confluent_kafka import KafkaException, Producer

    bs = shared_broker.bootstrap_servers
    create_topic(bs, "txn-timeout", 1)
    stuck = Producer({"bootstrap.servers": bs, "transactional.id": "txn-timeout-stuck",
                      "transaction.timeout.ms": 3000})
    stuck.init_transactions(30)
    began = time.monotonic()  # before the transaction started on the broker: its timeout runs from later
    stuck.begin_transaction()
    for v in values("stuck", 3):
        stuck.produce("txn-timeout", value=v, partition=0)
    stuck.flush(30)  # and then nothing: no commit, no abort
    other = Producer({"bootstrap.servers": bs, "transactional.id": "txn-timeout-other"})
    other.init_transactions(30)
    other.begin_transaction()
    for v in values("later", 2):
        other.produce("txn-timeout", value=v, partition=0)
    other.commit_transaction(30)
    lso = end_offsets(bs, "txn-timeout", 1, 1)
    if time.monotonic() - began < 3.0:  # (on a machine so busy that this took 3 s, it may be aborted already)
        assert lso == [0]  # the open transaction holds the LSO at its start
    deadline = time.monotonic() + 60
    while end_offsets(bs, "txn-timeout", 1, 1) != end_offsets(bs, "txn-timeout", 0, 1):
        assert time.monotonic() < deadline, "the abandoned transaction was never aborted"
        time.sleep(0.2)
    assert read_topic(bs, "txn-timeout", "read_committed", 1) == {0: values("later", 2)}
    # the timed-out producer was fenced by the abort's epoch bump
    with pytest.raises(KafkaException):
        stuck.commit_transaction(10)


def test_a_second_producer_with_the_same_id_fences_the_first(shared_broker: Any) -> None:
    from confluent_kafka import KafkaException, Producer

    bs = shared_broker.bootstrap_servers
    create_topic(bs, "txn-fence", 1)
    zombie = Producer({"bootstrap.servers": bs, "transactional.id": "txn-fence"})
    zombie.init_transactions(30)
    zombie.begin_transaction()
    zombie.produce("txn-fence", value=b"zombie", partition=0)
    zombie.flush(30)
    successor = Producer({"bootstrap.servers": bs, "transactional.id": "txn-fence"})
    successor.init_transactions(30)  # aborts the zombie's open transaction and bumps the epoch
    successor.begin_transaction()
    successor.produce("txn-fence", value=b"successor", partition=0)
    successor.commit_transaction(30)
    with pytest.raises(KafkaException) as info:
        zombie.commit_transaction(10)
    assert info.value.args[0].fatal() or "fenced" in str(info.value).lower()
    wait_markers(bs, "txn-fence", 1)
    assert read_topic(bs, "txn-fence", "read_committed", 1) == {0: [b"successor"]}
    assert read_topic(bs, "txn-fence", "read_uncommitted", 1) == {0: [b"zombie", b"successor"]}


# -- bad input on the wire ---------------------------------------------------------------------


@contextlib.contextmanager
def coordinator(bootstrap: str, transactional_id: str) -> Iterator[RawClient]:
    host, port = bootstrap.split(":")
    with RawClient(host, int(port)) as c:
        found = c.request(ApiKey.FIND_COORDINATOR, 3, {"key": transactional_id, "key_type": 1})
        assert found.error_code == E.NONE
        yield c


def _init(c: RawClient, tid: str) -> tuple[int, int]:
    resp = c.request(ApiKey.INIT_PRODUCER_ID, 4, {"transactional_id": tid, "transaction_timeout_ms": 60_000,
                                                 "producer_id": -1, "producer_epoch": -1})
    assert resp.error_code == E.NONE
    return resp.producer_id, resp.producer_epoch


def _txn_produce(c: RawClient, tid: str, pid: int, epoch: int, seq: int, topic: str, partition: int,
                 version: int = 9) -> int:
    batch = encode_batch([(None, b"x", [], None)], producer_id=pid, producer_epoch=epoch, base_sequence=seq,
                         is_transactional=True)
    resp = c.request(ApiKey.PRODUCE, version, {"transactional_id": tid, "acks": -1, "timeout_ms": 10_000,
                                               "topic_data": [{"name": topic, "partition_data": [
                                                   {"index": partition, "records": batch}]}]})
    return resp.responses[0].partition_responses[0].error_code


def _add(c: RawClient, tid: str, pid: int, epoch: int, topic: str, partition: int) -> int:
    resp = c.request(ApiKey.ADD_PARTITIONS_TO_TXN, 3, {
        "v3_and_below_transactional_id": tid, "v3_and_below_producer_id": pid, "v3_and_below_producer_epoch": epoch,
        "v3_and_below_topics": [{"name": topic, "partitions": [partition]}]})
    return resp.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code


def _end(c: RawClient, tid: str, pid: int, epoch: int, commit: bool) -> int:
    return c.request(ApiKey.END_TXN, 3, {"transactional_id": tid, "producer_id": pid, "producer_epoch": epoch,
                                         "committed": commit}).error_code


def test_bad_transactional_requests_get_kafkas_errors_and_write_nothing(shared_broker: Any) -> None:
    bs = shared_broker.bootstrap_servers
    create_topic(bs, "txn-bad", 2)
    with coordinator(bs, "txn-bad") as c:
        pid, epoch = _init(c, "txn-bad")
        assert _end(c, "txn-bad", pid, epoch, True) == E.INVALID_TXN_STATE          # EndTxn without a transaction
        assert _end(c, "txn-bad", pid + 1, epoch, True) == E.INVALID_PRODUCER_ID_MAPPING  # unknown producer id
        assert _end(c, "txn-bad", pid, epoch + 1, True) == E.PRODUCER_FENCED         # wrong epoch
        assert _end(c, "txn-bad", pid, epoch + 1, True) == E.PRODUCER_FENCED
        old = c.request(ApiKey.END_TXN, 1, {"transactional_id": "txn-bad", "producer_id": pid,
                                             "producer_epoch": epoch + 1, "committed": True})
        assert old.error_code == E.INVALID_PRODUCER_EPOCH                           # too old to know FENCED
        # a partition not added to the transaction: refused before anything is written
        assert _txn_produce(c, "txn-bad", pid, epoch, 0, "txn-bad", 0) == E.INVALID_TXN_STATE
        assert _txn_produce(c, "txn-bad", pid, epoch, 0, "txn-bad", 0, version=11) == E.TRANSACTION_ABORTABLE
        assert end_offsets(bs, "txn-bad", 0, 2) == [0, 0]
        assert _add(c, "txn-bad", pid, epoch, "txn-bad", 0) == E.NONE
        assert _add(c, "txn-bad", pid, epoch, "txn-bad", 7) == E.UNKNOWN_TOPIC_OR_PARTITION
        assert _txn_produce(c, "txn-bad", pid, epoch, 0, "txn-bad", 0) == E.NONE
        assert _txn_produce(c, "txn-bad", pid, epoch, 1, "txn-bad", 1) == E.INVALID_TXN_STATE  # partition 1: not added
        assert _txn_produce(c, "txn-bad", pid, epoch + 5, 0, "txn-bad", 0) == E.INVALID_PRODUCER_EPOCH
        assert end_offsets(bs, "txn-bad", 0, 2) == [1, 0] and end_offsets(bs, "txn-bad", 1, 2) == [0, 0]
        assert _end(c, "txn-bad", pid, epoch, False) == E.NONE
        deadline = time.monotonic() + 60  # a liveness bound
        while end_offsets(bs, "txn-bad", 1, 2) != [2, 0]:  # record + ABORT marker; LSO at the end
            assert time.monotonic() < deadline
            time.sleep(0.05)
        # a transactional id the broker does not coordinate
        other = c.request(ApiKey.INIT_PRODUCER_ID, 4, {"transactional_id": "", "transaction_timeout_ms": 1000,
                                                       "producer_id": -1, "producer_epoch": -1})
        assert other.error_code == E.INVALID_REQUEST
        assert c.request(ApiKey.INIT_PRODUCER_ID, 4, {"transactional_id": "t2", "transaction_timeout_ms": 10**9,
                                                      "producer_id": -1, "producer_epoch": -1}).error_code in (
            E.INVALID_TRANSACTION_TIMEOUT, E.NOT_COORDINATOR)
        # WriteTxnMarkers from a stale coordinator is fenced (the partition saw coordinator epoch >= 0)
        resp = c.request(ApiKey.WRITE_TXN_MARKERS, 1, {"markers": [{
            "producer_id": pid, "producer_epoch": epoch, "transaction_result": True, "coordinator_epoch": -5,
            "topics": [{"name": "txn-bad", "partition_indexes": [0]}]}]})
        assert resp.markers[0].topics[0].partitions[0].error_code == E.TRANSACTION_COORDINATOR_FENCED
    assert shared_broker.alive()


# -- describe, list, CLI, metrics -------------------------------------------------------------


def test_describe_list_producers_and_cli(shared_broker: Any) -> None:
    from confluent_kafka import Producer

    bs = shared_broker.bootstrap_servers
    create_topic(bs, "txn-ops", 1)
    p = Producer({"bootstrap.servers": bs, "transactional.id": "txn-ops"})
    p.init_transactions(30)
    p.begin_transaction()
    p.produce("txn-ops", value=b"open", partition=0)
    p.flush(30)
    def cli(*args: str) -> Any:
        out = subprocess.run([sys.executable, "-m", "kbroker_cli", "--bootstrap-servers", bs, *args],
                             capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        return out.stdout

    listed = json.loads(cli("transactions", "list", "--json"))
    assert {"transactional_id": "txn-ops", "state": "Ongoing"}.items() <= next(
        t for t in listed if t["transactional_id"] == "txn-ops").items()
    described = json.loads(cli("transactions", "describe", "txn-ops", "--json"))
    assert described[0]["state"] == "Ongoing" and described[0]["partitions"] == ["txn-ops-0"]
    assert "txn-ops" in cli("transactions", "list")
    host, port = bs.split(":")
    with RawClient(host, int(port)) as c:
        resp = c.request(ApiKey.DESCRIBE_PRODUCERS, 0, {"topics": [{"name": "txn-ops", "partition_indexes": [0]}]})
        (producer,) = resp.topics[0].partitions[0].active_producers
        assert producer.current_txn_start_offset == 0 and producer.producer_epoch == 0
    p.commit_transaction(30)
    states = []
    while "CompleteCommit" not in states:  # PrepareCommit until the markers are written
        states.append(json.loads(cli("transactions", "describe", "txn-ops", "--json"))[0]["state"])
        assert set(states) <= {"PrepareCommit", "CompleteCommit"} and len(states) < 50, states


def test_transaction_metrics(kbroker: Any) -> None:
    """Open transactions by state, commits and aborts, and the LSO lag of a partition an open transaction holds."""
    from confluent_kafka import Producer
    from prometheus_client import generate_latest

    def scrape() -> str:
        return str(kbroker.call(lambda: generate_latest(kbroker.core.metrics.registry)).decode())

    bs = kbroker.bootstrap_servers
    create_topic(bs, "txn-metrics", 1)
    p = Producer({"bootstrap.servers": bs, "transactional.id": "txn-metrics"})
    p.init_transactions(30)
    p.begin_transaction()
    for v in values("open", 3):
        p.produce("txn-metrics", value=v, partition=0)
    p.flush(30)
    text = scrape()
    assert 'kbroker_partition_lso_lag{partition="0",topic="txn-metrics"} 3.0' in text
    assert "kbroker_transactions_ongoing 1.0" in text and 'kbroker_transactions{state="Ongoing"} 1.0' in text
    p.commit_transaction(30)
    p.begin_transaction()
    p.produce("txn-metrics", value=b"x", partition=0)
    p.flush(30)
    p.abort_transaction(30)
    text = scrape()
    deadline = time.monotonic() + 60  # a liveness bound
    while "kbroker_transactions_ongoing 0.0" not in text:  # the markers are written after EndTxn is answered
        assert time.monotonic() < deadline
        time.sleep(0.05)
        text = scrape()
    assert 'kbroker_partition_lso_lag{partition="0",topic="txn-metrics"} 0.0' in text
    assert "kbroker_transaction_commits_total 1.0" in text and "kbroker_transaction_aborts_total 1.0" in text


def test_transactional_offsets_show_only_after_commit(shared_broker: Any) -> None:
    """TxnOffsetCommit needs the offsets partition in the transaction; its offsets stay pending (OffsetFetch
    with require_stable answers UNSTABLE_OFFSET_COMMIT) until the COMMIT marker, and an abort drops them."""
    bs = shared_broker.bootstrap_servers
    create_topic(bs, "txn-offsets", 1)

    def commit_offset(c: RawClient, pid: int, epoch: int, group: str, offset: int) -> int:
        resp = c.request(ApiKey.TXN_OFFSET_COMMIT, 3, {
            "transactional_id": "txn-offsets", "group_id": group, "producer_id": pid, "producer_epoch": epoch,
            "generation_id": -1, "member_id": "", "group_instance_id": None, "topics": [{"name": "txn-offsets",
            "partitions": [{"partition_index": 0, "committed_offset": offset, "committed_leader_epoch": -1,
                            "committed_metadata": ""}]}]})
        return resp.topics[0].partitions[0].error_code

    def fetched(c: RawClient, group: str, stable: bool) -> tuple[int, int]:
        resp = c.request(ApiKey.OFFSET_FETCH, 7, {"group_id": group, "require_stable": stable,
                                                  "topics": [{"name": "txn-offsets", "partition_indexes": [0]}]})
        part = resp.topics[0].partitions[0]
        return part.error_code, part.committed_offset

    def settled(c: RawClient, group: str) -> tuple[int, int]:
        deadline = time.monotonic() + 60  # a liveness bound
        while (got := fetched(c, group, True))[0] == E.UNSTABLE_OFFSET_COMMIT:  # until the marker is written
            assert time.monotonic() < deadline
            time.sleep(0.05)
        return got

    with coordinator(bs, "txn-offsets") as c:
        pid, epoch = _init(c, "txn-offsets")
        assert commit_offset(c, pid, epoch, "g-offsets", 5) == E.INVALID_TXN_STATE  # no AddOffsetsToTxn
        for outcome, offset in ((True, 7), (False, 9)):
            # the previous transaction's end may still be completing (its markers are written before the
            # coordinator's own record): CONCURRENT_TRANSACTIONS until then, which clients retry
            deadline = time.monotonic() + 60  # a liveness bound
            while (added := c.request(ApiKey.ADD_OFFSETS_TO_TXN, 3, {
                    "transactional_id": "txn-offsets", "producer_id": pid, "producer_epoch": epoch,
                    "group_id": "g-offsets"}).error_code) == E.CONCURRENT_TRANSACTIONS:
                assert time.monotonic() < deadline
                time.sleep(0.05)
            assert added == E.NONE
            assert commit_offset(c, pid, epoch, "g-offsets", offset) == E.NONE
            assert fetched(c, "g-offsets", True) == (E.UNSTABLE_OFFSET_COMMIT, -1)
            assert fetched(c, "g-offsets", False) == (E.NONE, -1 if outcome else 7)
            assert _end(c, "txn-offsets", pid, epoch, outcome) == E.NONE
            assert settled(c, "g-offsets") == (E.NONE, 7)  # committed: 7; the aborted 9 never shows


def test_spark_reader_reads_committed_ranges(shared_broker: Any) -> None:
    """The Spark source's executor path (fetched batches decoded into Arrow columns) with
    ``kafka.isolation.level=read_committed``: the driver's latest offset is the LSO, a range ends on time even
    when it ends in markers and aborted records, and a range cut inside transactions holds exactly the
    committed records between its bounds (read_uncommitted: every data record between them)."""
    pytest.importorskip("pyarrow")
    pytest.importorskip("pyspark")
    from client.types import TopicPartition
    from spark_jobs._reader import OffsetReader, consumer_kwargs
    from spark_jobs.source import KBrokerPartition, _read_partition

    bs = shared_broker.bootstrap_servers
    create_topic(bs, "txn-spark", 1)
    p = confluent_transactions(bs, "txn-spark", [("c1", True, 5), ("a1", False, 5), ("c2", True, 5),
                                                 ("a2", False, 5)], 1)
    p.begin_transaction()
    p.produce("txn-spark", value=b"open", partition=0)  # left open: the LSO stays before it
    p.flush(30)
    options = {"kafka.bootstrap.servers": bs, "kafka.isolation.level": "read_committed",
               "kafkaconsumer.polltimeoutms": "20000"}
    deadline = time.monotonic() + 60  # a liveness bound
    with OffsetReader(consumer_kwargs(options)) as reader:
        while (end := reader.latest([TopicPartition("txn-spark", 0)])[TopicPartition("txn-spark", 0)]) != 24:
            assert time.monotonic() < deadline and end < 24  # 20 records and 4 markers, not the open one
            time.sleep(0.05)
    # offsets: c1 0-4, marker 5, a1 6-10, marker 11, c2 12-16, marker 17, a2 18-22, marker 23, open 24
    value_at = dict(enumerate(values("c1", 5))) | {6 + i: v for i, v in enumerate(values("a1", 5))} | {
        12 + i: v for i, v in enumerate(values("c2", 5))} | {18 + i: v for i, v in enumerate(values("a2", 5))}

    def read(isolation: str, start: int, stop: int) -> list[tuple[int, bytes]]:
        opts = options | {"kafka.isolation.level": isolation}
        rows = [r for b in _read_partition(opts, KBrokerPartition("txn-spark", 0, start, stop), False)
                for r in b.to_pylist()]
        assert all(r["topic"] == "txn-spark" and r["partition"] == 0 for r in rows)
        return [(r["offset"], r["value"]) for r in rows]

    committed = [*range(5), *range(12, 17)]
    for start, stop in ((0, end), (3, 14), (6, 12), (13, 18), (4, 23)):
        assert read("read_committed", start, stop) == [(o, value_at[o]) for o in committed if start <= o < stop]
    assert read("read_uncommitted", 3, 14) == [(o, value_at[o]) for o in (3, 4, 6, 7, 8, 9, 10, 12, 13)]
    p.abort_transaction(30)
