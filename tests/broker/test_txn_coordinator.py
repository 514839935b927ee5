"""The pure transaction coordinator: states, epochs and fencing, writes held until durable, markers,
timeouts, id expiry, reload — driven through its effects with an injected clock (no I/O)."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from broker.coordinator.txn.coordinator import (
    Effects,
    MarkerRequest,
    TransactionCoordinator,
    TxnConfig,
    TxnState,
)
from broker.coordinator.write import Write
from protocol.error_codes import ErrorCode as E

START = 1_700_000_000_000
OFFSETS = "__consumer_offsets"


class Harness:
    """Drives one coordinator: writes commit (or fail) on request, markers are collected."""

    def __init__(self, *, config: TxnConfig | None = None, epoch: int = 3, auto_commit: bool = True) -> None:
        self.now = START
        self.ids = itertools.count(100)
        self.tokens = itertools.count(1)
        self.c = TransactionCoordinator(config or TxnConfig(max_timeout_ms=120_000, id_expiration_ms=3_600_000),
                                        partition=7, coordinator_epoch=epoch, now_ms=self.now,
                                        allocate_producer_id=lambda: next(self.ids),
                                        partition_count=lambda t: {"a": 3, "b": 2, OFFSETS: 50}.get(t),
                                        offsets_partition=lambda g: (OFFSETS, len(g) % 50))
        self.auto_commit = auto_commit
        self.replies: dict[Any, dict[str, Any]] = {}
        self.writes: list[Write] = []
        self.log: list[tuple[bytes, bytes | None]] = []
        self.markers: list[MarkerRequest] = []
        self.completed: list[tuple[str, bool]] = []

    def absorb(self, fx: Effects) -> None:
        for token, body in fx.replies:
            self.replies[token] = body
        self.markers += fx.markers
        self.completed += fx.completed
        self.writes += fx.writes
        while self.auto_commit and self.writes:
            self.commit_next()

    def commit_next(self) -> None:
        w = self.writes.pop(0)
        self.log += w.records
        self.absorb(self.c.write_committed(self.now, w.write_id))

    def fail_next(self, code: int = E.NOT_LEADER_OR_FOLLOWER) -> None:
        w = self.writes.pop(0)
        self.absorb(self.c.write_failed(self.now, w.write_id, code))

    def call(self, method: str, version: int, **req: Any) -> Any:
        token = next(self.tokens)
        self.absorb(getattr(self.c, method)(self.now, version, req, token))
        return self.replies.get(token)

    def init(self, tid: str = "t", timeout: int = 60_000, version: int = 4, **kw: Any) -> Any:
        return self.call("init_producer_id", version, transactional_id=tid, transaction_timeout_ms=timeout, **kw)

    def add(self, tid: str, pid: int, epoch: int, *tps: tuple[str, int], version: int = 3) -> Any:
        topics: dict[str, list[int]] = {}
        for t, p in tps:
            topics.setdefault(t, []).append(p)
        return self.call("add_partitions", version, v3_and_below_transactional_id=tid, v3_and_below_producer_id=pid,
                         v3_and_below_producer_epoch=epoch,
                         v3_and_below_topics=[{"name": t, "partitions": ps} for t, ps in topics.items()])

    def end(self, tid: str, pid: int, epoch: int, commit: bool, version: int = 3) -> Any:
        return self.call("end_txn", version, transactional_id=tid, producer_id=pid, producer_epoch=epoch,
                         committed=commit)

    def write_markers(self) -> None:
        markers, self.markers = self.markers, []
        for m in markers:
            self.absorb(self.c.markers_written(self.now, m.transactional_id, m.producer_id, m.producer_epoch))

    def advance(self, ms: int) -> None:
        self.now += ms
        self.absorb(self.c.poll(self.now))

    def state(self, tid: str = "t") -> TxnState:
        return self.c.txns[tid].state


def codes(resp: Any) -> dict[tuple[str, int], int]:
    return {(t["name"], p["partition_index"]): p["partition_error_code"]
            for t in resp["results_by_topic_v3_and_below"] for p in t["results_by_partition"]}


def test_commit_round_trip_writes_every_step_and_marks_every_partition() -> None:
    h = Harness()
    r = h.init()
    assert (r["error_code"], r["producer_id"], r["producer_epoch"]) == (E.NONE, 100, 0)
    assert codes(h.add("t", 100, 0, ("a", 0), ("b", 1))) == {("a", 0): E.NONE, ("b", 1): E.NONE}
    assert h.state() is TxnState.ONGOING
    assert h.call("add_offsets", 3, transactional_id="t", producer_id=100, producer_epoch=0,
                  group_id="grp")["error_code"] == E.NONE
    assert h.c.txns["t"].partitions == {("a", 0), ("b", 1), (OFFSETS, 3)}
    assert h.end("t", 100, 0, True)["error_code"] == E.NONE
    assert h.state() is TxnState.PREPARE_COMMIT
    (m,) = h.markers
    assert (m.commit, m.producer_id, m.producer_epoch, m.coordinator_epoch) == (True, 100, 0, 3)
    assert m.partitions == {("a", 0), ("b", 1), (OFFSETS, 3)}
    # while markers are out, the producer waits
    assert codes(h.add("t", 100, 0, ("a", 1)))[("a", 1)] == E.CONCURRENT_TRANSACTIONS
    h.write_markers()
    assert h.state() is TxnState.COMPLETE_COMMIT and h.c.txns["t"].partitions == set()
    assert h.completed == [("t", True)]
    # a retried EndTxn of a completed commit is answered NONE; a conflicting one INVALID_TXN_STATE
    assert h.end("t", 100, 0, True)["error_code"] == E.NONE
    assert h.end("t", 100, 0, False)["error_code"] == E.INVALID_TXN_STATE
    # init, add, add offsets, prepare, complete: five durable state changes (nothing for the refused ones)
    assert len(h.log) == 5


def test_replies_wait_for_the_write_and_a_failed_write_changes_nothing() -> None:
    h = Harness(auto_commit=False)
    token = next(h.tokens)
    h.absorb(h.c.init_producer_id(h.now, 4, {"transactional_id": "t", "transaction_timeout_ms": 1000}, token))
    assert token not in h.replies and h.c.txns["t"].pending is not None
    # another request meanwhile: retry later
    assert h.init()["error_code"] == E.CONCURRENT_TRANSACTIONS
    h.commit_next()
    assert h.replies[token]["producer_epoch"] == 0
    r = h.add("t", 100, 0, ("a", 0))
    assert r is None
    h.fail_next(E.NOT_LEADER_OR_FOLLOWER)
    assert codes(h.replies[max(h.replies)]) == {("a", 0): E.NOT_COORDINATOR}
    assert h.state() is TxnState.EMPTY and h.c.txns["t"].partitions == set() and h.c.txns["t"].pending is None


def test_bad_requests_get_kafkas_errors_and_write_nothing() -> None:
    h = Harness()
    assert h.init(timeout=0)["error_code"] == E.INVALID_TRANSACTION_TIMEOUT
    assert h.init(timeout=120_001)["error_code"] == E.INVALID_TRANSACTION_TIMEOUT
    assert h.init(tid="")["error_code"] == E.INVALID_REQUEST
    assert h.log == []
    h.init()
    assert codes(h.add("t", 999, 0, ("a", 0))) == {("a", 0): E.INVALID_PRODUCER_ID_MAPPING}
    assert codes(h.add("nobody", 100, 0, ("a", 0))) == {("a", 0): E.INVALID_PRODUCER_ID_MAPPING}
    assert codes(h.add("t", 100, 5, ("a", 0))) == {("a", 0): E.PRODUCER_FENCED}
    assert codes(h.add("t", 100, 0, ("a", 0), ("a", 7), ("zz", 0))) == {
        ("a", 0): E.OPERATION_NOT_ATTEMPTED, ("a", 7): E.UNKNOWN_TOPIC_OR_PARTITION,
        ("zz", 0): E.UNKNOWN_TOPIC_OR_PARTITION}
    assert h.end("t", 100, 0, True)["error_code"] == E.INVALID_TXN_STATE   # EndTxn without a transaction
    assert h.end("t", 100, 1, True)["error_code"] == E.PRODUCER_FENCED
    assert h.state() is TxnState.EMPTY and len(h.log) == 1


def test_a_second_producer_fences_the_first_and_aborts_its_transaction() -> None:
    h = Harness()
    h.init()
    h.add("t", 100, 0, ("a", 0))
    r = h.init()  # the same transactional id starts again while a transaction is open
    assert r["error_code"] == E.CONCURRENT_TRANSACTIONS
    assert h.state() is TxnState.PREPARE_ABORT and h.c.txns["t"].producer_epoch == 1
    (m,) = h.markers
    assert (m.commit, m.producer_epoch) == (False, 1)        # the markers carry the fencing epoch
    assert h.init()["error_code"] == E.CONCURRENT_TRANSACTIONS  # still aborting
    h.write_markers()
    r = h.init()
    assert (r["error_code"], r["producer_id"], r["producer_epoch"]) == (E.NONE, 100, 2)
    # the zombie is fenced everywhere
    assert codes(h.add("t", 100, 0, ("a", 1)))[("a", 1)] == E.PRODUCER_FENCED
    assert h.end("t", 100, 0, True)["error_code"] == E.PRODUCER_FENCED


def test_timeout_aborts_with_a_fencing_epoch() -> None:
    h = Harness()
    h.init(timeout=5_000)
    h.add("t", 100, 0, ("a", 0))
    h.advance(4_999)
    assert h.state() is TxnState.ONGOING and not h.markers
    h.advance(2)
    assert h.state() is TxnState.PREPARE_ABORT and h.c.txns["t"].producer_epoch == 1
    h.write_markers()
    assert h.state() is TxnState.COMPLETE_ABORT and h.completed == [("t", False)]
    assert h.end("t", 100, 0, True)["error_code"] == E.PRODUCER_FENCED


def test_kip360_epoch_bump_and_retry() -> None:
    h = Harness()
    h.init()
    r = h.init(version=4, producer_id=100, producer_epoch=0)      # the producer bumps its own epoch
    assert (r["error_code"], r["producer_epoch"]) == (E.NONE, 1)
    r = h.init(version=4, producer_id=100, producer_epoch=0)      # retried: it never saw the answer
    assert (r["error_code"], r["producer_epoch"]) == (E.NONE, 1)
    assert h.init(version=4, producer_id=100, producer_epoch=7)["error_code"] == E.PRODUCER_FENCED
    assert h.init(version=4, producer_id=555, producer_epoch=0)["error_code"] == E.PRODUCER_FENCED


def test_exhausted_epoch_rotates_the_producer_id() -> None:
    h = Harness()
    h.init()
    h.c.txns["t"].producer_epoch = 32766
    r = h.init()
    assert (r["producer_id"], r["producer_epoch"]) == (101, 0)
    assert h.c.txns["t"].previous_producer_id == 100


def test_verify_only_answers_from_the_ongoing_transaction() -> None:
    h = Harness()
    h.init()
    h.add("t", 100, 0, ("a", 0))
    r = h.call("add_partitions", 4, transactions=[
        {"transactional_id": "t", "producer_id": 100, "producer_epoch": 0, "verify_only": True,
         "topics": [{"name": "a", "partitions": [0, 1]}]},
        {"transactional_id": "u", "producer_id": 5, "producer_epoch": 0, "verify_only": True,
         "topics": [{"name": "a", "partitions": [0]}]}])
    by = {t["transactional_id"]: {(x["name"], p["partition_index"]): p["partition_error_code"]
                                  for x in t["topic_results"] for p in x["results_by_partition"]}
          for t in r["results_by_transaction"]}
    assert by == {"t": {("a", 0): E.NONE, ("a", 1): E.TRANSACTION_ABORTABLE},
                  "u": {("a", 0): E.INVALID_PRODUCER_ID_MAPPING}}
    assert h.c.txns["t"].partitions == {("a", 0)}   # verification adds nothing


def test_implicit_add_from_a_leader_opens_the_transaction() -> None:
    h = Harness()
    h.init()
    r = h.call("add_partitions", 5, transactions=[
        {"transactional_id": "t", "producer_id": 100, "producer_epoch": 0, "verify_only": False,
         "topics": [{"name": "b", "partitions": [1]}]}])
    assert r["results_by_transaction"][0]["topic_results"][0]["results_by_partition"][0]["partition_error_code"] == 0
    assert h.state() is TxnState.ONGOING and h.c.txns["t"].client_version == 2


def test_transaction_version_2_bumps_the_epoch_on_every_end() -> None:
    h = Harness()
    h.init()
    h.add("t", 100, 0, ("a", 0))
    r = h.end("t", 100, 0, True, version=5)
    assert (r["error_code"], r["producer_id"], r["producer_epoch"]) == (E.NONE, 100, 1)
    assert h.markers[0].producer_epoch == 1
    h.write_markers()
    r = h.end("t", 100, 0, True, version=5)       # a retry with the epoch before the bump
    assert (r["error_code"], r["producer_epoch"]) == (E.NONE, 1)
    r = h.end("t", 100, 1, False, version=5)      # abort with nothing added: allowed, bumps again
    assert (r["error_code"], r["producer_epoch"]) == (E.NONE, 2)
    assert not h.markers and h.state() is TxnState.COMPLETE_ABORT


def test_reload_resends_markers_of_prepared_transactions_and_restores_timeouts() -> None:
    h = Harness()
    h.init("p")
    h.add("p", 100, 0, ("a", 0), ("b", 0))
    h.end("p", 100, 0, False)                      # prepared, markers never written (coordinator died)
    h.init("o", timeout=10_000)
    h.add("o", 101, 0, ("a", 2))                   # open
    h.init("gone")
    h.c.poll(h.now)
    fresh = TransactionCoordinator(TxnConfig(), partition=7, coordinator_epoch=4, now_ms=h.now,
                                   allocate_producer_id=lambda: 500)
    for key, value in h.log:
        fresh.load(7, key, value)
    fx = fresh.complete_load(h.now)
    (m,) = fx.markers
    assert (m.transactional_id, m.commit, m.coordinator_epoch, m.partitions) == ("p", False, 4, {("a", 0), ("b", 0)})
    assert fresh.txns["o"].state is TxnState.ONGOING
    assert fresh.poll(h.now + 10_001).writes                       # the open one times out on the new coordinator
    assert fresh.txns["o"].state is TxnState.ONGOING and fresh.txns["o"].pending is not None


def test_idle_ids_expire_and_are_forgotten() -> None:
    h = Harness(config=TxnConfig(id_expiration_ms=1_000))
    h.init()
    h.advance(999)
    assert "t" in h.c.txns
    h.advance(2)
    assert "t" not in h.c.txns and h.log[-1][1] is None          # a tombstone
    r = h.init()                                                    # a new producer id next time
    assert r["producer_id"] == 101 and r["producer_epoch"] == 0


def test_describe_and_list() -> None:
    h = Harness()
    h.init("t")
    h.add("t", 100, 0, ("a", 0), ("a", 2))
    h.init("u")
    d = h.c.describe("t")
    assert (d["transaction_state"], d["producer_id"], d["topics"]) == ("Ongoing", 100, [{"topic": "a",
                                                                                          "partitions": [0, 2]}])
    assert d["transaction_start_time_ms"] == START
    assert h.c.describe("nope")["error_code"] == E.TRANSACTIONAL_ID_NOT_FOUND
    assert {e["transactional_id"] for e in h.c.list_transactions(h.now, None, None)} == {"t", "u"}
    assert [e["transactional_id"] for e in h.c.list_transactions(h.now, {TxnState.ONGOING}, None)] == ["t"]
    assert [e["transactional_id"] for e in h.c.list_transactions(h.now, None, {101})] == ["u"]
    assert h.c.list_transactions(h.now + 5, None, None, 10) == []


@pytest.mark.parametrize("enable2pc", [True])
def test_two_phase_commit_is_refused(enable2pc: bool) -> None:
    h = Harness()
    assert h.init(version=6, enable2_pc=enable2pc)["error_code"] == E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
