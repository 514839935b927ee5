"""The metadata-store contract, checked against both implementations: LocalKV and a real etcd."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator

import pytest

from broker.cluster.etcd_kv import EtcdKV, parse_etcd_url
from broker.cluster.kv import (
    Compare,
    Delete,
    Get,
    KVCompactedError,
    LeaseNotFoundError,
    MetadataKV,
    Put,
    WatchEvent,
    absent,
    mod_is,
)
from broker.cluster.local_kv import KVState, LocalKV

_namespaces = itertools.count()


@pytest.fixture(params=["local", "etcd"])
async def kv(request: pytest.FixtureRequest) -> AsyncIterator[MetadataKV]:
    if request.param == "local":
        store: MetadataKV = LocalKV()
    else:
        etcd = request.getfixturevalue("etcd")
        store = EtcdKV([etcd.endpoint], f"/kbroker-test/{next(_namespaces)}")
    await store.connect()
    try:
        yield store
    finally:
        await store.close()


async def test_put_get_and_revisions(kv: MetadataKV) -> None:
    r1 = await kv.txn([], [Put("a", b"1")])
    r2 = await kv.txn([], [Put("a", b"2"), Put("b", b"x")])
    assert r2.revision == r1.revision + 1
    a = await kv.get("a")
    assert a is not None and a.value == b"2" and a.version == 2
    assert a.create_revision == r1.revision and a.mod_revision == r2.revision
    items, rev = await kv.get_prefix("")
    assert [i.key for i in items] == ["a", "b"] and rev >= r2.revision
    assert await kv.get("missing") is None


async def test_compare_and_set(kv: MetadataKV) -> None:
    created = await kv.txn([absent("k")], [Put("k", b"v1")])
    assert created.succeeded
    again = await kv.txn([absent("k")], [Put("k", b"other")], [Get("k")])
    assert not again.succeeded
    assert again.gets[0][0].value == b"v1"
    stale = await kv.txn([mod_is("k", created.revision - 1)], [Put("k", b"v2")])
    assert not stale.succeeded
    fresh = await kv.txn([mod_is("k", created.revision)], [Put("k", b"v2"), Get("k")])
    assert fresh.succeeded and fresh.gets[0][0].value == b"v2"
    assert (await kv.txn([Compare("k", "value", "==", b"v2")], [Delete("k")])).succeeded
    assert await kv.get("k") is None


async def test_prefix_delete_is_exact_about_prefixes(kv: MetadataKV) -> None:
    await kv.txn([], [Put("t/foo/0", b""), Put("t/foo/1", b""), Put("t/foobar/0", b"")])
    await kv.txn([], [Delete("t/foo/", prefix=True)])
    items, _ = await kv.get_prefix("t/")
    assert [i.key for i in items] == ["t/foobar/0"]


async def test_leases_expire_and_take_their_keys(kv: MetadataKV) -> None:
    lease, ttl = await kv.grant_lease(1000)
    assert ttl >= 1000
    await kv.txn([], [Put("reg", b"me", lease=lease)])
    assert (await kv.keep_alive(lease)) >= 1000
    await kv.revoke_lease(lease)
    assert await kv.get("reg") is None
    with pytest.raises(LeaseNotFoundError):
        await kv.keep_alive(lease)


async def test_watch_streams_each_revision_in_order(kv: MetadataKV) -> None:
    _, rev = await kv.get_prefix("w/")
    seen: list[list[WatchEvent]] = []

    async def consume() -> None:
        async for events in kv.watch("w/", rev + 1):
            seen.append(events)
            if len(seen) == 3:
                return

    task = asyncio.ensure_future(consume())
    await asyncio.sleep(0.05)
    await kv.txn([], [Put("w/a", b"1"), Put("w/b", b"2")])
    await kv.txn([], [Put("other", b"not watched")])
    await kv.txn([], [Delete("w/a")])
    await kv.txn([], [Put("w/b", b"3")])
    await asyncio.wait_for(task, 10)
    assert [[(e.kind, e.kv.key) for e in batch] for batch in seen] == [
        [("put", "w/a"), ("put", "w/b")], [("delete", "w/a")], [("put", "w/b")]]
    assert seen[0][0].kv.mod_revision == seen[0][1].kv.mod_revision


async def test_watch_from_a_past_revision_replays_without_a_gap(kv: MetadataKV) -> None:
    _, rev = await kv.get_prefix("h/")
    await kv.txn([], [Put("h/1", b"")])
    await kv.txn([], [Put("h/2", b"")])
    got: list[str] = []

    async def consume() -> None:
        async for events in kv.watch("h/", rev + 1):
            got.extend(e.kv.key for e in events)
            if len(got) == 2:
                return

    await asyncio.wait_for(consume(), 10)
    assert got == ["h/1", "h/2"]


def test_local_state_lease_expiry_on_a_fake_clock() -> None:
    now = [0]
    state = KVState(clock=lambda: now[0])
    lease = state.grant(3000)
    state.txn([], [Put("reg", b"1", lease=lease.lease_id)])
    now[0] = 2000
    state.keep_alive(lease.lease_id)
    now[0] = 4500
    assert state.expire() == []
    now[0] = 5000
    [events] = state.expire()
    assert [(e.kind, e.kv.key) for e in events] == [("delete", "reg")]
    assert state.get("reg") is None


async def test_local_kv_persists_only_unleased_keys(tmp_path: object) -> None:
    store = LocalKV(tmp_path)  # type: ignore[arg-type]
    lease, _ = await store.grant_lease(60_000)
    await store.txn([], [Put("topic", b"t"), Put("reg", b"r", lease=lease)])
    await store.close()
    again = LocalKV(tmp_path)  # type: ignore[arg-type]
    assert (await again.get("topic")) is not None
    assert (await again.get("reg")) is None
    rev = (await again.get_prefix(""))[1]
    assert (await again.txn([], [Put("x", b"")])).revision == rev + 1
    with pytest.raises(KVCompactedError):
        async for _ in again.watch("", 1):
            pass


def test_parse_etcd_url() -> None:
    assert parse_etcd_url("etcd://127.0.0.1:2379,localhost:2380") == [("127.0.0.1", 2379), ("localhost", 2380)]
    for bad in ("http://x:1", "etcd://nohost", "etcd://h:port", "etcd://"):
        with pytest.raises(ValueError):
            parse_etcd_url(bad)
