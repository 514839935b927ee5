"""Producer ids for idempotent (and later transactional) producers, unique across the cluster.

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

    def try_next(self) -> int | None:
        """An id from the current block, or None when a new block is needed."""
        if self._next < self._end:
            pid = self._next
            self._next += 1
            return pid
        return None

    async def next_id(self) -> int:
        pid = self.try_next()
        if pid is not None:
            return pid
        async with self._lock:
            pid = self.try_next()
            if pid is None:
                self._next, self._end = await self.metadata.allocate_producer_ids()
                pid = self.try_next()
            assert pid is not None
            return pid
