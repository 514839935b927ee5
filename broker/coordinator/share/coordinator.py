"""The share coordinator (Kafka's ``ShareCoordinatorShard``): the durable state of share-partitions, one
pure shard per ``__share_group_state`` partition this broker leads.

It serves the brokers' internal APIs — InitializeShareGroupState (83, from the group coordinator),
ReadShareGroupState (84) and WriteShareGroupState (85, from share-partition leaders),
DeleteShareGroupState (86) and ReadShareGroupStateSummary (87) — over the states of
:mod:`broker.coordinator.share.state`, and shares the coordinators' shape
(:class:`~broker.coordinator.runtime.CoordinatorRuntime`): a call returns :class:`Effects` — replies,
and one :class:`~broker.coordinator.write.Write` of ``ShareSnapshot``/``ShareUpdate`` records; the
replies that depend on it go out only once it is committed, and only then does the state change
(reads see committed state only).  A failed write changes nothing and answers with the mapped error.

* Initialize writes a fresh snapshot (start offset as given, -1: the leader applies
  ``share.auto.offset.reset``); a smaller state epoch than the stored one is FENCED_STATE_EPOCH.
* Write adds a ``ShareUpdate`` — every ``share.coordinator.snapshot.update.records.per.snapshot``
  updates a merged ``ShareSnapshot`` instead; an older state epoch is FENCED_STATE_EPOCH, an older
  leader epoch FENCED_LEADER_EPOCH, an uninitialised share-partition INVALID_REQUEST.
* Read by a leader of a newer leader epoch first records that epoch (fencing the older leader's
  writes); an older one is FENCED_LEADER_EPOCH.
* Delete writes tombstones; deleting what does not exist succeeds.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field, replace
from typing import Any

from broker.coordinator.write import InFlightWrites, Write, write_error
from protocol.api import ApiKey
from protocol.error_codes import ErrorCode

from .state import (
    SNAPSHOT,
    Key,
    ShareState,
    StateBatch,
    apply_update,
    decode_record,
    encode_snapshot,
    encode_tombstones,
    encode_update,
    state_from_snapshot,
    update_batches,
)

__all__ = ["Effects", "ShareCoordinator", "ShareCoordinatorConfig"]

log = logging.getLogger(__name__)
E = ErrorCode
Response = dict[str, Any]


@dataclass(frozen=True, slots=True)
class ShareCoordinatorConfig:
    """Kafka's ``share.coordinator.*`` settings the shard uses."""

    snapshot_update_records_per_snapshot: int = 500


@dataclass(slots=True)
class Effects:
    replies: list[tuple[Hashable, Response]] = field(default_factory=list)
    writes: list[Write] = field(default_factory=list)
    next_deadline_ms: int | None = None


@dataclass(slots=True)
class _Pending:
    token: Hashable
    response: Response
    #: the partition entries of the response a failure puts its error into
    entries: list[Response]
    #: the records written, applied to the states once committed
    records: list[tuple[bytes, bytes | None]]


class ShareCoordinator:
    """The share-partition states of one ``__share_group_state`` partition (see the module doc)."""

    def __init__(self, partition: int, config: ShareCoordinatorConfig | None = None, *, now_ms: int = 0) -> None:
        self.partition = partition
        self.config = config or ShareCoordinatorConfig()
        self.states: dict[Key, ShareState] = {}
        self._inflight: InFlightWrites[_Pending] = InFlightWrites()
        self._next_write_id = 1
        self._now = now_ms

    # ------------------------------------------------------------------ requests
    def handle(self, api_key: int, now_ms: int, version: int, req: Any, token: Hashable) -> Effects:
        self._now = now_ms
        handler = self._BY_KEY.get(api_key)
        if handler is None:
            raise ValueError(f"API key {api_key} is not a share-coordinator API")
        records: list[tuple[bytes, bytes | None]] = []
        entries: list[Response] = []
        results = []
        group_id = req.get("group_id") or ""
        for topic in req.get("topics") or ():
            parts = []
            for p in topic.get("partitions") or ():
                entry, written = handler(self, version, Key(group_id, topic["topic_id"], p["partition"]), p)
                entry["partition"] = p["partition"]
                parts.append(entry)
                if written:
                    records.extend(written)
                    entries.append(entry)
            results.append({"topic_id": topic["topic_id"], "partitions": parts})
        response: Response = {"results": results}
        fx = Effects()
        if not records:
            fx.replies.append((token, response))
            return fx
        write = Write(self._next_write_id, self.partition, records)
        self._next_write_id += 1
        self._inflight.add(self.partition, write.write_id, _Pending(token, response, entries, records))
        fx.writes.append(write)
        return fx

    def _initialize(self, version: int, key: Key, p: Any) -> tuple[Response, list[tuple[bytes, bytes | None]]]:
        state = self.states.get(key)
        epoch = p["state_epoch"]
        if state is not None and epoch < state.state_epoch:
            return _error(E.FENCED_STATE_EPOCH, f"State epoch {epoch} is older than {state.state_epoch}"), []
        fresh = ShareState(epoch, -1, p["start_offset"], (), state.snapshot_epoch + 1 if state else 0, self._now,
                           self._now)
        return _error(E.NONE), [encode_snapshot(key, fresh)]

    def _read(self, version: int, key: Key, p: Any) -> tuple[Response, list[tuple[bytes, bytes | None]]]:
        state = self.states.get(key)
        if state is None:
            return _error(E.INVALID_REQUEST, "The share-partition state has not been initialized",
                          state_epoch=-1, start_offset=-1, state_batches=[]), []
        leader_epoch = p["leader_epoch"]
        if leader_epoch < state.leader_epoch:
            return _error(E.FENCED_LEADER_EPOCH, f"Leader epoch {leader_epoch} is older than {state.leader_epoch}",
                          state_epoch=-1, start_offset=-1, state_batches=[]), []
        entry = _error(E.NONE, state_epoch=state.state_epoch, start_offset=state.start_offset,
                       state_batches=[b.entry() for b in state.batches])
        if leader_epoch > state.leader_epoch:  # a new leader: record its epoch, fencing the old one
            return entry, [encode_update(key, state.snapshot_epoch, leader_epoch, -1, state.delivery_complete_count,
                                         [])]
        return entry, []

    def _write(self, version: int, key: Key, p: Any) -> tuple[Response, list[tuple[bytes, bytes | None]]]:
        state = self.states.get(key)
        if state is None:
            return _error(E.INVALID_REQUEST, "The share-partition state has not been initialized"), []
        if p["state_epoch"] < state.state_epoch:
            return _error(E.FENCED_STATE_EPOCH, f"State epoch {p['state_epoch']} is older than {state.state_epoch}"), []
        if p["leader_epoch"] < state.leader_epoch:
            return _error(E.FENCED_LEADER_EPOCH,
                          f"Leader epoch {p['leader_epoch']} is older than {state.leader_epoch}"), []
        batches = [StateBatch(b["first_offset"], b["last_offset"], b["delivery_state"], b["delivery_count"])
                   for b in p.get("state_batches") or ()]
        if any(b.first > b.last or b.state not in (0, 2, 4) for b in batches):
            return _error(E.INVALID_REQUEST, "Malformed state batch"), []
        updated = apply_update(state, p["leader_epoch"], p["start_offset"], batches)
        per_snapshot = self.config.snapshot_update_records_per_snapshot
        if updated.updates >= per_snapshot:
            snapshot = replace(updated, snapshot_epoch=state.snapshot_epoch + 1, write_timestamp=self._now, updates=0)
            return _error(E.NONE), [encode_snapshot(key, snapshot)]
        return _error(E.NONE), [encode_update(key, state.snapshot_epoch, p["leader_epoch"], p["start_offset"],
                                              updated.delivery_complete_count, batches)]

    def _delete(self, version: int, key: Key, p: Any) -> tuple[Response, list[tuple[bytes, bytes | None]]]:
        if key not in self.states:
            return _error(E.NONE), []
        return _error(E.NONE), list(encode_tombstones(key))

    def _summary(self, version: int, key: Key, p: Any) -> tuple[Response, list[tuple[bytes, bytes | None]]]:
        state = self.states.get(key)
        if state is None:
            return _error(E.NONE, state_epoch=-1, leader_epoch=-1, start_offset=-1, delivery_complete_count=-1), []
        return _error(E.NONE, state_epoch=state.state_epoch, leader_epoch=state.leader_epoch,
                      start_offset=state.start_offset, delivery_complete_count=state.delivery_complete_count), []

    _BY_KEY: dict[int, Callable[..., tuple[Response, list[tuple[bytes, bytes | None]]]]] = {}

    # ------------------------------------------------------------------ writes
    def write_committed(self, now_ms: int, write_id: int) -> Effects:
        self._now = now_ms
        pending = self._inflight.take(write_id)
        for key, value in pending.records:
            self.load(self.partition, key, value)
        return Effects(replies=[(pending.token, pending.response)])

    def write_failed(self, now_ms: int, write_id: int, error_code: int) -> Effects:
        self._now = now_ms
        pending = self._inflight.take(write_id)
        try:
            error = write_error(ErrorCode(error_code)) if error_code else E.UNKNOWN_SERVER_ERROR
        except ValueError:
            error = E.UNKNOWN_SERVER_ERROR
        for entry in pending.entries:
            entry.update(error_code=error, error_message=None)
        return Effects(replies=[(pending.token, pending.response)])

    # ------------------------------------------------------------------ loading
    def load(self, partition: int, key: bytes, value: bytes | None, producer_id: int = -1) -> None:
        """Replay one committed record of ``__share_group_state`` (in log order)."""
        record_type, share, decoded = decode_record(key, value)
        if decoded is None:
            self.states.pop(share, None)
            return
        if record_type == SNAPSHOT:
            self.states[share] = state_from_snapshot(decoded)
            return
        state = self.states.get(share)
        if state is None or decoded["snapshot_epoch"] != state.snapshot_epoch:
            return  # an update of a snapshot that was replaced (or deleted)
        self.states[share] = apply_update(state, decoded["leader_epoch"], decoded["start_offset"],
                                          update_batches(decoded))

    def load_marker(self, partition: int, producer_id: int, commit: bool) -> None:
        """The share coordinator writes no transactions."""

    def complete_load(self, now_ms: int) -> Effects:
        self._now = now_ms
        log.debug("__share_group_state-%d: %d share-partitions loaded", self.partition, len(self.states))
        return Effects()

    def next_deadline(self) -> int | None:
        return None

    def poll(self, now_ms: int) -> Effects:
        return Effects()


ShareCoordinator._BY_KEY = {
    ApiKey.INITIALIZE_SHARE_GROUP_STATE: ShareCoordinator._initialize,
    ApiKey.READ_SHARE_GROUP_STATE: ShareCoordinator._read,
    ApiKey.WRITE_SHARE_GROUP_STATE: ShareCoordinator._write,
    ApiKey.DELETE_SHARE_GROUP_STATE: ShareCoordinator._delete,
    ApiKey.READ_SHARE_GROUP_STATE_SUMMARY: ShareCoordinator._summary,
}


def _error(code: ErrorCode, message: str | None = None, **fields: Any) -> Response:
    return {"error_code": code, "error_message": message, **fields}

