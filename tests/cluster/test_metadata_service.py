"""MetadataService on a shared store: registration, the controller role and its failover, topics getting leaders.

Runs against a LocalKV shared by several services in one process (fast) and against a real etcd.
"""

from __future__ import annotations

import asyncio
import itertools
import uuid
from collections.abc import AsyncIterator, Callable

import pytest

from broker.cluster.controller import ControllerSettings
from broker.cluster.etcd_kv import EtcdKV
from broker.cluster.kv import MetadataKV
from broker.cluster.local_kv import LocalKV
from broker.cluster.metadata import DuplicateBrokerError, MetadataService, MetadataSettings
from broker.cluster.records import BrokerRegistration, Endpoint, TopicRecord

_ns = itertools.count()


async def eventually(check: Callable[[], bool], timeout: float = 60.0) -> None:
    """Poll ``check`` until it holds; a liveness bound, generous for a busy machine (elections run over etcd)."""
    deadline = asyncio.get_running_loop().time() + timeout
    while not check():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError("condition not reached in time")
        await asyncio.sleep(0.02)


StoreFactory = Callable[[], MetadataKV]


@pytest.fixture(params=["local", "etcd"])
async def stores(request: pytest.FixtureRequest) -> AsyncIterator[StoreFactory]:
    if request.param == "local":
        shared = LocalKV(expire_leases=True)

        class View:
            """Each broker gets its own handle on the one store (closing one does not close the others)."""

            def __getattr__(self, name: str) -> object:
                return getattr(shared, name)

            async def close(self) -> None:
                pass

        yield lambda: View()  # type: ignore[return-value]
        await shared.close()
    else:
        etcd = request.getfixturevalue("etcd")
        ns = f"/kbroker-test/ms{next(_ns)}"
        yield lambda: EtcdKV([etcd.endpoint], ns)


def service(store: MetadataKV, node: int, dir_id: str | None = None) -> MetadataService:
    reg = BrokerRegistration(node, (Endpoint("PLAINTEXT", "127.0.0.1", 9000 + node),), None,
                             dir_id or f"dir-{node}")
    return MetadataService(store, reg, MetadataSettings(session_timeout_ms=2000,
                                                        controller=ControllerSettings(auto_leader_rebalance=False)))


async def crash(svc: MetadataService) -> None:
    """Stop a service the way kill -9 would: no deregistration; the lease runs out."""
    svc._stopping = True
    svc.controller.deactivate()
    for task in svc._tasks:
        task.cancel()


async def test_three_brokers_elect_one_controller_and_give_topics_leaders(stores: StoreFactory) -> None:
    services = [service(stores(), n) for n in (1, 2, 3)]
    for s in services:
        await s.start()
    try:
        await eventually(lambda: all(len(s.image.brokers) == 3 for s in services))
        await eventually(lambda: sum(s.is_controller for s in services) == 1)
        controller_ids = {s.image.controller_id for s in services}
        assert len(controller_ids) == 1 and controller_ids.pop() in (1, 2, 3)
        record = TopicRecord("orders", uuid.uuid4(), ((1, 2, 3), (2, 3, 1), (3, 1, 2)))
        assert await services[1].create_topic(record)
        assert not await services[2].create_topic(record)  # exists
        await eventually(lambda: all(s.image.partition("orders", 2) is not None for s in services))
        p = services[0].image.partition("orders", 1)
        assert p is not None and p.leader == 2 and p.isr == (2, 3, 1)
        assert len({s.image.revision for s in services}) >= 1
    finally:
        for s in services:
            await s.stop()


async def test_controller_and_leaders_fail_over_when_a_broker_dies(stores: StoreFactory) -> None:
    services = {n: service(stores(), n) for n in (1, 2, 3)}
    for s in services.values():
        await s.start()
    try:
        await eventually(lambda: sum(s.is_controller for s in services.values()) == 1)
        ctrl = next(n for n, s in services.items() if s.is_controller)
        others = [n for n in services if n != ctrl]
        record = TopicRecord("t", uuid.uuid4(), ((ctrl, others[0], others[1]),))
        assert await services[others[0]].create_topic(record)
        await eventually(lambda: services[others[1]].image.partition("t", 0) is not None)
        await crash(services[ctrl])
        survivor = services[others[1]]
        await eventually(lambda: ctrl not in survivor.image.brokers)
        await eventually(lambda: sum(services[n].is_controller for n in others) == 1)

        def moved() -> bool:
            p = survivor.image.partition("t", 0)
            return p is not None and p.leader == others[0] and p.leader_epoch == 1 and ctrl not in p.isr

        await eventually(moved)
    finally:
        for s in services.values():
            if not s._stopping:
                await s.stop()


async def test_duplicate_node_id_is_refused_but_a_restart_of_the_same_dir_takes_over(stores: StoreFactory) -> None:
    first = service(stores(), 7, dir_id="dir-a")
    await first.start()
    try:
        with pytest.raises(DuplicateBrokerError):
            await service(stores(), 7, dir_id="dir-b").start()
        await crash(first)  # its lease is still alive
        again = service(stores(), 7, dir_id="dir-a")
        await again.start()
        assert again.broker_epoch > first.broker_epoch
        await again.stop()
    finally:
        if not first._stopping:
            await first.stop()


async def test_producer_id_blocks_never_overlap(stores: StoreFactory) -> None:
    a, b = service(stores(), 1), service(stores(), 2)
    await a.start()
    await b.start()
    try:
        blocks = await asyncio.gather(*(s.allocate_producer_ids() for s in (a, b, a, b)))
        ranges = sorted(blocks)
        assert all(x[1] <= y[0] for x, y in itertools.pairwise(ranges))
    finally:
        await a.stop()
        await b.stop()


