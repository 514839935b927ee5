"""The asyncio ShareConsumer: a member of a share group (KIP-932, Kafka's queues).

``ShareConsumer(*topics, bootstrap_servers=..., group_id=..., acknowledgement_mode="implicit")``
joins share group ``group_id`` and reads ``topics`` together with the group's other members: several
members may read one partition, and each record goes to one of them at a time, locked to it until it
is acknowledged or its lock (the group's ``share.record.lock.duration.ms``) runs out::

    async with ShareConsumer("jobs", bootstrap_servers=bs, group_id="workers",
                             acknowledgement_mode="explicit") as sc:
        for records in (await sc.getmany(timeout_ms=1000)).values():
            for record in records:
                sc.acknowledge(record, AcknowledgeType.ACCEPT if handle(record) else AcknowledgeType.RELEASE)
        await sc.commit()

:meth:`ShareConsumer.getmany` returns the :class:`~client.types.Record` s acquired for this member,
each with its ``delivery_count`` (1 the first time; a record released or whose lock ran out comes
again with a higher count, until the group's delivery-count limit archives it).  How they are
acknowledged (:class:`~client.share_fetcher.AcknowledgeType`):

* ``acknowledgement_mode="implicit"`` (the default): every record of a batch is accepted by the next
  :meth:`~ShareConsumer.getmany` or :meth:`~ShareConsumer.commit`;
* ``"explicit"``: :meth:`~ShareConsumer.acknowledge` each record — ACCEPT, RELEASE (delivered again),
  REJECT (never again) or RENEW (its lock starts again; acknowledge it later) — before the next
  :meth:`~ShareConsumer.getmany`.

Acknowledgements go with the next fetch from the partition's leader, or at once with
:meth:`~ShareConsumer.commit` (which waits for them and says how each partition's went); RENEW goes
at once with the next :meth:`~ShareConsumer.getmany` or :meth:`~ShareConsumer.commit`.  :meth:`close`
sends what is pending, ends the share sessions (the brokers release what the member still holds)
and leaves the group.

Membership is the KIP-848 member machine (:class:`~client.consumer_membership.ConsumerMembership`)
heartbeating with ShareGroupHeartbeat (:class:`~client.coordinator.ShareGroupCoordinator`); fetching
is :mod:`client.share_fetcher`; connections, metadata and the timing wheel are the client's own
(:mod:`client.net`).  Like a :class:`~client.consumer.Consumer`, it is used by one thread and one task at a
time (:class:`~client.ownership.Ownership`).  Settings are the :class:`~client.config.ConsumerConfig` ones that apply
(``max_poll_records``: the records one fetch acquires, 500 when not set; ``fetch_max_wait_ms``,
``fetch_min_bytes``, ``fetch_max_bytes``, ``max_poll_interval_ms``, ``client_rack``, the
deserializers, security).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from threading import get_ident
from typing import Any

from client.config import ConsumerConfig, build_config
from client.coordinator import ShareGroupCoordinator
from client.errors import ConfigError, IllegalStateError, KafkaError
from client.net import NetworkClient
from client.ownership import Ownership
from client.share_fetcher import Acknowledgements, AcknowledgeType, AckResults, ShareFetcher, record_offset
from client.types import Record, TopicPartition
from protocol.timer_service import WheelTimer

__all__ = ["ACKNOWLEDGEMENT_MODES", "AcknowledgeType", "ShareConsumer"]

_log = logging.getLogger(__name__)

ACKNOWLEDGEMENT_MODES = ("implicit", "explicit")
#: records one fetch acquires when ``max_poll_records`` is not set (Kafka's ``max.poll.records``)
DEFAULT_MAX_RECORDS = 500
_RENEW = AcknowledgeType.RENEW


def _not_held(record: Record) -> IllegalStateError:
    return IllegalStateError(f"{record.topic}-{record.partition}@{record.offset} is not a record this share "
                             "consumer delivered and has not acknowledged")


class _Held:
    """The offsets of one partition's records handed out and not acknowledged yet, and of those renewed."""

    __slots__ = ("delivered", "partition", "renewed", "topic", "tp")

    def __init__(self, tp: TopicPartition) -> None:
        self.tp = tp
        self.topic, self.partition = tp
        self.delivered: set[int] = set()
        self.renewed: set[int] = set()


class ShareConsumer:
    """``ShareConsumer(*topics, bootstrap_servers=..., group_id=..., acknowledgement_mode="implicit"|"explicit")``;
    use ``async with`` (see the module doc)."""

    def __init__(self, *topics: str, acknowledgement_mode: str = "implicit", **config: Any) -> None:
        if acknowledgement_mode not in ACKNOWLEDGEMENT_MODES:
            raise ConfigError(f"acknowledgement_mode must be one of {ACKNOWLEDGEMENT_MODES}, "
                              f"not {acknowledgement_mode!r}")
        self.config: ConsumerConfig = build_config(ConsumerConfig, config)
        if self.config.group_id is None:
            raise ConfigError("a ShareConsumer needs group_id (its share group)")
        if self.config.group_instance_id is not None:
            raise ConfigError("share groups have no static members: group_instance_id is not for a ShareConsumer")
        self.acknowledgement_mode = acknowledgement_mode
        self._topics = set(topics)
        self._assignment: set[TopicPartition] = set()
        self._net: NetworkClient | None = None
        self._timers: WheelTimer | None = None
        self._coordinator: ShareGroupCoordinator | None = None
        self._fetcher: ShareFetcher | None = None
        #: records acquired but not handed out yet (a fetch acquired more than ``max_records``), per
        #: partition in the order fetched, and how many
        self._buffer: deque[tuple[TopicPartition, list[Record]]] = deque()
        self._buffered = 0
        #: per partition (looked up with a plain ``(topic, partition)`` tuple, which a TopicPartition
        #: equals), the records handed out and not acknowledged yet, and those renewed (acknowledged later)
        self._held: dict[tuple[str, int], _Held] = {}
        #: the one last acknowledged from (a batch's records come a partition at a time)
        self._last_held: _Held | None = None
        self._acks = Acknowledgements()
        #: ``with self._owned():`` around every call: one thread and task at a time
        self._owned = Ownership("ShareConsumer")
        self._started = False
        self._closed = False

    # -- lifecycle -------------------------------------------------------------------------------

    async def __aenter__(self) -> ShareConsumer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def start(self) -> None:
        if self._started:
            return
        assert self.config.group_id is not None
        self._owned.bind()
        self._timers = WheelTimer()
        self._net = NetworkClient(self.config, self._timers, allow_auto_topic_creation=False)
        await self._net.start()
        self._coordinator = ShareGroupCoordinator(self._net, self.config, on_revoke=self._revoke,
                                                  on_assign=self._assign)
        self._fetcher = ShareFetcher(self._net, self.config, self.config.group_id,
                                     self._coordinator.machine.member_id)
        self._net.add_listener(lambda _old, _new: self._coordinator.on_metadata() if self._coordinator else None)
        self._coordinator.start()
        self._started = True
        if self._topics:
            self.subscribe(self._topics)

    async def close(self) -> None:
        """Send the acknowledgements pending (implicit mode: the last batch's, accepted), end the share
        sessions (the brokers release whatever this member still holds) and leave the group."""
        if self._closed or not self._started:
            self._closed = True
            return
        self._closed = True
        try:
            if self._fetcher is not None:
                self._accept_delivered()
                with contextlib.suppress(KafkaError):
                    await self._fetcher.close(self._acks)
        finally:
            if self._coordinator is not None:
                await self._coordinator.close()
            if self._net is not None:
                await self._net.close()
            if self._timers is not None:
                self._timers.close()

    def _check(self) -> tuple[NetworkClient, ShareFetcher, ShareGroupCoordinator]:
        if self._closed:
            raise IllegalStateError("share consumer is closed")
        if not self._started or self._net is None or self._fetcher is None or self._coordinator is None:
            raise IllegalStateError("share consumer is not started (use 'async with' or await start())")
        return self._net, self._fetcher, self._coordinator

    # -- subscription ----------------------------------------------------------------------------

    def subscribe(self, topics: set[str] | list[str] | tuple[str, ...]) -> None:
        """Read ``topics`` (names; nothing: leave the group)."""
        with self._owned():
            net, _, coordinator = self._check()
            self._topics = set(topics)
            net.add_topics(self._topics)
            net.request_metadata_update()
            coordinator.subscribe(self._topics)

    def unsubscribe(self) -> None:
        self.subscribe(())

    def subscription(self) -> set[str]:
        return set(self._topics)

    def assignment(self) -> set[TopicPartition]:
        """The partitions this member reads now (others may read them too)."""
        return set(self._assignment)

    @property
    def member_id(self) -> str | None:
        return self._coordinator.machine.member_id if self._coordinator is not None else None

    @property
    def acquisition_lock_timeout_ms(self) -> int | None:
        """How long a record stays locked to this member once delivered (the brokers tell it with each
        fetch; None before the first)."""
        return self._fetcher.acquisition_lock_timeout_ms if self._fetcher is not None else None

    @property
    def buffered(self) -> int:
        """How many records acquired for this member :meth:`getmany` has not handed out yet (a fetch acquires
        whole log batches, so it may bring more than ``max_records``); they are locked to this member and
        the next :meth:`getmany` hands them out (up to its ``max_records``) without fetching."""
        return self._buffered

    async def _revoke(self, partitions: set[TopicPartition], lost: bool) -> None:
        self._assignment -= partitions

    async def _assign(self, added: set[TopicPartition], assignment: set[TopicPartition]) -> None:
        self._assignment = set(assignment)
        if self._net is not None:
            self._net.add_topics({tp.topic for tp in assignment})

    # -- acknowledging ---------------------------------------------------------------------------

    def acknowledge(self, record: Record, ack_type: AcknowledgeType = AcknowledgeType.ACCEPT) -> None:
        """Acknowledge a record of the last :meth:`getmany` (explicit mode): sent with the next fetch
        from its partition, or by :meth:`commit`.  RENEW keeps the record locked to this member (its lock
        starts again once sent) and it is to be acknowledged again later."""
        owned = self._owned  # never awaits: no need to hold the ownership, only to be allowed it
        if owned.owner is not None or get_ident() != owned.loop_thread:
            owned.check()
        if self._closed or self._fetcher is None:
            self._check()
        if self.acknowledgement_mode != "explicit":
            raise IllegalStateError('acknowledge() needs acknowledgement_mode="explicit" (implicit mode accepts '
                                    'every record of a batch with the next getmany() or commit())')
        if type(ack_type) is not AcknowledgeType:
            ack_type = AcknowledgeType(ack_type)
        offset = record.offset
        held = self._last_held
        if held is None or held.partition != record.partition or held.topic != record.topic:
            held = self._held.get((record.topic, record.partition))
            if held is None:
                raise _not_held(record)
            self._last_held = held
        try:
            held.delivered.remove(offset)
        except KeyError:
            if offset not in held.renewed:
                raise _not_held(record) from None
            held.renewed.remove(offset)
        if ack_type is _RENEW:
            held.renewed.add(offset)
        self._acks.add(held.tp, offset, ack_type)

    def _unacknowledged(self) -> int:
        return sum(len(held.delivered) for held in self._held.values())

    def _accept_delivered(self) -> None:
        """Implicit mode: the records handed out are accepted."""
        if self.acknowledgement_mode != "implicit":
            return
        for held in self._held.values():
            if not held.delivered:
                continue
            offsets = sorted(held.delivered)
            ranges = self._acks.ranges(held.tp)
            if offsets[-1] - offsets[0] + 1 == len(offsets):
                ranges.add_range(offsets[0], offsets[-1], AcknowledgeType.ACCEPT)
            else:
                for offset in offsets:
                    ranges.add(offset, AcknowledgeType.ACCEPT)
            held.delivered.clear()

    async def commit(self) -> dict[TopicPartition, KafkaError | None]:
        """Send the pending acknowledgements now (implicit mode: the last batch's, accepted) and wait for
        them: per partition acknowledged, None or the error it got (INVALID_RECORD_STATE: a record's lock
        ran out before, and it went to another member or back to the queue)."""
        with self._owned():
            _, fetcher, _ = self._check()
            self._accept_delivered()
            return await fetcher.acknowledge(self._acks)

    # -- fetching --------------------------------------------------------------------------------

    async def getmany(self, timeout_ms: int = 0, max_records: int | None = None) -> dict[TopicPartition, list[Record]]:
        """The records acquired for this member (at most ``max_records``), by partition, waiting up to
        ``timeout_ms`` for some.  In explicit mode every record of the previous batch must have been
        acknowledged (RENEW counts)."""
        with self._owned():
            return await self._getmany(timeout_ms, max_records)

    async def _getmany(self, timeout_ms: int, max_records: int | None) -> dict[TopicPartition, list[Record]]:
        net, fetcher, coordinator = self._check()
        if self.acknowledgement_mode == "explicit" and (unacknowledged := self._unacknowledged()):
            raise IllegalStateError(f"{unacknowledged} record(s) of the last batch are not acknowledged "
                                    '(acknowledgement_mode="explicit": acknowledge each before the next getmany)')
        self._accept_delivered()
        limit = max_records or self.config.max_poll_records or DEFAULT_MAX_RECORDS
        deadline = net.timers.now_ms() + timeout_ms
        if self._acks.has_renewals():
            self._report(await fetcher.acknowledge(self._acks))
        while True:
            coordinator.poll()
            if self._buffer:
                return self._hand_out(limit)
            remaining = max(0, int(deadline - net.timers.now_ms()))
            assigned = set(self._assignment)
            if assigned or self._acks or fetcher.gaps:
                records, results = await fetcher.fetch(assigned, self._acks,
                                                       max_wait_ms=min(remaining, self.config.fetch_max_wait_ms),
                                                       max_records=limit)
                self._report(results)
                for _, got in records:  # acquired for this member, whatever its assignment is now
                    self._buffered += len(got)
                self._buffer += records
                if self._buffer:
                    return self._hand_out(limit)
            remaining = deadline - net.timers.now_ms()
            if remaining <= 0:
                return {}
            if fetcher.take_trouble():  # no leader known, a failed request: not again at once
                await asyncio.sleep(min(remaining, self.config.retry_backoff_ms) / 1000)
                continue
            if not assigned:
                coordinator.changed.clear()
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(coordinator.changed.wait(),
                                           min(remaining, self.config.retry_backoff_ms * 5) / 1000)

    def _hand_out(self, limit: int) -> dict[TopicPartition, list[Record]]:
        out: dict[TopicPartition, list[Record]] = {}
        buffer = self._buffer
        while buffer and limit > 0:
            tp, records = buffer[0]
            if len(records) > limit:
                buffer[0] = (tp, records[limit:])
                records = records[:limit]
            else:
                buffer.popleft()
            limit -= len(records)
            self._buffered -= len(records)
            if (got := out.get(tp)) is None:
                out[tp] = records
            else:
                got += records
            held = self._held.get(tp)
            if held is None:
                held = self._held[tp] = _Held(tp)
            held.delivered.update(map(record_offset, records))
        return out

    def _report(self, results: AckResults) -> None:
        """Acknowledgements that failed on the way (the records come back to the group when their
        locks run out): logged; :meth:`commit` returns them instead."""
        for tp, error in results.items():
            if error is not None:
                _log.warning("share group %s: acknowledgements of %s failed: %s", self.config.group_id, tp, error)
