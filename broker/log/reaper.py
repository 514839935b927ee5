"""Closing deleted segments' files off the owner's thread.

The last close of a segment file that retention, truncation or a compaction swap removed frees the
file's page cache and blocks in the kernel — 35-42 ms for a synced 128 MiB segment on this project's
test machine — so a retention check that drops a few dozen segments would hold the event loop, and
every connection on it, for a second or more.  :class:`FileReaper` does those closes, in order, on one
daemon thread of its own; :meth:`FileReaper.close` waits for the queue to empty (shutdown).
"""

from __future__ import annotations

import logging
import queue
import threading
from typing import BinaryIO

logger = logging.getLogger("kbroker.log")


class FileReaper:
    """Closes the files it is handed, in order, on its own thread (started on the first one)."""

    def __init__(self, name: str = "kbroker-file-reaper") -> None:
        self._name = name
        self._queue: queue.SimpleQueue[BinaryIO | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._closed = False

    def close_file(self, file: BinaryIO) -> None:
        """Close ``file`` soon, off the caller's thread (at once, on it, once the reaper is closed)."""
        with self._lock:
            if self._closed:
                closed_now = True
            else:
                closed_now = False
                if self._thread is None:
                    self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
                    self._thread.start()
                self._queue.put(file)
        if closed_now:
            _close(file)

    def close(self) -> None:
        """Close everything handed over so far, then stop (idempotent); later files close at once."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            thread = self._thread
            if thread is not None:
                self._queue.put(None)
        if thread is not None:
            thread.join()

    def _run(self) -> None:
        while True:
            file = self._queue.get()
            if file is None:
                return
            _close(file)


def _close(file: BinaryIO) -> None:
    try:
        file.close()
    except OSError:
        logger.exception("closing %s failed", getattr(file, "name", file))
