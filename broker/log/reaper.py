"""Freeing disk space off the owner's thread: deleted segments' last closes and deleted partitions' files.

The last close of a segment file that retention, truncation or a compaction swap removed frees the
file's page cache and blocks in the kernel — 35-42 ms for a synced 128 MiB segment on this project's
test machine —; unlinking a closed index frees its blocks (a retention check's unlinks held the loop
for up to 205 ms there under heavy writes), and so does unlinking a closed segment when a topic's
directory is removed.  A retention check that drops a few dozen segments, or the deletion of a large
topic, would hold the event loop, and every connection on it, for seconds.  :class:`FileReaper` does
that work, in order, on one daemon thread of its own; :meth:`FileReaper.close` waits for the queue to
empty (shutdown).  A directory or file handed over is one already renamed aside (``*.delete``,
``*.deleted``): what a crash leaves behind is removed at the next start.
"""

from __future__ import annotations

import logging
import queue
import shutil
import threading
from collections.abc import Callable
from typing import BinaryIO

from broker.log._fs import unlink_if_present

logger = logging.getLogger("kbroker.log")


class FileReaper:
    """Closes the files and removes the directories it is handed, in order, on its own thread (started
    on the first one)."""

    def __init__(self, name: str = "kbroker-file-reaper") -> None:
        self._name = name
        self._queue: queue.SimpleQueue[Callable[[], None] | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._closed = False

    def close_file(self, file: BinaryIO) -> None:
        """Close ``file`` soon, off the caller's thread (at once, on it, once the reaper is closed)."""
        self._submit(lambda: _close(file))

    def remove_files(self, paths: list[str]) -> None:
        """Unlink ``paths`` (a removed segment's files, already renamed aside), off the caller's thread."""
        self._submit(lambda: _unlink(paths))

    def remove_tree(self, path: str) -> None:
        """Remove the directory ``path`` (already renamed aside) and everything in it, off the caller's thread."""
        self._submit(lambda: _remove(path))

    def _submit(self, job: Callable[[], None]) -> None:
        with self._lock:
            if not self._closed:
                if self._thread is None:
                    self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
                    self._thread.start()
                self._queue.put(job)
                return
        job()

    def close(self) -> None:
        """Finish everything handed over so far, then stop (idempotent); later work is done at once, on
        the caller's thread."""
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
            job = self._queue.get()
            if job is None:
                return
            try:
                job()
            except Exception:  # the next jobs still run
                logger.exception("freeing disk space failed")


def _close(file: BinaryIO) -> None:
    try:
        file.close()
    except OSError:
        logger.exception("closing %s failed", getattr(file, "name", file))


def _unlink(paths: list[str]) -> None:
    for path in paths:
        try:
            unlink_if_present(path)  # gone: replaced by a later removal of a segment of the same name
        except OSError:
            logger.exception("removing %s failed", path)  # the next start removes it


def _remove(path: str) -> None:
    shutil.rmtree(path, ignore_errors=True)  # as before: what cannot go now goes at the next start
