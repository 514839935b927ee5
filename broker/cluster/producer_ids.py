"""Producer ids for idempotent and transactional producers, unique across the cluster.

Ids are taken from the metadata store in blocks (Kafka's ``ProducerIdManager``:
a compare-and-set on the last block handed out), so no two brokers, and no
restart of the same broker, ever hand out the same id.
"""

from __future__ import annotations

import asyncio

from broker.cluster.metadata import MetadataService

__all__ = ["ProducerIdManager"]


class ProducerIdManager:
    def __init__(self, metadata: MetadataService) -> None:
        self.metadata = metadata
        self._next = 0
        self._end = 0
        self._lock = asyncio.Lock()

    @property
    def available(self) -> int:
        """Ids left in the current block (``try_next`` succeeds while this is positive)."""
        return self._end - self._next

    async def prefetch(self) -> None:
        """Make sure ``try_next`` has an id to hand out (fetch a block if the current one is used up)."""
        if self.available > 0:
            return
        async with self._lock:
            if self.available <= 0:
                self._next, self._end = await self.metadata.allocate_producer_ids()

    def try_next(self) -> int | None:
        """An id from the current block, or None when a new block is needed."""
        if self._next < self._end:
            pid = self._next
            self._next += 1
            return pid
        return None

    async def next_id(self) -> int:
        pid = self.try_next()
        while pid is None:
            await self.prefetch()
            pid = self.try_next()
        return pid
