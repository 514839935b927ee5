"""Synchronous facade: :class:`SyncProducer`, :class:`SyncConsumer`, :class:`SyncShareConsumer`, :class:`SyncAdmin`.

Each wrapper starts a private event loop in a daemon thread and runs the asyncio client there;
every method blocks the calling thread until the coroutine finishes.  Meant for plain scripts
and Spark executors that must not manage an event loop::

    from client.sync import SyncConsumer
    with SyncConsumer("orders", bootstrap_servers=bs, group_id="g") as c:
        batch = c.getmany(timeout_ms=500)

A SyncConsumer (or SyncShareConsumer) is owned by one thread at a time: a call while another thread is
inside a call raises :class:`~client.errors.ConcurrentAccessError`.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, TypeVar

from client.admin import Admin
from client.consumer import Consumer
from client.errors import ConcurrentAccessError
from client.producer import Producer
from client.share_consumer import ShareConsumer
from client.share_fetcher import AcknowledgeType
from client.types import Record, RecordMetadata

T = TypeVar("T")


class _LoopThread:
    def __init__(self, name: str) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name=name, daemon=True)
        self._thread.start()

    def run(self, coro: Awaitable[T], timeout: float | None = None) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)  # type: ignore[arg-type]

    def call(self, fn: Callable[..., T], *args: Any) -> T:
        async def invoke() -> T:
            return fn(*args)

        return self.run(invoke())

    def stop(self) -> None:
        if self.loop.is_running():
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(10)
        if not self.loop.is_running():
            self.loop.close()


class _SyncBase:
    _client: Any

    def __init__(self, factory: Callable[[], Any], name: str) -> None:
        self._lt = _LoopThread(name)
        try:
            self._client = self._lt.call(factory)
            self._lt.run(self._client.start())
        except BaseException:
            self._lt.stop()
            raise
        self._closed = False

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            self._lt.run(self._client.close(), 60)
        finally:
            self._lt.stop()

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class SyncProducer(_SyncBase):
    """Blocking :class:`~client.producer.Producer`."""

    def __init__(self, **config: Any) -> None:
        super().__init__(lambda: Producer(**config), "kbroker-sync-producer")

    def send(self, topic: str, value: Any = None, key: Any = None, headers: Any = None,
             partition: int | None = None, timestamp_ms: int | None = None) -> RecordMetadata:
        return self._lt.run(self._client.send(topic, value, key, headers, partition, timestamp_ms))

    def send_async(self, topic: str, value: Any = None, key: Any = None, headers: Any = None,
                   partition: int | None = None, timestamp_ms: int | None = None) -> Any:
        """Enqueue without waiting for delivery; returns a ``concurrent.futures.Future[RecordMetadata]``."""
        async def enqueue() -> Any:
            fut = await self._client.enqueue(topic, value, key, headers, partition, timestamp_ms)
            return asyncio.ensure_future(_wait(fut))

        task = self._lt.run(enqueue())
        return asyncio.run_coroutine_threadsafe(_wait(task), self._lt.loop)

    def flush(self, timeout_s: float | None = None) -> None:
        self._lt.run(self._client.flush(timeout_s))

    def partitions_for(self, topic: str) -> set[int]:
        return self._lt.run(self._client.partitions_for(topic))


async def _wait(fut: Awaitable[T]) -> T:
    return await fut


class _OwnedSync(_SyncBase):
    """A wrapper used by one thread at a time (a second thread's call raises ConcurrentAccessError)."""

    def __init__(self, factory: Callable[[], Any], name: str) -> None:
        self._guard = threading.Lock()
        self._owner: int | None = None
        super().__init__(factory, name)

    def _call(self, coro_fn: Callable[[], Awaitable[T]]) -> T:
        me = threading.get_ident()
        if not self._guard.acquire(blocking=False):
            raise ConcurrentAccessError(f"{type(self).__name__} is in use by thread {self._owner}; "
                                        f"thread {me} may not use it concurrently")
        self._owner = me
        try:
            return self._lt.run(coro_fn())
        finally:
            self._owner = None
            self._guard.release()

    def _call_sync(self, fn: Callable[..., T], *args: Any) -> T:
        async def invoke() -> T:
            return fn(*args)

        return self._call(invoke)


class SyncConsumer(_OwnedSync):
    """Blocking :class:`~client.consumer.Consumer`; iterate it for records."""

    def __init__(self, *topics: str, **config: Any) -> None:
        super().__init__(lambda: Consumer(*topics, **config), "kbroker-sync-consumer")

    def subscribe(self, topics: Any = (), pattern: str | None = None, listener: Any = None) -> None:
        self._call_sync(self._client.subscribe, topics, pattern, listener)

    def assign(self, partitions: Any) -> None:
        self._call_sync(self._client.assign, partitions)

    def assignment(self) -> set[Any]:
        return self._client.assignment()

    def getmany(self, *partitions: Any, timeout_ms: int = 0, max_records: int | None = None) -> dict[Any, list[Record]]:
        return self._call(lambda: self._client.getmany(*partitions, timeout_ms=timeout_ms, max_records=max_records))

    def getmany_record_sets(self, *partitions: Any, timeout_ms: int = 0) -> dict[Any, list[tuple[Any, int, Any]]]:
        """See :meth:`client.consumer.Consumer.getmany_record_sets`."""
        return self._call(lambda: self._client.getmany_record_sets(*partitions, timeout_ms=timeout_ms))

    poll = getmany

    def getone(self, *partitions: Any) -> Record:
        return self._call(lambda: self._client.getone(*partitions))

    def __iter__(self) -> Iterator[Record]:
        while not self._closed:
            for recs in self.getmany(timeout_ms=1000).values():
                yield from recs

    def commit(self, offsets: Any = None) -> None:
        self._call(lambda: self._client.commit(offsets))

    def committed(self, tp: Any) -> int | None:
        return self._call(lambda: self._client.committed(tp))

    def position(self, tp: Any) -> int:
        return self._call(lambda: self._client.position(tp))

    def seek(self, tp: Any, offset: int) -> None:
        self._call_sync(self._client.seek, tp, offset)

    def seek_to_beginning(self, *tps: Any) -> None:
        self._call(lambda: self._client.seek_to_beginning(*tps))

    def seek_to_end(self, *tps: Any) -> None:
        self._call(lambda: self._client.seek_to_end(*tps))

    def pause(self, *tps: Any) -> None:
        self._call_sync(self._client.pause, *tps)

    def resume(self, *tps: Any) -> None:
        self._call_sync(self._client.resume, *tps)

    def beginning_offsets(self, tps: Any) -> dict[Any, int]:
        return self._call(lambda: self._client.beginning_offsets(list(tps)))

    def end_offsets(self, tps: Any) -> dict[Any, int]:
        return self._call(lambda: self._client.end_offsets(list(tps)))

    def offsets_for_times(self, timestamps: Any) -> dict[Any, Any]:
        return self._call(lambda: self._client.offsets_for_times(dict(timestamps)))

    def partitions_for_topic(self, topic: str) -> set[int] | None:
        return self._call(lambda: self._client.partitions_for_topic(topic))

    def topics(self) -> set[str]:
        return self._call(lambda: self._client.topics())


class SyncShareConsumer(_OwnedSync):
    """Blocking :class:`~client.share_consumer.ShareConsumer` (same arguments); iterate it for records
    (implicit mode: each batch is accepted when the next one is asked for)."""

    def __init__(self, *topics: str, acknowledgement_mode: str = "implicit", **config: Any) -> None:
        super().__init__(lambda: ShareConsumer(*topics, acknowledgement_mode=acknowledgement_mode, **config),
                         "kbroker-sync-share-consumer")

    def subscribe(self, topics: Any) -> None:
        self._call_sync(self._client.subscribe, topics)

    def subscription(self) -> set[str]:
        return self._client.subscription()

    def assignment(self) -> set[Any]:
        return self._client.assignment()

    @property
    def member_id(self) -> str | None:
        return self._client.member_id

    @property
    def acquisition_lock_timeout_ms(self) -> int | None:
        return self._client.acquisition_lock_timeout_ms

    @property
    def buffered(self) -> int:
        return self._client.buffered

    def getmany(self, timeout_ms: int = 0, max_records: int | None = None) -> dict[Any, list[Record]]:
        return self._call(lambda: self._client.getmany(timeout_ms=timeout_ms, max_records=max_records))

    poll = getmany

    def acknowledge(self, record: Record, ack_type: AcknowledgeType = AcknowledgeType.ACCEPT) -> None:
        self._call_sync(self._client.acknowledge, record, ack_type)

    def commit(self) -> dict[Any, Any]:
        return self._call(lambda: self._client.commit())

    def __iter__(self) -> Iterator[Record]:
        while not self._closed:
            for recs in self.getmany(timeout_ms=1000).values():
                yield from recs


class SyncAdmin(_SyncBase):
    """Blocking :class:`~client.admin.Admin`; every Admin coroutine method is available as a plain method."""

    def __init__(self, **config: Any) -> None:
        super().__init__(lambda: Admin(**config), "kbroker-sync-admin")

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._client, name)
        if not callable(attr) or name.startswith("_"):
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            result = attr(*args, **kwargs)
            return self._lt.run(result) if asyncio.iscoroutine(result) else result

        return call
