"""CoordinatorRuntime's request and timer plumbing, with a scripted coordinator on a loaded shard.

The runtime answers a request from the effects of its own call when they carry the reply (no future,
nothing registered), parks it otherwise until a later call, poll or unload answers it, and keeps one
wheel timer per shard that is re-armed only when the coordinator's deadline moves earlier.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from broker.coordinator.runtime import CoordinatorRuntime, Shard
from broker.coordinator.write import TxnMarker, Write
from protocol.error_codes import ErrorCode
from protocol.records import ZSTD, decode_batch


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
    assert isinstance(parked, asyncio.Future) and not parked.done()
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


class _Log(_Replica):
    """A replica manager whose appends the test completes: each append's batch (or marker) and its future."""

    def __init__(self, max_message_bytes: int | None = None) -> None:
        self.appends: list[tuple[Any, asyncio.Future[tuple[int, int]]]] = []
        self.partitions: dict[tuple[str, int], Any] = {}
        if max_message_bytes is not None:
            config = SimpleNamespace(max_message_bytes=max_message_bytes)
            self.partitions[("__test", 0)] = SimpleNamespace(log=SimpleNamespace(config=config))

    def _append(self, what: Any) -> asyncio.Future[tuple[int, int]]:
        future: asyncio.Future[tuple[int, int]] = asyncio.get_running_loop().create_future()
        self.appends.append((what, future))
        return future

    def append_to_leader(self, topic: str, partition: int, batch: bytes, timeout_ms: int) -> Any:
        return self._append(batch)

    def write_marker(self, topic: str, partition: int, producer_id: int, producer_epoch: int, commit: bool,
                     coordinator_epoch: int, timeout_ms: int) -> Any:
        return self._append(("marker", producer_id, commit))

    def records(self, index: int) -> list[tuple[bytes | None, bytes | None]]:
        return [(r.key, r.value) for r in decode_batch(self.appends[index][0])[1]]

    def complete(self, index: int, code: int = ErrorCode.NONE) -> None:
        self.appends[index][1].set_result((code, index))


class _Writing(_Coordinator):
    """Hands out ``Write(write_id, 0, records)`` per call and answers the call once that write completed;
    records each write's outcome in the order the runtime reports them."""

    def __init__(self) -> None:
        super().__init__()
        self.outcomes: list[tuple[int, int]] = []
        self.waiting: dict[int, Hashable] = {}

    def write(self, token: Hashable, write: Write) -> _Effects:
        self.waiting[write.write_id] = token
        return _Effects(writes=[write])

    def write_committed(self, now_ms: int, write_id: int) -> _Effects:
        self.outcomes.append((write_id, ErrorCode.NONE))
        token = self.waiting.pop(write_id, None)
        return _Effects(replies=[(token, {"committed": write_id})] if token is not None else [])

    def write_failed(self, now_ms: int, write_id: int, error_code: int) -> _Effects:
        self.outcomes.append((write_id, error_code))
        token = self.waiting.pop(write_id, None)
        return _Effects(replies=[(token, {"failed": write_id, "code": error_code})] if token is not None else [])


def _writing(replica: _Log, compression: int = 0) -> tuple[CoordinatorRuntime[Any], Shard[Any], _Writing]:
    runtime: CoordinatorRuntime[Any] = CoordinatorRuntime(
        topic="__test", replica=replica, timer=_Timer(),  # type: ignore[arg-type]
        new_coordinator=lambda partition, epoch: _Writing(), compression=compression)
    coordinator = _Writing()
    shard: Shard[Any] = Shard(0, 1, coordinator=coordinator, loading=False)  # type: ignore[arg-type]
    runtime.shards[0] = shard
    return runtime, shard, coordinator


async def _settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


def _records(n: int, tag: bytes = b"member") -> list[tuple[bytes, bytes | None]]:
    return [(b"%s-key-%d" % (tag, i), b"%s " % tag * 50) for i in range(n)]


async def test_the_writes_of_a_loop_iteration_are_one_compressed_batch() -> None:
    """The writes that calls of one loop iteration hand out go to the log as one batch, compressed with the
    runtime's codec (``offsets.topic.compression.codec``), records intact and in hand-out order; each write
    completes on its own, in order."""
    replica = _Log()
    runtime, shard, coordinator = _writing(replica, compression=ZSTD)
    records = _records(20)
    runtime.apply(shard, _Effects(writes=[Write(1, 0, records[:5])]))
    runtime.apply(shard, _Effects(writes=[Write(2, 0, records[5:12]), Write(3, 0, records[12:])]))
    assert replica.appends == []  # nothing goes out before the loop iteration ends
    await asyncio.sleep(0)
    assert len(replica.appends) == 1
    header, _ = decode_batch(replica.appends[0][0])
    assert header.compression == ZSTD
    assert replica.records(0) == records
    assert len(replica.appends[0][0]) < sum(len(k) + len(v or b"") for k, v in records) // 4
    replica.complete(0)
    await _settle()
    assert coordinator.outcomes == [(1, 0), (2, 0), (3, 0)]


async def test_each_request_is_answered_only_once_the_batch_carrying_its_records_committed() -> None:
    replica = _Log()
    runtime, shard, _ = _writing(replica)
    first = asyncio.ensure_future(runtime.run(shard, lambda c, t: c.write(t, Write(1, 0, _records(2))), _on_error))
    second = asyncio.ensure_future(runtime.run(shard, lambda c, t: c.write(t, Write(2, 0, _records(3))), _on_error))
    await _settle()
    assert len(replica.appends) == 1 and len(replica.records(0)) == 5
    assert not first.done() and not second.done()  # appended, not yet replicated
    replica.complete(0)
    assert await first == {"committed": 1} and await second == {"committed": 2}
    assert runtime._pending == {} and shard.tokens == set()


async def test_a_failed_append_fails_exactly_the_requests_whose_records_it_carried() -> None:
    """Two loop iterations, two batches: the first fails, the second commits (and completes first).  The
    first batch's requests get its error, the second's commit, and the outcomes are reported in hand-out
    order."""
    replica = _Log()
    runtime, shard, coordinator = _writing(replica)
    calls = []
    for write_id in (1, 2):
        calls.append(asyncio.ensure_future(runtime.run(
            shard, lambda c, t, w=write_id: c.write(t, Write(w, 0, _records(1, b"a%d" % w))), _on_error)))
    await _settle()
    calls.append(asyncio.ensure_future(runtime.run(
        shard, lambda c, t: c.write(t, Write(3, 0, _records(1, b"b"))), _on_error)))
    await _settle()
    assert len(replica.appends) == 2
    assert [k for k, _ in replica.records(0)] == [b"a1-key-0", b"a2-key-0"]
    assert [k for k, _ in replica.records(1)] == [b"b-key-0"]
    replica.complete(1)
    await _settle()
    assert coordinator.outcomes == [] and not any(c.done() for c in calls)  # the second waits for the first
    replica.complete(0, ErrorCode.NOT_ENOUGH_REPLICAS)
    results = [await c for c in calls]
    code = ErrorCode.NOT_ENOUGH_REPLICAS
    assert results == [{"failed": 1, "code": code}, {"failed": 2, "code": code}, {"committed": 3}]
    assert coordinator.outcomes == [(1, code), (2, code), (3, ErrorCode.NONE)]


async def test_markers_and_transactional_writes_go_alone_and_everything_keeps_its_order() -> None:
    """Only consecutive plain writes merge: a transactional batch or a marker between them ends the batch, so
    the log holds every record in hand-out order (a load replays what the coordinator saw)."""
    replica = _Log()
    runtime, shard, coordinator = _writing(replica)
    writes = [Write(1, 0, _records(1, b"p1")), Write(2, 0, _records(1, b"p2")),
              Write(3, 0, _records(1, b"t3"), producer_id=7, producer_epoch=0),
              Write(4, 0, _records(1, b"p4")),
              Write(5, 0, [], producer_id=7, producer_epoch=0, marker=TxnMarker(True, 3)),
              Write(6, 0, _records(1, b"p6")), Write(7, 0, _records(1, b"p7"))]
    runtime.apply(shard, _Effects(writes=writes[:4]))
    runtime.apply(shard, _Effects(writes=writes[4:]))
    await asyncio.sleep(0)
    kinds = []
    for what, _ in replica.appends:
        if isinstance(what, tuple):
            kinds.append(what)
        else:
            header, batch = decode_batch(what)
            kinds.append((header.producer_id, [r.key for r in batch]))
    assert kinds == [(-1, [b"p1-key-0", b"p2-key-0"]), (7, [b"t3-key-0"]), (-1, [b"p4-key-0"]),
                     ("marker", 7, True), (-1, [b"p6-key-0", b"p7-key-0"])]
    assert decode_batch(replica.appends[1][0])[0].is_transactional
    for index in reversed(range(len(replica.appends))):
        replica.complete(index)
    await _settle()
    assert [w for w, _ in coordinator.outcomes] == [1, 2, 3, 4, 5, 6, 7]


async def test_a_batch_carries_at_most_half_the_partitions_max_message_bytes() -> None:
    replica = _Log(max_message_bytes=2_000)
    runtime, shard, coordinator = _writing(replica)
    big = [(b"k", b"v" * 600)]
    runtime.apply(shard, _Effects(writes=[Write(i, 0, big) for i in range(1, 5)]))
    runtime.apply(shard, _Effects(writes=[Write(5, 0, [(b"k", b"v" * 3_000)])]))  # alone, as it always was
    await asyncio.sleep(0)
    assert [len(decode_batch(what)[1]) for what, _ in replica.appends] == [1, 1, 1, 1, 1]
    replica.partitions[("__test", 0)].log.config.max_message_bytes = 4_000
    runtime.apply(shard, _Effects(writes=[Write(i, 0, big) for i in range(6, 10)]))
    await asyncio.sleep(0)
    assert [len(decode_batch(what)[1]) for what, _ in replica.appends[5:]] == [3, 1]
    for index in range(len(replica.appends)):
        replica.complete(index)
    await _settle()
    assert [w for w, _ in coordinator.outcomes] == list(range(1, 10))


async def test_writes_handed_out_before_an_unload_are_never_appended() -> None:
    replica = _Log()
    runtime, shard, coordinator = _writing(replica)
    task = asyncio.ensure_future(runtime.run(shard, lambda c, t: c.write(t, Write(1, 0, _records(1))), _on_error))
    runtime._unload(shard)  # leadership lost in the same loop iteration
    assert await task == {"error": ErrorCode.NOT_COORDINATOR}
    await _settle()
    assert replica.appends == [] and coordinator.outcomes == []
