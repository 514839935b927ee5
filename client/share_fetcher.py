"""Share fetching (KIP-932): the share sessions of a share-group member, ShareFetch and ShareAcknowledge.

A share consumer reads each partition from its leader in a **share session** per broker: the first
ShareFetch (epoch 0) opens it with the partitions read there, each later request carries the next
epoch, adds partitions (``Topics``) and drops those no longer read there (``ForgottenTopicsData``),
and a ShareAcknowledge at epoch -1 closes it (the broker releases whatever the member still holds).
A session that the broker no longer knows (SHARE_SESSION_NOT_FOUND, INVALID_SHARE_SESSION_EPOCH,
SHARE_SESSION_LIMIT_REACHED, a lost connection) is opened again at epoch 0; acknowledgements it was
carrying fail.  Requests of one session go one at a time (on the ``share`` connection to the broker).

Records come back in whole batches with the ranges acquired for this member and their delivery
counts: only acquired offsets are handed out, each :class:`~client.types.Record` with its
``delivery_count``; acquired offsets without a record (control batches, compacted away) are
acknowledged as GAP.  Acknowledgements (:class:`Acknowledgements`) ride on the next ShareFetch to
the partition's leader, or go in a ShareAcknowledge (a commit, or RENEW, which fetches nothing).
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import logging
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from client.config import ConsumerConfig
from client.errors import KafkaConnectionError, KafkaError, KafkaTimeoutError
from client.net import NetworkClient
from client.types import Record, TopicPartition
from protocol.api import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages.share_acknowledge import ShareAcknowledgeRequestData
from protocol.messages.share_fetch import ShareFetchRequestData
from protocol.records import CorruptRecordError, decode_rows

__all__ = ["GAP", "AcknowledgeType", "Acknowledgements", "ShareFetcher"]

log = logging.getLogger(__name__)

E = ErrorCode
#: the acknowledge type of an acquired offset that holds no record
GAP = 0
FINAL_EPOCH = -1
_MAX_EPOCH = 2**31 - 1
#: errors after which the broker holds no session of ours (the next request opens one)
_SESSION_LOST = frozenset({E.SHARE_SESSION_NOT_FOUND, E.INVALID_SHARE_SESSION_EPOCH, E.SHARE_SESSION_LIMIT_REACHED})


class AcknowledgeType(enum.IntEnum):
    """How a delivered record is acknowledged (Kafka's ``AcknowledgeType``, as sent on the wire)."""

    #: processed: never delivered again
    ACCEPT = 1
    #: not processed: delivered again (to any member), its delivery count going up
    RELEASE = 2
    #: unprocessable: never delivered again
    REJECT = 3
    #: still being processed: its acquisition lock starts again (KIP-1222); acknowledge it later
    RENEW = 4


class Acknowledgements:
    """Acknowledgements waiting to be sent, per partition: offset -> acknowledge type."""

    def __init__(self) -> None:
        self.pending: dict[TopicPartition, dict[int, int]] = {}

    def __bool__(self) -> bool:
        return bool(self.pending)

    def add(self, tp: TopicPartition, offset: int, ack_type: int) -> None:
        self.pending.setdefault(tp, {})[offset] = ack_type

    def has_renewals(self) -> bool:
        return any(AcknowledgeType.RENEW in offsets.values() for offsets in self.pending.values())

    def take(self, tps: Iterable[TopicPartition]) -> dict[TopicPartition, dict[int, int]]:
        """The acknowledgements of ``tps``, no longer pending."""
        return {tp: offsets for tp in tps if (offsets := self.pending.pop(tp, None))}

    @staticmethod
    def batches(offsets: Mapping[int, int]) -> list[dict[str, Any]]:
        """Kafka's ``AcknowledgementBatches``: consecutive offsets in one batch, its types collapsed to
        one when they are all the same."""
        out: list[dict[str, Any]] = []
        run: list[tuple[int, int]] = []

        def close() -> None:
            types = [t for _, t in run]
            out.append({"first_offset": run[0][0], "last_offset": run[-1][0],
                        "acknowledge_types": types[:1] if len(set(types)) == 1 else types})

        for offset in sorted(offsets):
            if run and offset != run[-1][0] + 1:
                close()
                run = []
            run.append((offset, offsets[offset]))
        if run:
            close()
        return out


@dataclass
class _Session:
    """Our share session on one broker: the epoch of its next request (0: none open) and its partitions."""

    epoch: int = 0
    partitions: set[TopicPartition] = field(default_factory=set)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    def advance(self) -> None:
        self.epoch = 1 if self.epoch >= _MAX_EPOCH else self.epoch + 1

    def reset(self) -> None:
        self.epoch = 0
        self.partitions = set()


#: per partition, the outcome of its acknowledgements (None: done)
AckResults = dict[TopicPartition, KafkaError | None]


class ShareFetcher:
    """The share sessions of one member (``member_id`` of ``group_id``) and its requests."""

    def __init__(self, net: NetworkClient, config: ConsumerConfig, group_id: str, member_id: str) -> None:
        self.net = net
        self.config = config
        self.group_id = group_id
        self.member_id = member_id
        self.sessions: dict[int, _Session] = {}
        #: the brokers' acquisition lock duration (``AcquisitionLockTimeoutMs``), once told
        self.acquisition_lock_timeout_ms: int | None = None
        #: GAP acknowledgements of acquired offsets without a record, sent with the next request
        self.gaps = Acknowledgements()
        #: something went wrong since :meth:`take_trouble` was last called (a partition without a known
        #: leader, a failed request, a partition error): the next fetch should wait a little first
        self._trouble = False

    def take_trouble(self) -> bool:
        trouble, self._trouble = self._trouble, False
        return trouble

    def _with_gaps(self, acks: Acknowledgements) -> Acknowledgements:
        for tp, offsets in self.gaps.take(list(self.gaps.pending)).items():
            for offset, ack_type in offsets.items():
                acks.add(tp, offset, ack_type)
        return acks

    def _session(self, node: int) -> _Session:
        session = self.sessions.get(node)
        if session is None:
            session = self.sessions[node] = _Session()
        return session

    def _leaders(self, tps: Iterable[TopicPartition]) -> dict[int, list[TopicPartition]]:
        by_node: dict[int, list[TopicPartition]] = {}
        for tp in tps:
            leader = self.net.metadata.leader_for(tp.topic, tp.partition)
            if leader is None or self.net.metadata.topic_id(tp.topic) is None:
                self.net.add_topics([tp.topic])
                self.net.request_metadata_update()
                self._trouble = True
                continue
            by_node.setdefault(leader, []).append(tp)
        return by_node

    def _topics(self, tps: Iterable[TopicPartition], acks: Mapping[TopicPartition, Mapping[int, int]]
                ) -> list[dict[str, Any]]:
        by_topic: dict[uuid.UUID, list[dict[str, Any]]] = {}
        for tp in sorted(set(tps) | set(acks)):
            tid = self.net.metadata.topic_id(tp.topic)
            if tid is None:
                continue
            by_topic.setdefault(tid, []).append(
                {"partition_index": tp.partition, "acknowledgement_batches": Acknowledgements.batches(acks.get(tp, {}))})
        return [{"topic_id": tid, "partitions": parts} for tid, parts in by_topic.items()]

    def _forgotten(self, tps: Iterable[TopicPartition]) -> list[dict[str, Any]]:
        by_topic: dict[uuid.UUID, list[int]] = {}
        for tp in sorted(tps):
            tid = self.net.metadata.topic_id(tp.topic)
            if tid is not None:
                by_topic.setdefault(tid, []).append(tp.partition)
        return [{"topic_id": tid, "partitions": parts} for tid, parts in by_topic.items()]

    # -- fetching ----------------------------------------------------------------------------------

    async def fetch(self, assigned: set[TopicPartition], acks: Acknowledgements, *, max_wait_ms: int,
                    max_records: int) -> tuple[list[Record], AckResults]:
        """One ShareFetch to the leader of each assigned partition (at once), with the acknowledgements
        pending for its partitions; acknowledgements of partitions read elsewhere no more go in a
        ShareAcknowledge.  The records acquired (in offset order per partition) and the outcome of the
        acknowledgements sent."""
        by_node = self._leaders(assigned)
        ack_nodes = self._leaders(self._with_gaps(acks).pending)
        jobs = [self._fetch_node(node, tps, acks.take(ack_nodes.pop(node, []) + tps), max_wait_ms, max_records)
                for node, tps in by_node.items()]
        jobs += [self._acknowledge_node(node, acks.take(tps)) for node, tps in ack_nodes.items()]
        records: list[Record] = []
        results: AckResults = {}
        for got, acked in await asyncio.gather(*jobs):
            records += got
            results.update(acked)
        return records, results

    async def _fetch_node(self, node: int, tps: list[TopicPartition], acks: dict[TopicPartition, dict[int, int]],
                          max_wait_ms: int, max_records: int) -> tuple[list[Record], AckResults]:
        session = self._session(node)
        async with session.lock:
            if session.epoch == 0 and acks:
                # the session these records were acquired in is gone (and with it their acquisitions)
                return [], _failed(acks, E.SHARE_SESSION_NOT_FOUND, "ShareFetch")
            cfg = self.config
            body: ShareFetchRequestData = {
                "group_id": self.group_id, "member_id": self.member_id, "share_session_epoch": session.epoch,
                "max_wait_ms": max_wait_ms, "min_bytes": cfg.fetch_min_bytes, "max_bytes": cfg.fetch_max_bytes,
                "max_records": max_records, "batch_size": max_records, "topics": self._topics(tps, acks),
                "forgotten_topics_data": self._forgotten(session.partitions - set(tps)) if session.epoch else []}
            try:
                resp = await self.net.send(node, ApiKey.SHARE_FETCH, body, kind="share",
                                           timeout_ms=cfg.request_timeout_ms + max_wait_ms)
            except (KafkaConnectionError, KafkaTimeoutError) as exc:
                log.debug("share fetch from node %s failed: %s", node, exc)
                self._trouble = True
                session.reset()
                self.net.request_metadata_update()
                return [], _failed(acks, E.NETWORK_EXCEPTION, "ShareFetch")
            if resp.error_code:
                return [], self._session_error(session, resp.error_code, resp.error_message, acks, "ShareFetch")
            session.advance()
            session.partitions = set(tps)
            self.acquisition_lock_timeout_ms = resp.acquisition_lock_timeout_ms
            records: list[Record] = []
            results: AckResults = {}
            for t in resp.responses:
                topic = self.net.metadata.topic_name(t.topic_id)
                if topic is None:
                    self.net.request_metadata_update()
                    continue
                for p in t.partitions:
                    tp = TopicPartition(topic, p.partition_index)
                    if tp in acks:
                        results[tp] = _error(p.acknowledge_error_code, p.acknowledge_error_message, "ShareFetch")
                    if p.error_code:
                        self._partition_error(tp, p.error_code)
                        continue
                    records += self._acquired(tp, p)
            for tp in acks.keys() - results.keys():
                results[tp] = None  # no answer for it: nothing went wrong
            return records, results

    def _acquired(self, tp: TopicPartition, p: Any) -> list[Record]:
        """The records of ``p`` (a ShareFetch partition answer) acquired for us, with their delivery
        counts; acquired offsets without a record are acknowledged as GAP with the next request."""
        if not p.acquired_records:
            return []
        try:
            rows = decode_rows(p.records, Record, tp.topic, tp.partition) if p.records else []
        except CorruptRecordError as exc:
            raise KafkaError(E.CORRUPT_MESSAGE, f"{tp}: {exc}") from None
        by_offset = {r.offset: r for r in rows}
        out: list[Record] = []
        kd, vd = self.config.key_deserializer, self.config.value_deserializer
        for a in p.acquired_records:
            for offset in range(a.first_offset, a.last_offset + 1):
                row = by_offset.get(offset)
                if row is None:
                    self.gaps.add(tp, offset, GAP)
                    continue
                out.append(row._replace(delivery_count=a.delivery_count,
                                        key=kd(row.key) if kd else row.key,
                                        value=vd(row.value) if vd else row.value))
        return out

    def _partition_error(self, tp: TopicPartition, code: int) -> None:
        self._trouble = True
        if E.from_code(code).retriable or code in (E.UNKNOWN_TOPIC_ID, E.UNKNOWN_TOPIC_OR_PARTITION):
            self.net.request_metadata_update()
        else:
            log.warning("share fetch of %s failed: %s", tp, E.from_code(code).name)

    def _session_error(self, session: _Session, code: int, message: str | None,
                       acks: Mapping[TopicPartition, Any], api: str) -> AckResults:
        self._trouble = True
        if code in _SESSION_LOST:
            log.debug("share session %s: %s; a new one opens", api, E.from_code(code).name)
            session.reset()
        elif not E.from_code(code).retriable:
            raise KafkaError(code, f"{api}{f' ({message})' if message else ''}")
        return _failed(acks, code, api)

    # -- acknowledging -----------------------------------------------------------------------------

    async def acknowledge(self, acks: Acknowledgements) -> AckResults:
        """Send every pending acknowledgement now (ShareAcknowledge to each leader) and wait."""
        jobs = [self._acknowledge_node(node, acks.take(tps))
                for node, tps in self._leaders(self._with_gaps(acks).pending).items()]
        results: AckResults = {}
        for _, acked in await asyncio.gather(*jobs):
            results.update(acked)
        return results

    async def _acknowledge_node(self, node: int, acks: dict[TopicPartition, dict[int, int]], *,
                                final: bool = False) -> tuple[list[Record], AckResults]:
        session = self._session(node)
        async with session.lock:
            if session.epoch == 0:
                return [], _failed(acks, E.SHARE_SESSION_NOT_FOUND, "ShareAcknowledge")
            renew = any(AcknowledgeType.RENEW in offsets.values() for offsets in acks.values())
            body: ShareAcknowledgeRequestData = {
                "group_id": self.group_id, "member_id": self.member_id,
                "share_session_epoch": FINAL_EPOCH if final else session.epoch, "topics": self._topics((), acks)}
            if renew:
                body["is_renew_ack"] = True  # v2 (KIP-1222)
            try:
                resp = await self.net.send(node, ApiKey.SHARE_ACKNOWLEDGE, body, kind="share")
            except (KafkaConnectionError, KafkaTimeoutError) as exc:
                log.debug("share acknowledge to node %s failed: %s", node, exc)
                session.reset()
                return [], _failed(acks, E.NETWORK_EXCEPTION, "ShareAcknowledge")
            if resp.error_code:
                return [], self._session_error(session, resp.error_code, resp.error_message, acks, "ShareAcknowledge")
            if final:
                session.reset()
            else:
                session.advance()
            results: AckResults = dict.fromkeys(acks)
            for t in resp.responses:
                topic = self.net.metadata.topic_name(t.topic_id)
                for p in t.partitions:
                    tp = TopicPartition(topic or "", p.partition_index)
                    if tp in acks:
                        results[tp] = _error(p.error_code, p.error_message, "ShareAcknowledge")
                        if p.error_code and E.from_code(p.error_code).retriable:
                            self.net.request_metadata_update()
            return [], results

    async def close(self, acks: Acknowledgements, timeout_s: float = 5.0) -> AckResults:
        """Close every share session (ShareAcknowledge at epoch -1, with the acknowledgements pending for
        its partitions): the broker releases what the member still holds."""
        routed = self._leaders(self._with_gaps(acks).pending)
        jobs = [self._acknowledge_node(node, acks.take(routed.pop(node, [])), final=True)
                for node, session in self.sessions.items() if session.epoch]
        results: AckResults = _failed(acks.take(tp for tps in routed.values() for tp in tps),
                                      E.SHARE_SESSION_NOT_FOUND, "ShareAcknowledge")
        for job in jobs:
            with contextlib.suppress(KafkaError, asyncio.TimeoutError):
                _, acked = await asyncio.wait_for(job, timeout_s)
                results.update(acked)
        return results


def _error(code: int, message: str | None, api: str) -> KafkaError | None:
    if not code:
        return None
    return KafkaError(code, f"{api}{f' ({message})' if message else ''}")


def _failed(acks: Mapping[TopicPartition, Any], code: int, api: str) -> AckResults:
    return {tp: KafkaError(code, api) for tp in acks}
