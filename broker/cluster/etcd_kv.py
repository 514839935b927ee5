"""EtcdKV: the metadata store on an etcd v3 cluster, through the maintained ``aetcd`` client.

Maps :mod:`broker.cluster.kv` onto etcd one to one — revisions, compare-and-set
transactions, leases and prefix watches are etcd's own — under a namespace
``/kbroker/<cluster.id>/`` so one etcd can hold several clusters.

A broker's registration lease must outlive any one slow or dead etcd member, so the store
talks to one endpoint at a time and moves on quickly (:class:`EndpointRing`, the policy
without IO):

* brokers spread over the endpoints: each starts on endpoint ``start_index mod N`` (the
  broker passes its node id), so one stalled member holds up only the brokers it serves;
* every attempt of a call, connecting included, is bounded by ``timeout_s``
  (``etcd.request.timeout.ms``, at most a third of ``broker.session.timeout.ms``): a
  keep-alive never waits longer than its share of the lease on one member;
* an attempt that fails to connect, is refused as unavailable or does not answer in time
  moves the store to the next endpoint (closing the old connection, which also ends a watch
  open on it).  The call is tried there if that is safe — it was never sent, or it is
  idempotent (reads, lease calls, watch starts); a transaction that may have been applied
  raises KVUnavailableError instead, and its caller re-reads.  A call tries each endpoint
  at most once.

Errors are translated: an unreachable etcd (or one that does not answer within
``timeout_s`` on any endpoint) is :class:`~broker.cluster.kv.KVUnavailableError`, a compacted
watch start is :class:`~broker.cluster.kv.KVCompactedError`, a lease etcd no
longer knows is :class:`~broker.cluster.kv.LeaseNotFoundError`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any

from broker.cluster.kv import (
    Compare,
    Delete,
    Get,
    KeyValue,
    KVCompactedError,
    KVError,
    KVUnavailableError,
    LeaseNotFoundError,
    Op,
    Put,
    TxnResult,
    WatchEvent,
)

log = logging.getLogger("kbroker.cluster.etcd")

__all__ = ["EndpointRing", "EtcdKV", "parse_etcd_url"]

Endpoint = tuple[str, int]


def parse_etcd_url(url: str) -> list[Endpoint]:
    """``etcd://HOST:PORT[,HOST:PORT...]`` → endpoints."""
    rest = url.strip()
    if not rest.startswith("etcd://"):
        raise ValueError(f"cluster address {url!r} must look like etcd://HOST:PORT[,HOST:PORT...]")
    rest = rest[len("etcd://"):].rstrip("/")
    out = []
    for part in rest.split(","):
        host, sep, port = part.strip().rpartition(":")
        if not sep or not host or not port.isdigit():
            raise ValueError(f"cluster address {url!r}: {part!r} is not HOST:PORT")
        out.append((host.strip("[]"), int(port)))
    if not out:
        raise ValueError(f"cluster address {url!r} names no endpoint")
    return out


class EndpointRing:
    """Which etcd endpoint the store talks to, and when it moves to the next (no IO).

    Each connection belongs to a ``generation``; the first call to report its connection
    failed moves the ring on, and the other calls that fail on that same connection
    (closed under them, or stalled the same way) find the ring already moved and do not
    skip a second endpoint.
    """

    def __init__(self, endpoints: Sequence[Endpoint], start_index: int = 0) -> None:
        if not endpoints:
            raise ValueError("no etcd endpoint")
        self.endpoints = list(endpoints)
        self.index = start_index % len(self.endpoints)
        self.generation = 0

    @property
    def current(self) -> Endpoint:
        return self.endpoints[self.index]

    def failed(self, generation: int) -> bool:
        """The connection of ``generation`` failed: move to the next endpoint, unless that
        connection is already gone.  True if this moved the ring."""
        if generation != self.generation:
            return False
        self.index = (self.index + 1) % len(self.endpoints)
        self.generation += 1
        return True

    @staticmethod
    def retry_elsewhere(*, sent: bool, idempotent: bool) -> bool:
        """May a call whose attempt failed be tried on the next endpoint?  Only if the request
        never left (the connection was not up) or sending it twice does no harm."""
        return idempotent or not sent


class _NotConnected(Exception):
    """The channel to the endpoint could not be established (nothing was sent)."""


class EtcdKV:
    """:class:`broker.cluster.kv.MetadataKV` on etcd."""

    def __init__(self, endpoints: Sequence[Endpoint], namespace: str, *, timeout_s: float = 1.0,
                 start_index: int = 0) -> None:
        import aetcd

        self._aetcd = aetcd
        self.endpoints = list(endpoints)
        self.namespace = namespace if namespace.endswith("/") else namespace + "/"
        self.timeout_s = timeout_s
        self.ring = EndpointRing(self.endpoints, start_index)
        self._client: Any = None  # the connection of ``ring.generation`` (None: not opened yet)
        self._closing: set[asyncio.Task[None]] = set()
        self._closed = False

    @property
    def leases_expire(self) -> bool:
        return True

    @property
    def description(self) -> str:
        eps = ",".join(f"{h}:{p}" for h, p in self.endpoints)
        return f"etcd://{eps} (namespace {self.namespace})"

    # -- connection ------------------------------------------------------------------
    def _current_client(self) -> Any:
        if self._client is None:
            host, port = self.ring.current
            self._client = self._aetcd.Client(host=host, port=port, timeout=self.timeout_s)
        return self._client

    async def connect(self) -> None:
        await self._call(lambda c: c.status())

    async def close(self) -> None:
        self._closed = True
        client, self._client = self._client, None
        if client is not None:
            self._close_later(client)
        if self._closing:
            await asyncio.wait(set(self._closing), timeout=self.timeout_s)

    def _close_later(self, client: Any) -> None:
        """Close a connection in the background: a stalled member must not hold up the caller."""
        async def close() -> None:
            try:
                await client.close()
            except Exception:  # closing a broken channel may raise; nothing to do about it
                pass

        task = asyncio.ensure_future(close())
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    def _move_on(self, generation: int, reason: str) -> None:
        before = self.ring.current
        if not self.ring.failed(generation):
            return
        client, self._client = self._client, None
        if client is not None:
            self._close_later(client)
        log.warning("etcd endpoint %s:%d %s; moving to %s:%d", *before, reason, *self.ring.current)

    @staticmethod
    async def _ready(client: Any) -> None:
        """Wait until the client's channel is connected; _NotConnected if connecting fails."""
        from grpc import ChannelConnectivity

        await client.connect()
        channel = client.channel
        state = channel.get_state(try_to_connect=True)
        while state is not ChannelConnectivity.READY:
            if state in (ChannelConnectivity.TRANSIENT_FAILURE, ChannelConnectivity.SHUTDOWN):
                raise _NotConnected(state.name)
            await channel.wait_for_state_change(state)
            state = channel.get_state(try_to_connect=True)

    async def _call(self, fn: Callable[[Any], Awaitable[Any]], *, idempotent: bool = True) -> Any:
        """Run ``fn(client)`` on the current endpoint, moving on as the module docstring says;
        translate errors."""
        errors = self._aetcd.exceptions
        from aetcd import rpc

        task = asyncio.current_task()
        last = "no attempt"
        for _ in range(len(self.endpoints)):
            if self._closed:
                raise KVUnavailableError("store closed")
            generation = self.ring.generation
            host, port = self.ring.current
            client = self._current_client()
            sent = False
            try:
                async with asyncio.timeout(self.timeout_s):
                    await self._ready(client)
                    sent = True
                    return await fn(client)
            except asyncio.CancelledError:
                if task is None or task.cancelling():
                    raise
                last = "closed the connection"  # another call moved on and closed it under this one
            except TimeoutError:
                last = f"did not answer within {self.timeout_s:g} s"
            except _NotConnected as exc:
                last = f"could not be connected to ({exc})"
            except (errors.ConnectionFailedError, errors.ConnectionTimeoutError, errors.WatchTimeoutError,
                    OSError) as exc:
                last = f"failed ({type(exc).__name__}: {exc})"
            except errors.RevisionCompactedError as exc:
                raise KVCompactedError(exc.compacted_revision) from exc
            except rpc.AioRpcError as exc:
                translated = self._translate(exc)
                if not isinstance(translated, KVUnavailableError):
                    raise translated from exc
                last = f"is unavailable ({translated})"
            except errors.ClientError as exc:
                raise KVError(str(exc)) from exc
            self._move_on(generation, last)
            if not self.ring.retry_elsewhere(sent=sent, idempotent=idempotent):
                raise KVUnavailableError(f"etcd {host}:{port} {last} (the write may have been applied)")
        raise KVUnavailableError(f"etcd unreachable ({self.description}): last endpoint {last}")

    # -- keys ------------------------------------------------------------------------
    def _k(self, key: str) -> bytes:
        return (self.namespace + key).encode()

    def _kv(self, raw: Any) -> KeyValue:
        key = raw.key.decode()[len(self.namespace):]
        return KeyValue(key, bytes(raw.value), raw.create_revision, raw.mod_revision, raw.version, raw.lease)

    async def get_prefix(self, prefix: str) -> tuple[list[KeyValue], int]:
        result = await self._call(lambda c: c.get_prefix(self._k(prefix), sort_target="key"))
        return [self._kv(kv) for kv in result], result.header.revision

    async def get(self, key: str) -> KeyValue | None:
        result = await self._call(lambda c: c.get(self._k(key)))
        return None if result is None else self._kv(result)

    async def txn(self, compares: Sequence[Compare], success: Sequence[Op],
                  failure: Sequence[Op] = ()) -> TxnResult:
        async def run(client: Any) -> Any:
            from aetcd import rpc, utils

            await client.connect()  # the stub is used directly below, past the client's own connect hook
            t = client.transactions
            cmp = []
            for c in compares:
                target = {"value": t.value, "version": t.version, "create": t.create, "mod": t.mod}[c.target]
                node = target(self._k(c.key))
                operand = c.operand
                if c.op == "==":
                    node = node == operand
                elif c.op == "!=":
                    node = node != operand
                elif c.op == "<":
                    node = node < operand
                else:
                    node = node > operand
                cmp.append(node)

            def ops(items: Sequence[Op]) -> list[Any]:
                out = []
                for op in items:
                    if isinstance(op, Put):
                        out.append(t.put(self._k(op.key), op.value, lease=op.lease or None))
                    elif isinstance(op, Delete):
                        key = self._k(op.key)
                        out.append(t.delete(key, range_end=utils.prefix_range_end(key) if op.prefix else None))
                    else:
                        key = self._k(op.key)
                        out.append(t.get(key, range_end=utils.prefix_range_end(key) if op.prefix else None))
                return out

            request = rpc.TxnRequest(compare=[c.build_message() for c in cmp],
                                     success=client._ops_to_requests(ops(success)),
                                     failure=client._ops_to_requests(ops(failure)))
            return await client.kvstub.Txn(request, timeout=self.timeout_s, metadata=client.metadata)

        read_only = all(isinstance(op, Get) for op in (*success, *failure))
        response = await self._call(run, idempotent=read_only)
        gets = []
        for r in response.responses:
            if r.WhichOneof("response") == "response_range":
                gets.append(tuple(self._kv(kv) for kv in r.response_range.kvs))
        return TxnResult(response.succeeded, response.header.revision, tuple(gets))

    def _translate(self, exc: BaseException) -> KVError:
        from aetcd import rpc

        if isinstance(exc, rpc.AioRpcError):
            code = exc.code()
            if code in (rpc.StatusCode.UNAVAILABLE, rpc.StatusCode.DEADLINE_EXCEEDED):
                return KVUnavailableError(str(exc.details()))
            if code == rpc.StatusCode.NOT_FOUND and "lease" in str(exc.details()):
                return LeaseNotFoundError(str(exc.details()))
            return KVError(f"{code.name}: {exc.details()}")
        return KVError(str(exc))

    # -- leases ----------------------------------------------------------------------
    async def grant_lease(self, ttl_ms: int) -> tuple[int, int]:
        ttl_s = max(1, -(-ttl_ms // 1000))
        lease = await self._call(lambda c: c.lease(ttl_s))
        return lease.id, lease.ttl * 1000

    async def keep_alive(self, lease_id: int) -> int:
        reply = await self._call(lambda c: c.refresh_lease(lease_id))
        if reply is None or reply.TTL <= 0:
            raise LeaseNotFoundError(f"lease {lease_id:x} not found")
        return int(reply.TTL) * 1000

    async def revoke_lease(self, lease_id: int) -> None:
        try:
            await self._call(lambda c: c.revoke_lease(lease_id))
        except KVError as exc:
            if "not found" not in str(exc):
                raise

    # -- watch -----------------------------------------------------------------------
    async def watch(self, prefix: str, start_revision: int) -> AsyncIterator[list[WatchEvent]]:
        errors = self._aetcd.exceptions
        handle = await self._call(lambda c: c.watch_prefix(self._k(prefix), start_revision=start_revision))
        pending: list[WatchEvent] = []
        iterator = handle.__aiter__()
        next_task: asyncio.Future[Any] | None = None
        try:
            while True:
                if next_task is None:
                    next_task = asyncio.ensure_future(iterator.__anext__())
                if pending:
                    # The events of one revision arrive together: once no more are ready, hand them over.
                    await asyncio.sleep(0)
                    if not next_task.done():
                        yield pending
                        pending = []
                        continue
                try:
                    raw = await next_task
                except StopAsyncIteration:
                    raise KVUnavailableError("etcd watch ended") from None
                except errors.RevisionCompactedError as exc:
                    raise KVCompactedError(exc.compacted_revision) from exc
                except (errors.ClientError, OSError) as exc:
                    raise KVUnavailableError(f"etcd watch failed: {exc}") from exc
                except KVError:
                    raise
                except Exception as exc:
                    raise self._translate(exc) from exc
                finally:
                    next_task = None
                kv = self._kv(raw.kv)
                event = WatchEvent("put" if raw.kind == "PUT" else "delete", kv)
                if pending and kv.mod_revision != pending[-1].kv.mod_revision:
                    yield pending
                    pending = []
                pending.append(event)
        finally:
            if next_task is not None:
                next_task.cancel()
            try:
                await handle.cancel()
            except Exception:
                pass
