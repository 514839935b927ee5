"""Which etcd member a broker talks to, and how fast it leaves one that stalls or dies.

The policy (:class:`EndpointRing`) is checked without IO; :class:`EtcdKV` is checked in process
against a three-member etcd cluster with one member paused (SIGSTOP: it keeps its connections and
answers nothing) and an endpoint where nothing listens.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Iterator
from pathlib import Path

import pytest
from peers import require_etcd

from broker.cluster.etcd_kv import EndpointRing, EtcdKV
from broker.cluster.kv import Get, KVUnavailableError, Put
from broker.config.loader import ConfigError, from_mapping, validate
from broker.testing.harness import EtcdCluster, EtcdServer, free_port

_ns = itertools.count()
EPS = [("10.0.0.1", 2379), ("10.0.0.2", 2379), ("10.0.0.3", 2379)]


# -- the policy -----------------------------------------------------------------------
def test_brokers_spread_over_the_endpoints() -> None:
    homes = [EndpointRing(EPS, node).current for node in range(1, 7)]
    assert homes == [EPS[1], EPS[2], EPS[0]] * 2


def test_a_failed_connection_moves_the_ring_once_and_wraps_around() -> None:
    ring = EndpointRing(EPS, 2)
    first = ring.generation
    assert ring.failed(first) and ring.current == EPS[0]
    # another call that failed on the same (already abandoned) connection does not skip a member
    assert not ring.failed(first) and ring.current == EPS[0]
    assert ring.failed(ring.generation) and ring.current == EPS[1]
    assert ring.failed(ring.generation) and ring.current == EPS[2]


def test_only_calls_that_are_safe_to_repeat_go_to_the_next_endpoint() -> None:
    assert EndpointRing.retry_elsewhere(sent=False, idempotent=False)  # never left: a write is safe to send
    assert EndpointRing.retry_elsewhere(sent=True, idempotent=True)  # reads, lease calls, watch starts
    assert not EndpointRing.retry_elsewhere(sent=True, idempotent=False)  # a write that may have been applied


def test_the_etcd_timeout_is_derived_from_the_session_and_fits_in_it() -> None:
    assert from_mapping({}).etcd_request_timeout == 1.0
    assert from_mapping({"broker.session.timeout.ms": 6000}).etcd_request_timeout == 2.0
    config = from_mapping({"etcd.request.timeout.ms": 400})
    validate(config)
    assert config.etcd_request_timeout == 0.4
    with pytest.raises(ConfigError, match=r"a third of broker\.session\.timeout\.ms"):
        validate(from_mapping({"etcd.request.timeout.ms": 1500}))
    with pytest.raises(ConfigError, match=r"etcd\.request\.timeout\.ms"):
        validate(from_mapping({"etcd.request.timeout.ms": 0}))


# -- EtcdKV against real members ------------------------------------------------------
@pytest.fixture(scope="module")
def members(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EtcdCluster]:
    require_etcd()
    with EtcdCluster(tmp_path_factory.mktemp("etcd-members"), 3, timing=(50, 500)) as cluster:
        yield cluster


def follower_and_other(cluster: EtcdCluster) -> tuple[EtcdServer, EtcdServer]:
    """A member that does not lead (pausing it costs no election) and another member."""
    leader = cluster.leader()
    assert leader is not None
    follower = next(m for i, m in enumerate(cluster.members) if i != leader)
    return follower, cluster.members[leader]


@pytest.fixture
def namespace() -> str:
    return f"/kbroker-test/endpoints{next(_ns)}/"


async def test_a_keep_alive_leaves_a_stalled_and_a_dead_member_within_its_timeout(
        members: EtcdCluster, namespace: str) -> None:
    stalled, healthy = follower_and_other(members)
    dead = ("127.0.0.1", free_port())
    kv = EtcdKV([stalled.endpoint, dead, healthy.endpoint], namespace)  # the default timeout: 1 s
    await kv.connect()
    lease, _ = await kv.grant_lease(3000)
    _, revision = await kv.get_prefix("")
    watch = kv.watch("", revision + 1)
    await kv.txn([], [Put("before", b"1")])
    assert [e.kv.key for e in await asyncio.wait_for(watch.__anext__(), 10)] == ["before"]  # open on `stalled`
    pending_watch = asyncio.ensure_future(watch.__anext__())
    stalled.pause()
    try:
        loop = asyncio.get_running_loop()
        started = loop.time()
        ttl = await kv.keep_alive(lease)
        took = loop.time() - started
        # one timeout on the stalled member, a refused connection, then an answer: inside a 3 s lease
        assert took < 2.5, f"the keep-alive took {took:.1f} s"
        assert ttl >= 2000 and kv.ring.current == healthy.endpoint
        assert kv.ring.generation == 2  # it started on the stalled member, then passed the dead one
        # the watch open on the stalled member ends (its connection was closed), so it is reopened elsewhere
        with pytest.raises(KVUnavailableError):
            await asyncio.wait_for(pending_watch, 10)
        _, revision = await kv.get_prefix("")
        watch = kv.watch("", revision + 1)
        pending_watch = asyncio.ensure_future(watch.__anext__())
        await kv.txn([], [Put("after", b"1")])
        events = await asyncio.wait_for(pending_watch, 10)
        assert [e.kv.key for e in events] == ["after"]
    finally:
        stalled.resume()
        await watch.aclose()
        await kv.close()


async def test_a_write_that_may_have_been_applied_is_not_resent_but_reads_are(
        members: EtcdCluster, namespace: str) -> None:
    stalled, healthy = follower_and_other(members)
    kv = EtcdKV([stalled.endpoint, healthy.endpoint], namespace, timeout_s=0.5)
    await kv.connect()
    stalled.pause()
    try:
        write, read = await asyncio.gather(kv.txn([], [Put("k", b"v")]), kv.txn([], [Get("k")]),
                                           return_exceptions=True)
        assert isinstance(write, KVUnavailableError) and "may have been applied" in str(write)
        assert not isinstance(read, BaseException) and read.gets == ((),)  # retried on the next member
        assert kv.ring.current == healthy.endpoint
        assert await kv.get("k") is None  # the write was not sent a second time
        assert (await kv.txn([], [Put("k", b"again")])).succeeded
    finally:
        stalled.resume()
        await kv.close()


async def test_a_write_is_sent_elsewhere_when_its_member_cannot_be_reached(tmp_path: Path, namespace: str) -> None:
    require_etcd()
    with EtcdServer(tmp_path / "etcd") as etcd:
        kv = EtcdKV([("127.0.0.1", free_port()), etcd.endpoint], namespace, timeout_s=0.5)
        try:
            assert (await kv.txn([], [Put("k", b"v")])).succeeded
            assert kv.ring.current == etcd.endpoint
        finally:
            await kv.close()
