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
``delivery_count`` (decoded by the record codec with that count, one acquired range at a time, not
set record by record); acquired offsets without a record (control batches, compacted away) are
acknowledged as GAP.  Acknowledgements (:class:`Acknowledgements`, per partition :class:`AckRanges`:
runs of consecutive offsets with one type, extended as acknowledgements arrive) ride on the next
ShareFetch to the partition's leader, or go in a ShareAcknowledge (a commit, or RENEW, which fetches
nothing).
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import logging
import operator
import uuid
from bisect import bisect_left, bisect_right
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

__all__ = ["GAP", "AckRanges", "AcknowledgeType", "Acknowledgements", "ShareFetcher"]

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


_first = operator.itemgetter(0)
#: a :class:`~client.types.Record`'s offset
record_offset = operator.itemgetter(2)


class AckRanges:
    """The acknowledgements of one partition: runs ``[first, last, type]`` of consecutive offsets with
    one acknowledge type, in offset order, disjoint, two adjacent runs never of the same type.  An
    acknowledgement of the offset after the last run's extends it (or starts the next run); one out of
    order is put in its place, and one of an offset already there replaces its type (RENEW, then ACCEPT
    before it was sent: ACCEPT)."""

    __slots__ = ("runs",)

    def __init__(self) -> None:
        self.runs: list[list[int]] = []

    def __bool__(self) -> bool:
        return bool(self.runs)

    def __repr__(self) -> str:
        return f"AckRanges({[tuple(r) for r in self.runs]})"

    def add(self, offset: int, ack_type: int) -> None:
        runs = self.runs
        if runs:
            last = runs[-1]
            if offset > last[1]:
                if offset == last[1] + 1 and last[2] == ack_type:
                    last[1] = offset
                else:
                    runs.append([offset, offset, ack_type])
            else:
                self._put(offset, ack_type)
        else:
            runs.append([offset, offset, ack_type])

    def add_range(self, first: int, last: int, ack_type: int) -> None:
        """Offsets ``first`` to ``last`` (inclusive), all of ``ack_type``."""
        runs = self.runs
        if not runs or first > runs[-1][1]:
            if runs and first == runs[-1][1] + 1 and runs[-1][2] == ack_type:
                runs[-1][1] = last
            else:
                runs.append([first, last, ack_type])
            return
        for offset in range(first, last + 1):
            self._put(offset, ack_type)

    def _put(self, offset: int, ack_type: int) -> None:
        """``offset`` anywhere: into the run holding it (split when its type differs) or between two runs,
        merged with its neighbours of the same type."""
        runs = self.runs
        i = bisect_right(runs, offset, key=_first) - 1  # the run starting at or before it
        if i >= 0 and runs[i][1] >= offset:
            first, last, old = runs[i]
            if old == ack_type:
                return
            pieces = [[offset, offset, ack_type]]
            if first < offset:
                pieces.insert(0, [first, offset - 1, old])
            if offset < last:
                pieces.append([offset + 1, last, old])
            runs[i:i + 1] = pieces
            i += first < offset
        else:
            i += 1
            runs.insert(i, [offset, offset, ack_type])
        if i + 1 < len(runs) and runs[i + 1][0] == offset + 1 and runs[i + 1][2] == ack_type:
            runs[i][1] = runs[i + 1][1]
            del runs[i + 1]
        if i > 0 and runs[i - 1][1] == offset - 1 and runs[i - 1][2] == ack_type:
            runs[i - 1][1] = runs[i][1]
            del runs[i]

    def has(self, ack_type: int) -> bool:
        return any(run[2] == ack_type for run in self.runs)

    def offsets(self) -> dict[int, int]:
        """Every offset acknowledged and its type."""
        return {offset: t for first, last, t in self.runs for offset in range(first, last + 1)}

    def batches(self) -> list[dict[str, Any]]:
        """Kafka's ``AcknowledgementBatches``: consecutive offsets in one batch, its types collapsed to
        one when they are all the same."""
        out: list[dict[str, Any]] = []
        span: list[list[int]] = []

        def close() -> None:
            types = {int(t) for _, _, t in span}
            out.append({"first_offset": span[0][0], "last_offset": span[-1][1], "acknowledge_types": [types.pop()]
                        if len(types) == 1 else [int(t) for first, last, t in span for _ in range(first, last + 1)]})

        for run in self.runs:
            if span and run[0] != span[-1][1] + 1:
                close()
                span = []
            span.append(run)
        if span:
            close()
        return out


class Acknowledgements:
    """Acknowledgements waiting to be sent, per partition (:class:`AckRanges`)."""

    def __init__(self) -> None:
        self.pending: dict[TopicPartition, AckRanges] = {}
        #: the partition (that very object) last added to, and its pending ranges: acknowledgements come
        #: a partition's batch at a time, and a dict lookup by TopicPartition costs as much as the rest
        self._last: tuple[TopicPartition | None, AckRanges] = (None, AckRanges())

    def __bool__(self) -> bool:
        return bool(self.pending)

    def ranges(self, tp: TopicPartition) -> AckRanges:
        """The pending acknowledgements of ``tp`` (made empty when there are none), to add to."""
        ranges = self.pending.get(tp)
        if ranges is None:
            ranges = self.pending[tp] = AckRanges()
        self._last = (tp, ranges)
        return ranges

    def add(self, tp: TopicPartition, offset: int, ack_type: int) -> None:
        last_tp, ranges = self._last
        if last_tp is not tp:
            ranges = self.ranges(tp)
        runs = ranges.runs
        if runs and (last := runs[-1])[1] + 1 == offset and last[2] == ack_type:
            last[1] = offset  # the next offset, of the last run's type: AckRanges.add's common case, inline
        else:
            ranges.add(offset, ack_type)

    def add_range(self, tp: TopicPartition, first: int, last: int, ack_type: int) -> None:
        self.ranges(tp).add_range(first, last, ack_type)

    def has_renewals(self) -> bool:
        return any(ranges.has(AcknowledgeType.RENEW) for ranges in self.pending.values())

    def take(self, tps: Iterable[TopicPartition]) -> dict[TopicPartition, AckRanges]:
        """The acknowledgements of ``tps``, no longer pending."""
        self._last = (None, self._last[1])
        return {tp: ranges for tp in tps if (ranges := self.pending.pop(tp, None))}


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
#: the records a fetch acquired, per partition (a partition once)
Acquired = list[tuple[TopicPartition, list[Record]]]


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
        for tp, ranges in self.gaps.take(list(self.gaps.pending)).items():
            for first, last, ack_type in ranges.runs:
                acks.add_range(tp, first, last, ack_type)
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

    def _topics(self, tps: Iterable[TopicPartition], acks: Mapping[TopicPartition, AckRanges]
                ) -> list[dict[str, Any]]:
        by_topic: dict[uuid.UUID, list[dict[str, Any]]] = {}
        for tp in sorted(set(tps) | set(acks)):
            tid = self.net.metadata.topic_id(tp.topic)
            if tid is None:
                continue
            by_topic.setdefault(tid, []).append(
                {"partition_index": tp.partition, "acknowledgement_batches": acks[tp].batches() if tp in acks else []})
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
                    max_records: int) -> tuple[Acquired, AckResults]:
        """One ShareFetch to the leader of each assigned partition (at once), with the acknowledgements
        pending for its partitions; acknowledgements of partitions read elsewhere no more go in a
        ShareAcknowledge.  The records acquired, per partition (in offset order), and the outcome of the
        acknowledgements sent."""
        by_node = self._leaders(assigned)
        ack_nodes = self._leaders(self._with_gaps(acks).pending)
        jobs = [self._fetch_node(node, tps, acks.take(ack_nodes.pop(node, []) + tps), max_wait_ms, max_records)
                for node, tps in by_node.items()]
        jobs += [self._acknowledge_node(node, acks.take(tps)) for node, tps in ack_nodes.items()]
        records: Acquired = []
        results: AckResults = {}
        # one broker (the usual case): awaited as it is, without a task of its own and the loop turn it costs
        for got, acked in [await jobs[0]] if len(jobs) == 1 else await asyncio.gather(*jobs):
            records += got
            results.update(acked)
        return records, results

    async def _fetch_node(self, node: int, tps: list[TopicPartition], acks: dict[TopicPartition, AckRanges],
                          max_wait_ms: int, max_records: int
                          ) -> tuple[Acquired, AckResults]:
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
            records: Acquired = []
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
                    if got := self._acquired(tp, p):
                        records.append((tp, got))
            for tp in acks.keys() - results.keys():
                results[tp] = None  # no answer for it: nothing went wrong
            return records, results

    def _acquired(self, tp: TopicPartition, p: Any) -> list[Record]:
        """The records of ``p`` (a ShareFetch partition answer) acquired for us, with their delivery
        counts; acquired offsets without a record are acknowledged as GAP with the next request.  The
        records are decoded with the delivery count of the largest acquired range (usually the only
        one) and taken a range at a time; those of a range with another count are made again with it."""
        acquired = sorted(p.acquired_records or (), key=lambda a: a.first_offset)
        if not acquired:
            return []
        count = max(acquired, key=lambda a: a.last_offset - a.first_offset).delivery_count
        try:
            rows = decode_rows(p.records, Record, tp.topic, tp.partition, min_offset=acquired[0].first_offset,
                               extras=(count,)) if p.records else []
        except CorruptRecordError as exc:
            raise KafkaError(E.CORRUPT_MESSAGE, f"{tp}: {exc}") from None
        out: list[Record] = []
        i = 0
        done = acquired[0].first_offset - 1  # the last offset taken (ranges overlapping it: only what is past it)
        for a in acquired:
            first, last = max(a.first_offset, done + 1), a.last_offset
            if first > last:
                continue
            done = last
            i = bisect_left(rows, first, lo=i, key=record_offset)
            j = bisect_right(rows, last, lo=i, key=record_offset)
            taken = rows[i:j]
            if j - i != last - first + 1:  # acquired offsets without a record
                present = set(map(record_offset, taken))
                gaps = self.gaps.ranges(tp)
                for offset in range(first, last + 1):
                    if offset not in present:
                        gaps.add(offset, GAP)
            if a.delivery_count != count:
                taken = [r._replace(delivery_count=a.delivery_count) for r in taken]
            out += taken
            i = j
        kd, vd = self.config.key_deserializer, self.config.value_deserializer
        if kd or vd:
            out = [r._replace(key=kd(r.key) if kd else r.key, value=vd(r.value) if vd else r.value) for r in out]
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

    async def _acknowledge_node(self, node: int, acks: dict[TopicPartition, AckRanges], *,
                                final: bool = False) -> tuple[Acquired, AckResults]:
        session = self._session(node)
        async with session.lock:
            if session.epoch == 0:
                return [], _failed(acks, E.SHARE_SESSION_NOT_FOUND, "ShareAcknowledge")
            renew = any(ranges.has(AcknowledgeType.RENEW) for ranges in acks.values())
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
