"""The asyncio edge of transactions: the requests :class:`~client.transactions.TransactionManager` asks for.

Owns the transaction coordinator of the producer's transactional id (FindCoordinator with key type 1,
looked up again on NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE and lost connections), the group
coordinators TxnOffsetCommit goes to, and the retry loop every transactional call runs in:
InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit and EndTxn are sent, their answers
fed to the machine, and retried while it says so (after 20 ms, doubling up to ``retry_backoff_ms``), until
``max_block_ms`` has passed (then :class:`~client.errors.RetriableTransactionError`: calling again
continues).

Transaction version 1 requests stay below the versions that mean version 2 to a broker (EndTxn v4,
TxnOffsetCommit v4, AddPartitionsToTxn v3; the producer caps Produce at v11).

:func:`complete_prepared` finishes a transaction that another process prepared (flushed, not ended):
an EndTxn with the producer id and epoch the preparing producer reported, from wherever the decision is
taken (the Spark sink's driver commits what its tasks prepared).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from client.config import ProducerConfig
from client.coordinator import GROUP_KEY, TRANSACTION_KEY, find_coordinator
from client.errors import (
    FatalTransactionError,
    KafkaConnectionError,
    KafkaError,
    KafkaTimeoutError,
    RetriableTransactionError,
)
from client.net import NetworkClient
from client.transactions import Next, TransactionManager, TxnState, uses_transaction_v2
from client.types import ConsumerGroupMetadata, OffsetAndMetadata, PreparedTransaction, TopicPartition
from protocol.api import ApiKey
from protocol.error_codes import ErrorCode
from protocol.primitives import Obj

log = logging.getLogger(__name__)

#: the newest versions of transaction version 1 (the next ones mean version 2 to a broker)
TV1_MAX = {ApiKey.END_TXN: 4, ApiKey.TXN_OFFSET_COMMIT: 4, ApiKey.PRODUCE: 11}
ADD_PARTITIONS_CLIENT_MAX = 3  # v4+ is for brokers
FIRST_RETRY_BACKOFF_MS = 20


class TransactionRequests:
    """Runs the transactional requests of one producer (one transactional id)."""

    def __init__(self, net: NetworkClient, config: ProducerConfig, manager: TransactionManager) -> None:
        self.net = net
        self.config = config
        self.manager = manager
        self.coordinator: int | None = None
        self._group_coordinators: dict[str, int] = {}

    def max_version(self, api_key: int) -> int | None:
        return None if self.manager.tv2 else TV1_MAX.get(api_key)

    async def _coordinator(self) -> int:
        if self.coordinator is None:
            node = await find_coordinator(self.net, self.manager.transactional_id, TRANSACTION_KEY)
            conn = await self.net.connection(node)
            if self.manager.state in (TxnState.UNINITIALIZED, TxnState.INITIALIZING) and self.manager.producer_id < 0:
                self.manager.tv2 = uses_transaction_v2(conn.broker_versions, conn.features)
                self.manager.can_bump = conn.supports(ApiKey.INIT_PRODUCER_ID, 3)
            self.coordinator = node
        return self.coordinator

    async def _group_coordinator(self, group_id: str) -> int:
        node = self._group_coordinators.get(group_id)
        if node is None:
            node = self._group_coordinators[group_id] = await find_coordinator(self.net, group_id, GROUP_KEY)
        return node

    async def _run(self, what: str, send: Callable[[int], Awaitable[Obj]], handle: Callable[[Obj], Next], *,
                   group: str | None = None) -> None:
        """Send (to the transaction coordinator, or ``group``'s) until the machine is done with it."""
        deadline = self.net.timers.now_ms() + self.config.max_block_ms
        # CONCURRENT_TRANSACTIONS (the previous transaction's markers are being written) clears in
        # milliseconds: the first retry comes soon (as Kafka's 20 ms), later ones back off to retry_backoff_ms
        backoff_ms = min(FIRST_RETRY_BACKOFF_MS, self.config.retry_backoff_ms)
        while True:
            try:
                node = await (self._group_coordinator(group) if group is not None else self._coordinator())
                resp = await send(node)
                step = handle(resp)
            except (KafkaConnectionError, KafkaTimeoutError) as exc:
                log.debug("%s: %s; retrying", what, exc)
                step = Next.FIND_COORDINATOR
            except KafkaError as exc:
                if exc.code not in (ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE) \
                        and not exc.retriable:
                    self.manager.fail(exc.code, f"FindCoordinator for {what}")
                    raise self.manager.error or FatalTransactionError(str(exc), code=exc.code) from exc
                step = Next.FIND_COORDINATOR  # FindCoordinator itself failed
            if step is Next.DONE:
                return
            if step is Next.FAILED:
                assert self.manager.error is not None
                raise self.manager.error
            if step is Next.FIND_COORDINATOR:
                if group is not None:
                    self._group_coordinators.pop(group, None)
                else:
                    self.coordinator = None
            if self.net.timers.now_ms() + backoff_ms > deadline:
                raise RetriableTransactionError(f"{what} did not complete within max_block_ms="
                                                f"{self.config.max_block_ms}; call it again")
            await asyncio.sleep(backoff_ms / 1000)
            backoff_ms = min(backoff_ms * 2, self.config.retry_backoff_ms)

    # -- requests ----------------------------------------------------------------------------------

    async def init_producer_id(self) -> None:
        """InitProducerId: the first (fences older producers of the id, aborts what they left open)
        or a KIP-360 bump naming the current producer id and epoch."""
        m = self.manager

        async def send(node: int) -> Obj:
            return await self.net.send(node, ApiKey.INIT_PRODUCER_ID, m.init_request())

        await self._run("InitProducerId", send,
                        lambda r: m.on_init_producer_id(r.error_code, r.producer_id, r.producer_epoch))

    async def add_partitions(self) -> None:
        """AddPartitionsToTxn for the partitions that wait for it (transaction version 1)."""
        m = self.manager
        partitions = m.take_new_partitions()
        by_topic: dict[str, list[int]] = {}
        for tp in partitions:
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        body = {"v3_and_below_transactional_id": m.transactional_id, "v3_and_below_producer_id": m.producer_id,
                "v3_and_below_producer_epoch": m.producer_epoch,
                "v3_and_below_topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()]}

        async def send(node: int) -> Obj:
            return await self.net.send(node, ApiKey.ADD_PARTITIONS_TO_TXN, body,
                                       max_version=ADD_PARTITIONS_CLIENT_MAX)

        def handle(resp: Obj) -> Next:
            codes = {TopicPartition(t.name, p.partition_index): p.partition_error_code
                     for t in resp.results_by_topic_v3_and_below for p in t.results_by_partition}
            return m.on_add_partitions(codes)

        await self._run("AddPartitionsToTxn", send, handle)

    async def send_offsets(self, offsets: Mapping[TopicPartition, OffsetAndMetadata],
                           group: ConsumerGroupMetadata) -> None:
        """The consumer's offsets into the transaction (KIP-447): AddOffsetsToTxn then TxnOffsetCommit
        (version 2: the TxnOffsetCommit alone)."""
        m = self.manager
        if not m.tv2:
            body = {"transactional_id": m.transactional_id, "producer_id": m.producer_id,
                    "producer_epoch": m.producer_epoch, "group_id": group.group_id}

            async def add(node: int) -> Obj:
                return await self.net.send(node, ApiKey.ADD_OFFSETS_TO_TXN, body)

            await self._run("AddOffsetsToTxn", add, lambda r: m.on_add_offsets(r.error_code))
        left = dict(offsets)

        async def commit(node: int) -> Obj:
            by_topic: dict[str, list[dict[str, Any]]] = {}
            for tp, om in left.items():
                by_topic.setdefault(tp.topic, []).append(
                    {"partition_index": tp.partition, "committed_offset": om.offset, "committed_leader_epoch": -1,
                     "committed_metadata": om.metadata})
            return await self.net.send(node, ApiKey.TXN_OFFSET_COMMIT, {
                "transactional_id": m.transactional_id, "group_id": group.group_id, "producer_id": m.producer_id,
                "producer_epoch": m.producer_epoch, "generation_id": group.generation_id,
                "member_id": group.member_id, "group_instance_id": group.group_instance_id,
                "topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()]},
                max_version=self.max_version(ApiKey.TXN_OFFSET_COMMIT))

        def handle(resp: Obj) -> Next:
            codes = {TopicPartition(t.name, p.partition_index): p.error_code for t in resp.topics for p in t.partitions}
            step, done = m.on_txn_offset_commit(codes)
            for tp in done:
                left.pop(tp, None)
            return step

        await self._run("TxnOffsetCommit", commit, handle, group=group.group_id)

    async def end_txn(self, commit: bool) -> None:
        """EndTxn: commit or abort what the coordinator holds of the transaction."""
        m = self.manager

        async def send(node: int) -> Obj:
            return await self.net.send(node, ApiKey.END_TXN, m.end_request(commit),
                                       max_version=self.max_version(ApiKey.END_TXN))

        await self._run(f"EndTxn({'commit' if commit else 'abort'})", send,
                        lambda r: m.on_end_txn(r.error_code, r.get("producer_id", -1), r.get("producer_epoch", -1)))


async def complete_prepared(net: NetworkClient, config: ProducerConfig, prepared: PreparedTransaction,
                            commit: bool) -> None:
    """Commit (or abort) a transaction another producer prepared: EndTxn with its producer id and epoch.
    Idempotent: committing again a transaction that is committed succeeds.  Raises
    :class:`~client.errors.ProducerFencedError` when the transaction is gone (aborted by its timeout or
    by a newer producer of the id)."""
    manager = TransactionManager(prepared.transactional_id, config.transaction_timeout_ms,
                                 state=TxnState.COMMITTING if commit else TxnState.ABORTING,
                                 producer_id=prepared.producer_id, producer_epoch=prepared.producer_epoch,
                                 tv2=prepared.transaction_version >= 2, started=True)
    await TransactionRequests(net, config, manager).end_txn(commit)
