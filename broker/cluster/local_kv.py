"""LocalKV: the metadata store of a broker that runs without etcd.

The same contract as etcd (:mod:`broker.cluster.kv`), kept in process:
:class:`KVState` is the sans-IO core (revisions, compare-and-set transactions,
leases on an injected clock), and :class:`LocalKV` adds persistence and watches
for the event loop.  Keys without a lease are written to
``<data_dir>/__metadata/kv.json`` (atomically, durably) after every change, so
topics and producer-id blocks survive a restart; leased keys (registrations,
the controller) vanish with the process, as they would when an etcd lease
expires.

Several brokers in one process may share one LocalKV: that is how the cluster
logic is tested without an etcd server.
"""

from __future__ import annotations

import asyncio
import base64
import collections
import json
import os
import time
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field

from broker.cluster.kv import (
    Compare,
    Delete,
    KeyValue,
    KVCompactedError,
    KVUnavailableError,
    LeaseNotFoundError,
    Op,
    Put,
    TxnResult,
    WatchEvent,
)
from broker.log._fs import atomic_write

__all__ = ["KVState", "LocalKV"]

STATE_DIR = "__metadata"
STATE_FILE = "kv.json"


def _monotonic_ms() -> int:
    return int(time.monotonic() * 1000)


@dataclass(slots=True)
class _Lease:
    lease_id: int
    ttl_ms: int
    expires_ms: int
    keys: set[str] = field(default_factory=set)


class KVState:
    """Revisioned keys, transactions and leases; no I/O.  ``clock`` gives monotonic milliseconds."""

    def __init__(self, clock: Callable[[], int] = _monotonic_ms) -> None:
        self.clock = clock
        self.revision = 0
        self.keys: dict[str, KeyValue] = {}
        self.leases: dict[int, _Lease] = {}
        self._next_lease = 1

    # -- reads -----------------------------------------------------------------------
    def get(self, key: str) -> KeyValue | None:
        return self.keys.get(key)

    def range(self, prefix: str) -> list[KeyValue]:
        return [self.keys[k] for k in sorted(self.keys) if k.startswith(prefix)]

    # -- writes ----------------------------------------------------------------------
    def txn(self, compares: Sequence[Compare], success: Sequence[Op],
            failure: Sequence[Op] = ()) -> tuple[TxnResult, list[WatchEvent]]:
        """Apply a transaction; returns its result and the events it produced (one revision)."""
        ok = all(c.holds(self.keys.get(c.key)) for c in compares)
        ops = success if ok else failure
        for op in ops:
            if isinstance(op, Put) and op.lease and op.lease not in self.leases:
                raise LeaseNotFoundError(f"lease {op.lease:x} not found")
        writes = any(isinstance(op, Put) or (isinstance(op, Delete) and self._matches(op)) for op in ops)
        rev = self.revision + 1 if writes else self.revision
        events: list[WatchEvent] = []
        gets: list[tuple[KeyValue, ...]] = []
        for op in ops:
            if isinstance(op, Put):
                old = self.keys.get(op.key)
                if old is not None and old.lease and old.lease != op.lease:
                    self._detach(old)
                kv = KeyValue(op.key, op.value, old.create_revision if old else rev, rev,
                              (old.version if old else 0) + 1, op.lease)
                self.keys[op.key] = kv
                if op.lease:
                    self.leases[op.lease].keys.add(op.key)
                events.append(WatchEvent("put", kv))
            elif isinstance(op, Delete):
                for key in self._match_keys(op.key, op.prefix):
                    events.append(self._delete(key, rev))
            else:
                found = self._match_keys(op.key, op.prefix)
                gets.append(tuple(self.keys[k] for k in found))
        self.revision = rev
        return TxnResult(ok, rev, tuple(gets)), events

    def _matches(self, op: Delete) -> bool:
        return bool(self._match_keys(op.key, op.prefix))

    def _match_keys(self, key: str, prefix: bool) -> list[str]:
        if not prefix:
            return [key] if key in self.keys else []
        return sorted(k for k in self.keys if k.startswith(key))

    def _delete(self, key: str, rev: int) -> WatchEvent:
        old = self.keys.pop(key)
        self._detach(old)
        return WatchEvent("delete", KeyValue(key, b"", old.create_revision, rev, 0, old.lease))

    def _detach(self, kv: KeyValue) -> None:
        lease = self.leases.get(kv.lease)
        if lease is not None:
            lease.keys.discard(kv.key)

    # -- leases ----------------------------------------------------------------------
    def grant(self, ttl_ms: int) -> _Lease:
        lease = _Lease(self._next_lease, ttl_ms, self.clock() + ttl_ms)
        self._next_lease += 1
        self.leases[lease.lease_id] = lease
        return lease

    def keep_alive(self, lease_id: int) -> int:
        lease = self.leases.get(lease_id)
        if lease is None:
            raise LeaseNotFoundError(f"lease {lease_id:x} not found")
        lease.expires_ms = self.clock() + lease.ttl_ms
        return lease.ttl_ms

    def revoke(self, lease_id: int) -> list[WatchEvent]:
        lease = self.leases.pop(lease_id, None)
        if lease is None or not lease.keys:
            return []
        self.revision += 1
        return [self._delete(key, self.revision) for key in sorted(lease.keys)]

    def expire(self) -> list[list[WatchEvent]]:
        """Revoke every lease past its deadline; one event list (revision) per lease."""
        now = self.clock()
        out = []
        for lease_id in [lid for lid, lease in self.leases.items() if lease.expires_ms <= now]:
            events = self.revoke(lease_id)
            if events:
                out.append(events)
        return out

    def next_expiry_ms(self) -> int | None:
        return min((lease.expires_ms for lease in self.leases.values()), default=None)

    # -- persistence -----------------------------------------------------------------
    def snapshot(self) -> dict[str, object]:
        """The durable part: keys without a lease, and the revision."""
        return {
            "version": 1,
            "revision": self.revision,
            "keys": [[kv.key, base64.b64encode(kv.value).decode(), kv.create_revision, kv.mod_revision,
                      kv.version] for kv in self.keys.values() if not kv.lease],
        }

    def restore(self, doc: dict[str, object]) -> None:
        self.revision = int(doc["revision"])  # type: ignore[arg-type]
        self.keys = {}
        for key, value, create, mod, version in doc["keys"]:  # type: ignore[attr-defined]
            self.keys[key] = KeyValue(key, base64.b64decode(value), create, mod, version)


class LocalKV:
    """:class:`KVState` for the event loop: persisted and watchable.

    ``data_dir`` None keeps everything in memory (tests).  Leases expire only with
    ``expire_leases=True``: when the store lives in the broker's own process, the
    lease holder is alive exactly as long as the store, and a stalled event loop
    must not cost a single node its registration.  Tests that run several
    brokers on one store turn expiry on to play a broker's death.
    """

    def __init__(self, data_dir: str | os.PathLike[str] | None = None, *,
                 clock: Callable[[], int] = _monotonic_ms, expire_leases: bool = False) -> None:
        self.state = KVState(clock)
        self.expire_leases = expire_leases
        self._path: str | None = None
        if data_dir is not None:
            directory = os.path.join(os.fspath(data_dir), STATE_DIR)
            os.makedirs(directory, exist_ok=True)
            self._path = os.path.join(directory, STATE_FILE)
            if os.path.exists(self._path):
                with open(self._path, "rb") as fh:
                    self.state.restore(json.load(fh))
        self._watchers: list[tuple[str, asyncio.Queue[list[WatchEvent] | None]]] = []
        self._expiry: asyncio.TimerHandle | None = None
        self._closed = False
        #: Recent revisions' events, so a watch may start slightly in the past without a gap.
        self._history: collections.deque[tuple[int, list[WatchEvent]]] = collections.deque(maxlen=4096)

    @property
    def leases_expire(self) -> bool:
        return self.expire_leases

    @property
    def description(self) -> str:
        return f"local store {self._path or '(memory)'}"

    async def connect(self) -> None:
        if self._closed:
            raise KVUnavailableError("store closed")

    async def close(self) -> None:
        self._closed = True
        if self._expiry is not None:
            self._expiry.cancel()
        for _, queue in self._watchers:
            queue.put_nowait(None)
        self._watchers.clear()

    def _check(self) -> None:
        if self._closed:
            raise KVUnavailableError("store closed")

    async def get_prefix(self, prefix: str) -> tuple[list[KeyValue], int]:
        self._check()
        return self.state.range(prefix), self.state.revision

    async def get(self, key: str) -> KeyValue | None:
        self._check()
        return self.state.get(key)

    async def txn(self, compares: Sequence[Compare], success: Sequence[Op],
                  failure: Sequence[Op] = ()) -> TxnResult:
        self._check()
        result, events = self.state.txn(compares, success, failure)
        if events:
            self._committed(events)
        return result

    async def grant_lease(self, ttl_ms: int) -> tuple[int, int]:
        self._check()
        lease = self.state.grant(ttl_ms)
        self._arm_expiry()
        return lease.lease_id, lease.ttl_ms

    async def keep_alive(self, lease_id: int) -> int:
        self._check()
        return self.state.keep_alive(lease_id)

    async def revoke_lease(self, lease_id: int) -> None:
        self._check()
        events = self.state.revoke(lease_id)
        if events:
            self._committed(events)

    async def watch(self, prefix: str, start_revision: int) -> AsyncIterator[list[WatchEvent]]:
        self._check()
        queue: asyncio.Queue[list[WatchEvent] | None] = asyncio.Queue()
        if start_revision <= self.state.revision:
            oldest = self._history[0][0] if self._history else self.state.revision + 1
            if start_revision < oldest:
                raise KVCompactedError(oldest - 1)
            for rev, events in self._history:
                mine = [e for e in events if e.kv.key.startswith(prefix)]
                if rev >= start_revision and mine:
                    queue.put_nowait(mine)
        entry = (prefix, queue)
        self._watchers.append(entry)
        try:
            while True:
                events = await queue.get()
                if events is None:
                    raise KVUnavailableError("store closed")
                yield events
        finally:
            if entry in self._watchers:
                self._watchers.remove(entry)

    # -- internals -------------------------------------------------------------------
    def _committed(self, events: list[WatchEvent]) -> None:
        if self._path is not None and any(not e.kv.lease for e in events):
            atomic_write(self._path, json.dumps(self.state.snapshot()).encode())
        self._history.append((events[0].kv.mod_revision, events))
        for prefix, queue in self._watchers:
            mine = [e for e in events if e.kv.key.startswith(prefix)]
            if mine:
                queue.put_nowait(mine)

    def _arm_expiry(self) -> None:
        if self._closed or not self.expire_leases:
            return
        deadline = self.state.next_expiry_ms()
        if self._expiry is not None:
            self._expiry.cancel()
            self._expiry = None
        if deadline is None:
            return
        delay = max(0.0, (deadline - self.state.clock()) / 1000)
        self._expiry = asyncio.get_running_loop().call_later(delay + 0.001, self._on_expiry)

    def _on_expiry(self) -> None:
        self._expiry = None
        for events in self.state.expire():
            self._committed(events)
        self._arm_expiry()
