"""CoordinatorRuntime's request and timer plumbing, with a scripted coordinator on a loaded shard.

The runtime answers a request from the effects of its own call when they carry the reply (no future,
nothing registered), parks it otherwise until a later call, poll or unload answers it, and keeps one
wheel timer per shard that is re-armed only when the coordinator's deadline moves earlier.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any

from broker.coordinator.runtime import CoordinatorRuntime, Shard
from protocol.error_codes import ErrorCode


@dataclass
class _Effects:
    replies: list[tuple[Hashable, Any]] = field(default_factory=list)
    writes: list[Any] = field(default_factory=list)


class _Coordinator:
    """Replies at once (``answer``) or parks the token until the next ``release``/``poll``."""

    def __init__(self) -> None:
        self.deadline: int | None = None
        self.parked: list[Hashable] = []
        self.polls = 0

    def call(self, token: Hashable, answer: Any | None) -> _Effects:
        if answer is None:
            self.parked.append(token)
            return _Effects()
        return _Effects(replies=[(token, answer)])

    def release(self, answer: Any) -> _Effects:
        replies = [(t, answer) for t in self.parked]
        self.parked = []
        return _Effects(replies=replies)

    def next_deadline(self) -> int | None:
        return self.deadline

    def poll(self, now_ms: int) -> _Effects:
        self.polls += 1
        return self.release({"polled": True})

    # what the runtime's loading side needs (unused here)
    def load(self, *args: Any) -> None: ...
    def load_marker(self, *args: Any) -> None: ...
    def complete_load(self, now_ms: int) -> _Effects:
        return _Effects()
    def write_committed(self, now_ms: int, write_id: int) -> _Effects:
        return _Effects()
    def write_failed(self, now_ms: int, write_id: int, error_code: int) -> _Effects:
        return _Effects()


class _Handle:
    def __init__(self, deadline_ms: float, callback: Callable[[], Any]) -> None:
        self.deadline_ms = deadline_ms
        self.callback = callback
        self.cancelled = False
        self.fired = False

    def fire(self) -> None:
        self.fired = True
        self.callback()

    def cancel(self) -> None:
        self.cancelled = True


class _Timer:
    """A wheel timer whose firing the test drives."""

    def __init__(self) -> None:
        self.armed: list[_Handle] = []

    def now_ms(self) -> float:
        return 0.0

    def call_at_ms(self, deadline_ms: float, callback: Callable[[], Any]) -> _Handle:
        handle = _Handle(deadline_ms, callback)
        self.armed.append(handle)
        return handle

    def live(self) -> list[_Handle]:
        return [h for h in self.armed if not h.cancelled and not h.fired]


class _Replica:
    def add_leadership_listener(self, listener: Any) -> None:
        pass


def _runtime() -> tuple[CoordinatorRuntime[Any], Shard[Any], _Coordinator, _Timer]:
    timer = _Timer()
    runtime: CoordinatorRuntime[Any] = CoordinatorRuntime(
        topic="__test", replica=_Replica(), timer=timer,  # type: ignore[arg-type]
        new_coordinator=lambda partition, epoch: _Coordinator())
    coordinator = _Coordinator()
    shard: Shard[Any] = Shard(0, 1, coordinator=coordinator, loading=False)  # type: ignore[arg-type]
    runtime.shards[0] = shard
    return runtime, shard, coordinator, timer


def _on_error(code: int) -> dict[str, int]:
    return {"error": code}


async def test_a_reply_in_the_calls_own_effects_comes_back_at_once_with_nothing_left_registered() -> None:
    runtime, shard, _, _ = _runtime()
    result = runtime.run(shard, lambda c, token: c.call(token, {"ok": 1}), _on_error)
    assert result == {"ok": 1}
    assert runtime._pending == {} and shard.tokens == set() and runtime._direct == {}


async def test_a_parked_request_is_answered_by_a_later_call() -> None:
    runtime, shard, _, _ = _runtime()
    parked = runtime.run(shard, lambda c, token: c.call(token, None), _on_error)
    assert asyncio.iscoroutine(parked)
    task = asyncio.ensure_future(parked)
    await asyncio.sleep(0)
    assert not task.done() and len(shard.tokens) == 1
    # a second request whose call also releases the first: each gets its own answer
    second = runtime.run(shard, lambda c, token: _both(c.release({"released": True}), c.call(token, {"now": 2})),
                         _on_error)
    assert second == {"now": 2}
    assert await task == {"released": True}
    assert runtime._pending == {} and shard.tokens == set()


def _both(a: _Effects, b: _Effects) -> _Effects:
    return _Effects(replies=a.replies + b.replies)


async def test_a_parked_request_answers_not_coordinator_when_its_shard_unloads() -> None:
    runtime, shard, _, _ = _runtime()
    task = asyncio.ensure_future(runtime.run(shard, lambda c, token: c.call(token, None), _on_error))
    await asyncio.sleep(0)
    runtime._unload(shard)
    assert await task == {"error": ErrorCode.NOT_COORDINATOR}


async def test_a_call_that_unloads_its_shard_answers_not_coordinator() -> None:
    runtime, shard, _, _ = _runtime()

    def call(c: _Coordinator, token: Hashable) -> _Effects:
        runtime._unload(shard)  # e.g. leadership lost while the call ran
        return c.call(token, None)

    assert runtime.run(shard, call, _on_error) == {"error": ErrorCode.NOT_COORDINATOR}
    assert runtime._pending == {}


async def test_the_shard_timer_moves_only_when_the_deadline_comes_earlier() -> None:
    runtime, shard, coordinator, timer = _runtime()
    coordinator.deadline = 10_000_000_000_000  # far ahead of the wall clock
    runtime.run(shard, lambda c, token: c.call(token, {}), _on_error)
    assert len(timer.live()) == 1
    first = timer.live()[0]
    # later deadlines (every heartbeat pushes a session out): the armed timer stays
    for later in (10_000_000_000_500, 10_000_000_001_000):
        coordinator.deadline = later
        runtime.run(shard, lambda c, token: c.call(token, {}), _on_error)
    assert timer.live() == [first]
    # an earlier deadline re-arms
    coordinator.deadline = 9_000_000_000_000
    runtime.run(shard, lambda c, token: c.call(token, {}), _on_error)
    assert first.cancelled and len(timer.live()) == 1
    second = timer.live()[0]
    assert second.deadline_ms < first.deadline_ms
    # the timer fires (early for the coordinator's real deadline): the coordinator is polled and the
    # timer armed again at the deadline of then
    coordinator.deadline = 9_000_000_000_700
    second.fire()
    assert coordinator.polls == 1
    live = timer.live()
    assert len(live) == 1 and live[0] is not second
    # no deadline any more: a timer already armed may fire once more, harmlessly; none is added
    coordinator.deadline = None
    runtime.run(shard, lambda c, token: c.call(token, {}), _on_error)
    assert len(timer.live()) == 1
    timer.live()[0].fire()
    assert coordinator.polls == 2 and timer.live() == []


async def test_a_poll_answers_requests_parked_before_it() -> None:
    runtime, shard, coordinator, timer = _runtime()
    coordinator.deadline = 10_000_000_000_000
    task = asyncio.ensure_future(runtime.run(shard, lambda c, token: c.call(token, None), _on_error))
    await asyncio.sleep(0)
    timer.live()[0].fire()
    assert await task == {"polled": True}


async def test_writes_are_compressed_with_the_codec_the_runtime_is_given() -> None:
    """``offsets.topic.compression.codec``: the coordinator's batches go to the log compressed, records intact."""
    from broker.coordinator.write import Write
    from protocol.records import ZSTD, decode_batch

    appended: list[bytes] = []

    class _Appending(_Replica):
        def append_to_leader(self, topic: str, partition: int, batch: bytes, timeout_ms: int) -> Any:
            appended.append(batch)
            done: asyncio.Future[tuple[int, int]] = asyncio.get_running_loop().create_future()
            done.set_result((ErrorCode.NONE, 0))
            return done

    runtime: CoordinatorRuntime[Any] = CoordinatorRuntime(
        topic="__test", replica=_Appending(), timer=_Timer(),  # type: ignore[arg-type]
        new_coordinator=lambda partition, epoch: _Coordinator(), compression=ZSTD)
    coordinator = _Coordinator()
    shard: Shard[Any] = Shard(0, 1, coordinator=coordinator, loading=False)  # type: ignore[arg-type]
    runtime.shards[0] = shard
    records = [(b"key-%d" % i, b"member " * 50) for i in range(20)]
    runtime.apply(shard, _Effects(writes=[Write(1, 0, records)]))
    assert len(appended) == 1
    header, decoded = decode_batch(appended[0])
    assert header.compression == ZSTD
    assert [(r.key, r.value) for r in decoded] == records
    assert len(appended[0]) < sum(len(k) + len(v) for k, v in records) // 4
