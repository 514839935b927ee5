"""Tests for broker.replication.purgatory (fake clock via TimingWheel.advance, no sleeps)."""

from __future__ import annotations

from collections.abc import Callable

from broker.replication.purgatory import DelayedOperation, DelayedOperationPurgatory
from protocol.timing_wheel import TimingWheel


class Op(DelayedOperation):
    """Completes once ``ready()`` is true; records callbacks."""

    def __init__(self, delay_ms: int, ready: Callable[[], bool] = lambda: False) -> None:
        super().__init__(delay_ms)
        self.ready = ready
        self.events: list[str] = []
        self.attempts = 0

    def try_complete(self) -> bool:
        self.attempts += 1
        return self.force_complete() if self.ready() else False

    def on_complete(self) -> None:
        self.events.append("complete")

    def on_expiration(self) -> None:
        self.events.append("expired")


def test_completes_immediately_without_watching() -> None:
    p = DelayedOperationPurgatory()
    op = Op(100, lambda: True)
    assert p.try_complete_else_watch(op, ["k"])
    assert op.events == ["complete"]
    assert p.watched() == 0
    assert p.num_delayed == 0
    assert len(p.timer) == 0


def test_second_try_after_watch_catches_race() -> None:
    p = DelayedOperationPurgatory()
    calls = iter([False, True])
    op = Op(100, lambda: next(calls))
    assert p.try_complete_else_watch(op, ["a", "b"])
    assert op.events == ["complete"]
    assert p.num_delayed == 0
    assert len(p.timer) == 0
    assert p.check_and_complete("a") == 0
    assert p.watched_keys() == 1
    assert p.purge_completed() == 1
    assert p.watched_keys() == 0


def test_check_and_complete_on_event() -> None:
    p = DelayedOperationPurgatory()
    state = {"ready": False}
    op = Op(1_000, lambda: state["ready"])
    other = Op(1_000)
    assert not p.try_complete_else_watch(op, ["t-0", "t-1"])
    assert not p.try_complete_else_watch(other, ["t-1"])
    assert p.num_delayed == 2
    assert p.watched() == 3
    assert p.check_and_complete("t-0") == 0
    state["ready"] = True
    assert p.check_and_complete("t-1") == 1
    assert op.events == ["complete"]
    assert p.check_and_complete("t-0") == 0
    assert p.watched() == 1
    assert p.num_delayed == 1
    assert p.check_and_complete("missing") == 0
    assert p.advance(1_000) == 1
    assert other.events == ["complete", "expired"]
    assert op.events == ["complete"]


def test_expiration_exactly_once_and_on_time() -> None:
    p = DelayedOperationPurgatory(start_ms=500)
    op = Op(250)
    p.try_complete_else_watch(op, ["k"])
    assert op.deadline_ms == 750
    assert p.next_deadline() is not None and p.next_deadline() <= 750
    assert p.advance(749) == 0
    assert op.events == []
    assert p.advance(750) == 1
    assert op.events == ["complete", "expired"]
    assert not op.force_complete()
    assert p.advance(10_000) == 0
    assert p.expired_total == 1
    assert p.num_delayed == 0


def test_force_complete_cancels_timer() -> None:
    p = DelayedOperationPurgatory()
    op = Op(100)
    p.try_complete_else_watch(op, ["k"])
    assert op.force_complete()
    assert not op.force_complete()
    assert op.events == ["complete"]
    assert len(p.timer) == 0
    assert p.advance(1_000) == 0
    assert op.events == ["complete"]


def test_no_keys_still_expires() -> None:
    p = DelayedOperationPurgatory()
    op = Op(10)
    assert not p.try_complete_else_watch(op, [])
    assert p.watched() == 0
    assert p.advance(10) == 1
    assert op.events == ["complete", "expired"]


def test_reentrant_completion_during_check() -> None:
    p = DelayedOperationPurgatory()
    ready = {"v": False}
    chained = Op(1_000, lambda: ready["v"])

    class Trigger(Op):
        def on_complete(self) -> None:
            super().on_complete()
            p.try_complete_else_watch(Op(1_000), ["k"])
            p.check_and_complete("k")

    first = Trigger(1_000, lambda: ready["v"])
    p.try_complete_else_watch(first, ["k"])
    p.try_complete_else_watch(chained, ["k"])
    ready["v"] = True
    assert p.check_and_complete("k") == 1
    assert first.events == ["complete"]
    assert chained.events == ["complete"]
    assert p.watched() == 1
    assert p.num_delayed == 1


def test_purge_when_completed_ops_pile_up() -> None:
    p = DelayedOperationPurgatory(purge_interval=10)
    ops = [Op(10_000) for _ in range(30)]
    for i, op in enumerate(ops):
        p.try_complete_else_watch(op, [f"k{i % 3}", "shared"])
    for op in ops[:10]:
        op.force_complete()
    assert p.watched() == 60  # 10 completed: not over the interval yet
    ops[10].force_complete()  # 11 > 10: purged right away, no clock tick needed
    assert p.watched() == 38
    for op in ops[11:25]:
        op.force_complete()
    # purged again at the 22nd completion (19 counted - 8 waiting > 10); three completed since
    assert p.watched() == 16
    assert p.watched_keys() == 4
    assert p.num_delayed == 5
    assert p.purge_completed() == 6
    assert p.watched() == 10


def test_shared_wheel_and_external_scheduler() -> None:
    wheel = TimingWheel()
    a = DelayedOperationPurgatory("produce", timer=wheel)
    b = DelayedOperationPurgatory("fetch", timer=wheel)
    op_a, op_b = Op(5), Op(7)
    a.try_complete_else_watch(op_a, ["x"])
    b.try_complete_else_watch(op_b, ["x"])
    assert a.advance(10) == 1
    assert op_a.events == op_b.events == ["complete", "expired"]
    assert b.expired_total == 1

    scheduled: list[tuple[int, Callable[[], None]]] = []

    def schedule(deadline: int, cb: Callable[[], None]):
        scheduled.append((deadline, cb))
        return wheel.add(deadline, cb)

    c = DelayedOperationPurgatory("join", schedule=schedule, clock=lambda: 1_000)
    op_c = Op(300)
    c.try_complete_else_watch(op_c, ["g"])
    assert scheduled[0][0] == 1_300
    for cb in wheel.advance(1_300):
        cb()
    assert op_c.events == ["complete", "expired"]
    assert c.num_delayed == 0


def test_cancel_for_key_and_shutdown() -> None:
    p = DelayedOperationPurgatory()
    op1, op2 = Op(100), Op(100)
    p.try_complete_else_watch(op1, ["a"])
    p.try_complete_else_watch(op2, ["a", "b"])
    assert p.cancel_for_key("a") == [op1, op2]
    assert p.check_and_complete("a") == 0
    assert set(map(id, p.shutdown())) == {id(op2)}
    assert p.num_delayed == 1
    op1.force_complete()
    assert p.num_delayed == 0
    assert p.advance(1_000) == 0
    assert op2.events == []


def test_many_operations_expire_in_deadline_order() -> None:
    p = DelayedOperationPurgatory()
    order: list[int] = []

    class Tagged(Op):
        def __init__(self, delay_ms: int, tag: int) -> None:
            super().__init__(delay_ms)
            self.tag = tag

        def on_expiration(self) -> None:
            order.append(self.tag)

    delays = [(i * 7919) % 5_000 + 1 for i in range(2_000)]
    for i, d in enumerate(delays):
        p.try_complete_else_watch(Tagged(d, i), [i % 17])
    assert p.advance(5_000) == 2_000
    assert order == sorted(range(2_000), key=lambda i: (delays[i], i))


class FakeScheduler:
    """Stands in for the broker's WheelTimer: collects timers; the test fires them."""

    def __init__(self) -> None:
        self.wheel = TimingWheel()
        self.now = 0

    def __call__(self, deadline: int, callback: Callable[[], None]):
        return self.wheel.add(deadline, callback)

    def run_until(self, now: int) -> int:
        self.now = now
        fired = self.wheel.advance(now)
        for callback in fired:
            callback()
        return len(fired)


def test_expirations_by_an_external_scheduler_purge_watch_lists() -> None:
    """Without ``advance`` ever being called, expired operations leave the watch lists."""
    sched = FakeScheduler()
    p = DelayedOperationPurgatory("fetch", schedule=sched, clock=lambda: sched.now, purge_interval=50)
    keys = [f"idle-{i}" for i in range(40)]
    for _ in range(20):
        for i in range(10):  # 200 operations, each on 8 of the 40 keys
            assert not p.try_complete_else_watch(Op(100), keys[i * 4:i * 4 + 8])
        sched.run_until(sched.now + 101)
        # purged whenever the completed ones outnumber the waiting ones by the interval
        assert p.watched() <= (p.purge_interval + 1) * 8
    assert p.num_delayed == 0
    assert p.expired_total == 200
    assert p.watched() == 0
    assert p.watched_keys() == 0


def test_purge_interval_bounds_entries_while_operations_wait() -> None:
    sched = FakeScheduler()
    p = DelayedOperationPurgatory("fetch", schedule=sched, clock=lambda: sched.now, purge_interval=10)
    waiting = Op(1_000_000)
    p.try_complete_else_watch(waiting, ["busy"])  # one long wait keeps num_delayed above zero
    for i in range(100):
        p.try_complete_else_watch(Op(5), [f"idle-{i % 7}", f"other-{i % 3}"])
        sched.run_until(sched.now + 6)
        assert p.watched() <= 1 + (p.purge_interval + 1) * 2
    assert p.num_delayed == 1
    assert p.watched_keys() <= 1 + 7 + 3
    waiting.force_complete()
    assert p.watched() == 0


def test_completion_through_one_key_purges_the_others_once_idle() -> None:
    p = DelayedOperationPurgatory(purge_interval=1000)
    ready = {"go": False}
    ops = [Op(1_000, lambda: ready["go"]) for _ in range(5)]
    for op in ops:
        p.try_complete_else_watch(op, ["t-0", "t-1", "t-2"])
    assert p.watched() == 15
    ready["go"] = True
    assert p.check_and_complete("t-0") == 5
    assert p.watched() == 0  # nothing waits: the lists of t-1 and t-2 went too
