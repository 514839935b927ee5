"""FileRegion: record bytes that stay in segment files until a connection sends them (``sendfile``).

A read of the log (:class:`~broker.log.partition_log.ReadResult`) becomes a region that keeps its
segment files open until the response is handed to the socket or dropped; the network edge sends
it without copying.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from protocol.primitives import ExternalBytes

if TYPE_CHECKING:
    from broker.log.segment import SegmentFile

__all__ = ["FileRegion", "read_region", "release_parts"]


class FileRegion(ExternalBytes):
    """Record bytes in segment files: ``(file, offset, length)`` chunks sent back to back.

    The region takes a reference on every :class:`~broker.log.segment.SegmentFile` it names
    and keeps it until :meth:`release`, which the connection calls once the bytes are handed to
    the socket or the connection is dropped.  ``on_sent(size)`` runs once the whole region has
    been handed to the socket (never for a response that was not sent).
    """

    __slots__ = ("_held", "chunks", "on_sent")

    def __init__(self, chunks: list[tuple[SegmentFile, int, int]],
                 on_sent: Callable[[int], None] | None = None) -> None:
        super().__init__(sum(c[2] for c in chunks))
        held: list[SegmentFile] = []
        try:
            for handle, _, _ in chunks:
                held.append(handle.retain())
        except BaseException:
            for handle in held:
                handle.release()
            raise
        self.chunks = chunks
        self.on_sent = on_sent
        self._held = held

    def release(self) -> None:
        """Give the file references back (idempotent)."""
        held, self._held = self._held, []
        for handle in held:
            handle.release()

    def __del__(self) -> None:
        # Safety net for a response dropped before reaching a connection (its request task
        # was cancelled): the references go with the region instead of leaking.
        if getattr(self, "_held", None):
            self.release()


def read_region(region: FileRegion) -> bytes:
    """The bytes of ``region``, read from its files (blocking: call it off the event loop), and the
    region released."""
    try:
        return b"".join(os.pread(handle.fileno(), length, offset) for handle, offset, length in region.chunks)
    finally:
        region.release()


def release_parts(parts: Any) -> None:
    """Release the file regions of response parts that will not be written."""
    if parts:
        for part in parts:
            if isinstance(part, FileRegion):
                part.release()
