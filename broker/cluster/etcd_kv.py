"""EtcdKV: the metadata store on an etcd v3 cluster, through the maintained ``aetcd`` client.

Maps :mod:`broker.cluster.kv` onto etcd one to one — revisions, compare-and-set
transactions, leases and prefix watches are etcd's own — under a namespace
``/kbroker/<cluster.id>/`` so one etcd can hold several clusters.  Several
endpoints may be given; a call that cannot reach one moves on to the next.

Errors are translated: an unreachable etcd (or one that does not answer within
``timeout_s``) is :class:`~broker.cluster.kv.KVUnavailableError`, a compacted
watch start is :class:`~broker.cluster.kv.KVCompactedError`, a lease etcd no
longer knows is :class:`~broker.cluster.kv.LeaseNotFoundError`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Sequence
from typing import Any

from broker.cluster.kv import (
    Compare,
    Delete,
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

__all__ = ["EtcdKV", "parse_etcd_url"]


def parse_etcd_url(url: str) -> list[tuple[str, int]]:
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


class EtcdKV:
    """:class:`broker.cluster.kv.MetadataKV` on etcd."""

    def __init__(self, endpoints: list[tuple[str, int]], namespace: str, *, timeout_s: float = 5.0) -> None:
        import aetcd

        self._aetcd = aetcd
        self.endpoints = endpoints
        self.namespace = namespace if namespace.endswith("/") else namespace + "/"
        self.timeout_s = timeout_s
        self._index = 0
        self._client: Any = None
        self._closed = False

    @property
    def leases_expire(self) -> bool:
        return True

    @property
    def description(self) -> str:
        eps = ",".join(f"{h}:{p}" for h, p in self.endpoints)
        return f"etcd://{eps} (namespace {self.namespace})"

    # -- connection ------------------------------------------------------------------
    def _new_client(self) -> Any:
        host, port = self.endpoints[self._index % len(self.endpoints)]
        return self._aetcd.Client(host=host, port=port, timeout=self.timeout_s)

    async def connect(self) -> None:
        await self._call(lambda c: c.status())

    async def close(self) -> None:
        self._closed = True
        client, self._client = self._client, None
        if client is not None:
            try:
                await client.close()
            except Exception:  # closing a broken channel may raise; nothing to do about it
                pass

    async def _rotate(self) -> None:
        client, self._client = self._client, None
        self._index += 1
        if client is not None:
            try:
                await client.close()
            except Exception:
                pass

    async def _call(self, fn: Any) -> Any:
        """Run ``fn(client)``, trying each endpoint once; translate errors.

        An endpoint that cannot be reached gets a fresh channel next time (gRPC's own reconnect
        backoff would otherwise keep a channel failing for a while after etcd came back).
        """
        if self._closed:
            raise KVUnavailableError("store closed")
        errors = self._aetcd.exceptions
        from aetcd import rpc

        last: BaseException | None = None
        for _ in range(len(self.endpoints)):
            if self._client is None:
                self._client = self._new_client()
            try:
                return await asyncio.wait_for(fn(self._client), self.timeout_s + 1)
            except (errors.ConnectionFailedError, errors.ConnectionTimeoutError, TimeoutError, OSError) as exc:
                last = exc
                await self._rotate()
            except rpc.AioRpcError as exc:
                translated = self._translate(exc)
                if not isinstance(translated, KVUnavailableError):
                    raise translated from exc
                last = exc
                await self._rotate()
            except errors.ClientError as exc:
                raise KVError(str(exc)) from exc
        raise KVUnavailableError(f"etcd unreachable ({self.description}): {last}") from last

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

        response = await self._call(run)
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
        try:
            handle = await self._call(lambda c: c.watch_prefix(self._k(prefix), start_revision=start_revision))
        except errors.RevisionCompactedError as exc:
            raise KVCompactedError(exc.compacted_revision) from exc
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
