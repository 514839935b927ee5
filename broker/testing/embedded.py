"""Run a broker inside a Python process: an async context manager and a thread-backed variant.

    async with Broker() as broker:            # random port, temporary data dir
        bootstrap = broker.bootstrap_servers

    with BrokerThread(data_dir="/tmp/k") as broker:   # for synchronous test suites
        ...

Both expose :attr:`faults` for fault injection.  Without an explicit config
they listen on 127.0.0.1 on a free port, keep data in a temporary directory
removed on exit, and use ``group_initial_rebalance_delay_ms=0`` so groups
form immediately.
"""

from __future__ import annotations

import asyncio
import inspect
import shutil
import tempfile
import threading
from concurrent.futures import Future
from typing import Any

from broker.config.settings import BrokerConfig
from broker.core import BrokerCore
from broker.testing.faults import FaultInjector


def _embedded_config(config: BrokerConfig | None, overrides: dict[str, Any]) -> tuple[BrokerConfig, str | None]:
    tmp = None
    if config is None:
        base = {"port": 0, "group_initial_rebalance_delay_ms": 0, "metrics_port": None}
        base.update(overrides)
        if "data_dir" not in base:
            tmp = tempfile.mkdtemp(prefix="kbroker-")
            base["data_dir"] = tmp
        config = BrokerConfig(**base)
    elif overrides:
        config = config.with_overrides(**overrides)
    return config, tmp


class Broker:
    """An in-process broker on the running event loop."""

    def __init__(self, config: BrokerConfig | None = None, **overrides: Any) -> None:
        self.config, self._tmp = _embedded_config(config, overrides)
        self.core = BrokerCore(self.config, faults=FaultInjector())

    async def start(self) -> Broker:
        await self.core.start()
        return self

    async def stop(self) -> None:
        await self.core.stop()
        if self._tmp:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None

    async def __aenter__(self) -> Broker:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    @property
    def host(self) -> str:
        return self.core.advertised[0]

    @property
    def port(self) -> int:
        return self.core.advertised[1]

    @property
    def bootstrap_servers(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def faults(self) -> FaultInjector:
        assert self.core.faults is not None
        return self.core.faults

    @property
    def data_dir(self) -> str:
        return self.config.data_dir


class BrokerThread:
    """A broker running on its own event loop in a daemon thread."""

    def __init__(self, config: BrokerConfig | None = None, **overrides: Any) -> None:
        self.broker = Broker(config, **overrides)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._stopped: asyncio.Event | None = None
        self._calls: set[asyncio.Future[None]] = set()

    def start(self, timeout: float = 30.0) -> BrokerThread:
        started: Future[None] = Future()

        def run() -> None:
            try:
                import uvloop

                loop: asyncio.AbstractEventLoop = uvloop.new_event_loop()
            except ImportError:
                loop = asyncio.new_event_loop()
            self._loop = loop
            asyncio.set_event_loop(loop)

            async def main() -> None:
                self._stopped = asyncio.Event()
                try:
                    await self.broker.start()
                except BaseException as exc:
                    started.set_exception(exc)
                    return
                started.set_result(None)
                await self._stopped.wait()
                await self.broker.stop()

            try:
                loop.run_until_complete(main())
            finally:
                loop.close()

        self._thread = threading.Thread(target=run, name="kbroker", daemon=True)
        self._thread.start()
        started.result(timeout)
        return self

    def stop(self, timeout: float = 30.0) -> None:
        thread = self._thread
        if self._loop is not None and self._stopped is not None and thread is not None and thread.is_alive():
            self._loop.call_soon_threadsafe(self._stopped.set)
            thread.join(timeout)
        self._thread = None

    def __enter__(self) -> BrokerThread:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def call(self, fn: Any, *args: Any) -> Any:
        """Run ``fn(*args)`` on the broker's loop and return its result (for inspecting state).

        When ``fn`` returns an awaitable (``core.create_topic(...)``), its result is awaited on the loop.
        """
        assert self._loop is not None
        result: Future[Any] = Future()

        def invoke() -> None:
            try:
                value = fn(*args)
            except BaseException as exc:
                result.set_exception(exc)
                return
            if not inspect.isawaitable(value):
                result.set_result(value)
                return

            async def wait() -> None:
                try:
                    result.set_result(await value)
                except BaseException as exc:
                    result.set_exception(exc)

            self._calls.add(task := asyncio.ensure_future(wait()))
            task.add_done_callback(self._calls.discard)

        self._loop.call_soon_threadsafe(invoke)
        return result.result(30)

    @property
    def bootstrap_servers(self) -> str:
        return self.broker.bootstrap_servers

    @property
    def host(self) -> str:
        return self.broker.host

    @property
    def port(self) -> int:
        return self.broker.port

    @property
    def faults(self) -> FaultInjector:
        return self.broker.faults

    @property
    def core(self) -> BrokerCore:
        return self.broker.core

    @property
    def config(self) -> BrokerConfig:
        return self.broker.config
