"""The share-partition state machine (KIP-932) alone: acquisition, acknowledgement, locks, delivery counts,
the in-flight window and its writes — pure, with explicit times; and a random walk of two members
checked against the rules (hypothesis)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from broker.replication.share.partition import (
    ACCEPT,
    ACKNOWLEDGED,
    ACQUIRED,
    ARCHIVED,
    AVAILABLE,
    GAP,
    RECORD_LIMIT,
    REJECT,
    RELEASE,
    RENEW,
    AckBatch,
    Acquired,
    LogBatch,
    ShareLimits,
    SharePartition,
)
from protocol.error_codes import ErrorCode as E

LIMITS = ShareLimits(delivery_count_limit=5, max_record_locks=100, lock_ms=1000)


def log_of(*sizes: int, start: int = 0, control: set[int] | None = None) -> list[LogBatch]:
    """Consecutive log batches of the given sizes (those at indexes ``control`` are control batches)."""
    out, base = [], start
    for i, n in enumerate(sizes):
        out.append(LogBatch(base, base + n - 1, control=i in (control or set())))
        base += n
    return out


def fresh(start: int = 0) -> SharePartition:
    sp = SharePartition("g", "t", 0)
    sp.load(start, [], reset_offset=start, log_start=0)
    sp.next_write()  # the initial start offset
    sp.write_done(sp.writing.id if sp.writing else 0, True, 0)
    return sp


def fetch(sp: SharePartition, log: list[LogBatch], member: str, max_records: int = 500, now: int = 0,
          limits: ShareLimits = LIMITS, **kw: Any) -> list[Acquired]:
    position = sp.acquire_position()
    return sp.acquire(member, [b for b in log if b.last >= position], max_records, now, limits, **kw)[0]


def ack(sp: SharePartition, member: str, first: int, last: int, *types: int, limits: ShareLimits = LIMITS) -> Any:
    return sp.acknowledge(member, [AckBatch(first, last, list(types))], 0, limits, waiter="w")


def settle(sp: SharePartition, ok: bool = True) -> list[Any]:
    write = sp.next_write()
    return [] if write is None else sp.write_done(write.id, ok, 0)


def test_batch_optimized_acquires_whole_batches_and_members_get_disjoint_records() -> None:
    sp = fresh()
    log = log_of(5, 5, 5)
    assert fetch(sp, log, "a", max_records=3) == [Acquired(0, 4, 1)]
    assert fetch(sp, log, "b", max_records=3) == [Acquired(5, 9, 1)]
    assert fetch(sp, log, "a", max_records=20) == [Acquired(10, 14, 1)]
    assert fetch(sp, log, "b") == []
    assert (sp.start, sp.next) == (0, 15)


def test_record_limit_is_strict() -> None:
    sp = fresh()
    log = log_of(5, 5)
    assert fetch(sp, log, "a", max_records=3, mode=RECORD_LIMIT) == [Acquired(0, 2, 1)]
    assert fetch(sp, log, "b", max_records=3, mode=RECORD_LIMIT) == [Acquired(3, 5, 1)]
    assert sp.next == 6


def test_accept_moves_the_start_once_written() -> None:
    sp = fresh()
    log = log_of(5)
    fetch(sp, log, "a")
    assert ack(sp, "a", 0, 2, ACCEPT) == (E.NONE, None, True)
    assert sp.start == 0  # not yet written
    write = sp.next_write()
    assert write is not None and write.start_offset == 3 and write.batches == [(0, 2, ACKNOWLEDGED, 1)]
    assert sp.next_write() is None  # one write at a time
    assert sp.write_done(write.id, True, 0) == ["w"]
    assert sp.start == 3 and sp.in_flight == 2


def test_release_redelivers_at_once_with_the_next_delivery_count() -> None:
    sp = fresh()
    log = log_of(3)
    fetch(sp, log, "a")
    ack(sp, "a", 0, 2, ACCEPT, RELEASE, ACCEPT)
    assert fetch(sp, log, "b") == []  # the release is being written
    settle(sp)
    assert fetch(sp, log, "b") == [Acquired(1, 1, 2)]
    assert sp.start == 1


def test_lock_expiry_releases_and_the_delivery_limit_archives() -> None:
    limits = ShareLimits(delivery_count_limit=2, max_record_locks=100, lock_ms=1000)
    sp = fresh()
    log = log_of(2)
    sp.acquire("a", log, 10, 0, limits)
    [lock] = {id(r.lock): r.lock for r in sp.runs if r.lock}.values()
    assert lock.deadline == 1000
    assert sp.expire(lock, 1000, limits)
    settle(sp)
    assert fetch(sp, log, "b", limits=limits) == [Acquired(0, 1, 2)]
    [lock] = {id(r.lock): r.lock for r in sp.runs if r.lock}.values()
    assert sp.expire(lock, 2000, limits)
    write = sp.next_write()
    assert write is not None and write.batches == [(0, 1, ARCHIVED, 2)]
    sp.write_done(write.id, True, 0)
    assert fetch(sp, log, "b", limits=limits) == [] and sp.start == 2 and sp.lock_expiries == 2


def test_reject_and_gap_archive() -> None:
    sp = fresh()
    log = log_of(4)
    fetch(sp, log, "a")
    ack(sp, "a", 0, 3, REJECT, GAP, ACCEPT, RELEASE)
    settle(sp)
    assert fetch(sp, log, "b") == [Acquired(3, 3, 2)]
    assert sp.start == 3


def test_wrong_acknowledgements_change_nothing() -> None:
    sp = fresh()
    log = log_of(4, 4)
    fetch(sp, log, "a", max_records=1)
    fetch(sp, log, "b", max_records=1)
    # b's records, records never delivered, offsets past the window: refused, and nothing of the request applies
    assert ack(sp, "a", 0, 5, ACCEPT)[0] == E.INVALID_RECORD_STATE
    assert sp.acknowledge("a", [AckBatch(0, 1, [ACCEPT]), AckBatch(4, 4, [ACCEPT])], 0, LIMITS)[0] == \
        E.INVALID_RECORD_STATE
    assert ack(sp, "a", 7, 9, ACCEPT)[0] == E.INVALID_REQUEST
    assert sp.state_counts() == {AVAILABLE: 0, ACQUIRED: 8, ACKNOWLEDGED: 0, ARCHIVED: 0}
    ack(sp, "b", 4, 7, ACCEPT)
    settle(sp)
    assert ack(sp, "b", 4, 4, ACCEPT)[0] == E.INVALID_RECORD_STATE  # acknowledged already
    ack(sp, "a", 0, 3, ACCEPT)
    settle(sp)
    assert sp.start == 8
    assert ack(sp, "a", 0, 3, ACCEPT) == (E.NONE, None, False)  # below SPSO: done already


def test_a_failed_acknowledgement_write_returns_the_records_to_their_owner() -> None:
    sp = fresh()
    log = log_of(3)
    fetch(sp, log, "a")
    ack(sp, "a", 0, 2, ACCEPT)
    assert settle(sp, ok=False) == ["w"]
    assert sp.state_counts()[ACQUIRED] == 3 and sp.start == 0
    ack(sp, "a", 0, 2, ACCEPT)
    settle(sp)
    assert sp.start == 3


def test_renew_restarts_the_lock() -> None:
    sp = fresh()
    log = log_of(2)
    sp.acquire("a", log, 10, 0, LIMITS)
    [old] = {id(r.lock): r.lock for r in sp.runs if r.lock}.values()
    assert sp.acknowledge("a", [AckBatch(0, 1, [RENEW])], 900, LIMITS)[:3] == (E.NONE, None, False)
    assert not sp.expire(old, 1000, LIMITS)
    new = sp.renewed
    assert new is not None and new.deadline == 1900
    assert sp.expire(new, 1900, LIMITS)


def test_the_record_lock_bound() -> None:
    limits = ShareLimits(delivery_count_limit=5, max_record_locks=10, lock_ms=1000)
    sp = fresh()
    log = log_of(4, 4, 4, 4)
    assert fetch(sp, log, "a", limits=limits) == [Acquired(0, 9, 1)]  # at most 10 in flight
    assert fetch(sp, log, "b", limits=limits) == []
    ack(sp, "a", 0, 3, ACCEPT, limits=limits)
    settle(sp)
    assert fetch(sp, log, "b", limits=limits) == [Acquired(10, 13, 1)]


def test_control_batches_and_aborted_records_are_archived_not_delivered() -> None:
    sp = fresh()
    log = [LogBatch(0, 2, aborted=True), LogBatch(3, 3, control=True), LogBatch(4, 5)]
    assert fetch(sp, log, "a") == [Acquired(4, 5, 1)]
    assert sp.start == 4


def test_offsets_the_log_lost_are_archived() -> None:
    sp = fresh()
    fetch(sp, log_of(10), "a")
    ack(sp, "a", 0, 9, RELEASE)
    settle(sp)
    # compaction left offsets 0-3 and 7-9; retention then removes 0-1
    assert fetch(sp, [LogBatch(2, 3), LogBatch(7, 9)], "b") == [Acquired(2, 3, 2), Acquired(7, 9, 2)]
    assert sp.state_counts()[ARCHIVED] == 3
    sp.advance_to_log_start(3)
    assert sp.start == 2  # acquired records stay until acknowledged


def test_load_from_the_coordinators_state() -> None:
    sp = SharePartition("g", "t", 0)
    sp.load(10, [(12, 13, ACKNOWLEDGED, 1), (15, 15, AVAILABLE, 3), (17, 19, ARCHIVED, 5)], reset_offset=0,
            log_start=0)
    assert (sp.start, sp.next) == (10, 20)
    log = log_of(25)
    # offsets never delivered (between the stored batches) come first; offset 15, delivered three times
    # already, is throttled: it comes on its own
    assert fetch(sp, log, "a") == [Acquired(10, 11, 1), Acquired(14, 14, 1)]
    assert fetch(sp, log, "a") == [Acquired(15, 15, 4)]
    assert fetch(sp, log, "a") == [Acquired(16, 16, 1), Acquired(20, 24, 1)]


def test_uninitialised_state_takes_the_reset_offset_and_writes_it() -> None:
    sp = SharePartition("g", "t", 0)
    sp.load(-1, [], reset_offset=42, log_start=0)
    write = sp.next_write()
    assert write is not None and write.start_offset == 42 and write.batches == []


def test_a_poison_record_is_delivered_alone_on_its_last_attempt() -> None:
    limits = ShareLimits(delivery_count_limit=4, max_record_locks=100, lock_ms=1000)
    sp = fresh()
    log = log_of(10)
    for _ in range(2):
        fetch(sp, log, "a", limits=limits)
        ack(sp, "a", 0, 9, RELEASE, limits=limits)
        settle(sp)
    got = fetch(sp, log, "a", max_records=10, limits=limits)
    assert got == [Acquired(0, 4, 3)]  # from half way to the limit: smaller acquisitions
    ack(sp, "a", 0, 4, *([ACCEPT] * 4 + [RELEASE]), limits=limits)
    settle(sp)
    assert fetch(sp, log, "a", max_records=10, limits=limits) == [Acquired(4, 4, 4)]  # its last attempt, alone


def test_a_closed_session_releases_what_its_member_holds() -> None:
    sp = fresh()
    log = log_of(3, 3)
    fetch(sp, log, "a", max_records=1)
    fetch(sp, log, "b", max_records=1)
    assert sp.release_member("a", LIMITS)
    settle(sp)
    assert fetch(sp, log, "c") == [Acquired(0, 2, 2)]
    assert sp.acquired_by("b") == 3


# ------------------------------------------------------------------ a random walk, checked

OPS = st.lists(st.tuples(st.sampled_from(["fetch", "ack", "expire", "settle", "fail", "close"]),
                         st.sampled_from(["a", "b"]), st.integers(0, 3), st.integers(1, 6)), max_size=40)


@settings(max_examples=150, deadline=None)
@given(ops=OPS, sizes=st.lists(st.integers(1, 4), min_size=1, max_size=8))
def test_random_walk_keeps_the_rules(ops: list[tuple[str, str, int, int]], sizes: list[int]) -> None:
    limits = ShareLimits(delivery_count_limit=3, max_record_locks=100, lock_ms=1000)
    log = log_of(*sizes)
    end = log[-1].last + 1
    sp = fresh()
    now = 0
    owner: dict[int, str] = {}          # offset -> the member holding it (by our bookkeeping)
    done: set[int] = set()             # offsets acknowledged or rejected and written
    deliveries: dict[int, int] = {}
    for op, member, kind, n in ops:
        now += 100
        if op == "fetch":
            for first, last, count in fetch(sp, log, member, max_records=n, now=now, limits=limits):
                for o in range(first, last + 1):
                    assert o not in owner and o not in done, "a record is held once, and never after it is done"
                    deliveries[o] = deliveries.get(o, 0) + 1
                    assert count == deliveries[o] <= limits.delivery_count_limit
                    owner[o] = member
        elif op == "ack":
            mine = sorted(o for o, m in owner.items() if m == member)
            if not mine:
                continue
            o = mine[0]
            ack_type = (ACCEPT, RELEASE, REJECT, RENEW)[kind]
            if any(r.write and r.first <= o <= r.last for r in sp.runs):
                continue  # its change is being written
            assert sp.acknowledge(member, [AckBatch(o, o, [ack_type])], now, limits)[0] == E.NONE
            if ack_type in (ACCEPT, REJECT):
                del owner[o]
                done.add(o)
            elif ack_type == RELEASE:
                del owner[o]
        elif op == "expire":
            for lock in {id(r.lock): r.lock for r in sp.runs if r.lock is not None}.values():
                if lock.member == member and sp.expire(lock, now, limits):
                    for o in [o for o, m in owner.items() if m == member]:
                        if not any(r.first <= o <= r.last and r.state == ACQUIRED for r in sp.runs):
                            del owner[o]
        elif op in ("settle", "fail"):
            write = sp.next_write()
            if write is not None:
                sp.write_done(write.id, op == "settle", now)
                if op == "fail":
                    # failed acknowledgements come back to their owners
                    for run in sp.runs:
                        if run.state == ACQUIRED and run.lock is not None:
                            for o in range(run.first, run.last + 1):
                                owner[o] = run.lock.member
                                done.discard(o)
        elif op == "close":
            sp.release_member(member, limits)
            for o in [o for o, m in owner.items() if m == member]:
                del owner[o]
        # the window is contiguous runs from SPSO to SPEO
        assert sp.start <= sp.next <= end
        if sp.runs:
            assert sp.runs[0].first == sp.start and sp.runs[-1].last == sp.next - 1
            for a, b in zip(sp.runs, sp.runs[1:], strict=False):
                assert a.last + 1 == b.first
        for run in sp.runs:
            assert (run.state == ACQUIRED) == (run.lock is not None)
            assert run.count <= limits.delivery_count_limit
        # nothing below SPSO is held
        assert all(o >= sp.start for o in owner)
