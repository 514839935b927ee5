"""The log-directory failure channel: the one place a storage I/O failure of a data directory goes.

Why a failed fsync takes the directory offline instead of being retried: when
``fsync`` reports an error, Linux may already have dropped the dirty pages and
cleared the error, so a second ``fsync`` can succeed although the data never
reached the disk ("fsyncgate", 2018).  PostgreSQL and Kafka both concluded that
the only safe reaction is to stop trusting the directory: Kafka's
``LogDirFailureChannel`` marks the directory offline and a broker whose last
directory is offline shuts down; restarting then runs recovery from the last
recovery point, which CRC-checks everything that was not known to be on disk.

``LogDirFailureChannel`` is owned by ``LogManager`` and shared by its partition
logs.  It is synchronous and thread-agnostic, but reports are made from the
thread that owns the logs (the event loop).  Once offline it stays offline for
the life of the process: appends, reads and flushes raise ``KafkaStorageError``
(error 56, which clients treat as retriable) and nothing moves a recovery point
or writes a checkpoint.  Listeners (the broker core) are told once.
"""

from __future__ import annotations

import errno as errno_codes
import logging
from collections.abc import Callable
from dataclasses import dataclass

from broker.log.errors import KafkaStorageError

logger = logging.getLogger("kbroker.log")


@dataclass(frozen=True, slots=True)
class LogDirFailure:
    """What took a log directory offline: the operation, the file and the OS error."""

    directory: str
    operation: str  # "fsync", "write", "checkpoint", "compaction"...
    path: str
    errno: int | None
    strerror: str

    def describe(self) -> str:
        name = errno_codes.errorcode.get(self.errno, "?") if self.errno is not None else "-"
        return (f"{self.operation} of {self.path} failed: errno {self.errno} ({name}: {self.strerror})")


FailureListener = Callable[[LogDirFailure], None]


class LogDirFailureChannel:
    """Offline state of one data directory; the first reported failure wins and is kept."""

    def __init__(self, directory: str) -> None:
        self.directory = directory
        self._failure: LogDirFailure | None = None
        self._listeners: list[FailureListener] = []

    @property
    def offline(self) -> bool:
        return self._failure is not None

    @property
    def failure(self) -> LogDirFailure | None:
        return self._failure

    def add_listener(self, listener: FailureListener) -> None:
        """Call ``listener(failure)`` once when the directory goes offline (at once if it already is)."""
        self._listeners.append(listener)
        if self._failure is not None:
            listener(self._failure)

    def report(self, operation: str, path: str, exc: OSError) -> KafkaStorageError:
        """Record an I/O failure (only the first one counts), tell the listeners (who log it),
        and return the error to raise."""
        if self._failure is None:
            self._failure = LogDirFailure(self.directory, operation, path, exc.errno,
                                          exc.strerror or str(exc))
            for listener in list(self._listeners):
                try:
                    listener(self._failure)
                except Exception:
                    logger.exception("log directory failure listener failed")
        return self.error()

    def error(self) -> KafkaStorageError:
        failure = self._failure
        reason = failure.describe() if failure is not None else "unknown failure"
        return KafkaStorageError(f"log directory {self.directory} is offline ({reason})")

    def check(self) -> None:
        """Raise ``KafkaStorageError`` if the directory is offline."""
        if self._failure is not None:
            raise self.error()
