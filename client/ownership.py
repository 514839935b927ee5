"""One owner at a time: a consumer is used by one thread, and by one asyncio task at a time.

:class:`Ownership` is what :class:`~client.consumer.Consumer` and :class:`~client.share_consumer.ShareConsumer`
wrap each call in (``with self._owned(): ...``): a call from another thread than the event loop's it
was started on, or from a second task while a call is in progress, raises
:class:`~client.errors.ConcurrentAccessError`.  Calls may nest within one task.  A call that never
awaits (``ShareConsumer.acknowledge``, once per record) only checks (:meth:`Ownership.check`): no other
task can run while it does, so it need not hold the ownership.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Iterator
from typing import Any

from client.errors import ConcurrentAccessError

__all__ = ["Ownership"]


class Ownership:
    """The owner of a client's calls (``what``: how errors name the client)."""

    def __init__(self, what: str) -> None:
        self.what = what
        self.loop_thread: int | None = None
        #: the (thread, task) inside a call now, or None
        self.owner: tuple[int, Any] | None = None
        self._depth = 0

    def bind(self) -> None:
        """The client started on this thread's event loop: only this thread may use it."""
        self.loop_thread = threading.get_ident()

    def check(self) -> tuple[int, Any]:
        """The calling (thread, task), when it may use the client now (ConcurrentAccessError if not).  Alone
        (not ``with self():``), for a call that never awaits: no other task runs during it, so it need not
        hold the ownership.  A call made once per record may skip even this when ``owner is None and
        threading.get_ident() == loop_thread`` (nothing to check then)."""
        me_thread = threading.get_ident()
        if self.loop_thread is not None and me_thread != self.loop_thread:
            raise ConcurrentAccessError(
                f"{self.what} used from thread {me_thread} but it runs on the event loop of thread "
                f"{self.loop_thread}; it is owned by one thread/task at a time")
        try:
            task = asyncio.current_task()
        except RuntimeError:
            task = None
        me = (me_thread, task)
        if self.owner is not None and self.owner != me:
            raise ConcurrentAccessError(f"{self.what} is in use by {self.owner[1]!r}; concurrent use is not allowed")
        return me

    @contextlib.contextmanager
    def __call__(self) -> Iterator[None]:
        self.owner = self.check()
        self._depth += 1
        try:
            yield
        finally:
            self._depth -= 1
            if self._depth == 0:
                self.owner = None
