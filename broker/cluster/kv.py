"""The metadata store's contract: a small revisioned key-value store with leases, transactions and watches.

Cluster state (broker registrations, topics, partition leadership, the
controller) lives in a store with etcd v3's semantics, and everything above it
is written against this contract only:

* every write gets a store-wide, strictly increasing **revision**; a key carries
  its ``create_revision`` (a registration's broker epoch), ``mod_revision`` (what
  compare-and-set guards) and ``version`` (writes since creation);
* :meth:`MetadataKV.txn` is all-or-nothing: if every :class:`Compare` holds, the
  ``success`` operations run, else the ``failure`` ones, as one revision;
* **leases** expire unless kept alive; their keys vanish with them;
* :meth:`MetadataKV.watch` streams changes under a prefix from a revision, in
  order and without gaps, grouped by revision.

Two implementations: :class:`broker.cluster.local_kv.LocalKV` (in-process, one
broker, persisted in the data directory) and
:class:`broker.cluster.etcd_kv.EtcdKV` (a real etcd cluster).  The single node
is the cluster code running on the local store.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

__all__ = [
    "Compare",
    "Delete",
    "Get",
    "KVCompactedError",
    "KVError",
    "KVUnavailableError",
    "KeyValue",
    "LeaseNotFoundError",
    "MetadataKV",
    "Op",
    "Put",
    "TxnResult",
    "WatchEvent",
    "absent",
    "mod_is",
    "prefix_end",
]


class KVError(Exception):
    """Base of the store's errors."""


class KVUnavailableError(KVError):
    """The store could not be reached (or did not answer in time).

    A transaction that raised this may or may not have been applied: callers re-read before retrying.
    """


class KVCompactedError(KVError):
    """A watch asked for a revision the store has already compacted away: list again."""

    def __init__(self, compact_revision: int) -> None:
        super().__init__(f"revision compacted (compact revision {compact_revision})")
        self.compact_revision = compact_revision


class LeaseNotFoundError(KVError):
    """The lease expired or was revoked."""


@dataclass(frozen=True, slots=True)
class KeyValue:
    key: str
    value: bytes
    create_revision: int
    mod_revision: int
    version: int
    lease: int = 0


CompareTarget = Literal["value", "version", "create", "mod"]
CompareOp = Literal["==", "!=", "<", ">"]


@dataclass(frozen=True, slots=True)
class Compare:
    """``target(key) op operand``; a missing key has version, create and mod revision 0."""

    key: str
    target: CompareTarget
    op: CompareOp
    operand: int | bytes

    def holds(self, kv: KeyValue | None) -> bool:
        if self.target == "value":
            if kv is None:
                return False
            actual: int | bytes = kv.value
        elif kv is None:
            actual = 0
        elif self.target == "version":
            actual = kv.version
        elif self.target == "create":
            actual = kv.create_revision
        else:
            actual = kv.mod_revision
        operand = self.operand
        if self.op == "==":
            return actual == operand
        if self.op == "!=":
            return actual != operand
        if self.op == "<":
            return actual < operand  # type: ignore[operator]
        return actual > operand  # type: ignore[operator]


def absent(key: str) -> Compare:
    """The key does not exist."""
    return Compare(key, "create", "==", 0)


def mod_is(key: str, revision: int) -> Compare:
    """The key was last written at ``revision`` (0: it does not exist)."""
    return Compare(key, "mod", "==", revision)


@dataclass(frozen=True, slots=True)
class Put:
    key: str
    value: bytes
    lease: int = 0


@dataclass(frozen=True, slots=True)
class Delete:
    key: str
    prefix: bool = False


@dataclass(frozen=True, slots=True)
class Get:
    key: str
    prefix: bool = False


Op = Put | Delete | Get


@dataclass(frozen=True, slots=True)
class TxnResult:
    """``succeeded``: which branch ran; ``revision``: the store's revision after it;
    ``gets``: the result of each :class:`Get` in the branch that ran, in order."""

    succeeded: bool
    revision: int
    gets: tuple[tuple[KeyValue, ...], ...] = ()


@dataclass(frozen=True, slots=True)
class WatchEvent:
    """A put (``kv`` is the new value) or a delete (``kv.value`` empty, ``kv.mod_revision`` the deletion's)."""

    kind: Literal["put", "delete"]
    kv: KeyValue


def prefix_end(prefix: str) -> str:
    """The first key after every key that starts with ``prefix``."""
    raw = bytearray(prefix.encode())
    while raw:
        if raw[-1] < 0xFF:
            raw[-1] += 1
            return raw.decode("latin-1")
        raw.pop()
    return "\0"


class MetadataKV(Protocol):
    """What the broker needs from its metadata store."""

    @property
    def description(self) -> str:
        """Where the store is, for logs and errors."""
        ...

    @property
    def leases_expire(self) -> bool:
        """Whether a lease can lapse while its holder runs (a store of its own that lives and dies with
        the broker's process never lets one lapse: its holder needs no proof that it still holds it)."""
        ...

    async def connect(self) -> None: ...

    async def close(self) -> None: ...

    async def get_prefix(self, prefix: str) -> tuple[list[KeyValue], int]:
        """Every key under ``prefix`` (sorted) and the revision they were read at."""
        ...

    async def get(self, key: str) -> KeyValue | None: ...

    async def txn(self, compares: Sequence[Compare], success: Sequence[Op],
                  failure: Sequence[Op] = ()) -> TxnResult: ...

    async def grant_lease(self, ttl_ms: int) -> tuple[int, int]:
        """A new lease: ``(lease_id, granted_ttl_ms)`` (the store may raise a TTL it finds too small)."""
        ...

    async def keep_alive(self, lease_id: int) -> int:
        """Refresh the lease; returns the remaining TTL in ms. Raises LeaseNotFoundError if it is gone."""
        ...

    async def revoke_lease(self, lease_id: int) -> None: ...

    def watch(self, prefix: str, start_revision: int) -> AsyncIterator[list[WatchEvent]]:
        """Changes under ``prefix`` from ``start_revision`` on, one list per revision.

        Ends by raising KVUnavailableError (connection lost) or KVCompactedError.
        """
        ...
