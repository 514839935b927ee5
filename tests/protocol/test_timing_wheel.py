"""Tests for the hierarchical timing wheel and its asyncio driver (fake clocks, no sleeps)."""

from __future__ import annotations

import asyncio
import heapq
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocol.timer_service import WheelTimer
from protocol.timing_wheel import TimingWheel


def test_fires_in_deadline_order_with_ties_in_insertion_order() -> None:
    wheel = TimingWheel()
    for deadline, item in [(5, "a"), (3, "b"), (5, "c"), (1, "d"), (3, "e")]:
        wheel.add(deadline, item)
    assert len(wheel) == 5
    assert wheel.advance(0) == []
    assert wheel.advance(4) == ["d", "b", "e"]
    assert wheel.advance(5) == ["a", "c"]
    assert len(wheel) == 0
    assert wheel.next_deadline() is None


def test_exact_boundaries() -> None:
    wheel = TimingWheel()
    wheel.add(10, "x")
    assert wheel.advance(9) == []
    assert wheel.next_deadline() == 10
    assert wheel.advance(10) == ["x"]


def test_cascades_from_overflow_wheels() -> None:
    wheel = TimingWheel(tick_ms=1, wheel_size=20)
    deadlines = [19, 20, 399, 400, 401, 7_999, 8_000, 160_000, 3_200_001]
    for d in deadlines:
        wheel.add(d, d)
    assert wheel.levels == 6
    assert wheel.next_deadline() == 19
    fired: list[int] = []
    for now in range(0, 3_200_002, 997):
        fired.extend(wheel.advance(now))
        assert all(d <= now for d in fired)
    fired.extend(wheel.advance(3_200_001))
    assert fired == deadlines


def test_cascade_fires_at_exact_millisecond_not_bucket_start() -> None:
    wheel = TimingWheel()
    wheel.add(8_123, "late")
    for now in range(0, 8_123):
        assert wheel.advance(now) == [], now
    assert wheel.advance(8_123) == ["late"]


def test_next_deadline_is_a_safe_lower_bound() -> None:
    wheel = TimingWheel()
    wheel.add(1_234, "x")
    now = 0
    while True:
        nd = wheel.next_deadline()
        assert nd is not None and nd <= 1_234
        now = max(now, nd)
        out = wheel.advance(now)
        if out:
            assert out == ["x"] and now == 1_234
            break


def test_cancel_is_o1_and_idempotent() -> None:
    wheel = TimingWheel()
    tasks = [wheel.add(d, d) for d in range(1, 101)]
    for t in tasks[::2]:
        assert t.cancel()
        assert t.cancelled
        assert not t.cancel()
    assert len(wheel) == 50
    assert wheel.advance(1_000) == list(range(2, 101, 2))
    assert not tasks[1].cancel()
    assert not tasks[1].cancelled
    assert len(wheel) == 0


def test_cancel_in_overflow_bucket() -> None:
    wheel = TimingWheel()
    a = wheel.add(5_000, "a")
    wheel.add(5_001, "b")
    a.cancel()
    assert wheel.advance(10_000) == ["b"]


def test_past_deadline_comes_out_of_next_advance() -> None:
    wheel = TimingWheel(start_ms=1_000)
    t = wheel.add(10, "past")
    wheel.add(1_000, "now")
    assert t.deadline_ms == 10
    assert len(wheel) == 2
    assert wheel.next_deadline() == 10
    assert wheel.advance(1_000) == ["past", "now"]
    cancelled = wheel.add(500, "cancelled")
    cancelled.cancel()
    assert wheel.advance(1_000) == []
    assert wheel.next_deadline() is None


def test_time_never_goes_backwards() -> None:
    wheel = TimingWheel()
    wheel.add(50, "x")
    assert wheel.advance(100) == ["x"]
    wheel.add(120, "y")
    assert wheel.advance(90) == []
    assert wheel.now_ms == 100
    assert wheel.advance(120) == ["y"]


def test_fractional_deadlines_never_fire_early() -> None:
    wheel = TimingWheel()
    wheel.add(10.2, "x")
    assert wheel.advance(10.9) == []
    assert wheel.advance(11) == ["x"]


@pytest.mark.parametrize("tick_ms,wheel_size", [(1, 20), (7, 4), (10, 2), (1, 512)])
def test_coarse_ticks_stay_exact(tick_ms: int, wheel_size: int) -> None:
    rng = random.Random(tick_ms * 1000 + wheel_size)
    wheel = TimingWheel(tick_ms=tick_ms, wheel_size=wheel_size, start_ms=3)
    deadlines = [rng.randrange(0, 5_000) for _ in range(500)]
    for i, d in enumerate(deadlines):
        wheel.add(d, (d, i))
    fired: list[tuple[int, int]] = []
    now = 3
    while now < 5_100:
        now += rng.randrange(1, 40)
        out = wheel.advance(now)
        assert all(d <= now for d, _ in out)
        fired.extend(out)
        assert len(fired) == sum(d <= now for d in deadlines)
    assert fired == sorted(((d, i) for i, d in enumerate(deadlines)))


def test_hundred_thousand_timers() -> None:
    rng = random.Random(7)
    wheel = TimingWheel()
    tasks = [wheel.add(rng.randrange(1, 600_000), i) for i in range(100_000)]
    for t in tasks[::3]:
        t.cancel()
    expected = sorted((t.deadline_ms, t.item) for t in tasks if not t.cancelled)
    assert len(wheel) == len(expected)
    fired: list[int] = []
    now = 0
    while len(wheel):
        nd = wheel.next_deadline()
        assert nd is not None
        now = max(now + 1, nd)
        fired.extend(wheel.advance(now))
    assert fired == [item for _, item in expected]


_ops = st.lists(
    st.one_of(
        st.tuples(st.just("add"), st.integers(-50, 30_000)),
        st.tuples(st.just("cancel"), st.integers(0, 10_000)),
        st.tuples(st.just("advance"), st.integers(0, 9_000)),
    ),
    max_size=200,
)


@settings(max_examples=300, deadline=None)
@given(ops=_ops, tick_ms=st.sampled_from([1, 1, 3, 10]), wheel_size=st.sampled_from([2, 5, 20]))
def test_matches_heap_model(ops: list[tuple[str, int]], tick_ms: int, wheel_size: int) -> None:
    wheel = TimingWheel(tick_ms=tick_ms, wheel_size=wheel_size)
    model: list[tuple[int, int]] = []
    cancelled: set[int] = set()
    tasks = []
    now = 0
    for op, arg in ops:
        if op == "add":
            deadline = now + arg
            seq = len(tasks)
            tasks.append(wheel.add(deadline, seq))
            heapq.heappush(model, (deadline, seq))
        elif op == "cancel" and tasks:
            task = tasks[arg % len(tasks)]
            live = task.item not in cancelled and any(s == task.item for _, s in model)
            assert task.cancel() == live
            cancelled.add(task.item)
        elif op == "advance":
            now += arg
            expected = []
            while model and model[0][0] <= now:
                _, seq = heapq.heappop(model)
                if seq not in cancelled:
                    expected.append(seq)
            assert wheel.advance(now) == expected
        live_model = [s for _, s in model if s not in cancelled]
        assert len(wheel) == len(live_model)
        nd = wheel.next_deadline()
        if live_model:
            assert nd is not None
            assert nd <= min(d for d, s in model if s not in cancelled)
        elif nd is not None:
            assert wheel.advance(now) == []


class FakeClock:
    def __init__(self, start: float = 0.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now


def test_wheel_timer_poll_with_fake_clock() -> None:
    loop = asyncio.new_event_loop()
    try:
        clock = FakeClock(1_000.0)
        timer = WheelTimer(loop, clock=clock)
        ran: list[str] = []
        timer.call_later_ms(10, lambda: ran.append("a"))
        cancelled = timer.call_later_ms(5, lambda: ran.append("cancelled"))
        timer.call_at_ms(1_003.5, lambda: ran.append("b"))
        cancelled.cancel()
        assert len(timer) == 2
        clock.now = 1_003.9
        assert timer.poll() == 0
        clock.now = 1_004.0
        assert timer.poll() == 1
        clock.now = 1_010.0
        timer.poll()
        assert ran == ["b", "a"]

        def boom() -> None:
            raise RuntimeError("boom")

        errors: list[dict] = []
        loop.set_exception_handler(lambda _loop, ctx: errors.append(ctx))
        timer.call_later_ms(0, boom)
        timer.call_later_ms(0, lambda: ran.append("after-boom"))
        timer.poll()
        assert ran[-1] == "after-boom"
        assert isinstance(errors[0]["exception"], RuntimeError)
        timer.close()
        with pytest.raises(RuntimeError):
            timer.call_later_ms(1, lambda: None)
    finally:
        loop.close()


async def test_wheel_timer_single_loop_handle() -> None:
    loop = asyncio.get_running_loop()
    timer = WheelTimer(clock=lambda: loop.time() * 1000.0)
    done = loop.create_future()
    order: list[int] = []

    def fire(i: int) -> None:
        order.append(i)
        if i == 0:
            timer.call_later_ms(0, lambda: fire(99))
        if len(order) == 4:
            done.set_result(None)

    # Deadlines from one base: a busy machine may pause between the calls, which with
    # call_later_ms would reorder the deadlines themselves.
    base = timer.now_ms()
    for i, delay in enumerate([3, 1, 2]):
        timer.call_at_ms(base + delay, lambda i=i: fire(i))
    for _ in range(50):
        timer.call_later_ms(10_000, lambda: order.append(-1)).cancel()
    assert timer._handle is not None
    await asyncio.wait_for(done, 30)  # a liveness bound: the timers are due within milliseconds
    assert order == [1, 2, 0, 99]
    timer.close()
    assert timer._handle is None
