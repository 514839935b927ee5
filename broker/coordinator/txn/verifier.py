"""TxnVerifier: a partition leader asks a transactional producer's coordinator about its partitions.

Before the batch that would open a producer's transaction in a partition is appended, the
leader checks with the producer's transaction coordinator that the partition belongs to the
ongoing transaction (KIP-890 part 1: AddPartitionsToTxn v4+ with ``verify_only``), so a late
or stray batch can never open a transaction nobody will end.  For Produce v12+ (transaction
version 2) the same request without ``verify_only`` adds the partition instead.  Coordinator
trouble (no leader for its partition, a lost connection) reads as the coordinator being
unavailable: the producer retries.  A coordinator on this very broker is asked in process
(:class:`~broker.coordinator.txn.channel.TxnChannel`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from broker.coordinator.txn.channel import TxnChannel
from protocol.api import ApiKey
from protocol.error_codes import ErrorCode

log = logging.getLogger("kbroker.txn.verifier")

__all__ = ["TxnVerifier"]

E = ErrorCode
TopicPartition = tuple[str, int]


class TxnVerifier:
    def __init__(self, channel: TxnChannel, *, coordinator_of: Callable[[str], int | None],
                 timeout_ms: int) -> None:
        """``coordinator_of(transactional_id)``: the broker leading its ``__transaction_state`` partition."""
        self.channel = channel
        self.coordinator_of = coordinator_of
        self.timeout_ms = timeout_ms

    async def verify(self, transactional_id: str, producer_id: int, producer_epoch: int,
                     partitions: Sequence[TopicPartition], *, add: bool) -> dict[TopicPartition, int]:
        """Per partition: NONE when it belongs to (or, with ``add``, was added to) the ongoing transaction
        of ``producer_id`` at ``producer_epoch``; otherwise the coordinator's error."""
        node = self.coordinator_of(transactional_id)
        if node is None:
            return dict.fromkeys(partitions, int(E.COORDINATOR_NOT_AVAILABLE))
        topics: dict[str, list[int]] = {}
        for topic, p in partitions:
            topics.setdefault(topic, []).append(p)
        body = {"transactions": [{
            "transactional_id": transactional_id, "producer_id": producer_id, "producer_epoch": producer_epoch,
            "verify_only": not add, "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()]}]}
        try:
            resp = await self.channel.request(node, ApiKey.ADD_PARTITIONS_TO_TXN, body, version=5 if add else 4,
                                              timeout_ms=self.timeout_ms)
        except Exception as exc:
            log.debug("verifying %s with broker %d failed: %s", transactional_id, node, exc)
            return dict.fromkeys(partitions, int(E.COORDINATOR_NOT_AVAILABLE))
        if resp.error_code:
            return dict.fromkeys(partitions, int(resp.error_code))
        out: dict[TopicPartition, int] = dict.fromkeys(partitions, int(E.UNKNOWN_SERVER_ERROR))
        for txn in resp.results_by_transaction:
            if txn.transactional_id != transactional_id:
                continue
            for t in txn.topic_results:
                for p in t.results_by_partition:
                    if (t.name, p.partition_index) in out:
                        out[(t.name, p.partition_index)] = p.partition_error_code
        return out
